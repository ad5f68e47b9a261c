//! The engine: tables, the write path (commitlog then memtable), the read path (memtables and
//! SSTables merged), and the admin operations.

mod admin;
mod backpressure;
mod columnar;
mod indexes;
mod pinned;
mod repair;
#[cfg(test)]
mod repair_tests;
mod repair_write;
mod whole;
#[cfg(test)]
mod whole_tests;

use crate::clustering::CKey;
use crate::codec::{decode_partition, encode_partition, Reader, Writer};
use crate::commitlog::{self, Commitlog};
use crate::compaction::{Background, WorkerConfig};
use crate::memtable::budget::MemtableBudget;
use crate::memtable::Memtable;
use crate::partition::{self, Partition, TableLayout};
use crate::path_name::PathName;
use crate::read::caches::Caches;
use crate::read::ReadPath;
use crate::reconcile::{Cell, CellKind};
use crate::sstable::{self, SSTableReader};
use crate::table::{Table, TableCounters, Tables};
use crate::types::*;
pub use backpressure::{WriteStallStats, MAX_WRITE_STALL_MS, MEMTABLE_BACKPRESSURE_FACTOR};
use bytes::Bytes;
use helenus_types::SharedClock;
use parking_lot::{Mutex, RwLock};
pub use pinned::PinnedTable;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
pub use whole::{append_received, span_inside, ComponentInfo, WholeSSTable};

/// Stripes of the per-partition lock that serialises counter read-modify-write.
const COUNTER_LOCK_STRIPES: usize = 1024;

/// The storage engine of one node: the public API over its parts, each of which the others
/// reach without the engine.
pub struct Engine {
    config: StorageConfig,
    /// Shared with the flush thread, which discards segments once their data is flushed.
    log: Arc<Commitlog>,
    /// Shared with the background threads, which look tables up by the id of their job.
    tables: Arc<Tables>,
    /// The caches and the read path over memtables and SSTables.
    reads: ReadPath,
    /// Memtable memory: flush requests, memtables being freed, writers waiting for flushes.
    budget: Arc<MemtableBudget>,
    /// The flush thread and compaction pool, with their job queues and running tasks.
    background: Arc<Background>,
    /// Local deletion times of writes; the system clock (`StorageConfig` has no room for another
    /// without changing the public API).
    clock: SharedClock,
    counter_locks: Vec<Mutex<()>>,
    lock_hasher: RandomState,
    replay_segments: Mutex<Vec<u64>>,
}

fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

impl Engine {
    /// Opens the engine: creates directories, starts a new commitlog segment and the background
    /// threads. Existing segments are replayed by `replay_commitlog` once tables are created.
    pub fn open(config: StorageConfig) -> Result<Arc<Engine>, StorageError> {
        std::fs::create_dir_all(&config.data_dir)
            .map_err(|e| StorageError::io(&config.data_dir, e))?;
        std::fs::create_dir_all(&config.commitlog_dir)
            .map_err(|e| StorageError::io(&config.commitlog_dir, e))?;
        let existing = commitlog::list_segments(&config.commitlog_dir)?;
        let log = Commitlog::open(
            &config.commitlog_dir,
            config.commitlog_sync,
            config.commitlog_segment_size_bytes,
        )?;
        let tables = Arc::new(Tables::default());
        let caches = Caches::new(&config);
        let budget = Arc::new(MemtableBudget::sharing_with(
            caches.chunk.clone(),
            caches.chunk.budget_bytes(),
        ));
        let clock = config.clock.clone();
        let background = Background::start(
            WorkerConfig::of(&config),
            clock.clone(),
            tables.clone(),
            log.clone(),
            budget.clone(),
        )?;
        let engine = Arc::new(Engine {
            reads: ReadPath::new(caches),
            config,
            log,
            tables,
            budget,
            background,
            clock,
            counter_locks: (0..COUNTER_LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
            lock_hasher: RandomState::new(),
            replay_segments: Mutex::new(existing),
        });
        Ok(engine)
    }

    pub(crate) fn table(&self, id: TableId) -> Result<Arc<Table>, StorageError> {
        self.tables.get(id)
    }

    /// `<data>/<keyspace>/<table>-<id hex>`; the names are validated here too (CQL already
    /// restricts them) because a table directory is created and later deleted recursively.
    pub(crate) fn table_dir(&self, def: &TableDef) -> Result<PathBuf, StorageError> {
        let keyspace = PathName::new("keyspace name", &def.keyspace)?;
        let table = PathName::new("table name", &format!("{}-{}", def.name, hex(&def.id)))?;
        Ok(self.config.data_dir.join(keyspace).join(table))
    }

    /// Registers a table (at CREATE TABLE and at startup) and loads its SSTables.
    pub fn create_table(&self, def: TableDef) -> Result<(), StorageError> {
        if self.tables.read().contains_key(&def.id) {
            return self.alter_table(def);
        }
        let dir = self.table_dir(&def)?;
        let built = dir.join(crate::index::BUILT_MARKER).exists();
        std::fs::create_dir_all(&dir).map_err(|e| StorageError::io(&dir, e))?;
        let layout = Arc::new(TableLayout::new(&def));
        let gens = sstable::list_generations(&dir)?;
        let mut readers = Vec::new();
        for g in &gens {
            readers.push(SSTableReader::open(&dir, *g, &layout.cmp)?);
        }
        let table = Arc::new(Table {
            def: RwLock::new(def.clone()),
            layout: RwLock::new(layout),
            dir,
            memtable: RwLock::new(Arc::new(Memtable::default())),
            flushing: RwLock::new(Vec::new()),
            sstables: RwLock::new(Arc::new(readers)),
            next_gen: AtomicU64::new(gens.last().map_or(1, |g| g + 1)),
            flush_lock: Mutex::new(()),
            compacting: Mutex::new(HashSet::new()),
            repair_lock: Mutex::new(()),
            futile_tombstone_gens: Mutex::new(HashSet::new()),
            counters: TableCounters::default(),
            memtables_retired: AtomicU64::new(0),
            dropped: AtomicBool::new(false),
            indexes: RwLock::new(Arc::from(Vec::new())),
            index_built: AtomicBool::new(built),
        });
        self.tables.write().insert(def.id, table);
        Ok(())
    }

    /// Updates a table's options and columns (clustering never changes after creation).
    pub fn alter_table(&self, def: TableDef) -> Result<(), StorageError> {
        let t = self.table(def.id)?;
        let old_cmp = t.layout.read().cmp.clone();
        let mut layout = TableLayout::new(&def);
        // Keep the comparator instance the stored clusterings already reference.
        layout.cmp = old_cmp;
        *t.layout.write() = Arc::new(layout);
        *t.def.write() = def;
        Ok(())
    }

    /// Drops a table: forgets it and deletes its files (no snapshot).
    pub fn drop_table(&self, id: TableId) -> Result<(), StorageError> {
        let Some(t) = self.tables.write().remove(&id) else {
            return Ok(());
        };
        t.dropped.store(true, Ordering::Relaxed);
        // An index has no life without its table.
        let indexes = t.indexes.read().clone();
        for def in indexes.iter() {
            self.drop_table(def.index_table)?;
        }
        let _f = t.flush_lock.lock();
        self.log.forget_table(id);
        let uids: HashSet<u64> = t.sstables.read().iter().map(|s| s.uid).collect();
        self.reads.caches.forget_sstables(&uids);
        self.reads.caches.row.retain(|k| k.0 != id);
        match std::fs::remove_dir_all(&t.dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StorageError::io(&t.dir, e)),
        }
    }

    /// Removes all data of a table (memtables and SSTables; snapshots are kept).
    pub fn truncate(&self, id: TableId) -> Result<(), StorageError> {
        let t = self.table(id)?;
        let indexes = t.indexes.read().clone();
        for def in indexes.iter() {
            if self.tables.read().contains_key(&def.index_table) {
                self.truncate(def.index_table)?;
            }
        }
        let _f = t.flush_lock.lock();
        {
            let mut mt = t.memtable.write();
            *mt = Arc::new(Memtable::default());
            t.flushing.write().clear();
            t.memtables_retired.fetch_add(1, Ordering::Release);
            self.log.forget_table(id);
        }
        let old: Vec<Arc<SSTableReader>> = std::mem::take(&mut *t.sstables.write()).to_vec();
        for s in &old {
            for p in s.component_paths() {
                let _ = std::fs::remove_file(p);
            }
        }
        let uids: HashSet<u64> = old.iter().map(|s| s.uid).collect();
        self.reads.caches.forget_sstables(&uids);
        self.reads.caches.row.retain(|k| k.0 != id);
        Ok(())
    }

    /// Replays commitlog segments found at open into the memtables, flushes, and deletes them.
    pub fn replay_commitlog(&self) -> Result<ReplayStats, StorageError> {
        let ids = std::mem::take(&mut *self.replay_segments.lock());
        let mut stats = ReplayStats::default();
        for id in &ids {
            let path = self
                .config
                .commitlog_dir
                .join(format!("CommitLog-hl1-{id}.log"));
            let (entries, torn) = commitlog::read_segment(&path)?;
            stats.segments += 1;
            stats.corrupt_tails += usize::from(torn);
            let ends = commitlog::entry_ends(&entries);
            for (payload, end) in entries.iter().zip(ends) {
                self.replay_entry(payload, (*id, end), &mut stats);
            }
        }
        if !ids.is_empty() {
            self.flush(None)?;
            self.log.discard_replayed(&ids);
        }
        Ok(stats)
    }

    fn replay_entry(&self, payload: &[u8], end: commitlog::LogPosition, stats: &mut ReplayStats) {
        let mut r = Reader::new(payload, "commitlog entry");
        let Ok(n) = r.u32() else {
            stats.mutations_skipped += 1;
            return;
        };
        for _ in 0..n {
            let Ok(id) = r.take(16).map(|b| {
                let mut a = [0u8; 16];
                a.copy_from_slice(b);
                a
            }) else {
                return;
            };
            let Ok(len) = r.u32() else { return };
            let Ok(body) = r.take(len as usize) else {
                return;
            };
            if self.log.flushed_before_open(&id, end) {
                stats.mutations_already_flushed += 1;
                continue;
            }
            let Ok(t) = self.table(id) else {
                stats.mutations_skipped += 1;
                continue;
            };
            let cmp = t.layout.read().cmp.clone();
            match decode_partition(&mut Reader::new(body, "commitlog partition"), &cmp) {
                Ok(p) => {
                    t.memtable.read().apply(p, u64::from(len));
                    stats.mutations_replayed += 1;
                }
                Err(_) => stats.mutations_skipped += 1,
            }
        }
    }

    /// Applies one mutation; when this returns the write is durable as `commitlog_sync` promises.
    pub async fn apply(&self, m: Mutation) -> Result<(), StorageError> {
        self.wait_for_memtable_space().await;
        let seq = self.apply_local(std::slice::from_ref(&m))?;
        self.log.wait_durable(seq).await
    }

    /// Applies several mutations atomically (one commitlog entry): a logged batch on one node.
    pub async fn apply_batch(&self, ms: Vec<Mutation>) -> Result<(), StorageError> {
        self.wait_for_memtable_space().await;
        let seq = self.apply_local(&ms)?;
        self.log.wait_durable(seq).await
    }

    /// Blocking `apply_batch` for callers outside an async runtime (tools, tests).
    pub fn apply_blocking(&self, ms: &[Mutation]) -> Result<(), StorageError> {
        self.wait_for_memtable_space_blocking();
        let seq = self.apply_local(ms)?;
        self.log.wait_durable_blocking(seq)
    }

    fn counter_stripes(&self, ms: &[Mutation]) -> Vec<usize> {
        let mut s: Vec<usize> = ms
            .iter()
            .filter(|m| m.has_counter_increments())
            .map(|m| self.lock_hasher.hash_one((m.table, &m.key)) as usize % COUNTER_LOCK_STRIPES)
            .collect();
        s.sort_unstable();
        s.dedup();
        s
    }

    /// Applies counter increments as the leader of their shard (the cell path each increment
    /// names) and returns the mutations as the other replicas must apply them: every increment
    /// replaced by its cell's resolved (clock, total). Replaying those anywhere, any number of
    /// times, converges (the higher clock wins), which replaying an increment would not.
    pub async fn apply_as_counter_leader(
        &self,
        ms: Vec<Mutation>,
    ) -> Result<Vec<Mutation>, StorageError> {
        self.wait_for_memtable_space().await;
        let mut resolved = HashMap::new();
        let seq = self.apply_local_resolving(&ms, &mut resolved)?;
        self.log.wait_durable(seq).await?;
        Ok(ms
            .into_iter()
            .map(|m| with_resolved_counters(m, &resolved))
            .collect())
    }

    /// Resolves counters, logs, and inserts into memtables; returns the commitlog sequence number.
    fn apply_local(&self, ms: &[Mutation]) -> Result<u64, StorageError> {
        self.apply_local_resolving(ms, &mut HashMap::new())
    }

    /// `apply_local`, leaving each counter cell's resolved (clock, total) in `resolved`.
    fn apply_local_resolving(
        &self,
        ms: &[Mutation],
        resolved: &mut HashMap<CounterCellKey, (i64, i64)>,
    ) -> Result<u64, StorageError> {
        let started = Instant::now();
        let now = self.clock.wall_secs();
        let stripes = self.counter_stripes(ms);
        let _counter_guards: Vec<_> = stripes
            .iter()
            .filter_map(|i| self.counter_locks.get(*i))
            .map(|l| l.lock())
            .collect();
        let mut parts: Vec<(Arc<Table>, Partition)> = Vec::with_capacity(ms.len());
        // Counter values already resolved in this entry: a later increment of the same cell must
        // build on them, not on the pre-entry state, or one of the two increments is lost.
        for m in ms {
            let t = self.table(m.table)?;
            let layout = t.layout.read().clone();
            let mut p = if m.has_counter_increments() {
                self.resolve_counters(&t, &layout, m, resolved)?
            } else {
                Partition::from_mutation(m, &layout)?
            };
            partition::stamp_local_times(&mut p, now);
            let indexes = t.indexes.read().clone();
            parts.push((t, p));
            if !indexes.is_empty() {
                self.index_parts(m, &indexes, now, &mut parts)?;
            }
        }
        let hint: usize = parts
            .iter()
            .map(|(_, p)| 20 + crate::codec::encoded_len_hint(p))
            .sum();
        let mut entry = Commitlog::new_entry(4 + hint);
        let mut sizes = Vec::with_capacity(parts.len());
        Writer(&mut entry).u32(parts.len() as u32);
        for (t, p) in &parts {
            entry.extend_from_slice(&t.id());
            let at = entry.len();
            Writer(&mut entry).u32(0);
            encode_partition(&mut entry, p);
            let len = (entry.len() - at - 4) as u32;
            if let Some(slot) = entry.get_mut(at..at + 4) {
                slot.copy_from_slice(&len.to_be_bytes());
            }
            sizes.push(u64::from(len));
        }
        // Lock memtables in table-id order so concurrent batches cannot deadlock with a switch.
        let mut tables: Vec<Arc<Table>> = parts.iter().map(|(t, _)| t.clone()).collect();
        tables.sort_by_key(|t| t.id());
        tables.dedup_by_key(|t| t.id());
        let ids: Vec<TableId> = tables.iter().map(|t| t.id()).collect();
        let guards: Vec<(TableId, parking_lot::RwLockReadGuard<'_, Arc<Memtable>>)> =
            tables.iter().map(|t| (t.id(), t.memtable.read())).collect();
        let (seq, pos) = self.log.append(&mut entry, &ids)?;
        let mut written: Vec<(TableId, i64, Bytes)> = Vec::with_capacity(parts.len());
        let step = self.budget_step_bytes();
        let mut look_at_budget = false;
        for ((t, p), size) in parts.into_iter().zip(sizes) {
            if let Some((_, mt)) = guards.iter().find(|(id, _)| *id == t.id()) {
                written.push((t.id(), p.token, p.key.clone()));
                let (before, after) = mt.apply(p, size);
                look_at_budget |= before / step != after / step;
                mt.note_log_position(pos);
            }
            t.counters.writes.fetch_add(1, Ordering::Relaxed);
        }
        drop(guards);
        // Cassandra's local write latency: from the mutation's arrival to its memtable insert
        // (not the commitlog sync a batch-mode writer then waits for).
        let took_ns = elapsed_ns(started);
        for t in &tables {
            t.counters.write_latency.record(took_ns);
        }
        self.reads.caches.invalidate_row_cache(&written);
        if look_at_budget {
            self.maybe_trigger_flush();
        }
        Ok(seq)
    }

    /// Counter read-modify-write (under the partition's counter lock): each increment becomes an
    /// absolute cell with the next logical clock. `resolved` carries the (clock, total) of cells
    /// already resolved earlier in the same commitlog entry, so increments within one entry add up.
    fn resolve_counters(
        &self,
        t: &Arc<Table>,
        layout: &TableLayout,
        m: &Mutation,
        resolved: &mut HashMap<CounterCellKey, (i64, i64)>,
    ) -> Result<Partition, StorageError> {
        let mut plain = m.clone();
        let mut adds: Vec<CounterAdd> = Vec::new();
        let rows = plain
            .static_row
            .iter_mut()
            .map(|r| (true, r))
            .chain(plain.rows.iter_mut().map(|r| (false, r)));
        for (is_static, r) in rows {
            r.cells.retain(|c| match c.op {
                CellOp::CounterAdd(d) => {
                    let ck = (!is_static).then(|| r.clustering.clone());
                    adds.push((ck, c.column, c.path.clone(), c.timestamp_us, d));
                    false
                }
                _ => true,
            });
        }
        let mut p = Partition::from_mutation(&plain, layout)?;
        let current = self.reads.merged_partition(t, m.token, &m.key, None)?;
        for (ck, col, path, ts, delta) in adds {
            let cell_key: CounterCellKey = (m.table, m.key.clone(), ck.clone(), col, path.clone());
            let base = resolved.get(&cell_key).copied();
            let (clock, total) = base
                .or_else(|| {
                    current.as_ref().and_then(|cp| {
                        let row = match &ck {
                            None => Some(&cp.static_row),
                            Some(v) => cp.rows.get(&CKey::row(v.clone(), &layout.cmp)),
                        }?;
                        let d = match &ck {
                            None => cp.deletion,
                            Some(v) => cp.covering_deletion(&CKey::row(v.clone(), &layout.cmp)),
                        };
                        let d = crate::reconcile::max_deletion(d, row.deletion);
                        let cell = row.cells.get(&(col, path.clone()))?;
                        match cell.kind {
                            // A deleted counter restarts from zero but keeps its clock moving forward.
                            CellKind::Counter { clock, .. }
                                if crate::reconcile::deletes(d, cell.timestamp_us) =>
                            {
                                Some((clock, 0))
                            }
                            CellKind::Counter { clock, total } => Some((clock, total)),
                            _ => None,
                        }
                    })
                })
                .unwrap_or((0, 0));
            let (clock, total) = (clock + 1, total.wrapping_add(delta));
            resolved.insert(cell_key, (clock, total));
            let cell = Cell {
                timestamp_us: ts,
                kind: CellKind::Counter { clock, total },
            };
            let put = |row: &mut partition::Row| row.cells.insert((col, path), cell);
            match ck {
                None => put(&mut p.static_row),
                Some(v) => p.rows.with_row_or_default(CKey::row(v, &layout.cmp), put),
            };
        }
        Ok(p)
    }

    /// Turns the max-timestamp short-circuit of single-partition reads on or off (on by
    /// default; off is for tests that compare both and for diagnosis).
    pub fn set_read_shortcut(&self, on: bool) {
        self.reads.shortcut.store(on, Ordering::Relaxed);
    }

    /// Hits, requests and sizes of the key, chunk and row caches (engine-wide).
    pub fn cache_stats(&self) -> CacheStats {
        self.reads.caches.stats()
    }

    /// Reads live data, however many tombstones that takes.
    pub fn read(&self, table: TableId, q: &ReadQuery) -> Result<ReadResult, StorageError> {
        self.read_bounded(table, q, u64::MAX)
    }

    /// Reads live data, counting the tombstones scanned into the result's stats; fails with
    /// `TombstoneOverwhelming` as soon as more than `tombstone_failure_threshold` were scanned
    /// (Cassandra's `tombstone_failure_threshold`), without reading the rest.
    pub fn read_bounded(
        &self,
        table: TableId,
        q: &ReadQuery,
        tombstone_failure_threshold: u64,
    ) -> Result<ReadResult, StorageError> {
        let t = self.table(table)?;
        let started = Instant::now();
        let r = self
            .reads
            .read_counted(&t, q, tombstone_failure_threshold, None);
        t.counters.read_latency.record(elapsed_ns(started));
        r
    }

    /// What this node stores for `q`: every partition the read covers with its deletions,
    /// timestamps and TTLs (in the canonical form read/unfiltered.rs describes), for a
    /// coordinator to reconcile replicas and compare digests. Limits count live rows as
    /// `read_bounded` does, so the read stops at the same row; the tombstone threshold too.
    pub fn read_unfiltered(
        &self,
        table: TableId,
        q: &ReadQuery,
        tombstone_failure_threshold: u64,
    ) -> Result<UnfilteredResult, StorageError> {
        let t = self.table(table)?;
        let started = Instant::now();
        let r = self
            .reads
            .read_unfiltered(&t, q, tombstone_failure_threshold);
        t.counters.read_latency.record(elapsed_ns(started));
        r
    }

    /// What `read_bounded(q)` would return on a node holding all of `answers` (unfiltered
    /// partitions of `table` from any number of replicas), merged by the reconcile rules. The
    /// result's stats count the merged data's tombstones. With a row or partition limit and
    /// several answers it may return fewer rows (no short-read protection yet, see
    /// read/unfiltered.rs).
    pub fn resolve_unfiltered(
        &self,
        table: TableId,
        answers: Vec<Vec<Mutation>>,
        q: &ReadQuery,
    ) -> Result<ReadResult, StorageError> {
        let t = self.table(table)?;
        crate::read::resolve(&t, answers, q)
    }

    /// Bytes held by all memtables (active, flushing and being freed), allocator overhead
    /// included: what `memtable_space_bytes` bounds.
    pub(crate) fn memtable_bytes(&self) -> u64 {
        self.memtable_usage().1
    }

    /// (bytes of the memtables taking writes, bytes of all memtables): the first is what
    /// `memtable_cleanup_threshold` is a fraction of the space for, the second what the space
    /// bounds.
    fn memtable_usage(&self) -> (u64, u64) {
        self.tables.memtable_usage(&self.budget)
    }

    /// Heap growth of one memtable between two looks at the node's memtable budget: small
    /// against the budget (1/256 of it), so a switch or a writers' wait starts late by at most
    /// that much per table written.
    fn budget_step_bytes(&self) -> u64 {
        (self.config.memtable_space_bytes / 256).clamp(4 << 10, 64 << 10)
    }

    /// Looks at the node's memtables: starts a flush of the largest when they are over the
    /// cleanup threshold or the space, and notes for writers whether they are over their limit.
    pub(crate) fn maybe_trigger_flush(&self) {
        let space = self.config.memtable_space_bytes.max(1 << 20);
        let threshold = self.config.memtable_cleanup_threshold.clamp(0.01, 1.0);
        let cleanup_at = (space as f64 * threshold) as u64;
        let (unflushed, all) = self.memtable_usage();
        self.budget.note_memtable_bytes(all);
        self.budget
            .maybe_over_limit
            .store(all >= self.memtable_limit_bytes(), Ordering::Relaxed);
        if unflushed < cleanup_at && all < space {
            return;
        }
        if self.budget.flush_pending.swap(true, Ordering::AcqRel) {
            return;
        }
        let largest = self
            .tables
            .read()
            .values()
            .max_by_key(|t| t.memtable.read().heap_bytes())
            .map(|t| t.id());
        let sent = largest.is_some_and(|id| self.background.request_flush(id));
        if !sent {
            self.budget.flush_pending.store(false, Ordering::Release);
        }
    }
}

/// A pending increment: (clustering or None for static, column, cell path, timestamp, delta).
type CounterAdd = (Option<Vec<Bytes>>, ColumnId, Option<Bytes>, i64, i64);
/// One counter cell: (table, partition key, clustering or None for static, column, cell path).
type CounterCellKey = (TableId, Bytes, Option<Vec<Bytes>>, ColumnId, Option<Bytes>);

/// `m` with each counter increment replaced by the state it resolved to.
fn with_resolved_counters(
    mut m: Mutation,
    resolved: &HashMap<CounterCellKey, (i64, i64)>,
) -> Mutation {
    let (table, key) = (m.table, m.key.clone());
    let rows = m
        .static_row
        .iter_mut()
        .map(|r| (true, r))
        .chain(m.rows.iter_mut().map(|r| (false, r)));
    for (is_static, r) in rows {
        let ck = (!is_static).then(|| r.clustering.clone());
        for c in &mut r.cells {
            if !matches!(c.op, CellOp::CounterAdd(_)) {
                continue;
            }
            let cell_key = (table, key.clone(), ck.clone(), c.column, c.path.clone());
            if let Some(&(clock, total)) = resolved.get(&cell_key) {
                c.op = CellOp::CounterState { clock, total };
            }
        }
    }
    m
}

/// Nanoseconds since `started`, saturated (a latency past 584 years is still the largest).
fn elapsed_ns(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX)
}
