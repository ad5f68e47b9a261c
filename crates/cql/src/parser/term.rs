//! Terms: constants, bind markers, collection/tuple/UDT literals, function calls, type hints
//! and arithmetic (`term` and below in Parser.g).

use super::{is_reserved_keyword, Parser};
use crate::ast::*;
use crate::error::ParseError;
use crate::lexer::TokenKind;

impl Parser<'_> {
    /// If a constant starts here (possibly with a leading `-`), how many tokens it spans.
    pub(super) fn constant_ahead(&self) -> Option<usize> {
        let neg = usize::from(self.is_sym("-"));
        let t = self.peek_at(neg);
        let numeric = match &t.kind {
            TokenKind::Integer | TokenKind::Float | TokenKind::Duration => true,
            TokenKind::Word => {
                let w = t.text.to_ascii_lowercase();
                match w.as_str() {
                    "nan" | "infinity" => true,
                    "true" | "false" => return (neg == 0).then_some(1),
                    _ => false,
                }
            }
            TokenKind::String(_) | TokenKind::Uuid | TokenKind::Hex => {
                return (neg == 0).then_some(1)
            }
            _ => false,
        };
        numeric.then_some(neg + 1)
    }

    /// A constant literal (`constant` in Parser.g), folding a leading `-` into numbers.
    pub(super) fn constant(&mut self) -> Result<Term, ParseError> {
        if self.constant_ahead().is_none() {
            return Err(self.err_no_viable());
        }
        let neg = self.eat_sym("-");
        let t = self.peek().clone();
        self.bump();
        let sign = if neg { "-" } else { "" };
        Ok(match t.kind {
            TokenKind::Integer => Term::Integer(format!("{sign}{}", t.text)),
            TokenKind::Float => Term::Float(format!("{sign}{}", t.text)),
            TokenKind::Duration => Term::Duration(format!("{sign}{}", t.text)),
            TokenKind::String(s) => Term::String(s),
            TokenKind::Uuid => Term::Uuid(t.text),
            TokenKind::Hex => Term::Blob(t.text.get(2..).unwrap_or_default().to_string()),
            _ => match t.text.to_ascii_lowercase().as_str() {
                "true" => Term::Bool(true),
                "false" => Term::Bool(false),
                // Java's Double.parseDouble spelling, so executors can hand it on unchanged.
                "nan" => Term::Float("NaN".into()),
                _ => Term::Float(format!("{sign}Infinity")),
            },
        })
    }

    /// `?` or `:name` if one is here.
    pub(super) fn bind_marker(&mut self) -> Result<Option<BindMarker>, ParseError> {
        if self.peek().kind == TokenKind::QMark {
            self.bump();
            return Ok(Some(self.new_bind(None)));
        }
        if self.is_sym(":") && self.is_ident_at(1) {
            self.bump();
            let name = self.ident()?.name;
            return Ok(Some(self.new_bind(Some(name))));
        }
        Ok(None)
    }

    /// `intValue`: an integer literal or a bind marker (LIMIT, USING TTL/TIMESTAMP).
    pub(super) fn int_value(&mut self) -> Result<Term, ParseError> {
        if let Some(b) = self.bind_marker()? {
            return Ok(Term::Bind(b));
        }
        let neg = self.is_sym("-") && self.peek_at(1).kind == TokenKind::Integer;
        if self.peek().kind == TokenKind::Integer || neg {
            return self.constant();
        }
        Err(self.err_no_viable())
    }

    /// A full term with arithmetic.
    pub(crate) fn term(&mut self) -> Result<Term, ParseError> {
        self.enter()?;
        let r = self.term_addition();
        self.leave();
        r
    }

    /// Whether an operand of a binary operator starts `n` tokens ahead. A bare column name does
    /// not: that is how `c = c + 1` and `c = [1] + c` leave the column to the assignment rule.
    fn operand_starts_at(&self, n: usize) -> bool {
        let t = self.peek_at(n);
        match &t.kind {
            TokenKind::Word => {
                let w = t.text.to_ascii_lowercase();
                matches!(w.as_str(), "null" | "true" | "false" | "nan" | "infinity")
                    || self.is_sym_at(n + 1, "(")
                    || (self.is_sym_at(n + 1, ".") && self.is_sym_at(n + 3, "("))
            }
            TokenKind::QuotedName(_) => {
                self.is_sym_at(n + 1, "(")
                    || (self.is_sym_at(n + 1, ".") && self.is_sym_at(n + 3, "("))
            }
            TokenKind::Eof => false,
            TokenKind::Symbol => matches!(t.text.as_str(), "(" | "[" | "{" | "-" | ":"),
            _ => true,
        }
    }

    fn term_addition(&mut self) -> Result<Term, ParseError> {
        let (mut left, mut height) = self.measured(Self::term_multiplication)?;
        loop {
            let op = if self.is_sym("+") {
                ArithOp::Add
            } else if self.is_sym("-") {
                ArithOp::Sub
            } else {
                return Ok(left);
            };
            if !self.operand_starts_at(1) {
                return Ok(left);
            }
            self.bump();
            let (right, right_height) = self.measured(Self::term_multiplication)?;
            height = self.link(height, right_height)?;
            left = Term::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
            };
        }
    }

    fn term_multiplication(&mut self) -> Result<Term, ParseError> {
        let (mut left, mut height) = self.measured(Self::term_group)?;
        loop {
            let op = match self.peek().text.as_str() {
                "*" if self.peek().kind == TokenKind::Symbol => ArithOp::Mul,
                "/" if self.peek().kind == TokenKind::Symbol => ArithOp::Div,
                "%" if self.peek().kind == TokenKind::Symbol => ArithOp::Rem,
                _ => return Ok(left),
            };
            self.bump();
            let (right, right_height) = self.measured(Self::term_group)?;
            height = self.link(height, right_height)?;
            left = Term::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
            };
        }
    }

    fn term_group(&mut self) -> Result<Term, ParseError> {
        if self.is_sym("-") && self.constant_ahead() != Some(2) {
            self.bump();
            self.enter()?;
            let inner = self.simple_term();
            self.leave();
            return Ok(Term::Negate(Box::new(inner?)));
        }
        self.simple_term()
    }

    /// `value | function | '(' type ')' simpleTerm`.
    fn simple_term(&mut self) -> Result<Term, ParseError> {
        if self.constant_ahead().is_some() {
            return self.constant();
        }
        if let Some(b) = self.bind_marker()? {
            return Ok(Term::Bind(b));
        }
        let t = self.peek().clone();
        match &t.kind {
            TokenKind::Word if t.text.eq_ignore_ascii_case("null") => {
                self.bump();
                Ok(Term::Null)
            }
            TokenKind::Word | TokenKind::QuotedName(_) => self.function_call_term(),
            TokenKind::Symbol => match t.text.as_str() {
                "[" => self.list_literal(),
                "{" => self.brace_literal(),
                "(" => self.paren_term(),
                _ => Err(self.err_no_viable()),
            },
            _ => Err(self.err_no_viable()),
        }
    }

    /// A function name: `[ks.]name` where `name` may also be `token` or `count`.
    pub(super) fn function_name(&mut self) -> Result<QualifiedName, ParseError> {
        let fn_word = |p: &Parser<'_>, n: usize| {
            let t = p.peek_at(n);
            t.kind == TokenKind::Word
                && (t.text.eq_ignore_ascii_case("token") || !is_reserved_keyword(&t.text))
        };
        if self.is_sym_at(1, ".") {
            let keyspace = self.ident()?;
            self.bump();
            if fn_word(self, 0) {
                let name = Ident::unquoted(&self.peek().text);
                self.bump();
                return Ok(QualifiedName {
                    keyspace: Some(keyspace),
                    name,
                });
            }
            let name = self.ident()?;
            return Ok(QualifiedName {
                keyspace: Some(keyspace),
                name,
            });
        }
        if fn_word(self, 0) {
            let name = Ident::unquoted(&self.peek().text);
            self.bump();
            return Ok(QualifiedName {
                keyspace: None,
                name,
            });
        }
        Ok(QualifiedName {
            keyspace: None,
            name: self.ident()?,
        })
    }

    fn function_call_term(&mut self) -> Result<Term, ParseError> {
        let is_call = self.is_sym_at(1, "(") || (self.is_sym_at(1, ".") && self.is_sym_at(3, "("));
        if !is_call {
            return Err(self.err_no_viable());
        }
        let name = self.function_name()?;
        self.expect_sym("(")?;
        let mut args = Vec::new();
        if !self.eat_sym(")") {
            loop {
                args.push(self.term()?);
                if !self.eat_sym(",") {
                    break;
                }
            }
            self.expect_sym(")")?;
        }
        Ok(Term::FunctionCall { name, args })
    }

    fn list_literal(&mut self) -> Result<Term, ParseError> {
        self.expect_sym("[")?;
        let mut items = Vec::new();
        if !self.eat_sym("]") {
            loop {
                items.push(self.term()?);
                if !self.eat_sym(",") {
                    break;
                }
            }
            self.expect_sym("]")?;
        }
        Ok(Term::List(items))
    }

    /// `{}`, `{a, b}`, `{k: v}` or `{field: v}`.
    fn brace_literal(&mut self) -> Result<Term, ParseError> {
        self.expect_sym("{")?;
        if self.eat_sym("}") {
            return Ok(Term::EmptyBrace);
        }
        if self.is_ident_at(0) && self.is_sym_at(1, ":") {
            let mut fields = Vec::new();
            loop {
                let f = self.ident()?;
                self.expect_sym(":")?;
                fields.push((f, self.term()?));
                if !self.eat_sym(",") {
                    break;
                }
            }
            self.expect_sym("}")?;
            return Ok(Term::Udt(fields));
        }
        let first = self.term()?;
        if self.eat_sym(":") {
            let mut entries = vec![(first, self.term()?)];
            while self.eat_sym(",") {
                let k = self.term()?;
                self.expect_sym(":")?;
                entries.push((k, self.term()?));
            }
            self.expect_sym("}")?;
            return Ok(Term::Map(entries));
        }
        let mut items = vec![first];
        while self.eat_sym(",") {
            items.push(self.term()?);
        }
        self.expect_sym("}")?;
        Ok(Term::Set(items))
    }

    /// If `(type)` followed by the start of a term is here, parses and returns the type.
    /// Types create no bind markers, so rewinding after a failed attempt is side-effect free.
    pub(super) fn try_type_hint(&mut self) -> Option<CqlTypeExpr> {
        let start = self.pos;
        let word_or_string = matches!(
            self.peek_at(1).kind,
            TokenKind::Word | TokenKind::QuotedName(_) | TokenKind::String(_)
        );
        if !self.is_sym("(") || !word_or_string {
            return None;
        }
        self.bump();
        let (depth, type_depth) = (self.depth, self.type_depth);
        if let Ok(ty) = self.cql_type() {
            if self.eat_sym(")") && (self.operand_starts_at(0) || self.is_ident_at(0)) {
                return Some(ty);
            }
        }
        self.depth = depth;
        self.type_depth = type_depth;
        self.pos = start;
        None
    }

    /// `(type) term` or a tuple literal `(a, b, ...)`.
    fn paren_term(&mut self) -> Result<Term, ParseError> {
        if let Some(ty) = self.try_type_hint() {
            self.enter()?;
            let inner = self.simple_term();
            self.leave();
            return Ok(Term::TypeHint {
                ty,
                term: Box::new(inner?),
            });
        }
        self.tuple_literal()
    }

    /// `(a, b, ...)`
    pub(super) fn tuple_literal(&mut self) -> Result<Term, ParseError> {
        self.expect_sym("(")?;
        let mut items = vec![self.term()?];
        while self.eat_sym(",") {
            items.push(self.term()?);
        }
        self.expect_sym(")")?;
        Ok(Term::Tuple(items))
    }
}
