//! A subscription's filter: a tag expression (checked on the ConsumeQueue tags code) or an
//! SQL92 expression (checked on each message's properties after it is read).
//! Mirrors `ExpressionMessageFilter`: tags by hash code, SQL92 on properties, class-filter
//! mode and `*` match everything.

use stratus_compat::filter::sql92::Sql92Filter;
use stratus_compat::filter::tag::TagFilter;
use stratus_compat::message::properties::Properties;

/// A compiled subscription filter.
#[derive(Debug, Clone)]
pub(crate) enum MessageFilter {
    /// `TAG` expressions (`*`, `TagA || TagB`).
    Tag(TagFilter),
    /// `SQL92` expressions over message properties.
    Sql(Box<Sql92Filter>),
    /// An SQL92 expression that does not compile: pulls get SUBSCRIPTION_PARSE_FAILED.
    Invalid(String),
}

/// True for `expressionType` SQL92 (case-insensitive).
pub(crate) fn is_sql(expression_type: Option<&str>) -> bool {
    expression_type.is_some_and(|t| t.eq_ignore_ascii_case("SQL92"))
}

impl MessageFilter {
    /// Compiles `expr` of `expression_type` (`TAG` when absent).
    pub(crate) fn compile(expr: &str, expression_type: Option<&str>) -> Self {
        if is_sql(expression_type) {
            match Sql92Filter::parse(expr) {
                Ok(f) => Self::Sql(Box::new(f)),
                Err(e) => Self::Invalid(e.to_string()),
            }
        } else {
            Self::Tag(TagFilter::parse(expr))
        }
    }

    /// The ConsumeQueue check: tag filters compare the entry's tags code; SQL92 filters
    /// pass every entry (they need the properties).
    pub(crate) fn matches_code(&self, tags_code: i64) -> bool {
        match self {
            Self::Tag(t) => t.matches_code(tags_code),
            Self::Sql(_) | Self::Invalid(_) => true,
        }
    }

    /// The properties check of SQL92 filters; tag filters pass (clients recheck tags).
    pub(crate) fn matches_properties(&self, properties: &str) -> bool {
        match self {
            Self::Tag(_) => true,
            Self::Sql(f) => {
                let props = Properties::parse(properties);
                f.matches(&|name| props.get(name))
            }
            Self::Invalid(_) => false,
        }
    }

    /// True when properties must be read to filter.
    pub(crate) fn needs_properties(&self) -> bool {
        matches!(self, Self::Sql(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sql_filters_check_properties_and_tag_filters_check_codes() {
        let mut p = Properties::default();
        p.insert("a", "5");
        p.insert("TAGS", "TagA");
        let props = p.encode();
        let sql = MessageFilter::compile("a > 3 AND TAGS = 'TagA'", Some("SQL92"));
        assert!(sql.needs_properties());
        assert!(sql.matches_code(0));
        assert!(sql.matches_properties(&props));
        assert!(!MessageFilter::compile("a > 7", Some("sql92")).matches_properties(&props));
        let tag = MessageFilter::compile("TagB", None);
        assert!(!tag.matches_code(stratus_compat::types::java_string_hash("TagA")));
        assert!(matches!(
            MessageFilter::compile("a >", Some("SQL92")),
            MessageFilter::Invalid(_)
        ));
    }
}
