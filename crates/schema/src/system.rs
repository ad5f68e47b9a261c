//! The system keyspaces, described from a golden file recorded from Apache Cassandra 5.0.9
//! (`golden/cassandra-5.0-system-schema.json`: the rows of system_schema.* and system_virtual_schema.*).
//! Serving these definitions verbatim is what makes drivers' and cqlsh's metadata code work unchanged.

use crate::model::{
    ClusteringOrder, ColumnKind, ColumnMeta, KeyspaceKind, KeyspaceMeta, TableKind, TableMeta,
};
use crate::options::{ReplicationParams, TableParams};
use crate::type_string::parse_type_string;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use uuid::Uuid;

const GOLDEN: &str = include_str!("../golden/cassandra-5.0-system-schema.json");

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn string_map(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// Table options from a `system_schema.tables` row (missing values fall back to the defaults).
pub(crate) fn params_from_row(row: &Value) -> TableParams {
    let d = TableParams::default();
    let f64_of = |k: &str, dflt: f64| row.get(k).and_then(Value::as_f64).unwrap_or(dflt);
    let i32_of = |k: &str, dflt: i32| {
        row.get(k)
            .and_then(Value::as_i64)
            .map(|x| x as i32)
            .unwrap_or(dflt)
    };
    let opt_bool = |k: &str| row.get(k).and_then(Value::as_bool);
    TableParams {
        additional_write_policy: row
            .get("additional_write_policy")
            .and_then(Value::as_str)
            .unwrap_or(&d.additional_write_policy)
            .to_string(),
        allow_auto_snapshot: opt_bool("allow_auto_snapshot"),
        bloom_filter_fp_chance: f64_of("bloom_filter_fp_chance", d.bloom_filter_fp_chance),
        caching: row
            .get("caching")
            .map(|v| string_map(Some(v)))
            .unwrap_or(d.caching),
        cdc: opt_bool("cdc"),
        comment: str_of(row, "comment").to_string(),
        compaction: row
            .get("compaction")
            .map(|v| string_map(Some(v)))
            .unwrap_or(d.compaction),
        compression: row
            .get("compression")
            .map(|v| string_map(Some(v)))
            .unwrap_or(d.compression),
        crc_check_chance: f64_of("crc_check_chance", d.crc_check_chance),
        default_time_to_live: i32_of("default_time_to_live", 0),
        extensions: BTreeMap::new(),
        gc_grace_seconds: i32_of("gc_grace_seconds", d.gc_grace_seconds),
        incremental_backups: opt_bool("incremental_backups"),
        max_index_interval: i32_of("max_index_interval", d.max_index_interval),
        memtable: row
            .get("memtable")
            .and_then(Value::as_str)
            .map(str::to_string),
        memtable_flush_period_in_ms: i32_of("memtable_flush_period_in_ms", 0),
        min_index_interval: i32_of("min_index_interval", d.min_index_interval),
        read_repair: row
            .get("read_repair")
            .and_then(Value::as_str)
            .unwrap_or("BLOCKING")
            .to_string(),
        speculative_retry: row
            .get("speculative_retry")
            .and_then(Value::as_str)
            .unwrap_or("99p")
            .to_string(),
    }
}

pub(crate) fn column_from_row(row: &Value, id: u32, ks: &KeyspaceMeta) -> Option<ColumnMeta> {
    let cql_type = parse_type_string(str_of(row, "type"), ks).ok()?;
    let order = match str_of(row, "clustering_order") {
        "asc" => ClusteringOrder::Asc,
        "desc" => ClusteringOrder::Desc,
        _ => ClusteringOrder::None,
    };
    Some(ColumnMeta {
        name: str_of(row, "column_name").to_string(),
        cql_type,
        kind: ColumnKind::parse(str_of(row, "kind"))?,
        position: row.get("position").and_then(Value::as_i64).unwrap_or(-1) as i32,
        order,
        id,
    })
}

/// The system keyspaces exactly as Cassandra 5.0 describes them.
pub fn system_keyspaces() -> Vec<KeyspaceMeta> {
    // The golden file is compiled in and checked by a unit test, so a parse failure here is a build
    // defect; fall back to no system keyspaces rather than crash a running node.
    let golden: Value = serde_json::from_str(GOLDEN).unwrap_or(Value::Null);
    let mut out: BTreeMap<String, KeyspaceMeta> = BTreeMap::new();
    let empty = Vec::new();
    let arr = |k: &str| {
        golden
            .get(k)
            .and_then(Value::as_array)
            .unwrap_or(&empty)
            .clone()
    };
    for ks in arr("keyspaces") {
        let name = str_of(&ks, "keyspace_name");
        let repl = string_map(ks.get("replication"));
        out.insert(
            name.to_string(),
            KeyspaceMeta::new(name, KeyspaceKind::System, repl, true),
        );
    }
    for ks in arr("virtual_keyspaces") {
        let name = str_of(&ks, "keyspace_name");
        let repl = ReplicationParams::local().into_options();
        out.insert(
            name.to_string(),
            KeyspaceMeta::new(name, KeyspaceKind::Virtual, repl, false),
        );
    }
    let columns = arr("columns");
    let vcolumns = arr("virtual_columns");
    let mut add_tables = |tables: Vec<Value>, cols: &[Value], kind: TableKind| {
        for t in tables {
            let ks_name = str_of(&t, "keyspace_name");
            let tname = str_of(&t, "table_name");
            let Some(ks) = out.get_mut(ks_name) else {
                continue;
            };
            let tcols: Vec<ColumnMeta> = cols
                .iter()
                .filter(|c| {
                    str_of(c, "keyspace_name") == ks_name && str_of(c, "table_name") == tname
                })
                .enumerate()
                .filter_map(|(i, c)| column_from_row(c, i as u32, ks))
                .collect();
            let id = t
                .get("id")
                .and_then(Value::as_str)
                .and_then(|s| Uuid::parse_str(s).ok())
                .unwrap_or_else(|| {
                    Uuid::new_v5(
                        &Uuid::NAMESPACE_OID,
                        format!("{ks_name}.{tname}").as_bytes(),
                    )
                });
            let mut params = params_from_row(&t);
            if kind == TableKind::Virtual {
                params.comment = str_of(&t, "comment").to_string();
            }
            let mut meta = TableMeta::new(ks_name, tname, id, kind, tcols, params);
            if let Some(flags) = t.get("flags").and_then(Value::as_array) {
                meta.set_flags(
                    flags
                        .iter()
                        .filter_map(|f| f.as_str().map(str::to_string))
                        .collect(),
                );
            }
            ks.tables.insert(tname.to_string(), Arc::new(meta));
        }
    };
    add_tables(arr("tables"), &columns, TableKind::System);
    add_tables(arr("virtual_tables"), &vcolumns, TableKind::Virtual);
    out.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_file_describes_the_tables_drivers_read() {
        let kss = system_keyspaces();
        let find = |ks: &str, t: &str| {
            kss.iter()
                .find(|k| k.name == ks)
                .and_then(|k| k.tables.get(t))
                .cloned()
                .unwrap()
        };
        let local = find("system", "local");
        assert_eq!(local.columns[0].name, "key");
        assert!(local.column("release_version").is_some());
        let peers = find("system", "peers_v2");
        assert_eq!(peers.partition_key_len(), 1);
        assert_eq!(peers.clustering_len(), 1);
        let cols = find("system_schema", "columns");
        assert_eq!(
            cols.columns
                .iter()
                .map(|c| c.name.as_str())
                .take(3)
                .collect::<Vec<_>>(),
            ["keyspace_name", "table_name", "column_name"]
        );
        let vt = find("system_virtual_schema", "tables");
        assert_eq!(vt.kind, TableKind::Virtual);
        assert!(kss
            .iter()
            .any(|k| k.name == "system_views" && k.tables.contains_key("clients")));
    }
}
