//! The schema model: keyspaces, tables, columns, user types.

use crate::options::{ReplicationParams, TableParams};
use helenus_types::{CqlType, UserType};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use uuid::Uuid;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SchemaError {
    #[error("Keyspace '{0}' does not exist")]
    KeyspaceNotFound(String),
    #[error("table {0}.{1} does not exist")]
    TableNotFound(String, String),
    #[error("Cannot add existing keyspace \"{0}\"")]
    KeyspaceExists(String),
    #[error("Cannot add already existing table \"{1}\" to keyspace \"{0}\"")]
    TableExists(String, String),
    #[error("{0}")]
    Invalid(String),
    #[error("schema file {path}: {message}")]
    Storage { path: String, message: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyspaceKind {
    User,
    /// `system`, `system_schema`, `system_auth`, ...: stored locally, served read-only to clients.
    System,
    /// `system_views`, `system_virtual_schema`: computed on read.
    Virtual,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableKind {
    User,
    System,
    Virtual,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ColumnKind {
    PartitionKey,
    Clustering,
    Static,
    Regular,
}

impl ColumnKind {
    /// The `kind` column of `system_schema.columns`.
    pub fn as_str(self) -> &'static str {
        match self {
            ColumnKind::PartitionKey => "partition_key",
            ColumnKind::Clustering => "clustering",
            ColumnKind::Static => "static",
            ColumnKind::Regular => "regular",
        }
    }

    pub fn parse(s: &str) -> Option<ColumnKind> {
        Some(match s {
            "partition_key" => ColumnKind::PartitionKey,
            "clustering" => ColumnKind::Clustering,
            "static" => ColumnKind::Static,
            "regular" => ColumnKind::Regular,
            _ => return None,
        })
    }

    pub fn is_primary_key(self) -> bool {
        matches!(self, ColumnKind::PartitionKey | ColumnKind::Clustering)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusteringOrder {
    None,
    Asc,
    Desc,
}

impl ClusteringOrder {
    pub fn as_str(self) -> &'static str {
        match self {
            ClusteringOrder::None => "none",
            ClusteringOrder::Asc => "asc",
            ClusteringOrder::Desc => "desc",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ColumnMeta {
    pub name: String,
    pub cql_type: CqlType,
    pub kind: ColumnKind,
    /// Position within the partition key or clustering key; -1 otherwise (as system_schema stores it).
    pub position: i32,
    pub order: ClusteringOrder,
    /// Stable id used by the storage engine; never reused within a table.
    pub id: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct IndexMeta {
    pub name: String,
    /// `COMPOSITES`, `KEYS` or `CUSTOM`.
    pub kind: String,
    pub options: BTreeMap<String, String>,
}

fn has_flag(flags: &[String], flag: &str) -> bool {
    flags.iter().any(|f| f == flag)
}

fn is_compact(flags: &[String]) -> bool {
    !has_flag(flags, "compound") || has_flag(flags, "dense") || has_flag(flags, "super")
}

fn is_hidden(flags: &[String], column: &ColumnMeta) -> bool {
    if !is_compact(flags) {
        return false;
    }
    if has_flag(flags, "dense") {
        column.kind == ColumnKind::Regular && column.cql_type.is_empty_type()
    } else {
        matches!(column.kind, ColumnKind::Clustering | ColumnKind::Regular)
    }
}

fn names_by_index(columns: &[ColumnMeta], flags: &[String]) -> HashMap<String, usize> {
    columns
        .iter()
        .enumerate()
        .filter(|(_, c)| !is_hidden(flags, c))
        .map(|(i, c)| (c.name.clone(), i))
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
pub struct TableMeta {
    pub keyspace: String,
    pub name: String,
    pub id: Uuid,
    pub kind: TableKind,
    /// Columns in `SELECT *` order: partition key, clustering, static, regular (the latter two by name).
    pub columns: Vec<ColumnMeta>,
    pub params: TableParams,
    pub flags: Vec<String>,
    pub indexes: Vec<IndexMeta>,
    pub next_column_id: u32,
    /// Columns dropped from the table: name -> (type, drop time in µs), as
    /// `system_schema.dropped_columns` shows them; a column re-added later must keep a
    /// serialization-compatible type.
    pub dropped_columns: std::collections::BTreeMap<String, (helenus_types::CqlType, i64)>,
    by_name: HashMap<String, usize>,
}

impl TableMeta {
    /// Builds a table, ordering columns the way Cassandra returns them for `SELECT *`.
    pub fn new(
        keyspace: &str,
        name: &str,
        id: Uuid,
        kind: TableKind,
        mut columns: Vec<ColumnMeta>,
        params: TableParams,
    ) -> TableMeta {
        columns.sort_by(|a, b| {
            a.kind.cmp(&b.kind).then_with(|| match a.kind {
                ColumnKind::PartitionKey | ColumnKind::Clustering => a.position.cmp(&b.position),
                _ => a.name.as_bytes().cmp(b.name.as_bytes()),
            })
        });
        let next_column_id = columns.iter().map(|c| c.id + 1).max().unwrap_or(0);
        let flags = vec!["compound".to_string()];
        let by_name = names_by_index(&columns, &flags);
        TableMeta {
            keyspace: keyspace.to_string(),
            name: name.to_string(),
            id,
            kind,
            columns,
            params,
            flags,
            indexes: Vec::new(),
            next_column_id,
            dropped_columns: Default::default(),
            by_name,
        }
    }

    /// Sets `system_schema.tables.flags` (`compound`, `dense`, `super`), which decide whether the
    /// table is a COMPACT STORAGE one and so which of its columns CQL can name.
    pub fn set_flags(&mut self, flags: Vec<String>) {
        self.by_name = names_by_index(&self.columns, &flags);
        self.flags = flags;
    }

    /// A COMPACT STORAGE table: anything but a CQL table, which is compound and neither dense nor
    /// super (Cassandra's `TableMetadata.isCompactTable`).
    pub fn is_compact(&self) -> bool {
        is_compact(&self.flags)
    }

    /// A dense COMPACT STORAGE table: clustering columns and at most one value column.
    pub fn is_dense(&self) -> bool {
        has_flag(&self.flags, "dense")
    }

    /// Whether CQL statements cannot name the column: the `column1`/`value` pair of a static
    /// compact table, or the empty value column of a dense one, until DROP COMPACT STORAGE.
    pub fn is_hidden(&self, column: &ColumnMeta) -> bool {
        is_hidden(&self.flags, column)
    }

    /// Columns as `SELECT *` returns them (hidden columns left out).
    pub fn visible_columns(&self) -> impl Iterator<Item = (usize, &ColumnMeta)> {
        self.columns
            .iter()
            .enumerate()
            .filter(|(_, c)| !self.is_hidden(c))
    }

    /// The column CQL names `name`; hidden columns are not found, as in Cassandra.
    pub fn column(&self, name: &str) -> Option<&ColumnMeta> {
        self.by_name.get(name).and_then(|&i| self.columns.get(i))
    }

    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    pub fn partition_key(&self) -> impl Iterator<Item = &ColumnMeta> {
        self.columns
            .iter()
            .filter(|c| c.kind == ColumnKind::PartitionKey)
    }

    pub fn clustering(&self) -> impl Iterator<Item = &ColumnMeta> {
        self.columns
            .iter()
            .filter(|c| c.kind == ColumnKind::Clustering)
    }

    pub fn partition_key_len(&self) -> usize {
        self.partition_key().count()
    }

    pub fn clustering_len(&self) -> usize {
        self.clustering().count()
    }

    pub fn has_static(&self) -> bool {
        self.columns.iter().any(|c| c.kind == ColumnKind::Static)
    }

    pub fn is_counter_table(&self) -> bool {
        self.columns.iter().any(|c| c.cql_type.is_counter())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct KeyspaceMeta {
    pub name: String,
    pub kind: KeyspaceKind,
    /// The replication map as stored (`class` expanded to the full Java class name); the typed
    /// form is [`KeyspaceMeta::replication_params`].
    pub replication: BTreeMap<String, String>,
    pub durable_writes: bool,
    pub tables: BTreeMap<String, Arc<TableMeta>>,
    pub types: BTreeMap<String, Arc<UserType>>,
}

impl KeyspaceMeta {
    pub fn new(
        name: &str,
        kind: KeyspaceKind,
        replication: BTreeMap<String, String>,
        durable_writes: bool,
    ) -> Self {
        KeyspaceMeta {
            name: name.to_string(),
            kind,
            replication,
            durable_writes,
            tables: BTreeMap::new(),
            types: BTreeMap::new(),
        }
    }

    /// The replication strategy with its factors, as placement reads it.
    pub fn replication_params(&self) -> ReplicationParams {
        ReplicationParams::from_stored(&self.replication)
    }
}

impl crate::type_string::TypeResolver for KeyspaceMeta {
    fn user_type(&self, name: &str) -> Option<UserType> {
        self.types.get(name).map(|t| (**t).clone())
    }
}

/// The whole schema of the node. Cloned and replaced as a unit on each change (copy-on-write), so
/// readers take an `Arc<Schema>` snapshot and never lock.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    pub keyspaces: BTreeMap<String, Arc<KeyspaceMeta>>,
    pub version: Uuid,
}

impl Schema {
    pub fn keyspace(&self, name: &str) -> Result<&Arc<KeyspaceMeta>, SchemaError> {
        self.keyspaces
            .get(name)
            .ok_or_else(|| SchemaError::KeyspaceNotFound(name.to_string()))
    }

    pub fn table(&self, keyspace: &str, name: &str) -> Result<&Arc<TableMeta>, SchemaError> {
        self.keyspace(keyspace)?
            .tables
            .get(name)
            .ok_or_else(|| SchemaError::TableNotFound(keyspace.to_string(), name.to_string()))
    }

    /// Recomputes `version` from the user-visible content, as Cassandra digests its schema: nodes with
    /// the same schema report the same version.
    pub fn refresh_version(&mut self) {
        let mut digest = String::new();
        for ks in self
            .keyspaces
            .values()
            .filter(|k| k.kind == KeyspaceKind::User)
        {
            digest.push_str(&format!(
                "{}|{:?}|{}|",
                ks.name, ks.replication, ks.durable_writes
            ));
            for t in ks.types.values() {
                digest.push_str(&format!("type {t:?}|"));
            }
            for t in ks.tables.values() {
                digest.push_str(&format!("table {} {} {:?}|", t.name, t.id, t.params));
                for c in &t.columns {
                    digest.push_str(&format!(
                        "{} {} {:?} {}|",
                        c.name, c.cql_type, c.kind, c.position
                    ));
                }
            }
        }
        self.version = Uuid::new_v5(&Uuid::NAMESPACE_OID, digest.as_bytes());
    }

    pub fn with_keyspace(&self, ks: KeyspaceMeta) -> Schema {
        let mut s = self.clone();
        s.keyspaces.insert(ks.name.clone(), Arc::new(ks));
        s.refresh_version();
        s
    }

    pub fn without_keyspace(&self, name: &str) -> Schema {
        let mut s = self.clone();
        s.keyspaces.remove(name);
        s.refresh_version();
        s
    }

    pub fn user_keyspaces(&self) -> impl Iterator<Item = &Arc<KeyspaceMeta>> {
        self.keyspaces
            .values()
            .filter(|k| k.kind == KeyspaceKind::User)
    }
}
