//! Schema statements: keyspaces, tables, types, indexes; persisted, applied to the storage engine,
//! and announced to clients with SCHEMA_CHANGE.
//!
//! This module owns `execute` (persist the new schema, make storage follow it, announce the
//! change); `apply` computes the new schema with one pure function per statement kind, and the
//! per-object rules (keyspace options, tables, types, indexes, COMPACT STORAGE) live in the other
//! submodules.

use super::error::{invalid, ExecError, ExecResult};
use super::storage_bridge::table_def;
use crate::node::NodeState;
use helenus_cql::ast::{self, OptionValue, Term};
use helenus_protocol::{SchemaChange, SchemaChangeTarget};
use helenus_schema::Schema;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

mod apply;
mod compact;
mod index;
mod keyspace;
mod table;
mod types;

pub use apply::apply;
pub use index::is_sai_class;
pub(crate) use index::references_duration;
pub use table::{apply_table_properties, build_table};

/// A user table built from its CREATE TABLE statement in keyspace `ks`, for tests.
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
pub(crate) fn table_for_test(ddl: &str) -> helenus_schema::TableMeta {
    use helenus_schema::{KeyspaceKind, KeyspaceMeta};
    let ks = KeyspaceMeta::new("ks", KeyspaceKind::User, Default::default(), true);
    let ast::Statement::CreateTable(c) = helenus_cql::parse(ddl).unwrap().statement else {
        panic!("not a CREATE TABLE: {ddl}")
    };
    build_table(&ks, &c).unwrap()
}

const SCHEMA_FILE: &str = "schema.json";

pub fn initial_schema(system_dir: &Path) -> Result<Schema, helenus_schema::SchemaError> {
    std::fs::create_dir_all(system_dir).map_err(|e| helenus_schema::SchemaError::Storage {
        path: system_dir.display().to_string(),
        message: e.to_string(),
    })?;
    let user = helenus_schema::load_user_schema(&system_dir.join(SCHEMA_FILE))?;
    Ok(schema_with_user_keyspaces(user))
}

fn schema_path(node: &NodeState) -> std::path::PathBuf {
    node.config
        .primary_data_dir()
        .join("system")
        .join(SCHEMA_FILE)
}

fn is_system(ks: &str) -> bool {
    matches!(
        ks,
        "system"
            | "system_schema"
            | "system_auth"
            | "system_distributed"
            | "system_traces"
            | "system_views"
            | "system_virtual_schema"
    )
}

fn check_name(kind: &str, name: &str) -> ExecResult<()> {
    if name.is_empty()
        || name.len() > 48
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        let msg = format!(
            "{kind} name must not be empty, more than 48 characters long, or contain non-alphanumeric-underscore characters (got \"{name}\")"
        );
        // Cassandra validates table names with the table's configuration (ConfigurationException).
        return Err(if kind == "Table" {
            ExecError::Config(msg)
        } else {
            ExecError::Invalid(msg)
        });
    }
    Ok(())
}

fn const_text(t: &Term) -> Option<String> {
    Some(match t {
        Term::String(s) | Term::Integer(s) | Term::Float(s) | Term::Uuid(s) | Term::Duration(s) => {
            s.clone()
        }
        Term::Bool(b) => b.to_string(),
        _ => return None,
    })
}

fn map_value(v: &OptionValue, name: &str) -> ExecResult<BTreeMap<String, String>> {
    match v {
        OptionValue::Map(entries) => {
            let mut m = BTreeMap::new();
            for (k, t) in entries {
                let val = const_text(t).ok_or_else(|| {
                    ExecError::Syntax(format!("Invalid value for property '{name}'"))
                })?;
                m.insert(k.clone(), val);
            }
            Ok(m)
        }
        _ => Err(ExecError::Syntax(format!(
            "Invalid value for property '{name}'. It should be a map."
        ))),
    }
}

fn scalar(v: &OptionValue, name: &str) -> ExecResult<String> {
    match v {
        OptionValue::Constant(t) => const_text(t)
            .ok_or_else(|| ExecError::Syntax(format!("Invalid value for property '{name}'"))),
        OptionValue::Keyword(k) => Ok(k.clone()),
        OptionValue::Map(_) => Err(ExecError::Syntax(format!(
            "Invalid value for property '{name}'. It should be a string"
        ))),
    }
}

fn keyspace_of(q: &ast::QualifiedName, session_ks: Option<&str>) -> ExecResult<String> {
    match (&q.keyspace, session_ks) {
        (Some(k), _) => Ok(k.name.clone()),
        (None, Some(k)) => Ok(k.to_string()),
        (None, None) => invalid("No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename"),
    }
}

/// Runs a DDL statement. Returns None for a no-op (IF [NOT] EXISTS that matched). In a ring,
/// the change is ordered by the metadata log and then pushed to the other nodes.
pub async fn execute(
    node: &NodeState,
    stmt: &ast::Statement,
    session_ks: Option<&str>,
) -> ExecResult<Option<SchemaChange>> {
    check_allowed(node, stmt)?;
    let Some(cluster) = node.cluster() else {
        return execute_locally(node, stmt, session_ks).await;
    };
    let datacenters = known_datacenters(node);
    let datacenters: Vec<&str> = datacenters.iter().map(String::as_str).collect();
    let micros = node.exec.clock().wall_micros();
    let plan = |schema: &Schema| {
        apply(schema, stmt, session_ks, micros, &datacenters)
            .map_err(|e| Box::new(e) as crate::topology::SchemaError)
    };
    cluster.order_schema_change(&plan).await.map_err(exec_error)
}

/// The executor's error back from the ring's boxed one (a statement's own error keeps its code).
pub(crate) fn exec_error(e: crate::topology::SchemaError) -> ExecError {
    match e.downcast::<ExecError>() {
        Ok(e) => *e,
        Err(other) => ExecError::Server(other.to_string()),
    }
}

fn check_allowed(node: &NodeState, stmt: &ast::Statement) -> ExecResult<()> {
    if let ast::Statement::AlterTable(a) = stmt {
        if matches!(a.action, ast::AlterTableAction::DropCompactStorage)
            && !node.config.drop_compact_storage_enabled
        {
            return invalid("DROP COMPACT STORAGE is disabled. Enable in cassandra.yaml to use.");
        }
    }
    Ok(())
}

async fn execute_locally(
    node: &NodeState,
    stmt: &ast::Statement,
    session_ks: Option<&str>,
) -> ExecResult<Option<SchemaChange>> {
    let _guard = node.schema_change_lock.lock().await;
    let schema = node.schema();
    let datacenters = known_datacenters(node);
    let (new_schema, change) = match apply(
        &schema,
        stmt,
        session_ks,
        node.exec.clock().wall_micros(),
        &datacenters.iter().map(String::as_str).collect::<Vec<_>>(),
    )? {
        Some(x) => x,
        None => return Ok(None),
    };
    replace_schema(node, &schema, new_schema).await?;
    // Statements on a changed table are caught by their own check (`exec::cached`); this covers
    // what that check does not see, such as a type of the keyspace.
    node.prepared.invalidate_keyspace(changed_keyspace(&change));
    Ok(Some(change))
}

/// Installs a change of this node's that the ring's metadata log has chosen (the statement's
/// own SCHEMA_CHANGE event is sent by its executor).
pub async fn install_ordered(
    node: &NodeState,
    new_schema: Schema,
    change: &SchemaChange,
) -> ExecResult<()> {
    let _guard = node.schema_change_lock.lock().await;
    let schema = node.schema();
    replace_schema(node, &schema, new_schema).await?;
    node.prepared.invalidate_keyspace(changed_keyspace(change));
    Ok(())
}

/// The data centers of the ring this node is in (its own alone on a single node).
fn known_datacenters(node: &NodeState) -> Vec<String> {
    let mut dcs = vec![node.config.data_center.clone()];
    if let Some(cluster) = node.cluster() {
        dcs.extend(cluster.ring().datacenters().into_keys());
        dcs.extend(cluster.peers().into_iter().map(|p| p.location.datacenter));
    }
    dcs.sort();
    dcs.dedup();
    dcs
}

/// The system keyspaces with `user` keyspaces beside them (a schema received from a peer).
pub fn schema_with_user_keyspaces(user: Vec<helenus_schema::KeyspaceMeta>) -> Schema {
    let mut keyspaces = BTreeMap::new();
    for ks in helenus_schema::system_keyspaces() {
        keyspaces.insert(ks.name.clone(), Arc::new(ks));
    }
    for ks in user {
        keyspaces.insert(ks.name.clone(), Arc::new(ks));
    }
    let mut s = Schema {
        keyspaces,
        version: uuid::Uuid::nil(),
    };
    s.refresh_version();
    s
}

/// Makes `new_schema` this node's schema (one received from a peer): persisted, storage
/// following it, cached statements of every keyspace dropped.
pub async fn install_schema(node: &NodeState, new_schema: Schema) -> ExecResult<()> {
    let _guard = node.schema_change_lock.lock().await;
    let schema = node.schema();
    let keyspaces: Vec<String> = schema
        .user_keyspaces()
        .chain(new_schema.user_keyspaces())
        .map(|k| k.name.clone())
        .collect();
    let changes = schema_changes(&schema, &new_schema);
    replace_schema(node, &schema, new_schema).await?;
    for ks in keyspaces {
        node.prepared.invalidate_keyspace(&ks);
    }
    // Every node announces the changes it applies, as Cassandra does: a driver's control
    // connection may be on a node other than the one that ran the statement.
    for change in changes {
        let _ = node.events.send(crate::node::NodeEvent(
            helenus_protocol::Event::SchemaChange(change),
        ));
    }
    Ok(())
}

/// What changed from `old` to `new`, as SCHEMA_CHANGE events: keyspaces, tables and types
/// created, updated or dropped.
fn schema_changes(old: &Schema, new: &Schema) -> Vec<SchemaChange> {
    use helenus_protocol::SchemaChangeType as C;
    let mut out = Vec::new();
    let empty = BTreeMap::new();
    let empty_types = BTreeMap::new();
    for ks in new.user_keyspaces() {
        let before = old.keyspaces.get(&ks.name);
        match before {
            None => out.push(apply::keyspace_change(C::Created, &ks.name)),
            Some(b) if b.replication != ks.replication || b.durable_writes != ks.durable_writes => {
                out.push(apply::keyspace_change(C::Updated, &ks.name))
            }
            Some(_) => {}
        }
        let old_tables = before.map_or(&empty, |b| &b.tables);
        let old_types = before.map_or(&empty_types, |b| &b.types);
        for (name, t) in &ks.tables {
            match old_tables.get(name) {
                None => out.push(apply::table_change(C::Created, &ks.name, name)),
                Some(o) if o.id != t.id => {
                    out.push(apply::table_change(C::Created, &ks.name, name))
                }
                Some(o) if **o != **t => out.push(apply::table_change(C::Updated, &ks.name, name)),
                Some(_) => {}
            }
        }
        for name in old_tables.keys().filter(|n| !ks.tables.contains_key(*n)) {
            out.push(apply::table_change(C::Dropped, &ks.name, name));
        }
        for (name, t) in &ks.types {
            match old_types.get(name) {
                None => out.push(apply::type_change(C::Created, &ks.name, name)),
                Some(o) if **o != **t => out.push(apply::type_change(C::Updated, &ks.name, name)),
                Some(_) => {}
            }
        }
        for name in old_types.keys().filter(|n| !ks.types.contains_key(*n)) {
            out.push(apply::type_change(C::Dropped, &ks.name, name));
        }
    }
    for ks in old.user_keyspaces() {
        if !new.keyspaces.contains_key(&ks.name) {
            out.push(apply::keyspace_change(C::Dropped, &ks.name));
        }
    }
    out
}

/// Persists `new_schema`, makes storage follow it (new tables created, dropped ones removed,
/// altered options applied) and swaps it in.
async fn replace_schema(node: &NodeState, schema: &Schema, new_schema: Schema) -> ExecResult<()> {
    helenus_schema::save_user_schema(&new_schema, &schema_path(node))
        .map_err(|e| ExecError::Server(e.to_string()))?;
    for ks in new_schema.user_keyspaces() {
        for t in ks.tables.values() {
            let old = schema
                .keyspaces
                .get(&ks.name)
                .and_then(|k| k.tables.get(&t.name));
            let def = table_def(t);
            let res = match old {
                None => node.engine.create_table(def.clone()),
                Some(o) if o.id != t.id => node.engine.create_table(def.clone()),
                Some(o) if **o != **t => node.engine.alter_table(def.clone()),
                _ => continue,
            };
            // The storage error keeps its kind: a refused definition is Invalid, I/O a server error.
            res?;
            sync_indexes(node, old.filter(|o| o.id == t.id), t, &def)?;
        }
    }
    for ks in schema.user_keyspaces() {
        for t in ks.tables.values() {
            let still = new_schema
                .keyspaces
                .get(&ks.name)
                .and_then(|k| k.tables.get(&t.name))
                .is_some_and(|n| n.id == t.id);
            if !still {
                let engine = node.engine.clone();
                let id = *t.id.as_bytes();
                let _ = tokio::task::spawn_blocking(move || engine.drop_table(id)).await;
            }
        }
    }
    node.replace_schema(new_schema);
    Ok(())
}

/// Keeps the engine's index tables in step with `t`'s indexes (`old`: the same table before
/// the change): new ones created and built in the background, removed ones dropped.
fn sync_indexes(
    node: &NodeState,
    old: Option<&Arc<helenus_schema::TableMeta>>,
    t: &helenus_schema::TableMeta,
    def: &helenus_storage::TableDef,
) -> ExecResult<()> {
    use crate::index_storage as ix;
    let unbuilt = ix::register(&node.engine, t, def)?;
    if let Some(o) = old {
        ix::drop_removed(&node.engine, o, t)?;
    }
    // An index that existed before this change is being built by the thread its creation
    // started (or was built at start-up).
    let new: Vec<_> = unbuilt
        .into_iter()
        .filter(|d| {
            old.is_none_or(|o| {
                !o.indexes
                    .iter()
                    .any(|i| ix::index_table_id(o, &i.name) == d.index_table)
            })
        })
        .collect();
    ix::start_builds(&node.engine, def.id, new);
    Ok(())
}

/// The keyspace a change happened in.
fn changed_keyspace(change: &SchemaChange) -> &str {
    match &change.target {
        SchemaChangeTarget::Keyspace { keyspace }
        | SchemaChangeTarget::Table { keyspace, .. }
        | SchemaChangeTarget::Type { keyspace, .. }
        | SchemaChangeTarget::Function { keyspace, .. }
        | SchemaChangeTarget::Aggregate { keyspace, .. } => keyspace,
    }
}
