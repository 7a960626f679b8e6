//! Cuts an SQL92 filter expression into tokens.
//!
//! Mirrors the token rules of the reference `SelectorParser.jj`: keywords and identifiers are
//! case-insensitive ASCII words, whitespace is space, tab, CR, LF and form feed, `--` starts a
//! line comment and `/* … */` a block comment. Every token records the byte offset where it
//! starts, so the parser can report positions. The lexer never panics: anything it does not
//! understand becomes a [`Sql92Error`].

use super::Sql92Error;

/// A reserved word (matched case-insensitively; a longer word such as `notes` is an identifier).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keyword {
    Not,
    And,
    Or,
    Between,
    In,
    True,
    False,
    Null,
    Is,
    Contains,
    StartsWith,
    EndsWith,
}

impl Keyword {
    const ALL: [(&'static str, Keyword); 12] = [
        ("NOT", Keyword::Not),
        ("AND", Keyword::And),
        ("OR", Keyword::Or),
        ("BETWEEN", Keyword::Between),
        ("IN", Keyword::In),
        ("TRUE", Keyword::True),
        ("FALSE", Keyword::False),
        ("NULL", Keyword::Null),
        ("IS", Keyword::Is),
        ("CONTAINS", Keyword::Contains),
        ("STARTSWITH", Keyword::StartsWith),
        ("ENDSWITH", Keyword::EndsWith),
    ];

    fn from_word(word: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .find(|(text, _)| text.eq_ignore_ascii_case(word))
            .map(|&(_, kw)| kw)
    }

    pub(super) fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|&&(_, kw)| kw == self)
            .map_or("?", |&(text, _)| text)
    }
}

/// What a token is.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    /// A property name.
    Ident(String),
    /// A single-quoted string, with `''` already turned into `'`.
    Str(String),
    /// An integer literal's magnitude (sign is a separate token); range-checked by the parser
    /// so that `-9223372036854775808` can be accepted.
    Int(u64),
    /// A decimal or floating-point literal (finite, non-negative).
    Float(f64),
    Keyword(Keyword),
    LParen,
    RParen,
    Comma,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Plus,
    Minus,
    /// End of input; always the last token.
    Eof,
}

impl Tok {
    /// How the token is named in error messages.
    pub(super) fn describe(&self) -> String {
        match self {
            Tok::Ident(name) => format!("identifier `{name}`"),
            Tok::Str(_) => "a string literal".to_owned(),
            Tok::Int(_) | Tok::Float(_) => "a numeric literal".to_owned(),
            Tok::Keyword(kw) => format!("keyword {}", kw.as_str()),
            Tok::LParen => "`(`".to_owned(),
            Tok::RParen => "`)`".to_owned(),
            Tok::Comma => "`,`".to_owned(),
            Tok::Eq => "`=`".to_owned(),
            Tok::Ne => "`<>`".to_owned(),
            Tok::Lt => "`<`".to_owned(),
            Tok::Le => "`<=`".to_owned(),
            Tok::Gt => "`>`".to_owned(),
            Tok::Ge => "`>=`".to_owned(),
            Tok::Plus => "`+`".to_owned(),
            Tok::Minus => "`-`".to_owned(),
            Tok::Eof => "end of input".to_owned(),
        }
    }
}

/// A token and the byte offset where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) pos: usize,
}

/// Tokenizes `input`; the result always ends with [`Tok::Eof`].
pub(super) fn tokenize(input: &str) -> Result<Vec<Token>, Sql92Error> {
    let mut lexer = Lexer {
        src: input.as_bytes(),
        input,
        pos: 0,
    };
    let mut tokens = Vec::new();
    loop {
        lexer.skip_trivia()?;
        let pos = lexer.pos;
        let Some(&b) = lexer.src.get(pos) else {
            tokens.push(Token { tok: Tok::Eof, pos });
            return Ok(tokens);
        };
        let tok = match b {
            b'(' => lexer.punct(1, Tok::LParen),
            b')' => lexer.punct(1, Tok::RParen),
            b',' => lexer.punct(1, Tok::Comma),
            b'=' => lexer.punct(1, Tok::Eq),
            b'+' => lexer.punct(1, Tok::Plus),
            b'-' => lexer.punct(1, Tok::Minus),
            b'<' => match lexer.peek_at(1) {
                Some(b'>') => lexer.punct(2, Tok::Ne),
                Some(b'=') => lexer.punct(2, Tok::Le),
                _ => lexer.punct(1, Tok::Lt),
            },
            b'>' => match lexer.peek_at(1) {
                Some(b'=') => lexer.punct(2, Tok::Ge),
                _ => lexer.punct(1, Tok::Gt),
            },
            b'\'' => lexer.string()?,
            b'0'..=b'9' => lexer.number()?,
            b'.' if lexer.peek_at(1).is_some_and(|c| c.is_ascii_digit()) => lexer.number()?,
            b if is_ident_start(b) => lexer.word(),
            _ => return Err(lexer.unexpected_char()),
        };
        tokens.push(Token { tok, pos });
    }
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$'
}

/// Identifier characters. `.` is accepted in addition to the reference's `[A-Za-z0-9_$]`, so
/// dotted property names such as `order.id` can be filtered on.
fn is_ident_continue(b: u8) -> bool {
    is_ident_start(b) || b.is_ascii_digit() || b == b'.'
}

struct Lexer<'a> {
    input: &'a str,
    src: &'a [u8],
    pos: usize,
}

impl Lexer<'_> {
    fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.src.get(self.pos.saturating_add(ahead)).copied()
    }

    fn punct(&mut self, len: usize, tok: Tok) -> Tok {
        self.pos += len;
        tok
    }

    fn err(pos: usize, message: impl Into<String>) -> Sql92Error {
        Sql92Error {
            position: pos,
            message: message.into(),
        }
    }

    fn unexpected_char(&self) -> Sql92Error {
        let c = self
            .input
            .get(self.pos..)
            .and_then(|rest| rest.chars().next())
            .unwrap_or('\u{fffd}');
        Self::err(self.pos, format!("unexpected character {c:?}"))
    }

    /// Skips whitespace and comments.
    fn skip_trivia(&mut self) -> Result<(), Sql92Error> {
        loop {
            match (self.peek_at(0), self.peek_at(1)) {
                (Some(b' ' | b'\t' | b'\n' | b'\r' | 0x0c), _) => self.pos += 1,
                (Some(b'-'), Some(b'-')) => {
                    // Line comment up to the end of the line (or, more leniently than the
                    // reference, the end of the input).
                    while self.peek_at(0).is_some_and(|b| b != b'\n' && b != b'\r') {
                        self.pos += 1;
                    }
                }
                (Some(b'/'), Some(b'*')) => {
                    let start = self.pos;
                    let body = self.src.get(start + 2..).unwrap_or_default();
                    match body.windows(2).position(|w| w == b"*/") {
                        Some(end) => self.pos = start + 2 + end + 2,
                        None => return Err(Self::err(start, "unterminated comment")),
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    /// A single-quoted string; `''` stands for one quote. Any other character, newlines
    /// included, is taken literally.
    fn string(&mut self) -> Result<Tok, Sql92Error> {
        let start = self.pos;
        let mut value = String::new();
        let mut i = start + 1;
        loop {
            let rest = self.input.get(i..).unwrap_or_default();
            let Some(quote) = rest.find('\'') else {
                return Err(Self::err(start, "unterminated string literal"));
            };
            value.push_str(rest.get(..quote).unwrap_or_default());
            i += quote + 1;
            if self.src.get(i) == Some(&b'\'') {
                value.push('\'');
                i += 1;
            } else {
                self.pos = i;
                return Ok(Tok::Str(value));
            }
        }
    }

    fn take_digits(&mut self) -> usize {
        let start = self.pos;
        while self.peek_at(0).is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// Integer (`0` or `[1-9][0-9]*`, optional `L`) or floating-point literal
    /// (`1.`, `1.5`, `.5`, `1e5`, `1.5E-3`), as the reference's `DECIMAL_LITERAL` and
    /// `FLOATING_POINT_LITERAL`.
    fn number(&mut self) -> Result<Tok, Sql92Error> {
        let start = self.pos;
        let int_digits = self.take_digits();
        let mut is_float = false;
        if self.peek_at(0) == Some(b'.') {
            self.pos += 1;
            self.take_digits();
            is_float = true;
        }
        // An exponent only counts when digits follow (`1e` is `1` then identifier `e`).
        if matches!(self.peek_at(0), Some(b'e' | b'E')) {
            let digits_at = match self.peek_at(1) {
                Some(b'+' | b'-') => 2,
                _ => 1,
            };
            if self.peek_at(digits_at).is_some_and(|b| b.is_ascii_digit()) {
                self.pos += digits_at;
                self.take_digits();
                is_float = true;
            }
        }
        let image = self.input.get(start..self.pos).unwrap_or_default();
        if is_float {
            return match image.parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(Tok::Float(v)),
                _ => Err(Self::err(
                    start,
                    format!("numeric literal {image} is out of range"),
                )),
            };
        }
        if int_digits > 1 && image.starts_with('0') {
            return Err(Self::err(
                start,
                format!("integer literal {image} has a leading zero"),
            ));
        }
        if matches!(self.peek_at(0), Some(b'l' | b'L')) {
            self.pos += 1;
        }
        image
            .parse::<u64>()
            .map(Tok::Int)
            .map_err(|_| Self::err(start, format!("integer literal {image} is out of range")))
    }

    /// An identifier or keyword.
    fn word(&mut self) -> Tok {
        let start = self.pos;
        while self.peek_at(0).is_some_and(is_ident_continue) {
            self.pos += 1;
        }
        let word = self.input.get(start..self.pos).unwrap_or_default();
        match Keyword::from_word(word) {
            Some(kw) => Tok::Keyword(kw),
            None => Tok::Ident(word.to_owned()),
        }
    }
}
