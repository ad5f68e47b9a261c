//! The CQL lexer: source text to tokens with line:column positions.
//!
//! Follows Cassandra's `Lexer.g` with one deliberate difference: a leading `-` is never part of
//! a number, duration, `NaN` or `Infinity` token. The parser folds a unary minus into the
//! literal that follows, which gives the same trees without the lexer having to guess whether
//! `a-1` means `a - 1`.
//!
//! Keywords are not distinguished here: every unquoted word is a [`TokenKind::Word`] and the
//! parser matches keywords case-insensitively, which is what lets Cassandra's unreserved
//! keywords double as identifiers.

use crate::error::ParseError;

/// What a token is. Literal payloads that need unescaping are carried here; the raw source
/// text is always in [`Token::text`].
#[derive(Debug, Clone, PartialEq)]
pub enum TokenKind {
    /// An unquoted identifier or keyword.
    Word,
    /// A `"quoted"` identifier, unescaped (may be empty, which the parser rejects).
    QuotedName(String),
    /// A `'string'` or `$$string$$`, unescaped.
    String(String),
    /// Digits only.
    Integer,
    /// Digits with a fraction and/or exponent.
    Float,
    /// `1h30m`, `P1Y`, `PT5M`, `P1W`, `P0001-02-03T04:05:06`.
    Duration,
    /// A UUID literal.
    Uuid,
    /// `0x...`; the text includes the prefix.
    Hex,
    /// A punctuation or operator symbol; the text is the symbol.
    Symbol,
    /// `?`
    QMark,
    /// End of input.
    Eof,
}

/// One token with its position. Lines are 1-based, columns are 0-based characters (as
/// Cassandra's error messages count them).
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// The kind.
    pub kind: TokenKind,
    /// The source text of the token (`<EOF>` for the end).
    pub text: String,
    /// 1-based line.
    pub line: usize,
    /// 0-based column, in characters.
    pub column: usize,
    /// Byte offset of the first character.
    pub start: usize,
    /// Byte offset just past the last character.
    pub end: usize,
}

/// The symbols the lexer knows, longest first so that `<=` wins over `<`.
const SYMBOLS: &[&str] = &[
    "..", "<=", ">=", "!=", "+=", "-=", "(", ")", "[", "]", "{", "}", ",", ";", ".", ":", "=", "<",
    ">", "+", "-", "*", "/", "%",
];

/// Duration units, longest first so `ms` wins over `m` (`µs` is matched separately).
const DURATION_UNITS: &[&str] = &["mo", "ms", "us", "ns", "y", "w", "d", "h", "m", "s"];

struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    line: usize,
    /// Characters since the start of the current line (kept incrementally: recounting from the
    /// line start would make one long line quadratic).
    column: usize,
    /// Open `(`, `[` and `{` not yet closed.
    depth: usize,
}

/// Splits `src` into tokens, ending with one [`TokenKind::Eof`] token.
pub fn tokenize(src: &str) -> Result<Vec<Token>, ParseError> {
    let mut lx = Lexer {
        src,
        bytes: src.as_bytes(),
        pos: 0,
        line: 1,
        column: 0,
        depth: 0,
    };
    let mut out = Vec::new();
    loop {
        lx.skip_trivia()?;
        let (line, column, start) = (lx.line, lx.column, lx.pos);
        if lx.pos >= lx.bytes.len() {
            out.push(Token {
                kind: TokenKind::Eof,
                text: "<EOF>".into(),
                line,
                column,
                start,
                end: start,
            });
            return Ok(out);
        }
        let kind = lx.next_kind()?;
        let text = lx.src.get(start..lx.pos).unwrap_or_default().to_string();
        if kind == TokenKind::Symbol {
            lx.track_nesting(&text, line, column)?;
        }
        out.push(Token {
            kind,
            text,
            line,
            column,
            start,
            end: lx.pos,
        });
    }
}

impl<'a> Lexer<'a> {
    /// Fails as soon as brackets open deeper than the parser would accept: without this, a
    /// frame of 15 MB of `(` became 15 million tokens (about 60 bytes of memory per byte of
    /// input) before the parser refused the second level past its limit.
    fn track_nesting(
        &mut self,
        symbol: &str,
        line: usize,
        column: usize,
    ) -> Result<(), ParseError> {
        match symbol {
            "(" | "[" | "{" => {
                self.depth += 1;
                if self.depth > crate::MAX_NESTING_DEPTH {
                    return Err(ParseError::new(
                        line,
                        column,
                        symbol.to_string(),
                        format!(
                            "maximum nesting depth of {} exceeded",
                            crate::MAX_NESTING_DEPTH
                        ),
                    ));
                }
            }
            ")" | "]" | "}" => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        Ok(())
    }

    fn peek(&self, ahead: usize) -> u8 {
        self.bytes.get(self.pos + ahead).copied().unwrap_or(0)
    }

    fn rest(&self) -> &'a str {
        self.src.get(self.pos..).unwrap_or_default()
    }

    /// Advances over `n` bytes, tracking newlines. Callers only pass lengths ending on a char
    /// boundary.
    fn advance(&mut self, n: usize) {
        let end = (self.pos + n).min(self.bytes.len());
        while self.pos < end {
            match self.bytes.get(self.pos) {
                Some(b'\n') => {
                    self.line += 1;
                    self.column = 0;
                }
                // UTF-8 continuation bytes do not start a new character.
                Some(b) if (b & 0xC0) == 0x80 => {}
                _ => self.column += 1,
            }
            self.pos += 1;
        }
    }

    fn error_here(&self, message: String) -> ParseError {
        let ch = self
            .rest()
            .chars()
            .next()
            .map(String::from)
            .unwrap_or_default();
        ParseError::new(self.line, self.column, ch, message)
    }

    fn skip_trivia(&mut self) -> Result<(), ParseError> {
        loop {
            let c = self.peek(0);
            if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                self.advance(1);
            } else if (c == b'-' && self.peek(1) == b'-') || (c == b'/' && self.peek(1) == b'/') {
                let len = self.rest().find('\n').unwrap_or(self.rest().len());
                self.advance(len);
            } else if c == b'/' && self.peek(1) == b'*' {
                match self.rest().get(2..).and_then(|r| r.find("*/")) {
                    Some(i) => self.advance(i + 4),
                    None => {
                        return Err(self.error_here("unterminated multi-line comment".into()));
                    }
                }
            } else {
                return Ok(());
            }
        }
    }

    fn next_kind(&mut self) -> Result<TokenKind, ParseError> {
        let c = self.peek(0);
        if let Some(len) = uuid_len(self.rest()) {
            self.advance(len);
            return Ok(TokenKind::Uuid);
        }
        if c == b'0' && matches!(self.peek(1), b'x' | b'X') {
            let len = 2 + self
                .rest()
                .bytes()
                .skip(2)
                .take_while(u8::is_ascii_hexdigit)
                .count();
            self.advance(len);
            return Ok(TokenKind::Hex);
        }
        if c.is_ascii_digit() {
            return Ok(self.number());
        }
        if c == b'P' {
            if let Some(len) = iso_duration_len(self.rest()) {
                self.advance(len);
                return Ok(TokenKind::Duration);
            }
        }
        if c.is_ascii_alphabetic() {
            let len = self
                .rest()
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                .count();
            self.advance(len);
            return Ok(TokenKind::Word);
        }
        match c {
            b'\'' => return self.quoted(b'\'').map(TokenKind::String),
            b'"' => return self.quoted(b'"').map(TokenKind::QuotedName),
            b'$' if self.peek(1) == b'$' => return self.dollar_string(),
            b'?' => {
                self.advance(1);
                return Ok(TokenKind::QMark);
            }
            _ => {}
        }
        if let Some(sym) = SYMBOLS.iter().find(|s| self.rest().starts_with(**s)) {
            self.advance(sym.len());
            return Ok(TokenKind::Symbol);
        }
        let ch = self
            .rest()
            .chars()
            .next()
            .map(String::from)
            .unwrap_or_default();
        Err(self.error_here(format!("token recognition error at: '{ch}'")))
    }

    /// Integers, floats and unit-style durations (`1h30m`), all starting with a digit.
    fn number(&mut self) -> TokenKind {
        let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
        let rest = self.rest();
        let int_len = digits(rest);
        let after = rest.get(int_len..).unwrap_or_default();
        if let Some(len) = unit_duration_len(rest) {
            self.advance(len);
            return TokenKind::Duration;
        }
        let mut len = int_len;
        let mut is_float = false;
        // `1..2` is INTEGER RANGE INTEGER, not a float followed by `.2`; `1...2` is the float
        // `1.` then RANGE, as Cassandra's lexer splits it.
        if after.starts_with("...") {
            is_float = true;
            len += 1;
        } else if after.starts_with('.') && !after.starts_with("..") {
            is_float = true;
            len += 1 + digits(after.get(1..).unwrap_or_default());
        }
        let tail = rest.get(len..).unwrap_or_default().as_bytes();
        if matches!(tail.first(), Some(b'e' | b'E')) {
            let sign = usize::from(matches!(tail.get(1), Some(b'+' | b'-')));
            if tail.get(1 + sign).is_some_and(u8::is_ascii_digit) {
                let exp_digits = tail
                    .iter()
                    .skip(1 + sign)
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                len += 1 + sign + exp_digits;
                is_float = true;
            }
        }
        self.advance(len);
        if is_float {
            TokenKind::Float
        } else {
            TokenKind::Integer
        }
    }

    /// A string or quoted name: `q ... q` with doubled `q` as the escape. Returns the content.
    fn quoted(&mut self, q: u8) -> Result<String, ParseError> {
        let (line, column) = (self.line, self.column);
        let mut out = String::new();
        let mut i = 1;
        let rest = self.rest();
        let b = rest.as_bytes();
        loop {
            let Some(rel) = b.get(i..).and_then(|s| s.iter().position(|x| *x == q)) else {
                let what = if q == b'\'' {
                    "string literal"
                } else {
                    "quoted identifier"
                };
                return Err(ParseError::new(
                    line,
                    column,
                    (q as char).to_string(),
                    format!("unterminated {what}"),
                ));
            };
            out.push_str(rest.get(i..i + rel).unwrap_or_default());
            i += rel + 1;
            if b.get(i) == Some(&q) {
                out.push(q as char);
                i += 1;
            } else {
                break;
            }
        }
        self.advance(i);
        Ok(out)
    }

    fn dollar_string(&mut self) -> Result<TokenKind, ParseError> {
        let body = self.rest().get(2..).unwrap_or_default();
        match body.find("$$") {
            Some(end) => {
                let content = body.get(..end).unwrap_or_default().to_string();
                self.advance(end + 4);
                Ok(TokenKind::String(content))
            }
            None => Err(self.error_here("unterminated $$ string literal".into())),
        }
    }
}

/// Length of a UUID at the start of `s`, if one is there (8-4-4-4-12 hex digits).
fn uuid_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.len() < 36 {
        return None;
    }
    for (i, c) in b.iter().take(36).enumerate() {
        let ok = if matches!(i, 8 | 13 | 18 | 23) {
            *c == b'-'
        } else {
            c.is_ascii_hexdigit()
        };
        if !ok {
            return None;
        }
    }
    // `...-aaaaaaaaaaaax` would be a UUID followed by an identifier; Cassandra's lexer takes the
    // UUID too, and so do we.
    Some(36)
}

/// Length of a `1h30m`-style duration at the start of `s` (digits then units, repeated).
fn unit_duration_len(s: &str) -> Option<usize> {
    let mut i = 0;
    let mut groups = 0;
    loop {
        let rest = s.get(i..).unwrap_or_default();
        let d = rest.bytes().take_while(u8::is_ascii_digit).count();
        if d == 0 {
            break;
        }
        let after = rest.get(d..).unwrap_or_default();
        let unit = if after.starts_with('µ')
            && after
                .get('µ'.len_utf8()..)
                .is_some_and(|r| r.starts_with(['s', 'S']))
        {
            'µ'.len_utf8() + 1
        } else {
            match DURATION_UNITS.iter().find(|u| starts_with_ci(after, u)) {
                Some(u) => u.len(),
                None => break,
            }
        };
        i += d + unit;
        groups += 1;
    }
    (groups > 0).then_some(i)
}

fn starts_with_ci(s: &str, prefix: &str) -> bool {
    s.get(..prefix.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
}

/// Length of an ISO 8601 duration at the start of `s` (which starts with `P`), if it is one
/// and is not merely the prefix of a longer identifier.
fn iso_duration_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let ident_len = b
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count();
    // Alternative format: P0001-02-03T04:05:06
    let alt = b"Pdddd-dd-ddTdd:dd:dd";
    if b.len() >= alt.len()
        && alt.iter().zip(b).all(|(p, c)| {
            if *p == b'd' {
                c.is_ascii_digit()
            } else {
                p == c
            }
        })
    {
        return Some(alt.len());
    }
    let mut i = 1;
    let read = |designators: &[u8], i: &mut usize| -> usize {
        // Reads `DIGIT+ designator` groups in the given order; returns how many were read.
        let mut n = 0;
        let mut k = 0;
        while k < designators.len() {
            let d = b
                .get(*i..)
                .map_or(0, |r| r.iter().take_while(|c| c.is_ascii_digit()).count());
            if d == 0 {
                break;
            }
            match designators
                .get(k..)
                .and_then(|ds| ds.iter().position(|x| b.get(*i + d) == Some(x)))
            {
                Some(p) => {
                    *i += d + 1;
                    k += p + 1;
                    n += 1;
                }
                None => break,
            }
        }
        n
    };
    let date = read(b"YMD", &mut i);
    let week = if date == 0 { read(b"W", &mut i) } else { 0 };
    let mut time = 0;
    if week == 0 && b.get(i) == Some(&b'T') {
        let mut j = i + 1;
        time = read(b"HMS", &mut j);
        if time > 0 {
            i = j;
        }
    }
    (date + week + time > 0 && i == ident_len).then_some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<(TokenKind, String)> {
        tokenize(s)
            .unwrap()
            .into_iter()
            .map(|t| (t.kind, t.text))
            .collect()
    }

    #[test]
    fn brackets_past_the_nesting_limit_stop_the_lexer_at_once() {
        let deep = format!("SELECT * FROM t WHERE k = {}", "(".repeat(1 << 20));
        let started = std::time::Instant::now();
        let e = tokenize(&deep).unwrap_err();
        assert!(e.message.contains("maximum nesting depth"), "{e}");
        assert_eq!(e.column, 26 + crate::MAX_NESTING_DEPTH);
        assert!(started.elapsed() < std::time::Duration::from_millis(200));
        // As deep as the parser goes is still lexed, and closing brackets give the depth back.
        let ok = "(".repeat(crate::MAX_NESTING_DEPTH) + &")".repeat(crate::MAX_NESTING_DEPTH);
        assert!(tokenize(&ok.repeat(3)).is_ok());
    }

    #[test]
    fn string_escapes_are_unescaped() {
        let t = tokenize("'it''s' $$a'b$$").unwrap();
        assert_eq!(t[0].kind, TokenKind::String("it's".into()));
        assert_eq!(t[1].kind, TokenKind::String("a'b".into()));
    }

    #[test]
    fn quoted_names_unescape_doubled_quotes() {
        let t = tokenize(r#""My""Col""#).unwrap();
        assert_eq!(t[0].kind, TokenKind::QuotedName("My\"Col".into()));
    }

    #[test]
    fn numbers_floats_and_ranges() {
        let k = kinds("1 1.5 2e10 3.0E-2 1..2 0xCAFE");
        assert_eq!(k[0].0, TokenKind::Integer);
        assert_eq!(k[1].0, TokenKind::Float);
        assert_eq!(k[2].0, TokenKind::Float);
        assert_eq!(k[3].0, TokenKind::Float);
        assert_eq!(
            (k[4].0.clone(), k[5].1.as_str(), k[6].0.clone()),
            (TokenKind::Integer, "..", TokenKind::Integer)
        );
        assert_eq!(k[7], (TokenKind::Hex, "0xCAFE".into()));
    }

    #[test]
    fn durations_in_both_styles() {
        for d in [
            "1h30m",
            "12mo",
            "3us",
            "2µs",
            "P1Y2M3D",
            "PT2H",
            "P1W",
            "P1Y2M3DT4H5M6S",
            "P0001-02-03T04:05:06",
        ] {
            let t = tokenize(d).unwrap();
            assert_eq!(t[0].kind, TokenKind::Duration, "{d}");
            assert_eq!(t[0].text, d);
        }
        assert_eq!(tokenize("Pizza").unwrap()[0].kind, TokenKind::Word);
        assert_eq!(tokenize("P1Yx").unwrap()[0].kind, TokenKind::Word);
    }

    #[test]
    fn uuids_win_over_words_and_numbers() {
        let t =
            tokenize("550e8400-e29b-41d4-a716-446655440000 deadbeef-0000-0000-0000-000000000000")
                .unwrap();
        assert_eq!(t[0].kind, TokenKind::Uuid);
        assert_eq!(t[1].kind, TokenKind::Uuid);
    }

    #[test]
    fn comments_are_skipped_and_positions_tracked() {
        let t = tokenize("-- c\n// d\n/* e\n */ SELECT\n  x").unwrap();
        assert_eq!(
            (t[0].line, t[0].column, t[0].text.as_str()),
            (4, 4, "SELECT")
        );
        assert_eq!((t[1].line, t[1].column), (5, 2));
    }

    #[test]
    fn unknown_character_is_a_recognition_error() {
        let e = tokenize("SELECT # FROM").unwrap_err();
        assert_eq!((e.line, e.column), (1, 7));
        assert!(e.message.contains("token recognition error"));
    }

    #[test]
    fn unterminated_string_reports_its_start() {
        let e = tokenize("SELECT 'abc").unwrap_err();
        assert_eq!((e.line, e.column), (1, 7));
    }
}
