//! The engine: tables, the write path (commitlog then memtable), the read path (memtables and
//! SSTables merged), and the admin operations.

mod admin;
mod backpressure;

use crate::byte_cache::ByteCache;
use crate::clustering::CKey;
use crate::codec::{decode_partition, encode_partition, Reader, Writer};
use crate::commitlog::{self, Commitlog};
use crate::memtable::{self, Memtable, PKey};
use crate::partition::{self, Limits, Partition, TableLayout};
use crate::path_name::PathName;
use crate::read::caches::{KeyCacheKey, RowCacheKey};
use crate::reconcile::{Cell, CellKind};
use crate::sstable::{self, ChunkKey, SSTableReader};
use crate::types::*;
pub use backpressure::{WriteStallStats, MAX_WRITE_STALL_MS, MEMTABLE_BACKPRESSURE_FACTOR};
use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

/// Stripes of the per-partition lock that serialises counter read-modify-write.
const COUNTER_LOCK_STRIPES: usize = 1024;
/// Stripes of the row cache's write epochs.
pub(crate) const ROW_CACHE_EPOCH_STRIPES: usize = 1024;
/// Partitions fetched per source per round of a range scan.
const RANGE_BATCH: usize = 256;

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
    /// short-circuit (read_shortcut.rs), counting only those whose bloom filter said maybe.
    pub sstables_skipped_by_timestamp: AtomicU64,
    /// Rows (live or deleted) merged from memtables and SSTables by reads, before deletions,
    /// TTLs and limits apply: what reads cost in rows, whatever they return.
    pub rows_merged: AtomicU64,
    /// Tombstones reads scanned (read_tombstones.rs), the most one read scanned, and reads
    /// abandoned past the tombstone failure threshold.
    pub tombstones_scanned: AtomicU64,
    pub tombstones_scanned_max: AtomicU64,
    pub tombstone_failures: AtomicU64,
}

/// One table's state.
pub(crate) struct Table {
    pub def: RwLock<TableDef>,
    pub layout: RwLock<Arc<TableLayout>>,
    pub dir: PathBuf,
    /// The active memtable; writers hold the read lock across commitlog append + insert, so a
    /// switch (write lock) sees a log position that covers exactly the old memtable's entries.
    pub memtable: RwLock<Arc<Memtable>>,
    pub flushing: RwLock<Vec<Arc<Memtable>>>,
    pub sstables: RwLock<Vec<Arc<SSTableReader>>>,
    pub next_gen: AtomicU64,
    pub flush_lock: Mutex<()>,
    /// Generations taken by a running compaction.
    pub compacting: Mutex<HashSet<u64>>,
    /// Outputs of single-SSTable tombstone compactions that purged nothing: not retried, or
    /// every flush would rewrite them again.
    pub futile_tombstone_gens: Mutex<HashSet<u64>>,
    pub counters: TableCounters,
    pub dropped: AtomicBool,
}

impl Table {
    pub fn id(&self) -> TableId {
        self.def.read().id
    }
}

/// Background work requests.
pub(crate) enum Job {
    Flush(TableId),
    Compact(TableId),
}

/// The storage engine of one node.
pub struct Engine {
    pub(crate) config: StorageConfig,
    pub(crate) log: Arc<Commitlog>,
    pub(crate) tables: RwLock<HashMap<TableId, Arc<Table>>>,
    counter_locks: Vec<Mutex<()>>,
    pub(crate) lock_hasher: RandomState,
    replay_segments: Mutex<Vec<u64>>,
    pub(crate) chunk_cache: ByteCache<ChunkKey, Vec<u8>>,
    pub(crate) key_cache: ByteCache<KeyCacheKey, sstable::IndexEntry>,
    pub(crate) row_cache: ByteCache<RowCacheKey, Partition>,
    /// Bumped (per stripe of partitions) by every write, so a read that merged sources before
    /// the write cannot leave a stale partition in the row cache (see `caches.rs`).
    pub(crate) row_cache_epochs: Vec<AtomicU64>,
    /// Flush requests (one flush thread).
    pub(crate) jobs: Mutex<Option<mpsc::Sender<Job>>>,
    /// Compaction requests (a pool of `concurrent_compactors` threads).
    pub(crate) compaction_jobs: Mutex<Option<mpsc::Sender<Job>>>,
    pub(crate) flush_pending: AtomicBool,
    /// Bytes of flushed memtables being freed (still held; counted by `memtable_bytes`).
    pub(crate) freeing_memtable_bytes: AtomicU64,
    pub(crate) progress: Mutex<HashMap<u64, CompactionProgress>>,
    pub(crate) next_task_id: AtomicU64,
    pub(crate) workers: Mutex<Vec<std::thread::JoinHandle<()>>>,
    /// Completed flush attempts, for writers waiting on backpressure (backpressure.rs).
    pub(crate) flushes_done: tokio::sync::watch::Sender<u64>,
    pub(crate) flush_wait: (Mutex<()>, parking_lot::Condvar),
    pub(crate) stalls: StallCounters,
    /// Whether single-partition reads use the max-timestamp short-circuit (on; tests compare).
    pub(crate) read_shortcut: AtomicBool,
}

/// Write backpressure counters.
#[derive(Default)]
pub(crate) struct StallCounters {
    pub stalled_writes: AtomicU64,
    pub stall_ms: AtomicU64,
    pub stall_timeouts: AtomicU64,
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
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
        let engine = Arc::new(Engine {
            chunk_cache: ByteCache::new(config.chunk_cache_bytes.max(1 << 20)),
            key_cache: ByteCache::new(config.key_cache_bytes),
            row_cache: ByteCache::new(config.row_cache_bytes),
            row_cache_epochs: (0..ROW_CACHE_EPOCH_STRIPES)
                .map(|_| AtomicU64::new(0))
                .collect(),
            config,
            log,
            tables: RwLock::new(HashMap::new()),
            counter_locks: (0..COUNTER_LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
            lock_hasher: RandomState::new(),
            replay_segments: Mutex::new(existing),
            jobs: Mutex::new(None),
            compaction_jobs: Mutex::new(None),
            flush_pending: AtomicBool::new(false),
            freeing_memtable_bytes: AtomicU64::new(0),
            progress: Mutex::new(HashMap::new()),
            next_task_id: AtomicU64::new(1),
            workers: Mutex::new(Vec::new()),
            flushes_done: tokio::sync::watch::Sender::new(0),
            flush_wait: (Mutex::new(()), parking_lot::Condvar::new()),
            stalls: StallCounters::default(),
            read_shortcut: AtomicBool::new(true),
        });
        crate::compaction::start_workers(&engine)?;
        Ok(engine)
    }

    pub(crate) fn table(&self, id: TableId) -> Result<Arc<Table>, StorageError> {
        self.tables
            .read()
            .get(&id)
            .cloned()
            .ok_or(StorageError::UnknownTable(id))
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
            sstables: RwLock::new(readers),
            next_gen: AtomicU64::new(gens.last().map_or(1, |g| g + 1)),
            flush_lock: Mutex::new(()),
            compacting: Mutex::new(HashSet::new()),
            futile_tombstone_gens: Mutex::new(HashSet::new()),
            counters: TableCounters::default(),
            dropped: AtomicBool::new(false),
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
        let _f = t.flush_lock.lock();
        self.log.forget_table(id);
        let uids: HashSet<u64> = t.sstables.read().iter().map(|s| s.uid).collect();
        self.forget_sstables(&uids);
        self.row_cache.retain(|k| k.0 != id);
        match std::fs::remove_dir_all(&t.dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StorageError::io(&t.dir, e)),
        }
    }

    /// Removes all data of a table (memtables and SSTables; snapshots are kept).
    pub fn truncate(&self, id: TableId) -> Result<(), StorageError> {
        let t = self.table(id)?;
        let _f = t.flush_lock.lock();
        {
            let mut mt = t.memtable.write();
            *mt = Arc::new(Memtable::default());
            t.flushing.write().clear();
            self.log.forget_table(id);
        }
        let old: Vec<Arc<SSTableReader>> = std::mem::take(&mut *t.sstables.write());
        for s in &old {
            for p in s.component_paths() {
                let _ = std::fs::remove_file(p);
            }
        }
        let uids: HashSet<u64> = old.iter().map(|s| s.uid).collect();
        self.forget_sstables(&uids);
        self.row_cache.retain(|k| k.0 != id);
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
            for payload in entries {
                self.replay_entry(&payload, &mut stats);
            }
        }
        if !ids.is_empty() {
            self.flush(None)?;
            self.log.discard_replayed(&ids);
        }
        Ok(stats)
    }

    fn replay_entry(&self, payload: &[u8], stats: &mut ReplayStats) {
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
            .filter(|m| has_counter_ops(m))
            .map(|m| self.lock_hasher.hash_one((m.table, &m.key)) as usize % COUNTER_LOCK_STRIPES)
            .collect();
        s.sort_unstable();
        s.dedup();
        s
    }

    /// Resolves counters, logs, and inserts into memtables; returns the commitlog sequence number.
    fn apply_local(&self, ms: &[Mutation]) -> Result<u64, StorageError> {
        let now = now_s();
        let stripes = self.counter_stripes(ms);
        let _counter_guards: Vec<_> = stripes
            .iter()
            .filter_map(|i| self.counter_locks.get(*i))
            .map(|l| l.lock())
            .collect();
        let mut parts: Vec<(Arc<Table>, Partition)> = Vec::with_capacity(ms.len());
        // Counter values already resolved in this entry: a later increment of the same cell must
        // build on them, not on the pre-entry state, or one of the two increments is lost.
        let mut resolved: HashMap<CounterCellKey, (i64, i64)> = HashMap::new();
        for m in ms {
            let t = self.table(m.table)?;
            let layout = t.layout.read().clone();
            let mut p = if has_counter_ops(m) {
                self.resolve_counters(&t, &layout, m, &mut resolved)?
            } else {
                Partition::from_mutation(m, &layout)?
            };
            partition::stamp_local_times(&mut p, now);
            parts.push((t, p));
        }
        let mut payload = Vec::new();
        let mut sizes = Vec::with_capacity(parts.len());
        Writer(&mut payload).u32(parts.len() as u32);
        for (t, p) in &parts {
            payload.extend_from_slice(&t.id());
            let at = payload.len();
            Writer(&mut payload).u32(0);
            encode_partition(&mut payload, p);
            let len = (payload.len() - at - 4) as u32;
            if let Some(slot) = payload.get_mut(at..at + 4) {
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
        let (seq, pos) = self.log.append(&payload, &ids)?;
        let mut written: Vec<(TableId, i64, Bytes)> = Vec::with_capacity(parts.len());
        for ((t, p), size) in parts.into_iter().zip(sizes) {
            if let Some((_, mt)) = guards.iter().find(|(id, _)| *id == t.id()) {
                written.push((t.id(), p.token, p.key.clone()));
                mt.apply(p, size);
                mt.note_log_position(pos);
            }
            t.counters.writes.fetch_add(1, Ordering::Relaxed);
        }
        drop(guards);
        self.invalidate_row_cache(&written);
        self.maybe_trigger_flush();
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
        let current = self.merged_partition(t, m.token, &m.key, None)?;
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
            let row = match ck {
                None => &mut p.static_row,
                Some(v) => p.rows.entry(CKey::row(v, &layout.cmp)).or_default(),
            };
            row.cells.insert((col, path), cell);
        }
        Ok(p)
    }

    /// Merges one partition from every source; `ranges` restricts which rows are cloned.
    pub(crate) fn merged_partition(
        &self,
        t: &Table,
        token: i64,
        key: &Bytes,
        ranges: Option<&[(CKey, CKey)]>,
    ) -> Result<Option<Partition>, StorageError> {
        self.merged_partition_upto(t, token, key, ranges, false, usize::MAX, None)
            .map(|(p, _)| p)
    }

    /// Turns the max-timestamp short-circuit of single-partition reads on or off (on by
    /// default; off is for tests that compare both and for diagnosis).
    pub fn set_read_shortcut(&self, on: bool) {
        self.read_shortcut.store(on, Ordering::Relaxed);
    }

    /// Reads live data, however many tombstones that takes.
    pub fn read(&self, table: TableId, q: &ReadQuery) -> Result<ReadResult, StorageError> {
        self.read_bounded(table, q, u64::MAX)
    }

    pub(crate) fn read_limited(
        &self,
        t: &Table,
        q: &ReadQuery,
        limits: &mut Limits,
    ) -> Result<ReadResult, StorageError> {
        let layout = t.layout.read().clone();
        let partition_limit = q.partition_limit.unwrap_or(usize::MAX);
        let mut out = ReadResult::default();
        if limits.rows_left == 0 || limits.per_partition == 0 || partition_limit == 0 {
            return Ok(out);
        }
        let ranges = slice_ranges(q, &layout);
        match &q.partitions {
            PartitionRange::Single { key, token } => {
                let ranges = match &q.resume_after {
                    Some(r) => resume_ranges(ranges, r, q.reversed, &layout),
                    None => ranges,
                };
                if ranges.is_empty() {
                    return Ok(out);
                }
                let merged = if t.def.read().options.rows_per_partition_to_cache > 0
                    && self.config.row_cache_bytes > 0
                {
                    self.merged_partition_cached(t, *token, key)?
                        .map(|p| restrict(&p, Some(&ranges)))
                } else {
                    let d = self.read_single(t, *token, key, &ranges, q, &layout, limits, None)?;
                    out.partitions.extend(d);
                    return Ok(out);
                };
                if let Some(p) = merged {
                    if let Some(d) = partition::live_partition(&p, q, &layout, limits)? {
                        out.partitions.push(d);
                    }
                }
            }
            PartitionRange::Range { start, end } => {
                let Some(start) = memtable::start_bound(start) else {
                    return Ok(out);
                };
                let end = memtable::end_bound(end);
                self.read_range(
                    t,
                    start,
                    end,
                    q,
                    &layout,
                    &ranges,
                    limits,
                    partition_limit,
                    &mut out,
                )?;
            }
        }
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn read_range(
        &self,
        t: &Table,
        mut cursor: Bound<PKey>,
        end: Bound<PKey>,
        q: &ReadQuery,
        layout: &TableLayout,
        ranges: &[(CKey, CKey)],
        limits: &mut Limits,
        partition_limit: usize,
        out: &mut ReadResult,
    ) -> Result<(), StorageError> {
        loop {
            if !memtable::range_is_valid(&cursor, &end) {
                return Ok(());
            }
            let mut keys: Vec<PKey> = Vec::new();
            let mut safe_max: Option<PKey> = None;
            let mut note = |ks: Vec<PKey>, keys: &mut Vec<PKey>| {
                if ks.len() >= RANGE_BATCH {
                    if let Some(last) = ks.last() {
                        if !matches!(&safe_max, Some(s) if last >= s) {
                            safe_max = Some(last.clone());
                        }
                    }
                }
                keys.extend(ks);
            };
            let current = t.memtable.read().clone();
            let flushing: Vec<Arc<Memtable>> = t.flushing.read().clone();
            for mt in std::iter::once(&current).chain(flushing.iter()) {
                note(mt.keys_in_range(&cursor, &end, RANGE_BATCH), &mut keys);
            }
            let sstables: Vec<Arc<SSTableReader>> = t.sstables.read().clone();
            let mut entries = Vec::with_capacity(sstables.len());
            for s in &sstables {
                let es = s.entries_in_range(&cursor, &end, RANGE_BATCH)?;
                note(
                    es.iter().map(|e| (e.token, e.key.clone())).collect(),
                    &mut keys,
                );
                entries.push(es.into_iter().peekable());
            }
            keys.sort();
            keys.dedup();
            if let Some(s) = &safe_max {
                keys.retain(|k| k <= s);
            }
            let Some(last) = keys.last().cloned() else {
                return Ok(());
            };
            for (token, key) in keys {
                // The SSTables holding this key, with their index entries (keys come in order,
                // so each SSTable's entries are walked once).
                let mut located = Vec::new();
                for (s, es) in sstables.iter().zip(entries.iter_mut()) {
                    while es.peek().is_some_and(|e| (e.token, &e.key) < (token, &key)) {
                        es.next();
                    }
                    if let Some(e) = es.next_if(|e| e.token == token && e.key == key) {
                        located.push((s.clone(), Some(e)));
                    }
                }
                // Read as a single partition is, so a row limit bounds what is read of a huge
                // partition, not only what is returned (a page stops inside it and the next
                // page resumes there).
                let d =
                    self.read_single(t, token, &key, ranges, q, layout, limits, Some(&located))?;
                if let Some(d) = d {
                    out.partitions.push(d);
                    if out.partitions.len() >= partition_limit || limits.rows_left == 0 {
                        return Ok(());
                    }
                }
            }
            if safe_max.is_none() {
                return Ok(());
            }
            cursor = Bound::Excluded(last);
        }
    }

    /// Bytes held by all memtables (active, flushing and being freed), allocator overhead
    /// included: what `memtable_space_bytes` bounds.
    pub(crate) fn memtable_bytes(&self) -> u64 {
        self.tables
            .read()
            .values()
            .map(|t| {
                t.memtable.read().heap_bytes()
                    + t.flushing
                        .read()
                        .iter()
                        .map(|m| m.heap_bytes())
                        .sum::<u64>()
            })
            .sum::<u64>()
            + self.freeing_memtable_bytes.load(Ordering::Relaxed)
    }

    pub(crate) fn maybe_trigger_flush(&self) {
        if self.memtable_bytes() < self.config.memtable_space_bytes.max(1 << 20) {
            return;
        }
        if self.flush_pending.swap(true, Ordering::AcqRel) {
            return;
        }
        let largest = self
            .tables
            .read()
            .values()
            .max_by_key(|t| t.memtable.read().heap_bytes())
            .map(|t| t.id());
        match (largest, self.jobs.lock().as_ref()) {
            (Some(id), Some(tx)) => {
                if tx.send(Job::Flush(id)).is_err() {
                    self.flush_pending.store(false, Ordering::Release);
                }
            }
            _ => self.flush_pending.store(false, Ordering::Release),
        }
    }
}

/// A pending increment: (clustering or None for static, column, cell path, timestamp, delta).
type CounterAdd = (Option<Vec<Bytes>>, ColumnId, Option<Bytes>, i64, i64);
/// One counter cell: (table, partition key, clustering or None for static, column, cell path).
type CounterCellKey = (TableId, Bytes, Option<Vec<Bytes>>, ColumnId, Option<Bytes>);

fn has_counter_ops(m: &Mutation) -> bool {
    m.static_row.iter().chain(m.rows.iter()).any(|r| {
        r.cells
            .iter()
            .any(|c| matches!(c.op, CellOp::CounterAdd(_)))
    })
}

/// `ranges` cut to what follows `resume` in the read's order (a paged read resumed inside a
/// partition): what the last page returned is not read again.
fn resume_ranges(
    ranges: Vec<(CKey, CKey)>,
    resume: &[Bytes],
    reversed: bool,
    layout: &TableLayout,
) -> Vec<(CKey, CKey)> {
    let at = |weight| CKey {
        values: resume.to_vec(),
        weight,
        cmp: layout.cmp.clone(),
    };
    let (after, before) = (at(1), at(-1));
    ranges
        .into_iter()
        .filter_map(|(s, e)| {
            let (s, e) = if reversed {
                (s, e.min(before.clone()))
            } else {
                (s.max(after.clone()), e)
            };
            (s <= e).then_some((s, e))
        })
        .collect()
}

/// The query's slices as comparator positions (all rows when none).
fn slice_ranges(q: &ReadQuery, layout: &TableLayout) -> Vec<(CKey, CKey)> {
    if q.slices.is_empty() {
        let u = ClusteringBound::unbounded();
        return vec![(CKey::start(&u, &layout.cmp), CKey::end(&u, &layout.cmp))];
    }
    q.slices
        .iter()
        .map(|(s, e)| (CKey::start(s, &layout.cmp), CKey::end(e, &layout.cmp)))
        .filter(|(s, e)| s <= e)
        .collect()
}

/// `restrict` for a partition the caller owns (one just read from an SSTable): rows outside
/// the ranges are dropped in place instead of the rest being copied.
pub(crate) fn restrict_owned(mut p: Partition, ranges: Option<&[(CKey, CKey)]>) -> Partition {
    if let Some(ranges) = ranges {
        p.rows
            .retain(|k, _| ranges.iter().any(|(s, e)| s <= k && k <= e));
    }
    p
}

/// Clones a partition keeping only rows inside `ranges` (deletions and static row always kept).
pub(crate) fn restrict(p: &Partition, ranges: Option<&[(CKey, CKey)]>) -> Partition {
    let Some(ranges) = ranges else {
        return p.clone();
    };
    let mut out = Partition::new(p.key.clone(), p.token);
    out.deletion = p.deletion;
    out.range_tombstones = p.range_tombstones.clone();
    out.static_row = p.static_row.clone();
    for (s, e) in ranges {
        if s <= e {
            for (k, r) in p.rows.range(s.clone()..=e.clone()) {
                out.rows.insert(k.clone(), r.clone());
            }
        }
    }
    out
}
