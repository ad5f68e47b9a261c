//! The recursive-descent parser. This module holds the token cursor, error construction,
//! identifiers, names, types and properties; statement families live in submodules.
//!
//! The grammar followed is Cassandra's `Parser.g`. Where ANTLR resolves an ambiguity with
//! syntactic predicates (`(int) ?` type hints vs tuples, `SELECT json ...`), the parser looks
//! ahead or backtracks over side-effect-free rules; bind markers are only ever created by rules
//! that are not backtracked over, so their numbering follows source order.

mod auth;
mod ddl;
mod dml;
mod select;
mod term;
#[cfg(test)]
mod tests;

use crate::ast::*;
use crate::error::ParseError;
use crate::lexer::{tokenize, Token, TokenKind};

/// How deeply terms, selectors, types and relations may nest before parsing fails. Bounds
/// stack use on hostile input; real statements stay in single digits.
pub const MAX_NESTING_DEPTH: usize = 64;

/// How many raw tokens (whitespace runs count) before the offending one the error snippet
/// shows; Cassandra's ErrorCollector `FIRST_TOKEN_OFFSET`.
const SNIPPET_TOKENS_BEFORE: usize = 10;

/// How many raw tokens after the offending one the snippet shows (`LAST_TOKEN_OFFSET`).
const SNIPPET_TOKENS_AFTER: usize = 2;

/// Words that can never be identifiers: every keyword of `Lexer.g` that is not in `Parser.g`'s
/// `unreserved_keyword` rule (plus the `true`/`false` literals).
const RESERVED: &[&str] = &[
    "add",
    "allow",
    "alter",
    "and",
    "apply",
    "asc",
    "authorize",
    "batch",
    "begin",
    "by",
    "columnfamily",
    "create",
    "delete",
    "desc",
    "describe",
    "drop",
    "entries",
    "execute",
    "false",
    "from",
    "full",
    "grant",
    "if",
    "in",
    "index",
    "infinity",
    "insert",
    "into",
    "is",
    "keyspace",
    "limit",
    "materialized",
    "modify",
    "nan",
    "norecursive",
    "not",
    "null",
    "of",
    "on",
    "or",
    "order",
    "primary",
    "rename",
    "revoke",
    "schema",
    "select",
    "set",
    "table",
    "to",
    "token",
    "true",
    "truncate",
    "unlogged",
    "update",
    "use",
    "using",
    "view",
    "where",
    "with",
];

/// Whether `word` is a reserved keyword (case-insensitive).
pub fn is_reserved_keyword(word: &str) -> bool {
    RESERVED.iter().any(|r| r.eq_ignore_ascii_case(word))
}

/// Parses exactly one statement; a trailing `;` is allowed.
pub fn parse(cql: &str) -> Result<Parsed, ParseError> {
    let mut p = Parser::new(cql)?;
    let parsed = p.statement()?;
    p.eat_sym(";");
    if !p.at_eof() {
        return Err(p.err_mismatched("EOF"));
    }
    Ok(parsed)
}

/// Parses `;`-separated statements (empty statements between semicolons are skipped).
/// Each statement numbers its bind markers from 0.
pub fn parse_script(cql: &str) -> Result<Vec<Parsed>, ParseError> {
    let mut p = Parser::new(cql)?;
    let mut out = Vec::new();
    loop {
        while p.eat_sym(";") {}
        if p.at_eof() {
            return Ok(out);
        }
        out.push(p.statement()?);
        if !p.at_eof() && !p.is_sym(";") {
            return Err(p.err_mismatched("';'"));
        }
    }
}

pub(crate) struct Parser<'a> {
    src: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
    /// The deepest `depth` reached since the current measurement began (see `measured`): how
    /// tall the subtree just parsed is, so left-deep operator and selector chains, which are
    /// built by loops rather than recursion, still count against the nesting bound.
    high_water: usize,
    /// Levels of `name<...>` entered in the type being parsed, bounded by `MAX_TYPE_NESTING`.
    type_depth: usize,
    bind_names: Vec<Option<String>>,
    /// Returned by lookahead past the end (the token list itself also ends with Eof).
    eof: Token,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Result<Parser<'a>, ParseError> {
        let tokens = tokenize(src)?;
        let eof = tokens.last().cloned().unwrap_or(Token {
            kind: TokenKind::Eof,
            text: "<EOF>".into(),
            line: 1,
            column: 0,
            start: src.len(),
            end: src.len(),
        });
        Ok(Parser {
            eof,
            src,
            tokens,
            pos: 0,
            depth: 0,
            high_water: 0,
            type_depth: 0,
            bind_names: Vec::new(),
        })
    }

    fn statement(&mut self) -> Result<Parsed, ParseError> {
        self.bind_names.clear();
        self.depth = 0;
        self.high_water = 0;
        self.type_depth = 0;
        let statement = self.statement_body()?;
        let bind_names = std::mem::take(&mut self.bind_names);
        Ok(Parsed {
            statement,
            bind_count: bind_names.len(),
            bind_names,
        })
    }

    fn statement_body(&mut self) -> Result<Statement, ParseError> {
        let w = self.peek().text.to_ascii_lowercase();
        if self.peek().kind != TokenKind::Word {
            return Err(self.err_no_viable());
        }
        match w.as_str() {
            "select" => Ok(Statement::Select(Box::new(self.select_statement()?))),
            "insert" => Ok(Statement::Insert(Box::new(self.insert_statement()?))),
            "update" => Ok(Statement::Update(Box::new(self.update_statement()?))),
            "delete" => Ok(Statement::Delete(Box::new(self.delete_statement()?))),
            "begin" => self.batch_statement(),
            "use" => {
                self.bump();
                Ok(Statement::Use(self.ident()?))
            }
            "truncate" => {
                self.bump();
                self.eat_table_keyword();
                Ok(Statement::Truncate(self.qualified_name()?))
            }
            "create" => self.create_statement(),
            "alter" => self.alter_statement(),
            "drop" => self.drop_statement(),
            "grant" | "revoke" | "list" | "add" => self.auth_statement(),
            "describe" | "desc" => self.describe_statement(),
            _ => Err(self.err_no_viable()),
        }
    }

    // ---- token cursor ------------------------------------------------------------------

    fn peek(&self) -> &Token {
        self.peek_at(0)
    }

    fn peek_at(&self, n: usize) -> &Token {
        self.tokens
            .get(self.pos.saturating_add(n))
            .unwrap_or(&self.eof)
    }

    fn bump(&mut self) {
        if self.pos + 1 < self.tokens.len() {
            self.pos += 1;
        }
    }

    fn at_eof(&self) -> bool {
        self.peek().kind == TokenKind::Eof
    }

    fn is_kw_at(&self, n: usize, kw: &str) -> bool {
        let t = self.peek_at(n);
        t.kind == TokenKind::Word && t.text.eq_ignore_ascii_case(kw)
    }

    fn is_kw(&self, kw: &str) -> bool {
        self.is_kw_at(0, kw)
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        let hit = self.is_kw(kw);
        if hit {
            self.bump();
        }
        hit
    }

    fn expect_kw(&mut self, kw: &str) -> Result<(), ParseError> {
        if self.eat_kw(kw) {
            Ok(())
        } else {
            Err(self.err_mismatched(&format!("K_{}", kw.to_ascii_uppercase())))
        }
    }

    fn is_sym_at(&self, n: usize, sym: &str) -> bool {
        let t = self.peek_at(n);
        t.kind == TokenKind::Symbol && t.text == sym
    }

    fn is_sym(&self, sym: &str) -> bool {
        self.is_sym_at(0, sym)
    }

    fn eat_sym(&mut self, sym: &str) -> bool {
        let hit = self.is_sym(sym);
        if hit {
            self.bump();
        }
        hit
    }

    fn expect_sym(&mut self, sym: &str) -> Result<(), ParseError> {
        if self.eat_sym(sym) {
            Ok(())
        } else {
            Err(self.err_mismatched(&format!("'{sym}'")))
        }
    }

    /// `TABLE` / `COLUMNFAMILY`, optional where Cassandra makes it optional.
    fn eat_table_keyword(&mut self) -> bool {
        self.eat_kw("table") || self.eat_kw("columnfamily")
    }

    /// `IF EXISTS`
    fn if_exists(&mut self) -> Result<bool, ParseError> {
        if self.eat_kw("if") {
            self.expect_kw("exists")?;
            return Ok(true);
        }
        Ok(false)
    }

    /// `IF NOT EXISTS`
    fn if_not_exists(&mut self) -> Result<bool, ParseError> {
        if self.eat_kw("if") {
            self.expect_kw("not")?;
            self.expect_kw("exists")?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Enters one nesting level of a recursive rule.
    fn enter(&mut self) -> Result<(), ParseError> {
        if self.depth >= MAX_NESTING_DEPTH {
            return Err(self.err_here(format!(
                "maximum nesting depth of {MAX_NESTING_DEPTH} exceeded"
            )));
        }
        self.depth += 1;
        self.high_water = self.high_water.max(self.depth);
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Runs one rule and returns what it parsed with the height of the AST it built (how many
    /// nesting levels below the current one it reached).
    fn measured<T>(
        &mut self,
        rule: impl FnOnce(&mut Self) -> Result<T, ParseError>,
    ) -> Result<(T, usize), ParseError> {
        let outer = self.high_water;
        self.high_water = self.depth;
        let r = rule(self);
        let height = self.high_water.saturating_sub(self.depth);
        self.high_water = outer.max(self.high_water);
        Ok((r?, height))
    }

    /// Grows a left-deep chain (`a + b + c`, `s.f.g`, `s[1][2]`) by one node over an operand
    /// of height `operand`: the chain's new height, or an error once the chain would nest past
    /// the bound. Without this a 6 KB `1+1+...+1` built an AST that every later recursive walk
    /// (type checking, evaluation, printing, even dropping it) overflowed the stack on.
    fn link(&mut self, chain: usize, operand: usize) -> Result<usize, ParseError> {
        let height = chain.max(operand) + 1;
        if self.depth + height > MAX_NESTING_DEPTH {
            return Err(self.err_here(format!(
                "maximum nesting depth of {MAX_NESTING_DEPTH} exceeded"
            )));
        }
        self.high_water = self.high_water.max(self.depth + height);
        Ok(height)
    }

    fn new_bind(&mut self, name: Option<String>) -> BindMarker {
        let index = self.bind_names.len();
        self.bind_names.push(name.clone());
        BindMarker { index, name }
    }

    // ---- errors ------------------------------------------------------------------------

    fn err_here(&self, message: String) -> ParseError {
        let t = self.peek();
        ParseError {
            line: t.line,
            column: t.column,
            token: t.text.clone(),
            message,
            snippet: self.snippet(self.pos),
        }
    }

    fn err_no_viable(&self) -> ParseError {
        self.err_here(format!(
            "no viable alternative at input '{}'",
            self.peek().text
        ))
    }

    fn err_mismatched(&self, expected: &str) -> ParseError {
        self.err_here(format!(
            "mismatched input '{}' expecting {expected}",
            self.peek().text
        ))
    }

    /// The ` (... [offending] ...)` excerpt Cassandra's ErrorCollector appends. Cassandra counts
    /// its window in ANTLR tokens including hidden whitespace/comment tokens, so each gap
    /// between our tokens counts as one token here too.
    fn snippet(&self, offending: usize) -> String {
        let Some(off) = self.tokens.get(offending) else {
            return String::new();
        };
        if off.kind == TokenKind::Eof {
            return String::new();
        }
        // Byte spans of the raw token stream: real tokens and the trivia gaps between them.
        let mut spans: Vec<(usize, usize)> = Vec::new();
        let mut off_raw = 0;
        let mut prev_end = 0;
        for (i, t) in self.tokens.iter().enumerate() {
            if t.start > prev_end {
                spans.push((prev_end, t.start));
            }
            if t.kind == TokenKind::Eof {
                break;
            }
            if i == offending {
                off_raw = spans.len();
            }
            spans.push((t.start, t.end));
            prev_end = t.end;
        }
        let from_i = off_raw.saturating_sub(SNIPPET_TOKENS_BEFORE);
        let to_i = (off_raw + SNIPPET_TOKENS_AFTER).min(spans.len().saturating_sub(1));
        let (Some(&(from, _)), Some(&(_, to))) = (spans.get(from_i), spans.get(to_i)) else {
            return String::new();
        };
        let before = self.src.get(from..off.start).unwrap_or_default();
        let after = self.src.get(off.end..to.max(off.end)).unwrap_or_default();
        let lead = if from > 0 { "..." } else { "" };
        let rest = self.src.get(to..).unwrap_or_default();
        let trail = if rest.chars().all(|c| c == '\n') {
            ""
        } else {
            "..."
        };
        // Cassandra splits the query on newlines and joins the lines back without them.
        let body = format!("{before}[{}]{after}", off.text).replace('\n', "");
        format!(" ({lead}{body}{trail})")
    }

    // ---- identifiers and names ----------------------------------------------------------

    /// Whether the token `n` ahead can be an identifier (unreserved word or quoted name).
    fn is_ident_at(&self, n: usize) -> bool {
        let t = self.peek_at(n);
        match &t.kind {
            TokenKind::Word => !is_reserved_keyword(&t.text),
            TokenKind::QuotedName(s) => !s.is_empty(),
            _ => false,
        }
    }

    /// An identifier: an unreserved word (lowercased) or a non-empty quoted name (verbatim).
    fn ident(&mut self) -> Result<Ident, ParseError> {
        let t = self.peek().clone();
        match &t.kind {
            TokenKind::Word if !is_reserved_keyword(&t.text) => {
                self.bump();
                Ok(Ident::unquoted(&t.text))
            }
            TokenKind::QuotedName(s) if !s.is_empty() => {
                self.bump();
                Ok(Ident::quoted(s))
            }
            TokenKind::QuotedName(_) => {
                Err(self.err_here("Empty quoted names are not allowed".into()))
            }
            TokenKind::QMark => {
                Err(self.err_here("Bind variables cannot be used for names".into()))
            }
            _ => Err(self.err_no_viable()),
        }
    }

    /// `name` or `ks.name`.
    fn qualified_name(&mut self) -> Result<QualifiedName, ParseError> {
        let first = self.ident()?;
        if self.eat_sym(".") {
            let name = self.ident()?;
            return Ok(QualifiedName {
                keyspace: Some(first),
                name,
            });
        }
        Ok(QualifiedName {
            keyspace: None,
            name: first,
        })
    }

    /// A comma-separated list of identifiers in parentheses.
    fn ident_list_parens(&mut self) -> Result<Vec<Ident>, ParseError> {
        self.expect_sym("(")?;
        let mut out = vec![self.ident()?];
        while self.eat_sym(",") {
            out.push(self.ident()?);
        }
        self.expect_sym(")")?;
        Ok(out)
    }

    /// A string literal's content.
    fn string_literal(&mut self) -> Result<String, ParseError> {
        if let TokenKind::String(s) = &self.peek().kind {
            let s = s.clone();
            self.bump();
            return Ok(s);
        }
        Err(self.err_mismatched("STRING_LITERAL"))
    }

    // ---- types -------------------------------------------------------------------------

    /// A CQL type (`comparatorType` in Parser.g).
    fn cql_type(&mut self) -> Result<CqlTypeExpr, ParseError> {
        // The schema loader refuses types nested past this limit, so the parser refuses them
        // too: a table created with one could never be loaded again.
        if self.type_depth >= helenus_types::MAX_TYPE_NESTING {
            return Err(self.err_here(format!(
                "type nested too deeply (more than {} levels)",
                helenus_types::MAX_TYPE_NESTING
            )));
        }
        self.enter()?;
        self.type_depth += 1;
        let r = self.cql_type_inner();
        self.type_depth -= 1;
        self.leave();
        r
    }

    fn cql_type_inner(&mut self) -> Result<CqlTypeExpr, ParseError> {
        if let TokenKind::String(s) = &self.peek().kind {
            let s = s.clone();
            self.bump();
            return Ok(CqlTypeExpr::Custom(s));
        }
        if self.peek().kind == TokenKind::Word && self.is_sym_at(1, "<") {
            let w = self.peek().text.to_ascii_lowercase();
            let parametric = matches!(
                w.as_str(),
                "list" | "set" | "map" | "frozen" | "tuple" | "vector"
            );
            if parametric {
                self.bump();
                self.bump();
                let t = self.parametric_type(&w)?;
                self.expect_sym(">")?;
                return Ok(t);
            }
        }
        if self.peek().kind == TokenKind::Word && !self.is_sym_at(1, ".") {
            if let Some(n) = NativeType::from_cql_name(&self.peek().text) {
                self.bump();
                return Ok(CqlTypeExpr::Native(n));
            }
        }
        if !self.is_ident_at(0) {
            return Err(self.err_no_viable());
        }
        Ok(CqlTypeExpr::UserDefined(self.qualified_name()?))
    }

    /// The inside of `kind<...>`, after the `<`.
    fn parametric_type(&mut self, kind: &str) -> Result<CqlTypeExpr, ParseError> {
        let first = self.cql_type()?;
        Ok(match kind {
            "list" => CqlTypeExpr::List(Box::new(first)),
            "set" => CqlTypeExpr::Set(Box::new(first)),
            "frozen" => CqlTypeExpr::Frozen(Box::new(first)),
            "map" => {
                self.expect_sym(",")?;
                CqlTypeExpr::Map(Box::new(first), Box::new(self.cql_type()?))
            }
            "tuple" => {
                let mut items = vec![first];
                while self.eat_sym(",") {
                    items.push(self.cql_type()?);
                }
                CqlTypeExpr::Tuple(items)
            }
            _ => {
                self.expect_sym(",")?;
                // Cassandra lexes `-1` as an INTEGER and rejects non-positive dimensions when
                // preparing the type (an invalid request, not a syntax error); a negative one
                // is carried as 0, which the executor rejects the same way.
                if self.is_sym("-") && self.peek_at(1).kind == TokenKind::Integer {
                    self.bump();
                    self.bump();
                    return Ok(CqlTypeExpr::Vector(Box::new(first), 0));
                }
                let t = self.peek().clone();
                let dim = match t.kind {
                    TokenKind::Integer => t.text.parse::<u32>().ok(),
                    _ => return Err(self.err_mismatched("INTEGER")),
                };
                let Some(dim) = dim else {
                    return Err(
                        self.err_here(format!("vector dimension {} is out of range", t.text))
                    );
                };
                self.bump();
                CqlTypeExpr::Vector(Box::new(first), dim)
            }
        })
    }

    // ---- properties --------------------------------------------------------------------

    /// `name = value [AND name = value ...]` (after `WITH`).
    fn properties(&mut self) -> Result<Properties, ParseError> {
        let mut out = vec![self.property()?];
        while self.eat_kw("and") {
            out.push(self.property()?);
        }
        Ok(out)
    }

    fn property(&mut self) -> Result<(String, OptionValue), ParseError> {
        let name = self.ident()?.name;
        self.expect_sym("=")?;
        Ok((name, self.option_value()?))
    }

    fn option_value(&mut self) -> Result<OptionValue, ParseError> {
        if self.is_sym("{") {
            return Ok(OptionValue::Map(self.property_map()?));
        }
        if self.peek().kind == TokenKind::Word && self.constant_ahead().is_none() {
            let w = self.ident()?;
            return Ok(OptionValue::Keyword(w.name));
        }
        Ok(OptionValue::Constant(self.constant()?))
    }

    /// `{ 'k': v, ... }` with constant keys and values.
    fn property_map(&mut self) -> Result<Vec<(String, Term)>, ParseError> {
        self.expect_sym("{")?;
        let mut out = Vec::new();
        if self.eat_sym("}") {
            return Ok(out);
        }
        loop {
            let key = self.constant()?;
            self.expect_sym(":")?;
            let value = self.constant()?;
            out.push((constant_text(&key), value));
            if !self.eat_sym(",") {
                break;
            }
        }
        self.expect_sym("}")?;
        Ok(out)
    }

    /// `CLUSTERING ORDER BY (...)`, `COMPACT STORAGE` and properties, joined by AND.
    fn table_options(&mut self) -> Result<TableOptions, ParseError> {
        let mut opts = TableOptions::default();
        loop {
            if self.is_kw("clustering") && self.is_kw_at(1, "order") {
                self.bump();
                self.bump();
                self.expect_kw("by")?;
                self.expect_sym("(")?;
                loop {
                    let col = self.ident()?;
                    let dir = if self.eat_kw("desc") {
                        OrderDirection::Desc
                    } else {
                        self.eat_kw("asc");
                        OrderDirection::Asc
                    };
                    opts.clustering_order.push((col, dir));
                    if !self.eat_sym(",") {
                        break;
                    }
                }
                self.expect_sym(")")?;
            } else if self.is_kw("compact") && self.is_kw_at(1, "storage") {
                self.bump();
                self.bump();
                opts.compact_storage = true;
            } else {
                opts.properties.push(self.property()?);
            }
            if !self.eat_kw("and") {
                return Ok(opts);
            }
        }
    }
}

/// The raw text of a constant, as Cassandra's `getRawText` gives it for property maps.
fn constant_text(t: &Term) -> String {
    match t {
        Term::String(s) | Term::Integer(s) | Term::Float(s) | Term::Uuid(s) | Term::Duration(s) => {
            s.clone()
        }
        Term::Blob(h) => format!("0x{h}"),
        Term::Bool(b) => b.to_string(),
        other => other.to_string(),
    }
}
