//! Schema metadata: keyspaces, tables, columns, user types and table options, and their encoding as
//! the `system_schema` rows that drivers and cqlsh read.
//!
//! This crate owns *what exists*; it does not parse CQL (`cql`) or store rows (`storage`). The system
//! keyspaces are described from a golden file recorded from Cassandra 5.0, so that what clients see
//! of `system`, `system_schema` and the virtual keyspaces is exactly what Cassandra serves.

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
    ReplicationStrategy, TableParams, DEFAULT_KEYSPACE_RF, EVERYWHERE_STRATEGY_CLASS,
    LOCAL_STRATEGY_CLASS, LZ4_COMPRESSOR_CLASS, NETWORK_TOPOLOGY_STRATEGY_CLASS,
    SIMPLE_STRATEGY_CLASS, SIZE_TIERED_CLASS,
};
pub use persist::{load_user_schema, save_user_schema};
pub use system::system_keyspaces;
pub use type_string::{parse_type_string, TypeResolver, TypeStringError};
