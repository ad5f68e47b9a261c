//! Background work: memtable flush, and compaction (SizeTiered, Leveled, TimeWindow, major,
//! garbagecollect) with tombstone purge after gc_grace_seconds where it cannot resurrect data.

mod control;
mod merge;
mod wide_merge;

use crate::clustering::CKey;
use crate::compaction::control::{lower_thread_priority, Throttle};
use crate::compaction::merge::{
    merge_range, parallel_major_bytes, raw_copyable, token_splits, MergeCtx, RangeOutput,
    TokenRange,
};
use crate::engine::{Engine, Job, Table};
use crate::memtable::Memtable;
use crate::partition::{Partition, Row};
use crate::reconcile::CellKind;
use crate::sstable::raw::{rebase_within, ClusteringSpan, EncodedPartition, Horizon};
use crate::sstable::{SSTableReader, SSTableWriter};
use crate::types::*;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Weak};

/// Size-tiered defaults (Cassandra's).
const BUCKET_LOW: f64 = 0.5;
const BUCKET_HIGH: f64 = 1.5;
const MIN_SSTABLE_SIZE_BYTES: u64 = 50 << 20;
/// Output split size for strategies that do not set one.
const DEFAULT_MAX_OUTPUT_BYTES: u64 = 1 << 30;
/// LCS: L0 count that triggers compaction into L1.
const LCS_L0_TRIGGER: usize = 4;

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn spawn_loop(
    engine: &Arc<Engine>,
    rx: Arc<parking_lot::Mutex<mpsc::Receiver<Job>>>,
    name: String,
    low_priority: bool,
) -> Result<std::thread::JoinHandle<()>, StorageError> {
    let weak: Weak<Engine> = Arc::downgrade(engine);
    std::thread::Builder::new()
        .name(name)
        .spawn(move || loop {
            if low_priority {
                lower_thread_priority();
            }
            let job = rx.lock().recv();
            let Ok(job) = job else { return };
            let Some(engine) = weak.upgrade() else { return };
            match job {
                Job::Flush(id) => {
                    engine.flush_pending.store(false, Ordering::Release);
                    if let Ok(t) = engine.table(id) {
                        // Errors leave the memtable readable in `flushing`; a later flush retries.
                        let _ = flush_table(&engine, &t);
                    }
                }
                Job::Compact(id) => {
                    if let Ok(t) = engine.table(id) {
                        let _ = background_compaction(&engine, &t);
                    }
                }
            }
        })
        .map_err(|e| StorageError::io("thread", e))
}

/// Starts the flush thread and the compaction pool.
pub(crate) fn start_workers(engine: &Arc<Engine>) -> Result<(), StorageError> {
    let (ftx, frx) = mpsc::channel();
    let (ctx, crx) = mpsc::channel();
    let frx = Arc::new(parking_lot::Mutex::new(frx));
    let crx = Arc::new(parking_lot::Mutex::new(crx));
    let mut handles = vec![spawn_loop(engine, frx, "memtable-flush".into(), false)?];
    for i in 0..engine.config.concurrent_compactors.clamp(1, 16) {
        handles.push(spawn_loop(
            engine,
            crx.clone(),
            format!("compaction-{i}"),
            true,
        )?);
    }
    *engine.jobs.lock() = Some(ftx);
    *engine.compaction_jobs.lock() = Some(ctx);
    engine.workers.lock().extend(handles);
    Ok(())
}

/// Flushes a table's memtable to a new SSTable (blocking).
pub(crate) fn flush_table(engine: &Engine, t: &Arc<Table>) -> Result<(), StorageError> {
    /// Wakes writers waiting on backpressure however the flush ends.
    struct Done<'a>(&'a Engine);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.note_flush_done();
        }
    }
    let _f = t.flush_lock.lock();
    let _done = Done(engine);
    if t.dropped.load(Ordering::Relaxed) {
        return Ok(());
    }
    let (old, pos) = {
        let mut g = t.memtable.write();
        if g.is_empty() {
            return Ok(());
        }
        let pos = engine.log.position();
        let old = std::mem::replace(&mut *g, Arc::new(Memtable::default()));
        t.flushing.write().push(old.clone());
        (old, pos)
    };
    t.counters.memtable_switches.fetch_add(1, Ordering::Relaxed);
    let def = t.def.read().clone();
    let task = engine.start_task(&def, "Flush", old.size_bytes());
    let shards = old.read_shards();
    let result = write_outputs(
        engine,
        t,
        &def,
        shards
            .iter()
            .flat_map(|m| m.values())
            .map(|p| Ok(Merged::Memtable(p))),
        parts_len_hint(&old),
        0,
        u64::MAX,
        task,
        // Flushes are not held to the compaction cap (as in Cassandra): a slow flush makes writes wait.
        &|| engine.config.flush_throughput_mib_per_s,
        None,
    );
    engine.end_task(task);
    drop(shards);
    let readers = result?;
    t.sstables.write().extend(readers);
    // The memtable is freed here, before writers waiting for memory are woken (`Done`), and
    // stays counted until then: freed on a thread of its own it could lag behind the load,
    // uncounted, and memory outgrow the budget. With values in arena chunks and a row's cells in
    // one vector, freeing is a few frees per row, not one per cell.
    let freeing = old.heap_bytes();
    engine
        .freeing_memtable_bytes
        .fetch_add(freeing, Ordering::Relaxed);
    t.flushing.write().retain(|m| !Arc::ptr_eq(m, &old));
    engine.log.discard(def.id, pos);
    drop(old);
    engine
        .freeing_memtable_bytes
        .fetch_sub(freeing, Ordering::Relaxed);
    if let Some(tx) = engine.compaction_jobs.lock().as_ref() {
        let _ = tx.send(Job::Compact(def.id));
    }
    Ok(())
}

fn parts_len_hint(m: &Memtable) -> usize {
    m.partition_count() as usize
}

/// Summed input bytes of one partition above which compaction streams its rows instead of
/// merging it in memory.
pub(crate) const STREAM_PARTITION_BYTES: u64 = 8 << 20;

/// When purging may drop a tombstone (see `purge`).
#[derive(Clone, Copy)]
pub(crate) struct PurgeAt {
    pub gc_before_s: i64,
    pub max_purgeable_ts: i64,
    pub now_s: i64,
}

/// A partition ready to write: whole in memory, or a writer of its streamed rows.
pub(crate) enum Merged<'a> {
    Whole(Partition),
    /// A memtable's partition, written as it is.
    Memtable(&'a Partition),
    Streamed(Box<StreamedWrite<'a>>),
    /// Copied in encoded form (sstable_raw.rs), with bounds of its rows' clusterings (None when
    /// it has no rows).
    Encoded(EncodedPartition, Option<Arc<ClusteringSpan>>),
}

type StreamedWrite<'a> = dyn FnOnce(&mut SSTableWriter) -> Result<(), StorageError> + 'a;

/// How much a compaction writes between progress reports.
const PROGRESS_STEP_BYTES: u64 = 1 << 20;

/// Writes partitions (in order) into one or more SSTables, splitting at partition boundaries once
/// an output exceeds `max_output_bytes`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_outputs<'a>(
    engine: &Engine,
    t: &Table,
    def: &TableDef,
    parts: impl Iterator<Item = Result<Merged<'a>, StorageError>>,
    expected_keys: usize,
    level: u32,
    max_output_bytes: u64,
    task: u64,
    rate_mib_s: &dyn Fn() -> u64,
    timestamp_base: Option<i64>,
) -> Result<Vec<Arc<SSTableReader>>, StorageError> {
    let cmp = t.layout.read().cmp.clone();
    let mut outputs = Vec::new();
    let mut writer: Option<SSTableWriter> = None;
    let mut throttle = Throttle::new(rate_mib_s);
    let (mut written, mut reported) = (0u64, 0u64);
    for p in parts {
        let mut p = match p {
            Ok(p) => p,
            Err(e) => {
                if let Some(w) = writer.take() {
                    w.abort();
                }
                return Err(e);
            }
        };
        if let Merged::Whole(p) = &mut p {
            p.drop_shadowed();
        }
        let nothing = |p: &Partition| {
            p.deletion.is_none()
                && p.range_tombstones.is_empty()
                && p.static_row.is_empty()
                && p.rows.is_empty()
        };
        match &p {
            Merged::Whole(p) if nothing(p) => continue,
            Merged::Memtable(p) if nothing(p) => continue,
            _ => {}
        }
        if writer.is_none() {
            let gen = t.next_gen.fetch_add(1, Ordering::Relaxed);
            let fp = def.options.bloom_filter_fp_chance;
            let mut w = SSTableWriter::create(
                &t.dir,
                gen,
                &def.options.compression,
                expected_keys,
                fp,
                level,
            )?;
            if let Some(base) = timestamp_base {
                w.set_timestamp_base(base);
            }
            writer = Some(w);
        }
        let Some(w) = writer.as_mut() else { continue };
        let before = w.uncompressed_bytes();
        let appended = match p {
            Merged::Whole(p) => w.append(&p),
            Merged::Memtable(p) => w.append(p),
            Merged::Streamed(f) => f(w),
            Merged::Encoded(enc, bounds) => append_encoded(w, enc, bounds.as_deref()),
        };
        if let Err(e) = appended {
            if let Some(w) = writer.take() {
                w.abort();
            }
            return Err(e);
        }
        written += w.uncompressed_bytes() - before;
        // Progress is for compactionstats: a lock per partition cost more than the copy itself.
        if written - reported >= PROGRESS_STEP_BYTES {
            engine.update_task(task, written);
            reported = written;
        }
        if w.uncompressed_bytes() >= max_output_bytes {
            if let Some(w) = writer.take() {
                outputs.push(w.finish(&cmp)?);
            }
        }
        throttle.wrote(written);
    }
    if let Some(w) = writer.take() {
        // A streamed partition that merged to nothing may leave a writer with no partition.
        if w.is_empty() {
            w.abort();
        } else {
            outputs.push(w.finish(&cmp)?);
        }
    }
    Ok(outputs)
}

/// Appends a partition re-encoded for `timestamp_base`; one encoded for another base (an output
/// whose base was not set up front) is re-encoded again.
fn append_encoded(
    w: &mut SSTableWriter,
    enc: EncodedPartition,
    bounds: Option<&(CKey, CKey)>,
) -> Result<(), StorageError> {
    let enc = match w.timestamp_base() {
        Some(base) if base != enc.base_us => rebase_within(
            enc.token,
            enc.key,
            &enc.bytes,
            enc.base_us,
            base,
            Horizon::ALL,
        )?
        .ok_or(StorageError::Decode {
            what: "raw partition changed",
        })?,
        _ => enc,
    };
    w.append_encoded(&enc, bounds)
}

/// Removes tombstones older than gc_grace whose timestamp is below `max_purgeable_ts` (no older
/// data for this partition exists outside the compaction), and expired TTL data in the same case.
pub(crate) fn purge(p: &mut Partition, gc_before_s: i64, max_purgeable_ts: i64, now: i64) -> u64 {
    let mut purged = purge_header(p, gc_before_s, max_purgeable_ts, now);
    for r in p.rows.values_mut() {
        purged += purge_row(r, gc_before_s, max_purgeable_ts, now);
    }
    p.rows.retain(|_, r| !r.is_empty());
    purged
}

/// `purge` for the partition deletion, range tombstones and static row (not the rows).
pub(crate) fn purge_header(
    p: &mut Partition,
    gc_before_s: i64,
    max_purgeable_ts: i64,
    now: i64,
) -> u64 {
    let purgeable = |d: &DeletionTime| {
        d.local_deletion_time_s < gc_before_s && d.marked_for_delete_at_us < max_purgeable_ts
    };
    let mut purged = 0u64;
    if p.deletion.is_some_and(|d| purgeable(&d)) {
        p.deletion = None;
        purged += 1;
    }
    let before = p.range_tombstones.len();
    p.range_tombstones.retain(|rt| !purgeable(&rt.2));
    purged += (before - p.range_tombstones.len()) as u64;
    purged + purge_row(&mut p.static_row, gc_before_s, max_purgeable_ts, now)
}

/// `purge` for one row.
pub(crate) fn purge_row(r: &mut Row, gc_before_s: i64, max_purgeable_ts: i64, now: i64) -> u64 {
    let purgeable = |d: &DeletionTime| {
        d.local_deletion_time_s < gc_before_s && d.marked_for_delete_at_us < max_purgeable_ts
    };
    let mut purged = 0u64;
    if r.deletion.is_some_and(|d| purgeable(&d)) {
        r.deletion = None;
        purged += 1;
    }
    if let Some(l) = r.liveness {
        let dead_at = l.expires_at_s;
        if l.ttl_s > 0
            && dead_at <= now
            && dead_at < gc_before_s
            && l.timestamp_us < max_purgeable_ts
        {
            r.liveness = None;
            purged += 1;
        }
    }
    let nb = r.complex_deletions.len();
    r.complex_deletions.retain(|_, d| !purgeable(d));
    purged += (nb - r.complex_deletions.len()) as u64;
    let nc = r.cells.len();
    r.cells.retain(|_, c| match c.tombstone_time_s(now) {
        Some(t) => !(t < gc_before_s && c.timestamp_us < max_purgeable_ts),
        None => true,
    });
    purged += (nc - r.cells.len()) as u64;
    // Expired cells that must stay (not yet purgeable) become plain tombstones: smaller, same effect.
    for c in r.cells.values_mut() {
        if let CellKind::Live {
            ttl_s,
            expires_at_s,
            ..
        } = c.kind
        {
            if ttl_s > 0 && expires_at_s <= now {
                c.kind = CellKind::Tombstone {
                    local_deletion_time_s: expires_at_s,
                };
            }
        }
    }
    purged
}

/// The kind of a compaction task.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompactionKind {
    Background,
    Major,
    GarbageCollect,
}

/// Merges `inputs` (reserved with [`reserve`]) into new SSTables, replacing them atomically in
/// the table's SSTable set, and releases their reservation whatever the outcome.
/// A major compaction of more than `PARALLEL_MAJOR_BYTES` runs one merge per token range on
/// `concurrent_compactors` threads; the outputs split at those token boundaries, as whole files
/// that a new owner of a range could take.
pub(crate) fn compact_sstables(
    engine: &Engine,
    t: &Arc<Table>,
    inputs: Vec<Arc<SSTableReader>>,
    kind: CompactionKind,
    level: u32,
    max_output_bytes: u64,
) -> Result<CompactionStats, StorageError> {
    let def = t.def.read().clone();
    let input_gens: HashSet<u64> = inputs.iter().map(|s| s.gen).collect();
    let _reserved = Reserved {
        t,
        gens: &input_gens,
    };
    let total: u64 = inputs.iter().map(|s| s.stats.uncompressed_bytes).sum();
    let now = now_s();
    let others: Vec<Arc<SSTableReader>> = t
        .sstables
        .read()
        .iter()
        .filter(|s| !input_gens.contains(&s.gen))
        .cloned()
        .collect();
    let memtables: Vec<Arc<Memtable>> = std::iter::once(t.memtable.read().clone())
        .chain(t.flushing.read().iter().cloned())
        .collect();
    let ranges = match kind {
        CompactionKind::Major if total > parallel_major_bytes() => {
            token_splits(&inputs, engine.config.concurrent_compactors.clamp(1, 8))?
        }
        _ => vec![TokenRange::ALL],
    };
    let ctx = MergeCtx {
        engine,
        t,
        def: &def,
        inputs: &inputs,
        others: &others,
        memtables: &memtables,
        now_s: now,
        gc_before_s: now - i64::from(def.options.gc_grace_seconds),
        kind,
        level,
        max_output_bytes,
        // Outputs share the timestamp base of the largest input, whose partitions then copy
        // with their timestamp deltas unchanged.
        raw_base: inputs
            .iter()
            .filter(|s| raw_copyable(s))
            .max_by_key(|s| s.stats.uncompressed_bytes)
            .map(|s| s.format.base_us()),
    };
    let results: Vec<Result<RangeOutput, StorageError>> = if ranges.len() == 1 {
        ranges.iter().map(|r| merge_range(&ctx, r)).collect()
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = ranges
                .iter()
                .map(|r| {
                    let ctx = &ctx;
                    scope.spawn(move || merge_range(ctx, r))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(StorageError::InvalidRequest(
                            "compaction thread panicked".into(),
                        ))
                    })
                })
                .collect()
        })
    };
    let mut stats = CompactionStats {
        input_sstables: inputs.len(),
        bytes_read: total,
        ..CompactionStats::default()
    };
    let mut outputs = Vec::new();
    let mut failure = None;
    for r in results {
        match r {
            Ok(o) => {
                outputs.extend(o.sstables);
                stats.tombstones_purged += o.purged;
                stats.partitions_copied += o.copied;
            }
            Err(e) => failure = Some(e),
        }
    }
    if let Some(e) = failure {
        // The inputs stay; what the other ranges wrote goes.
        for s in &outputs {
            for p in s.component_paths() {
                let _ = std::fs::remove_file(p);
            }
        }
        return Err(e);
    }
    stats.output_sstables = outputs.len();
    stats.output_generations = outputs.iter().map(|s| s.gen).collect();
    stats.bytes_written = outputs.iter().map(|s| s.stats.data_file_bytes).sum();
    stats.partitions_written = outputs.iter().map(|s| s.stats.partitions).sum();
    {
        let mut set = t.sstables.write();
        set.retain(|s| !input_gens.contains(&s.gen));
        set.extend(outputs);
    }
    // The inputs' key and chunk cache entries are not purged here: a purge scans the whole
    // caches under their locks (hundreds of milliseconds once the key cache is warm), and
    // nothing looks them up again (SSTable uids are never reused), so FIFO eviction ages them
    // out.
    for s in &inputs {
        for p in s.component_paths() {
            let _ = std::fs::remove_file(p);
        }
    }
    drop_in_background("sstable-close", inputs);
    Ok(stats)
}

/// A compaction's hold on its inputs (see [`reserve`]), given back when it ends.
struct Reserved<'a> {
    t: &'a Table,
    gens: &'a HashSet<u64>,
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.t.compacting.lock().retain(|g| !self.gens.contains(g));
    }
}

/// Drops `value` on a thread of its own at the compaction threads' lower priority: freeing a
/// flushed memtable's millions of rows, or closing the last descriptor of a deleted SSTable
/// (which frees its page cache there and then), is work nobody waits for.
fn drop_in_background<T: Send + 'static>(name: &str, value: T) {
    // A failed spawn drops it here.
    let _ = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            lower_thread_priority();
            drop(value)
        });
}

/// Reserves SSTables for a compaction; returns those not already taken.
pub(crate) fn reserve(t: &Table, cands: Vec<Arc<SSTableReader>>) -> Vec<Arc<SSTableReader>> {
    let mut taken = t.compacting.lock();
    let free: Vec<_> = cands
        .into_iter()
        .filter(|s| !taken.contains(&s.gen))
        .collect();
    for s in &free {
        taken.insert(s.gen);
    }
    free
}

/// Size-tiered buckets (Cassandra's `getBuckets`): similar sizes group together.
fn stcs_pick(
    sstables: &[Arc<SSTableReader>],
    min_threshold: usize,
    max_threshold: usize,
) -> Vec<Arc<SSTableReader>> {
    let mut sorted: Vec<Arc<SSTableReader>> = sstables.to_vec();
    sorted.sort_by_key(|s| s.stats.data_file_bytes);
    let mut buckets: Vec<(f64, Vec<Arc<SSTableReader>>)> = Vec::new();
    for s in sorted {
        let size = s.stats.data_file_bytes as f64;
        let fit = buckets.iter_mut().find(|(avg, _)| {
            (size > avg * BUCKET_LOW && size < avg * BUCKET_HIGH)
                || (size < MIN_SSTABLE_SIZE_BYTES as f64 && *avg < MIN_SSTABLE_SIZE_BYTES as f64)
        });
        match fit {
            Some((avg, b)) => {
                *avg = (*avg * b.len() as f64 + size) / (b.len() + 1) as f64;
                b.push(s);
            }
            None => buckets.push((size, vec![s])),
        }
    }
    buckets
        .into_iter()
        .filter(|(_, b)| b.len() >= min_threshold.max(2))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, mut b)| {
            b.truncate(max_threshold.max(2));
            b
        })
        .unwrap_or_default()
}

fn window_seconds(unit: &str, size: u32) -> i64 {
    let unit_s = match unit.to_ascii_uppercase().as_str() {
        "MINUTES" => 60,
        "HOURS" => 3600,
        _ => 86_400,
    };
    unit_s * i64::from(size.max(1))
}

/// Picks and runs one background compaction if the strategy wants one.
pub(crate) fn background_compaction(
    engine: &Engine,
    t: &Arc<Table>,
) -> Result<Option<CompactionStats>, StorageError> {
    let def = t.def.read().clone();
    let free: Vec<Arc<SSTableReader>> = {
        let taken = t.compacting.lock();
        t.sstables
            .read()
            .iter()
            .filter(|s| !taken.contains(&s.gen))
            .cloned()
            .collect()
    };
    let (cands, level, max_out) = match &def.options.compaction {
        CompactionOptions::SizeTiered {
            min_threshold,
            max_threshold,
        } => (
            stcs_pick(&free, *min_threshold as usize, *max_threshold as usize),
            0,
            DEFAULT_MAX_OUTPUT_BYTES,
        ),
        CompactionOptions::TimeWindow {
            compaction_window_unit,
            compaction_window_size,
        } => {
            let w = window_seconds(compaction_window_unit, *compaction_window_size) * 1_000_000;
            let mut windows: std::collections::BTreeMap<i64, Vec<Arc<SSTableReader>>> =
                Default::default();
            for s in &free {
                windows
                    .entry(s.stats.max_timestamp_us.div_euclid(w.max(1)))
                    .or_default()
                    .push(s.clone());
            }
            let newest = windows.keys().next_back().copied();
            let mut pick = Vec::new();
            for (k, v) in windows.iter().rev() {
                if Some(*k) == newest {
                    pick = stcs_pick(v, 4, 32);
                } else if v.len() > 1 {
                    pick = v.clone();
                }
                if !pick.is_empty() {
                    break;
                }
            }
            (pick, 0, DEFAULT_MAX_OUTPUT_BYTES)
        }
        CompactionOptions::Leveled {
            sstable_size_in_mb,
            fanout_size,
        } => lcs_pick(
            &free,
            t,
            u64::from(*sstable_size_in_mb).max(1) << 20,
            u64::from(*fanout_size).max(2),
        ),
    };
    if cands.len() < 2 && !matches!(def.options.compaction, CompactionOptions::Leveled { .. })
        || cands.is_empty()
    {
        return tombstone_compaction(engine, t, &def, &free);
    }
    let inputs = reserve(t, cands);
    if inputs.is_empty() {
        return Ok(None);
    }
    let stats = compact_sstables(
        engine,
        t,
        inputs,
        CompactionKind::Background,
        level,
        max_out,
    )?;
    // The outputs may make another round worthwhile.
    if let Some(tx) = engine.compaction_jobs.lock().as_ref() {
        let _ = tx.send(Job::Compact(def.id));
    }
    Ok(Some(stats))
}

/// Single-SSTable tombstone compaction (Cassandra's `worthDroppingTombstones`): when the strategy
/// has nothing to do, rewrite alone the SSTable with the highest estimated droppable-tombstone
/// ratio above `tombstone_threshold`. Unless `unchecked_tombstone_compaction`, only when no
/// other SSTable overlapping its tokens holds data as old as its own, since such data would keep
/// the tombstones from being purged.
fn tombstone_compaction(
    engine: &Engine,
    t: &Arc<Table>,
    def: &TableDef,
    free: &[Arc<SSTableReader>],
) -> Result<Option<CompactionStats>, StorageError> {
    let gc_before = now_s() - i64::from(def.options.gc_grace_seconds);
    let threshold = def.options.tombstone_threshold;
    let all: Vec<Arc<SSTableReader>> = t.sstables.read().clone();
    let futile = t.futile_tombstone_gens.lock().clone();
    let pick = free
        .iter()
        .filter(|s| !futile.contains(&s.gen))
        .map(|s| (s.stats.estimated_droppable_tombstones(gc_before), s))
        .filter(|(ratio, _)| *ratio > threshold)
        .filter(|(_, s)| {
            def.options.unchecked_tombstone_compaction
                || !all.iter().any(|o| {
                    o.gen != s.gen
                        && overlaps(o, s)
                        && o.stats.min_timestamp_us <= s.stats.max_timestamp_us
                })
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, s)| s.clone());
    let Some(s) = pick else { return Ok(None) };
    let inputs = reserve(t, vec![s.clone()]);
    if inputs.is_empty() {
        return Ok(None);
    }
    let stats = compact_sstables(
        engine,
        t,
        inputs,
        CompactionKind::Background,
        s.stats.level,
        u64::MAX,
    )?;
    if stats.tombstones_purged == 0 {
        t.futile_tombstone_gens
            .lock()
            .extend(stats.output_generations.iter().copied());
    } else if let Some(tx) = engine.compaction_jobs.lock().as_ref() {
        let _ = tx.send(Job::Compact(def.id));
    }
    Ok(Some(stats))
}

fn overlaps(a: &SSTableReader, b: &SSTableReader) -> bool {
    a.stats.min_token <= b.stats.max_token && b.stats.min_token <= a.stats.max_token
}

/// Leveled: L0 over its trigger goes to L1 with overlapping L1 tables; a level over its budget
/// (size * fanout^level) pushes its oldest table into the next level.
fn lcs_pick(
    free: &[Arc<SSTableReader>],
    t: &Table,
    size: u64,
    fanout: u64,
) -> (Vec<Arc<SSTableReader>>, u32, u64) {
    let all: Vec<Arc<SSTableReader>> = t.sstables.read().clone();
    let level_of = |l: u32| free.iter().filter(move |s| s.stats.level == l).cloned();
    let l0: Vec<_> = level_of(0).collect();
    if l0.len() >= LCS_L0_TRIGGER {
        let mut pick = l0.clone();
        for s in level_of(1) {
            if l0.iter().any(|a| overlaps(a, &s)) {
                pick.push(s);
            }
        }
        return (pick, 1, size);
    }
    for l in 1..8u32 {
        let in_level: Vec<_> = all.iter().filter(|s| s.stats.level == l).collect();
        let bytes: u64 = in_level.iter().map(|s| s.stats.data_file_bytes).sum();
        let budget = size.saturating_mul(fanout.saturating_pow(l));
        if bytes > budget {
            let Some(first) = level_of(l).min_by_key(|s| s.gen) else {
                continue;
            };
            let mut pick = vec![first.clone()];
            pick.extend(level_of(l + 1).filter(|s| overlaps(&first, s)));
            return (pick, l + 1, size);
        }
    }
    (Vec::new(), 0, size)
}
