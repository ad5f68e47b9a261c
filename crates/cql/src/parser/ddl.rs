//! CREATE / ALTER / DROP of keyspaces, tables, types, indexes, views, functions, aggregates
//! and triggers. Role statements are dispatched to `auth`.

use super::Parser;
use crate::ast::*;
use crate::error::ParseError;
use crate::lexer::TokenKind;

impl Parser<'_> {
    /// `KEYSPACE` or its alias `SCHEMA`.
    fn eat_keyspace_keyword(&mut self) -> bool {
        self.eat_kw("keyspace") || self.eat_kw("schema")
    }

    pub(super) fn create_statement(&mut self) -> Result<Statement, ParseError> {
        self.expect_kw("create")?;
        let or_replace = if self.eat_kw("or") {
            self.expect_kw("replace")?;
            true
        } else {
            false
        };
        if self.is_kw("function") {
            self.bump();
            return self.create_function(or_replace);
        }
        if self.is_kw("aggregate") {
            self.bump();
            return self.create_aggregate(or_replace);
        }
        if or_replace {
            return Err(self.err_no_viable());
        }
        if self.eat_keyspace_keyword() {
            let if_not_exists = self.if_not_exists()?;
            let name = self.ident()?;
            self.expect_kw("with")?;
            let properties = self.properties()?;
            return Ok(Statement::CreateKeyspace(CreateKeyspaceStatement {
                if_not_exists,
                name,
                properties,
            }));
        }
        if self.eat_table_keyword() {
            return self.create_table();
        }
        if self.is_kw("custom") || self.is_kw("index") {
            return self.create_index();
        }
        if self.eat_kw("type") {
            let if_not_exists = self.if_not_exists()?;
            // A native type's name cannot name a user type (Cassandra's `non_type_ident`).
            if self.peek().kind == TokenKind::Word
                && helenus_types::NativeType::from_cql_name(&self.peek().text.to_ascii_lowercase())
                    .is_some()
            {
                let next = self.peek_at(1).clone();
                if next.text != "." {
                    self.bump();
                    return Err(self.err_mismatched("'.'"));
                }
            }
            let name = self.qualified_name()?;
            self.expect_sym("(")?;
            let mut fields = Vec::new();
            if !self.is_sym(")") {
                // Cassandra's grammar takes `(a int, b int,)` and empty fields between commas.
                loop {
                    if !self.is_sym(",") && !self.is_sym(")") {
                        let f = self.ident()?;
                        fields.push((f, self.cql_type()?));
                    }
                    if !self.eat_sym(",") {
                        break;
                    }
                }
            }
            self.expect_sym(")")?;
            return Ok(Statement::CreateType(CreateTypeStatement {
                if_not_exists,
                name,
                fields,
            }));
        }
        if self.eat_kw("materialized") {
            self.expect_kw("view")?;
            return self.create_view();
        }
        if self.eat_kw("trigger") {
            let if_not_exists = self.if_not_exists()?;
            let name = self.ident()?;
            self.expect_kw("on")?;
            let table = self.qualified_name()?;
            self.expect_kw("using")?;
            let class = self.string_literal()?;
            return Ok(Statement::CreateTrigger {
                if_not_exists,
                name,
                table,
                class,
            });
        }
        if self.is_kw("role") || self.is_kw("user") {
            return self.create_role();
        }
        Err(self.err_no_viable())
    }

    fn create_table(&mut self) -> Result<Statement, ParseError> {
        let if_not_exists = self.if_not_exists()?;
        let name = self.qualified_name()?;
        self.expect_sym("(")?;
        let mut columns = Vec::new();
        let mut primary_key = None;
        loop {
            if self.is_kw("primary") {
                self.bump();
                self.expect_kw("key")?;
                primary_key = Some(self.primary_key_clause()?);
            } else {
                columns.push(self.column_def(true)?);
            }
            if !self.eat_sym(",") || self.is_sym(")") {
                break;
            }
        }
        self.expect_sym(")")?;
        let primary_key_twice = primary_key.is_some() && columns.iter().any(|c| c.primary_key);
        if primary_key.is_none() {
            let inline: Vec<Ident> = columns
                .iter()
                .filter(|c| c.primary_key)
                .map(|c| c.name.clone())
                .collect();
            if !inline.is_empty() {
                primary_key = Some(PrimaryKey {
                    partition_key: inline,
                    clustering: Vec::new(),
                });
            }
        }
        let options = if self.eat_kw("with") {
            self.table_options()?
        } else {
            TableOptions::default()
        };
        Ok(Statement::CreateTable(Box::new(CreateTableStatement {
            if_not_exists,
            name,
            columns,
            primary_key,
            primary_key_twice,
            options,
        })))
    }

    /// `name type [STATIC] [PRIMARY KEY] [MASKED WITH ...]`.
    fn column_def(&mut self, allow_primary_key: bool) -> Result<ColumnDef, ParseError> {
        let name = self.ident()?;
        let ty = self.cql_type()?;
        let mut def = ColumnDef {
            name,
            ty,
            is_static: false,
            primary_key: false,
            mask: None,
        };
        loop {
            if self.eat_kw("static") {
                def.is_static = true;
            } else if allow_primary_key && self.is_kw("primary") {
                self.bump();
                self.expect_kw("key")?;
                def.primary_key = true;
            } else if self.eat_kw("masked") {
                def.mask = Some(self.mask_clause()?);
            } else {
                return Ok(def);
            }
        }
    }

    /// After `MASKED`: `WITH DEFAULT` or `WITH f(args)`.
    fn mask_clause(&mut self) -> Result<ColumnMask, ParseError> {
        self.expect_kw("with")?;
        if self.eat_kw("default") {
            return Ok(ColumnMask {
                function: None,
                args: Vec::new(),
            });
        }
        let function = self.function_name()?;
        let args = self.term_list_parens()?;
        Ok(ColumnMask {
            function: Some(function),
            args,
        })
    }

    /// `( pk , c1, c2 )` or `( (pk1, pk2), c1 )`.
    fn primary_key_clause(&mut self) -> Result<PrimaryKey, ParseError> {
        self.expect_sym("(")?;
        let partition_key = if self.is_sym("(") {
            self.ident_list_parens()?
        } else {
            vec![self.ident()?]
        };
        let mut clustering = Vec::new();
        while self.eat_sym(",") {
            clustering.push(self.ident()?);
        }
        self.expect_sym(")")?;
        Ok(PrimaryKey {
            partition_key,
            clustering,
        })
    }

    fn create_index(&mut self) -> Result<Statement, ParseError> {
        let custom = self.eat_kw("custom");
        self.expect_kw("index")?;
        let if_not_exists = self.if_not_exists()?;
        let name = if self.is_kw("on") {
            None
        } else {
            Some(self.ident()?)
        };
        self.expect_kw("on")?;
        let table = self.qualified_name()?;
        self.expect_sym("(")?;
        let mut targets = Vec::new();
        if !self.is_sym(")") {
            loop {
                targets.push(self.index_target()?);
                if !self.eat_sym(",") {
                    break;
                }
            }
        }
        self.expect_sym(")")?;
        let using = if self.eat_kw("using") {
            Some(self.string_literal()?)
        } else {
            None
        };
        let properties = if self.eat_kw("with") {
            self.properties()?
        } else {
            Vec::new()
        };
        Ok(Statement::CreateIndex(Box::new(CreateIndexStatement {
            custom,
            if_not_exists,
            name,
            table,
            targets,
            using,
            properties,
        })))
    }

    fn index_target(&mut self) -> Result<IndexTarget, ParseError> {
        if self.is_sym_at(1, "(") {
            let kind = match self.peek().text.to_ascii_lowercase().as_str() {
                "keys" => IndexTargetKind::Keys,
                "values" => IndexTargetKind::Values,
                "entries" => IndexTargetKind::Entries,
                "full" => IndexTargetKind::Full,
                _ => return Err(self.err_no_viable()),
            };
            self.bump();
            self.bump();
            let column = self.ident()?;
            self.expect_sym(")")?;
            return Ok(IndexTarget { column, kind });
        }
        Ok(IndexTarget {
            column: self.ident()?,
            kind: IndexTargetKind::Simple,
        })
    }

    fn create_view(&mut self) -> Result<Statement, ParseError> {
        let if_not_exists = self.if_not_exists()?;
        let name = self.qualified_name()?;
        self.expect_kw("as")?;
        let select = self.select_statement()?;
        self.expect_kw("primary")?;
        self.expect_kw("key")?;
        let primary_key = self.primary_key_clause()?;
        let options = if self.eat_kw("with") {
            self.table_options()?
        } else {
            TableOptions::default()
        };
        Ok(Statement::CreateMaterializedView(Box::new(
            CreateViewStatement {
                if_not_exists,
                name,
                select,
                primary_key,
                options,
            },
        )))
    }

    fn create_function(&mut self, or_replace: bool) -> Result<Statement, ParseError> {
        let if_not_exists = self.if_not_exists()?;
        let name = self.function_name()?;
        self.expect_sym("(")?;
        let mut args = Vec::new();
        if !self.is_sym(")") {
            loop {
                let arg = self.ident()?;
                args.push(FunctionArg {
                    name: arg,
                    ty: self.cql_type()?,
                });
                if !self.eat_sym(",") {
                    break;
                }
            }
        }
        self.expect_sym(")")?;
        let called_on_null_input = if self.eat_kw("called") {
            true
        } else {
            self.expect_kw("returns")?;
            self.expect_kw("null")?;
            false
        };
        self.expect_kw("on")?;
        self.expect_kw("null")?;
        self.expect_kw("input")?;
        self.expect_kw("returns")?;
        let return_type = self.cql_type()?;
        self.expect_kw("language")?;
        let language = self.ident()?.name;
        self.expect_kw("as")?;
        let body = self.string_literal()?;
        Ok(Statement::CreateFunction(Box::new(
            CreateFunctionStatement {
                or_replace,
                if_not_exists,
                name,
                args,
                called_on_null_input,
                return_type,
                language,
                body,
            },
        )))
    }

    /// `( type, ... )`
    fn type_list_parens(&mut self) -> Result<Vec<CqlTypeExpr>, ParseError> {
        self.expect_sym("(")?;
        let mut out = Vec::new();
        if !self.is_sym(")") {
            loop {
                out.push(self.cql_type()?);
                if !self.eat_sym(",") {
                    break;
                }
            }
        }
        self.expect_sym(")")?;
        Ok(out)
    }

    /// SFUNC and FINALFUNC name functions of the aggregate's own keyspace: Cassandra's grammar
    /// has no keyspace there, so `ks.f` is a syntax error at the dot.
    fn aggregate_part_name(&mut self, expected_next: &str) -> Result<QualifiedName, ParseError> {
        let name = self.ident()?;
        if self.is_sym(".") {
            return Err(self.err_mismatched(expected_next));
        }
        Ok(QualifiedName {
            keyspace: None,
            name,
        })
    }

    fn create_aggregate(&mut self, or_replace: bool) -> Result<Statement, ParseError> {
        let if_not_exists = self.if_not_exists()?;
        let name = self.function_name()?;
        let arg_types = self.type_list_parens()?;
        self.expect_kw("sfunc")?;
        let state_function = self.aggregate_part_name("K_STYPE")?;
        self.expect_kw("stype")?;
        let state_type = self.cql_type()?;
        let final_function = if self.eat_kw("finalfunc") {
            Some(self.aggregate_part_name("EOF")?)
        } else {
            None
        };
        let initial_condition = if self.eat_kw("initcond") {
            Some(self.term()?)
        } else {
            None
        };
        Ok(Statement::CreateAggregate(Box::new(
            CreateAggregateStatement {
                or_replace,
                if_not_exists,
                name,
                arg_types,
                state_function,
                state_type,
                final_function,
                initial_condition,
            },
        )))
    }

    pub(super) fn alter_statement(&mut self) -> Result<Statement, ParseError> {
        self.expect_kw("alter")?;
        if self.eat_keyspace_keyword() {
            let if_exists = self.if_exists()?;
            let name = self.ident()?;
            self.expect_kw("with")?;
            let properties = self.properties()?;
            return Ok(Statement::AlterKeyspace(AlterKeyspaceStatement {
                if_exists,
                name,
                properties,
            }));
        }
        if self.eat_table_keyword() {
            let if_exists = self.if_exists()?;
            let name = self.qualified_name()?;
            let action = self.alter_table_action()?;
            return Ok(Statement::AlterTable(Box::new(AlterTableStatement {
                if_exists,
                name,
                action,
            })));
        }
        if self.eat_kw("type") {
            let if_exists = self.if_exists()?;
            let name = self.qualified_name()?;
            let action = self.alter_type_action()?;
            return Ok(Statement::AlterType(AlterTypeStatement {
                if_exists,
                name,
                action,
            }));
        }
        if self.eat_kw("materialized") {
            self.expect_kw("view")?;
            let if_exists = self.if_exists()?;
            let name = self.qualified_name()?;
            self.expect_kw("with")?;
            let options = self.table_options()?;
            return Ok(Statement::AlterMaterializedView {
                if_exists,
                name,
                options,
            });
        }
        if self.is_kw("role") || self.is_kw("user") {
            return self.alter_role();
        }
        Err(self.err_no_viable())
    }

    /// `a TO b [AND c TO d ...]`
    fn renames(&mut self) -> Result<Vec<(Ident, Ident)>, ParseError> {
        let mut out = Vec::new();
        loop {
            let from = self.ident()?;
            self.expect_kw("to")?;
            out.push((from, self.ident()?));
            if !self.eat_kw("and") {
                return Ok(out);
            }
        }
    }

    fn alter_table_action(&mut self) -> Result<AlterTableAction, ParseError> {
        if self.eat_kw("add") {
            let if_not_exists = self.if_not_exists()?;
            let mut columns = Vec::new();
            if self.eat_sym("(") {
                loop {
                    columns.push(self.column_def(false)?);
                    if !self.eat_sym(",") {
                        break;
                    }
                }
                self.expect_sym(")")?;
            } else {
                columns.push(self.column_def(false)?);
            }
            return Ok(AlterTableAction::Add {
                if_not_exists,
                columns,
            });
        }
        if self.eat_kw("drop") {
            if self.is_kw("compact") && self.is_kw_at(1, "storage") {
                self.bump();
                self.bump();
                return Ok(AlterTableAction::DropCompactStorage);
            }
            let if_exists = self.if_exists()?;
            let columns = if self.is_sym("(") {
                self.ident_list_parens()?
            } else {
                vec![self.ident()?]
            };
            let timestamp = if self.eat_kw("using") {
                self.expect_kw("timestamp")?;
                Some(self.int_value()?)
            } else {
                None
            };
            return Ok(AlterTableAction::Drop {
                if_exists,
                columns,
                timestamp,
            });
        }
        if self.eat_kw("rename") {
            let if_exists = self.if_exists()?;
            return Ok(AlterTableAction::Rename {
                if_exists,
                renames: self.renames()?,
            });
        }
        if self.eat_kw("with") {
            return Ok(AlterTableAction::With(self.table_options()?));
        }
        if self.eat_kw("alter") {
            let if_exists = self.if_exists()?;
            let column = self.ident()?;
            if self.eat_kw("type") {
                return Ok(AlterTableAction::AlterType {
                    column,
                    ty: self.cql_type()?,
                });
            }
            if self.eat_kw("masked") {
                let mask = Some(self.mask_clause()?);
                return Ok(AlterTableAction::Mask {
                    if_exists,
                    column,
                    mask,
                });
            }
            self.expect_kw("drop")?;
            self.expect_kw("masked")?;
            return Ok(AlterTableAction::Mask {
                if_exists,
                column,
                mask: None,
            });
        }
        Err(self.err_no_viable())
    }

    fn alter_type_action(&mut self) -> Result<AlterTypeAction, ParseError> {
        if self.eat_kw("add") {
            let if_not_exists = self.if_not_exists()?;
            let field = self.ident()?;
            return Ok(AlterTypeAction::Add {
                if_not_exists,
                field,
                ty: self.cql_type()?,
            });
        }
        if self.eat_kw("rename") {
            let if_exists = self.if_exists()?;
            return Ok(AlterTypeAction::Rename {
                if_exists,
                renames: self.renames()?,
            });
        }
        if self.eat_kw("alter") {
            let field = self.ident()?;
            self.expect_kw("type")?;
            return Ok(AlterTypeAction::AlterField {
                field,
                ty: self.cql_type()?,
            });
        }
        Err(self.err_no_viable())
    }

    pub(super) fn drop_statement(&mut self) -> Result<Statement, ParseError> {
        self.expect_kw("drop")?;
        if self.eat_keyspace_keyword() {
            let if_exists = self.if_exists()?;
            return Ok(Statement::DropKeyspace {
                if_exists,
                name: self.ident()?,
            });
        }
        if self.eat_table_keyword() {
            let if_exists = self.if_exists()?;
            return Ok(Statement::DropTable {
                if_exists,
                name: self.qualified_name()?,
            });
        }
        if self.eat_kw("type") {
            let if_exists = self.if_exists()?;
            return Ok(Statement::DropType {
                if_exists,
                name: self.qualified_name()?,
            });
        }
        if self.eat_kw("index") {
            let if_exists = self.if_exists()?;
            return Ok(Statement::DropIndex {
                if_exists,
                name: self.qualified_name()?,
            });
        }
        if self.eat_kw("materialized") {
            self.expect_kw("view")?;
            let if_exists = self.if_exists()?;
            return Ok(Statement::DropMaterializedView {
                if_exists,
                name: self.qualified_name()?,
            });
        }
        if self.is_kw("function") || self.is_kw("aggregate") {
            let is_function = self.is_kw("function");
            self.bump();
            let if_exists = self.if_exists()?;
            let name = self.function_name()?;
            let arg_types = if self.is_sym("(") {
                Some(self.type_list_parens()?)
            } else {
                None
            };
            let d = DropFunctionStatement {
                if_exists,
                name,
                arg_types,
            };
            return Ok(if is_function {
                Statement::DropFunction(d)
            } else {
                Statement::DropAggregate(d)
            });
        }
        if self.eat_kw("trigger") {
            let if_exists = self.if_exists()?;
            let name = self.ident()?;
            self.expect_kw("on")?;
            return Ok(Statement::DropTrigger {
                if_exists,
                name,
                table: self.qualified_name()?,
            });
        }
        if self.is_kw("role") || self.is_kw("user") || self.is_kw("identity") {
            return self.drop_role();
        }
        Err(self.err_no_viable())
    }
}
