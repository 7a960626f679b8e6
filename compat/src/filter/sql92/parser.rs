//! Recursive-descent parser: tokens → [`Expr`], with the reference's parse-time checks.
//!
//! Grammar (lowest precedence first; every binary level is left-associative):
//!
//! ```text
//! or         := and (OR and)*
//! and        := not (AND not)*
//! not        := NOT not | equality
//! equality   := comparison ( ('=' | '<>') comparison | IS [NOT] NULL )*
//! comparison := unary ( ('>' | '>=' | '<' | '<=') unary
//!                     | [NOT] BETWEEN unary AND unary
//!                     | [NOT] IN '(' string (',' string)* ')'
//!                     | [NOT] (CONTAINS | STARTSWITH | ENDSWITH) string )*
//! unary      := ('+' | '-') unary | primary
//! primary    := string | integer | decimal | TRUE | FALSE | NULL | identifier | '(' or ')'
//! ```
//!
//! The `equality`/`comparison` split and the checks in [`check_ordering_operand`],
//! [`check_equality_operands`] and [`Parser::boolean`] mirror `SelectorParser.jj` and
//! `ComparisonExpression.create*`. Where `NOT` sits is the one deliberate departure; see the
//! module docs of [`super`].
//!
//! Invariants: the parser's own recursion is bounded by [`MAX_DEPTH`] (each `(`, `NOT` and
//! sign counts one level) and so is the height of the produced tree, so evaluating, cloning
//! and dropping an [`Expr`] cannot exhaust the stack.

use super::lexer::{Keyword, Tok, Token};
use super::{MAX_DEPTH, Sql92Error};

/// A literal value.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Literal {
    Null,
    Bool(bool),
    Long(i64),
    Double(f64),
    Str(String),
}

/// `<`, `<=`, `>`, `>=`, `=`, `<>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// `CONTAINS`, `STARTSWITH`, `ENDSWITH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TextOp {
    Contains,
    StartsWith,
    EndsWith,
}

/// A checked expression tree.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Expr {
    Literal(Literal),
    /// A property value (a string), or NULL when the property is missing.
    Property(String),
    /// Unary minus: numbers are negated, anything else becomes NULL.
    Negate(Box<Expr>),
    /// A bare property used as a condition (the reference's `createBooleanCast`).
    BoolCast(String),
    Not(Box<Expr>),
    /// Two or more operands, evaluated left to right.
    And(Vec<Expr>),
    /// Two or more operands, evaluated left to right.
    Or(Vec<Expr>),
    Compare {
        op: CmpOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
    },
    In {
        property: String,
        values: Vec<String>,
        negated: bool,
    },
    Text {
        op: TextOp,
        expr: Box<Expr>,
        pattern: String,
        negated: bool,
    },
}

impl Expr {
    /// The reference's `BooleanExpression`: nodes whose value is TRUE, FALSE or NULL.
    fn is_boolean(&self) -> bool {
        match self {
            Expr::Literal(lit) => matches!(lit, Literal::Bool(_) | Literal::Null),
            Expr::Property(_) | Expr::Negate(_) => false,
            Expr::BoolCast(_)
            | Expr::Not(_)
            | Expr::And(_)
            | Expr::Or(_)
            | Expr::Compare { .. }
            | Expr::IsNull { .. }
            | Expr::Between { .. }
            | Expr::In { .. }
            | Expr::Text { .. } => true,
        }
    }
}

/// An expression with where it starts and how tall its tree is.
struct Node {
    expr: Expr,
    pos: usize,
    height: usize,
}

impl Node {
    fn leaf(expr: Expr, pos: usize) -> Self {
        Node {
            expr,
            pos,
            height: 1,
        }
    }
}

/// Parses a whole token stream (ending in [`Tok::Eof`]) into a boolean expression.
pub(super) fn parse(tokens: &[Token]) -> Result<Expr, Sql92Error> {
    let mut parser = Parser {
        tokens,
        next: 0,
        depth: 0,
    };
    let first = parser.peek();
    if first.tok == Tok::Eof {
        return Err(err(first.pos, "empty expression"));
    }
    let node = parser.or()?;
    let end = parser.peek();
    if end.tok != Tok::Eof {
        let message = if end.tok == Tok::RParen {
            "unbalanced `)`".to_owned()
        } else {
            format!(
                "unexpected {} after a complete expression",
                end.tok.describe()
            )
        };
        return Err(err(end.pos, message));
    }
    Ok(parser.boolean(node)?.expr)
}

fn err(position: usize, message: impl Into<String>) -> Sql92Error {
    Sql92Error {
        position,
        message: message.into(),
    }
}

/// Builds a node over `children`, refusing trees taller than [`MAX_DEPTH`] (chains such as
/// `a IS NULL IS NULL …` grow the tree without nesting the parser).
fn node(expr: Expr, pos: usize, children: &[usize]) -> Result<Node, Sql92Error> {
    let height = children.iter().copied().max().unwrap_or(0) + 1;
    if height > MAX_DEPTH {
        return Err(err(
            pos,
            format!("expression nested too deeply (more than {MAX_DEPTH} levels)"),
        ));
    }
    Ok(Node { expr, pos, height })
}

/// `ComparisonExpression.checkLessThanOperand`: operands of `<`, `<=`, `>`, `>=` and
/// `BETWEEN` may be properties, numeric literals or negations, never strings, booleans,
/// NULL or conditions.
fn check_ordering_operand(operand: &Node, op: &str) -> Result<(), Sql92Error> {
    let what = match &operand.expr {
        Expr::Literal(Literal::Long(_) | Literal::Double(_)) => return Ok(()),
        Expr::Literal(Literal::Str(_)) => "a string literal",
        Expr::Literal(Literal::Bool(_)) => "a boolean literal",
        Expr::Literal(Literal::Null) => "NULL",
        e if e.is_boolean() => "a condition",
        _ => return Ok(()),
    };
    Err(err(
        operand.pos,
        format!("{what} cannot be an operand of {op}; only properties and numbers can"),
    ))
}

/// `ComparisonExpression.checkEqualOperand` and `checkEqualOperandCompatability`.
fn check_equality_operands(left: &Node, right: &Node, op: &str) -> Result<(), Sql92Error> {
    for side in [left, right] {
        if side.expr == Expr::Literal(Literal::Null) {
            return Err(err(
                side.pos,
                format!("NULL cannot be compared with {op}; use IS NULL or IS NOT NULL"),
            ));
        }
    }
    if let (Expr::Literal(Literal::Bool(_)), Expr::Literal(lit)) = (&left.expr, &right.expr)
        && !matches!(lit, Literal::Bool(_))
    {
        return Err(err(
            right.pos,
            "a boolean literal cannot be compared with a string or numeric literal",
        ));
    }
    Ok(())
}

struct Parser<'t> {
    tokens: &'t [Token],
    next: usize,
    /// Current nesting of `(`, `NOT` and signs.
    depth: usize,
}

/// Stands in for the end-of-input token should the stream ever lack one.
static EOF: Token = Token {
    tok: Tok::Eof,
    pos: 0,
};

impl Parser<'_> {
    fn peek(&self) -> &Token {
        self.peek_at(0)
    }

    fn peek_at(&self, ahead: usize) -> &Token {
        self.tokens
            .get(self.next + ahead)
            .or_else(|| self.tokens.last())
            .unwrap_or(&EOF)
    }

    fn bump(&mut self) -> &Token {
        let i = self.next;
        if self.next < self.tokens.len().saturating_sub(1) {
            self.next += 1;
        }
        self.tokens.get(i).unwrap_or(&EOF)
    }

    fn at_keyword(&self, kw: Keyword) -> bool {
        self.peek().tok == Tok::Keyword(kw)
    }

    fn expect(&mut self, tok: &Tok, what: &str) -> Result<usize, Sql92Error> {
        let t = self.peek();
        if &t.tok == tok {
            let pos = t.pos;
            self.bump();
            Ok(pos)
        } else {
            Err(err(
                t.pos,
                format!("expected {what}, found {}", t.tok.describe()),
            ))
        }
    }

    fn enter(&mut self, pos: usize) -> Result<(), Sql92Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(err(
                pos,
                format!("expression nested too deeply (more than {MAX_DEPTH} levels)"),
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// The reference's `asBooleanExpression`: conditions pass, a bare property becomes a
    /// boolean cast, anything else (a string or numeric literal, a negation) is an error.
    fn boolean(&self, n: Node) -> Result<Node, Sql92Error> {
        match n.expr {
            Expr::Property(name) => Ok(Node {
                expr: Expr::BoolCast(name),
                ..n
            }),
            e if e.is_boolean() => Ok(Node { expr: e, ..n }),
            _ => Err(err(n.pos, "expression does not yield a boolean value")),
        }
    }

    fn or(&mut self) -> Result<Node, Sql92Error> {
        self.logical(Keyword::Or)
    }

    /// `and (OR and)*` or `not (AND not)*`, collected into one n-ary node.
    fn logical(&mut self, kw: Keyword) -> Result<Node, Sql92Error> {
        let first = self.logical_operand(kw)?;
        if !self.at_keyword(kw) {
            return Ok(first);
        }
        let pos = first.pos;
        let mut heights = vec![first.height];
        let mut operands = vec![self.boolean(first)?.expr];
        while self.at_keyword(kw) {
            self.bump();
            let next = self.logical_operand(kw)?;
            heights.push(next.height);
            operands.push(self.boolean(next)?.expr);
        }
        let expr = if kw == Keyword::Or {
            Expr::Or(operands)
        } else {
            Expr::And(operands)
        };
        node(expr, pos, &heights)
    }

    fn logical_operand(&mut self, kw: Keyword) -> Result<Node, Sql92Error> {
        if kw == Keyword::Or {
            self.logical(Keyword::And)
        } else {
            self.not()
        }
    }

    /// `NOT` applies to a whole predicate (SQL precedence), binding tighter than AND/OR.
    fn not(&mut self) -> Result<Node, Sql92Error> {
        if !self.at_keyword(Keyword::Not) {
            return self.equality();
        }
        let pos = self.bump().pos;
        self.enter(pos)?;
        let operand = self.not()?;
        self.leave();
        let operand = self.boolean(operand)?;
        node(Expr::Not(Box::new(operand.expr)), pos, &[operand.height])
    }

    fn equality(&mut self) -> Result<Node, Sql92Error> {
        let mut left = self.comparison()?;
        loop {
            let t = self.peek();
            match t.tok {
                Tok::Eq | Tok::Ne => {
                    let (op, text) = if t.tok == Tok::Eq {
                        (CmpOp::Eq, "`=`")
                    } else {
                        (CmpOp::Ne, "`<>`")
                    };
                    self.bump();
                    let right = self.comparison()?;
                    check_equality_operands(&left, &right, text)?;
                    left = node(
                        Expr::Compare {
                            op,
                            left: Box::new(left.expr),
                            right: Box::new(right.expr),
                        },
                        left.pos,
                        &[left.height, right.height],
                    )?;
                }
                Tok::Keyword(Keyword::Is) => {
                    self.bump();
                    let negated = self.at_keyword(Keyword::Not);
                    if negated {
                        self.bump();
                    }
                    let t = self.peek();
                    if t.tok != Tok::Keyword(Keyword::Null) {
                        let expected = if negated { "NULL" } else { "NULL or NOT NULL" };
                        return Err(err(
                            t.pos,
                            format!("expected {expected} after IS, found {}", t.tok.describe()),
                        ));
                    }
                    self.bump();
                    left = node(
                        Expr::IsNull {
                            expr: Box::new(left.expr),
                            negated,
                        },
                        left.pos,
                        &[left.height],
                    )?;
                }
                _ => return Ok(left),
            }
        }
    }

    fn comparison(&mut self) -> Result<Node, Sql92Error> {
        let mut left = self.unary()?;
        loop {
            let t = self.peek();
            let (op, text) = match t.tok {
                Tok::Lt => (CmpOp::Lt, "`<`"),
                Tok::Le => (CmpOp::Le, "`<=`"),
                Tok::Gt => (CmpOp::Gt, "`>`"),
                Tok::Ge => (CmpOp::Ge, "`>=`"),
                Tok::Keyword(Keyword::Not) => match self.peek_at(1).tok {
                    // `NOT` here only as the first half of an infix operator.
                    Tok::Keyword(
                        Keyword::Between
                        | Keyword::In
                        | Keyword::Contains
                        | Keyword::StartsWith
                        | Keyword::EndsWith,
                    ) => {
                        self.bump();
                        left = self.infix_keyword(left, true)?;
                        continue;
                    }
                    _ => return Ok(left),
                },
                Tok::Keyword(
                    Keyword::Between
                    | Keyword::In
                    | Keyword::Contains
                    | Keyword::StartsWith
                    | Keyword::EndsWith,
                ) => {
                    left = self.infix_keyword(left, false)?;
                    continue;
                }
                _ => return Ok(left),
            };
            self.bump();
            let right = self.unary()?;
            check_ordering_operand(&left, text)?;
            check_ordering_operand(&right, text)?;
            left = node(
                Expr::Compare {
                    op,
                    left: Box::new(left.expr),
                    right: Box::new(right.expr),
                },
                left.pos,
                &[left.height, right.height],
            )?;
        }
    }

    /// `BETWEEN`, `IN`, `CONTAINS`, `STARTSWITH`, `ENDSWITH` (the keyword is next; a leading
    /// `NOT` has been consumed when `negated`).
    fn infix_keyword(&mut self, left: Node, negated: bool) -> Result<Node, Sql92Error> {
        let t = self.bump();
        let (kw, kw_pos) = match t.tok {
            Tok::Keyword(kw) => (kw, t.pos),
            _ => return Err(err(t.pos, "expected an operator")),
        };
        match kw {
            Keyword::Between => self.between(left, negated),
            Keyword::In => self.in_list(left, negated, kw_pos),
            Keyword::Contains | Keyword::StartsWith | Keyword::EndsWith => {
                let op = match kw {
                    Keyword::Contains => TextOp::Contains,
                    Keyword::StartsWith => TextOp::StartsWith,
                    _ => TextOp::EndsWith,
                };
                let pattern = self.string_literal(kw.as_str())?;
                node(
                    Expr::Text {
                        op,
                        expr: Box::new(left.expr),
                        pattern,
                        negated,
                    },
                    left.pos,
                    &[left.height],
                )
            }
            _ => Err(err(kw_pos, "expected an operator")),
        }
    }

    /// `ComparisonExpression.createBetween` / `createNotBetween`.
    fn between(&mut self, value: Node, negated: bool) -> Result<Node, Sql92Error> {
        let low = self.unary()?;
        self.expect(&Tok::Keyword(Keyword::And), "AND in BETWEEN … AND …")?;
        let high = self.unary()?;
        for bound in [&low, &high] {
            if bound.expr == Expr::Literal(Literal::Null) {
                return Err(err(bound.pos, "the bounds of BETWEEN cannot be NULL"));
            }
        }
        for operand in [&value, &low, &high] {
            check_ordering_operand(operand, "BETWEEN")?;
        }
        // Only BETWEEN (not NOT BETWEEN) checks its bounds' order, as the reference does.
        if !negated
            && let (Expr::Literal(lo), Expr::Literal(hi)) = (&low.expr, &high.expr)
            && super::eval::literal_less(hi, lo)
        {
            return Err(err(
                low.pos,
                "the lower bound of BETWEEN must not exceed the upper bound",
            ));
        }
        node(
            Expr::Between {
                expr: Box::new(value.expr),
                low: Box::new(low.expr),
                high: Box::new(high.expr),
                negated,
            },
            value.pos,
            &[value.height, low.height, high.height],
        )
    }

    /// `IN ('a', 'b', …)`: a property on the left, string literals only in the list.
    fn in_list(&mut self, left: Node, negated: bool, kw_pos: usize) -> Result<Node, Sql92Error> {
        let Expr::Property(property) = left.expr else {
            return Err(err(kw_pos, "IN needs a property on its left"));
        };
        self.expect(&Tok::LParen, "`(` after IN")?;
        let mut values = vec![self.string_literal("IN")?];
        loop {
            let t = self.peek();
            match t.tok {
                Tok::Comma => {
                    self.bump();
                    values.push(self.string_literal("IN")?);
                }
                Tok::RParen => {
                    self.bump();
                    break;
                }
                _ => {
                    return Err(err(
                        t.pos,
                        format!("expected `,` or `)` in IN list, found {}", t.tok.describe()),
                    ));
                }
            }
        }
        node(
            Expr::In {
                property,
                values,
                negated,
            },
            left.pos,
            &[1],
        )
    }

    fn string_literal(&mut self, context: &str) -> Result<String, Sql92Error> {
        let t = self.peek();
        match &t.tok {
            Tok::Str(s) => {
                let s = s.clone();
                self.bump();
                Ok(s)
            }
            other => Err(err(
                t.pos,
                format!(
                    "{context} accepts only string literals, found {}",
                    other.describe()
                ),
            )),
        }
    }

    fn unary(&mut self) -> Result<Node, Sql92Error> {
        let t = self.peek();
        let pos = t.pos;
        match t.tok {
            Tok::Plus => {
                self.bump();
                self.enter(pos)?;
                let inner = self.unary()?;
                self.leave();
                Ok(Node { pos, ..inner })
            }
            Tok::Minus => {
                self.bump();
                // `-9223372036854775808` is in range although its magnitude is not.
                if self.peek().tok == Tok::Int(i64::MIN.unsigned_abs()) {
                    self.bump();
                    return Ok(Node::leaf(Expr::Literal(Literal::Long(i64::MIN)), pos));
                }
                self.enter(pos)?;
                let inner = self.unary()?;
                self.leave();
                match inner.expr {
                    // Fold signs into numeric literals (Java wraps on overflow too).
                    Expr::Literal(Literal::Long(v)) => Ok(Node::leaf(
                        Expr::Literal(Literal::Long(v.wrapping_neg())),
                        pos,
                    )),
                    Expr::Literal(Literal::Double(v)) => {
                        Ok(Node::leaf(Expr::Literal(Literal::Double(-v)), pos))
                    }
                    other => node(Expr::Negate(Box::new(other)), pos, &[inner.height]),
                }
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Result<Node, Sql92Error> {
        let t = self.bump().clone();
        let pos = t.pos;
        let lit = |l| Ok(Node::leaf(Expr::Literal(l), pos));
        match t.tok {
            Tok::Str(s) => lit(Literal::Str(s)),
            Tok::Int(n) => match i64::try_from(n) {
                Ok(v) => lit(Literal::Long(v)),
                Err(_) => Err(err(pos, format!("integer literal {n} is out of range"))),
            },
            Tok::Float(v) => lit(Literal::Double(v)),
            Tok::Keyword(Keyword::True) => lit(Literal::Bool(true)),
            Tok::Keyword(Keyword::False) => lit(Literal::Bool(false)),
            Tok::Keyword(Keyword::Null) => lit(Literal::Null),
            Tok::Ident(name) => Ok(Node::leaf(Expr::Property(name), pos)),
            Tok::LParen => {
                self.enter(pos)?;
                let inner = self.or()?;
                self.leave();
                let close = self.peek();
                if close.tok != Tok::RParen {
                    let message = if close.tok == Tok::Eof {
                        "unbalanced `(`: missing `)`".to_owned()
                    } else {
                        format!("expected `)`, found {}", close.tok.describe())
                    };
                    return Err(err(close.pos, message));
                }
                self.bump();
                Ok(Node { pos, ..inner })
            }
            Tok::Eof => Err(err(pos, "unexpected end of input: expected an operand")),
            other => Err(err(
                pos,
                format!("expected an operand, found {}", other.describe()),
            )),
        }
    }
}
