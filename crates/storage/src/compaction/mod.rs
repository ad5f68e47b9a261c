//! Compaction: merging SSTables into new ones, dropping what is shadowed and purging tombstones
//! after gc_grace_seconds where that cannot resurrect data.
//!
//! * worker.rs: the flush thread and compaction pool, and `Background`, all they see of the node.
//! * flush.rs: memtable to SSTables; output.rs: the SSTable writer loop flush and compaction share.
//! * strategy/: which SSTables to compact (size-tiered, leveled, time-window), apart from running
//!   it; tombstone.rs: the single-SSTable tombstone compaction when a strategy has nothing to do.
//! * anticompaction.rs: an incremental repair's split of unrepaired SSTables into those of the
//!   session's ranges and the rest; outputs inherit their inputs' repair state (sstable/repair.rs)
//!   and compactions never merge SSTables of different repair sets.
//! * merge.rs: one merge of one token range (partitions copied encoded when possible);
//!   wide_merge.rs: partitions too large to merge in memory, streamed row by row.
//! * purge.rs: the purge rules; control.rs: the rate and CPU priority of compaction threads;
//!   progress.rs: running tasks for compactionstats.

mod anticompaction;
mod control;
mod flush;
mod merge;
mod meter;
mod output;
mod progress;
pub(crate) mod purge;
mod strategy;
mod tombstone;
mod wide_merge;
mod worker;

pub(crate) use anticompaction::anticompact;
pub(crate) use flush::{flush_table, write_in_repair_set};
pub(crate) use worker::{Background, WorkerConfig};

use crate::memtable::Memtable;
use crate::sstable::repair::{RepairGroup, RepairState};
use crate::sstable::SSTableReader;
use crate::table::Table;
use crate::types::*;
pub use control::lower_thread_priority;
use merge::{merge_range, raw_copyable, token_splits, MergeCtx, RangeOutput};
pub(crate) use merge::{GcShadow, TokenRange};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strategy::SSTableInfo;

/// Summed input bytes of one partition above which compaction streams its rows instead of
/// merging it in memory.
pub(crate) const STREAM_PARTITION_BYTES: u64 = 8 << 20;

/// The kind of a compaction task.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompactionKind {
    Background,
    Major,
    GarbageCollect,
    /// `nodetool cleanup`: the inputs rewritten keeping only the token ranges the node owns.
    Cleanup,
    /// An incremental repair's split of one SSTable (anticompaction.rs).
    AntiCompaction,
}

/// What a rewrite writes of its inputs, and the repair state its outputs get.
#[derive(Clone, Copy)]
enum Rewrite<'a> {
    /// Everything, in outputs of the inputs' state.
    All,
    /// The partitions within these ranges, in outputs of the inputs' state.
    Owned(&'a [TokenRange]),
    /// Everything, those within these ranges in outputs pending for the session, the others in
    /// unrepaired ones.
    Split(&'a [TokenRange], [u8; 16]),
    /// Everything but what the same partitions in other SSTables shadow (garbagecollect).
    Collect(GcShadow<'a>),
}

/// The repair states a rewrite's outputs get at install.
pub(super) enum OutputStates {
    /// Their inputs' merged state, read when the outputs are swapped in.
    Inherited,
    /// The first `n` pending for the session, the others unrepaired.
    PendingFirst(usize, [u8; 16]),
}

/// Merges `inputs` (reserved with [`reserve`]) into new SSTables, replacing them atomically in
/// the table's SSTable set, and releases their reservation whatever the outcome.
/// A major compaction of a Leveled table of more than `parallel_major_compaction_min_bytes` runs
/// one merge per token range on `concurrent_compactors` threads (see [`splits_major_by_token`]).
pub(crate) fn compact_sstables(
    bg: &Background,
    t: &Arc<Table>,
    inputs: Vec<Arc<SSTableReader>>,
    kind: CompactionKind,
    level: u32,
    max_output_bytes: u64,
) -> Result<CompactionStats, StorageError> {
    rewrite_sstables(bg, t, inputs, (kind, level, max_output_bytes), Rewrite::All)
}

/// `nodetool garbagecollect` of one SSTable: rewritten alone without its purgeable tombstones
/// and what the same partitions in `shadow`'s SSTables shadow.
pub(crate) fn garbage_collect_sstable(
    bg: &Background,
    t: &Arc<Table>,
    input: Arc<SSTableReader>,
    shadow: GcShadow<'_>,
) -> Result<CompactionStats, StorageError> {
    let level = input.stats.level;
    rewrite_sstables(
        bg,
        t,
        vec![input],
        (CompactionKind::GarbageCollect, level, u64::MAX),
        Rewrite::Collect(shadow),
    )
}

/// `nodetool cleanup` of one SSTable: rewritten with only its partitions within `owned`
/// (sorted, disjoint token ranges); with none there, it is simply removed.
pub(crate) fn cleanup_sstables(
    bg: &Background,
    t: &Arc<Table>,
    inputs: Vec<Arc<SSTableReader>>,
    level: u32,
    owned: &[TokenRange],
) -> Result<CompactionStats, StorageError> {
    rewrite_sstables(
        bg,
        t,
        inputs,
        (CompactionKind::Cleanup, level, u64::MAX),
        Rewrite::Owned(owned),
    )
}

fn rewrite_sstables(
    bg: &Background,
    t: &Arc<Table>,
    inputs: Vec<Arc<SSTableReader>>,
    (kind, level, max_output_bytes): (CompactionKind, u32, u64),
    how: Rewrite<'_>,
) -> Result<CompactionStats, StorageError> {
    let def = t.def.read().clone();
    let input_gens: HashSet<u64> = inputs.iter().map(|s| s.gen).collect();
    let _reserved = Reserved {
        t,
        gens: &input_gens,
    };
    let total: u64 = inputs.iter().map(|s| s.stats.uncompressed_bytes).sum();
    let now = bg.clock.wall_secs();
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
        CompactionKind::Major
            if total > bg.config.parallel_major_compaction_min_bytes
                && splits_major_by_token(&def.options.compaction) =>
        {
            token_splits(&inputs, bg.config.concurrent_compactors.clamp(1, 8))?
        }
        _ => vec![TokenRange::ALL],
    };
    let ctx = MergeCtx {
        bg,
        t,
        def: &def,
        inputs: &inputs,
        others: &others,
        memtables: &memtables,
        now_s: now,
        gc_before_s: if purges_tombstones(&def, &inputs) {
            now - i64::from(def.options.gc_grace_seconds)
        } else {
            i64::MIN
        },
        kind,
        level,
        max_output_bytes,
        // Outputs share the timestamp base of the largest input, whose partitions then copy
        // with their timestamp deltas unchanged.
        // A columnar output takes decoded partitions only.
        raw_base: inputs
            .iter()
            .filter(|s| raw_copyable(s) && def.options.layout == DataLayout::Rows)
            .max_by_key(|s| s.stats.uncompressed_bytes)
            .map(|s| s.format.base_us()),
        only: None,
        shadow: match how {
            Rewrite::Collect(shadow) => Some(shadow),
            _ => None,
        },
    };
    let (results, states) = match how {
        // Owned ranges are many and small (one per vnode): merged one after the other.
        Rewrite::Owned(owned) => (
            owned.iter().map(|r| merge_range(&ctx, r)).collect(),
            OutputStates::Inherited,
        ),
        Rewrite::All | Rewrite::Collect(_) => {
            (merge_ranges(&ctx, &ranges), OutputStates::Inherited)
        }
        Rewrite::Split(within, session) => {
            let (results, pending) = anticompaction::merge_split(&ctx, within);
            (results, OutputStates::PendingFirst(pending, session))
        }
    };
    let (outputs, mut stats) = collect_outputs(results)?;
    stats.input_sstables = inputs.len();
    stats.bytes_read = total;
    install_outputs(t, &input_gens, inputs, outputs, states)?;
    Ok(stats)
}

/// Whether a compaction of `inputs` may purge tombstones: not when the table asks to purge only
/// repaired ones (`only_purge_repaired_tombstones`) and some input is not repaired.
pub(crate) fn purges_tombstones(def: &TableDef, inputs: &[Arc<SSTableReader>]) -> bool {
    !def.options.only_purge_repaired_tombstones || inputs.iter().all(|s| is_repaired(s))
}

fn is_repaired(s: &SSTableReader) -> bool {
    matches!(s.repair_state(), RepairState::Repaired { .. })
}

/// Whether a major compaction of a table with these options may split its output at token
/// boundaries to merge the ranges in parallel. Only Leveled: its major compaction writes
/// non-overlapping `sstable_size_in_mb` files anyway, so ranges merged apart give the same kind
/// of output. SizeTiered and TimeWindow major compactions write one SSTable per data directory,
/// as Cassandra's do (operators count on `nodetool compact` leaving one file); those still use
/// two threads, the merge and the SSTable writer's compression thread (sstable/sink.rs).
fn splits_major_by_token(options: &CompactionOptions) -> bool {
    matches!(options, CompactionOptions::Leveled { .. })
}

/// Runs one merge per token range: on threads of their own when there are several.
fn merge_ranges(
    ctx: &MergeCtx<'_>,
    ranges: &[TokenRange],
) -> Vec<Result<RangeOutput, StorageError>> {
    if ranges.len() == 1 {
        return ranges.iter().map(|r| merge_range(ctx, r)).collect();
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = ranges
            .iter()
            .map(|r| scope.spawn(move || merge_range(ctx, r)))
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
}

/// The ranges' outputs with their output statistics, or the error of a failed range after the
/// other ranges' outputs are deleted (the inputs stay).
fn collect_outputs(
    results: Vec<Result<RangeOutput, StorageError>>,
) -> Result<(Vec<Arc<SSTableReader>>, CompactionStats), StorageError> {
    let mut stats = CompactionStats::default();
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
        delete_files(&outputs);
        return Err(e);
    }
    stats.output_sstables = outputs.len();
    stats.output_generations = outputs.iter().map(|s| s.gen).collect();
    stats.bytes_written = outputs.iter().map(|s| s.stats.data_file_bytes).sum();
    stats.partitions_written = outputs.iter().map(|s| s.stats.partitions).sum();
    Ok((outputs, stats))
}

fn delete_files(sstables: &[Arc<SSTableReader>]) {
    for s in sstables {
        for p in s.component_paths() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Gives the outputs their repair state and replaces the inputs by them in the table's SSTable
/// set (one swap under its lock), then deletes the inputs' files. Under the table's repair lock,
/// so the state inherited is the inputs' latest (a repair may finalize while they merge). If a
/// state cannot be written, the outputs are deleted and the inputs stay.
pub(super) fn install_outputs(
    t: &Table,
    input_gens: &HashSet<u64>,
    inputs: Vec<Arc<SSTableReader>>,
    outputs: Vec<Arc<SSTableReader>>,
    states: OutputStates,
) -> Result<(), StorageError> {
    {
        let _repair = t.repair_lock.lock();
        let inherited = RepairState::merged(inputs.iter().map(|s| s.repair_state()));
        let stored = outputs.iter().enumerate().try_for_each(|(i, s)| {
            s.set_repair_state(match states {
                OutputStates::Inherited => inherited,
                OutputStates::PendingFirst(n, session) if i < n => RepairState::Pending { session },
                OutputStates::PendingFirst(..) => RepairState::Unrepaired,
            })
        });
        if let Err(e) = stored {
            delete_files(&outputs);
            return Err(e);
        }
        let mut set = t.sstables.write();
        let kept = set.iter().filter(|s| !input_gens.contains(&s.gen)).cloned();
        *set = Arc::new(kept.chain(outputs).collect());
    }
    // The inputs' key and chunk cache entries are not purged here: a purge scans the whole
    // caches under their locks (hundreds of milliseconds once the key cache is warm), and
    // nothing looks them up again (SSTable uids are never reused), so FIFO eviction ages them
    // out.
    if !inputs.is_empty() {
        delete_files(&inputs);
        drop_in_background("sstable-close", inputs);
    }
    Ok(())
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

/// Gives back the reservation of SSTables a compaction will not run on after all.
pub(crate) fn release(t: &Table, sstables: &[Arc<SSTableReader>]) {
    let mut taken = t.compacting.lock();
    for s in sstables {
        taken.remove(&s.gen);
    }
}

/// `sstables` by repair set (see sstable/repair.rs), largest set first.
pub(crate) fn by_repair_group(sstables: Vec<Arc<SSTableReader>>) -> Vec<Vec<Arc<SSTableReader>>> {
    let mut groups: Vec<(RepairGroup, Vec<Arc<SSTableReader>>)> = Vec::new();
    for s in sstables {
        let g = s.repair_state().group();
        match groups.iter_mut().find(|(k, _)| *k == g) {
            Some((_, v)) => v.push(s),
            None => groups.push((g, vec![s])),
        }
    }
    groups.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
    groups.into_iter().map(|(_, v)| v).collect()
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

/// Reserves every live SSTable of `t` for a major compaction, waiting (up to `wait`) for the
/// background compactions that hold some of them, and taking what they write, as Cassandra's
/// major compaction waits for the running ones; without the wait, `nodetool compact` during a
/// background compaction left several SSTables, or did nothing at all. At the deadline, what is
/// held so far.
pub(crate) fn reserve_all_waiting(t: &Table, wait: Duration) -> Vec<Arc<SSTableReader>> {
    let deadline = Instant::now() + wait;
    let mut held = Vec::new();
    loop {
        let live = t.sstables.read().clone();
        held.extend(reserve(t, live.to_vec()));
        let ours: HashSet<u64> = held.iter().map(|s| s.gen).collect();
        if live.iter().all(|s| ours.contains(&s.gen)) || Instant::now() >= deadline {
            return held;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reserves `s` alone, waiting (until `deadline`) while a background compaction holds it; None
/// once it is gone (that compaction replaced it) or at the deadline.
pub(crate) fn reserve_one_waiting(
    t: &Table,
    s: &Arc<SSTableReader>,
    deadline: Instant,
) -> Option<Arc<SSTableReader>> {
    loop {
        if !t.sstables.read().iter().any(|l| l.gen == s.gen) {
            return None;
        }
        if let Some(taken) = reserve(t, vec![s.clone()]).pop() {
            return Some(taken);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Background compactions the table's strategy would start now, given the threads: its choices
/// taken one after another, each leaving its inputs out of the next, per repair set. This is
/// what Cassandra's strategies estimate as remaining tasks and `nodetool compactionstats` adds
/// to the running ones, so "pending tasks: 0" means nothing is left to do, not only that no
/// compaction is running at this instant.
pub(crate) fn estimated_pending_tasks(t: &Table) -> usize {
    let def = t.def.read().clone();
    let strategy = strategy::for_options(&def.options.compaction);
    let live: Vec<Arc<SSTableReader>> = t.sstables.read().to_vec();
    set_views(t, live)
        .into_iter()
        .map(|v| strategy::startable_now(strategy.as_ref(), v.free, &v.all))
        .sum()
}

/// One repair set as a strategy sees it: its SSTables, and those no running compaction holds.
struct SetView {
    sstables: Vec<Arc<SSTableReader>>,
    all: Vec<SSTableInfo>,
    free: Vec<SSTableInfo>,
}

/// `live` by repair set, largest first (see `by_repair_group`), described for the strategy.
fn set_views(t: &Table, live: Vec<Arc<SSTableReader>>) -> Vec<SetView> {
    let taken = t.compacting.lock().clone();
    by_repair_group(live)
        .into_iter()
        .map(|sstables| {
            let all: Vec<SSTableInfo> = sstables.iter().map(|s| SSTableInfo::of(s)).collect();
            let free = all
                .iter()
                .filter(|s| !taken.contains(&s.gen))
                .cloned()
                .collect();
            SetView {
                sstables,
                all,
                free,
            }
        })
        .collect()
}

/// Picks and runs one background compaction if the strategy wants one. The strategy runs on
/// each repair set apart (largest first), as Cassandra runs one strategy instance per set, so
/// repaired data never merges with data no repair has compared.
pub(crate) fn background_compaction(
    bg: &Background,
    t: &Arc<Table>,
) -> Result<Option<CompactionStats>, StorageError> {
    let def = t.def.read().clone();
    let live: Vec<Arc<SSTableReader>> = t.sstables.read().to_vec();
    let strategy = strategy::for_options(&def.options.compaction);
    for view in set_views(t, live.clone()) {
        let set = view.sstables.first().map(|s| s.repair_state().group());
        let choice = strategy.choose(&view.free, &view.all);
        if choice.inputs.len() < strategy.min_inputs() || choice.inputs.is_empty() {
            continue;
        }
        let cands = choice
            .inputs
            .iter()
            .filter_map(|g| view.sstables.iter().find(|s| s.gen == *g).cloned())
            .collect();
        // An anticompaction may have marked a candidate pending since the sets were read; once
        // reserved, a state changes only with its whole set (finalize, release).
        let (inputs, moved): (Vec<_>, Vec<_>) = reserve(t, cands)
            .into_iter()
            .partition(|s| Some(s.repair_state().group()) == set);
        release(t, &moved);
        if inputs.is_empty() {
            return Ok(None);
        }
        let stats = compact_sstables(
            bg,
            t,
            inputs,
            CompactionKind::Background,
            choice.level,
            choice.max_output_bytes,
        )?;
        // The outputs may make another round worthwhile.
        bg.request_compaction(def.id);
        return Ok(Some(stats));
    }
    let free: Vec<Arc<SSTableReader>> = {
        let taken = t.compacting.lock();
        live.into_iter()
            .filter(|s| !taken.contains(&s.gen))
            .collect()
    };
    tombstone::tombstone_compaction(bg, t, &def, &free)
}
