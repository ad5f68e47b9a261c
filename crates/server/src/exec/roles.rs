//! The role statements (CREATE/ALTER/DROP ROLE and USER, GRANT/REVOKE of roles and
//! permissions, LIST ROLES/USERS/PERMISSIONS) run against the node's [`AuthService`], with
//! CassandraRoleManager's checks, messages and result columns.
//!
//! [`AuthService`]: crate::auth::AuthService

use super::access::{ensure, ANONYMOUS};
use super::select::SelectOutput;
use super::{ExecError, ExecResult, Outcome};
use crate::auth::resource::{Resource, PERMISSIONS};
use crate::auth::roles::RoleChanges;
use crate::node::NodeState;
use bytes::Bytes;
use helenus_cql::ast::{self, AuthStatement, RoleOption};
use helenus_types::{CqlType, CqlValue, NativeType};
use std::collections::BTreeSet;

const NO_PRIVILEGES: &str =
    "does not have sufficient privileges to perform the requested operation";

fn insufficient(user: &str) -> ExecError {
    ExecError::Unauthorized(format!("User {user} {NO_PRIVILEGES}"))
}

/// Runs one role statement for `user` (`None`: a connection that has not logged in).
pub async fn execute(
    node: &NodeState,
    user: Option<&str>,
    stmt: &AuthStatement,
    session_ks: Option<&str>,
) -> ExecResult<Outcome> {
    let Some(user) = user else {
        return Err(ExecError::Unauthorized(ANONYMOUS.into()));
    };
    match stmt {
        AuthStatement::CreateRole(c) => create_role(node, user, c).await,
        AuthStatement::AlterRole(a) => alter_role(node, user, a).await,
        AuthStatement::DropRole {
            if_exists, name, ..
        } => drop_role(node, user, &name.name, *if_exists),
        AuthStatement::GrantRole { role, grantee } => {
            ensure_role_perm(node, user, &role.name, "AUTHORIZE")?;
            node.auth.update(|s| s.grant_role(&role.name, &grantee.name))?;
            Ok(Outcome::Void)
        }
        AuthStatement::RevokeRole { role, revokee } => {
            ensure_role_perm(node, user, &role.name, "AUTHORIZE")?;
            node.auth.update(|s| s.revoke_role(&role.name, &revokee.name))?;
            Ok(Outcome::Void)
        }
        AuthStatement::GrantPermissions {
            permissions,
            resource,
            grantee,
        } => change_permissions(node, user, (permissions, resource, &grantee.name), session_ks, true),
        AuthStatement::RevokePermissions {
            permissions,
            resource,
            revokee,
        } => change_permissions(node, user, (permissions, resource, &revokee.name), session_ks, false),
        AuthStatement::ListPermissions {
            permissions,
            resource,
            of,
            recursive,
        } => list_permissions(node, user, permissions, resource.as_ref(), of.as_ref(), *recursive, session_ks),
        AuthStatement::ListRoles { of, recursive } => {
            list_roles(node, user, of.as_ref().map(|r| r.name.as_str()), *recursive)
        }
        AuthStatement::ListUsers => list_users(node, user),
        AuthStatement::ListSuperusers
        | AuthStatement::AddIdentity { .. }
        | AuthStatement::DropIdentity { .. } => Err(ExecError::Invalid(
            "Identities and LIST SUPERUSERS need MutualTlsAuthenticator, which Helenus does not have"
                .into(),
        )),
    }
}

/// Refuses unless `user` holds `perm` on the role `role` (or ALL ROLES), with the message
/// Cassandra's role statements give.
fn ensure_role_perm(node: &NodeState, user: &str, role: &str, perm: &str) -> ExecResult<()> {
    if node.auth.has_permission(user, &Resource::role(role), perm) {
        return Ok(());
    }
    Err(insufficient(user))
}

/// The options of CREATE/ALTER ROLE as changes, the password hashed off the I/O workers.
async fn role_changes(node: &NodeState, options: &[RoleOption]) -> ExecResult<RoleChanges> {
    let mut c = RoleChanges::default();
    for o in options {
        match o {
            RoleOption::Password(p) => {
                let (p, cost) = (p.clone(), node.auth.bcrypt_cost());
                let hash =
                    tokio::task::spawn_blocking(move || crate::auth::hash_password(&p, cost))
                        .await
                        .map_err(|e| ExecError::Server(e.to_string()))??;
                c.salted_hash = Some(hash);
            }
            RoleOption::HashedPassword(h) => {
                if h.parse::<bcrypt::HashParts>().is_err() {
                    return Err(ExecError::Invalid(
                        "Invalid hashed password value. Please use jBcrypt.".into(),
                    ));
                }
                c.salted_hash = Some(h.clone());
            }
            RoleOption::Login(b) => c.can_login = Some(*b),
            RoleOption::Superuser(b) => c.is_superuser = Some(*b),
            RoleOption::AccessToDatacenters { all: true, .. }
            | RoleOption::AccessFromCidrs { all: true, .. } => {}
            RoleOption::Options(_) => {
                return Err(ExecError::Invalid(
                    "org.apache.cassandra.auth.CassandraRoleManager doesn't support OPTIONS".into(),
                ))
            }
            RoleOption::GeneratedPassword
            | RoleOption::AccessToDatacenters { .. }
            | RoleOption::AccessFromCidrs { .. } => return Err(ExecError::Invalid(
                "GENERATED PASSWORD, datacenter and CIDR restrictions are not supported by Helenus"
                    .into(),
            )),
        }
    }
    Ok(c)
}

async fn create_role(
    node: &NodeState,
    user: &str,
    c: &ast::CreateRoleStatement,
) -> ExecResult<Outcome> {
    let name = &c.name.name;
    if !node
        .auth
        .has_permission(user, &Resource::all_roles(), "CREATE")
    {
        return Err(insufficient(user));
    }
    let mut changes = role_changes(node, &c.options).await?;
    if changes.is_superuser == Some(true) && !node.auth.is_superuser(user) {
        return Err(ExecError::Unauthorized(
            "Only superusers can create a role with superuser status".into(),
        ));
    }
    if c.is_user && changes.can_login.is_none() {
        // CREATE USER is a role that can log in.
        changes.can_login = Some(true);
    }
    if c.if_not_exists && node.auth.snapshot().get(name).is_some() {
        return Ok(Outcome::Void);
    }
    let role = Resource::role(name);
    node.auth.update(|s| {
        s.create_role(name, changes)?;
        if node.auth.authorize {
            s.grant(user, &role, role.applicable());
        }
        Ok(())
    })?;
    Ok(Outcome::Void)
}

async fn alter_role(
    node: &NodeState,
    user: &str,
    a: &ast::AlterRoleStatement,
) -> ExecResult<Outcome> {
    let name = &a.name.name;
    if node.auth.snapshot().get(name).is_none() {
        if a.if_exists {
            return Ok(Outcome::Void);
        }
        return Err(ExecError::Invalid(format!("Role {name} doesn't exist")));
    }
    let changes = role_changes(node, &a.options).await?;
    let superuser = node.auth.is_superuser(user);
    if changes.is_superuser.is_some() {
        if node.auth.snapshot().roles_of(user, true).contains(name) {
            return Err(ExecError::Unauthorized(
                "You aren't allowed to alter your own superuser status or that of a role granted to you".into(),
            ));
        }
        if !superuser {
            return Err(ExecError::Unauthorized(
                "Only superusers are allowed to alter superuser status".into(),
            ));
        }
    }
    if !superuser {
        if user == name {
            // A role may change only its own password.
            if changes.can_login.is_some() {
                return Err(ExecError::Unauthorized(
                    "You aren't allowed to alter LOGIN".into(),
                ));
            }
        } else {
            ensure_role_perm(node, user, name, "ALTER")?;
        }
    }
    node.auth.update(|s| s.alter_role(name, changes))?;
    Ok(Outcome::Void)
}

fn drop_role(node: &NodeState, user: &str, name: &str, if_exists: bool) -> ExecResult<Outcome> {
    let store = node.auth.snapshot();
    if store.get(name).is_none() {
        if if_exists {
            return Ok(Outcome::Void);
        }
        return Err(ExecError::Invalid(format!("{name} doesn't exist")));
    }
    ensure_role_perm(node, user, name, "DROP")?;
    if user == name {
        return Err(ExecError::Invalid(
            "Cannot DROP primary role for current login".into(),
        ));
    }
    if store.is_superuser(name) && !node.auth.is_superuser(user) {
        return Err(ExecError::Unauthorized(
            "Only superusers can drop a role with superuser status".into(),
        ));
    }
    node.auth.update(|s| s.drop_role(name))?;
    Ok(Outcome::Void)
}

fn perm_name(p: ast::Permission) -> &'static str {
    use ast::Permission as P;
    match p {
        P::Create => "CREATE",
        P::Alter => "ALTER",
        P::Drop => "DROP",
        P::Select => "SELECT",
        P::Modify => "MODIFY",
        P::Authorize => "AUTHORIZE",
        P::Describe => "DESCRIBE",
        P::Execute => "EXECUTE",
        P::Unmask => "UNMASK",
        P::SelectMasked => "SELECT_MASKED",
    }
}

/// The names a GRANT/REVOKE/LIST asks for (`ALL`: every one that applies, or every one at all
/// for a LIST without a resource).
fn requested(perms: &ast::Permissions, resource: Option<&Resource>) -> Vec<&'static str> {
    match perms {
        ast::Permissions::All => resource.map_or(PERMISSIONS.to_vec(), |r| r.applicable().to_vec()),
        ast::Permissions::One(p) => vec![perm_name(*p)],
        ast::Permissions::Several(ps) => ps.iter().map(|p| perm_name(*p)).collect(),
    }
}

/// The resource a statement names, which must exist (Cassandra checks this for GRANT, REVOKE
/// and LIST alike).
fn resolve(node: &NodeState, r: &ast::Resource, session_ks: Option<&str>) -> ExecResult<Resource> {
    let res = match r {
        ast::Resource::AllKeyspaces => Resource::all_keyspaces(),
        ast::Resource::Keyspace(k) | ast::Resource::AllTables(k) => Resource::keyspace(&k.name),
        ast::Resource::Table(q) => {
            let ks = match (&q.keyspace, session_ks) {
                (Some(k), _) => k.name.clone(),
                (None, Some(k)) => k.to_string(),
                (None, None) => {
                    return Err(ExecError::Invalid(
                        "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename".into(),
                    ))
                }
            };
            Resource::table(&ks, &q.name.name)
        }
        ast::Resource::AllRoles => Resource::all_roles(),
        ast::Resource::Role(r) => Resource::role(&r.name),
        ast::Resource::AllFunctions(None) => Resource::Functions {
            keyspace: None,
            function: None,
        },
        ast::Resource::AllFunctions(Some(k)) => Resource::keyspace_functions(&k.name),
        ast::Resource::Function { .. } | ast::Resource::AllMBeans | ast::Resource::MBean(_) => {
            return Err(ExecError::Invalid(
                "Permissions on single functions and MBeans are not supported by Helenus".into(),
            ))
        }
    };
    let exists = match &res {
        Resource::Data {
            keyspace: Some(ks),
            table: None,
        } => node.keyspace(ks).is_some(),
        Resource::Data {
            keyspace: Some(ks),
            table: Some(t),
        } => node.table(ks, t).is_some(),
        Resource::Roles { role: Some(r) } => node.auth.snapshot().get(r).is_some(),
        Resource::Functions {
            keyspace: Some(ks), ..
        } => node.keyspace(ks).is_some(),
        _ => true,
    };
    if !exists {
        return Err(ExecError::Invalid(format!("Resource {res} doesn't exist")));
    }
    Ok(res)
}

fn resource_kind(r: &Resource) -> &'static str {
    match r {
        Resource::Data { .. } => "DataResource",
        Resource::Roles { .. } => "RoleResource",
        Resource::Functions { .. } => "FunctionResource",
    }
}

/// GRANT (`grant`) or REVOKE permissions: the user needs AUTHORIZE on the resource and each
/// permission it passes on.
fn change_permissions(
    node: &NodeState,
    user: &str,
    (perms, resource, role): (&ast::Permissions, &ast::Resource, &str),
    session_ks: Option<&str>,
    grant: bool,
) -> ExecResult<Outcome> {
    if !node.auth.authorize {
        // Cassandra's AllowAllAuthorizer throws, and the client sees a server error.
        let op = if grant { "GRANT" } else { "REVOKE" };
        return Err(ExecError::Server(format!(
            "java.lang.UnsupportedOperationException: {op} operation is not supported by AllowAllAuthorizer"
        )));
    }
    let resource = resolve(node, resource, session_ks)?;
    let names = requested(perms, Some(&resource));
    if names.iter().any(|p| !resource.applicable().contains(p)) {
        // Cassandra reports this one as a syntax error.
        return Err(ExecError::Syntax(format!(
            "Resource type {} does not support any of the requested permissions",
            resource_kind(&resource)
        )));
    }
    if node.auth.snapshot().get(role).is_none() {
        return Err(ExecError::Invalid(format!("Role {role} doesn't exist")));
    }
    ensure(node, user, &resource, "AUTHORIZE")?;
    for p in &names {
        ensure(node, user, &resource, p)?;
    }
    node.auth.update(|s| {
        if grant {
            s.grant(role, &resource, &names);
        } else {
            s.revoke(role, &resource, &names);
        }
        Ok(())
    })?;
    Ok(Outcome::Void)
}

fn cell(v: CqlValue) -> Option<Bytes> {
    Some(super::values::serialize(&v))
}

fn text_type() -> CqlType {
    CqlType::Native(NativeType::Varchar)
}

fn rows(table: &str, columns: Vec<(&str, CqlType)>, rows: Vec<Vec<Option<Bytes>>>) -> Outcome {
    Outcome::Rows {
        keyspace: "system_auth".into(),
        table: table.into(),
        out: SelectOutput {
            columns: columns
                .into_iter()
                .map(|(n, t)| (n.to_string(), t))
                .collect(),
            wire_columns: None,
            rows,
            paging_state: None,
            encoded: None,
        },
    }
}

fn list_permissions(
    node: &NodeState,
    user: &str,
    perms: &ast::Permissions,
    resource: Option<&ast::Resource>,
    of: Option<&ast::RoleName>,
    recursive: bool,
    session_ks: Option<&str>,
) -> ExecResult<Outcome> {
    if !node.auth.authorize {
        return Err(ExecError::Invalid(
            "LIST PERMISSIONS operation is not supported by AllowAllAuthorizer".into(),
        ));
    }
    let store = node.auth.snapshot();
    let superuser = store.is_superuser(user);
    let roles = match of {
        Some(r) => {
            if store.get(&r.name).is_none() {
                let role = Resource::role(&r.name);
                return Err(ExecError::Invalid(format!("{role} doesn't exist")));
            }
            if !superuser && !store.roles_of(user, true).contains(&r.name) {
                return Err(ExecError::Unauthorized(format!(
                    "You are not authorized to view {}'s permissions",
                    r.name
                )));
            }
            Some(store.roles_of(&r.name, true))
        }
        None if !superuser => {
            return Err(ExecError::Unauthorized(
                "You are not authorized to view everyone's permissions".into(),
            ))
        }
        None => None,
    };
    let resource = resource.map(|r| resolve(node, r, session_ks)).transpose()?;
    let resources = resource.as_ref().map(|r| {
        if recursive {
            r.chain()
        } else {
            vec![r.clone()]
        }
    });
    let names = requested(perms, None);
    let found = store.list_permissions(roles.as_ref(), resources.as_deref(), &names);
    // Cassandra answers an empty listing with a VOID result, not an empty ROWS.
    if found.is_empty() {
        return Ok(Outcome::Void);
    }
    let out = found
        .into_iter()
        .map(|(role, res, p)| {
            vec![
                cell(CqlValue::Text(role.clone())),
                cell(CqlValue::Text(role)),
                cell(CqlValue::Text(res.to_string())),
                cell(CqlValue::Text(p)),
            ]
        })
        .collect();
    let t = text_type;
    Ok(rows(
        "permissions",
        vec![
            ("role", t()),
            ("username", t()),
            ("resource", t()),
            ("permission", t()),
        ],
        out,
    ))
}

/// The roles a LIST ROLES / LIST USERS by `user` may show: everything for a superuser or a
/// holder of DESCRIBE on ALL ROLES, else the user's own roles.
fn visible_roles(node: &NodeState, user: &str) -> Option<BTreeSet<String>> {
    if node
        .auth
        .has_permission(user, &Resource::all_roles(), "DESCRIBE")
    {
        return None;
    }
    Some(node.auth.snapshot().roles_of(user, true))
}

fn list_roles(
    node: &NodeState,
    user: &str,
    of: Option<&str>,
    recursive: bool,
) -> ExecResult<Outcome> {
    let store = node.auth.snapshot();
    let visible = visible_roles(node, user);
    let names: BTreeSet<String> = match of {
        Some(r) => {
            if store.get(r).is_none() {
                let role = Resource::role(r);
                return Err(ExecError::Invalid(format!("{role} doesn't exist")));
            }
            if visible.as_ref().is_some_and(|v| !v.contains(r)) {
                return Err(ExecError::Unauthorized(format!(
                    // Cassandra's text ends with a space.
                    "You are not authorized to view roles granted to {r} "
                )));
            }
            store.roles_of(r, recursive)
        }
        None => visible.unwrap_or_else(|| store.roles.keys().cloned().collect()),
    };
    let empty_map = CqlValue::Map(Vec::new());
    let out = names
        .iter()
        .filter_map(|n| store.get(n))
        .map(|r| {
            vec![
                cell(CqlValue::Text(r.name.clone())),
                cell(CqlValue::Boolean(r.is_superuser)),
                cell(CqlValue::Boolean(r.can_login)),
                cell(empty_map.clone()),
                cell(CqlValue::Text("ALL".into())),
            ]
        })
        .collect();
    let options = CqlType::Map {
        key: Box::new(text_type()),
        value: Box::new(text_type()),
        frozen: false,
    };
    let boolean = || CqlType::Native(NativeType::Boolean);
    Ok(rows(
        "roles",
        vec![
            ("role", text_type()),
            ("super", boolean()),
            ("login", boolean()),
            ("options", options),
            ("datacenters", text_type()),
        ],
        out,
    ))
}

fn list_users(node: &NodeState, user: &str) -> ExecResult<Outcome> {
    let store = node.auth.snapshot();
    let visible = visible_roles(node, user);
    let out = store
        .login_roles()
        .filter(|r| visible.as_ref().is_none_or(|v| v.contains(&r.name)))
        .map(|r| {
            vec![
                cell(CqlValue::Text(r.name.clone())),
                cell(CqlValue::Boolean(store.is_superuser(&r.name))),
                cell(CqlValue::Text("ALL".into())),
            ]
        })
        .collect();
    Ok(rows(
        "users",
        vec![
            ("name", text_type()),
            ("super", CqlType::Native(NativeType::Boolean)),
            ("datacenters", text_type()),
        ],
        out,
    ))
}
