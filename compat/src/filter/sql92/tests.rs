use std::collections::HashMap;

use proptest::prelude::*;

use super::eval::{self, EvalError};
use super::{MAX_DEPTH, MAX_EXPRESSION_LEN, Sql92Error, Sql92Filter};

type Props<'a> = &'a [(&'a str, &'a str)];

fn parse(expr: &str) -> Sql92Filter {
    Sql92Filter::parse(expr).unwrap_or_else(|e| panic!("{expr:?} should parse: {e}"))
}

fn lookup<'a>(props: Props<'a>) -> impl Fn(&str) -> Option<&'a str> {
    move |name| props.iter().find(|(k, _)| *k == name).map(|&(_, v)| v)
}

/// Whether `expr` matches a message with these properties.
fn matches(expr: &str, props: Props<'_>) -> bool {
    parse(expr).matches(&lookup(props))
}

/// The three-valued result: `Ok(Some(b))`, `Ok(None)` for NULL, `Err` for an evaluation error.
fn eval3(expr: &str, props: Props<'_>) -> Result<Option<bool>, EvalError> {
    eval::evaluate(&parse(expr).expr, &lookup(props))
}

fn parse_err(expr: &str) -> Sql92Error {
    match Sql92Filter::parse(expr) {
        Ok(f) => panic!("{expr:?} should not parse, got {f:?}"),
        Err(e) => e,
    }
}

fn assert_parse_err(expr: &str, position: usize, fragment: &str) {
    let e = parse_err(expr);
    assert_eq!(e.position, position, "{expr:?}: {e}");
    assert!(
        e.message.contains(fragment),
        "{expr:?}: message {:?} should mention {fragment:?}",
        e.message
    );
}

// ---- literals, identifiers, lexing ----

#[test]
fn every_comparison_operator_compares_a_property_with_an_integer() {
    let p: Props<'_> = &[("a", "5")];
    for (expr, want) in [
        ("a = 5", true),
        ("a = 4", false),
        ("a <> 4", true),
        ("a <> 5", false),
        ("a > 4", true),
        ("a > 5", false),
        ("a >= 5", true),
        ("a >= 6", false),
        ("a < 6", true),
        ("a < 5", false),
        ("a <= 5", true),
        ("a <= 4", false),
    ] {
        assert_eq!(matches(expr, p), want, "{expr}");
    }
}

#[test]
fn every_comparison_operator_compares_a_property_with_a_decimal() {
    let p: Props<'_> = &[("price", "10.5")];
    for (expr, want) in [
        ("price = 10.5", true),
        ("price <> 10.5", false),
        ("price > 10.25", true),
        ("price >= 10.5", true),
        ("price < 10.75", true),
        ("price <= 10.4", false),
    ] {
        assert_eq!(matches(expr, p), want, "{expr}");
    }
}

#[test]
fn equality_compares_strings_as_text() {
    let p: Props<'_> = &[("a", "hello"), ("n", "1.0")];
    assert!(matches("a = 'hello'", p));
    assert!(!matches("a = 'Hello'", p));
    assert!(matches("a <> 'world'", p));
    assert!(!matches("n = '1'", p));
    assert!(matches("'hello' = a", p));
}

#[test]
fn doubled_quote_in_a_string_literal_is_one_quote() {
    assert!(matches("a = 'it''s'", &[("a", "it's")]));
    assert!(matches("a = ''''", &[("a", "'")]));
    assert!(matches("a = ''", &[("a", "")]));
    // From the reference's ExpressionTest: TAGS='''''tag''''' is ''tag''.
    assert!(matches(
        "TAGS is not null and TAGS='''''tag'''''",
        &[("TAGS", "''tag''")]
    ));
}

#[test]
fn string_literals_keep_keywords_spaces_newlines_and_unicode() {
    assert!(matches("a = 'x AND y'", &[("a", "x AND y")]));
    assert!(matches("a = 'line1\nline2'", &[("a", "line1\nline2")]));
    assert!(matches("a = 'héllo ✓'", &[("a", "héllo ✓")]));
    assert!(matches(
        "a = '-- not a comment'",
        &[("a", "-- not a comment")]
    ));
}

#[test]
fn keywords_are_case_insensitive() {
    let p: Props<'_> = &[("a", "2"), ("b", "x")];
    assert!(matches("a BETWEEN 1 AND 3 AND b IN ('x') OR FALSE", p));
    assert!(matches("a between 1 and 3 and b in ('x') or false", p));
    assert!(matches("a BeTwEeN 1 aNd 3 AnD b In ('x') oR FaLsE", p));
    assert!(matches("c is NULL and b Is Not Null and true", p));
    assert!(matches(
        "b contains 'x' and b startsWith 'x' and b ENDSWITH 'x'",
        p
    ));
    assert!(matches("not (a = 1)", p));
}

#[test]
fn property_names_are_case_sensitive() {
    assert!(!matches("A = 1", &[("a", "1")]));
}

#[test]
fn identifiers_may_contain_digits_underscores_dollars_and_dots() {
    let p: Props<'_> = &[("a_1", "1"), ("$x", "2"), ("_y", "3"), ("order.id", "4")];
    assert!(matches("a_1 = 1 AND $x = 2 AND _y = 3 AND order.id = 4", p));
}

#[test]
fn words_that_start_with_a_keyword_are_identifiers() {
    let p: Props<'_> = &[
        ("notes", "1"),
        ("order", "2"),
        ("island", "3"),
        ("nullable", "4"),
    ];
    assert!(matches(
        "notes = 1 AND order = 2 AND island = 3 AND nullable = 4",
        p
    ));
}

#[test]
fn integer_literal_may_carry_an_l_suffix() {
    let p: Props<'_> = &[("a", "5")];
    assert!(matches("a = 5L", p));
    assert!(matches("a = 5l", p));
    assert!(matches("a > 0L", p));
}

#[test]
fn decimal_literal_forms_are_accepted() {
    let p: Props<'_> = &[("a", "1000")];
    for expr in [
        "a = 1000.0",
        "a = 1e3",
        "a = 1E3",
        "a = 1.e3",
        "a = 10000e-1",
        "a > .5",
        "a > 5.",
    ] {
        assert!(matches(expr, p), "{expr}");
    }
    assert!(matches("a < 3.2E+10", p));
}

#[test]
fn zero_decimal_literal_is_accepted_unlike_the_reference() {
    assert!(matches("a > 0.0", &[("a", "0.5")]));
}

#[test]
fn signs_fold_into_numeric_literals() {
    assert!(matches("a = -5", &[("a", "-5")]));
    assert!(matches("a = +5", &[("a", "5")]));
    assert!(matches("a = - -5", &[("a", "5")]));
    assert!(matches("a < -1.5", &[("a", "-2")]));
    assert!(matches("a BETWEEN -3 AND -1", &[("a", "-2")]));
}

#[test]
fn long_min_and_max_literals_are_accepted() {
    assert!(matches(
        "a = -9223372036854775808",
        &[("a", "-9223372036854775808")]
    ));
    assert!(matches(
        "a = 9223372036854775807",
        &[("a", "9223372036854775807")]
    ));
    assert!(matches(
        "a > 9223372036854775806",
        &[("a", "9223372036854775807")]
    ));
}

#[test]
fn minus_applied_to_a_property_is_null_as_in_the_reference() {
    assert_eq!(eval3("-a = -5", &[("a", "5")]), Ok(None));
    assert_eq!(eval3("-a > 1", &[("a", "5")]), Ok(None));
    assert_eq!(eval3("+a = 5", &[("a", "5")]), Ok(Some(true)));
}

#[test]
fn comments_and_all_whitespace_kinds_are_skipped() {
    let p: Props<'_> = &[("a", "1")];
    assert!(matches("a = 1 -- trailing comment", p));
    assert!(matches("a = 1 -- comment\r\nAND TRUE", p));
    assert!(matches("/* lead */ a /* mid */ = 1 /* end **/", p));
    assert!(matches("\ta\n=\r1\x0c", p));
}

#[test]
fn tokens_need_no_spaces_between_them() {
    let p: Props<'_> = &[("a", "3"), ("b", "4")];
    assert!(matches("a=3 and b<>5", p));
    assert!(matches("(a=3)AND(b>=4)", p));
    assert!(matches("a=3AND b=4", p));
}

#[test]
fn as_str_returns_the_original_text() {
    let text = "  a = 1  -- x";
    assert_eq!(parse(text).as_str(), text);
}

#[test]
fn parsing_the_same_text_twice_gives_equal_filters() {
    assert_eq!(parse("a = 1 AND b = 'x'"), parse("a = 1 AND b = 'x'"));
    assert_ne!(parse("a = 1 AND b = 'x'"), parse("a = 1 OR b = 'x'"));
    let f = parse("a IN ('x', 'y')");
    assert_eq!(f.clone(), f);
}

// ---- operators ----

#[test]
fn between_includes_both_bounds() {
    let e = "a between 2 and 10";
    for (v, want) in [
        ("1", false),
        ("2", true),
        ("3", true),
        ("10", true),
        ("11", false),
    ] {
        assert_eq!(matches(e, &[("a", v)]), want, "a = {v}");
    }
}

#[test]
fn not_between_matches_outside_the_range_only() {
    let e = "a not between 2 and 10";
    for (v, want) in [
        ("1", true),
        ("2", false),
        ("3", false),
        ("10", false),
        ("11", true),
    ] {
        assert_eq!(matches(e, &[("a", v)]), want, "a = {v}");
    }
}

#[test]
fn between_reads_the_property_as_each_bound_s_type() {
    assert!(matches("a BETWEEN 1.0 AND 2.5", &[("a", "2.5")]));
    assert!(matches("a BETWEEN 1 AND 2.5", &[("a", "2")]));
    assert!(matches("2 BETWEEN 1 AND 2.5", &[]));
    // `a >= 1` reads '1.5' as a long: an error, as in the reference.
    assert!(eval3("a BETWEEN 1 AND 2.5", &[("a", "1.5")]).is_err());
    assert!(eval3("a BETWEEN 0.5 AND 2", &[("a", "0.75")]).is_err());
}

#[test]
fn between_and_does_not_swallow_the_following_and() {
    let e = "a BETWEEN 1 AND 3 AND b = 'x'";
    assert!(matches(e, &[("a", "2"), ("b", "x")]));
    assert!(!matches(e, &[("a", "2"), ("b", "y")]));
}

#[test]
fn between_can_compare_two_properties() {
    let e = "a BETWEEN lo AND hi";
    assert!(matches(e, &[("a", "5"), ("lo", "1"), ("hi", "10")]));
    assert!(!matches(e, &[("a", "50"), ("lo", "1"), ("hi", "10")]));
}

#[test]
fn in_matches_listed_strings_only() {
    let e = "a in ('3', '4', '5')";
    for (v, want) in [
        ("3", true),
        ("4", true),
        ("5", true),
        ("6", false),
        ("3.0", false),
    ] {
        assert_eq!(matches(e, &[("a", v)]), want, "a = {v}");
    }
    assert!(matches("a IN ('only')", &[("a", "only")]));
}

#[test]
fn not_in_matches_unlisted_strings() {
    let e = "a not in ('3', '4', '5')";
    for (v, want) in [("3", false), ("5", false), ("6", true), ("", true)] {
        assert_eq!(matches(e, &[("a", v)]), want, "a = {v:?}");
    }
}

#[test]
fn in_accepts_many_values() {
    let list: Vec<String> = (0..500).map(|i| format!("'v{i}'")).collect();
    let e = format!("a IN ({})", list.join(", "));
    assert!(matches(&e, &[("a", "v499")]));
    assert!(!matches(&e, &[("a", "v500")]));
}

#[test]
fn is_null_is_true_only_for_missing_properties() {
    assert!(matches("a is null", &[("abc", "2")]));
    assert!(!matches("a is null", &[("a", "2")]));
    assert!(!matches("a is null", &[("a", "")]));
    assert!(matches("a is not null", &[("a", "2")]));
    assert!(matches("a is not null", &[("a", "")]));
    assert!(!matches("a is not null", &[("abc", "2")]));
}

#[test]
fn is_null_applies_to_any_expression() {
    assert!(matches("(a > 1) IS NULL", &[]));
    assert!(matches("(a > 1) IS NOT NULL", &[("a", "5")]));
    assert!(matches("NULL IS NULL", &[]));
    assert!(matches("-a IS NULL", &[("a", "5")]));
}

#[test]
fn contains_startswith_and_endswith_test_substrings() {
    let p: Props<'_> = &[("a", "axbc")];
    for (expr, want) in [
        ("a CONTAINS 'xb'", true),
        ("a CONTAINS 'axbc'", true),
        ("a CONTAINS 'q'", false),
        ("a STARTSWITH 'ax'", true),
        ("a STARTSWITH 'xb'", false),
        ("a ENDSWITH 'bc'", true),
        ("a ENDSWITH 'ax'", false),
        ("a CONTAINS 'axbcd'", false),
    ] {
        assert_eq!(matches(expr, p), want, "{expr}");
    }
}

#[test]
fn not_contains_not_startswith_and_not_endswith_negate_for_present_values() {
    let p: Props<'_> = &[("a", "axbc")];
    for (expr, want) in [
        ("a NOT CONTAINS 'xb'", false),
        ("a NOT CONTAINS 'q'", true),
        ("a NOT STARTSWITH 'ax'", false),
        ("a NOT STARTSWITH 'bc'", true),
        ("a NOT ENDSWITH 'bc'", false),
        ("a NOT ENDSWITH 'ax'", true),
    ] {
        assert_eq!(matches(expr, p), want, "{expr}");
    }
}

#[test]
fn text_operators_are_false_for_an_empty_pattern_negated_or_not() {
    for op in ["CONTAINS", "STARTSWITH", "ENDSWITH"] {
        assert_eq!(eval3(&format!("a {op} ''"), &[("a", "x")]), Ok(Some(false)));
        assert_eq!(
            eval3(&format!("a NOT {op} ''"), &[("a", "x")]),
            Ok(Some(false))
        );
    }
}

#[test]
fn text_operators_are_false_for_a_missing_property_negated_or_not() {
    for op in ["CONTAINS", "STARTSWITH", "ENDSWITH"] {
        assert_eq!(eval3(&format!("a {op} 'x'"), &[]), Ok(Some(false)));
        assert_eq!(eval3(&format!("a NOT {op} 'x'"), &[]), Ok(Some(false)));
    }
}

#[test]
fn not_around_a_text_operator_on_a_missing_property_matches() {
    assert!(matches("NOT (a CONTAINS 'x')", &[]));
    assert!(!matches("a NOT CONTAINS 'x'", &[]));
}

#[test]
fn text_operators_see_an_empty_property_value_as_a_string() {
    assert!(!matches("a CONTAINS 'x'", &[("a", "")]));
    assert!(matches("a NOT CONTAINS 'x'", &[("a", "")]));
}

#[test]
fn text_operators_apply_to_string_literals_but_not_to_numbers() {
    assert!(matches("'axb' CONTAINS 'x'", &[]));
    assert_eq!(eval3("5 CONTAINS '5'", &[]), Ok(Some(false)));
    assert_eq!(eval3("5 NOT CONTAINS '5'", &[]), Ok(Some(false)));
}

#[test]
fn tags_is_an_ordinary_property() {
    assert!(matches("TAGS = 'TagA'", &[("TAGS", "TagA")]));
    assert!(!matches("TAGS = 'TagA'", &[]));
}

#[test]
fn constant_conditions_match_everything_or_nothing() {
    assert!(matches("TRUE", &[]));
    assert!(!matches("FALSE", &[]));
    assert!(!matches("NULL", &[]));
    assert!(matches("1 = 1", &[]));
    assert!(matches("1 = 1.0", &[]));
    assert!(matches("'a' = 'a'", &[]));
    assert!(matches("2 > 1", &[]));
    assert!(matches("TRUE = TRUE", &[]));
    assert!(!matches("1 = TRUE", &[]), "a number never equals a boolean");
}

// ---- precedence ----

#[test]
fn and_binds_tighter_than_or() {
    // a OR (b AND c)
    let e = "a = 1 OR b = 1 AND c = 1";
    assert!(matches(e, &[("a", "1"), ("b", "0"), ("c", "0")]));
    assert!(!matches(e, &[("a", "0"), ("b", "1"), ("c", "0")]));
    // (b AND c) OR a
    let e = "b = 1 AND c = 1 OR a = 1";
    assert!(matches(e, &[("a", "1"), ("b", "0"), ("c", "0")]));
}

#[test]
fn parentheses_override_precedence() {
    let e = "(a = 1 OR b = 1) AND c = 1";
    assert!(!matches(e, &[("a", "1"), ("b", "0"), ("c", "0")]));
    assert!(matches(e, &[("a", "1"), ("b", "0"), ("c", "1")]));
    assert!(matches("((((a = 1))))", &[("a", "1")]));
}

#[test]
fn not_binds_tighter_than_and_and_or() {
    // (NOT a = 1) AND b = 1
    let e = "NOT a = 1 AND b = 1";
    assert!(matches(e, &[("a", "2"), ("b", "1")]));
    assert!(!matches(e, &[("a", "1"), ("b", "1")]));
    assert!(!matches(e, &[("a", "2"), ("b", "2")]));
    // (NOT a = 1) OR b = 1
    assert!(matches("NOT a = 1 OR b = 1", &[("a", "1"), ("b", "1")]));
}

#[test]
fn not_applies_to_the_whole_comparison() {
    assert!(matches("NOT a = 'x'", &[("a", "y")]));
    assert!(!matches("NOT a = 'x'", &[("a", "x")]));
    assert!(matches("NOT a > 1", &[("a", "0")]));
    assert!(matches("NOT a BETWEEN 1 AND 2", &[("a", "3")]));
    assert!(matches("NOT a IN ('x')", &[("a", "y")]));
    assert!(matches("NOT a IS NULL", &[("a", "y")]));
    assert!(!matches("NOT a IS NULL", &[]));
}

#[test]
fn repeated_not_alternates() {
    let p: Props<'_> = &[("a", "1")];
    assert!(matches("NOT NOT a = 1", p));
    assert!(!matches("NOT NOT NOT a = 1", p));
    assert!(matches("NOT (NOT (a = 1))", p));
}

#[test]
fn equality_binds_looser_than_ordering_as_in_the_reference() {
    // (a > 1) = TRUE and (a < 1) = FALSE
    assert!(matches("a > 1 = TRUE", &[("a", "5")]));
    assert!(matches("a < 1 = FALSE", &[("a", "5")]));
    assert!(matches("a IN ('x') = TRUE", &[("a", "x")]));
    assert!(matches("a IS NULL = TRUE", &[]));
    assert!(matches("a > 1 <> b > 1", &[("a", "5"), ("b", "0")]));
}

#[test]
fn bare_property_condition_is_false_when_present_and_unknown_when_missing() {
    assert_eq!(eval3("a", &[("a", "true")]), Ok(Some(false)));
    assert_eq!(eval3("a", &[]), Ok(None));
    assert!(matches("NOT a", &[("a", "anything")]));
    assert!(!matches("NOT a", &[]));
    assert!(matches("a OR b = 1", &[("a", "x"), ("b", "1")]));
    assert!(matches("(a) IN ('x')", &[("a", "x")]));
}

// ---- NULL and three-valued logic ----

#[test]
fn missing_property_makes_every_comparison_unknown() {
    for expr in [
        "a = 1",
        "a <> 1",
        "a > 1",
        "a >= 1",
        "a < 1",
        "a <= 1",
        "a = 'x'",
        "a <> 'x'",
        "a = TRUE",
        "a = 1.5",
        "1 = a",
        "'x' <> a",
        "1 < a",
        "a = b",
        "a <> b",
        "a < b",
        "a BETWEEN 1 AND 2",
        "a NOT BETWEEN 1 AND 2",
        "a IN ('x')",
        "a NOT IN ('x')",
    ] {
        assert_eq!(eval3(expr, &[]), Ok(None), "{expr}");
        assert!(!matches(expr, &[]), "{expr}");
    }
}

#[test]
fn one_missing_side_is_enough_for_unknown() {
    assert_eq!(eval3("a = b", &[("a", "1")]), Ok(None));
    assert_eq!(eval3("a <> b", &[("b", "1")]), Ok(None));
    assert_eq!(eval3("a > b", &[("a", "1")]), Ok(None));
    assert_eq!(eval3("a BETWEEN lo AND 5", &[("a", "1")]), Ok(None));
}

#[test]
fn not_of_an_unknown_comparison_does_not_match() {
    assert!(!matches("NOT (a > 1)", &[]));
    assert!(!matches("NOT (a = 'x')", &[]));
    assert!(!matches("NOT a <> 'x'", &[]));
}

#[test]
fn not_in_and_not_between_on_a_missing_property_do_not_match() {
    assert!(!matches("a NOT IN ('x')", &[]));
    assert!(!matches("a NOT BETWEEN 1 AND 2", &[]));
    assert!(!matches("NOT (a IN ('x'))", &[]));
    assert!(!matches("NOT (a BETWEEN 1 AND 2)", &[]));
}

#[test]
fn three_valued_and_or_not_follow_sql() {
    let value = |s: &str| match s {
        "TRUE" => Some(true),
        "FALSE" => Some(false),
        _ => None,
    };
    let names = ["TRUE", "FALSE", "NULL"];
    for l in names {
        assert_eq!(
            eval3(&format!("NOT {l}"), &[]),
            Ok(value(l).map(|b| !b)),
            "NOT {l}"
        );
        for r in names {
            let and = match (value(l), value(r)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            };
            let or = match (value(l), value(r)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            };
            assert_eq!(eval3(&format!("{l} AND {r}"), &[]), Ok(and), "{l} AND {r}");
            assert_eq!(eval3(&format!("{l} OR {r}"), &[]), Ok(or), "{l} OR {r}");
        }
    }
}

#[test]
fn unknown_conditions_combine_like_sql() {
    // a is missing: a > 1 is NULL.
    assert!(matches("a > 1 OR b = 1", &[("b", "1")]));
    assert!(!matches("a > 1 AND b = 1", &[("b", "1")]));
    assert!(matches("NOT (a > 1 AND b = 2)", &[("b", "1")]));
    assert!(!matches("NOT (a > 1 AND b = 1)", &[("b", "1")]));
    assert!(matches("a is null OR a = 'hello'", &[("b", "x")]));
    assert!(matches("a is null OR a = 'hello'", &[("a", "hello")]));
    assert!(!matches("a is null OR a = 'hello'", &[("a", "bye")]));
}

#[test]
fn only_true_matches() {
    assert!(!matches("a = 1", &[("a", "2")]));
    assert!(!matches("a = 1", &[]));
    assert!(!matches("a = 1", &[("a", "x")]));
    assert!(matches("a = 1", &[("a", "1")]));
}

// ---- conversions and evaluation errors ----

#[test]
fn property_compared_with_an_integer_is_read_as_a_long() {
    assert!(matches("a > 9", &[("a", "10")]), "numeric, not textual");
    assert!(matches("a = 10", &[("a", "+10")]));
    assert!(matches("a = -10", &[("a", "-10")]));
    assert!(matches("a = 10", &[("a", "0010")]));
    assert!(matches("a = 5", &[("a", "5")]));
}

#[test]
fn property_that_is_not_a_long_fails_against_an_integer() {
    for v in ["5.0", " 5", "5L", "abc", "", "9223372036854775808", "1e3"] {
        assert!(eval3("a = 5", &[("a", v)]).is_err(), "{v:?}");
        assert!(!matches("a <> 5", &[("a", v)]), "{v:?}");
    }
}

#[test]
fn property_compared_with_a_decimal_is_read_as_a_double() {
    for v in ["2.5", " 2.5 ", "2.50", "+2.5", "25e-1", "2.5d", "2.5F"] {
        assert!(matches("a = 2.5", &[("a", v)]), "{v:?}");
    }
    assert!(matches("a = 2.0", &[("a", "2")]));
    assert!(matches("a > 3.1E10", &[("a", "3.1415E10")]));
    assert!(matches("a > 3.14", &[("a", "3.1415")]));
    assert!(eval3("a = 2.5", &[("a", "two")]).is_err());
    assert!(eval3("a = 2.5", &[("a", "0x1p1")]).is_err());
}

#[test]
fn nan_and_infinity_property_values_compare_as_java_doubles() {
    assert!(matches("a > 1e300", &[("a", "Infinity")]));
    assert!(matches("a < -1e300", &[("a", "-Infinity")]));
    assert!(
        matches("a > 1.0", &[("a", "NaN")]),
        "Double#compareTo puts NaN on top"
    );
    assert!(matches("a = b", &[("a", "NaN"), ("b", "NaN")]));
    assert!(eval3("a > 1.0", &[("a", "nan")]).is_err());
}

#[test]
fn boolean_literal_reads_the_property_as_java_boolean_value_of() {
    assert!(matches("a = TRUE", &[("a", "true")]));
    assert!(matches("a = TRUE", &[("a", "TRUE")]));
    assert!(matches("a = FALSE", &[("a", "false")]));
    assert!(
        matches("a = FALSE", &[("a", "yes")]),
        "anything but true is false"
    );
    assert!(matches("a <> TRUE", &[("a", "1")]));
    assert!(matches("TRUE = a", &[("a", "True")]), "same on either side");
    let e = "a=TRUE OR b=FALSE";
    assert!(matches(e, &[("a", "true"), ("b", "true")]));
    assert!(!matches(e, &[("a", "false"), ("b", "true")]));
}

#[test]
fn longs_and_doubles_compare_numerically() {
    assert!(matches("1 = 1.0", &[]));
    assert!(matches("2 > 1.5", &[]));
    assert!(matches("a > 1.5", &[("a", "2")]));
    assert!(!matches("a < 2", &[("a", "1.5")]), "1.5 is not a long");
    assert!(matches("a BETWEEN 1.0 AND 2.0", &[("a", "1.5")]));
}

#[test]
fn large_longs_compare_exactly() {
    assert!(matches(
        "a = 9223372036854775807",
        &[("a", "9223372036854775807")]
    ));
    assert!(!matches(
        "a = 9223372036854775806",
        &[("a", "9223372036854775807")]
    ));
    assert!(matches("a > 5000000000", &[("a", "5000000001")]));
}

#[test]
fn two_numeric_properties_are_ordered_as_doubles() {
    assert!(matches("a < b", &[("a", "9"), ("b", "10")]));
    assert!(!matches("a > b", &[("a", "10"), ("b", "20")]));
    assert!(matches("a > b", &[("a", "20"), ("b", "10")]));
    assert!(matches("a >= b", &[("a", "1.0"), ("b", "1")]));
}

#[test]
fn two_non_numeric_properties_cannot_be_ordered() {
    assert!(eval3("a < b", &[("a", "x"), ("b", "y")]).is_err());
    assert!(eval3("a < b", &[("a", "1"), ("b", "y")]).is_err());
    assert!(
        eval3(
            "a between up and low",
            &[("a", "3.14"), ("up", "up"), ("low", "low")]
        )
        .is_err()
    );
}

#[test]
fn two_properties_are_equal_only_as_identical_text() {
    assert!(matches("a = b", &[("a", "3.14"), ("b", "3.14")]));
    assert!(!matches("a <> b", &[("a", "3.14"), ("b", "3.14")]));
    assert!(matches("a <> b", &[("a", "3.14"), ("b", "3.141")]));
    assert!(!matches("a = b", &[("a", "1"), ("b", "1.0")]));
}

#[test]
fn unparsable_number_is_an_evaluation_error_not_false() {
    assert!(eval3("a > 1", &[("a", "abc")]).is_err());
    assert!(eval3("a BETWEEN 0 AND 100", &[("a", "con")]).is_err());
    // An error is not FALSE: negating it does not produce a match.
    assert!(!matches("NOT (a > 1)", &[("a", "abc")]));
    assert!(!matches(
        "key is not null and key between 0 and 100",
        &[("key", "con")]
    ));
}

#[test]
fn evaluation_errors_propagate_unless_and_or_stop_first() {
    let p: Props<'_> = &[("a", "abc")];
    assert!(matches("TRUE OR a > 1", p), "OR stops at TRUE");
    assert!(!matches("a > 1 OR TRUE", p), "the error comes first");
    assert_eq!(
        eval3("FALSE AND a > 1", p),
        Ok(Some(false)),
        "AND stops at FALSE"
    );
    assert!(eval3("a > 1 AND FALSE", p).is_err());
    assert!(
        eval3("NULL AND a > 1", p).is_err(),
        "NULL does not stop AND"
    );
    assert!(
        eval3("b > 1 AND a > 1", p).is_err(),
        "nor does a NULL comparison"
    );
    assert!(matches("NOT (FALSE AND a > 1)", p));
}

#[test]
fn ordering_skips_its_right_side_when_the_left_side_is_null() {
    assert_eq!(eval3("b > a", &[("a", "abc")]), Ok(None));
    assert_eq!(eval3("a > b", &[("a", "abc")]), Ok(None));
}

// ---- parse errors ----

#[test]
fn empty_expression_is_an_error() {
    assert_parse_err("", 0, "empty");
    assert_parse_err("   \n\t", 5, "empty");
    assert_parse_err("-- only a comment", 17, "empty");
    assert_parse_err("/* */", 5, "empty");
}

#[test]
fn unbalanced_open_parenthesis_is_an_error() {
    assert_parse_err("(a = 1", 6, "missing `)`");
    assert_parse_err("((a = 1)", 8, "missing `)`");
    assert_parse_err("a IN ('x'", 9, "`)`");
}

#[test]
fn unbalanced_close_parenthesis_is_an_error() {
    assert_parse_err("a = 1)", 5, "unbalanced `)`");
    assert_parse_err("(a = 1))", 7, "unbalanced `)`");
    assert_parse_err(")", 0, "operand");
}

#[test]
fn trailing_junk_is_an_error() {
    assert_parse_err("a = 1 b", 6, "identifier `b`");
    assert_parse_err("a = 1 'x'", 6, "string literal");
    assert_parse_err("a = 1 2", 6, "numeric literal");
    assert_parse_err("a LIKE 'x'", 2, "identifier `LIKE`");
    assert_parse_err("a = 1 NOT", 6, "NOT");
}

#[test]
fn unterminated_string_is_an_error() {
    assert_parse_err("a = 'abc", 4, "unterminated string");
    assert_parse_err("a = 'it''s", 4, "unterminated string");
    assert_parse_err("'", 0, "unterminated string");
}

#[test]
fn unterminated_block_comment_is_an_error() {
    assert_parse_err("a = 1 /* never closed", 6, "unterminated comment");
}

#[test]
fn unexpected_characters_are_errors() {
    assert_parse_err("a = \"x\"", 4, "'\"'");
    assert_parse_err("a != 1", 2, "'!'");
    assert_parse_err("a = 1; b = 2", 5, "';'");
    assert_parse_err("a = 1 # x", 6, "'#'");
    assert_parse_err("a\u{a0}= 1", 1, "unexpected character");
    assert_parse_err("é = 1", 0, "'é'");
}

#[test]
fn missing_operands_are_errors() {
    assert_parse_err("a =", 3, "end of input");
    assert_parse_err("a = 1 AND", 9, "end of input");
    assert_parse_err("a and between 2 and 10", 6, "BETWEEN");
    assert_parse_err("= 1", 0, "`=`");
    assert_parse_err("a = = 1", 4, "`=`");
    assert_parse_err("()", 1, "`)`");
    assert_parse_err("NOT", 3, "end of input");
}

#[test]
fn in_with_anything_but_string_literals_is_an_error() {
    assert_parse_err("a IN (b)", 6, "only string literals");
    assert_parse_err("a IN (1, 2)", 6, "only string literals");
    assert_parse_err("a IN ('x', 1)", 11, "only string literals");
    assert_parse_err("a IN ('x', NULL)", 11, "only string literals");
    assert_parse_err("a IN ()", 6, "only string literals");
    assert_parse_err("a IN 'x'", 5, "`(`");
    assert_parse_err("a IN ('x' 'y')", 10, "`,` or `)`");
    assert_parse_err("a IN ('x',)", 10, "only string literals");
}

#[test]
fn in_needs_a_property_on_its_left() {
    assert_parse_err("'x' IN ('x')", 4, "property");
    assert_parse_err("5 NOT IN ('x')", 6, "property");
    assert_parse_err("(a = 1) IN ('x')", 8, "property");
}

#[test]
fn text_operators_need_a_string_literal() {
    assert_parse_err("value contains x", 15, "only string literals");
    assert_parse_err("value not contains 123", 19, "only string literals");
    assert_parse_err("'axb' contains ", 15, "only string literals");
    assert_parse_err("a STARTSWITH NULL", 13, "only string literals");
}

#[test]
fn comparing_with_the_null_literal_is_an_error() {
    assert_parse_err("a = NULL", 4, "IS NULL");
    assert_parse_err("NULL <> a", 0, "IS NULL");
    assert_parse_err("a > NULL", 4, "NULL");
    assert_parse_err("a BETWEEN NULL AND 2", 10, "NULL");
}

#[test]
fn ordering_anything_but_properties_and_numbers_is_an_error() {
    assert_parse_err("a > 'x'", 4, "string literal");
    assert_parse_err("'x' < a", 0, "string literal");
    assert_parse_err("a >= TRUE", 5, "boolean literal");
    assert_parse_err("(a = 1) > 0", 0, "condition");
    assert_parse_err("a > 1 > 0", 0, "condition");
    assert_parse_err("a BETWEEN 'a' AND 'z'", 10, "string literal");
    assert_parse_err("a IN ('x') BETWEEN 1 AND 2", 0, "condition");
}

#[test]
fn boolean_literal_equal_to_a_string_or_number_literal_is_an_error() {
    assert_parse_err("TRUE = 1", 7, "boolean literal");
    assert_parse_err("FALSE <> 'x'", 9, "boolean literal");
    // Only a boolean literal on the left is checked, as in the reference.
    assert!(Sql92Filter::parse("1 = TRUE").is_ok());
}

#[test]
fn between_bounds_out_of_order_are_an_error() {
    assert_parse_err(" a between 10 and 0", 11, "lower bound");
    assert_parse_err("a BETWEEN 2.5 AND 2", 10, "lower bound");
    assert!(Sql92Filter::parse("a BETWEEN 2 AND 2").is_ok());
    // NOT BETWEEN does not check, as in the reference; it then matches everything present.
    assert!(matches("a NOT BETWEEN 10 AND 0", &[("a", "5")]));
}

#[test]
fn between_without_and_is_an_error() {
    assert_parse_err("a BETWEEN 1 OR 2", 12, "AND");
    assert_parse_err("a BETWEEN 1", 11, "AND");
}

#[test]
fn non_boolean_expressions_are_errors_where_a_condition_is_needed() {
    assert_parse_err("5", 0, "boolean");
    assert_parse_err("'x'", 0, "boolean");
    assert_parse_err("-a", 0, "boolean");
    assert_parse_err("a = 1 AND 5", 10, "boolean");
    assert_parse_err("'x' OR a = 1", 0, "boolean");
    assert_parse_err("NOT 1", 4, "boolean");
    assert_parse_err("(1.5)", 0, "boolean");
}

#[test]
fn not_cannot_be_an_operand() {
    assert_parse_err("a = NOT b", 4, "keyword NOT");
    assert_parse_err("- NOT a", 2, "keyword NOT");
}

#[test]
fn is_must_be_followed_by_null_or_not_null() {
    assert_parse_err("a IS 1", 5, "NULL or NOT NULL");
    assert_parse_err("a IS NOT 1", 9, "expected NULL");
    assert_parse_err("a IS", 4, "end of input");
}

#[test]
fn out_of_range_numeric_literals_are_errors() {
    assert_parse_err("a > 9223372036854775808", 4, "out of range");
    assert_parse_err("a > 100000000000000000000000", 4, "out of range");
    assert_parse_err("a > 1e400", 4, "out of range");
    assert_parse_err("a > -9223372036854775809", 5, "out of range");
}

#[test]
fn integer_literal_with_a_leading_zero_is_an_error() {
    assert_parse_err("a = 007", 4, "leading zero");
    assert!(Sql92Filter::parse("a = 0").is_ok());
    assert!(
        Sql92Filter::parse("a = 00.5").is_ok(),
        "a decimal may start with zeros"
    );
}

#[test]
fn overlong_expression_is_an_error() {
    let ok = format!("a = '{}'", "x".repeat(MAX_EXPRESSION_LEN - 6));
    assert_eq!(ok.len(), MAX_EXPRESSION_LEN);
    assert!(Sql92Filter::parse(&ok).is_ok());
    let long = format!("a = '{}'", "x".repeat(MAX_EXPRESSION_LEN));
    assert_parse_err(&long, MAX_EXPRESSION_LEN, "limit");
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let n = 40_000;
    let parens = format!("{}a = 1{}", "(".repeat(n / 4), ")".repeat(n / 4));
    let nots = format!("{}a = 1", "NOT ".repeat(n / 8));
    let minus = format!("a = {}1", "- ".repeat(n / 4));
    let is_null = format!("a{}", " IS NULL".repeat(n / 16));
    let eq = format!("a{}", " = TRUE".repeat(n / 16));
    let contains = format!("a{}", " CONTAINS 'x'".repeat(n / 16));
    let unclosed = "(".repeat(n / 2);
    for expr in [parens, nots, minus, is_null, eq, contains, unclosed] {
        let e = parse_err(&expr);
        assert!(e.message.contains("nested too deeply"), "{e}");
    }
}

#[test]
fn nesting_within_the_limit_is_accepted() {
    let depth = MAX_DEPTH / 2;
    let parens = format!("{}a = 1{}", "(".repeat(depth), ")".repeat(depth));
    assert!(matches(&parens, &[("a", "1")]));
    let nots = format!("{}a = 1", "NOT ".repeat(depth));
    assert!(matches(&nots, &[("a", "1")]));
    let over = format!(
        "{}a = 1{}",
        "(".repeat(MAX_DEPTH + 1),
        ")".repeat(MAX_DEPTH + 1)
    );
    assert!(parse_err(&over).message.contains("nested too deeply"));
}

#[test]
fn long_and_or_chains_are_not_limited_by_nesting() {
    let terms: Vec<String> = (0..3000).map(|i| format!("p{i} = {i}")).collect();
    let and = terms.join(" AND ");
    let or = terms.join(" OR ");
    assert!(and.len() < MAX_EXPRESSION_LEN);
    let map: HashMap<String, String> = (0..3000)
        .map(|i| (format!("p{i}"), i.to_string()))
        .collect();
    let get = |name: &str| map.get(name).map(String::as_str);
    assert!(parse(&and).matches(&get));
    assert!(parse(&or).matches(&|name| if name == "p2999" { Some("2999") } else { None }));
    assert!(!parse(&and).matches(&|_| None));
}

#[test]
fn error_display_names_the_position() {
    let e = parse_err("a = 1 b");
    assert_eq!(
        e.to_string(),
        "invalid SQL92 expression at position 6: unexpected identifier `b` after a complete expression"
    );
}

#[test]
fn error_positions_are_byte_offsets() {
    // 'é' is two bytes in UTF-8.
    assert_parse_err("a = 'é' b", 9, "identifier `b`");
}

#[test]
fn matches_borrows_values_from_a_map() {
    let mut map = HashMap::new();
    map.insert("TAGS".to_owned(), "TagA".to_owned());
    map.insert("price".to_owned(), "11".to_owned());
    let f = parse("TAGS in ('TagA','TagB') and price > 10.5");
    assert!(f.matches(&|name| map.get(name).map(String::as_str)));
}

// ---- expressions as Java clients send them ----

#[test]
fn java_client_between_expression() {
    let f = parse("a between 0 and 3");
    for (v, want) in [
        ("0", true),
        ("2", true),
        ("3", true),
        ("4", false),
        ("-1", false),
    ] {
        assert_eq!(f.matches(&lookup(&[("a", v)])), want, "a = {v}");
    }
    assert!(!f.matches(&lookup(&[])));
}

#[test]
fn java_client_tags_in_list_and_price() {
    let e = "TAGS in ('TagA','TagB') and price > 10.5";
    assert!(matches(e, &[("TAGS", "TagA"), ("price", "11")]));
    assert!(matches(e, &[("TAGS", "TagB"), ("price", "10.51")]));
    assert!(!matches(e, &[("TAGS", "TagC"), ("price", "11")]));
    assert!(!matches(e, &[("TAGS", "TagA"), ("price", "10.5")]));
    assert!(!matches(e, &[("TAGS", "TagA")]));
    assert!(!matches(e, &[("TAGS", "TagA"), ("price", "cheap")]));
}

#[test]
fn java_client_or_in_parentheses_with_is_not_null() {
    let e = "(a > 5 OR b = 'x') AND c IS NOT NULL";
    assert!(matches(e, &[("a", "6"), ("c", "")]));
    assert!(matches(e, &[("b", "x"), ("c", "1")]));
    assert!(matches(e, &[("a", "1"), ("b", "x"), ("c", "1")]));
    assert!(!matches(e, &[("a", "6")]));
    assert!(!matches(e, &[("a", "5"), ("b", "y"), ("c", "1")]));
}

#[test]
fn java_example_consumers_filters() {
    // From RocketMQ's example SqlFilterConsumer and the reference's tests.
    let e =
        "(TAGS is not null and TAGS in ('TagA', 'TagB')) and (a is not null and a between 0 and 3)";
    assert!(matches(e, &[("TAGS", "TagA"), ("a", "1")]));
    assert!(!matches(e, &[("TAGS", "TagC"), ("a", "1")]));
    assert!(!matches(e, &[("TAGS", "TagA")]));
    let e = "a not in ('4', '4', '5') and b between 3 and 10 and c not contains 'axbc'";
    assert!(matches(e, &[("a", "3"), ("b", "3"), ("c", "axb")]));
    let e = "a=3 and b<>4 And c>5 AND d<=4";
    assert!(matches(
        e,
        &[("a", "3"), ("b", "5"), ("c", "6"), ("d", "4")]
    ));
    assert!(!matches(
        e,
        &[("a", "3"), ("b", "4"), ("c", "6"), ("d", "4")]
    ));
    let e = "a=3 or b<>4 Or c>5 OR d<=4";
    assert!(matches(e, &[("d", "1")]));
    assert!(!matches(
        e,
        &[("a", "4"), ("b", "4"), ("c", "5"), ("d", "5")]
    ));
    let e = "(a not in ('6', '4', '5')) or (b in ('3', '4', '5'))";
    assert!(matches(e, &[("a", "6"), ("b", "3")]));
    let e = "(a between 2 and 10) AND (b not between 6 and 9)";
    assert!(matches(e, &[("a", "2"), ("b", "10")]));
    assert!(!matches(e, &[("a", "2"), ("b", "7")]));
}

// ---- property tests ----

/// Tokens and fragments that make interesting soup for the parser.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "a",
            "TAGS",
            "NOT",
            "AND",
            "OR",
            "BETWEEN",
            "IN",
            "IS",
            "NULL",
            "TRUE",
            "FALSE",
            "CONTAINS",
            "STARTSWITH",
            "ENDSWITH",
            "(",
            ")",
            ",",
            "=",
            "<>",
            "<",
            "<=",
            ">",
            ">=",
            "+",
            "-",
            "'x'",
            "''",
            "'",
            "1",
            "1L",
            "0",
            "1.5",
            ".5",
            "1e",
            "1e5",
            "9223372036854775808",
            "--",
            "/*",
            "*/",
            "\n",
            " ",
            "é",
            "$",
            ".",
        ])
        .prop_map(str::to_owned),
        "\\PC{0,4}",
    ]
}

/// A numeric literal as text.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        (-1000i64..1000).prop_map(|v| v.to_string()),
        (-1.0e6f64..1.0e6).prop_map(|v| format!("{v:?}")),
        Just("9223372036854775807L".to_owned()),
    ]
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn string_literal() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec!["", "x", "1", "1.5", "true", "TagA", "it's"]).prop_map(quote),
        "\\PC{0,6}".prop_map(|s| quote(&s)),
    ]
}

fn property() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "c", "TAGS"]).prop_map(str::to_owned)
}

/// Conditions the parser must accept.
fn condition() -> impl Strategy<Value = String> {
    let operand = prop_oneof![
        property(),
        number(),
        string_literal(),
        Just("TRUE".to_owned())
    ];
    let ordered = prop_oneof![property(), number()];
    let leaf = prop_oneof![
        (property(), prop::sample::select(vec!["=", "<>"]), operand)
            .prop_map(|(p, op, o)| format!("{p} {op} {o}")),
        (
            ordered.clone(),
            prop::sample::select(vec!["<", "<=", ">", ">="]),
            ordered
        )
            .prop_map(|(l, op, r)| format!("{l} {op} {r}")),
        (property(), any::<bool>(), -100i64..100, 0i64..100).prop_map(|(p, not, lo, span)| {
            let not = if not { "NOT " } else { "" };
            format!("{p} {not}BETWEEN {lo} AND {}", lo + span)
        }),
        (
            property(),
            any::<bool>(),
            prop::collection::vec(string_literal(), 1..4)
        )
            .prop_map(|(p, not, vs)| {
                let not = if not { "NOT " } else { "" };
                format!("{p} {not}IN ({})", vs.join(", "))
            }),
        (property(), any::<bool>())
            .prop_map(|(p, not)| format!("{p} IS {}NULL", if not { "NOT " } else { "" })),
        (
            property(),
            any::<bool>(),
            prop::sample::select(vec!["CONTAINS", "STARTSWITH", "ENDSWITH"]),
            string_literal()
        )
            .prop_map(|(p, not, op, s)| format!("{p} {}{op} {s}", if not { "NOT " } else { "" })),
        prop::sample::select(vec!["TRUE", "FALSE", "NULL"]).prop_map(str::to_owned),
        property(),
    ];
    leaf.prop_recursive(5, 48, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|c| format!("NOT ({c})")),
            inner.clone().prop_map(|c| format!("NOT {c}")),
            inner.clone().prop_map(|c| format!("({c})")),
            (inner.clone(), inner.clone()).prop_map(|(l, r)| format!("{l} AND {r}")),
            (inner.clone(), inner.clone()).prop_map(|(l, r)| format!("({l}) OR ({r})")),
            (inner.clone(), inner).prop_map(|(l, r)| format!("{l} OR {r}")),
        ]
    })
}

/// Property values, including awkward ones.
fn properties() -> impl Strategy<Value = Vec<(String, String)>> {
    let value = prop_oneof![
        prop::sample::select(vec![
            "",
            "0",
            "1",
            "-1",
            "1.5",
            " 2 ",
            "NaN",
            "Infinity",
            "true",
            "FALSE",
            "x",
            "TagA",
            "9223372036854775808",
            "1e3",
            "5L",
            "it's",
        ])
        .prop_map(str::to_owned),
        any::<i64>().prop_map(|v| v.to_string()),
        "\\PC{0,5}",
    ];
    prop::collection::vec((property(), value), 0..5)
}

proptest! {
    #[test]
    fn parse_never_panics_on_arbitrary_text(s in "\\PC{0,200}") {
        let _ = Sql92Filter::parse(&s);
    }

    #[test]
    fn parse_never_panics_on_arbitrary_bytes_as_text(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let s = String::from_utf8_lossy(&bytes);
        let _ = Sql92Filter::parse(&s);
    }

    #[test]
    fn parse_never_panics_on_token_soup(parts in prop::collection::vec(fragment(), 0..40), glue in prop::sample::select(vec!["", " "])) {
        let s = parts.join(glue);
        if let Ok(f) = Sql92Filter::parse(&s) {
            let _ = f.matches(&|_| Some("1"));
            let _ = f.matches(&|_| None);
        }
    }

    #[test]
    fn well_formed_expressions_parse_and_evaluate_without_panicking(expr in condition(), props in properties()) {
        let f = Sql92Filter::parse(&expr);
        prop_assert!(f.is_ok(), "{expr:?}: {f:?}");
        let f = f.unwrap();
        prop_assert_eq!(f.as_str(), expr.as_str());
        let get = |name: &str| props.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let _ = f.matches(&get);
    }

    #[test]
    fn not_negates_in_three_valued_logic(expr in condition(), props in properties()) {
        let get = |name: &str| props.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let plain = eval::evaluate(&parse(&expr).expr, &get);
        let negated = eval::evaluate(&parse(&format!("NOT ({expr})")).expr, &get);
        prop_assert_eq!(negated, plain.map(|r| r.map(|b| !b)));
    }

    #[test]
    fn and_or_combine_like_sql(l in condition(), r in condition(), props in properties()) {
        let get = |name: &str| props.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let run = |e: &str| eval::evaluate(&parse(e).expr, &get);
        let (lv, rv) = (run(&l), run(&r));
        let and = run(&format!("({l}) AND ({r})"));
        let or = run(&format!("({l}) OR ({r})"));
        match lv {
            Err(_) => { prop_assert!(and.is_err()); prop_assert!(or.is_err()); }
            Ok(Some(false)) => prop_assert_eq!(and, Ok(Some(false))),
            Ok(Some(true)) => prop_assert_eq!(or, Ok(Some(true))),
            Ok(None) => {}
        }
        if let (Ok(a), Ok(b)) = (lv, rv) {
            let want_and = match (a, b) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            };
            let want_or = match (a, b) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            };
            prop_assert_eq!(and, Ok(want_and));
            prop_assert_eq!(or, Ok(want_or));
        }
    }

    #[test]
    fn any_string_round_trips_through_a_quoted_literal(s in "\\PC{0,30}") {
        let f = parse(&format!("a = {}", quote(&s)));
        prop_assert!(f.matches(&|name| (name == "a").then_some(s.as_str())));
    }

    #[test]
    fn integer_literals_compare_like_i64(x in any::<i64>(), y in any::<i64>()) {
        let v = x.to_string();
        let get = |name: &str| (name == "a").then_some(v.as_str());
        prop_assert_eq!(parse(&format!("a = {y}")).matches(&get), x == y);
        prop_assert_eq!(parse(&format!("a < {y}")).matches(&get), x < y);
        prop_assert_eq!(parse(&format!("a >= {y}")).matches(&get), x >= y);
    }
}
