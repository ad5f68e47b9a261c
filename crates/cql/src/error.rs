//! Syntax errors, printed the way Cassandra's `SyntaxException` messages read.

use std::fmt;

/// A syntax error with the position of the offending token.
///
/// `Display` gives Cassandra's style, e.g.
/// `line 1:7 no viable alternative at input 'FOO' (SELECT [FOO]...)` or
/// `line 1:13 mismatched input 'x' expecting EOF (SELECT * FROM t [x])`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line of the offending token.
    pub line: usize,
    /// 0-based column (in characters) of the offending token.
    pub column: usize,
    /// The offending token's text (`<EOF>` at the end of input).
    pub token: String,
    /// What went wrong, without the position (e.g. `mismatched input 'x' expecting EOF`).
    pub message: String,
    /// The query excerpt Cassandra appends, with the offending token in brackets, including
    /// the surrounding ` (` and `)`; empty when there is nothing useful to show.
    pub snippet: String,
}

impl ParseError {
    /// An error without a snippet.
    pub fn new(line: usize, column: usize, token: String, message: String) -> ParseError {
        ParseError {
            line,
            column,
            token,
            message,
            snippet: String::new(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}:{} {}{}",
            self.line, self.column, self.message, self.snippet
        )
    }
}

impl std::error::Error for ParseError {}
