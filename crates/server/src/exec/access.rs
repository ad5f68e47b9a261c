//! Which permission each statement needs (CassandraAuthorizer's `checkAccess`), and the grants
//! and revocations that follow schema changes: the creator of a keyspace or table gets every
//! permission on it, and dropping one forgets what was granted on it.

use super::{ExecError, ExecResult, Planned, Prepared};
use crate::auth::resource::Resource;
use crate::node::NodeState;
use helenus_cql::ast::{self, Statement};
use helenus_protocol::{SchemaChange, SchemaChangeTarget, SchemaChangeType};

/// Cassandra's answer to a role statement from a connection that has not logged in.
pub const ANONYMOUS: &str = "You have to be logged in and not anonymous to perform this request";

/// Tables every logged-in user may read, because drivers and cqlsh read them to connect
/// (Cassandra's `READABLE_SYSTEM_RESOURCES`).
fn always_readable(keyspace: &str, table: &str) -> bool {
    matches!(keyspace, "system_schema" | "system_virtual_schema")
        || (keyspace == "system" && matches!(table, "local" | "peers" | "peers_v2"))
}

/// Refuses unless `user` holds `perm` on `resource` (or a parent, or is a superuser).
pub fn ensure(node: &NodeState, user: &str, resource: &Resource, perm: &str) -> ExecResult<()> {
    if node.auth.has_permission(user, resource, perm) {
        return Ok(());
    }
    Err(ExecError::Unauthorized(format!(
        "User {user} has no {perm} permission on {resource} or any of its parents"
    )))
}

/// Checks that the session's user may run `p`; a no-op under AllowAllAuthorizer.
pub fn authorize(node: &NodeState, user: Option<&str>, p: &Prepared) -> ExecResult<()> {
    if !node.auth.authorize {
        return Ok(());
    }
    let Some(user) = user else {
        return Err(ExecError::Unauthorized(ANONYMOUS.into()));
    };
    let table = |t: &helenus_schema::TableMeta| Resource::table(&t.keyspace, &t.name);
    match &p.plan {
        Planned::Select(s) => {
            if always_readable(&s.table.keyspace, &s.table.name) {
                return Ok(());
            }
            ensure(node, user, &table(&s.table), "SELECT")
        }
        Planned::Write(w) => {
            ensure(node, user, &table(&w.table), "MODIFY")?;
            if w.condition.is_some() {
                ensure(node, user, &table(&w.table), "SELECT")?;
            }
            Ok(())
        }
        Planned::Batch { children, .. } => {
            for w in children {
                ensure(node, user, &table(&w.table), "MODIFY")?;
                if w.condition.is_some() {
                    ensure(node, user, &table(&w.table), "SELECT")?;
                }
            }
            Ok(())
        }
        Planned::Truncate { keyspace, table } => {
            ensure(node, user, &Resource::table(keyspace, table), "MODIFY")
        }
        Planned::Ddl(stmt) => authorize_ddl(node, user, stmt, p.keyspace.as_deref()),
        // Role statements check their own permissions (they differ by target); USE and
        // DESCRIBE need none.
        Planned::Auth(_) | Planned::Use(_) | Planned::Describe(_) => Ok(()),
    }
}

fn keyspace_of(q: &ast::QualifiedName, session_ks: Option<&str>) -> ExecResult<String> {
    match (&q.keyspace, session_ks) {
        (Some(k), _) => Ok(k.name.clone()),
        (None, Some(k)) => Ok(k.to_string()),
        (None, None) => Err(ExecError::Invalid(
            "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename".into(),
        )),
    }
}

/// The permission and resource a schema statement needs, as Cassandra's statements check them.
fn authorize_ddl(
    node: &NodeState,
    user: &str,
    stmt: &Statement,
    session_ks: Option<&str>,
) -> ExecResult<()> {
    let ks = |q: &ast::QualifiedName| keyspace_of(q, session_ks);
    let table = |q: &ast::QualifiedName| -> ExecResult<Resource> {
        Ok(Resource::table(&ks(q)?, &q.name.name))
    };
    let (resource, perm) = match stmt {
        Statement::CreateKeyspace(_) => (Resource::all_keyspaces(), "CREATE"),
        Statement::AlterKeyspace(a) => (Resource::keyspace(&a.name.name), "ALTER"),
        Statement::DropKeyspace { name, .. } => (Resource::keyspace(&name.name), "DROP"),
        Statement::CreateTable(c) => (Resource::keyspace(&ks(&c.name)?), "CREATE"),
        Statement::AlterTable(a) => (table(&a.name)?, "ALTER"),
        Statement::DropTable { name, .. } => (table(name)?, "DROP"),
        Statement::CreateType(t) => (Resource::keyspace(&ks(&t.name)?), "CREATE"),
        Statement::AlterType(t) => (Resource::keyspace(&ks(&t.name)?), "ALTER"),
        Statement::DropType { name, .. } => (Resource::keyspace(&ks(name)?), "DROP"),
        Statement::CreateIndex(c) => (table(&c.table)?, "ALTER"),
        // The index's table is not named: ALTER on its keyspace covers every table in it.
        Statement::DropIndex { name, .. } => (Resource::keyspace(&ks(name)?), "ALTER"),
        Statement::CreateMaterializedView(v) => (table(&v.select.table)?, "ALTER"),
        Statement::AlterMaterializedView { name, .. }
        | Statement::DropMaterializedView { name, .. } => (Resource::keyspace(&ks(name)?), "ALTER"),
        Statement::CreateFunction(f) => (Resource::keyspace_functions(&ks(&f.name)?), "CREATE"),
        Statement::CreateAggregate(a) => (Resource::keyspace_functions(&ks(&a.name)?), "CREATE"),
        Statement::DropFunction(f) | Statement::DropAggregate(f) => {
            (Resource::keyspace_functions(&ks(&f.name)?), "DROP")
        }
        Statement::CreateTrigger { .. } | Statement::DropTrigger { .. } => {
            if node.auth.is_superuser(user) {
                return Ok(());
            }
            return Err(ExecError::Unauthorized(
                "Only superusers are allowed to perform CREATE TRIGGER queries".into(),
            ));
        }
        _ => return Ok(()),
    };
    ensure(node, user, &resource, perm)
}

/// After a schema change: the creator gets every permission on what it created (on a keyspace
/// also on its functions), and a dropped keyspace or table takes its grants with it.
pub fn after_schema_change(
    node: &NodeState,
    user: Option<&str>,
    change: &SchemaChange,
) -> ExecResult<()> {
    if !node.auth.authorize {
        return Ok(());
    }
    let resources = match &change.target {
        SchemaChangeTarget::Keyspace { keyspace } => vec![
            Resource::keyspace(keyspace),
            Resource::keyspace_functions(keyspace),
        ],
        SchemaChangeTarget::Table { keyspace, name } => vec![Resource::table(keyspace, name)],
        _ => return Ok(()),
    };
    match (change.change_type, user) {
        (SchemaChangeType::Created, Some(user)) => node.auth.update(|s| {
            for r in &resources {
                s.grant(user, r, r.applicable());
            }
            Ok(())
        })?,
        (SchemaChangeType::Dropped, _) => node.auth.update(|s| {
            for r in &resources {
                s.drop_resource(r);
            }
            Ok(())
        })?,
        _ => {}
    }
    Ok(())
}
