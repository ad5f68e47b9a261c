//! Tables: building a table from CREATE TABLE, ALTER TABLE, and the `WITH` table properties.

use super::check_name;
use super::types::check_declared_type;
use crate::exec::error::{invalid, ExecError, ExecResult};
use crate::exec::values::resolve_type;
use helenus_cql::ast::{self, AlterTableAction, CreateTableStatement};
use helenus_schema::{
    ClusteringOrder, ColumnKind, ColumnMeta, KeyspaceMeta, TableKind, TableMeta, TableParams,
};
use helenus_types::CqlType;

mod properties;
pub use properties::apply_table_properties;

/// A non-frozen UDT is stored field by field; Cassandra cannot store a non-frozen collection
/// inside one of those fields. `suffix` completes the message as CREATE or ALTER words it.
fn check_udt_nesting(ty: &CqlType, suffix: &str) -> ExecResult<()> {
    if let CqlType::Udt { def, frozen: false } = ty {
        if def.fields.iter().any(|(_, f)| f.is_multi_cell()) {
            return invalid(format!(
                "Non-frozen UDTs with nested non-frozen collections are not supported{suffix}"
            ));
        }
    }
    Ok(())
}

fn check_pk_type(name: &str, t: &CqlType) -> ExecResult<()> {
    if t.is_multi_cell() {
        return invalid(format!(
            "Invalid non-frozen collection type {t} for PRIMARY KEY component {name}"
        ));
    }
    if super::index::references_duration(t) {
        return invalid(format!(
            "duration type is not supported for PRIMARY KEY column '{name}'"
        ));
    }
    if t.is_counter() {
        return invalid(format!(
            "counter type is not supported for PRIMARY KEY column '{name}'"
        ));
    }
    Ok(())
}

/// Whether a collection type has a counter somewhere inside (Cassandra rejects it).
fn counter_inside(t: &CqlType) -> bool {
    let nested = |e: &CqlType| e.is_counter() || counter_inside(e);
    match t {
        CqlType::List { element, .. } | CqlType::Set { element, .. } => nested(element),
        CqlType::Map { key, value, .. } => nested(key) || nested(value),
        _ => false,
    }
}

pub fn build_table(ks: &KeyspaceMeta, s: &CreateTableStatement) -> ExecResult<TableMeta> {
    let tname = s.name.name.name.clone();
    check_name("Table", &tname)?;
    let pk = declared_primary_key(s, &tname)?;
    let mut columns = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (id, c) in s.columns.iter().enumerate() {
        if !seen.insert(c.name.name.clone()) {
            return invalid(format!(
                "Duplicate column '{}' declaration for table {}.{}",
                c.name.name, ks.name, tname
            ));
        }
        columns.push(declared_column(ks, s, &pk, id, c)?);
    }
    check_primary_key_columns(&pk, &columns)?;
    check_clustering_order(s, &pk)?;
    let has_counter = check_counters(&columns)?;
    let compact_flags = if s.options.compact_storage {
        Some(super::compact::layout(&mut columns)?)
    } else {
        None
    };
    if pk.clustering.is_empty()
        && columns.iter().any(|c| c.kind == ColumnKind::Static)
        && compact_flags.is_none()
    {
        return invalid("Static columns are only useful (and thus allowed) if the table has at least one clustering column".to_string());
    }
    let mut params = TableParams::default();
    apply_table_properties(&mut params, &s.options.properties)?;
    if has_counter && params.default_time_to_live > 0 {
        return invalid("Cannot set default_time_to_live on a table with counters");
    }
    let mut table = TableMeta::new(
        &ks.name,
        &tname,
        uuid::Uuid::new_v4(),
        TableKind::User,
        columns,
        params,
    );
    if let Some(flags) = compact_flags {
        table.set_flags(flags);
    }
    Ok(table)
}

/// The one PRIMARY KEY of a CREATE TABLE.
fn declared_primary_key(s: &CreateTableStatement, tname: &str) -> ExecResult<ast::PrimaryKey> {
    let pk = s.primary_key.clone().ok_or_else(|| {
        ExecError::Invalid(format!(
            "No PRIMARY KEY specifed for table '{tname}' (exactly one required)"
        ))
    })?;
    if s.primary_key_twice {
        return invalid(format!(
            "Multiple PRIMARY KEY specified for table '{tname}' (exactly one required)"
        ));
    }
    if s.columns.iter().filter(|c| c.primary_key).count() > 1 {
        return invalid("Multiple PRIMARY KEYs specifed (exactly one required)".to_string());
    }
    Ok(pk)
}

/// One declared column: its resolved type, its kind and position in the key, its order.
fn declared_column(
    ks: &KeyspaceMeta,
    s: &CreateTableStatement,
    pk: &ast::PrimaryKey,
    id: usize,
    c: &ast::ColumnDef,
) -> ExecResult<ColumnMeta> {
    check_declared_type(&c.ty)?;
    let ty = resolve_type(&c.ty, Some(ks))?;
    check_udt_nesting(&ty, "")?;
    let pk_pos = pk.partition_key.iter().position(|p| p.name == c.name.name);
    let ck_pos = pk.clustering.iter().position(|p| p.name == c.name.name);
    let (kind, position) = match (pk_pos, ck_pos) {
        (Some(p), _) => (ColumnKind::PartitionKey, p as i32),
        (_, Some(p)) => (ColumnKind::Clustering, p as i32),
        _ if c.is_static => (ColumnKind::Static, -1),
        _ => (ColumnKind::Regular, -1),
    };
    if kind.is_primary_key() {
        check_pk_type(&c.name.name, &ty)?;
        if c.is_static {
            return invalid(format!(
                "Static column {} cannot be part of the PRIMARY KEY",
                c.name.name
            ));
        }
    }
    let order = if kind == ColumnKind::Clustering {
        match s
            .options
            .clustering_order
            .iter()
            .find(|(n, _)| n.name == c.name.name)
        {
            Some((_, ast::OrderDirection::Desc)) => ClusteringOrder::Desc,
            _ => ClusteringOrder::Asc,
        }
    } else {
        ClusteringOrder::None
    };
    Ok(ColumnMeta {
        name: c.name.name.clone(),
        cql_type: ty,
        kind,
        position,
        order,
        id: id as u32,
    })
}

/// Every PRIMARY KEY name is a declared column, named once.
fn check_primary_key_columns(pk: &ast::PrimaryKey, columns: &[ColumnMeta]) -> ExecResult<()> {
    for k in pk.partition_key.iter().chain(pk.clustering.iter()) {
        if !columns.iter().any(|c| c.name == k.name) {
            return invalid(format!(
                "Unknown definition {} referenced in PRIMARY KEY",
                k.name
            ));
        }
    }
    let mut dup = std::collections::HashSet::new();
    for k in pk.partition_key.iter().chain(pk.clustering.iter()) {
        if !dup.insert(&k.name) {
            return invalid(format!(
                "Duplicate definition for {} in PRIMARY KEY",
                k.name
            ));
        }
    }
    Ok(())
}

/// CLUSTERING ORDER names clustering columns only, in their order.
fn check_clustering_order(s: &CreateTableStatement, pk: &ast::PrimaryKey) -> ExecResult<()> {
    for (n, _) in &s.options.clustering_order {
        if !pk.clustering.iter().any(|c| c.name == n.name) {
            return invalid(format!("Only clustering key columns can be defined in CLUSTERING ORDER directive: {} is not a clustering column", n.name));
        }
    }
    let order_names: Vec<&str> = s
        .options
        .clustering_order
        .iter()
        .map(|(n, _)| n.name.as_str())
        .collect();
    let ck_names: Vec<&str> = pk
        .clustering
        .iter()
        .map(|c| c.name.as_str())
        .take(order_names.len())
        .collect();
    if !order_names.is_empty() && order_names != ck_names {
        return invalid("The order of columns in the CLUSTERING ORDER directive must match that of the clustering columns".to_string());
    }
    Ok(())
}

/// Counters are neither inside collections nor mixed with other regular columns; true when the
/// table has counters.
fn check_counters(columns: &[ColumnMeta]) -> ExecResult<bool> {
    for c in columns {
        if counter_inside(&c.cql_type) {
            return invalid(format!(
                "Counters are not allowed inside collections: {}",
                c.cql_type
            ));
        }
    }
    let has_counter = columns.iter().any(|c| c.cql_type.is_counter());
    let non_counter_regular = columns
        .iter()
        .any(|c| !c.kind.is_primary_key() && !c.cql_type.is_counter());
    if has_counter && non_counter_regular {
        return invalid("Cannot mix counter and non counter columns in the same table");
    }
    Ok(has_counter)
}

pub(super) fn alter_table(
    ks: &KeyspaceMeta,
    t: &TableMeta,
    action: &AlterTableAction,
    now_us: i64,
) -> ExecResult<TableMeta> {
    let mut edit = TableEdit {
        columns: t.columns.clone(),
        params: t.params.clone(),
        next_id: t.next_column_id,
        dropped: t.dropped_columns.clone(),
        now_us,
    };
    match action {
        AlterTableAction::Add {
            if_not_exists,
            columns,
        } => edit.add_columns(ks, t, columns, *if_not_exists)?,
        AlterTableAction::Drop {
            if_exists, columns, ..
        } => edit.drop_columns(t, columns, *if_exists)?,
        AlterTableAction::Rename { renames, .. } => edit.rename_columns(t, renames)?,
        AlterTableAction::AlterType { column, .. } => {
            return invalid(format!(
                "Altering column types is no longer supported (column {})",
                column.name
            ));
        }
        AlterTableAction::DropCompactStorage if !t.is_compact() => {
            return invalid("Cannot DROP COMPACT STORAGE as table does not use COMPACT STORAGE")
        }
        AlterTableAction::DropCompactStorage => {
            // The hidden columns become ordinary ones; the data stays as it is.
            return Ok(edit.into_table(t, false));
        }
        AlterTableAction::Mask { .. } => {
            return invalid("Dynamic data masking is not supported by Helenus yet")
        }
        AlterTableAction::With(opts) => {
            apply_table_properties(&mut edit.params, &opts.properties)?;
            if !opts.clustering_order.is_empty() {
                return Err(ExecError::Syntax("Cannot alter clustering order".into()));
            }
        }
    }
    Ok(edit.into_table(t, true))
}

/// A table's definition while an ALTER TABLE changes it.
struct TableEdit {
    columns: Vec<ColumnMeta>,
    params: TableParams,
    next_id: u32,
    dropped: std::collections::BTreeMap<String, (CqlType, i64)>,
    /// The statement's time: when the columns it drops were dropped.
    now_us: i64,
}

impl TableEdit {
    /// The altered table; `keep_flags` false turns a COMPACT STORAGE table into a CQL one.
    fn into_table(self, t: &TableMeta, keep_flags: bool) -> TableMeta {
        let mut nt = TableMeta::new(
            &t.keyspace,
            &t.name,
            t.id,
            t.kind,
            self.columns,
            self.params,
        );
        nt.indexes = t.indexes.clone();
        if keep_flags {
            nt.set_flags(t.flags.clone());
        }
        nt.next_column_id = self.next_id.max(nt.next_column_id);
        nt.dropped_columns = self.dropped;
        nt
    }

    /// `ADD`: new regular or static columns, compatible with any dropped one of the same name.
    fn add_columns(
        &mut self,
        ks: &KeyspaceMeta,
        t: &TableMeta,
        adds: &[ast::ColumnDef],
        if_not_exists: bool,
    ) -> ExecResult<()> {
        if t.is_compact() {
            return invalid("Cannot add new column to a COMPACT STORAGE table");
        }
        for c in adds {
            if self.columns.iter().any(|x| x.name == c.name.name) {
                if if_not_exists {
                    continue;
                }
                return invalid(format!("Column with name '{}' already exists", c.name.name));
            }
            check_declared_type(&c.ty)?;
            let ty = resolve_type(&c.ty, Some(ks))?;
            check_udt_nesting(&ty, &format!(" for column {}", c.name.name))?;
            if let Some((old, _)) = self.dropped.get(&c.name.name) {
                // Old cells of the dropped column may still be on disk under its name.
                if old.to_string() != ty.to_string() {
                    return invalid(format!(
                        "Cannot add a column '{}' of type {ty}, incompatible with previously dropped column '{}' of type {old}",
                        c.name.name, c.name.name
                    ));
                }
            }
            if c.is_static && t.clustering_len() == 0 {
                return invalid("Static columns are only useful (and thus allowed) if the table has at least one clustering column");
            }
            if ty.is_counter() != t.is_counter_table() {
                return Err(ExecError::Config(if ty.is_counter() {
                    format!(
                        "Cannot add a counter column ({}) in a non counter column family",
                        c.name.name
                    )
                } else {
                    format!(
                        "Cannot add a non counter column ({}) in a counter column family",
                        c.name.name
                    )
                }));
            }
            self.columns.push(ColumnMeta {
                name: c.name.name.clone(),
                cql_type: ty,
                kind: if c.is_static {
                    ColumnKind::Static
                } else {
                    ColumnKind::Regular
                },
                position: -1,
                order: ClusteringOrder::None,
                id: self.next_id,
            });
            self.next_id += 1;
        }
        Ok(())
    }

    /// `DROP`: non-key columns, remembered (with when) so a re-add must keep their type.
    fn drop_columns(
        &mut self,
        t: &TableMeta,
        drops: &[ast::Ident],
        if_exists: bool,
    ) -> ExecResult<()> {
        if t.is_compact() && t.is_dense() {
            return invalid("Cannot drop columns from a non-CQL3 table");
        }
        for d in drops {
            let visible = |c: &ColumnMeta| c.name == d.name && !t.is_hidden(c);
            let Some(pos) = self.columns.iter().position(visible) else {
                if if_exists {
                    continue;
                }
                return invalid(format!(
                    "Column {} was not found in table {}",
                    d.name, t.name
                ));
            };
            if self.columns[pos].kind.is_primary_key() {
                return invalid(format!("Cannot drop PRIMARY KEY part {}", d.name));
            }
            let gone = self.columns.remove(pos);
            self.dropped.insert(gone.name, (gone.cql_type, self.now_us));
        }
        Ok(())
    }

    /// `RENAME`: key columns only, to a free name.
    fn rename_columns(
        &mut self,
        t: &TableMeta,
        renames: &[(ast::Ident, ast::Ident)],
    ) -> ExecResult<()> {
        // Cassandra 5.0 rejects an unknown column even with IF EXISTS (which names the table).
        for (from, to) in renames {
            let visible = |c: &ColumnMeta| c.name == from.name && !t.is_hidden(c);
            let Some(pos) = self.columns.iter().position(visible) else {
                return invalid(format!(
                    "Undefined column name {} in table {}.{}",
                    from.name, t.keyspace, t.name
                ));
            };
            if !self.columns[pos].kind.is_primary_key() {
                return invalid(format!(
                    "Cannot rename non PRIMARY KEY column {}",
                    from.name
                ));
            }
            if self.columns.iter().any(|c| c.name == to.name) {
                return invalid(format!("Cannot rename column {} to {} in table '{}'; another column with that name already exists", from.name, to.name, t.name));
            }
            self.columns[pos].name = to.name.clone();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_inside_collections_are_found() {
        let counter = CqlType::Native(helenus_types::NativeType::Counter);
        let list = CqlType::List {
            element: Box::new(counter.clone()),
            frozen: false,
        };
        assert!(counter_inside(&list));
        let map = CqlType::Map {
            key: Box::new(CqlType::Native(helenus_types::NativeType::Int)),
            value: Box::new(list),
            frozen: true,
        };
        assert!(counter_inside(&map));
        assert!(!counter_inside(&counter));
    }

    fn keyspace() -> KeyspaceMeta {
        KeyspaceMeta::new(
            "ks",
            helenus_schema::KeyspaceKind::User,
            Default::default(),
            true,
        )
    }

    fn create(ddl: &str) -> ExecResult<TableMeta> {
        let ast::Statement::CreateTable(c) = helenus_cql::parse(ddl).unwrap().statement else {
            panic!("not a CREATE TABLE: {ddl}")
        };
        build_table(&keyspace(), &c)
    }

    fn alter(t: &TableMeta, ddl: &str) -> ExecResult<TableMeta> {
        let ast::Statement::AlterTable(a) = helenus_cql::parse(ddl).unwrap().statement else {
            panic!("not an ALTER TABLE: {ddl}")
        };
        alter_table(&keyspace(), t, &a.action, 1_700_000_000_000_000)
    }

    fn refusal(r: ExecResult<TableMeta>) -> String {
        match r {
            Err(ExecError::Invalid(m) | ExecError::Config(m) | ExecError::Syntax(m)) => m,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn create_table_checks_keys_order_and_counters() {
        let t = create("CREATE TABLE t (k int, c int, v text, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)").unwrap();
        assert_eq!(t.column("c").unwrap().order, ClusteringOrder::Desc);
        assert_eq!(t.column("v").unwrap().kind, ColumnKind::Regular);
        assert_eq!(
            refusal(create("CREATE TABLE t (k int PRIMARY KEY, v int) WITH CLUSTERING ORDER BY (v ASC)")),
            "Only clustering key columns can be defined in CLUSTERING ORDER directive: v is not a clustering column"
        );
        assert_eq!(
            refusal(create(
                "CREATE TABLE t (k int PRIMARY KEY, n counter, v int)"
            )),
            "Cannot mix counter and non counter columns in the same table"
        );
        assert_eq!(
            refusal(create("CREATE TABLE t (k int, v int, PRIMARY KEY (k, x))")),
            "Unknown definition x referenced in PRIMARY KEY"
        );
        assert!(
            refusal(create("CREATE TABLE t (k int PRIMARY KEY, s int static)"))
                .starts_with("Static columns are only useful")
        );
    }

    #[test]
    fn alter_table_adds_drops_and_renames() {
        let t = create("CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c))").unwrap();
        let added = alter(&t, "ALTER TABLE t ADD w text").unwrap();
        assert!(added.column("w").is_some());
        assert!(added.next_column_id > t.next_column_id);
        let dropped = alter(&added, "ALTER TABLE t DROP w").unwrap();
        assert!(dropped.column("w").is_none() && dropped.dropped_columns.contains_key("w"));
        assert!(refusal(alter(&dropped, "ALTER TABLE t ADD w int"))
            .contains("incompatible with previously dropped column"));
        assert_eq!(
            refusal(alter(&t, "ALTER TABLE t DROP k")),
            "Cannot drop PRIMARY KEY part k"
        );
        let renamed = alter(&t, "ALTER TABLE t RENAME c TO d").unwrap();
        assert!(renamed.column("d").is_some() && renamed.column("c").is_none());
        assert_eq!(
            refusal(alter(&t, "ALTER TABLE t RENAME v TO w")),
            "Cannot rename non PRIMARY KEY column v"
        );
    }
}
