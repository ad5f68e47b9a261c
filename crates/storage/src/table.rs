//! One table's state: its definition, memtables, SSTable set and counters. Shared by the engine
//! (which registers tables), the read path and the flush and compaction threads, so none of them
//! needs the engine to reach a table.

use crate::histogram::{LatencyHistogram, SSTablesPerReadHistogram};
use crate::memtable::budget::MemtableBudget;
use crate::memtable::Memtable;
use crate::partition::TableLayout;
use crate::sstable::SSTableReader;
use crate::types::*;
use parking_lot::{Mutex, RwLock};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Every table of the node by id: the engine adds and removes tables, background threads look
/// them up by the id of their job.
#[derive(Default)]
pub(crate) struct Tables(RwLock<HashMap<TableId, Arc<Table>>>);

impl Tables {
    pub(crate) fn get(&self, id: TableId) -> Result<Arc<Table>, StorageError> {
        self.0
            .read()
            .get(&id)
            .cloned()
            .ok_or(StorageError::UnknownTable(id))
    }

    pub(crate) fn read(&self) -> parking_lot::RwLockReadGuard<'_, HashMap<TableId, Arc<Table>>> {
        self.0.read()
    }

    /// (bytes of the memtables taking writes, bytes of all memtables: those and the ones
    /// flushing or being freed).
    pub(crate) fn memtable_usage(&self, budget: &MemtableBudget) -> (u64, u64) {
        let (mut unflushed, mut flushing) = (0u64, 0u64);
        for t in self.read().values() {
            unflushed += t.memtable.read().heap_bytes();
            flushing += t
                .flushing
                .read()
                .iter()
                .map(|m| m.heap_bytes())
                .sum::<u64>();
        }
        let freeing = budget.freeing_bytes.load(Ordering::Relaxed);
        (unflushed, unflushed + flushing + freeing)
    }

    pub(crate) fn write(&self) -> parking_lot::RwLockWriteGuard<'_, HashMap<TableId, Arc<Table>>> {
        self.0.write()
    }
}

/// Per-table counters for TableStats.
#[derive(Default)]
pub(crate) struct TableCounters {
    pub reads: AtomicU64,
    pub writes: AtomicU64,
    pub memtable_switches: AtomicU64,
    pub bloom_false_positives: AtomicU64,
    pub max_sstables_per_read: AtomicU64,
    pub key_cache_hits: AtomicU64,
    pub key_cache_requests: AtomicU64,
    pub row_cache_hits: AtomicU64,
    pub row_cache_requests: AtomicU64,
    /// SSTables a single-partition read did not visit thanks to the max-timestamp
    /// short-circuit (read/shortcut.rs), counting those whose token range holds the partition.
    pub sstables_skipped_by_timestamp: AtomicU64,
    /// Rows (live or deleted) merged from memtables and SSTables by reads, before deletions,
    /// TTLs and limits apply: what reads cost in rows, whatever they return.
    pub rows_merged: AtomicU64,
    /// Tombstones reads scanned (read/tombstones.rs), the most one read scanned, and reads
    /// abandoned past the tombstone failure threshold.
    pub tombstones_scanned: AtomicU64,
    pub tombstones_scanned_max: AtomicU64,
    pub tombstone_failures: AtomicU64,
    /// Local read and write latency (ns) and SSTables per single-partition read, for
    /// `nodetool tablehistograms`.
    pub read_latency: LatencyHistogram,
    pub write_latency: LatencyHistogram,
    pub sstables_per_read: SSTablesPerReadHistogram,
}

/// One table's state.
/// A table's live SSTables, shared by the reads that took it.
pub(crate) type SSTableSet = Arc<Vec<Arc<SSTableReader>>>;

pub(crate) struct Table {
    pub def: RwLock<TableDef>,
    pub layout: RwLock<Arc<TableLayout>>,
    pub dir: PathBuf,
    /// The active memtable; writers hold the read lock across commitlog append + insert, so a
    /// switch (write lock) sees a log position that covers exactly the old memtable's entries.
    pub memtable: RwLock<Arc<Memtable>>,
    pub flushing: RwLock<Vec<Arc<Memtable>>>,
    /// Replaced whole (copy on write) when SSTables come or go, so a read takes the set with
    /// one reference count instead of one per SSTable.
    pub sstables: RwLock<SSTableSet>,
    pub next_gen: AtomicU64,
    pub flush_lock: Mutex<()>,
    /// Generations taken by a running compaction.
    pub compacting: Mutex<HashSet<u64>>,
    /// Held while SSTables' repair states change and while a compaction decides and writes its
    /// outputs' states and swaps them in: a repair finalized or released meanwhile then either
    /// finds the inputs still live (and the outputs inherit the new state) or the outputs.
    pub repair_lock: Mutex<()>,
    /// Outputs of single-SSTable tombstone compactions that purged nothing: not retried, or
    /// every flush would rewrite them again.
    pub futile_tombstone_gens: Mutex<HashSet<u64>>,
    pub counters: TableCounters,
    /// Bumped whenever a memtable stops being live (its flush finished, or a truncate): a range
    /// scan that listed keys from memtables checks it per partition, a load instead of locks.
    pub memtables_retired: AtomicU64,
    pub dropped: AtomicBool,
    /// The secondary indexes whose entries every write to this table adds (index.rs).
    pub indexes: RwLock<Arc<[crate::index::IndexDef]>>,
    /// For an index's table: whether its build completed (the marker file, read once here so
    /// a query need not look at the disk).
    pub index_built: AtomicBool,
}

impl Table {
    pub fn id(&self) -> TableId {
        self.def.read().id
    }
}
