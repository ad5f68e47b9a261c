//! Schema statements: keyspaces, tables, types, indexes; persisted, applied to the storage engine,
//! and announced to clients with SCHEMA_CHANGE.
//!
//! This module owns the entry points (`execute`, the pure `apply`) and the dispatch over DDL
//! statements; the per-object rules live in the submodules.

use super::error::{invalid, ExecError, ExecResult};
use super::storage_bridge::table_def;
use super::values::resolve_type;
use crate::node::NodeState;
use helenus_cql::ast::{self, OptionValue, Term};
use helenus_schema::{IndexMeta, KeyspaceKind, KeyspaceMeta, Schema};
use helenus_types::{CqlType, UserType};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

mod compact;
mod index;
mod keyspace;
mod table;
mod types;

use index::check_index_target;
pub use index::is_sai_class;
pub(crate) use index::references_duration;
use keyspace::replication_of;
use table::alter_table;
pub use table::{apply_table_properties, build_table};
use types::{check_udt_field, mentions_type, replace_udt};

/// What a schema change did, for the RESULT and the event.
#[derive(Debug, Clone)]
pub struct SchemaChanged {
    pub change: &'static str,
    pub target: &'static str,
    pub keyspace: String,
    pub name: Option<String>,
}

const SCHEMA_FILE: &str = "schema.json";

pub fn initial_schema(system_dir: &Path) -> Result<Schema, helenus_schema::SchemaError> {
    let mut keyspaces = BTreeMap::new();
    for ks in helenus_schema::system_keyspaces() {
        keyspaces.insert(ks.name.clone(), Arc::new(ks));
    }
    std::fs::create_dir_all(system_dir).map_err(|e| helenus_schema::SchemaError::Storage {
        path: system_dir.display().to_string(),
        message: e.to_string(),
    })?;
    for ks in helenus_schema::load_user_schema(&system_dir.join(SCHEMA_FILE))? {
        keyspaces.insert(ks.name.clone(), Arc::new(ks));
    }
    let mut s = Schema {
        keyspaces,
        version: uuid::Uuid::nil(),
    };
    s.refresh_version();
    Ok(s)
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

/// Runs a DDL statement. Returns None for a no-op (IF [NOT] EXISTS that matched).
pub async fn execute(
    node: &NodeState,
    stmt: &ast::Statement,
    session_ks: Option<&str>,
) -> ExecResult<Option<SchemaChanged>> {
    let _guard = node.schema_change_lock.lock().await;
    if let ast::Statement::AlterTable(a) = stmt {
        if matches!(a.action, ast::AlterTableAction::DropCompactStorage)
            && !node.config.drop_compact_storage_enabled
        {
            return invalid("DROP COMPACT STORAGE is disabled. Enable in cassandra.yaml to use.");
        }
    }
    let schema = node.schema();
    let (new_schema, change) = match apply(&schema, stmt, session_ks)? {
        Some(x) => x,
        None => return Ok(None),
    };
    helenus_schema::save_user_schema(&new_schema, &schema_path(node))
        .map_err(|e| ExecError::Server(e.to_string()))?;
    // Storage follows the schema: new tables are created, dropped ones removed, altered options applied.
    for ks in new_schema.user_keyspaces() {
        for t in ks.tables.values() {
            let old = schema
                .keyspaces
                .get(&ks.name)
                .and_then(|k| k.tables.get(&t.name));
            let res = match old {
                None => node.engine.create_table(table_def(t)),
                Some(o) if o.id != t.id => node.engine.create_table(table_def(t)),
                Some(o) if **o != **t => node.engine.alter_table(table_def(t)),
                _ => Ok(()),
            };
            res.map_err(|e| ExecError::Server(e.to_string()))?;
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
    // Statements on a changed table are caught by their own check (`exec::cached`); this covers
    // what that check does not see, such as a type of the keyspace.
    node.prepared.invalidate_keyspace(&change.keyspace);
    Ok(Some(change))
}

fn changed(
    change: &'static str,
    target: &'static str,
    ks: &str,
    name: Option<&str>,
) -> SchemaChanged {
    SchemaChanged {
        change,
        target,
        keyspace: ks.to_string(),
        name: name.map(str::to_string),
    }
}

/// Computes the schema after `stmt`; pure, so it is easy to test.
pub fn apply(
    schema: &Schema,
    stmt: &ast::Statement,
    session_ks: Option<&str>,
) -> ExecResult<Option<(Schema, SchemaChanged)>> {
    use ast::Statement as S;
    let user_ks = |name: &str| -> ExecResult<Arc<KeyspaceMeta>> {
        let ks = schema
            .keyspaces
            .get(name)
            .ok_or_else(|| ExecError::Invalid(format!("Keyspace '{name}' doesn't exist")))?;
        if ks.kind != KeyspaceKind::User {
            return Err(ExecError::Unauthorized(format!(
                "{name} keyspace is not user-modifiable."
            )));
        }
        Ok(ks.clone())
    };
    Ok(Some(match stmt {
        S::CreateKeyspace(s) => {
            let name = s.name.name.clone();
            check_name("Keyspace", &name)?;
            if is_system(&name) {
                return invalid(format!("System keyspace '{name}' is not user-modifiable"));
            }
            if schema.keyspaces.contains_key(&name) {
                if s.if_not_exists {
                    return Ok(None);
                }
                return Err(ExecError::AlreadyExists {
                    message: format!("Keyspace {name} already exists"),
                    keyspace: name,
                    table: String::new(),
                });
            }
            let (replication, durable) = replication_of(&s.properties, None)?;
            let ks = KeyspaceMeta::new(&name, KeyspaceKind::User, replication, durable);
            (
                schema.with_keyspace(ks),
                changed("CREATED", "KEYSPACE", &name, None),
            )
        }
        S::AlterKeyspace(s) => {
            let name = s.name.name.clone();
            if !schema.keyspaces.contains_key(&name) && s.if_exists {
                return Ok(None);
            }
            let ks = user_ks(&name)?;
            let (replication, durable) = replication_of(&s.properties, Some(&ks))?;
            // Cassandra answers a schema change that changes nothing with a plain Void.
            if replication == ks.replication && durable == ks.durable_writes {
                return Ok(None);
            }
            let mut new = (*ks).clone();
            new.replication = replication;
            new.durable_writes = durable;
            (
                schema.with_keyspace(new),
                changed("UPDATED", "KEYSPACE", &name, None),
            )
        }
        S::DropKeyspace { if_exists, name } => {
            let name = name.name.clone();
            if !schema.keyspaces.contains_key(&name) {
                if *if_exists {
                    return Ok(None);
                }
                return invalid(format!("Keyspace '{name}' doesn't exist"));
            }
            user_ks(&name)?;
            (
                schema.without_keyspace(&name),
                changed("DROPPED", "KEYSPACE", &name, None),
            )
        }
        S::CreateTable(s) => {
            let ks_name = keyspace_of(&s.name, session_ks)?;
            let ks = user_ks(&ks_name)?;
            let tname = s.name.name.name.clone();
            if ks.tables.contains_key(&tname) {
                if s.if_not_exists {
                    return Ok(None);
                }
                return Err(ExecError::AlreadyExists {
                    message: format!("Table {ks_name}.{tname} already exists"),
                    keyspace: ks_name,
                    table: tname,
                });
            }
            let t = build_table(&ks, s)?;
            let mut new = (*ks).clone();
            new.tables.insert(tname.clone(), Arc::new(t));
            (
                schema.with_keyspace(new),
                changed("CREATED", "TABLE", &ks_name, Some(&tname)),
            )
        }
        S::AlterTable(s) => {
            let ks_name = keyspace_of(&s.name, session_ks)?;
            let ks = user_ks(&ks_name)?;
            let tname = s.name.name.name.clone();
            let Some(t) = ks.tables.get(&tname) else {
                if s.if_exists {
                    return Ok(None);
                }
                return invalid(format!("Table '{ks_name}.{tname}' doesn't exist"));
            };
            let altered = alter_table(&ks, t, &s.action)?;
            if altered == **t {
                // ADD IF NOT EXISTS / DROP IF EXISTS that matched: nothing changes, nothing is announced.
                return Ok(None);
            }
            let mut new = (*ks).clone();
            new.tables.insert(tname.clone(), Arc::new(altered));
            (
                schema.with_keyspace(new),
                changed("UPDATED", "TABLE", &ks_name, Some(&tname)),
            )
        }
        S::DropTable { if_exists, name } => {
            let ks_name = keyspace_of(name, session_ks)?;
            let tname = name.name.name.clone();
            let exists = schema
                .keyspaces
                .get(&ks_name)
                .is_some_and(|k| k.tables.contains_key(&tname));
            if !exists {
                if *if_exists {
                    return Ok(None);
                }
                if !schema.keyspaces.contains_key(&ks_name) {
                    return invalid(format!("Keyspace '{ks_name}' doesn't exist"));
                }
                return invalid(format!("Table '{ks_name}.{tname}' doesn't exist"));
            }
            let ks = user_ks(&ks_name)?;
            let mut new = (*ks).clone();
            new.tables.remove(&tname);
            (
                schema.with_keyspace(new),
                changed("DROPPED", "TABLE", &ks_name, Some(&tname)),
            )
        }
        S::CreateType(s) => {
            let ks_name = keyspace_of(&s.name, session_ks)?;
            let ks = user_ks(&ks_name)?;
            let tname = s.name.name.name.clone();
            if ks.types.contains_key(&tname) {
                if s.if_not_exists {
                    return Ok(None);
                }
                return invalid(format!("A user type with name '{tname}' already exists"));
            }
            let mut fields = Vec::new();
            for (f, ty) in &s.fields {
                if fields.iter().any(|(n, _): &(String, CqlType)| n == &f.name) {
                    return invalid(format!("Duplicate field name {} in type {tname}", f.name));
                }
                check_udt_field(ty)?;
                // Fields are stored inside one cell, so collections in them are frozen in effect.
                let t = resolve_type(ty, Some(&ks))?;
                fields.push((f.name.clone(), t));
            }
            let mut new = (*ks).clone();
            new.types.insert(
                tname.clone(),
                Arc::new(UserType {
                    keyspace: ks_name.clone(),
                    name: tname.clone(),
                    fields,
                }),
            );
            (
                schema.with_keyspace(new),
                changed("CREATED", "TYPE", &ks_name, Some(&tname)),
            )
        }
        S::AlterType(s) => {
            let ks_name = keyspace_of(&s.name, session_ks)?;
            let ks = user_ks(&ks_name)?;
            let tname = s.name.name.name.clone();
            let Some(old) = ks.types.get(&tname).cloned() else {
                if s.if_exists {
                    return Ok(None);
                }
                return invalid(format!("Unknown user type {ks_name}.{tname}"));
            };
            let mut ut = (*old).clone();
            match &s.action {
                ast::AlterTypeAction::Add {
                    if_not_exists,
                    field,
                    ty,
                } => {
                    if ut.fields.iter().any(|(n, _)| n == &field.name) {
                        if *if_not_exists {
                            return Ok(None);
                        }
                        return invalid(format!(
                            "Cannot add new field {} to type {ks_name}.{tname}: a field with name {} already exists",
                            field.name, field.name
                        ));
                    }
                    check_udt_field(ty)?;
                    ut.fields
                        .push((field.name.clone(), resolve_type(ty, Some(&ks))?));
                }
                ast::AlterTypeAction::Rename { if_exists, renames } => {
                    let mut renamed = 0;
                    for (from, to) in renames {
                        match ut.fields.iter().position(|(n, _)| n == &from.name) {
                            Some(i) => {
                                ut.fields[i].0 = to.name.clone();
                                renamed += 1;
                            }
                            None if *if_exists => {}
                            None => {
                                return invalid(format!(
                                    "Unkown field {} in user type {ks_name}.{tname}",
                                    from.name
                                ))
                            }
                        }
                    }
                    if renamed == 0 {
                        return Ok(None);
                    }
                }
                ast::AlterTypeAction::AlterField { field, .. } => {
                    return invalid(format!(
                        "Alterting field types is no longer supported (field {} of {tname})",
                        field.name
                    ))
                }
            }
            let ut = Arc::new(ut);
            let mut new = (*ks).clone();
            new.types.insert(tname.clone(), ut.clone());
            // Tables carry the type's definition; give them the new one.
            for t in new.tables.values_mut() {
                if t.columns.iter().any(|c| mentions_type(&c.cql_type, &tname)) {
                    let mut nt = (**t).clone();
                    for c in nt.columns.iter_mut() {
                        c.cql_type = replace_udt(&c.cql_type, &ut);
                    }
                    *t = Arc::new(nt);
                }
            }
            (
                schema.with_keyspace(new),
                changed("UPDATED", "TYPE", &ks_name, Some(&tname)),
            )
        }
        S::DropType { if_exists, name } => {
            let ks_name = keyspace_of(name, session_ks)?;
            let ks = user_ks(&ks_name)?;
            let tname = name.name.name.clone();
            if !ks.types.contains_key(&tname) {
                if *if_exists {
                    return Ok(None);
                }
                return invalid(format!("Type '{ks_name}.{tname}' doesn't exist"));
            }
            let used = ks
                .tables
                .values()
                .any(|t| t.columns.iter().any(|c| mentions_type(&c.cql_type, &tname)));
            if used {
                return invalid(format!(
                    "Cannot drop user type '{ks_name}.{tname}' as it is still used by a table"
                ));
            }
            let mut users: Vec<&str> = ks
                .types
                .values()
                .filter(|u| {
                    u.name != tname && u.fields.iter().any(|(_, f)| mentions_type(f, &tname))
                })
                .map(|u| u.name.as_str())
                .collect();
            if !users.is_empty() {
                users.sort_unstable();
                return invalid(format!(
                    "Cannot drop user type '{ks_name}.{tname}' as it is still used by user types {}",
                    users.join(", ")
                ));
            }
            let mut new = (*ks).clone();
            new.types.remove(&tname);
            (
                schema.with_keyspace(new),
                changed("DROPPED", "TYPE", &ks_name, Some(&tname)),
            )
        }
        S::CreateIndex(s) => {
            let ks_name = keyspace_of(&s.table, session_ks)?;
            let ks = user_ks(&ks_name)?;
            let tname = s.table.name.name.clone();
            let t = ks.tables.get(&tname).ok_or_else(|| {
                ExecError::Invalid(format!("Table '{ks_name}.{tname}' doesn't exist"))
            })?;
            let target = s.targets.first().ok_or_else(|| {
                ExecError::Invalid(
                    "Only CUSTOM indexes can be created without specifying a target column".into(),
                )
            })?;
            let col = t.column(&target.column.name).ok_or_else(|| {
                ExecError::Invalid(format!("Column '{}' doesn't exist", target.column.name))
            })?;
            check_index_target(t, col, target.kind, s.using.as_deref())?;
            let name = s
                .name
                .as_ref()
                .map(|n| n.name.clone())
                .unwrap_or_else(|| format!("{tname}_{}_idx", col.name));
            if ks
                .tables
                .values()
                .any(|t| t.indexes.iter().any(|i| i.name == name))
            {
                if s.if_not_exists {
                    return Ok(None);
                }
                return Err(ExecError::Invalid(format!("Index '{name}' already exists")));
            }
            let quoted = super::describe::maybe_quote(&col.name);
            let target_text = match target.kind {
                ast::IndexTargetKind::Keys => format!("keys({quoted})"),
                ast::IndexTargetKind::Entries => format!("entries({quoted})"),
                ast::IndexTargetKind::Full => format!("full({quoted})"),
                ast::IndexTargetKind::Values => format!("values({quoted})"),
                ast::IndexTargetKind::Simple
                    if matches!(
                        col.cql_type,
                        CqlType::List { frozen: false, .. }
                            | CqlType::Set { frozen: false, .. }
                            | CqlType::Map { frozen: false, .. }
                    ) =>
                {
                    format!("values({quoted})")
                }
                ast::IndexTargetKind::Simple => quoted,
            };
            let mut options = BTreeMap::new();
            if let Some(dup) = t.indexes.iter().find(|i| {
                i.options.get("target") == Some(&target_text)
                    && i.options.get("class_name").map(|c| is_sai_class(c))
                        == s.using.as_deref().map(is_sai_class)
            }) {
                if s.if_not_exists {
                    return Ok(None);
                }
                return invalid(format!(
                    "Index {name} is a duplicate of existing index {}",
                    dup.name
                ));
            }
            options.insert("target".to_string(), target_text);
            for (k, v) in &s.properties {
                if k == "options" {
                    for (ok, ov) in map_value(v, "options")? {
                        options.insert(ok, ov);
                    }
                }
            }
            let kind = match &s.using {
                Some(class) => {
                    // Kept as written: Cassandra shows `USING 'sai'` back as given.
                    options.insert("class_name".to_string(), class.clone());
                    "CUSTOM"
                }
                None => "COMPOSITES",
            };
            let mut nt = (**t).clone();
            nt.indexes.push(IndexMeta {
                name: name.clone(),
                kind: kind.to_string(),
                options,
            });
            let mut new = (*ks).clone();
            new.tables.insert(tname.clone(), Arc::new(nt));
            (
                schema.with_keyspace(new),
                changed("UPDATED", "TABLE", &ks_name, Some(&tname)),
            )
        }
        S::DropIndex { if_exists, name } => {
            let ks_name = keyspace_of(name, session_ks)?;
            let ks = user_ks(&ks_name)?;
            let iname = name.name.name.clone();
            let Some(t) = ks
                .tables
                .values()
                .find(|t| t.indexes.iter().any(|i| i.name == iname))
                .cloned()
            else {
                if *if_exists {
                    return Ok(None);
                }
                return invalid(format!("Index '{ks_name}.{iname}' doesn't exist"));
            };
            let mut nt = (*t).clone();
            nt.indexes.retain(|i| i.name != iname);
            let mut new = (*ks).clone();
            new.tables.insert(nt.name.clone(), Arc::new(nt.clone()));
            (
                schema.with_keyspace(new),
                changed("UPDATED", "TABLE", &ks_name, Some(&nt.name)),
            )
        }
        S::DropMaterializedView {
            if_exists: true, ..
        } => return Ok(None),
        _ => return invalid("This statement is not supported by Helenus yet"),
    }))
}
