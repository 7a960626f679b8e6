//! Evaluates an [`Expr`] against a message's properties, with the reference's value rules.
//!
//! Values are NULL, booleans, longs, doubles and strings. A condition yields `Some(true)`,
//! `Some(false)` or `None` (NULL, unknown); an [`EvalError`] aborts the whole evaluation,
//! which then does not match. Conversions follow `ComparisonExpression#__compare` with
//! Java's `Long.valueOf`, `Double.valueOf` and `Boolean.valueOf`. Recursion is bounded by
//! the tree height the parser enforces.

use std::cmp::Ordering;

use super::parser::{CmpOp, Expr, Literal, TextOp};

/// Why evaluation stopped; the message then does not match. The reason is kept for tests
/// and debugging only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct EvalError(pub(super) &'static str);

/// A runtime value; strings borrow from the expression or from the property source.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Value<'a> {
    Null,
    Bool(bool),
    Long(i64),
    Double(f64),
    Str(&'a str),
}

impl<'a> Value<'a> {
    fn of(lit: &'a Literal) -> Self {
        match lit {
            Literal::Null => Value::Null,
            Literal::Bool(b) => Value::Bool(*b),
            Literal::Long(v) => Value::Long(*v),
            Literal::Double(v) => Value::Double(*v),
            Literal::Str(s) => Value::Str(s),
        }
    }

    fn from_bool(b: Option<bool>) -> Self {
        b.map_or(Value::Null, Value::Bool)
    }
}

/// True when literal `a` sorts before literal `b` (used for `BETWEEN` bound checks at parse
/// time; anything not comparable counts as "not less").
pub(super) fn literal_less(a: &Literal, b: &Literal) -> bool {
    java_compare(Value::of(a), Value::of(b)) == Ok(Ordering::Less)
}

/// Evaluates a condition: `Some(true)`, `Some(false)`, or `None` for NULL.
pub(super) fn evaluate<'v>(
    expr: &Expr,
    get: &dyn Fn(&str) -> Option<&'v str>,
) -> Result<Option<bool>, EvalError> {
    Eval { get }.condition(expr)
}

struct Eval<'g, 'v> {
    get: &'g dyn Fn(&str) -> Option<&'v str>,
}

impl<'v> Eval<'_, 'v> {
    fn condition(&self, expr: &Expr) -> Result<Option<bool>, EvalError> {
        match self.value(expr)? {
            Value::Null => Ok(None),
            Value::Bool(b) => Ok(Some(b)),
            // The parser only lets conditions reach here.
            _ => Err(EvalError("not a condition")),
        }
    }

    fn value<'a>(&self, expr: &'a Expr) -> Result<Value<'a>, EvalError>
    where
        'v: 'a,
    {
        Ok(match expr {
            Expr::Literal(lit) => Value::of(lit),
            Expr::Property(name) => self.property(name),
            Expr::Negate(inner) => match self.value(inner)? {
                Value::Long(v) => Value::Long(v.wrapping_neg()),
                Value::Double(v) => Value::Double(-v),
                _ => Value::Null,
            },
            Expr::BoolCast(name) => match self.property(name) {
                Value::Null => Value::Null,
                // A property is a string, never a Boolean: `createBooleanCast` gives FALSE.
                _ => Value::Bool(false),
            },
            Expr::Not(inner) => Value::from_bool(self.condition(inner)?.map(|b| !b)),
            Expr::And(items) => Value::from_bool(self.and(items)?),
            Expr::Or(items) => Value::from_bool(self.or(items)?),
            Expr::Compare { op, left, right } => Value::from_bool(self.compare(*op, left, right)?),
            Expr::IsNull { expr, negated } => {
                Value::Bool((self.value(expr)? == Value::Null) != *negated)
            }
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => Value::from_bool(self.between(expr, low, high, *negated)?),
            Expr::In {
                property,
                values,
                negated,
            } => match self.property(property) {
                Value::Str(s) => Value::Bool(values.iter().any(|v| v == s) != *negated),
                _ => Value::Null,
            },
            Expr::Text {
                op,
                expr,
                pattern,
                negated,
            } => Value::Bool(self.text(*op, expr, pattern, *negated)?),
        })
    }

    fn property<'a>(&self, name: &str) -> Value<'a>
    where
        'v: 'a,
    {
        (self.get)(name).map_or(Value::Null, Value::Str)
    }

    /// `LogicExpression.createAND`, left-deep: stops at the first FALSE; otherwise NULL if any
    /// operand was NULL.
    fn and(&self, items: &[Expr]) -> Result<Option<bool>, EvalError> {
        let mut unknown = false;
        for item in items {
            match self.condition(item)? {
                Some(false) => return Ok(Some(false)),
                None => unknown = true,
                Some(true) => {}
            }
        }
        Ok(if unknown { None } else { Some(true) })
    }

    /// `LogicExpression.createOR`, left-deep: stops at the first TRUE; otherwise NULL if any
    /// operand was NULL.
    fn or(&self, items: &[Expr]) -> Result<Option<bool>, EvalError> {
        let mut unknown = false;
        for item in items {
            match self.condition(item)? {
                Some(true) => return Ok(Some(true)),
                None => unknown = true,
                Some(false) => {}
            }
        }
        Ok(if unknown { None } else { Some(false) })
    }

    fn compare(&self, op: CmpOp, left: &Expr, right: &Expr) -> Result<Option<bool>, EvalError> {
        match op {
            CmpOp::Eq => self.equal(left, right),
            CmpOp::Ne => Ok(self.equal(left, right)?.map(|b| !b)),
            CmpOp::Lt | CmpOp::Le | CmpOp::Gt | CmpOp::Ge => self.ordering(op, left, right),
        }
    }

    /// `doCreateEqual`: both sides are evaluated; NULL on either side gives NULL (see the
    /// module docs for how this departs from the reference).
    fn equal(&self, left: &Expr, right: &Expr) -> Result<Option<bool>, EvalError> {
        let l = self.value(left)?;
        let r = self.value(right)?;
        if l == Value::Null || r == Value::Null {
            return Ok(None);
        }
        Ok(Some(java_compare(l, r)? == Ordering::Equal))
    }

    /// `ComparisonExpression#evaluate` for `<`, `<=`, `>`, `>=`: NULL left skips the right
    /// side; two strings must both read as doubles.
    fn ordering(&self, op: CmpOp, left: &Expr, right: &Expr) -> Result<Option<bool>, EvalError> {
        let l = self.value(left)?;
        if l == Value::Null {
            return Ok(None);
        }
        let r = self.value(right)?;
        if r == Value::Null {
            return Ok(None);
        }
        let ord = match (l, r) {
            (Value::Str(a), Value::Str(b)) => match (java_double(a), java_double(b)) {
                (Some(a), Some(b)) => java_double_cmp(a, b),
                _ => {
                    return Err(EvalError(
                        "strings compared with <, <=, > or >= are not numbers",
                    ));
                }
            },
            _ => java_compare(l, r)?,
        };
        Ok(Some(match op {
            CmpOp::Lt => ord == Ordering::Less,
            CmpOp::Le => ord != Ordering::Greater,
            CmpOp::Gt => ord == Ordering::Greater,
            CmpOp::Ge => ord != Ordering::Less,
            CmpOp::Eq => ord == Ordering::Equal,
            CmpOp::Ne => ord != Ordering::Equal,
        }))
    }

    /// `createBetween` is `x >= low AND x <= high`; `createNotBetween` is
    /// `x < low OR x > high`.
    fn between(
        &self,
        expr: &Expr,
        low: &Expr,
        high: &Expr,
        negated: bool,
    ) -> Result<Option<bool>, EvalError> {
        if negated {
            let below = self.ordering(CmpOp::Lt, expr, low)?;
            if below == Some(true) {
                return Ok(below);
            }
            let above = self.ordering(CmpOp::Gt, expr, high)?;
            Ok(match (below, above) {
                (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            })
        } else {
            let from = self.ordering(CmpOp::Ge, expr, low)?;
            if from == Some(false) {
                return Ok(from);
            }
            let to = self.ordering(CmpOp::Le, expr, high)?;
            Ok(match (from, to) {
                (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            })
        }
    }

    /// `ContainsExpression` and friends: FALSE (never NULL) for an empty pattern or an operand
    /// that is missing or not a string, negated or not.
    fn text(
        &self,
        op: TextOp,
        expr: &Expr,
        pattern: &str,
        negated: bool,
    ) -> Result<bool, EvalError> {
        if pattern.is_empty() {
            return Ok(false);
        }
        let Value::Str(s) = self.value(expr)? else {
            return Ok(false);
        };
        let found = match op {
            TextOp::Contains => s.contains(pattern),
            TextOp::StartsWith => s.starts_with(pattern),
            TextOp::EndsWith => s.ends_with(pattern),
        };
        Ok(found != negated)
    }
}

/// `ComparisonExpression#__compare` for two non-NULL values: a string meeting a number or a
/// boolean is converted to that type first (an unparsable number is an error); a boolean
/// meeting a number compares as "less", as Java's `-1`.
fn java_compare(l: Value<'_>, r: Value<'_>) -> Result<Ordering, EvalError> {
    use Value::{Bool, Double, Long, Null, Str};
    Ok(match (l, r) {
        (Null, _) | (_, Null) => return Err(EvalError("NULL compared")),
        (Bool(a), Bool(b)) => a.cmp(&b),
        (Long(a), Long(b)) => a.cmp(&b),
        (Double(a), Double(b)) => java_double_cmp(a, b),
        // Java widens the long (`new Double(long)`), precision loss included.
        #[allow(clippy::cast_precision_loss)]
        (Long(a), Double(b)) => java_double_cmp(a as f64, b),
        #[allow(clippy::cast_precision_loss)]
        (Double(a), Long(b)) => java_double_cmp(a, b as f64),
        (Str(a), Str(b)) => a.cmp(b),
        (Str(s), Long(b)) => java_long(s)?.cmp(&b),
        (Long(a), Str(s)) => a.cmp(&java_long(s)?),
        (Str(s), Double(b)) => java_double_cmp(java_double(s).ok_or(NOT_A_DOUBLE)?, b),
        (Double(a), Str(s)) => java_double_cmp(a, java_double(s).ok_or(NOT_A_DOUBLE)?),
        (Str(s), Bool(b)) => java_bool(s).cmp(&b),
        (Bool(a), Str(s)) => a.cmp(&java_bool(s)),
        (Bool(_), Long(_) | Double(_)) | (Long(_) | Double(_), Bool(_)) => Ordering::Less,
    })
}

const NOT_A_DOUBLE: EvalError = EvalError("property value is not a double");

/// `Long.valueOf(String)`: optional sign, ASCII digits, in range.
fn java_long(s: &str) -> Result<i64, EvalError> {
    s.parse::<i64>()
        .map_err(|_| EvalError("property value is not a long"))
}

/// `Boolean.valueOf(String)`: `true` in any case is TRUE, anything else FALSE.
fn java_bool(s: &str) -> bool {
    s.eq_ignore_ascii_case("true")
}

/// `Double.valueOf(String)` for decimal input: surrounding characters `<= ' '` are trimmed;
/// then an optional sign and `NaN`, `Infinity`, or digits with an optional fraction and
/// exponent and an optional `f`/`F`/`d`/`D` suffix. (Java's hexadecimal form is not accepted.)
fn java_double(s: &str) -> Option<f64> {
    let t = s.trim_matches(|c: char| c <= ' ');
    let (negative, body) = match t.as_bytes().first() {
        Some(b'-') => (true, t.get(1..)?),
        Some(b'+') => (false, t.get(1..)?),
        _ => (false, t),
    };
    let magnitude = match body {
        "NaN" => f64::NAN,
        "Infinity" => f64::INFINITY,
        _ => {
            let body = body.strip_suffix(['f', 'F', 'd', 'D']).unwrap_or(body);
            if !is_java_decimal(body) {
                return None;
            }
            body.parse::<f64>().ok()?
        }
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// `digits [. digits] [e|E [+|-] digits]` with at least one mantissa digit (either side of
/// the point).
fn is_java_decimal(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let mut mantissa = digits(&mut i);
    if b.get(i) == Some(&b'.') {
        i += 1;
        mantissa += digits(&mut i);
    }
    if mantissa == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// `Double#compareTo`: all NaNs are equal and above +∞; -0.0 sorts below 0.0.
fn java_double_cmp(a: f64, b: f64) -> Ordering {
    let canonical = |x: f64| if x.is_nan() { f64::NAN } else { x };
    canonical(a).total_cmp(&canonical(b))
}

#[cfg(test)]
mod value_tests {
    use super::*;

    #[test]
    fn java_double_accepts_what_double_value_of_accepts() {
        for (s, v) in [
            ("1", 1.0),
            (" 2.5 ", 2.5),
            ("-3", -3.0),
            ("+.5", 0.5),
            ("1.", 1.0),
            ("1e3", 1000.0),
            ("1.5E-1", 0.15),
            ("7d", 7.0),
            ("7F", 7.0),
            ("-Infinity", f64::NEG_INFINITY),
        ] {
            assert_eq!(java_double(s), Some(v), "{s:?}");
        }
        assert!(java_double("NaN").is_some_and(f64::is_nan));
    }

    #[test]
    fn java_double_rejects_what_double_value_of_rejects() {
        for s in [
            "", " ", ".", "e3", "1e", "1e+", "abc", "inf", "nan", "1..2", "--1", "1 2", "0x10",
            "+", "1fd",
        ] {
            assert_eq!(java_double(s), None, "{s:?}");
        }
    }

    #[test]
    fn java_double_compare_orders_nan_above_infinity_and_negative_zero_below_zero() {
        assert_eq!(java_double_cmp(f64::NAN, f64::INFINITY), Ordering::Greater);
        assert_eq!(java_double_cmp(f64::NAN, -f64::NAN), Ordering::Equal);
        assert_eq!(java_double_cmp(-0.0, 0.0), Ordering::Less);
    }

    #[test]
    fn java_long_and_bool_follow_java_rules() {
        assert_eq!(java_long("+42"), Ok(42));
        assert_eq!(java_long("-42"), Ok(-42));
        assert!(java_long(" 42").is_err());
        assert!(java_long("42L").is_err());
        assert!(java_long("9223372036854775808").is_err());
        assert!(java_bool("TrUe"));
        assert!(!java_bool("yes"));
        assert!(!java_bool(" true"));
    }
}
