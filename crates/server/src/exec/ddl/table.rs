//! Tables: building a table from CREATE TABLE, ALTER TABLE, and the `WITH` table properties.

use super::types::check_declared_type;
use super::{check_name, map_value, scalar};
use crate::exec::error::{invalid, ExecError, ExecResult};
use crate::exec::values::resolve_type;
use helenus_cql::ast::{self, AlterTableAction, CreateTableStatement, OptionValue, Properties};
use helenus_schema::{
    ClusteringOrder, ColumnKind, ColumnMeta, CompactionParams, CompressionParams, KeyspaceMeta,
    TableKind, TableMeta, TableParams,
};
use helenus_types::CqlType;
use std::collections::BTreeMap;

/// Applies `WITH` properties to table params, with Cassandra's validation and defaults.
pub fn apply_table_properties(params: &mut TableParams, props: &Properties) -> ExecResult<()> {
    let mut seen = std::collections::HashSet::new();
    for (name, _) in props {
        if !seen.insert(name.as_str()) {
            return Err(ExecError::Syntax(format!(
                "Multiple definitions for property '{name}'"
            )));
        }
    }
    let num = |v: &OptionValue, name: &str| -> ExecResult<f64> {
        scalar(v, name)?
            .parse::<f64>()
            .map_err(|_| ExecError::Syntax(format!("Invalid double value for '{name}'")))
    };
    let int = |v: &OptionValue, name: &str| -> ExecResult<i32> {
        scalar(v, name)?
            .parse::<i32>()
            .map_err(|_| ExecError::Syntax(format!("Invalid integer value for '{name}'")))
    };
    let boolean = |v: &OptionValue, name: &str| -> ExecResult<bool> {
        match scalar(v, name)?.to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(ExecError::Syntax(format!(
                "Invalid boolean value for '{name}'"
            ))),
        }
    };
    for (name, v) in props {
        match name.as_str() {
            "comment" => params.comment = scalar(v, name)?,
            "default_time_to_live" => {
                let ttl = int(v, name)?;
                if ttl < 0 {
                    return Err(ExecError::Config(
                        "default_time_to_live must be greater than or equal to 0 (got ".to_string()
                            + &ttl.to_string()
                            + ")",
                    ));
                }
                params.default_time_to_live = ttl
            }
            "gc_grace_seconds" => {
                let g = int(v, name)?;
                if g < 0 {
                    return Err(ExecError::Config(format!(
                        "gc_grace_seconds must be greater than or equal to 0 (got {g})"
                    )));
                }
                params.gc_grace_seconds = g
            }
            "bloom_filter_fp_chance" => {
                let p = num(v, name)?;
                if p <= 0.0 || p > 1.0 {
                    return Err(ExecError::Config(format!("bloom_filter_fp_chance must be larger than 0.0 and less than or equal to 1.0 (got {p})")));
                }
                params.bloom_filter_fp_chance = p
            }
            "crc_check_chance" => params.crc_check_chance = num(v, name)?,
            "memtable_flush_period_in_ms" => params.memtable_flush_period_in_ms = int(v, name)?,
            "min_index_interval" => params.min_index_interval = int(v, name)?,
            "max_index_interval" => params.max_index_interval = int(v, name)?,
            "speculative_retry" => params.speculative_retry = scalar(v, name)?,
            "additional_write_policy" => params.additional_write_policy = scalar(v, name)?,
            "read_repair" => params.read_repair = scalar(v, name)?.to_uppercase(),
            "cdc" => params.cdc = Some(boolean(v, name)?),
            "allow_auto_snapshot" => params.allow_auto_snapshot = Some(boolean(v, name)?),
            "incremental_backups" => params.incremental_backups = Some(boolean(v, name)?),
            "memtable" => {
                // Only the configurations a stock cassandra.yaml defines.
                let m = scalar(v, name)?;
                if !matches!(m.as_str(), "default" | "skiplist" | "trie") {
                    return Err(ExecError::Config(format!(
                        "Memtable configuration \"{m}\" not found."
                    )));
                }
                params.memtable = Some(m)
            }
            "caching" => {
                let m = map_value(v, name)?;
                let mut c = BTreeMap::new();
                c.insert(
                    "keys".to_string(),
                    m.get("keys")
                        .cloned()
                        .unwrap_or_else(|| "ALL".into())
                        .to_uppercase(),
                );
                c.insert(
                    "rows_per_partition".to_string(),
                    m.get("rows_per_partition")
                        .cloned()
                        .unwrap_or_else(|| "NONE".into())
                        .to_uppercase(),
                );
                params.caching = c;
            }
            "compaction" => {
                params.compaction = CompactionParams::from_cql(map_value(v, name)?)?.into_options();
            }
            "compression" => {
                params.compression =
                    CompressionParams::from_cql(map_value(v, name)?)?.into_options();
            }
            "extensions" => {
                params.extensions = map_value(v, name)?
                    .into_iter()
                    .map(|(k, v)| (k, v.into_bytes()))
                    .collect();
            }
            "id" => {}
            other => return Err(ExecError::Syntax(format!("Unknown property '{other}'"))),
        }
    }
    if params.max_index_interval < params.min_index_interval {
        return Err(ExecError::Config(format!(
            "max_index_interval must be greater than or equal to min_index_interval ({}) (got {})",
            params.min_index_interval, params.max_index_interval
        )));
    }
    Ok(())
}

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
    let pk = s.primary_key.clone().ok_or_else(|| {
        ExecError::Invalid(format!(
            "No PRIMARY KEY specifed for table '{tname}' (exactly one required)"
        ))
    })?;
    let inline_count = s.columns.iter().filter(|c| c.primary_key).count();
    if s.primary_key_twice {
        return invalid(format!(
            "Multiple PRIMARY KEY specified for table '{tname}' (exactly one required)"
        ));
    }
    if inline_count > 1 {
        return invalid("Multiple PRIMARY KEYs specifed (exactly one required)".to_string());
    }
    let mut columns = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (id, c) in s.columns.iter().enumerate() {
        if !seen.insert(c.name.name.clone()) {
            return invalid(format!(
                "Duplicate column '{}' declaration for table {}.{}",
                c.name.name, ks.name, tname
            ));
        }
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
        columns.push(ColumnMeta {
            name: c.name.name.clone(),
            cql_type: ty,
            kind,
            position,
            order,
            id: id as u32,
        });
    }
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
    for c in &columns {
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

pub(super) fn alter_table(
    ks: &KeyspaceMeta,
    t: &TableMeta,
    action: &AlterTableAction,
) -> ExecResult<TableMeta> {
    let mut columns = t.columns.clone();
    let mut params = t.params.clone();
    let mut next_id = t.next_column_id;
    let mut dropped = t.dropped_columns.clone();
    match action {
        AlterTableAction::Add {
            if_not_exists,
            columns: adds,
        } => {
            if t.is_compact() {
                return invalid("Cannot add new column to a COMPACT STORAGE table");
            }
            for c in adds {
                if columns.iter().any(|x| x.name == c.name.name) {
                    if *if_not_exists {
                        continue;
                    }
                    return invalid(format!("Column with name '{}' already exists", c.name.name));
                }
                check_declared_type(&c.ty)?;
                let ty = resolve_type(&c.ty, Some(ks))?;
                check_udt_nesting(&ty, &format!(" for column {}", c.name.name))?;
                if let Some((old, _)) = dropped.get(&c.name.name) {
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
                columns.push(ColumnMeta {
                    name: c.name.name.clone(),
                    cql_type: ty,
                    kind: if c.is_static {
                        ColumnKind::Static
                    } else {
                        ColumnKind::Regular
                    },
                    position: -1,
                    order: ClusteringOrder::None,
                    id: next_id,
                });
                next_id += 1;
            }
        }
        AlterTableAction::Drop {
            if_exists,
            columns: drops,
            ..
        } => {
            if t.is_compact() && t.is_dense() {
                return invalid("Cannot drop columns from a non-CQL3 table");
            }
            for d in drops {
                let visible = |c: &ColumnMeta| c.name == d.name && !t.is_hidden(c);
                let Some(pos) = columns.iter().position(visible) else {
                    if *if_exists {
                        continue;
                    }
                    return invalid(format!(
                        "Column {} was not found in table {}",
                        d.name, t.name
                    ));
                };
                if columns[pos].kind.is_primary_key() {
                    return invalid(format!("Cannot drop PRIMARY KEY part {}", d.name));
                }
                let gone = columns.remove(pos);
                dropped.insert(gone.name, (gone.cql_type, helenus_types::now_micros()));
            }
        }
        AlterTableAction::Rename { renames, .. } => {
            // Cassandra 5.0 rejects an unknown column even with IF EXISTS (which names the table).
            for (from, to) in renames {
                let visible = |c: &ColumnMeta| c.name == from.name && !t.is_hidden(c);
                let Some(pos) = columns.iter().position(visible) else {
                    return invalid(format!(
                        "Undefined column name {} in table {}.{}",
                        from.name, t.keyspace, t.name
                    ));
                };
                if !columns[pos].kind.is_primary_key() {
                    return invalid(format!(
                        "Cannot rename non PRIMARY KEY column {}",
                        from.name
                    ));
                }
                if columns.iter().any(|c| c.name == to.name) {
                    return invalid(format!("Cannot rename column {} to {} in table '{}'; another column with that name already exists", from.name, to.name, t.name));
                }
                columns[pos].name = to.name.clone();
            }
        }
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
            let mut nt = TableMeta::new(&t.keyspace, &t.name, t.id, t.kind, columns, params);
            nt.indexes = t.indexes.clone();
            nt.next_column_id = next_id.max(nt.next_column_id);
            nt.dropped_columns = dropped;
            return Ok(nt);
        }
        AlterTableAction::Mask { .. } => {
            return invalid("Dynamic data masking is not supported by Helenus yet")
        }
        AlterTableAction::With(opts) => {
            apply_table_properties(&mut params, &opts.properties)?;
            if !opts.clustering_order.is_empty() {
                return Err(ExecError::Syntax("Cannot alter clustering order".into()));
            }
        }
    }
    let mut nt = TableMeta::new(&t.keyspace, &t.name, t.id, t.kind, columns, params);
    nt.indexes = t.indexes.clone();
    nt.set_flags(t.flags.clone());
    nt.next_column_id = next_id.max(nt.next_column_id);
    nt.dropped_columns = dropped;
    Ok(nt)
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
}
