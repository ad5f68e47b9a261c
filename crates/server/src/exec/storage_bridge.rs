//! Glue between schema metadata and the storage engine: table definitions with comparators built
//! from CQL types, and engine start-up.

use crate::config::{CommitlogSyncMode, NodeConfig};
use helenus_schema::{
    ClusteringOrder, ColumnKind, CompactionParams, CompactionStrategy, Compressor, Schema,
    StorageLayout, TableMeta,
};
use helenus_storage as st;
use helenus_types::CqlType;
use std::sync::Arc;

/// Orders serialized values of one CQL type exactly as Cassandra does.
struct TypeComparator(CqlType);

impl st::ValueComparator for TypeComparator {
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        helenus_types::compare_serialized(&self.0, a, b)
    }

    fn order(&self) -> st::ValueOrder {
        use helenus_types::NativeType as N;
        // Exactly the types compare_serialized orders bytewise or as signed integers.
        match &self.0 {
            CqlType::Native(
                N::Ascii | N::Varchar | N::Blob | N::Inet | N::Date | N::Boolean | N::Duration,
            ) => st::ValueOrder::Bytes,
            CqlType::Native(
                N::Int | N::Bigint | N::Counter | N::Timestamp | N::Time | N::Smallint | N::Tinyint,
            ) => st::ValueOrder::SignedBigEndian,
            _ => st::ValueOrder::Other,
        }
    }
}

/// The order of cell paths inside a multi-cell column: list cells by their timeuuid path, set
/// elements and map keys by the element/key type, UDT fields by their field index (i16).
fn cell_path_type(t: &CqlType) -> Option<CqlType> {
    use helenus_types::NativeType;
    match t {
        CqlType::List { frozen: false, .. } => Some(CqlType::Native(NativeType::Timeuuid)),
        CqlType::Set {
            element,
            frozen: false,
        } => Some((**element).clone()),
        CqlType::Map {
            key, frozen: false, ..
        } => Some((**key).clone()),
        CqlType::Udt { frozen: false, .. } => Some(CqlType::Native(NativeType::Smallint)),
        _ => None,
    }
}

/// The engine's options for a table. The engine implements LZ4, zstd and Deflate; a table naming
/// another compressor (Snappy) is written with LZ4, and UCS compacts as size-tiered.
pub fn table_options(t: &TableMeta) -> st::TableOptions {
    let p = &t.params;
    let compaction = p.compaction_params();
    let compression = p.compression_params();
    st::TableOptions {
        compaction: compaction_options(&compaction),
        compression: st::CompressionOptions {
            algorithm: match compression.compressor {
                None => st::CompressionAlgorithm::None,
                Some(Compressor::Zstd { level }) => st::CompressionAlgorithm::Zstd { level },
                Some(Compressor::Deflate) => st::CompressionAlgorithm::Deflate,
                Some(Compressor::Lz4 | Compressor::Other(_)) => st::CompressionAlgorithm::Lz4,
            },
            chunk_length_in_kb: compression.chunk_length_in_kb,
        },
        gc_grace_seconds: p.gc_grace_seconds.max(0) as u32,
        bloom_filter_fp_chance: p.bloom_filter_fp_chance,
        default_time_to_live: p.default_time_to_live.max(0) as u32,
        rows_per_partition_to_cache: rows_per_partition(&p.caching),
        tombstone_threshold: compaction.tombstone_threshold,
        unchecked_tombstone_compaction: compaction.unchecked_tombstone_compaction,
        only_purge_repaired_tombstones: compaction.only_purge_repaired_tombstones,
        layout: data_layout(t),
    }
}

pub use crate::layout::effective_layout;

/// The engine's layout for the table's `helenus.layout` extension, with each column's value
/// type (storage knows no CQL types). Collections, UDTs and counters have no column of their
/// own in a segment (their cells go to its extras stream).
fn data_layout(t: &TableMeta) -> st::DataLayout {
    if effective_layout(t) != StorageLayout::Columnar {
        return st::DataLayout::Rows;
    }
    let mut key = t.partition_key();
    let partition_key = match (key.next(), key.next()) {
        (Some(c), None) => value_type(&c.cql_type),
        // A composite key's serialized form has no order of its own.
        _ => st::columnar::ValueType::Opaque,
    };
    st::DataLayout::Columnar(st::ColumnarTypes {
        partition_key,
        clustering: t.clustering().map(|c| value_type(&c.cql_type)).collect(),
        columns: t
            .columns
            .iter()
            .filter(|c| !c.kind.is_primary_key())
            .filter(|c| !c.cql_type.is_multi_cell() && !c.cql_type.is_counter())
            .map(|c| st::columnar::ColumnSpec {
                id: c.id,
                value_type: value_type(&c.cql_type),
            })
            .collect(),
    })
}

/// How a segment stores values of a CQL type: the types with a cheap order get typed vectors
/// and min/max statistics; the others are bytes.
pub(crate) fn value_type(t: &CqlType) -> st::columnar::ValueType {
    use helenus_types::NativeType as N;
    use st::columnar::ValueType as V;
    match t {
        CqlType::Native(n) => match n {
            N::Boolean => V::Boolean,
            N::Tinyint => V::TinyInt,
            N::Smallint => V::SmallInt,
            N::Int => V::Int,
            N::Bigint => V::BigInt,
            N::Timestamp => V::Timestamp,
            N::Date => V::Date,
            N::Time => V::Time,
            N::Float => V::Float,
            N::Double => V::Double,
            N::Ascii | N::Varchar => V::Text,
            N::Blob => V::Blob,
            _ => V::Opaque,
        },
        _ => V::Opaque,
    }
}

fn compaction_options(c: &CompactionParams) -> st::CompactionOptions {
    match &c.strategy {
        CompactionStrategy::Leveled {
            sstable_size_in_mb,
            fanout_size,
        } => st::CompactionOptions::Leveled {
            sstable_size_in_mb: *sstable_size_in_mb,
            fanout_size: *fanout_size,
        },
        CompactionStrategy::TimeWindow {
            compaction_window_unit,
            compaction_window_size,
        } => st::CompactionOptions::TimeWindow {
            compaction_window_unit: compaction_window_unit.clone(),
            compaction_window_size: *compaction_window_size,
        },
        CompactionStrategy::SizeTiered | CompactionStrategy::Unified => {
            st::CompactionOptions::SizeTiered {
                min_threshold: c.min_threshold,
                max_threshold: c.max_threshold,
            }
        }
    }
}

/// `caching = {'rows_per_partition': 'NONE' | 'ALL' | N}` as the engine's row count.
fn rows_per_partition(caching: &std::collections::BTreeMap<String, String>) -> u32 {
    match caching.get("rows_per_partition") {
        Some(v) if v.eq_ignore_ascii_case("ALL") => u32::MAX,
        Some(v) => v.parse().unwrap_or(0),
        None => 0,
    }
}

pub fn table_def(t: &TableMeta) -> st::TableDef {
    let clustering = t
        .clustering()
        .map(|c| st::ClusteringColumn {
            cmp: Arc::new(TypeComparator(c.cql_type.clone())) as Arc<dyn st::ValueComparator>,
            descending: c.order == ClusteringOrder::Desc,
        })
        .collect();
    let columns = t
        .columns
        .iter()
        .filter(|c| !c.kind.is_primary_key())
        .map(|c| st::ColumnDef {
            id: c.id,
            is_static: c.kind == ColumnKind::Static,
            multi_cell: cell_path_type(&c.cql_type)
                .map(|pt| Arc::new(TypeComparator(pt)) as Arc<dyn st::ValueComparator>),
            is_counter: c.cql_type.is_counter(),
        })
        .collect();
    st::TableDef {
        id: *t.id.as_bytes(),
        keyspace: t.keyspace.clone(),
        name: t.name.clone(),
        clustering,
        columns,
        options: table_options(t),
    }
}

pub fn storage_config(cfg: &NodeConfig, clock: helenus_types::SharedClock) -> st::StorageConfig {
    st::StorageConfig {
        data_dir: cfg.primary_data_dir(),
        commitlog_dir: cfg.commitlog_directory.clone(),
        commitlog_sync: match cfg.commitlog_sync {
            CommitlogSyncMode::Periodic => st::CommitlogSync::Periodic {
                period_ms: cfg.commitlog_sync_period_ms,
            },
            CommitlogSyncMode::Batch => st::CommitlogSync::Batch,
            CommitlogSyncMode::Group => st::CommitlogSync::Group {
                window_ms: cfg.commitlog_sync_group_window_ms,
            },
        },
        commitlog_segment_size_bytes: cfg.commitlog_segment_size_bytes,
        memtable_space_bytes: cfg.memtable_space_bytes,
        memtable_cleanup_threshold: cfg.memtable_cleanup_threshold(),
        key_cache_bytes: cfg.key_cache_size_bytes,
        chunk_cache_bytes: cfg.file_cache_size_bytes,
        row_cache_bytes: cfg.row_cache_size_bytes,
        concurrent_compactors: cfg.concurrent_compactors,
        compaction_throughput_mib_per_s: cfg.compaction_throughput_mib_per_s,
        flush_throughput_mib_per_s: 0,
        parallel_major_compaction_min_bytes: st::DEFAULT_PARALLEL_MAJOR_COMPACTION_MIN_BYTES,
        clock,
    }
}

/// Opens the engine, registers every user table, then replays the commitlog into them.
pub fn open_engine(
    cfg: &NodeConfig,
    schema: &Schema,
    clock: helenus_types::SharedClock,
) -> Result<Arc<st::Engine>, st::StorageError> {
    crate::layout::set_default(cfg.default_table_layout);
    let engine = st::Engine::open(storage_config(cfg, clock))?;
    let mut unbuilt = Vec::new();
    for ks in schema.user_keyspaces() {
        for t in ks.tables.values() {
            let def = table_def(t);
            engine.create_table(def.clone())?;
            // Before the replay, which restores index entries with their base rows.
            let defs = crate::index_storage::register(&engine, t, &def)?;
            unbuilt.push((def.id, defs));
        }
    }
    let stats = engine.replay_commitlog()?;
    tracing::info!("commitlog replay: {stats:?}");
    // After it: a build must see the rows only the commitlog held.
    for (base, defs) in unbuilt {
        crate::index_storage::start_builds(&engine, base, defs);
    }
    Ok(engine)
}

#[cfg(test)]
mod tests {
    use super::*;
    use helenus_storage::ValueComparator;
    use helenus_types::NativeType as N;

    /// The clustering comparator's inline rules must order exactly as the type's own order,
    /// for every width a value of a column can arrive with (damaged or empty ones included).
    #[test]
    fn inline_clustering_orders_agree_with_the_types_order() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let types = [
            N::Ascii,
            N::Varchar,
            N::Blob,
            N::Inet,
            N::Date,
            N::Boolean,
            N::Int,
            N::Bigint,
            N::Counter,
            N::Timestamp,
            N::Time,
            N::Smallint,
            N::Tinyint,
        ];
        for n in types {
            let t = CqlType::Native(n);
            let order = TypeComparator(t.clone()).order();
            assert_ne!(order, st::ValueOrder::Other);
            for _ in 0..2000 {
                let mut value = || {
                    let len = [0usize, 1, 2, 4, 8, 8, 8, 3][(next() % 8) as usize];
                    // Few distinct bytes, so equal values and shared prefixes come up often.
                    let v: Vec<u8> = (0..len)
                        .map(|_| [0u8, 0x7f, 0x80, 0xff][(next() % 4) as usize])
                        .collect();
                    v
                };
                let (a, b) = (value(), value());
                assert_eq!(
                    order.compare(&a, &b),
                    Some(helenus_types::compare_serialized(&t, &a, &b)),
                    "{n:?}: {a:?} vs {b:?}"
                );
            }
        }
    }
}
