//! The schema after one DDL statement, computed from the schema alone (no storage, no node), one
//! function per statement kind. `execute` in the parent module persists the result and makes
//! storage follow it; keeping this part pure is what lets each statement kind be unit-tested.

use super::index::{check_index_target, is_sai_class};
use super::keyspace::replication_of;
use super::table::build_table;
use super::types::{check_udt_field, mentions_type, replace_udt, replace_udt_in_fields};
use super::{check_name, is_system, keyspace_of, map_value};
use crate::exec::error::{invalid, ExecError, ExecResult};
use crate::exec::values::resolve_type;
use helenus_cql::ast;
use helenus_protocol::{SchemaChange, SchemaChangeTarget, SchemaChangeType};
use helenus_schema::{ColumnMeta, IndexMeta, KeyspaceKind, KeyspaceMeta, Schema};
use helenus_types::{CqlType, UserType};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The schema after a statement and the change to announce; None when the statement changes
/// nothing (IF [NOT] EXISTS that matched, an ALTER to the current state), which is answered with
/// a plain Void and no event, as Cassandra does.
pub type Applied = Option<(Schema, SchemaChange)>;

/// Computes the schema after `stmt`; `now_us` is the statement's time (when a dropped column was
/// dropped).
pub fn apply(
    schema: &Schema,
    stmt: &ast::Statement,
    session_ks: Option<&str>,
    now_us: i64,
    datacenters: &[&str],
) -> ExecResult<Applied> {
    use ast::Statement as S;
    match stmt {
        S::CreateKeyspace(s) => create_keyspace(schema, s, datacenters),
        S::AlterKeyspace(s) => alter_keyspace(schema, s, datacenters),
        S::DropKeyspace { if_exists, name } => drop_keyspace(schema, *if_exists, name),
        S::CreateTable(s) => create_table(schema, s, session_ks),
        S::AlterTable(s) => alter_table(schema, s, session_ks, now_us),
        S::DropTable { if_exists, name } => drop_table(schema, *if_exists, name, session_ks),
        S::CreateType(s) => create_type(schema, s, session_ks),
        S::AlterType(s) => alter_type(schema, s, session_ks),
        S::DropType { if_exists, name } => drop_type(schema, *if_exists, name, session_ks),
        S::CreateIndex(s) => create_index(schema, s, session_ks),
        S::DropIndex { if_exists, name } => drop_index(schema, *if_exists, name, session_ks),
        S::DropMaterializedView {
            if_exists: true, ..
        } => Ok(None),
        // There are no user-defined functions or aggregates, so none can exist to drop.
        S::DropFunction(ast::DropFunctionStatement {
            if_exists: true, ..
        })
        | S::DropAggregate(ast::DropFunctionStatement {
            if_exists: true, ..
        }) => Ok(None),
        _ => invalid("This statement is not supported by Helenus yet"),
    }
}

/// The keyspace `name`, if it exists and users may change it.
fn user_keyspace(schema: &Schema, name: &str) -> ExecResult<Arc<KeyspaceMeta>> {
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
}

pub(super) fn keyspace_change(change_type: SchemaChangeType, keyspace: &str) -> SchemaChange {
    SchemaChange {
        change_type,
        target: SchemaChangeTarget::Keyspace {
            keyspace: keyspace.to_string(),
        },
    }
}

pub(super) fn table_change(
    change_type: SchemaChangeType,
    keyspace: &str,
    table: &str,
) -> SchemaChange {
    SchemaChange {
        change_type,
        target: SchemaChangeTarget::Table {
            keyspace: keyspace.to_string(),
            name: table.to_string(),
        },
    }
}

pub(super) fn type_change(
    change_type: SchemaChangeType,
    keyspace: &str,
    name: &str,
) -> SchemaChange {
    SchemaChange {
        change_type,
        target: SchemaChangeTarget::Type {
            keyspace: keyspace.to_string(),
            name: name.to_string(),
        },
    }
}

/// `CREATE KEYSPACE`.
fn create_keyspace(
    schema: &Schema,
    s: &ast::CreateKeyspaceStatement,
    datacenters: &[&str],
) -> ExecResult<Applied> {
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
    let (replication, durable) = replication_of(&s.properties, None, datacenters)?;
    let ks = KeyspaceMeta::new(&name, KeyspaceKind::User, replication, durable);
    Ok(Some((
        schema.with_keyspace(ks),
        keyspace_change(SchemaChangeType::Created, &name),
    )))
}

/// `ALTER KEYSPACE`.
fn alter_keyspace(
    schema: &Schema,
    s: &ast::AlterKeyspaceStatement,
    datacenters: &[&str],
) -> ExecResult<Applied> {
    let name = s.name.name.clone();
    if !schema.keyspaces.contains_key(&name) && s.if_exists {
        return Ok(None);
    }
    let ks = user_keyspace(schema, &name)?;
    let (replication, durable) = replication_of(&s.properties, Some(&ks), datacenters)?;
    // Cassandra answers a schema change that changes nothing with a plain Void.
    if replication == ks.replication && durable == ks.durable_writes {
        return Ok(None);
    }
    let mut new = (*ks).clone();
    new.replication = replication;
    new.durable_writes = durable;
    Ok(Some((
        schema.with_keyspace(new),
        keyspace_change(SchemaChangeType::Updated, &name),
    )))
}

/// `DROP KEYSPACE`.
fn drop_keyspace(schema: &Schema, if_exists: bool, name: &ast::Ident) -> ExecResult<Applied> {
    let name = name.name.clone();
    if !schema.keyspaces.contains_key(&name) {
        if if_exists {
            return Ok(None);
        }
        return invalid(format!("Keyspace '{name}' doesn't exist"));
    }
    user_keyspace(schema, &name)?;
    Ok(Some((
        schema.without_keyspace(&name),
        keyspace_change(SchemaChangeType::Dropped, &name),
    )))
}

/// `CREATE TABLE`.
fn create_table(
    schema: &Schema,
    s: &ast::CreateTableStatement,
    session_ks: Option<&str>,
) -> ExecResult<Applied> {
    let ks_name = keyspace_of(&s.name, session_ks)?;
    let ks = user_keyspace(schema, &ks_name)?;
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
    Ok(Some((
        schema.with_keyspace(new),
        table_change(SchemaChangeType::Created, &ks_name, &tname),
    )))
}

/// `ALTER TABLE`.
fn alter_table(
    schema: &Schema,
    s: &ast::AlterTableStatement,
    session_ks: Option<&str>,
    now_us: i64,
) -> ExecResult<Applied> {
    let ks_name = keyspace_of(&s.name, session_ks)?;
    let ks = user_keyspace(schema, &ks_name)?;
    let tname = s.name.name.name.clone();
    let Some(t) = ks.tables.get(&tname) else {
        if s.if_exists {
            return Ok(None);
        }
        return invalid(format!("Table '{ks_name}.{tname}' doesn't exist"));
    };
    let altered = super::table::alter_table(&ks, t, &s.action, now_us)?;
    if altered == **t {
        // ADD IF NOT EXISTS / DROP IF EXISTS that matched: nothing changes, nothing is announced.
        return Ok(None);
    }
    let mut new = (*ks).clone();
    new.tables.insert(tname.clone(), Arc::new(altered));
    Ok(Some((
        schema.with_keyspace(new),
        table_change(SchemaChangeType::Updated, &ks_name, &tname),
    )))
}

/// `DROP TABLE`.
fn drop_table(
    schema: &Schema,
    if_exists: bool,
    name: &ast::QualifiedName,
    session_ks: Option<&str>,
) -> ExecResult<Applied> {
    let ks_name = keyspace_of(name, session_ks)?;
    let tname = name.name.name.clone();
    let exists = schema
        .keyspaces
        .get(&ks_name)
        .is_some_and(|k| k.tables.contains_key(&tname));
    if !exists {
        if if_exists {
            return Ok(None);
        }
        if !schema.keyspaces.contains_key(&ks_name) {
            return invalid(format!("Keyspace '{ks_name}' doesn't exist"));
        }
        return invalid(format!("Table '{ks_name}.{tname}' doesn't exist"));
    }
    let ks = user_keyspace(schema, &ks_name)?;
    let mut new = (*ks).clone();
    new.tables.remove(&tname);
    Ok(Some((
        schema.with_keyspace(new),
        table_change(SchemaChangeType::Dropped, &ks_name, &tname),
    )))
}

/// `CREATE TYPE`.
fn create_type(
    schema: &Schema,
    s: &ast::CreateTypeStatement,
    session_ks: Option<&str>,
) -> ExecResult<Applied> {
    let ks_name = keyspace_of(&s.name, session_ks)?;
    let ks = user_keyspace(schema, &ks_name)?;
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
    Ok(Some((
        schema.with_keyspace(new),
        type_change(SchemaChangeType::Created, &ks_name, &tname),
    )))
}

/// `ALTER TYPE`.
fn alter_type(
    schema: &Schema,
    s: &ast::AlterTypeStatement,
    session_ks: Option<&str>,
) -> ExecResult<Applied> {
    let ks_name = keyspace_of(&s.name, session_ks)?;
    let ks = user_keyspace(schema, &ks_name)?;
    let tname = s.name.name.name.clone();
    let Some(old) = ks.types.get(&tname).cloned() else {
        if s.if_exists {
            return Ok(None);
        }
        return invalid(format!("Unknown user type {ks_name}.{tname}"));
    };
    let mut ut = (*old).clone();
    if !alter_type_fields(&mut ut, &s.action, &ks, &ks_name)? {
        return Ok(None);
    }
    let ut = Arc::new(ut);
    let mut new = (*ks).clone();
    new.types.insert(tname.clone(), ut.clone());
    // Types nesting this one carry its definition; give them the new one.
    for other in new.types.values_mut() {
        if other.name != tname && other.fields.iter().any(|(_, f)| mentions_type(f, &tname)) {
            *other = Arc::new(replace_udt_in_fields(other, &ut));
        }
    }
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
    Ok(Some((
        schema.with_keyspace(new),
        type_change(SchemaChangeType::Updated, &ks_name, &tname),
    )))
}

/// Applies an ALTER TYPE action to the fields of `ut`; false when it changes nothing (ADD IF NOT
/// EXISTS of an existing field, RENAME IF EXISTS of absent ones).
fn alter_type_fields(
    ut: &mut UserType,
    action: &ast::AlterTypeAction,
    ks: &Arc<KeyspaceMeta>,
    ks_name: &str,
) -> ExecResult<bool> {
    let tname = ut.name.clone();
    match action {
        ast::AlterTypeAction::Add {
            if_not_exists,
            field,
            ty,
        } => {
            if ut.fields.iter().any(|(n, _)| n == &field.name) {
                if *if_not_exists {
                    return Ok(false);
                }
                return invalid(format!(
                    "Cannot add new field {} to type {ks_name}.{tname}: a field with name {} already exists",
                    field.name, field.name
                ));
            }
            check_udt_field(ty)?;
            let resolved = resolve_type(ty, Some(ks))?;
            if mentions_type(&resolved, &tname) {
                return invalid(format!(
                    "Cannot add new field {} of type {resolved} to user type {ks_name}.{tname} as it would create a circular reference",
                    field.name
                ));
            }
            ut.fields.push((field.name.clone(), resolved));
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
                return Ok(false);
            }
        }
        ast::AlterTypeAction::AlterField { field, .. } => {
            return invalid(format!(
                "Alterting field types is no longer supported (field {} of {tname})",
                field.name
            ))
        }
    }
    Ok(true)
}

/// `DROP TYPE`.
fn drop_type(
    schema: &Schema,
    if_exists: bool,
    name: &ast::QualifiedName,
    session_ks: Option<&str>,
) -> ExecResult<Applied> {
    let ks_name = keyspace_of(name, session_ks)?;
    if if_exists && !schema.keyspaces.contains_key(&ks_name) {
        return Ok(None);
    }
    let ks = user_keyspace(schema, &ks_name)?;
    let tname = name.name.name.clone();
    if !ks.types.contains_key(&tname) {
        if if_exists {
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
        .filter(|u| u.name != tname && u.fields.iter().any(|(_, f)| mentions_type(f, &tname)))
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
    Ok(Some((
        schema.with_keyspace(new),
        type_change(SchemaChangeType::Dropped, &ks_name, &tname),
    )))
}

/// `CREATE INDEX`.
fn create_index(
    schema: &Schema,
    s: &ast::CreateIndexStatement,
    session_ks: Option<&str>,
) -> ExecResult<Applied> {
    let ks_name = keyspace_of(&s.table, session_ks)?;
    let ks = user_keyspace(schema, &ks_name)?;
    let tname = s.table.name.name.clone();
    let t = ks
        .tables
        .get(&tname)
        .ok_or_else(|| ExecError::Invalid(format!("Table '{ks_name}.{tname}' doesn't exist")))?;
    let target = s.targets.first().ok_or_else(|| {
        ExecError::Invalid(
            "Only CUSTOM indexes can be created without specifying a target column".into(),
        )
    })?;
    let col = t.column(&target.column.name).ok_or_else(|| {
        ExecError::Invalid(format!("Column '{}' doesn't exist", target.column.name))
    })?;
    check_index_target(t, col, target.kind, s.using.as_deref())?;
    let taken = |n: &str| {
        ks.tables
            .values()
            .any(|t| t.indexes.iter().any(|i| i.name == n))
    };
    // An unnamed index takes the first free `<table>_<column>_idx[_N]`, as Cassandra names it.
    let name = match &s.name {
        Some(n) => n.name.clone(),
        None => {
            let base = format!("{tname}_{}_idx", col.name);
            let mut name = base.clone();
            let mut n = 0;
            while taken(&name) {
                n += 1;
                name = format!("{base}_{n}");
            }
            name
        }
    };
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
    let target_text = index_target_text(col, target.kind);
    // 'legacy_local_table' is the default (legacy) implementation asked for by name.
    let using = s
        .using
        .as_deref()
        .filter(|c| !c.eq_ignore_ascii_case("legacy_local_table"));
    let mut options = BTreeMap::new();
    if let Some(dup) = t.indexes.iter().find(|i| {
        i.options.get("target") == Some(&target_text)
            && i.options.get("class_name").map(|c| is_sai_class(c)) == using.map(is_sai_class)
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
    let kind = match using {
        Some(class) => {
            // Kept as written: Cassandra shows `USING 'sai'` back as given.
            options.insert("class_name".to_string(), class.to_string());
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
    Ok(Some((
        schema.with_keyspace(new),
        table_change(SchemaChangeType::Updated, &ks_name, &tname),
    )))
}

/// The `target` option of an index as Cassandra stores it: `keys(c)`, `values(c)`, ..., and a bare
/// column on a plain collection meaning its values.
fn index_target_text(col: &ColumnMeta, kind: ast::IndexTargetKind) -> String {
    let quoted = crate::exec::cql_text::maybe_quote(&col.name);
    match kind {
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
    }
}

/// `DROP INDEX`.
fn drop_index(
    schema: &Schema,
    if_exists: bool,
    name: &ast::QualifiedName,
    session_ks: Option<&str>,
) -> ExecResult<Applied> {
    let ks_name = keyspace_of(name, session_ks)?;
    let ks = user_keyspace(schema, &ks_name)?;
    let iname = name.name.name.clone();
    let Some(t) = ks
        .tables
        .values()
        .find(|t| t.indexes.iter().any(|i| i.name == iname))
        .cloned()
    else {
        if if_exists {
            return Ok(None);
        }
        return invalid(format!("Index '{ks_name}.{iname}' doesn't exist"));
    };
    let mut nt = (*t).clone();
    nt.indexes.retain(|i| i.name != iname);
    let mut new = (*ks).clone();
    new.tables.insert(nt.name.clone(), Arc::new(nt.clone()));
    Ok(Some((
        schema.with_keyspace(new),
        table_change(SchemaChangeType::Updated, &ks_name, &nt.name),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn system_only() -> Schema {
        let keyspaces = helenus_schema::system_keyspaces()
            .into_iter()
            .map(|ks| (ks.name.clone(), Arc::new(ks)))
            .collect();
        Schema {
            keyspaces,
            version: uuid::Uuid::nil(),
        }
    }

    fn run(schema: &Schema, cql: &str) -> ExecResult<Applied> {
        let parsed = helenus_cql::parse(cql).unwrap();
        apply(
            schema,
            &parsed.statement,
            Some("ks"),
            1_700_000_000_000_000,
            &["datacenter1"],
        )
    }

    /// Applies `cql`, which must change the schema.
    fn applied(schema: &Schema, cql: &str) -> (Schema, SchemaChange) {
        match run(schema, cql) {
            Ok(Some(x)) => x,
            other => panic!("{cql}: {other:?}"),
        }
    }

    fn invalid_message(schema: &Schema, cql: &str) -> String {
        match run(schema, cql) {
            Err(ExecError::Invalid(m)) => m,
            other => panic!("{cql}: expected Invalid, got {other:?}"),
        }
    }

    /// A schema with keyspace `ks` and the statements in `ddl` applied in order.
    fn schema_with(ddl: &[&str]) -> Schema {
        let create = "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}";
        let mut s = applied(&system_only(), create).0;
        for cql in ddl {
            s = applied(&s, cql).0;
        }
        s
    }

    fn table(s: &Schema, name: &str) -> Arc<helenus_schema::TableMeta> {
        s.keyspaces["ks"].tables[name].clone()
    }

    #[test]
    fn create_keyspace_announces_it_and_refuses_a_second_one() {
        let create = "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}";
        let (s, change) = applied(&system_only(), create);
        assert!(s.keyspaces.contains_key("ks"));
        assert_eq!(change, keyspace_change(SchemaChangeType::Created, "ks"));
        assert!(matches!(
            run(&s, create),
            Err(ExecError::AlreadyExists { .. })
        ));
        let again = create.replace("KEYSPACE ks", "KEYSPACE IF NOT EXISTS ks");
        assert!(matches!(run(&s, &again), Ok(None)));
    }

    #[test]
    fn system_keyspaces_cannot_be_created_or_dropped() {
        let create = "CREATE KEYSPACE system_auth WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}";
        assert!(invalid_message(&system_only(), create).contains("not user-modifiable"));
        assert!(matches!(
            run(&system_only(), "DROP KEYSPACE system"),
            Err(ExecError::Unauthorized(_))
        ));
    }

    #[test]
    fn alter_keyspace_to_its_current_state_changes_nothing() {
        let s = schema_with(&[]);
        let same = "ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}";
        assert!(matches!(run(&s, same), Ok(None)));
        let (after, change) = applied(
            &s,
            &same.replace("'replication_factor': 1", "'replication_factor': 3"),
        );
        assert_eq!(change, keyspace_change(SchemaChangeType::Updated, "ks"));
        assert_ne!(
            after.keyspaces["ks"].replication,
            s.keyspaces["ks"].replication
        );
    }

    #[test]
    fn drop_keyspace_of_a_missing_keyspace_needs_if_exists() {
        let s = system_only();
        assert!(invalid_message(&s, "DROP KEYSPACE nope").contains("doesn't exist"));
        assert!(matches!(run(&s, "DROP KEYSPACE IF EXISTS nope"), Ok(None)));
        let (after, change) = applied(&schema_with(&[]), "DROP KEYSPACE ks");
        assert!(!after.keyspaces.contains_key("ks"));
        assert_eq!(change, keyspace_change(SchemaChangeType::Dropped, "ks"));
    }

    #[test]
    fn create_table_uses_the_session_keyspace_and_refuses_duplicates() {
        let s = schema_with(&[]);
        let (after, change) = applied(&s, "CREATE TABLE t (k int PRIMARY KEY, v text)");
        assert_eq!(change, table_change(SchemaChangeType::Created, "ks", "t"));
        assert_eq!(table(&after, "t").columns.len(), 2);
        assert!(matches!(
            run(&after, "CREATE TABLE t (k int PRIMARY KEY)"),
            Err(ExecError::AlreadyExists { .. })
        ));
        let parsed = helenus_cql::parse("CREATE TABLE t2 (k int PRIMARY KEY)").unwrap();
        assert!(
            matches!(apply(&s, &parsed.statement, None, 1_700_000_000_000_000, &["datacenter1"]), Err(ExecError::Invalid(m)) if m.contains("No keyspace"))
        );
    }

    #[test]
    fn alter_table_that_matches_if_not_exists_announces_nothing() {
        let s = schema_with(&["CREATE TABLE t (k int PRIMARY KEY, v text)"]);
        assert!(matches!(
            run(&s, "ALTER TABLE t ADD IF NOT EXISTS v text"),
            Ok(None)
        ));
        let (after, change) = applied(&s, "ALTER TABLE t ADD w int");
        assert_eq!(change, table_change(SchemaChangeType::Updated, "ks", "t"));
        assert!(table(&after, "t").column("w").is_some());
    }

    #[test]
    fn drop_table_names_what_is_missing() {
        let s = schema_with(&[]);
        assert!(invalid_message(&s, "DROP TABLE other.t").contains("Keyspace 'other'"));
        assert!(invalid_message(&s, "DROP TABLE ks.t").contains("Table 'ks.t'"));
        let s = schema_with(&["CREATE TABLE t (k int PRIMARY KEY)"]);
        let (after, change) = applied(&s, "DROP TABLE t");
        assert!(after.keyspaces["ks"].tables.is_empty());
        assert_eq!(change, table_change(SchemaChangeType::Dropped, "ks", "t"));
    }

    #[test]
    fn create_type_refuses_duplicate_fields() {
        let s = schema_with(&[]);
        assert!(
            invalid_message(&s, "CREATE TYPE a (x int, x text)").contains("Duplicate field name x")
        );
        let (after, change) = applied(&s, "CREATE TYPE a (x int, y text)");
        assert_eq!(change, type_change(SchemaChangeType::Created, "ks", "a"));
        assert_eq!(after.keyspaces["ks"].types["a"].fields.len(), 2);
    }

    #[test]
    fn alter_type_reaches_the_tables_that_use_it() {
        let s = schema_with(&[
            "CREATE TYPE a (x int)",
            "CREATE TABLE t (k int PRIMARY KEY, v frozen<a>)",
        ]);
        let (after, change) = applied(&s, "ALTER TYPE a ADD y text");
        assert_eq!(change, type_change(SchemaChangeType::Updated, "ks", "a"));
        let Some(CqlType::Udt { def, .. }) =
            table(&after, "t").column("v").map(|c| c.cql_type.clone())
        else {
            panic!("v is a UDT column");
        };
        assert_eq!(def.fields.len(), 2);
        assert!(matches!(
            run(&after, "ALTER TYPE a RENAME IF EXISTS nope TO z"),
            Ok(None)
        ));
        assert!(matches!(
            run(&after, "ALTER TYPE a ADD IF NOT EXISTS y text"),
            Ok(None)
        ));
    }

    #[test]
    fn drop_type_refuses_a_type_in_use() {
        let s = schema_with(&[
            "CREATE TYPE a (x int)",
            "CREATE TABLE t (k int PRIMARY KEY, v frozen<a>)",
        ]);
        assert!(invalid_message(&s, "DROP TYPE a").contains("still used by a table"));
        let s = schema_with(&["CREATE TYPE a (x int)"]);
        let (after, change) = applied(&s, "DROP TYPE a");
        assert!(after.keyspaces["ks"].types.is_empty());
        assert_eq!(change, type_change(SchemaChangeType::Dropped, "ks", "a"));
    }

    #[test]
    fn create_index_names_and_targets_it_as_cassandra_does() {
        let s = schema_with(&["CREATE TABLE t (k int PRIMARY KEY, v int, l list<int>)"]);
        let (after, change) = applied(&s, "CREATE INDEX ON t (l)");
        assert_eq!(change, table_change(SchemaChangeType::Updated, "ks", "t"));
        let t = table(&after, "t");
        let index = t.indexes.iter().find(|i| i.name == "t_l_idx");
        assert_eq!(
            index
                .and_then(|i| i.options.get("target"))
                .map(String::as_str),
            Some("values(l)")
        );
        assert!(
            invalid_message(&after, "CREATE INDEX other ON t (values(l))").contains("duplicate")
        );
        assert!(matches!(
            run(&after, "CREATE INDEX IF NOT EXISTS t_l_idx ON t (v)"),
            Ok(None)
        ));
    }

    #[test]
    fn drop_index_removes_it_from_its_table() {
        let s = schema_with(&[
            "CREATE TABLE t (k int PRIMARY KEY, v int)",
            "CREATE INDEX vi ON t (v)",
        ]);
        let (after, change) = applied(&s, "DROP INDEX vi");
        assert_eq!(change, table_change(SchemaChangeType::Updated, "ks", "t"));
        assert!(table(&after, "t").indexes.is_empty());
        assert!(invalid_message(&after, "DROP INDEX vi").contains("doesn't exist"));
    }

    #[test]
    fn statements_without_a_schema_rule_are_refused() {
        let s = schema_with(&["CREATE TABLE t (k int PRIMARY KEY)"]);
        assert!(invalid_message(&s, "TRUNCATE t").contains("not supported"));
        assert!(matches!(
            run(&s, "DROP MATERIALIZED VIEW IF EXISTS v"),
            Ok(None)
        ));
    }
}
