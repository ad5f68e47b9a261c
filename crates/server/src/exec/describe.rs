//! Server-side DESCRIBE (cqlsh sends it to servers reporting 4.0+), producing the same rows and
//! create statements as Cassandra 5.0 (recorded in schema/golden/cassandra-5.0-user-table-probe.txt).

use helenus_schema::{
    short_replication_class, ClusteringOrder, ColumnKind, IndexMeta, KeyspaceKind, KeyspaceMeta,
    Schema, TableKind, TableMeta,
};
use helenus_types::{CqlType, UserType};
use std::collections::BTreeMap;

// Re-exported: DESCRIBE's callers quote names with it too.
pub use super::cql_text::maybe_quote;
use super::cql_text::quote_string;

/// One row of a DESCRIBE result: keyspace_name, type, name, create_statement.
#[derive(Debug, Clone, PartialEq)]
pub struct DescribeRow {
    pub keyspace: String,
    pub kind: &'static str,
    pub name: String,
    pub statement: Option<String>,
}

fn string_map(m: &BTreeMap<String, String>) -> String {
    let body: Vec<String> = m
        .iter()
        .map(|(k, v)| format!("{}: {}", quote_string(k), quote_string(v)))
        .collect();
    format!("{{{}}}", body.join(", "))
}

/// `extensions` (a `map<text, blob>`): printable UTF-8 values as string literals (how they are
/// usually written, `{'helenus.layout': 'columnar'}`), others as blob literals; both replay.
fn extensions_map(m: &BTreeMap<String, Vec<u8>>) -> String {
    let body: Vec<String> = m
        .iter()
        .map(|(k, v)| {
            let value = match std::str::from_utf8(v) {
                Ok(s) if !s.chars().any(char::is_control) => quote_string(s),
                _ => format!(
                    "0x{}",
                    v.iter().map(|b| format!("{b:02x}")).collect::<String>()
                ),
            };
            format!("{}: {}", quote_string(k), value)
        })
        .collect();
    format!("{{{}}}", body.join(", "))
}

pub fn keyspace_statement(ks: &KeyspaceMeta) -> String {
    if ks.kind == KeyspaceKind::Virtual {
        return format!(
            "/*\nWarning: Keyspace {0} is a virtual keyspace and cannot be recreated with CQL.\n\
             Structure, for reference:\nVIRTUAL KEYSPACE {0};\n*/",
            maybe_quote(&ks.name)
        );
    }
    let mut repl = ks.replication.clone();
    if let Some(c) = repl.get_mut("class") {
        *c = short_replication_class(c).to_string();
    }
    format!(
        "CREATE KEYSPACE {} WITH replication = {}  AND durable_writes = {};",
        maybe_quote(&ks.name),
        string_map(&repl),
        ks.durable_writes
    )
}

/// A type as DESCRIBE prints it: user types by (quoted) name, without keyspace.
fn type_text(t: &CqlType) -> String {
    match t {
        CqlType::Udt { def, frozen } => {
            let n = maybe_quote(&def.name);
            if *frozen {
                format!("frozen<{n}>")
            } else {
                n
            }
        }
        CqlType::List { element, frozen } => {
            wrap_frozen(*frozen, format!("list<{}>", type_text(element)))
        }
        CqlType::Set { element, frozen } => {
            wrap_frozen(*frozen, format!("set<{}>", type_text(element)))
        }
        CqlType::Map { key, value, frozen } => wrap_frozen(
            *frozen,
            format!("map<{}, {}>", type_text(key), type_text(value)),
        ),
        CqlType::Tuple(items) => {
            format!(
                "frozen<tuple<{}>>",
                items.iter().map(type_text).collect::<Vec<_>>().join(", ")
            )
        }
        other => other.to_string(),
    }
}

fn wrap_frozen(frozen: bool, s: String) -> String {
    if frozen {
        format!("frozen<{s}>")
    } else {
        s
    }
}

pub fn type_statement(ks: &str, t: &UserType) -> String {
    let fields: Vec<String> = t
        .fields
        .iter()
        .map(|(n, ty)| format!("    {} {}", maybe_quote(n), type_text(ty)))
        .collect();
    format!(
        "CREATE TYPE {}.{} (\n{}\n);",
        maybe_quote(ks),
        maybe_quote(&t.name),
        fields.join(",\n")
    )
}

fn format_double(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

fn table_options(t: &TableMeta) -> Vec<String> {
    let p = &t.params;
    let mut out = vec![
        format!(
            "additional_write_policy = {}",
            quote_string(&p.additional_write_policy)
        ),
        format!(
            "allow_auto_snapshot = {}",
            p.allow_auto_snapshot.unwrap_or(true)
        ),
        format!(
            "bloom_filter_fp_chance = {}",
            format_double(p.bloom_filter_fp_chance)
        ),
        format!("caching = {}", string_map(&p.caching)),
        format!("cdc = {}", p.cdc.unwrap_or(false)),
        format!("comment = {}", quote_string(&p.comment)),
        format!("compaction = {}", string_map(&p.compaction)),
        format!("compression = {}", string_map(&p.compression)),
        format!("memtable = {}", quote_string(p.memtable_or_default())),
        format!("crc_check_chance = {}", format_double(p.crc_check_chance)),
        format!("default_time_to_live = {}", p.default_time_to_live),
        format!("extensions = {}", extensions_map(&p.extensions)),
        format!("gc_grace_seconds = {}", p.gc_grace_seconds),
        format!(
            "incremental_backups = {}",
            p.incremental_backups.unwrap_or(true)
        ),
        format!("max_index_interval = {}", p.max_index_interval),
        format!(
            "memtable_flush_period_in_ms = {}",
            p.memtable_flush_period_in_ms
        ),
        format!("min_index_interval = {}", p.min_index_interval),
        format!("read_repair = {}", quote_string(&p.read_repair)),
        format!("speculative_retry = {}", quote_string(&p.speculative_retry)),
    ];
    if t.kind == TableKind::Virtual {
        out = vec![format!("comment = {}", quote_string(&p.comment))];
    }
    out
}

pub fn table_statement(t: &TableMeta) -> String {
    let pk: Vec<&str> = t.partition_key().map(|c| c.name.as_str()).collect();
    let ck: Vec<_> = t.clustering().collect();
    let inline_pk = pk.len() == 1 && ck.is_empty();
    let mut lines = Vec::new();
    // DESCRIBE lists simple columns before complex (multi-cell) ones within each kind.
    // A COMPACT STORAGE table shows what CQL sees: no hidden columns, and its static columns as
    // the plain ones they were declared as.
    let compact = t.is_compact();
    let mut ordered: Vec<&helenus_schema::ColumnMeta> =
        t.visible_columns().map(|(_, c)| c).collect();
    ordered.sort_by(|a, b| {
        a.kind.cmp(&b.kind).then_with(|| {
            if a.kind.is_primary_key() {
                std::cmp::Ordering::Equal
            } else {
                a.cql_type.is_multi_cell().cmp(&b.cql_type.is_multi_cell())
            }
        })
    });
    for c in ordered {
        let mut line = format!("    {} {}", maybe_quote(&c.name), type_text(&c.cql_type));
        if c.kind == ColumnKind::Static && !compact {
            line.push_str(" static");
        }
        if inline_pk && c.kind == ColumnKind::PartitionKey {
            line.push_str(" PRIMARY KEY");
        }
        lines.push(line);
    }
    if !inline_pk {
        let pk_text = if pk.len() == 1 {
            maybe_quote(pk[0])
        } else {
            format!(
                "({})",
                pk.iter()
                    .map(|n| maybe_quote(n))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let mut parts = vec![pk_text];
        parts.extend(
            ck.iter()
                .filter(|c| !t.is_hidden(c))
                .map(|c| maybe_quote(&c.name)),
        );
        lines.push(format!("    PRIMARY KEY ({})", parts.join(", ")));
    }
    let virtual_table = t.kind == TableKind::Virtual;
    let head = if virtual_table {
        "VIRTUAL TABLE"
    } else {
        "CREATE TABLE"
    };
    let mut s = format!(
        "{head} {}.{} (\n{}\n) WITH ",
        maybe_quote(&t.keyspace),
        maybe_quote(&t.name),
        lines.join(",\n")
    );
    let mut opts = Vec::new();
    if compact {
        opts.push("COMPACT STORAGE".to_string());
    }
    if !ck.is_empty() {
        let order: Vec<String> = ck
            .iter()
            .map(|c| {
                let dir = if c.order == ClusteringOrder::Desc {
                    "DESC"
                } else {
                    "ASC"
                };
                format!("{} {dir}", maybe_quote(&c.name))
            })
            .collect();
        opts.push(format!("CLUSTERING ORDER BY ({})", order.join(", ")));
    }
    opts.extend(table_options(t));
    s.push_str(&opts.join("\n    AND "));
    s.push(';');
    if compact {
        s = format!(
            "/*\nWarning: Table {}.{} omitted because it has constructs not compatible with CQL (was created via legacy API).\nApproximate structure, for reference:\n(this should not be used to reproduce this schema)\n\n{s}\n*/",
            maybe_quote(&t.keyspace),
            maybe_quote(&t.name)
        );
    }
    if virtual_table {
        s = format!(
            "/*\nWarning: Table {}.{} is a virtual table and cannot be recreated with CQL.\nStructure, for reference:\n{s}\n*/",
            maybe_quote(&t.keyspace),
            maybe_quote(&t.name)
        );
    }
    s
}

pub fn index_statement(t: &TableMeta, idx: &IndexMeta) -> String {
    let target = idx.options.get("target").cloned().unwrap_or_default();
    let custom = idx.kind == "CUSTOM";
    let class = idx.options.get("class_name").cloned();
    let mut s = format!(
        "CREATE {}INDEX {} ON {}.{} ({})",
        if custom { "CUSTOM " } else { "" },
        maybe_quote(&idx.name),
        maybe_quote(&t.keyspace),
        maybe_quote(&t.name),
        target
    );
    if let (true, Some(c)) = (custom, class) {
        s.push_str(&format!(" USING {}", quote_string(&c)));
    }
    s.push(';');
    s
}

fn sorted_ci<'a, T>(items: impl Iterator<Item = (&'a String, T)>) -> Vec<(&'a String, T)> {
    let mut v: Vec<_> = items.collect();
    v.sort_by(|a, b| {
        a.0.to_lowercase()
            .cmp(&b.0.to_lowercase())
            .then_with(|| a.0.cmp(b.0))
    });
    v
}

/// Everything in a keyspace, in DESCRIBE KEYSPACE order: the keyspace, its types, then each table
/// followed by its indexes.
pub fn keyspace_rows(ks: &KeyspaceMeta, only: bool) -> Vec<DescribeRow> {
    let mut rows = vec![DescribeRow {
        keyspace: ks.name.clone(),
        kind: "keyspace",
        name: maybe_quote(&ks.name),
        statement: Some(keyspace_statement(ks)),
    }];
    if only {
        return rows;
    }
    for (name, t) in sorted_ci(ks.types.iter()) {
        rows.push(DescribeRow {
            keyspace: ks.name.clone(),
            kind: "type",
            name: maybe_quote(name),
            statement: Some(type_statement(&ks.name, t)),
        });
    }
    for (name, t) in sorted_ci(ks.tables.iter()) {
        rows.push(DescribeRow {
            keyspace: ks.name.clone(),
            kind: "table",
            name: maybe_quote(name),
            statement: Some(table_statement(t)),
        });
        for idx in &t.indexes {
            rows.push(DescribeRow {
                keyspace: ks.name.clone(),
                kind: "index",
                name: maybe_quote(&idx.name),
                statement: Some(index_statement(t, idx)),
            });
        }
    }
    rows
}

/// `DESCRIBE [FULL] SCHEMA`: user keyspaces, or every keyspace with FULL.
pub fn schema_rows(schema: &Schema, full: bool) -> Vec<DescribeRow> {
    schema
        .keyspaces
        .values()
        .filter(|k| full || k.kind == KeyspaceKind::User)
        .flat_map(|k| keyspace_rows(k, false))
        .collect()
}

/// `DESCRIBE KEYSPACES` / `TABLES` / `TYPES`: name listings without statements.
/// Tables and types are listed for the session's keyspace only when it has one, as Cassandra does.
pub fn listing(schema: &Schema, kind: &'static str, session_ks: Option<&str>) -> Vec<DescribeRow> {
    let mut rows = Vec::new();
    for ks in schema.keyspaces.values() {
        if kind != "keyspace" && session_ks.is_some_and(|s| s != ks.name) {
            continue;
        }
        let names: Vec<&String> = match kind {
            "keyspace" => vec![&ks.name],
            "table" => sorted_ci(ks.tables.iter())
                .into_iter()
                .map(|(n, _)| n)
                .collect(),
            "type" => sorted_ci(ks.types.iter())
                .into_iter()
                .map(|(n, _)| n)
                .collect(),
            _ => Vec::new(),
        };
        for n in names {
            rows.push(DescribeRow {
                keyspace: ks.name.clone(),
                kind,
                name: maybe_quote(n),
                statement: None,
            });
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use helenus_schema::{ColumnMeta, TableParams};
    use helenus_types::NativeType;

    fn col(
        name: &str,
        t: NativeType,
        kind: ColumnKind,
        position: i32,
        order: ClusteringOrder,
        id: u32,
    ) -> ColumnMeta {
        ColumnMeta {
            name: name.into(),
            cql_type: CqlType::Native(t),
            kind,
            position,
            order,
            id,
        }
    }

    #[test]
    fn table_statement_matches_cassandra_layout() {
        let t = TableMeta::new(
            "lead_probe",
            "t",
            uuid::Uuid::nil(),
            TableKind::User,
            vec![
                col(
                    "a",
                    NativeType::Int,
                    ColumnKind::PartitionKey,
                    0,
                    ClusteringOrder::None,
                    0,
                ),
                col(
                    "b",
                    NativeType::Varchar,
                    ColumnKind::PartitionKey,
                    1,
                    ClusteringOrder::None,
                    1,
                ),
                col(
                    "c",
                    NativeType::Int,
                    ColumnKind::Clustering,
                    0,
                    ClusteringOrder::Desc,
                    2,
                ),
                ColumnMeta {
                    name: "d".into(),
                    cql_type: CqlType::Map {
                        key: Box::new(CqlType::Native(NativeType::Varchar)),
                        value: Box::new(CqlType::Native(NativeType::Int)),
                        frozen: false,
                    },
                    kind: ColumnKind::Regular,
                    position: -1,
                    order: ClusteringOrder::None,
                    id: 3,
                },
                col(
                    "s",
                    NativeType::Int,
                    ColumnKind::Static,
                    -1,
                    ClusteringOrder::None,
                    4,
                ),
            ],
            TableParams::default(),
        );
        let golden = include_str!("../../../schema/golden/cassandra-5.0-user-table-probe.txt");
        let expected = "CREATE TABLE lead_probe.t (\\n    a int,\\n    b text,\\n    c int,\\n    s int static,\\n    d map<text, int>,\\n    PRIMARY KEY ((a, b), c)\\n) WITH CLUSTERING ORDER BY (c DESC)\\n    AND additional_write_policy = '99p'";
        assert!(golden.contains(expected));
        let ours = table_statement(&t).replace('\n', "\\n");
        assert!(golden.contains(&ours), "{ours}");
    }

    #[test]
    fn identifiers_are_quoted_like_cassandra() {
        assert_eq!(maybe_quote("abc_1"), "abc_1");
        assert_eq!(maybe_quote("Tab"), "\"Tab\"");
        assert_eq!(maybe_quote("select"), "\"select\"");
        assert_eq!(maybe_quote("a\"b"), "\"a\"\"b\"");
    }
}
