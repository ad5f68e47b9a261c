//! INSERT, UPDATE, DELETE and BATCH, with USING and IF clauses.

use super::Parser;
use crate::ast::*;
use crate::error::ParseError;
use crate::lexer::TokenKind;

impl Parser<'_> {
    pub(super) fn insert_statement(&mut self) -> Result<InsertStatement, ParseError> {
        self.expect_kw("insert")?;
        self.expect_kw("into")?;
        let table = self.qualified_name()?;
        let values = if self.eat_kw("json") {
            let value = match self.bind_marker()? {
                Some(b) => Term::Bind(b),
                None => Term::String(self.string_literal()?),
            };
            let default = if self.eat_kw("default") {
                if self.eat_kw("unset") {
                    JsonDefault::Unset
                } else {
                    self.expect_kw("null")?;
                    JsonDefault::Null
                }
            } else {
                JsonDefault::Null
            };
            InsertValues::Json { value, default }
        } else {
            let columns = self.ident_list_parens()?;
            self.expect_kw("values")?;
            let values = self.term_list_parens()?;
            InsertValues::Values { columns, values }
        };
        let if_not_exists = self.if_not_exists()?;
        let using = self.using_clause()?;
        Ok(InsertStatement {
            table,
            values,
            if_not_exists,
            using,
        })
    }

    /// `USING TTL t AND TIMESTAMP t`, either order; as in Cassandra's grammar a repeated
    /// attribute is accepted and the last one wins.
    pub(super) fn using_clause(&mut self) -> Result<UsingClause, ParseError> {
        let mut using = UsingClause::default();
        if !self.eat_kw("using") {
            return Ok(using);
        }
        loop {
            if self.is_kw("ttl") {
                self.bump();
                using.ttl = Some(self.int_value()?);
            } else if self.is_kw("timestamp") {
                self.bump();
                using.timestamp = Some(self.int_value()?);
            } else {
                return Err(self.err_no_viable());
            }
            if !self.eat_kw("and") {
                return Ok(using);
            }
        }
    }

    pub(super) fn update_statement(&mut self) -> Result<UpdateStatement, ParseError> {
        self.expect_kw("update")?;
        let table = self.qualified_name()?;
        let using = self.using_clause()?;
        self.expect_kw("set")?;
        let mut assignments = vec![self.assignment()?];
        while self.eat_sym(",") {
            assignments.push(self.assignment()?);
        }
        self.expect_kw("where")?;
        let where_clause = self.where_clause()?;
        let condition = self.write_condition(false)?;
        Ok(UpdateStatement {
            table,
            using,
            assignments,
            where_clause,
            condition,
        })
    }

    fn assignment(&mut self) -> Result<Assignment, ParseError> {
        let column = self.ident()?;
        if self.eat_sym("[") {
            let key = self.term()?;
            self.expect_sym("]")?;
            self.expect_sym("=")?;
            return Ok(Assignment::SetElement {
                column,
                key,
                value: self.term()?,
            });
        }
        if self.eat_sym(".") {
            let field = self.ident()?;
            self.expect_sym("=")?;
            return Ok(Assignment::SetField {
                column,
                field,
                value: self.term()?,
            });
        }
        if self.eat_sym("+=") {
            return Ok(Assignment::Add {
                column,
                value: self.term()?,
            });
        }
        if self.eat_sym("-=") {
            return Ok(Assignment::Subtract {
                column,
                value: self.term()?,
            });
        }
        self.expect_sym("=")?;
        // `c = c + t` / `c = c - t`: a bare column name followed by + or -.
        let bare_column = self.is_ident_at(0) && (self.is_sym_at(1, "+") || self.is_sym_at(1, "-"));
        if bare_column {
            let other = self.ident()?;
            let add = self.is_sym("+");
            self.bump();
            if other != column {
                return Err(self.err_here(format!(
                    "Only expressions of the form X = X {} <value> are supported.",
                    if add { "+" } else { "-" }
                )));
            }
            let value = self.term()?;
            return Ok(if add {
                Assignment::Add { column, value }
            } else {
                Assignment::Subtract { column, value }
            });
        }
        let value = self.term()?;
        if self.eat_sym("+") {
            let other = self.ident()?;
            if other != column {
                return Err(self.err_here(
                    "Only expressions of the form X = <value> + X are supported.".into(),
                ));
            }
            return Ok(Assignment::Prepend { column, value });
        }
        Ok(Assignment::Set { column, value })
    }

    /// `IF EXISTS`, `IF NOT EXISTS` (when allowed) or `IF cond AND ...`.
    fn write_condition(
        &mut self,
        allow_not_exists: bool,
    ) -> Result<Option<WriteCondition>, ParseError> {
        if !self.eat_kw("if") {
            return Ok(None);
        }
        if self.eat_kw("exists") {
            return Ok(Some(WriteCondition::Exists));
        }
        if allow_not_exists && self.is_kw("not") && self.is_kw_at(1, "exists") {
            self.bump();
            self.bump();
            return Ok(Some(WriteCondition::NotExists));
        }
        let mut conds = vec![self.column_condition()?];
        while self.eat_kw("and") {
            conds.push(self.column_condition()?);
        }
        Ok(Some(WriteCondition::Columns(conds)))
    }

    fn column_condition(&mut self) -> Result<ColumnCondition, ParseError> {
        let column = self.ident()?;
        let path = self.sub_path()?;
        // Cassandra's grammar has no CONTAINS on an element or a field in a condition.
        if path.is_some() && self.is_kw("contains") {
            return Err(self.err_no_viable());
        }
        let (op, value) = self.single_column_rhs()?;
        Ok(ColumnCondition {
            column,
            path,
            op,
            value,
        })
    }

    /// `[key]` or `.field` after a column, if present.
    fn sub_path(&mut self) -> Result<Option<SubPath>, ParseError> {
        if self.eat_sym("[") {
            let key = self.term()?;
            self.expect_sym("]")?;
            return Ok(Some(SubPath::Element(key)));
        }
        if self.eat_sym(".") {
            return Ok(Some(SubPath::Field(self.ident()?)));
        }
        Ok(None)
    }

    pub(super) fn delete_statement(&mut self) -> Result<DeleteStatement, ParseError> {
        self.expect_kw("delete")?;
        let mut columns = Vec::new();
        if !self.is_kw("from") {
            loop {
                let column = self.ident()?;
                let path = self.sub_path()?;
                columns.push(DeleteItem { column, path });
                if !self.eat_sym(",") {
                    break;
                }
            }
        }
        self.expect_kw("from")?;
        let table = self.qualified_name()?;
        let mut using = UsingClause::default();
        if self.eat_kw("using") {
            self.expect_kw("timestamp")?;
            using.timestamp = Some(self.int_value()?);
        }
        self.expect_kw("where")?;
        let where_clause = self.where_clause()?;
        let condition = self.write_condition(false)?;
        Ok(DeleteStatement {
            columns,
            table,
            using,
            where_clause,
            condition,
        })
    }

    pub(super) fn batch_statement(&mut self) -> Result<Statement, ParseError> {
        self.expect_kw("begin")?;
        let kind = if self.eat_kw("unlogged") {
            BatchKind::Unlogged
        } else if self.eat_kw("counter") {
            BatchKind::Counter
        } else {
            BatchKind::Logged
        };
        self.expect_kw("batch")?;
        let using = self.using_clause()?;
        let mut statements = Vec::new();
        loop {
            while self.eat_sym(";") {}
            if self.is_kw("apply") {
                break;
            }
            let child = match self.peek().text.to_ascii_lowercase().as_str() {
                _ if self.peek().kind != TokenKind::Word => return Err(self.err_no_viable()),
                "insert" => BatchChild::Insert(self.insert_statement()?),
                "update" => BatchChild::Update(self.update_statement()?),
                "delete" => BatchChild::Delete(self.delete_statement()?),
                _ => return Err(self.err_no_viable()),
            };
            statements.push(child);
        }
        self.expect_kw("apply")?;
        self.expect_kw("batch")?;
        Ok(Statement::Batch(Box::new(BatchStatement {
            kind,
            using,
            statements,
        })))
    }
}
