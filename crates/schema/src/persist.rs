//! Durable storage of the user schema: one JSON file, written atomically (temp file, fsync, rename).
//! The node's schema is small and changes rarely, so a whole-file rewrite per change is the simple,
//! crash-safe choice.

use crate::model::{
    ClusteringOrder, ColumnKind, ColumnMeta, KeyspaceKind, KeyspaceMeta, Schema, SchemaError,
    TableKind, TableMeta,
};
use crate::options::TableParams;
use crate::type_string::parse_type_string;
use helenus_types::UserType;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use uuid::Uuid;

#[derive(Serialize, Deserialize)]
struct FileV1 {
    format: String,
    keyspaces: Vec<KsRec>,
}

#[derive(Serialize, Deserialize)]
struct KsRec {
    name: String,
    replication: BTreeMap<String, String>,
    durable_writes: bool,
    types: Vec<TypeRec>,
    tables: Vec<TableRec>,
}

#[derive(Serialize, Deserialize)]
struct TypeRec {
    name: String,
    fields: Vec<(String, String)>,
}

#[derive(Serialize, Deserialize)]
struct TableRec {
    name: String,
    id: Uuid,
    params: TableParams,
    columns: Vec<ColRec>,
    next_column_id: u32,
    #[serde(default)]
    indexes: Vec<(String, String, BTreeMap<String, String>)>,
    /// (column name, type, drop time in µs)
    #[serde(default)]
    dropped: Vec<(String, String, i64)>,
    /// `system_schema.tables.flags`; absent in files written before COMPACT STORAGE existed,
    /// which held CQL (compound) tables only.
    #[serde(default)]
    flags: Option<Vec<String>>,
}

#[derive(Serialize, Deserialize)]
struct ColRec {
    name: String,
    cql_type: String,
    kind: String,
    position: i32,
    order: String,
    id: u32,
}

const FORMAT: &str = "helenus-schema-1";

fn io_err(path: &Path, e: impl std::fmt::Display) -> SchemaError {
    SchemaError::Storage {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// Writes the user keyspaces of `schema` to `path` atomically.
pub fn save_user_schema(schema: &Schema, path: &Path) -> Result<(), SchemaError> {
    let json = encode_user_schema(schema).map_err(|e| io_err(path, e))?;
    let tmp = path.with_extension("json.tmp");
    let mut f = std::fs::File::create(&tmp).map_err(|e| io_err(&tmp, e))?;
    f.write_all(&json).map_err(|e| io_err(&tmp, e))?;
    f.sync_all().map_err(|e| io_err(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io_err(path, e))?;
    if let Some(dir) = path.parent() {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// The user keyspaces of `schema` in the schema file's format: what a node sends a peer.
pub fn encode_user_schema(schema: &Schema) -> Result<Vec<u8>, serde_json::Error> {
    let file = FileV1 {
        format: FORMAT.into(),
        keyspaces: schema
            .user_keyspaces()
            .map(|ks| KsRec {
                name: ks.name.clone(),
                replication: ks.replication.clone(),
                durable_writes: ks.durable_writes,
                types: ks
                    .types
                    .values()
                    .map(|t| TypeRec {
                        name: t.name.clone(),
                        fields: t
                            .fields
                            .iter()
                            .map(|(n, ty)| (n.clone(), ty.to_string()))
                            .collect(),
                    })
                    .collect(),
                tables: ks
                    .tables
                    .values()
                    .map(|t| TableRec {
                        name: t.name.clone(),
                        id: t.id,
                        params: t.params.clone(),
                        next_column_id: t.next_column_id,
                        flags: Some(t.flags.clone()),
                        dropped: t
                            .dropped_columns
                            .iter()
                            .map(|(n, (ty, at))| (n.clone(), ty.to_string(), *at))
                            .collect(),
                        indexes: t
                            .indexes
                            .iter()
                            .map(|i| (i.name.clone(), i.kind.clone(), i.options.clone()))
                            .collect(),
                        columns: t
                            .columns
                            .iter()
                            .map(|c| ColRec {
                                name: c.name.clone(),
                                cql_type: c.cql_type.to_string(),
                                kind: c.kind.as_str().into(),
                                position: c.position,
                                order: c.order.as_str().into(),
                                id: c.id,
                            })
                            .collect(),
                    })
                    .collect(),
            })
            .collect(),
    };
    serde_json::to_vec_pretty(&file)
}

/// Reads the user keyspaces written by [`save_user_schema`]; a missing file is an empty schema.
pub fn load_user_schema(path: &Path) -> Result<Vec<KeyspaceMeta>, SchemaError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err(path, e)),
    };
    decode_user_schema(path, &bytes)
}

/// Reads user keyspaces in the schema file's format; `origin` names where they came from in
/// errors (a file, or a peer).
pub fn decode_user_schema(origin: &Path, bytes: &[u8]) -> Result<Vec<KeyspaceMeta>, SchemaError> {
    let path = origin;
    let file: FileV1 = serde_json::from_slice(bytes).map_err(|e| io_err(path, e))?;
    if file.format != FORMAT {
        return Err(io_err(
            path,
            format!("unknown schema format {}", file.format),
        ));
    }
    let mut out = Vec::new();
    for k in file.keyspaces {
        let mut ks =
            KeyspaceMeta::new(&k.name, KeyspaceKind::User, k.replication, k.durable_writes);
        resolve_types(path, &mut ks, k.types)?;
        for t in k.tables {
            let meta = table_from_record(path, &ks, t)?;
            ks.tables.insert(meta.name.clone(), Arc::new(meta));
        }
        out.push(ks);
    }
    Ok(out)
}

/// Adds a keyspace's user types; a type may refer to types defined after it in name order, so
/// they are resolved in passes until none is left (or none resolves: a damaged file).
fn resolve_types(
    path: &Path,
    ks: &mut KeyspaceMeta,
    types: Vec<TypeRec>,
) -> Result<(), SchemaError> {
    let mut pending = types;
    while !pending.is_empty() {
        let before = pending.len();
        pending.retain(|t| {
            let fields: Result<Vec<_>, _> = t
                .fields
                .iter()
                .map(|(n, ty)| parse_type_string(ty, &*ks).map(|ty| (n.clone(), ty)))
                .collect();
            match fields {
                Ok(fields) => {
                    let ut = UserType {
                        keyspace: ks.name.clone(),
                        name: t.name.clone(),
                        fields,
                    };
                    ks.types.insert(t.name.clone(), Arc::new(ut));
                    false
                }
                Err(_) => true,
            }
        });
        if pending.len() == before {
            return Err(io_err(
                path,
                format!("unresolvable types in keyspace {}", ks.name),
            ));
        }
    }
    Ok(())
}

/// One table record with its columns' types resolved against `ks`.
fn table_from_record(
    path: &Path,
    ks: &KeyspaceMeta,
    t: TableRec,
) -> Result<TableMeta, SchemaError> {
    let mut cols = Vec::new();
    for c in t.columns {
        let cql_type = parse_type_string(&c.cql_type, ks).map_err(|e| io_err(path, e))?;
        let kind = ColumnKind::parse(&c.kind).ok_or_else(|| io_err(path, "bad column kind"))?;
        let order = match c.order.as_str() {
            "asc" => ClusteringOrder::Asc,
            "desc" => ClusteringOrder::Desc,
            _ => ClusteringOrder::None,
        };
        cols.push(ColumnMeta {
            name: c.name,
            cql_type,
            kind,
            position: c.position,
            order,
            id: c.id,
        });
    }
    let mut meta = TableMeta::new(&ks.name, &t.name, t.id, TableKind::User, cols, t.params);
    meta.next_column_id = meta.next_column_id.max(t.next_column_id);
    if let Some(flags) = t.flags {
        meta.set_flags(flags);
    }
    meta.indexes = t
        .indexes
        .into_iter()
        .map(|(name, kind, options)| crate::model::IndexMeta {
            name,
            kind,
            options,
        })
        .collect();
    for (name, ty, at) in t.dropped {
        let ty = parse_type_string(&ty, ks).map_err(|e| io_err(path, e))?;
        meta.dropped_columns.insert(name, (ty, at));
    }
    Ok(meta)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use helenus_types::{CqlType, NativeType};

    fn column(
        name: &str,
        cql_type: CqlType,
        kind: ColumnKind,
        position: i32,
        id: u32,
    ) -> ColumnMeta {
        let order = match kind {
            ColumnKind::Clustering => ClusteringOrder::Desc,
            _ => ClusteringOrder::None,
        };
        ColumnMeta {
            name: name.into(),
            cql_type,
            kind,
            position,
            order,
            id,
        }
    }

    #[test]
    fn user_schema_round_trips_with_types_defined_after_their_users() {
        let text = CqlType::Native(NativeType::Varchar);
        let inner = UserType {
            keyspace: "ks".into(),
            name: "b_inner".into(),
            fields: vec![("x".into(), text.clone())],
        };
        let inner_type = CqlType::Udt {
            def: Box::new(inner.clone()),
            frozen: true,
        };
        let outer = UserType {
            keyspace: "ks".into(),
            name: "a_outer".into(),
            fields: vec![("inner".into(), inner_type.clone())],
        };
        let replication = BTreeMap::from([
            (
                "class".to_string(),
                crate::SIMPLE_STRATEGY_CLASS.to_string(),
            ),
            ("replication_factor".to_string(), "3".to_string()),
        ]);
        let mut ks = KeyspaceMeta::new("ks", KeyspaceKind::User, replication, true);
        ks.types.insert("b_inner".into(), Arc::new(inner));
        ks.types.insert("a_outer".into(), Arc::new(outer));
        let cols = vec![
            column(
                "k",
                CqlType::Native(NativeType::Int),
                ColumnKind::PartitionKey,
                0,
                0,
            ),
            column("c", text.clone(), ColumnKind::Clustering, 0, 1),
            column("v", inner_type, ColumnKind::Regular, -1, 2),
        ];
        let mut table = TableMeta::new(
            "ks",
            "t",
            Uuid::new_v4(),
            TableKind::User,
            cols,
            TableParams::default(),
        );
        table.dropped_columns.insert("old".into(), (text, 1234));
        ks.tables.insert("t".into(), Arc::new(table));
        let schema = Schema {
            keyspaces: BTreeMap::new(),
            version: Uuid::nil(),
        }
        .with_keyspace(ks.clone());
        let path = std::env::temp_dir().join(format!(
            "helenus-schema-round-trip-{}-{}.json",
            std::process::id(),
            Uuid::new_v4()
        ));
        save_user_schema(&schema, &path).unwrap();
        let loaded = load_user_schema(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(loaded, vec![ks]);
    }
}
