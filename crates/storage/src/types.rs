//! Public types of the storage API: configuration, table definitions, mutations, queries and results.

pub use crate::error::StorageError;
// The mutation model is shared with the coordinator and cluster crates; storage re-exports it
// so its callers name it `helenus_storage::Mutation` as before.
use bytes::Bytes;
pub use helenus_mutation::{
    BoundKind, CellOp, CellUpdate, ClusteringBound, ColumnId, DeletionTime, Liveness, Mutation,
    RowUpdate, TableId,
};
use std::path::PathBuf;
use std::sync::Arc;

/// Below this much input a major compaction is one merge: splitting it costs more than it saves.
pub const DEFAULT_PARALLEL_MAJOR_COMPACTION_MIN_BYTES: u64 = 32 << 20;

/// Engine-wide settings (from helenus.yaml).
#[derive(Debug, Clone)]
pub struct StorageConfig {
    pub data_dir: PathBuf,
    pub commitlog_dir: PathBuf,
    pub commitlog_sync: CommitlogSync,
    pub commitlog_segment_size_bytes: u64,
    /// Memtable budget: a flush starts when all memtables together reach it, and writes wait
    /// (bounded) when unflushed memtables reach `MEMTABLE_BACKPRESSURE_FACTOR` times it.
    pub memtable_space_bytes: u64,
    /// Cassandra's `memtable_cleanup_threshold`: the largest memtable is flushed once the
    /// memtables not already flushing hold this fraction of `memtable_space_bytes` (Cassandra's
    /// default, 1 / (1 + memtable_flush_writers), is a third), so resident memory stays well
    /// under the budget instead of climbing to it before the first flush.
    pub memtable_cleanup_threshold: f64,
    /// Key cache (partition index positions per SSTable), Cassandra's `key_cache_size`.
    pub key_cache_bytes: u64,
    pub chunk_cache_bytes: u64,
    /// Row cache (merged partitions of tables whose `caching` asks for rows); 0 = off, as in
    /// Cassandra.
    pub row_cache_bytes: u64,
    pub concurrent_compactors: usize,
    /// One rate for all compactions of the node, with up to a second of unused rate saved for
    /// a burst (compaction/control.rs); 0 = unthrottled.
    pub compaction_throughput_mib_per_s: u64,
    /// Cap on flush writing; 0 (the default, as in Cassandra) = unthrottled. Tests use it to make
    /// flushing fall behind on purpose.
    pub flush_throughput_mib_per_s: u64,
    /// A major compaction of a Leveled table of more uncompressed input than this merges its
    /// token ranges in parallel, one per `concurrent_compactors`
    /// (`DEFAULT_PARALLEL_MAJOR_COMPACTION_MIN_BYTES`); other strategies write one SSTable.
    pub parallel_major_compaction_min_bytes: u64,
    /// The node's clock: TTL expiry, purge decisions and file times read it, so a node on a
    /// simulated clock has storage on the same time.
    pub clock: helenus_types::SharedClock,
}

/// When an acknowledged write is on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitlogSync {
    /// A background thread fsyncs every `period_ms`; `apply` does not wait.
    Periodic { period_ms: u64 },
    /// `apply` returns after an fsync covering its entry; concurrent writers share one fsync.
    Batch,
    /// Like batch, but the syncer waits up to `window_ms` to gather more writers per fsync.
    Group { window_ms: u64 },
}

/// Orders serialized values of one CQL type.
pub trait ValueComparator: Send + Sync {
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering;

    /// The plain rule this order follows, if any: clustering comparisons, several per row read,
    /// then run inline instead of through a dynamic call and a match on the type.
    fn order(&self) -> ValueOrder {
        ValueOrder::Other
    }
}

/// Value orders simple enough to compare without the type (both sort the empty value first,
/// as Cassandra does for every type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueOrder {
    /// Unsigned bytes: text, ascii, blob, inet, date, boolean.
    Bytes,
    /// Fixed-width two's-complement big-endian integers: int, bigint, timestamp, time, ...
    SignedBigEndian,
    /// Only the comparator knows.
    Other,
}

impl ValueOrder {
    /// The order of `a` and `b` by this rule; None for `Other`.
    #[inline]
    pub fn compare(self, a: &[u8], b: &[u8]) -> Option<std::cmp::Ordering> {
        match self {
            ValueOrder::Bytes => Some(a.cmp(b)),
            ValueOrder::SignedBigEndian => Some(helenus_types::compare_signed(a, b)),
            ValueOrder::Other => None,
        }
    }
}

/// One clustering column: its value order and declared direction.
#[derive(Clone)]
pub struct ClusteringColumn {
    pub cmp: Arc<dyn ValueComparator>,
    pub descending: bool,
}

/// A regular or static column.
#[derive(Clone)]
pub struct ColumnDef {
    pub id: ColumnId,
    pub is_static: bool,
    /// For non-frozen collections/UDTs: the order of cell paths.
    pub multi_cell: Option<Arc<dyn ValueComparator>>,
    pub is_counter: bool,
}

/// Compaction strategy and its options, from Cassandra's option map.
#[derive(Debug, Clone, PartialEq)]
pub enum CompactionOptions {
    SizeTiered {
        min_threshold: u32,
        max_threshold: u32,
    },
    Leveled {
        sstable_size_in_mb: u32,
        fanout_size: u32,
    },
    TimeWindow {
        compaction_window_unit: String,
        compaction_window_size: u32,
    },
}

/// SSTable chunk compressor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CompressionAlgorithm {
    None,
    Lz4,
    /// zstd at `compression_level` (0 = zstd's default, 3).
    Zstd {
        level: i32,
    },
    /// Deflate (raw stream, default level).
    Deflate,
}

/// Compression settings.
#[derive(Debug, Clone, PartialEq)]
pub struct CompressionOptions {
    pub algorithm: CompressionAlgorithm,
    pub chunk_length_in_kb: u32,
}

/// Per-table options the engine honours.
#[derive(Debug, Clone, PartialEq)]
pub struct TableOptions {
    pub compaction: CompactionOptions,
    pub compression: CompressionOptions,
    pub gc_grace_seconds: u32,
    pub bloom_filter_fp_chance: f64,
    pub default_time_to_live: u32,
    /// `caching = {'rows_per_partition': ...}`: 0 = 'NONE', `u32::MAX` = 'ALL'. A partition is
    /// row-cached whole when it has at most this many rows.
    pub rows_per_partition_to_cache: u32,
    /// Compaction sub-option `tombstone_threshold`: a single SSTable whose droppable-tombstone
    /// ratio exceeds it is compacted alone (Cassandra's default 0.2).
    pub tombstone_threshold: f64,
    /// Compaction sub-option `unchecked_tombstone_compaction`: run single-SSTable tombstone
    /// compaction even when other SSTables overlap its token range.
    pub unchecked_tombstone_compaction: bool,
    /// Compaction sub-option `only_purge_repaired_tombstones`: compactions of SSTables that are
    /// not repaired keep every tombstone (incremental repair has not yet shown that every
    /// replica holds it).
    pub only_purge_repaired_tombstones: bool,
    /// How new SSTables store data (flush and compaction outputs); existing SSTables keep the
    /// layout they were written with until compaction rewrites them.
    pub layout: DataLayout,
}

/// How a column's serialized values are stored and ordered. Integers of every width, booleans,
/// timestamps, dates and times share the `i64` vector; `date` keeps Cassandra's unsigned
/// (2^31-offset) day number, so numeric order is CQL order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueType {
    Boolean,
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    /// Milliseconds since the epoch (8 bytes).
    Timestamp,
    /// Days with a 2^31 offset (4 bytes, unsigned).
    Date,
    /// Nanoseconds since midnight (8 bytes).
    Time,
    Float,
    Double,
    /// UTF-8 or ASCII text: bytewise order, as Cassandra compares it.
    Text,
    Blob,
    /// Anything without a cheap order here (uuid, varint, decimal, frozen collections, inet):
    /// stored as bytes, no min/max, never skipped.
    Opaque,
}

/// A regular column of a columnar table and how its values are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnSpec {
    pub id: ColumnId,
    pub value_type: ValueType,
}

/// How a table's SSTables store its partitions.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum DataLayout {
    /// Rows one after another (the Data.db stream).
    #[default]
    Rows,
    /// Columns as chunks (crate::columnar): scans read only the columns they need.
    Columnar(ColumnarTypes),
}

/// The value types of a columnar table's columns, from the CQL types (storage knows none).
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnarTypes {
    pub partition_key: ValueType,
    /// One per clustering column, in order.
    pub clustering: Vec<ValueType>,
    /// Simple (not collection, not counter) regular and static columns; the rest go to the
    /// segments' extras stream.
    pub columns: Vec<ColumnSpec>,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            compaction: CompactionOptions::SizeTiered {
                min_threshold: 4,
                max_threshold: 32,
            },
            compression: CompressionOptions {
                algorithm: CompressionAlgorithm::Lz4,
                chunk_length_in_kb: 16,
            },
            gc_grace_seconds: 864_000,
            bloom_filter_fp_chance: 0.01,
            default_time_to_live: 0,
            rows_per_partition_to_cache: 0,
            tombstone_threshold: 0.2,
            unchecked_tombstone_compaction: false,
            only_purge_repaired_tombstones: false,
            layout: DataLayout::Rows,
        }
    }
}

/// Everything the engine needs to know about a table (no CQL types: only comparators).
#[derive(Clone)]
pub struct TableDef {
    pub id: TableId,
    pub keyspace: String,
    pub name: String,
    pub clustering: Vec<ClusteringColumn>,
    pub columns: Vec<ColumnDef>,
    pub options: TableOptions,
}

/// One side of a partition range in (token, key) order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionBound {
    Unbounded,
    Token {
        token: i64,
        inclusive: bool,
    },
    Key {
        token: i64,
        key: Bytes,
        inclusive: bool,
    },
}

/// Which partitions a read covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionRange {
    Single {
        key: Bytes,
        token: i64,
    },
    Range {
        start: PartitionBound,
        end: PartitionBound,
    },
}

/// A local read.
#[derive(Debug, Clone)]
pub struct ReadQuery {
    pub partitions: PartitionRange,
    /// Slices in storage order; empty = all rows.
    pub slices: Vec<(ClusteringBound, ClusteringBound)>,
    pub reversed: bool,
    pub row_limit: Option<usize>,
    pub per_partition_limit: Option<usize>,
    pub partition_limit: Option<usize>,
    /// "Now" for TTL expiry.
    pub now_s: i64,
    /// For a single-partition read: only rows after this clustering in the read's order (a
    /// page resumed inside the partition reads from where the last one stopped).
    pub resume_after: Option<Vec<Bytes>>,
    /// The regular columns whose cells the caller reads, sorted; None = all. Cells of other
    /// columns still decide whether a row is live (a row kept alive only by a column not
    /// selected is still a row), but are not copied into the result: a scan selecting one
    /// column of a wide row pays for that column only. Static rows are returned whole.
    pub columns: Option<std::sync::Arc<[ColumnId]>>,
}

impl ReadQuery {
    /// Every row of one partition, whole, with TTLs expiring at `now_s`.
    pub fn whole_partition(key: Bytes, token: i64, now_s: i64) -> Self {
        ReadQuery {
            columns: None,
            partitions: PartitionRange::Single { key, token },
            slices: Vec::new(),
            reversed: false,
            row_limit: None,
            per_partition_limit: None,
            partition_limit: None,
            now_s,
            resume_after: None,
        }
    }
}

/// Live data of a read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadResult {
    pub partitions: Vec<PartitionData>,
    /// What the read scanned to produce them.
    pub stats: ReadStats,
}

/// What a replica stores for a read (`Engine::read_unfiltered`): the partitions it covers with
/// their deletions, timestamps and TTLs, for a coordinator to reconcile.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UnfilteredResult {
    /// In token order, each in canonical storage order (read/unfiltered.rs), so equal data
    /// gives equal bytes and digests (`helenus_mutation::digest`).
    pub partitions: Vec<Mutation>,
    /// What the read scanned, as `read_bounded` counts it.
    pub stats: ReadStats,
}

/// What a read scanned, counted as Cassandra counts for its tombstone thresholds (see
/// read/tombstones.rs): the caller warns past `tombstone_warn_threshold`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    pub live_rows: u64,
    pub tombstones_scanned: u64,
}

/// One partition's live data.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionData {
    pub key: Bytes,
    pub token: i64,
    pub static_row: Option<LiveRow>,
    pub rows: Vec<LiveRow>,
}

/// A live row.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveRow {
    pub clustering: Vec<Bytes>,
    /// Sorted by column id, then cell path (in the column's path order).
    pub cells: Vec<LiveCell>,
    /// Timestamp of the primary key liveness (INSERT), if live.
    pub row_timestamp_us: Option<i64>,
}

/// A live cell.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveCell {
    pub column: ColumnId,
    pub path: Option<Bytes>,
    /// Counters: the 8-byte big-endian total.
    pub value: Bytes,
    pub timestamp_us: i64,
    pub ttl_s: u32,
    pub expires_at_s: i64,
}

/// Result of commitlog replay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayStats {
    pub segments: usize,
    pub mutations_replayed: u64,
    /// Entries for tables not (or no longer) defined.
    pub mutations_skipped: u64,
    /// Entries already in SSTables when the node stopped (the log's flushed positions).
    pub mutations_already_flushed: u64,
    /// Torn or corrupt tails skipped.
    pub corrupt_tails: usize,
}

/// Result of a `garbage_collect`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GarbageCollectStats {
    /// SSTables rewritten, and left as they were (nothing to drop).
    pub rewritten: usize,
    pub skipped: usize,
    pub compaction: CompactionStats,
}

/// Result of a compaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactionStats {
    pub input_sstables: usize,
    pub output_sstables: usize,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub partitions_written: u64,
    pub tombstones_purged: u64,
    /// Partitions copied in encoded form, without a decode and re-encode (sstable/raw.rs).
    pub partitions_copied: u64,
    /// Generations written (for strategies that remember what they produced).
    pub output_generations: Vec<u64>,
}

impl CompactionStats {
    /// Adds another task's counts (an operation that rewrote SSTables one at a time).
    pub fn add(&mut self, other: &CompactionStats) {
        self.input_sstables += other.input_sstables;
        self.output_sstables += other.output_sstables;
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        self.partitions_written += other.partitions_written;
        self.tombstones_purged += other.tombstones_purged;
        self.partitions_copied += other.partitions_copied;
        self.output_generations
            .extend_from_slice(&other.output_generations);
    }
}

/// What `Engine::anticompact` did to one table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AntiCompactionStats {
    /// SSTables whose partitions all lay in the ranges: marked pending, not rewritten.
    pub sstables_marked: usize,
    /// SSTables rewritten into a pending part and an unrepaired part.
    pub sstables_split: usize,
    /// Uncompressed bytes of the SSTables split.
    pub bytes_rewritten: u64,
}

/// SSTables of one table pending for one incremental repair session (`nodetool repair_admin`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingRepair {
    pub table: TableId,
    pub session: [u8; 16],
    pub sstables: usize,
    /// Bytes on disk.
    pub bytes: u64,
}

/// A running compaction (nodetool compactionstats).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionProgress {
    pub id: u64,
    pub keyspace: String,
    pub table: String,
    /// "Compaction", "Major compaction", "Garbage collection", "Flush".
    pub kind: String,
    pub completed_bytes: u64,
    pub total_bytes: u64,
}

/// What nodetool tablestats / tablehistograms print.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableStats {
    pub sstable_count: usize,
    pub live_disk_space_bytes: u64,
    pub memtable_data_size_bytes: u64,
    /// Memory the active memtable holds (what the memtable budget counts); Cassandra's
    /// "Memtable off heap memory used" line shows it.
    pub memtable_heap_bytes: u64,
    pub memtable_partitions: u64,
    pub memtable_switch_count: u64,
    pub estimated_partitions: u64,
    pub mean_partition_size_bytes: u64,
    pub max_partition_size_bytes: u64,
    pub local_read_count: u64,
    pub local_write_count: u64,
    pub bloom_filter_false_positives: u64,
    pub bloom_filter_space_bytes: u64,
    pub key_cache_hit_rate: f64,
    pub key_cache_hits: u64,
    pub key_cache_requests: u64,
    pub chunk_cache_hit_rate: f64,
    pub row_cache_hits: u64,
    pub row_cache_requests: u64,
    pub tombstone_count: u64,
    pub compression_ratio: f64,
    /// Read latency histogram buckets are kept by the server; the engine reports SSTables per read.
    pub sstables_per_read_max: u64,
    /// Memory of the SSTables' partition summaries (Cassandra's "Index summary" memory).
    pub index_summary_bytes: u64,
    /// SSTables single-partition reads skipped by the max-timestamp short-circuit.
    pub sstables_skipped_by_timestamp: u64,
    /// Rows reads merged from memtables and SSTables (live or not), before limits applied.
    pub rows_merged_by_reads: u64,
    /// Tombstones reads scanned (read/tombstones.rs), and the most one read scanned.
    pub tombstones_scanned_by_reads: u64,
    pub tombstones_scanned_max: u64,
    /// Reads abandoned past the tombstone failure threshold.
    pub tombstone_failures: u64,
    /// Uncompressed bytes of the live SSTables in each repair set (Cassandra's BytesRepaired,
    /// BytesPendingRepair and BytesUnrepaired gauges).
    pub repaired_bytes: u64,
    pub pending_repair_bytes: u64,
    pub unrepaired_bytes: u64,
    /// Repaired uncompressed bytes over all, in percent; 100.0 with no SSTable (Cassandra's
    /// TableMetrics.percentRepaired).
    pub percent_repaired: f64,
    pub histograms: TableHistograms,
}

/// The columns of `nodetool tablehistograms`, each as the bucket bounds of its percentiles
/// (histogram.rs): local latencies recorded since start, SSTables per single-partition read,
/// and partition sizes and cells per partition over the table's SSTables.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableHistograms {
    pub read_latency_ns: Percentiles,
    pub write_latency_ns: Percentiles,
    pub sstables_per_read: Percentiles,
    pub partition_size_bytes: Percentiles,
    pub cell_count: Percentiles,
}

/// Counters of one cache (engine-wide).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheCounters {
    pub hits: u64,
    pub requests: u64,
    pub size_bytes: u64,
    pub capacity_bytes: u64,
}

/// The engine's caches, for metrics and `nodetool info`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub key: CacheCounters,
    pub chunk: CacheCounters,
    pub row: CacheCounters,
}

/// The percentiles `nodetool tablehistograms` prints, in its row order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Percentiles {
    pub p50: u64,
    pub p75: u64,
    pub p95: u64,
    pub p98: u64,
    pub p99: u64,
    pub min: u64,
    pub max: u64,
}
