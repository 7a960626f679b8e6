//! Tag expressions: `*`, `TagA`, `TagA || TagB` (`docs/remoting-protocol.md#tag-filters`).

use crate::types::java_string_hash;

/// A parsed tag expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagFilter {
    /// Tags; empty means "match everything".
    tags: Vec<String>,
    /// Java hash codes of `tags`.
    codes: Vec<i64>,
}

impl TagFilter {
    /// Parses: empty or `*` matches all; otherwise split on `||`, trim, drop empty parts.
    pub fn parse(expr: &str) -> Self {
        let expr = expr.trim();
        if expr.is_empty() || expr == "*" {
            return Self {
                tags: Vec::new(),
                codes: Vec::new(),
            };
        }
        let tags: Vec<String> = expr
            .split("||")
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect();
        let codes = tags.iter().map(|t| java_string_hash(t)).collect();
        Self { tags, codes }
    }

    /// True for `*`.
    pub fn matches_all(&self) -> bool {
        self.tags.is_empty()
    }

    /// Tags of the expression.
    pub fn tags(&self) -> &[String] {
        &self.tags
    }

    /// The consume-queue check: the entry's tags code is in the code set.
    pub fn matches_code(&self, tags_code: i64) -> bool {
        self.matches_all() || self.codes.contains(&tags_code)
    }

    /// The exact check on the `TAGS` property (what clients redo), used after a code match.
    pub fn matches_tag(&self, tag: Option<&str>) -> bool {
        self.matches_all() || tag.is_some_and(|t| self.tags.iter().any(|x| x == t))
    }
}
