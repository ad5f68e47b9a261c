//! Schema metadata: keyspaces, tables, columns, user types and table options, and their encoding as
//! the `system_schema` rows that drivers and cqlsh read.
//!
//! This crate owns *what exists*; it does not parse CQL (`cql`) or store rows (`storage`). The system
//! keyspaces are described from a golden file recorded from Cassandra 5.0, so that what clients see
//! of `system`, `system_schema` and the virtual keyspaces is exactly what Cassandra serves.
//!
//! - `model`: the metadata types (`Schema`, `KeyspaceMeta`, `TableMeta`, `ColumnMeta`).
//! - `options/`: keyspace and table options. CQL option maps are parsed and validated once, here,
//!   into `ReplicationParams` (Simple/NetworkTopology/Local/Everywhere with RF per datacenter),
//!   `CompactionParams` (STCS/LCS/TWCS/UCS with their typed options) and `CompressionParams`,
//!   with Cassandra's messages as `OptionsError`. Metadata stores the option maps exactly as
//!   `system_schema` shows them; `KeyspaceMeta::replication_params`,
//!   `TableParams::compaction_params` and `compression_params` give the typed form.
//! - `type_string`: CQL type strings as `system_schema` prints them (`TypeStringError`).
//! - `persist`: the user schema file; `system`: the golden system keyspaces.

mod model;
mod options;
mod persist;
mod system;
mod type_string;

pub use model::{
    ClusteringOrder, ColumnKind, ColumnMeta, IndexMeta, KeyspaceKind, KeyspaceMeta, Schema,
    SchemaError, TableKind, TableMeta,
};
pub use options::{
    full_compaction_class, full_compressor_class, short_replication_class, CompactionParams,
    CompactionStrategy, CompressionParams, Compressor, OptionsError, ReplicationParams,
    ReplicationStrategy, StorageLayout, TableParams, DEFAULT_KEYSPACE_RF,
    EVERYWHERE_STRATEGY_CLASS, LAYOUT_EXTENSION, LOCAL_STRATEGY_CLASS, LZ4_COMPRESSOR_CLASS,
    NETWORK_TOPOLOGY_STRATEGY_CLASS, SIMPLE_STRATEGY_CLASS, SIZE_TIERED_CLASS,
};
pub use persist::{decode_user_schema, encode_user_schema, load_user_schema, save_user_schema};
pub use system::system_keyspaces;
pub use type_string::{parse_type_string, TypeResolver, TypeStringError};
