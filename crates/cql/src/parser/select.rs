//! SELECT: selectors, WHERE relations, GROUP BY, ORDER BY, limits.

use super::Parser;
use crate::ast::*;
use crate::error::ParseError;
use crate::lexer::TokenKind;

impl Parser<'_> {
    pub(super) fn select_statement(&mut self) -> Result<SelectStatement, ParseError> {
        self.expect_kw("select")?;
        let json = self.modifier_keyword("json");
        let distinct = self.modifier_keyword("distinct");
        let projection = if self.eat_sym("*") {
            Projection::Star
        } else {
            let mut items = vec![self.select_item()?];
            while self.eat_sym(",") {
                items.push(self.select_item()?);
            }
            Projection::Items(items)
        };
        self.expect_kw("from")?;
        let table = self.qualified_name()?;
        let where_clause = if self.eat_kw("where") {
            self.where_clause()?
        } else {
            Vec::new()
        };
        let mut group_by = Vec::new();
        if self.is_kw("group") && self.is_kw_at(1, "by") {
            self.bump();
            self.bump();
            group_by.push(self.selector()?);
            while self.eat_sym(",") {
                group_by.push(self.selector()?);
            }
        }
        let mut order_by = Vec::new();
        if self.eat_kw("order") {
            self.expect_kw("by")?;
            order_by.push(self.ordering()?);
            while self.eat_sym(",") {
                order_by.push(self.ordering()?);
            }
        }
        let mut per_partition_limit = None;
        if self.is_kw("per") && self.is_kw_at(1, "partition") {
            self.bump();
            self.bump();
            self.expect_kw("limit")?;
            per_partition_limit = Some(self.int_value()?);
        }
        let limit = if self.eat_kw("limit") {
            Some(self.int_value()?)
        } else {
            None
        };
        let allow_filtering = if self.is_kw("allow") {
            self.bump();
            self.expect_kw("filtering")?;
            true
        } else {
            false
        };
        Ok(SelectStatement {
            distinct,
            json,
            projection,
            table,
            where_clause,
            group_by,
            order_by,
            per_partition_limit,
            limit,
            allow_filtering,
        })
    }

    /// `JSON` / `DISTINCT` are also valid column names; they are modifiers only when a
    /// selector (not `FROM`, `,`, `AS` or an operator continuing a column expression) follows.
    fn modifier_keyword(&mut self, kw: &str) -> bool {
        if !self.is_kw(kw) {
            return false;
        }
        let next = self.peek_at(1);
        let continues_column = match next.kind {
            TokenKind::Word => {
                next.text.eq_ignore_ascii_case("from") || next.text.eq_ignore_ascii_case("as")
            }
            TokenKind::Symbol => {
                matches!(next.text.as_str(), "," | "." | "[" | "+" | "/" | "%" | "-")
            }
            TokenKind::Eof => true,
            _ => false,
        };
        if continues_column {
            return false;
        }
        self.bump();
        true
    }

    fn ordering(&mut self) -> Result<Ordering, ParseError> {
        let column = self.ident()?;
        let direction = if self.eat_kw("desc") {
            OrderDirection::Desc
        } else if self.is_kw("ann") && self.is_kw_at(1, "of") {
            self.bump();
            self.bump();
            let vector = self.term()?;
            if !self.eat_kw("asc") {
                self.eat_kw("desc");
            }
            OrderDirection::Ann(vector)
        } else {
            self.eat_kw("asc");
            OrderDirection::Asc
        };
        Ok(Ordering { column, direction })
    }

    fn select_item(&mut self) -> Result<SelectItem, ParseError> {
        let selector = self.selector()?;
        let alias = if self.eat_kw("as") {
            Some(self.ident()?)
        } else {
            None
        };
        Ok(SelectItem { selector, alias })
    }

    /// `unaliasedSelector` in Parser.g.
    pub(super) fn selector(&mut self) -> Result<Selector, ParseError> {
        self.enter()?;
        let r = self.selector_addition();
        self.leave();
        r
    }

    fn selector_addition(&mut self) -> Result<Selector, ParseError> {
        let (mut left, mut height) = self.measured(Self::selector_multiplication)?;
        loop {
            let op = if self.eat_sym("+") {
                ArithOp::Add
            } else if self.eat_sym("-") {
                ArithOp::Sub
            } else {
                return Ok(left);
            };
            let (right, right_height) = self.measured(Self::selector_multiplication)?;
            height = self.link(height, right_height)?;
            left = Selector::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
            };
        }
    }

    fn selector_multiplication(&mut self) -> Result<Selector, ParseError> {
        let (mut left, mut height) = self.measured(Self::selector_group)?;
        loop {
            let op = if self.eat_sym("*") {
                ArithOp::Mul
            } else if self.eat_sym("/") {
                ArithOp::Div
            } else if self.eat_sym("%") {
                ArithOp::Rem
            } else {
                return Ok(left);
            };
            let (right, right_height) = self.measured(Self::selector_group)?;
            height = self.link(height, right_height)?;
            left = Selector::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
            };
        }
    }

    fn selector_group(&mut self) -> Result<Selector, ParseError> {
        if self.is_sym("-") && self.constant_ahead() != Some(2) {
            self.bump();
            self.enter()?;
            let inner = self.selector_group();
            self.leave();
            return Ok(Selector::Negate(Box::new(inner?)));
        }
        let (mut s, mut height) = self.measured(Self::selector_without_field)?;
        loop {
            if self.eat_sym(".") {
                height = self.link(height, 0)?;
                let field = self.ident()?;
                s = Selector::Field {
                    selector: Box::new(s),
                    field,
                };
            } else if self.eat_sym("[") {
                let (sub, key_height) = self.measured(|p| p.sub_selection(s))?;
                height = self.link(height, key_height)?;
                s = sub;
                self.expect_sym("]")?;
            } else {
                return Ok(s);
            }
        }
    }

    /// The inside of `[...]` after a selector: an element or a slice.
    fn sub_selection(&mut self, receiver: Selector) -> Result<Selector, ParseError> {
        let selector = Box::new(receiver);
        if self.eat_sym("..") {
            let to = Some(self.term()?);
            return Ok(Selector::Slice {
                selector,
                from: None,
                to,
            });
        }
        let key = self.term()?;
        if self.eat_sym("..") {
            let to = if self.is_sym("]") {
                None
            } else {
                Some(self.term()?)
            };
            return Ok(Selector::Slice {
                selector,
                from: Some(key),
                to,
            });
        }
        Ok(Selector::Element { selector, key })
    }

    fn selector_without_field(&mut self) -> Result<Selector, ParseError> {
        if self.constant_ahead().is_some() {
            return Ok(Selector::Term(self.constant()?));
        }
        if let Some(b) = self.bind_marker()? {
            return Ok(Selector::Term(Term::Bind(b)));
        }
        let t = self.peek().clone();
        match &t.kind {
            TokenKind::Word if t.text.eq_ignore_ascii_case("null") => {
                self.bump();
                Ok(Selector::Term(Term::Null))
            }
            TokenKind::Word | TokenKind::QuotedName(_) => self.selection_function_or_column(),
            TokenKind::Symbol => match t.text.as_str() {
                "(" => {
                    if let Some(ty) = self.try_type_hint() {
                        self.enter()?;
                        let inner = self.selector_without_field();
                        self.leave();
                        return Ok(Selector::TypeHint {
                            ty,
                            selector: Box::new(inner?),
                        });
                    }
                    self.bump();
                    let items = self.selector_list(")")?;
                    Ok(Selector::Tuple(items))
                }
                "[" => {
                    self.bump();
                    if self.eat_sym("]") {
                        return Ok(Selector::List(Vec::new()));
                    }
                    Ok(Selector::List(self.selector_list("]")?))
                }
                "{" => self.selection_map_or_set(),
                _ => Err(self.err_no_viable()),
            },
            _ => Err(self.err_no_viable()),
        }
    }

    /// Selectors separated by commas, then the closing symbol.
    fn selector_list(&mut self, close: &str) -> Result<Vec<Selector>, ParseError> {
        let mut items = vec![self.selector()?];
        while self.eat_sym(",") {
            items.push(self.selector()?);
        }
        self.expect_sym(close)?;
        Ok(items)
    }

    fn selection_map_or_set(&mut self) -> Result<Selector, ParseError> {
        self.expect_sym("{")?;
        if self.eat_sym("}") {
            return Ok(Selector::Set(Vec::new()));
        }
        let first = self.selector()?;
        if self.eat_sym(":") {
            let mut entries = vec![(first, self.selector()?)];
            while self.eat_sym(",") {
                let k = self.selector()?;
                self.expect_sym(":")?;
                entries.push((k, self.selector()?));
            }
            self.expect_sym("}")?;
            return Ok(Selector::Map(entries));
        }
        let mut items = vec![first];
        while self.eat_sym(",") {
            items.push(self.selector()?);
        }
        self.expect_sym("}")?;
        Ok(Selector::Set(items))
    }

    fn selection_function_or_column(&mut self) -> Result<Selector, ParseError> {
        let word = self.peek().text.to_ascii_lowercase();
        let is_word = self.peek().kind == TokenKind::Word;
        if is_word && self.is_sym_at(1, "(") {
            match word.as_str() {
                "count" if self.is_sym_at(2, "*") && self.is_sym_at(3, ")") => {
                    for _ in 0..4 {
                        self.bump();
                    }
                    return Ok(Selector::CountStar);
                }
                "writetime" | "maxwritetime" | "ttl" => {
                    self.bump();
                    self.bump();
                    let inner = Box::new(self.selector()?);
                    self.expect_sym(")")?;
                    return Ok(match word.as_str() {
                        "writetime" => Selector::WriteTime(inner),
                        "maxwritetime" => Selector::MaxWriteTime(inner),
                        _ => Selector::Ttl(inner),
                    });
                }
                "cast" => {
                    self.bump();
                    self.bump();
                    let inner = Box::new(self.selector()?);
                    self.expect_kw("as")?;
                    // Cassandra's grammar only takes a native type here.
                    let written = self.peek().text.to_ascii_lowercase();
                    let native = (self.peek().kind == TokenKind::Word)
                        .then(|| NativeType::from_cql_name(&written))
                        .flatten();
                    let Some(native) = native else {
                        return Err(self.err_no_viable());
                    };
                    self.bump();
                    self.expect_sym(")")?;
                    return Ok(Selector::Cast {
                        selector: inner,
                        ty: CqlTypeExpr::Native(native),
                        written,
                    });
                }
                _ => {}
            }
        }
        let is_call = self.is_sym_at(1, "(") || (self.is_sym_at(1, ".") && self.is_sym_at(3, "("));
        if !is_call {
            return Ok(Selector::Column(self.ident()?));
        }
        let name = self.function_name()?;
        self.expect_sym("(")?;
        let args = if self.eat_sym(")") {
            Vec::new()
        } else {
            self.selector_list(")")?
        };
        Ok(Selector::FunctionCall { name, args })
    }

    // ---- WHERE ---------------------------------------------------------------------------

    /// `relation (AND relation)*`, flattening parenthesised relations.
    pub(super) fn where_clause(&mut self) -> Result<Vec<Relation>, ParseError> {
        let mut out = Vec::new();
        self.relation(&mut out)?;
        while self.eat_kw("and") {
            self.relation(&mut out)?;
        }
        Ok(out)
    }

    fn relation(&mut self, out: &mut Vec<Relation>) -> Result<(), ParseError> {
        self.enter()?;
        let r = self.relation_inner(out);
        self.leave();
        r
    }

    fn relation_inner(&mut self, out: &mut Vec<Relation>) -> Result<(), ParseError> {
        if self.is_kw("expr") && self.is_sym_at(1, "(") {
            self.bump();
            self.bump();
            let index = self.qualified_name()?;
            self.expect_sym(",")?;
            let value = self.term()?;
            self.expect_sym(")")?;
            out.push(Relation::CustomIndexExpression { index, value });
            return Ok(());
        }
        if self.is_kw("token") && self.is_sym_at(1, "(") {
            self.bump();
            let columns = self.ident_list_parens()?;
            let (op, value) = if self.eat_kw("between") {
                (Operator::Between, self.between_values()?)
            } else {
                let op = self.relation_type()?;
                (op, RelationValue::Single(self.term()?))
            };
            out.push(Relation::Token { columns, op, value });
            return Ok(());
        }
        if self.is_sym("(") {
            let start = self.pos;
            if let Ok(columns) = self.ident_list_parens() {
                if self.relation_operator_ahead() {
                    let (op, value) = self.multi_column_rhs()?;
                    out.push(Relation::MultiColumn { columns, op, value });
                    return Ok(());
                }
            }
            self.pos = start;
            self.bump();
            self.relation(out)?;
            return self.expect_sym(")");
        }
        let column = self.ident()?;
        if self.eat_sym("[") {
            let key = self.term()?;
            self.expect_sym("]")?;
            let op = self.relation_type()?;
            let value = self.term()?;
            out.push(Relation::Element {
                column,
                key,
                op,
                value,
            });
            return Ok(());
        }
        let (op, value) = self.single_column_rhs()?;
        out.push(Relation::Column { column, op, value });
        Ok(())
    }

    fn relation_operator_ahead(&self) -> bool {
        let t = self.peek();
        match t.kind {
            TokenKind::Symbol => matches!(t.text.as_str(), "=" | "<" | "<=" | ">" | ">=" | "!="),
            TokenKind::Word => ["in", "not", "between"]
                .iter()
                .any(|k| t.text.eq_ignore_ascii_case(k)),
            _ => false,
        }
    }

    /// `= < <= > >= !=`
    fn relation_type(&mut self) -> Result<Operator, ParseError> {
        let op = match self.peek().text.as_str() {
            "=" => Operator::Eq,
            "<" => Operator::Lt,
            "<=" => Operator::Lte,
            ">" => Operator::Gt,
            ">=" => Operator::Gte,
            "!=" => Operator::Neq,
            _ => return Err(self.err_no_viable()),
        };
        if self.peek().kind != TokenKind::Symbol {
            return Err(self.err_no_viable());
        }
        self.bump();
        Ok(op)
    }

    fn between_values(&mut self) -> Result<RelationValue, ParseError> {
        let a = self.term()?;
        self.expect_kw("and")?;
        Ok(RelationValue::Between(a, self.term()?))
    }

    /// The operator and value after a single column (also used by IF conditions).
    pub(super) fn single_column_rhs(&mut self) -> Result<(Operator, RelationValue), ParseError> {
        if self.eat_kw("between") {
            return Ok((Operator::Between, self.between_values()?));
        }
        if self.eat_kw("like") {
            return Ok((Operator::Like, RelationValue::Single(self.term()?)));
        }
        if self.eat_kw("is") {
            self.expect_kw("not")?;
            self.expect_kw("null")?;
            return Ok((Operator::IsNotNull, RelationValue::Single(Term::Null)));
        }
        let negated = self.eat_kw("not");
        if self.eat_kw("in") {
            let op = if negated {
                Operator::NotIn
            } else {
                Operator::In
            };
            if let Some(b) = self.bind_marker()? {
                return Ok((op, RelationValue::Single(Term::Bind(b))));
            }
            return Ok((op, RelationValue::List(self.term_list_parens()?)));
        }
        if self.eat_kw("contains") {
            let key = self.eat_kw("key");
            let op = match (negated, key) {
                (false, false) => Operator::Contains,
                (false, true) => Operator::ContainsKey,
                (true, false) => Operator::NotContains,
                (true, true) => Operator::NotContainsKey,
            };
            return Ok((op, RelationValue::Single(self.term()?)));
        }
        if negated {
            return Err(self.err_no_viable());
        }
        let op = self.relation_type()?;
        Ok((op, RelationValue::Single(self.term()?)))
    }

    /// `( [term (, term)*] )`
    pub(super) fn term_list_parens(&mut self) -> Result<Vec<Term>, ParseError> {
        self.expect_sym("(")?;
        let mut items = Vec::new();
        if self.eat_sym(")") {
            return Ok(items);
        }
        loop {
            items.push(self.term()?);
            if !self.eat_sym(",") {
                break;
            }
        }
        self.expect_sym(")")?;
        Ok(items)
    }

    fn multi_column_rhs(&mut self) -> Result<(Operator, RelationValue), ParseError> {
        let negated = self.eat_kw("not");
        if self.eat_kw("in") {
            let op = if negated {
                Operator::NotIn
            } else {
                Operator::In
            };
            if let Some(b) = self.bind_marker()? {
                return Ok((op, RelationValue::Single(Term::Bind(b))));
            }
            // Elements are tuple literals or markers; `term` parses both.
            return Ok((op, RelationValue::List(self.term_list_parens()?)));
        }
        if negated {
            return Err(self.err_no_viable());
        }
        if self.eat_kw("between") {
            let a = self.multi_column_value()?;
            self.expect_kw("and")?;
            return Ok((
                Operator::Between,
                RelationValue::Between(a, self.multi_column_value()?),
            ));
        }
        let op = self.relation_type()?;
        Ok((op, RelationValue::Single(self.multi_column_value()?)))
    }

    fn multi_column_value(&mut self) -> Result<Term, ParseError> {
        if let Some(b) = self.bind_marker()? {
            return Ok(Term::Bind(b));
        }
        self.tuple_literal()
    }
}
