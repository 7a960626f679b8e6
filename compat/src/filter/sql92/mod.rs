//! SQL92 property filters (`expressionType=SQL92`, `docs/remoting-protocol.md#sql92-filters`):
//! parsing and evaluation.
//!
//! [`Sql92Filter::parse`] compiles an expression once; [`Sql92Filter::matches`] evaluates it
//! against one message's properties (a lookup of property name → string value; `TAGS` is an
//! ordinary property). Only a final TRUE matches: FALSE, NULL (unknown) and evaluation errors
//! do not. Parsing and evaluation are pure, never panic, and are bounded: an expression is
//! at most [`MAX_EXPRESSION_LEN`] bytes and nests at most [`MAX_DEPTH`] levels.
//!
//! Semantics mirror Apache RocketMQ's `filter` module (`parser/SelectorParser.jj`,
//! `expression/ComparisonExpression.java`, `LogicExpression.java`, `UnaryExpression.java`,
//! `ConstantExpression.java`).
//!
//! # Grammar
//!
//! * Identifiers (property names): `[A-Za-z_$][A-Za-z0-9_$.]*`. The `.` is an extension;
//!   the reference stops an identifier at a dot.
//! * Keywords, case-insensitive: `AND OR NOT BETWEEN IN IS NULL TRUE FALSE CONTAINS
//!   STARTSWITH ENDSWITH`. They cannot be used as property names.
//! * Literals: `'text'` (`''` is a quote; may span lines), integers `0` or `[1-9][0-9]*` with
//!   an optional `L`/`l` (a leading zero such as `07` is rejected as by the reference), decimals
//!   `1.5`, `1.`, `.5`, `1e3`, `2.5E-3`, and `TRUE`, `FALSE`, `NULL`. A leading `-`/`+` is a
//!   unary sign; `-9223372036854775808` is accepted.
//! * Operators: `=`, `<>`, `<`, `<=`, `>`, `>=`, `[NOT] BETWEEN a AND b`,
//!   `[NOT] IN ('a', …)`, `IS [NOT] NULL`, `[NOT] CONTAINS 's'`, `[NOT] STARTSWITH 's'`,
//!   `[NOT] ENDSWITH 's'`, `NOT`, `AND`, `OR`, parentheses. Whitespace is space, tab, CR, LF,
//!   form feed; `-- …` (to end of line or input) and `/* … */` are comments.
//! * Precedence, tightest first: signs; `<` `<=` `>` `>=` `BETWEEN` `IN` `CONTAINS`
//!   `STARTSWITH` `ENDSWITH`; `=` `<>` `IS [NOT] NULL` (a level of their own, as in the
//!   reference, so `a > 1 = TRUE` is `(a > 1) = TRUE`); `NOT`; `AND`; `OR`. Comparison
//!   levels chain left to right.
//!
//! # Parse-time checks (as the reference)
//!
//! * The whole expression, and each operand of `AND`, `OR`, `NOT`, must be a condition or a
//!   bare property: `5`, `'x'` or `a AND 1` are errors.
//! * `= NULL` / `<> NULL` are errors (use `IS [NOT] NULL`); `TRUE = 1` and `FALSE = 'x'`
//!   (boolean literal on the left, string/number literal on the right) are errors.
//! * Operands of `<`, `<=`, `>`, `>=`, `BETWEEN` may be properties, numbers or negations only:
//!   `a > 'x'`, `a < TRUE`, `(a = 1) > 0` are errors. `BETWEEN` bounds may not be `NULL` and,
//!   for `BETWEEN` (not `NOT BETWEEN`) with two literal bounds, must be in order
//!   (`a BETWEEN 3 AND 1` is an error).
//! * `IN` needs a property on its left and one or more string literals in the list (so
//!   `a IN (1, 2)` and `a IN (b)` are errors); `CONTAINS`/`STARTSWITH`/`ENDSWITH` take a string
//!   literal.
//! * Integer literals beyond the `i64` range and decimals beyond `f64` are errors. (The
//!   reference also rejects `0.0` and other literals below `Double.MIN_VALUE`; that is a
//!   reference bug and `0.0` is accepted here.)
//!
//! # Values
//!
//! Property values are strings; a missing property is NULL. Integer literals are longs
//! (`i64`; the reference uses `Integer` when the value fits, so there `a = 5` with
//! `a = '5000000000'` is an error, here it is FALSE), decimals are doubles.
//!
//! * `=` / `<>`: a string meeting a number or boolean is converted to that type first:
//!   `Long.valueOf` for longs (optional sign, digits, no spaces; `'5.0'` is not a long),
//!   `Double.valueOf` for doubles (surrounding whitespace, `NaN`, `Infinity` and an `f`/`d`
//!   suffix accepted; hexadecimal floats are not), `Boolean.valueOf` for booleans (`true` in
//!   any case is TRUE, **anything else FALSE, never an error**). An unparsable number is an
//!   evaluation error. Two strings compare as text; a long and a double compare numerically;
//!   doubles compare as `Double#compareTo` (NaN equals NaN, `-0.0 <> 0.0`). A boolean and a
//!   number are never equal. The conversion is the same whichever side the literal is on
//!   (the reference throws `ClassCastException` when a boolean literal is on the left).
//! * `<`, `<=`, `>`, `>=`: the same conversions, except that two strings (two properties)
//!   must both read as doubles or the evaluation fails.
//! * Unary minus negates numbers; applied to anything else (e.g. a property) it is NULL, as
//!   in the reference.
//! * A bare property used as a condition (`a`, `NOT a`, `a AND b = 1`) is the reference's
//!   boolean cast: NULL when missing, otherwise FALSE (a string is never a `Boolean`).
//!
//! # NULL and three-valued logic
//!
//! * A comparison (`=`, `<>`, `<`, `<=`, `>`, `>=`) with a NULL operand is NULL. **Departure:**
//!   the reference's `=` is lopsided: a non-NULL left side against a NULL right side is FALSE
//!   (so `'x' <> a` matches when `a` is missing) and NULL = NULL is TRUE (so `a = b` matches
//!   when both are missing); here all of these are NULL and do not match.
//! * `NOT NULL` is NULL; `FALSE AND NULL` is FALSE, `TRUE AND NULL` NULL; `TRUE OR NULL` is
//!   TRUE, `FALSE OR NULL` NULL. Hence `NOT (a > 1)` does not match when `a` is missing.
//! * `[NOT] BETWEEN` is `x >= low AND x <= high` / `x < low OR x > high`, so with `x` missing
//!   both are NULL: `a NOT BETWEEN 1 AND 2` does not match a message without `a`.
//! * `[NOT] IN` with a missing property is NULL: `a NOT IN ('x')` does not match a message
//!   without `a` (the reference agrees).
//! * `IS NULL` is TRUE for a missing property (or any NULL-valued expression), `IS NOT NULL`
//!   its negation; never NULL itself.
//! * `[NOT] CONTAINS`/`STARTSWITH`/`ENDSWITH` are FALSE, never NULL, when the operand is
//!   missing (or not a string) or the pattern is empty, negated or not, as in the reference.
//!   So `a NOT CONTAINS 'x'` does not match a message without `a`, while
//!   `NOT (a CONTAINS 'x')` does.
//!
//! # `NOT` precedence (departure)
//!
//! `NOT` applies to a whole predicate, as in SQL and the JMS selector specification:
//! `NOT a = 'x'` is `NOT (a = 'x')` and `NOT a IS NULL` is `NOT (a IS NULL)`. The reference
//! grammar instead makes `NOT` a unary operator on the next operand, so there `NOT a > 1` is
//! a parse error, `NOT a = 'x'` never matches and `NOT a IS NULL` means `(NOT a) IS NULL`.
//! Consequently `x = NOT y` (accepted by the reference) is a parse error here. Infix `NOT`
//! (`a NOT IN …`) is unaffected.
//!
//! # Errors during evaluation
//!
//! An evaluation error (an unparsable number, two non-numeric strings under `<`) aborts the
//! evaluation and the message does not match, like the reference's exception. `AND` and `OR`
//! evaluate left to right and stop early as the reference does: `TRUE OR a > 1` matches even
//! when `a` is `'abc'`, `a > 1 OR TRUE` does not. `<`-style comparisons skip their right side
//! when the left one is NULL.
//!
//! # Limits and positions
//!
//! [`Sql92Error::position`] is a 0-based **byte** offset into the expression: where the
//! offending token or operand starts (the expression's length for "unexpected end").

mod eval;
mod lexer;
mod parser;
#[cfg(test)]
mod tests;

/// Longest accepted expression, in bytes.
pub const MAX_EXPRESSION_LEN: usize = 64 * 1024;

/// Deepest accepted nesting: parentheses, `NOT`s and signs, and the height of the parsed
/// tree (so chains such as `a IS NULL IS NULL …` count too; `AND`/`OR` chains do not).
pub const MAX_DEPTH: usize = 100;

/// A compiled SQL92 filter expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Sql92Filter {
    /// The expression as given.
    text: String,
    /// The checked tree; always a condition.
    expr: parser::Expr,
}

impl Sql92Filter {
    /// Parses an expression; errors carry a clear message with the position.
    ///
    /// # Errors
    ///
    /// [`Sql92Error`] when the text is empty, longer than [`MAX_EXPRESSION_LEN`], nested
    /// deeper than [`MAX_DEPTH`], not lexically valid, not grammatical, or fails one of the
    /// reference's parse-time checks (see the module docs).
    pub fn parse(expr: &str) -> Result<Self, Sql92Error> {
        if expr.len() > MAX_EXPRESSION_LEN {
            return Err(Sql92Error {
                position: MAX_EXPRESSION_LEN,
                message: format!(
                    "expression is {} bytes long; the limit is {MAX_EXPRESSION_LEN}",
                    expr.len()
                ),
            });
        }
        let tokens = lexer::tokenize(expr)?;
        let tree = parser::parse(&tokens)?;
        Ok(Self {
            text: expr.to_owned(),
            expr: tree,
        })
    }

    /// True only when the expression evaluates to TRUE for these properties.
    ///
    /// `get` returns a property's value, or `None` when the message lacks it; for example
    /// `filter.matches(&|name| properties.get(name))`. (The value's lifetime `'v` is
    /// independent of the name's, so the lookup can borrow from a map.)
    pub fn matches<'v>(&self, get: &dyn Fn(&str) -> Option<&'v str>) -> bool {
        eval::evaluate(&self.expr, get) == Ok(Some(true))
    }

    /// The original text.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// A parse error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid SQL92 expression at position {position}: {message}")]
pub struct Sql92Error {
    /// 0-based byte offset where the problem was found.
    pub position: usize,
    /// What is wrong.
    pub message: String,
}
