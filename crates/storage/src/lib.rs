//! helenus-storage: the node-local storage engine for user data, with Cassandra's semantics.
//!
//! Owns: the commitlog (durability), memtables, SSTables (format "hl-1", data format 2 with
//! varint cells (codec/compact.rs; format 1 still read): chunked Data with LZ4,
//! zstd or Deflate per table (chunks that do not compress are stored raw, and after a run of
//! them the writer only probes), a partition index on disk written as partitions arrive and
//! read behind an in-memory summary of every 128th entry, a per-partition row index for wide
//! partitions, a cache-line-blocked bloom filter, versioned statistics with clustering bounds and
//! tombstone histograms), compaction (SizeTiered / Leveled / TimeWindow, single-SSTable tombstone
//! compaction, major, garbagecollect; wide partitions streamed; partitions that need no merge,
//! including live cell tombstones and unexpired TTL data, copied in encoded form
//! (sstable/raw.rs); major compactions split by token range across `concurrent_compactors`
//! threads; a backlog controller for rate and CPU priority, compaction/control.rs), the key,
//! chunk and row caches, the max-timestamp short-circuit, slices that find their row-index
//! blocks by binary search and build only the rows they return, paged reads that resume after
//! the last row returned, write backpressure, snapshots, clean shutdown, and the reconciliation
//! rules (`reconcile.rs`) that make every merge order-independent.
//! Does not own: schemas or CQL types (callers pass a `TableDef` with comparators), tokens
//! (callers pass the Murmur3 token), replication or consistency levels.
//!
//! # Layout
//!
//! ```text
//! engine/       Engine, the public API: tables, the write path, admin (flush, compact,
//!               snapshot, stats, shutdown), write backpressure, incremental repair's
//!               anticompaction and repair sets (repair.rs). The only `impl Engine`.
//! table.rs      one table's state (definition, memtables, SSTable set, counters) and the
//!               registry of tables, shared by the engine, reads and background threads
//! memtable/     memtables (mod.rs), their memory accounting (memory.rs), and the budget
//!               flushes and waiting writers share (budget.rs)
//! commitlog/    segments (mapped files: an append is a copy), group sync, replay
//! read/         ReadPath: one partition merged from memtables and SSTables (single.rs), range
//!               scans (range.rs), the max-timestamp short-circuit (shortcut.rs), tombstone
//!               counting (tombstones.rs), the key, chunk and row caches (caches.rs), and
//!               unfiltered reads and their resolution across replicas (unfiltered.rs)
//! compaction/   the flush thread and compaction pool (worker.rs, with `Background`, all they
//!               see of the node), flush, the output writer, merges (merge.rs, wide_merge.rs),
//!               purge rules, rate control, strategy/ (size_tiered, leveled, time_window),
//!               anticompaction (anticompaction.rs)
//! sstable/      component names and shared types (mod.rs), reader.rs, writer.rs, data formats
//!               (format.rs), partition index (index.rs), encoded copies (raw.rs), the Data
//!               writer thread (sink.rs), row-index slices (wide.rs), Statistics.db
//!               (statistics.rs), bloom filter, compression, sstabledump / verify (tools.rs),
//!               the repair state sidecar (repair.rs)
//! codec/        byte primitives and CRC (mod.rs); data format 1, also the commitlog's encoding
//!               of partitions (mod.rs); the compact data format 2 (compact.rs)
//! partition/    the in-memory partition, rows and cells (cellmap.rs), what a read returns, and
//!               a partition as a mutation with its times fixed (unfiltered.rs)
//! columnar/     columnar segments (issue 15): typed column chunks with dictionary, run-length,
//!               bit-packed and delta encodings, LZ4/zstd, per-chunk min/max and null counts, a
//!               footer index, pruned scans that skip chunks; a columnar table's SSTables hold
//!               one in place of Data.db (sstable/columnar_data.rs), and read/columnar_scan.rs
//!               and engine/columnar.rs scan them column by column
//! index.rs      secondary indexes: a hidden table per index, entries added on the write
//!               path (engine/indexes.rs), the build over earlier data
//! reconcile.rs  the rules that decide which of two versions wins
//! clustering.rs clustering keys ordered by the table's comparators
//! byte_cache.rs the sharded, byte-budgeted cache the caches and compaction use
//! types.rs      the public request, result and configuration types
//! ```
//!
//! Write path: `Engine::apply` waits if memtables are over budget (engine/backpressure.rs),
//! resolves counters, appends one commitlog entry, inserts into the tables' memtables and
//! invalidates the row cache; past `memtable_space_bytes` the flush thread writes the largest
//! memtable to SSTables (compaction/flush.rs), frees it, discards the commitlog segments it
//! covered and asks the compaction pool to look at the table.
//!
//! Read path: `Engine::read_bounded` hands the table to `ReadPath`: a single partition comes
//! from the row cache or from memtables and SSTables merged newest first until the
//! short-circuit says older SSTables cannot matter (read/single.rs), through the key and chunk
//! caches; a range walks every source's keys in batches (read/range.rs).
//!
//! Unfiltered reads: `Engine::read_unfiltered` returns what the read merged for a query
//! (deletions, timestamps and TTLs kept, as `Mutation`s in a canonical form that gives equal
//! digests for equal data), and `Engine::resolve_unfiltered` turns the answers of several
//! replicas into what `read_bounded` would return on a node holding all of them
//! (read/unfiltered.rs). A coordinator reconciles replicas with these two.
//!
//! Who owns what: the engine owns the commitlog, the tables, the read path and `Background`;
//! background threads hold `Background` weakly (dropping the engine stops them) and reach
//! tables, the commitlog and the memtable budget through it, never through the engine.
//!
//! Dependencies, chosen deliberately: `lz4_flex` (pure Rust), `crc32c` (the CPU's CRC
//! instruction; the table-driven loop it replaced was a sixth of compaction's CPU), `libc`
//! (thread priority of compaction threads), `flate2` on the pure-Rust
//! `miniz_oxide` backend for Deflate, `zstd` (bindings to the C reference library, ~33 s of
//! C build once) because the pure-Rust `ruzstd` cannot encode at the levels
//! `compression_level` asks for (see sstable/compression.rs), `helenus-types` for its
//! `Clock` only, `helenus-mutation` for the mutation model it shares with the cluster
//! crates (re-exported: `helenus_storage::Mutation` and its parts), and `hashbrown` (already in
//! the tree through indexmap) for its `HashTable`, which lets the caches' eviction order keep
//! 8-byte hashes instead of copies of their keys (byte_cache.rs).
//!
//! Memory bound. Memtables count the bytes they hold, allocator overhead included (values in
//! per-shard arena chunks, structures estimated from the real types' sizes:
//! memtable/memory.rs, checked within a few percent of a counting allocator by
//! tests/memory_accounting.rs). The largest memtable is flushed when the memtables taking
//! writes reach `memtable_cleanup_threshold` (Cassandra's, a third by default) of
//! `memtable_space_bytes` (`memtable_heap_space`), or all memtables reach the whole of it;
//! writes wait when active plus flushing plus being-freed memtables reach `MEMTABLE_BACKPRESSURE_FACTOR` (2) times it, and a flushed memtable is freed before
//! waiting writers are woken. So the resident memory of a node is at most
//!
//! ```text
//! RSS <= fixed + key_cache + chunk_cache (file_cache_size) + row_cache
//!        + 2 (allocator slack) x MEMTABLE_BACKPRESSURE_FACTOR x memtable_space_bytes
//! ```
//!
//! and usually well under it, because the chunk cache yields to memtables: its budget is
//! `file_cache_size` minus what all memtables hold, never under a quarter of it, and grows back
//! as they are flushed (memtable/budget.rs), so cache plus memtables stay near
//! `max(file_cache_size, file_cache_size / 4 + memtables)`.
//!
//! where the allocator slack is memory mimalloc keeps after a memtable is freed until it reuses
//! or returns it, and `fixed` (about 100 MiB: binary, thread stacks, 64 KiB read buffer per
//! connection, flush and compaction buffers, SSTable summaries and bloom filters) grows with
//! connections and SSTables, not with data in memtables. tests/rss_bound.rs holds a loaded
//! engine to it. In practice the peak stays near `fixed + caches in use + 1.5 x
//! memtable_space_bytes`; bench/storage.sh's `gdelt_memtable` part records it beside Cassandra.
//!
//! Known gaps: the row cache keeps whole
//! partitions of at most `rows_per_partition` rows rather than a partition's head. Compaction
//! merges partitions in memory up to `STREAM_PARTITION_BYTES` of input and streams larger ones
//! row by row (compaction/wide_merge.rs), so a partition's size does not bound its memory.

mod byte_cache;
mod clustering;
mod codec;
pub mod columnar;
mod commitlog;
mod compaction;
mod engine;
mod error;
mod exclusion;
pub mod histogram;
mod index;
mod memtable;
mod partition;
mod path_name;
mod read;
mod reconcile;
mod sstable;
mod table;
#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
pub mod test_support;
mod types;

pub use commitlog::{deferring_appends, UnwrittenAppends};
pub use compaction::lower_thread_priority;
pub use engine::Engine;
pub use engine::{
    append_received, span_inside, ComponentInfo, PinnedTable, WholeSSTable, WriteStallStats,
    MAX_WRITE_STALL_MS, MEMTABLE_BACKPRESSURE_FACTOR,
};
pub use error::StorageError;
pub use index::{
    entry_clustering, entry_target, index_table_def, stale_entry_deletion, token_component,
    value_partition, IndexDef,
};
pub use path_name::{PathName, MAX_PATH_NAME_BYTES};
pub use read::columnar_scan::{
    ColumnPage, ColumnRestriction, ColumnScan, ColumnScanStats, PartitionRun, ResumeAt, ScanBatch,
    WireCell,
};
pub use sstable::repair::RepairState;
pub use sstable::tools::{dump_sstable, verify_sstable, VerifyReport};
pub use types::*;
