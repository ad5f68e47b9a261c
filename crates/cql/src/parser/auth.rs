//! Roles, users, permissions, identities, and DESCRIBE.

use super::Parser;
use crate::ast::*;
use crate::error::ParseError;
use crate::lexer::TokenKind;

const PERMISSION_WORDS: &[(&str, Permission)] = &[
    ("create", Permission::Create),
    ("alter", Permission::Alter),
    ("drop", Permission::Drop),
    ("select", Permission::Select),
    ("modify", Permission::Modify),
    ("authorize", Permission::Authorize),
    ("describe", Permission::Describe),
    ("execute", Permission::Execute),
    ("unmask", Permission::Unmask),
    ("select_masked", Permission::SelectMasked),
];

impl Parser<'_> {
    /// A role or user name: identifier, quoted name, or string literal (kept verbatim).
    fn role_name(&mut self) -> Result<RoleName, ParseError> {
        if let TokenKind::String(s) = &self.peek().kind {
            let s = s.clone();
            self.bump();
            return Ok(Ident::quoted(&s));
        }
        self.ident()
    }

    /// A legacy USER name: identifier or string, both kept verbatim (Cassandra's `username`
    /// rule keeps case; quoted names are rejected there).
    fn user_name(&mut self) -> Result<RoleName, ParseError> {
        match &self.peek().kind {
            TokenKind::String(s) => {
                let s = s.clone();
                self.bump();
                Ok(Ident::quoted(&s))
            }
            TokenKind::Word if self.is_ident_at(0) => {
                let s = self.peek().text.clone();
                self.bump();
                Ok(Ident::quoted(&s))
            }
            TokenKind::QuotedName(_) => Err(self.err_here(
                "Quoted strings are are not supported for user names and USER is deprecated, please use ROLE"
                    .into(),
            )),
            _ => Err(self.err_no_viable()),
        }
    }

    fn boolean(&mut self) -> Result<bool, ParseError> {
        if self.eat_kw("true") {
            return Ok(true);
        }
        if self.eat_kw("false") {
            return Ok(false);
        }
        Err(self.err_mismatched("BOOLEAN"))
    }

    /// `{ 'a', 'b' }` of strings.
    fn string_set(&mut self) -> Result<Vec<String>, ParseError> {
        self.expect_sym("{")?;
        let mut out = Vec::new();
        if !self.is_sym("}") {
            loop {
                out.push(self.string_literal()?);
                if !self.eat_sym(",") {
                    break;
                }
            }
        }
        self.expect_sym("}")?;
        Ok(out)
    }

    fn role_option(&mut self) -> Result<RoleOption, ParseError> {
        if self.eat_kw("password") {
            self.expect_sym("=")?;
            return Ok(RoleOption::Password(self.string_literal()?));
        }
        if self.eat_kw("hashed") {
            self.expect_kw("password")?;
            self.expect_sym("=")?;
            return Ok(RoleOption::HashedPassword(self.string_literal()?));
        }
        if self.eat_kw("generated") {
            self.expect_kw("password")?;
            return Ok(RoleOption::GeneratedPassword);
        }
        if self.eat_kw("login") {
            self.expect_sym("=")?;
            return Ok(RoleOption::Login(self.boolean()?));
        }
        if self.eat_kw("superuser") {
            self.expect_sym("=")?;
            return Ok(RoleOption::Superuser(self.boolean()?));
        }
        if self.eat_kw("options") {
            self.expect_sym("=")?;
            return Ok(RoleOption::Options(self.property_map()?));
        }
        if self.eat_kw("access") {
            let to_dcs = self.eat_kw("to");
            if !to_dcs {
                self.expect_kw("from")?;
            }
            let all = self.eat_kw("all");
            self.expect_kw(if to_dcs { "datacenters" } else { "cidrs" })?;
            let names = if all { Vec::new() } else { self.string_set()? };
            return Ok(if to_dcs {
                RoleOption::AccessToDatacenters {
                    all,
                    datacenters: names,
                }
            } else {
                RoleOption::AccessFromCidrs { all, cidrs: names }
            });
        }
        Err(self.err_no_viable())
    }

    /// Options of `CREATE|ALTER ROLE` (after WITH) or of the legacy USER forms.
    fn role_options(&mut self, is_user: bool) -> Result<Vec<RoleOption>, ParseError> {
        let mut out = Vec::new();
        if is_user {
            if self.eat_kw("with") {
                if self.eat_kw("generated") {
                    self.expect_kw("password")?;
                    out.push(RoleOption::GeneratedPassword);
                } else {
                    let hashed = self.eat_kw("hashed");
                    self.expect_kw("password")?;
                    let p = self.string_literal()?;
                    out.push(if hashed {
                        RoleOption::HashedPassword(p)
                    } else {
                        RoleOption::Password(p)
                    });
                }
            }
            if self.eat_kw("superuser") {
                out.push(RoleOption::Superuser(true));
            } else if self.eat_kw("nosuperuser") {
                out.push(RoleOption::Superuser(false));
            }
            return Ok(out);
        }
        if self.eat_kw("with") {
            out.push(self.role_option()?);
            while self.eat_kw("and") {
                out.push(self.role_option()?);
            }
        }
        Ok(out)
    }

    pub(super) fn create_role(&mut self) -> Result<Statement, ParseError> {
        let is_user = self.eat_kw("user");
        if !is_user {
            self.expect_kw("role")?;
        }
        let if_not_exists = self.if_not_exists()?;
        let name = if is_user {
            self.user_name()?
        } else {
            self.role_name()?
        };
        let options = self.role_options(is_user)?;
        let s = CreateRoleStatement {
            is_user,
            if_not_exists,
            name,
            options,
        };
        Ok(Statement::Auth(Box::new(AuthStatement::CreateRole(s))))
    }

    pub(super) fn alter_role(&mut self) -> Result<Statement, ParseError> {
        let is_user = self.eat_kw("user");
        if !is_user {
            self.expect_kw("role")?;
        }
        let if_exists = self.if_exists()?;
        let name = if is_user {
            self.user_name()?
        } else {
            self.role_name()?
        };
        let options = self.role_options(is_user)?;
        let s = AlterRoleStatement {
            is_user,
            if_exists,
            name,
            options,
        };
        Ok(Statement::Auth(Box::new(AuthStatement::AlterRole(s))))
    }

    pub(super) fn drop_role(&mut self) -> Result<Statement, ParseError> {
        if self.eat_kw("identity") {
            let if_exists = self.if_exists()?;
            let identity = self.string_literal()?;
            return Ok(Statement::Auth(Box::new(AuthStatement::DropIdentity {
                if_exists,
                identity,
            })));
        }
        let is_user = self.eat_kw("user");
        if !is_user {
            self.expect_kw("role")?;
        }
        let if_exists = self.if_exists()?;
        let name = if is_user {
            self.user_name()?
        } else {
            self.role_name()?
        };
        Ok(Statement::Auth(Box::new(AuthStatement::DropRole {
            is_user,
            if_exists,
            name,
        })))
    }

    /// Whether a permission list (rather than a role name) starts here.
    fn permissions_ahead(&self) -> bool {
        let w = self.peek().text.to_ascii_lowercase();
        let is_perm = w == "all" || PERMISSION_WORDS.iter().any(|(p, _)| *p == w);
        is_perm
            && self.peek().kind == TokenKind::Word
            && (self.is_kw_at(1, "on")
                || self.is_sym_at(1, ",")
                || self.is_kw_at(1, "permission")
                || self.is_kw_at(1, "permissions")
                || self.is_kw_at(1, "of")
                || matches!(self.peek_at(1).kind, TokenKind::Eof)
                || self.is_sym_at(1, ";")
                || self.is_kw_at(1, "norecursive"))
    }

    fn permissions(&mut self) -> Result<Permissions, ParseError> {
        if self.eat_kw("all") {
            self.eat_kw("permissions");
            return Ok(Permissions::All);
        }
        let mut perms = Vec::new();
        loop {
            let w = self.peek().text.to_ascii_lowercase();
            let Some((_, p)) = PERMISSION_WORDS.iter().find(|(name, _)| *name == w) else {
                return Err(self.err_no_viable());
            };
            self.bump();
            // Cassandra's grammar says PERMISSION; its docs write PERMISSIONS. Accept both.
            if !self.eat_kw("permission") {
                self.eat_kw("permissions");
            }
            perms.push(*p);
            if !self.eat_sym(",") {
                break;
            }
        }
        Ok(match perms.as_slice() {
            [one] => Permissions::One(*one),
            _ => Permissions::Several(perms),
        })
    }

    fn resource(&mut self) -> Result<Resource, ParseError> {
        if self.is_kw("all") {
            let r = match self.peek_at(1).text.to_ascii_lowercase().as_str() {
                "keyspaces" => Resource::AllKeyspaces,
                "tables" => {
                    self.bump();
                    self.bump();
                    self.expect_kw("in")?;
                    self.expect_kw("keyspace")?;
                    return Ok(Resource::AllTables(self.ident()?));
                }
                "roles" => Resource::AllRoles,
                "mbeans" => Resource::AllMBeans,
                "functions" => {
                    self.bump();
                    self.bump();
                    if self.eat_kw("in") {
                        self.expect_kw("keyspace")?;
                        return Ok(Resource::AllFunctions(Some(self.ident()?)));
                    }
                    return Ok(Resource::AllFunctions(None));
                }
                _ => return Err(self.err_no_viable()),
            };
            self.bump();
            self.bump();
            return Ok(r);
        }
        if self.eat_kw("keyspace") {
            return Ok(Resource::Keyspace(self.ident()?));
        }
        if self.eat_kw("role") {
            return Ok(Resource::Role(self.role_name()?));
        }
        if self.is_kw("function") && !self.is_sym_at(1, ".") && !self.is_kw_at(1, "to") {
            self.bump();
            let name = self.function_name()?;
            self.expect_sym("(")?;
            let mut arg_types = Vec::new();
            if !self.is_sym(")") {
                loop {
                    arg_types.push(self.cql_type()?);
                    if !self.eat_sym(",") {
                        break;
                    }
                }
            }
            self.expect_sym(")")?;
            return Ok(Resource::Function { name, arg_types });
        }
        if self.is_kw("mbean") || self.is_kw("mbeans") {
            self.bump();
            return Ok(Resource::MBean(self.string_literal()?));
        }
        self.eat_table_keyword();
        Ok(Resource::Table(self.qualified_name()?))
    }

    pub(super) fn auth_statement(&mut self) -> Result<Statement, ParseError> {
        let s = if self.eat_kw("grant") {
            if self.permissions_ahead() {
                let permissions = self.permissions()?;
                self.expect_kw("on")?;
                let resource = self.resource()?;
                self.expect_kw("to")?;
                AuthStatement::GrantPermissions {
                    permissions,
                    resource,
                    grantee: self.role_name()?,
                }
            } else {
                let role = self.role_name()?;
                self.expect_kw("to")?;
                AuthStatement::GrantRole {
                    role,
                    grantee: self.role_name()?,
                }
            }
        } else if self.eat_kw("revoke") {
            if self.permissions_ahead() {
                let permissions = self.permissions()?;
                self.expect_kw("on")?;
                let resource = self.resource()?;
                self.expect_kw("from")?;
                AuthStatement::RevokePermissions {
                    permissions,
                    resource,
                    revokee: self.role_name()?,
                }
            } else {
                let role = self.role_name()?;
                self.expect_kw("from")?;
                AuthStatement::RevokeRole {
                    role,
                    revokee: self.role_name()?,
                }
            }
        } else if self.eat_kw("add") {
            self.expect_kw("identity")?;
            let if_not_exists = self.if_not_exists()?;
            let identity = self.string_literal()?;
            self.expect_kw("to")?;
            self.expect_kw("role")?;
            AuthStatement::AddIdentity {
                if_not_exists,
                identity,
                role: self.role_name()?,
            }
        } else {
            self.expect_kw("list")?;
            self.list_statement()?
        };
        Ok(Statement::Auth(Box::new(s)))
    }

    fn list_statement(&mut self) -> Result<AuthStatement, ParseError> {
        if self.eat_kw("users") {
            return Ok(AuthStatement::ListUsers);
        }
        if self.eat_kw("superusers") {
            return Ok(AuthStatement::ListSuperusers);
        }
        if self.eat_kw("roles") {
            let of = if self.eat_kw("of") {
                Some(self.role_name()?)
            } else {
                None
            };
            let recursive = !self.eat_kw("norecursive");
            return Ok(AuthStatement::ListRoles { of, recursive });
        }
        let permissions = self.permissions()?;
        let resource = if self.eat_kw("on") {
            Some(self.resource()?)
        } else {
            None
        };
        let of = if self.eat_kw("of") {
            Some(self.role_name()?)
        } else {
            None
        };
        let recursive = !self.eat_kw("norecursive");
        Ok(AuthStatement::ListPermissions {
            permissions,
            resource,
            of,
            recursive,
        })
    }

    /// Whether the statement ends here (EOF, `;` or `WITH INTERNALS`).
    fn describe_end_ahead(&self, n: usize) -> bool {
        matches!(self.peek_at(n).kind, TokenKind::Eof)
            || self.is_sym_at(n, ";")
            || self.is_kw_at(n, "with")
    }

    pub(super) fn describe_statement(&mut self) -> Result<Statement, ParseError> {
        if !self.eat_kw("describe") {
            self.expect_kw("desc")?;
        }
        let w = self.peek().text.to_ascii_lowercase();
        let is_word = self.peek().kind == TokenKind::Word;
        let plural_end = self.describe_end_ahead(1);
        let target = match w.as_str() {
            _ if !is_word => DescribeTarget::Name(self.qualified_name()?),
            "cluster" if plural_end => self.bump_then(DescribeTarget::Cluster),
            "schema" => self.bump_then(DescribeTarget::Schema { full: false }),
            "full" => {
                self.bump();
                self.expect_kw("schema")?;
                DescribeTarget::Schema { full: true }
            }
            "keyspaces" if plural_end => self.bump_then(DescribeTarget::Keyspaces),
            "only" | "keyspace" => {
                let only = self.eat_kw("only");
                self.expect_kw("keyspace")?;
                let name = if self.describe_end_ahead(0) {
                    None
                } else {
                    Some(self.ident()?)
                };
                DescribeTarget::Keyspace { only, name }
            }
            "tables" | "columnfamilies" if plural_end => self.bump_then(DescribeTarget::Tables),
            "types" if plural_end => self.bump_then(DescribeTarget::Types),
            "functions" if plural_end => self.bump_then(DescribeTarget::Functions),
            "aggregates" if plural_end => self.bump_then(DescribeTarget::Aggregates),
            "table" | "columnfamily" => {
                self.bump();
                DescribeTarget::Table(self.qualified_name()?)
            }
            "type" if !plural_end => {
                self.bump();
                DescribeTarget::Type(self.qualified_name()?)
            }
            "function" if !plural_end => {
                self.bump();
                DescribeTarget::Function(self.function_name()?)
            }
            "aggregate" if !plural_end => {
                self.bump();
                DescribeTarget::Aggregate(self.function_name()?)
            }
            "index" => {
                self.bump();
                DescribeTarget::Index(self.qualified_name()?)
            }
            "materialized" => {
                self.bump();
                self.expect_kw("view")?;
                DescribeTarget::MaterializedView(self.qualified_name()?)
            }
            _ => DescribeTarget::Name(self.qualified_name()?),
        };
        let with_internals = if self.eat_kw("with") {
            self.expect_kw("internals")?;
            true
        } else {
            false
        };
        Ok(Statement::Describe(DescribeStatement {
            target,
            with_internals,
        }))
    }

    fn bump_then<T>(&mut self, v: T) -> T {
        self.bump();
        v
    }
}
