//! Keyspace and table options with Cassandra 5.0's names and defaults. Option maps arrive as
//! strings from CQL once, are validated and parsed here into types ([`ReplicationParams`],
//! [`CompactionParams`], [`CompressionParams`]), and are stored as the maps `system_schema`
//! holds, so that drivers and DESCRIBE see exactly what Cassandra would show.

mod compaction;
mod compression;
mod error;
mod layout;
mod replication;

pub use compaction::{
    full_compaction_class, CompactionParams, CompactionStrategy, SIZE_TIERED_CLASS,
};
pub use compression::{full_compressor_class, CompressionParams, Compressor, LZ4_COMPRESSOR_CLASS};
pub use error::OptionsError;
pub use layout::{StorageLayout, LAYOUT_EXTENSION};
pub use replication::{
    short_replication_class, ReplicationParams, ReplicationStrategy, DEFAULT_KEYSPACE_RF,
    EVERYWHERE_STRATEGY_CLASS, LOCAL_STRATEGY_CLASS, NETWORK_TOPOLOGY_STRATEGY_CLASS,
    SIMPLE_STRATEGY_CLASS,
};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Everything `WITH ...` can set on a table. Field names are the `system_schema.tables` column names.
/// `None` means the column is null in `system_schema` (Cassandra leaves a few null for system tables).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableParams {
    pub additional_write_policy: String,
    pub allow_auto_snapshot: Option<bool>,
    pub bloom_filter_fp_chance: f64,
    pub caching: BTreeMap<String, String>,
    pub cdc: Option<bool>,
    pub comment: String,
    pub compaction: BTreeMap<String, String>,
    pub compression: BTreeMap<String, String>,
    pub crc_check_chance: f64,
    pub default_time_to_live: i32,
    pub extensions: BTreeMap<String, Vec<u8>>,
    pub gc_grace_seconds: i32,
    pub incremental_backups: Option<bool>,
    pub max_index_interval: i32,
    pub memtable: Option<String>,
    pub memtable_flush_period_in_ms: i32,
    pub min_index_interval: i32,
    pub read_repair: String,
    pub speculative_retry: String,
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

impl Default for TableParams {
    /// Cassandra 5.0's defaults for a user table (recorded in golden/cassandra-5.0-user-table-probe.txt).
    fn default() -> Self {
        TableParams {
            additional_write_policy: "99p".into(),
            allow_auto_snapshot: Some(true),
            bloom_filter_fp_chance: 0.01,
            caching: map(&[("keys", "ALL"), ("rows_per_partition", "NONE")]),
            cdc: Some(false),
            comment: String::new(),
            compaction: map(&[
                ("class", SIZE_TIERED_CLASS),
                ("max_threshold", "32"),
                ("min_threshold", "4"),
            ]),
            compression: map(&[
                ("chunk_length_in_kb", "16"),
                ("class", LZ4_COMPRESSOR_CLASS),
            ]),
            crc_check_chance: 1.0,
            default_time_to_live: 0,
            extensions: BTreeMap::new(),
            gc_grace_seconds: 864000,
            incremental_backups: Some(true),
            max_index_interval: 2048,
            memtable: Some("default".into()),
            memtable_flush_period_in_ms: 0,
            min_index_interval: 128,
            read_repair: "BLOCKING".into(),
            speculative_retry: "99p".into(),
        }
    }
}

impl TableParams {
    /// `memtable` as DESCRIBE prints it (null for system tables means 'default').
    pub fn memtable_or_default(&self) -> &str {
        self.memtable.as_deref().unwrap_or("default")
    }

    /// The compaction strategy and its options, typed.
    pub fn compaction_params(&self) -> CompactionParams {
        CompactionParams::from_stored(&self.compaction)
    }

    /// The compressor and chunk size, typed.
    pub fn compression_params(&self) -> CompressionParams {
        CompressionParams::from_stored(&self.compression)
    }
}
