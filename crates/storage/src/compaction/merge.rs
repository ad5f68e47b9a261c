//! One compaction merge: the inputs' partitions of one token range, in order, merged (or copied
//! in encoded form when only one input has them) into new SSTables.

use super::control::background_rate_mib_s;
use super::output::{new_run_id, write_outputs, Merged, OutputShape};
use super::purge::{purge, MaxPurgeable, PurgeAt};
use super::wide_merge::write_streamed;
use super::worker::Background;
use super::{CompactionKind, STREAM_PARTITION_BYTES};
use crate::byte_cache::ByteCache;
use crate::clustering::ClusteringComparator;
use crate::error::StorageError;
use crate::memtable::Memtable;
use crate::partition::Partition;
use crate::sstable::format::DataFormat;
use crate::sstable::raw::{concat, rebase_within, ClusteringSpan, EncodedPartition, Horizon};
use crate::sstable::{ChunkKey, IndexEntry, IndexIter, SSTableReader, SSTableWriter};
use crate::table::Table;
use crate::types::*;
use bytes::Bytes;
use std::sync::Arc;

/// Decompressed input chunks kept while merging (inputs are read in order, a few chunks each).
const COMPACTION_CHUNK_MEMO_BYTES: u64 = 16 << 20;

/// A partition copied in encoded form, with its clustering span (shared with its input's).
type RawCopy = (EncodedPartition, Option<Arc<ClusteringSpan>>);

/// An input's part in one merged partition: input, index position, entry.
type Head = (usize, usize, IndexEntry);

/// The decompressed chunk an input's walk read last (inputs are read in file order).
type LastChunk = Option<(usize, Arc<Vec<u8>>)>;

/// The inputs holding the smallest partition key among `heads` (an input's index position and
/// entry at its head). A scan, not a heap: compactions merge a handful of inputs, and a heap
/// would clone every key it orders.
fn smallest(heads: &[Option<(usize, IndexEntry)>], batch: &mut Vec<usize>) {
    batch.clear();
    let mut min: Option<&IndexEntry> = None;
    for (si, head) in heads.iter().enumerate() {
        let Some((_, e)) = head else { continue };
        let order = min.map(|m| (e.token, &e.key).cmp(&(m.token, &m.key)));
        match order {
            None | Some(std::cmp::Ordering::Less) => {
                min = Some(e);
                batch.clear();
                batch.push(si);
            }
            Some(std::cmp::Ordering::Equal) => batch.push(si),
            Some(std::cmp::Ordering::Greater) => {}
        }
    }
}

/// Tokens from `lo` (inclusive) to `hi` (exclusive); None is unbounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TokenRange {
    pub lo: Option<i64>,
    pub hi: Option<i64>,
}

impl TokenRange {
    pub(crate) const ALL: TokenRange = TokenRange { lo: None, hi: None };
}

/// `n` token ranges with about as many partitions of the largest input each.
pub(crate) fn token_splits(
    inputs: &[Arc<SSTableReader>],
    n: usize,
) -> Result<Vec<TokenRange>, StorageError> {
    let Some(largest) = inputs.iter().max_by_key(|s| s.partition_count()) else {
        return Ok(vec![TokenRange::ALL]);
    };
    let len = largest.partition_count();
    let mut bounds = Vec::new();
    for i in 1..n.max(1) {
        if len * i / n < len {
            bounds.push(largest.entry(len * i / n)?.token);
        }
    }
    bounds.dedup();
    let mut ranges = Vec::with_capacity(bounds.len() + 1);
    let mut lo = None;
    for b in bounds {
        if lo.is_some_and(|l| l >= b) {
            continue;
        }
        ranges.push(TokenRange { lo, hi: Some(b) });
        lo = Some(b);
    }
    ranges.push(TokenRange { lo, hi: None });
    Ok(ranges)
}

/// What every range of one compaction shares.
#[derive(Clone, Copy)]
pub(crate) struct MergeCtx<'a> {
    pub bg: &'a Background,
    pub t: &'a Arc<Table>,
    pub def: &'a TableDef,
    pub inputs: &'a [Arc<SSTableReader>],
    /// SSTables and memtables outside the compaction: they bound what may be purged.
    pub others: &'a [Arc<SSTableReader>],
    pub memtables: &'a [Arc<Memtable>],
    pub now_s: i64,
    pub gc_before_s: i64,
    pub kind: CompactionKind,
    pub level: u32,
    pub max_output_bytes: u64,
    /// The outputs' timestamp base, when inputs can be copied in encoded form.
    pub raw_base: Option<i64>,
    /// The tokens whose partitions the outputs take, when not all (an anticompaction writes
    /// the partitions of the repaired ranges and the others apart, see anticompaction.rs).
    pub only: Option<&'a (dyn Fn(i64) -> bool + Sync)>,
    /// A garbagecollect's other SSTables, whose copies of a partition shadow the input's.
    pub shadow: Option<GcShadow<'a>>,
}

/// The SSTables whose deletions (and with `cells`, newer cells) a garbagecollect drops the
/// input's data under (partition/shadow.rs): those that may hold newer deletions of its
/// partitions.
#[derive(Clone, Copy)]
pub(crate) struct GcShadow<'a> {
    pub sources: &'a [Arc<SSTableReader>],
    pub cells: bool,
}

/// The partition's copies in `shadow`'s SSTables, merged; None when none holds it.
fn shadow_copies(
    shadow: Option<GcShadow<'_>>,
    token: i64,
    key: &Bytes,
) -> Result<Option<Partition>, StorageError> {
    let mut merged: Option<Partition> = None;
    for s in shadow.map_or(&[][..], |g| g.sources) {
        let Some(i) = s.find(token, key)? else {
            continue;
        };
        let p = s.read_partition(i, None)?;
        match &mut merged {
            Some(m) => m.merge(p),
            None => merged = Some(p),
        }
    }
    Ok(merged)
}

impl MergeCtx<'_> {
    /// Whether an input or the outputs are columnar (no streamed partitions then).
    fn columnar(&self) -> bool {
        self.def.options.layout != crate::types::DataLayout::Rows
            || self.inputs.iter().any(|s| s.is_columnar())
    }
}

/// What one range produced.
pub(crate) struct RangeOutput {
    pub sstables: Vec<Arc<SSTableReader>>,
    pub purged: u64,
    pub copied: u64,
}

/// Whether partitions of `s` can be copied without decoding: format 2, and clustering bounds that
/// the output can inherit.
pub(crate) fn raw_copyable(s: &SSTableReader) -> bool {
    matches!(s.format, DataFormat::Compact { .. })
        && s.clustering_bounds().is_some()
        && !s.is_columnar()
}

/// The partition of `entries` (one per input holding it) re-encoded for `to_base` without
/// decoding it, when that is possible (see sstable/raw.rs): one input, or several whose rows do
/// not interleave; with the bounds of its rows' clusterings.
fn raw_merge(
    inputs: &[Arc<SSTableReader>],
    entries: &[Head],
    to_base: i64,
    last_chunks: &mut [LastChunk],
    input_bounds: &[Option<Arc<ClusteringSpan>>],
    horizon: Horizon,
    cmp: &Arc<ClusteringComparator>,
) -> Result<Option<RawCopy>, StorageError> {
    let mut parts = Vec::with_capacity(entries.len());
    for (si, _, e) in entries {
        let (Some(s), Some(last)) = (
            inputs.get(*si).filter(|s| raw_copyable(s)),
            last_chunks.get_mut(*si),
        ) else {
            return Ok(None);
        };
        let bytes = s.read_span(e.position, e.length, last)?;
        let from_base = s.format.base_us();
        let Some(enc) = rebase_within(e.token, e.key.clone(), &bytes, from_base, to_base, horizon)?
        else {
            return Ok(None);
        };
        if entries.len() == 1 {
            let has_rows = !enc.row_starts.is_empty();
            let bounds = input_bounds
                .get(*si)
                .cloned()
                .flatten()
                .filter(|_| has_rows);
            return Ok(Some((enc, bounds)));
        }
        parts.push(enc);
    }
    Ok(concat(parts, cmp)?.map(|(enc, bounds)| (enc, bounds.map(Arc::new))))
}

/// The newest timestamp a tombstone of partition `key` may have to be purged: below the oldest
/// data for the partition outside the compaction.
fn max_purgeable(ctx: &MergeCtx<'_>, token: i64, key: &Bytes) -> i64 {
    let mut max_purgeable = i64::MAX;
    for s in ctx.others {
        // An unreadable index counts as holding the key: it only stops purging.
        if !matches!(s.find(token, key), Ok(None)) {
            max_purgeable = max_purgeable.min(s.stats.min_timestamp_us);
        }
    }
    for m in ctx.memtables {
        if let Some(Some((lo, _))) = m.with_partition(token, key, |mp| mp.timestamp_range()) {
            max_purgeable = max_purgeable.min(lo);
        }
    }
    max_purgeable
}

/// Merges the inputs' partitions in `range` into new SSTables (not yet in the table's set).
pub(crate) fn merge_range(
    ctx: &MergeCtx<'_>,
    range: &TokenRange,
) -> Result<RangeOutput, StorageError> {
    let label = match ctx.kind {
        CompactionKind::Background => "Compaction",
        CompactionKind::Major => "Major compaction",
        CompactionKind::GarbageCollect => "Garbage collection",
        CompactionKind::Cleanup => "Cleanup",
        CompactionKind::AntiCompaction => "Anticompaction after repair",
    };
    // Wide partitions streamed row block by row block read through a shared memo; everything
    // else through each input's last chunk.
    let memo: ByteCache<ChunkKey, Vec<u8>> = ByteCache::new(COMPACTION_CHUNK_MEMO_BYTES);
    let purged = std::cell::Cell::new(0u64);
    let copied = std::cell::Cell::new(0u64);
    let walk = Walk::open(ctx.inputs, range)?;
    let (expected, total) = (walk.expected, walk.total);
    let task = ctx.bg.progress.start(ctx.def, label, total);
    let merged = RangeMerge::new(ctx, walk, &memo, &purged, &copied);
    let rate = rate_mib_s(ctx);
    let ring = ring_splits(ctx);
    let shape = OutputShape {
        max_bytes: ctx.max_output_bytes,
        ring: &ring,
        ring_min_bytes: ring_split_min_bytes(&ctx.def.options.compaction),
        run_id: run_id_of_outputs(ctx.inputs),
    };
    let result = write_outputs(
        ctx.bg,
        ctx.t,
        ctx.def,
        merged,
        expected,
        ctx.level,
        shape,
        task,
        (&ctx.bg.compaction_limiter, &rate),
        ctx.raw_base,
    );
    ctx.bg.progress.end(task);
    Ok(RangeOutput {
        sstables: result?,
        purged: purged.get(),
        copied: copied.get(),
    })
}

/// The ring's tokens, where Leveled and size-tiered compactions end their outputs, so more of
/// their SSTables lie wholly inside a range a node operation moves (and stream whole), and a
/// garbagecollect or cleanup rewrites only the pieces that hold what it drops; none for
/// time-window tables, whose SSTables are windows of time.
fn ring_splits(ctx: &MergeCtx<'_>) -> Arc<Vec<i64>> {
    match ctx.def.options.compaction {
        CompactionOptions::Leveled { .. } | CompactionOptions::SizeTiered { .. } => {
            ctx.bg.ring_tokens.read().clone()
        }
        CompactionOptions::TimeWindow { .. } => Arc::new(Vec::new()),
    }
}

/// The least a size-tiered output holds before it ends at a ring token: a small table stays
/// one SSTable rather than one per vnode (its pieces would cost more file handles and per-read
/// checks than streaming it whole saves). Leveled outputs are sized by the strategy and end at
/// every ring token.
const SIZE_TIERED_RING_SPLIT_MIN_BYTES: u64 = 4 << 20;

fn ring_split_min_bytes(compaction: &CompactionOptions) -> u64 {
    match compaction {
        CompactionOptions::SizeTiered { .. } => SIZE_TIERED_RING_SPLIT_MIN_BYTES,
        _ => 0,
    }
}

/// The run a merge's outputs form: a rewrite of one SSTable (garbagecollect, cleanup, a
/// tombstone compaction, an anticompaction) keeps it in its run; a merge of several starts one.
fn run_id_of_outputs(inputs: &[Arc<SSTableReader>]) -> u64 {
    match inputs {
        [one] if one.stats.run_id != 0 => one.stats.run_id,
        _ => new_run_id(),
    }
}

/// The write rate of a compaction: only background compactions follow the backlog (SSTables,
/// a size-tiered table's counted in runs, as its strategy sees them); one an operator asked for
/// keeps the cap.
fn rate_mib_s<'c>(ctx: &'c MergeCtx<'_>) -> impl Fn() -> u64 + 'c {
    let cap = &ctx.bg.compaction_cap_mib_s;
    let (min_threshold, in_runs) = match ctx.def.options.compaction {
        CompactionOptions::SizeTiered { min_threshold, .. } => (min_threshold as usize, true),
        _ => (4, false),
    };
    let (kind, t) = (ctx.kind, ctx.t);
    move || {
        let cap = cap.load(std::sync::atomic::Ordering::Relaxed);
        match kind {
            CompactionKind::Background => {
                let set = t.sstables.read().clone();
                let backlog = if in_runs {
                    super::strategy::run_count(&set)
                } else {
                    set.len()
                };
                background_rate_mib_s(cap, backlog, min_threshold)
            }
            _ => cap,
        }
    }
}

/// Each input's index walked in order over one token range: where its part of the range ends,
/// and the position and entry at its head.
struct Walk<'a> {
    cursors: Vec<IndexIter<'a>>,
    ends: Vec<usize>,
    heads: Vec<Option<(usize, IndexEntry)>>,
    /// Partitions of the range, summed over the inputs.
    expected: usize,
    /// Bytes of the range, summed over the inputs.
    total: u64,
}

impl<'a> Walk<'a> {
    fn open(inputs: &'a [Arc<SSTableReader>], range: &TokenRange) -> Result<Self, StorageError> {
        let mut walk = Walk {
            cursors: Vec::with_capacity(inputs.len()),
            ends: Vec::with_capacity(inputs.len()),
            heads: vec![None; inputs.len()],
            expected: 0,
            total: 0,
        };
        for (si, s) in inputs.iter().enumerate() {
            let count = s.partition_count();
            let first = range.lo.map_or(Ok(0), |lo| s.first_at_or_after_token(lo))?;
            let end = range
                .hi
                .map_or(Ok(count), |hi| s.first_at_or_after_token(hi))?;
            walk.expected += end.saturating_sub(first);
            let mut cursor = s.entries_from(first);
            if first < end {
                if let Some(e) = cursor.next().transpose()? {
                    let last = if end == count {
                        s.stats.uncompressed_bytes
                    } else {
                        s.entry(end)?.position
                    };
                    walk.total += last.saturating_sub(e.position);
                    walk.heads[si] = Some((first, e));
                }
            }
            walk.cursors.push(cursor);
            walk.ends.push(end);
        }
        Ok(walk)
    }

    /// Moves the inputs' entries of the next partition (the smallest key at their heads) into
    /// `entries` and advances those inputs; returns the partition's summed input bytes, None at
    /// the end of the range.
    fn next_partition(
        &mut self,
        batch: &mut Vec<usize>,
        entries: &mut Vec<Head>,
    ) -> Option<Result<u64, StorageError>> {
        smallest(&self.heads, batch);
        if batch.is_empty() {
            return None;
        }
        entries.clear();
        let mut input_bytes = 0u64;
        for &si in batch.iter() {
            let (Some(c), Some(head)) = (self.cursors.get_mut(si), self.heads.get_mut(si)) else {
                continue;
            };
            let Some((ii, e)) = head.take() else { continue };
            input_bytes += u64::from(e.length);
            entries.push((si, ii, e));
            if self.ends.get(si).is_some_and(|end| ii + 1 < *end) {
                match c.next() {
                    Some(Ok(e)) => *head = Some((ii + 1, e)),
                    Some(Err(e)) => return Some(Err(e)),
                    None => {}
                }
            }
        }
        Some(Ok(input_bytes))
    }
}

/// The merged partitions of one range, in order: copied encoded, streamed, or merged in memory.
struct RangeMerge<'m, 'a> {
    ctx: &'m MergeCtx<'a>,
    walk: Walk<'a>,
    memo: &'m ByteCache<ChunkKey, Vec<u8>>,
    purged: &'m std::cell::Cell<u64>,
    copied: &'m std::cell::Cell<u64>,
    last_chunks: Vec<LastChunk>,
    /// Shared, not cloned per partition copied.
    input_bounds: Vec<Option<Arc<ClusteringSpan>>>,
    cmp: Arc<ClusteringComparator>,
    /// Reused across partitions: most partitions are in one input.
    batch: Vec<usize>,
    entries: Vec<Head>,
}

impl<'m, 'a: 'm> RangeMerge<'m, 'a> {
    fn new(
        ctx: &'m MergeCtx<'a>,
        walk: Walk<'a>,
        memo: &'m ByteCache<ChunkKey, Vec<u8>>,
        purged: &'m std::cell::Cell<u64>,
        copied: &'m std::cell::Cell<u64>,
    ) -> Self {
        let n = ctx.inputs.len();
        RangeMerge {
            ctx,
            walk,
            memo,
            purged,
            copied,
            last_chunks: vec![None; n],
            input_bounds: ctx
                .inputs
                .iter()
                .map(|s| s.clustering_bounds().cloned().map(Arc::new))
                .collect(),
            cmp: ctx.t.layout.read().cmp.clone(),
            batch: Vec::with_capacity(n),
            entries: Vec::with_capacity(n),
        }
    }

    fn next_merged(&mut self) -> Option<Result<Merged<'m>, StorageError>> {
        let input_bytes = loop {
            match self
                .walk
                .next_partition(&mut self.batch, &mut self.entries)?
            {
                Ok(n) if self.taken() => break n,
                Ok(_) => {}
                Err(e) => return Some(Err(e)),
            }
        };
        let shadowing = match self.entries.first() {
            Some((_, _, e)) => match shadow_copies(self.ctx.shadow, e.token, &e.key) {
                Ok(s) => s,
                Err(e) => return Some(Err(e)),
            },
            None => None,
        };
        if input_bytes <= STREAM_PARTITION_BYTES && shadowing.is_none() {
            match self.raw_copy() {
                Ok(Some(m)) => return Some(Ok(m)),
                Ok(None) => {}
                Err(e) => return Some(Err(e)),
            }
        }
        let Some((_, _, e)) = self.entries.first() else {
            return Some(Err(StorageError::Decode {
                what: "compaction merge",
            }));
        };
        // Rows streamed one by one go to a Data.db stream from Data.db streams only.
        if input_bytes > STREAM_PARTITION_BYTES && !self.ctx.columnar() && shadowing.is_none() {
            let purge_at = PurgeAt {
                gc_before_s: self.ctx.gc_before_s,
                max_purgeable_ts: max_purgeable(self.ctx, e.token, &e.key),
                now_s: self.ctx.now_s,
            };
            return Some(Ok(self.streamed(purge_at, e.token)));
        }
        self.merge_whole(shadowing.as_ref())
    }

    /// Whether the outputs take the partition just walked (skipped ones cost an index entry).
    fn taken(&self) -> bool {
        match (self.ctx.only, self.entries.first()) {
            (Some(only), Some((_, _, e))) => only(e.token),
            _ => true,
        }
    }

    /// The partition copied in encoded form, when the outputs have a timestamp base and its
    /// inputs allow it (see `raw_merge`).
    fn raw_copy(&mut self) -> Result<Option<Merged<'m>>, StorageError> {
        let Some(to_base) = self.ctx.raw_base else {
            return Ok(None);
        };
        let horizon = Horizon {
            gc_before_s: self.ctx.gc_before_s,
            now_s: self.ctx.now_s,
        };
        let raw = raw_merge(
            self.ctx.inputs,
            &self.entries,
            to_base,
            &mut self.last_chunks,
            &self.input_bounds,
            horizon,
            &self.cmp,
        )?;
        Ok(raw.map(|(enc, bounds)| {
            self.copied.set(self.copied.get() + 1);
            Merged::Encoded(enc, bounds)
        }))
    }

    /// A partition too large to merge in memory: its rows streamed (wide_merge.rs).
    fn streamed(&self, purge_at: PurgeAt, token: i64) -> Merged<'m> {
        let batch: Vec<(usize, usize)> =
            self.entries.iter().map(|(si, ii, _)| (*si, *ii)).collect();
        let (inputs, memo, purged) = (self.ctx.inputs, self.memo, self.purged);
        let f = move |w: &mut SSTableWriter| {
            let n = write_streamed(w, inputs, &batch, memo, purge_at)?;
            purged.set(purged.get() + n);
            Ok(())
        };
        Merged::Streamed(token, Box::new(f))
    }

    /// The inputs' versions of the partition decoded, merged and purged, without what
    /// `shadowing` (its copies elsewhere, for a garbagecollect) shadows.
    fn merge_whole(
        &mut self,
        shadowing: Option<&Partition>,
    ) -> Option<Result<Merged<'m>, StorageError>> {
        let mut acc: Option<Partition> = None;
        for (si, _, e) in &self.entries {
            let Some(s) = self.ctx.inputs.get(*si) else {
                continue;
            };
            let Some(last) = self.last_chunks.get_mut(*si) else {
                continue;
            };
            let read = if s.is_columnar() {
                s.read_partition_at(e, None)
            } else {
                s.read_span(e.position, e.length, last)
                    .and_then(|bytes| s.decode_partition_bytes(&bytes, e))
            };
            let p = match read {
                Ok(p) => p,
                Err(e) => return Some(Err(e)),
            };
            match &mut acc {
                Some(a) => a.merge(p),
                None => acc = Some(p),
            }
        }
        let mut p = acc?;
        if let (Some(other), Some(g)) = (shadowing, self.ctx.shadow) {
            p.drop_shadowed_by(other, g.cells);
        }
        p.drop_shadowed();
        let (token, key) = (p.token, p.key.clone());
        let mut lookup = || max_purgeable(self.ctx, token, &key);
        let n = purge(
            &mut p,
            self.ctx.gc_before_s,
            &mut MaxPurgeable::Lazy(&mut lookup),
            self.ctx.now_s,
        );
        self.purged.set(self.purged.get() + n);
        Some(Ok(Merged::Whole(p)))
    }
}

impl<'m, 'a: 'm> Iterator for RangeMerge<'m, 'a> {
    type Item = Result<Merged<'m>, StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_merged()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sstable::SSTableStats;
    use crate::test_support::*;
    use crate::Engine;

    #[test]
    fn an_unbounded_range_is_all_tokens() {
        assert_eq!(token_splits(&[], 4).unwrap(), vec![TokenRange::ALL]);
    }

    /// Three SSTables of 1,000 partitions in all: disjoint keys (copied encoded), overwrites
    /// and deletions (merged), on an engine that parallelises even this small major compaction.
    fn engine_with_three_sstables(
        name: &str,
        compaction: CompactionOptions,
    ) -> (Arc<Engine>, std::path::PathBuf) {
        let dir = tempdir(name);
        let mut config = config(&dir, CommitlogSync::Batch);
        config.concurrent_compactors = 2;
        config.parallel_major_compaction_min_bytes = 0;
        let e = Engine::open(config).unwrap();
        let mut def = table_def(0);
        def.options.compaction = compaction;
        e.create_table(def).unwrap();
        for round in 0..3u32 {
            for i in 0..400u32 {
                let key = format!("k{}", i + round * 300);
                let mut m = mutation(key.as_bytes());
                let ts = i64::from(round) + 1;
                m.rows
                    .push(row(b"a", vec![set(1, ts, &round.to_be_bytes())]));
                if round == 2 && i % 7 == 0 {
                    m.rows.push(RowUpdate {
                        deletion: Some(DeletionTime {
                            marked_for_delete_at_us: ts,
                            local_deletion_time_s: 1,
                        }),
                        ..row(b"b", vec![])
                    });
                } else {
                    m.rows.push(row(b"b", vec![set(2, ts, &i.to_be_bytes())]));
                }
                e.apply_blocking(&[m]).unwrap();
            }
            e.flush(None).unwrap();
        }
        (e, dir)
    }

    #[test]
    fn a_large_major_compaction_of_a_leveled_table_merges_token_ranges_in_parallel() {
        let leveled = CompactionOptions::Leveled {
            sstable_size_in_mb: 160,
            fanout_size: 10,
        };
        let (e, dir) = engine_with_three_sstables("parallel-major", leveled);
        let before = e.read(TABLE, &scan_all(now())).unwrap();
        let cs = e.compact(TABLE).unwrap();
        assert_eq!((cs.input_sstables, cs.output_sstables), (3, 2));
        assert!(cs.partitions_copied > 0 && cs.partitions_copied < cs.partitions_written);
        let after = e.read(TABLE, &scan_all(now())).unwrap();
        // What the reads return is unchanged (what they scan may shrink: tombstones purged).
        assert_eq!(after.partitions, before.partitions);
        assert_eq!(after.partitions.len(), 1000);
        // The two outputs hold disjoint token ranges.
        let t = e.table(TABLE).unwrap();
        let set = t.sstables.read();
        let (a, b) = (&set[0].stats, &set[1].stats);
        assert!(a.max_token < b.min_token || b.max_token < a.min_token);
        drop(set);
        e.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Cassandra's SizeTiered major compaction leaves one SSTable, however large the input.
    #[test]
    fn a_major_compaction_of_a_size_tiered_table_writes_one_sstable() {
        let stcs = TableOptions::default().compaction;
        assert!(matches!(stcs, CompactionOptions::SizeTiered { .. }));
        let (e, dir) = engine_with_three_sstables("stcs-major", stcs);
        let before = e.read(TABLE, &scan_all(now())).unwrap();
        let cs = e.compact(TABLE).unwrap();
        assert_eq!((cs.input_sstables, cs.output_sstables), (3, 1));
        assert_eq!(
            e.read(TABLE, &scan_all(now())).unwrap().partitions,
            before.partitions
        );
        // From one SSTable too (the log-store run's first stage).
        let cs = e.compact(TABLE).unwrap();
        assert_eq!((cs.input_sstables, cs.output_sstables), (1, 1));
        assert_eq!(e.table(TABLE).unwrap().sstables.read().len(), 1);
        e.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Cell tombstones within gc_grace_seconds and unexpired TTL data copy in encoded form, and
    /// the outputs' statistics count them as the flushes that wrote the inputs did.
    #[test]
    fn live_tombstones_and_ttl_data_are_copied_with_their_statistics() {
        let dir = tempdir("raw-tombstones");
        let e = Engine::open(config(&dir, CommitlogSync::Batch)).unwrap();
        e.create_table(table_def(864_000)).unwrap();
        for round in 0..3u32 {
            for i in 0..300u32 {
                let key = format!("k{}", i + round * 1000);
                let ts = i64::from(round) * 10 + 1;
                let mut m = mutation(key.as_bytes());
                let mut cells = vec![set(1, ts, &i.to_be_bytes())];
                match i % 3 {
                    0 => cells.push(CellUpdate {
                        op: CellOp::Delete,
                        ..set(2, ts, b"")
                    }),
                    1 => cells.push(CellUpdate {
                        op: CellOp::Set {
                            value: b(b"ttl"),
                            ttl_s: 3600 + i,
                        },
                        ..set(2, ts, b"")
                    }),
                    _ => cells.push(set(2, ts, b"plain")),
                }
                m.rows.push(row(b"a", cells));
                e.apply_blocking(&[m]).unwrap();
            }
            e.flush(None).unwrap();
        }
        let t = e.table(TABLE).unwrap();
        // (tombstones, cells, TTL histogram count, drop-time histogram count) over the SSTables.
        let stats_of = |t: &Table| {
            let set = t.sstables.read();
            let sum = |f: fn(&SSTableStats) -> u64| set.iter().map(|s| f(&s.stats)).sum::<u64>();
            (
                sum(|s| s.tombstones),
                sum(|s| s.cells),
                sum(|s| s.ttl_histogram.total()),
                sum(|s| s.drop_time_histogram.total()),
            )
        };
        let before_stats = stats_of(&t);
        let max_ldt = |t: &Table| {
            t.sstables
                .read()
                .iter()
                .map(|s| s.stats.max_local_deletion_time_s)
                .max()
        };
        let before_ldt = max_ldt(&t);
        let before = e.read(TABLE, &scan_all(now())).unwrap();
        let cs = e.compact(TABLE).unwrap();
        assert_eq!(cs.partitions_copied, 900, "every partition is in one input");
        assert_eq!(cs.tombstones_purged, 0);
        assert_eq!(e.read(TABLE, &scan_all(now())).unwrap(), before);
        assert_eq!(stats_of(&t), before_stats);
        assert_eq!(before_stats.0, 300);
        assert_eq!(max_ldt(&t), before_ldt);
        drop(t);
        e.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A tombstone past gc_grace_seconds goes through the decoding merge, which purges it.
    #[test]
    fn purgeable_tombstones_are_not_copied() {
        let dir = tempdir("raw-purgeable");
        let e = Engine::open(config(&dir, CommitlogSync::Batch)).unwrap();
        e.create_table(table_def(0)).unwrap();
        for round in 0..2u32 {
            for i in 0..50u32 {
                let key = format!("k{}", i + round * 100);
                let mut m = mutation(key.as_bytes());
                let mut cells = vec![set(1, 5, b"v")];
                if i % 2 == 0 {
                    cells.push(CellUpdate {
                        op: CellOp::Delete,
                        ..set(2, 5, b"")
                    });
                }
                m.rows.push(row(b"a", cells));
                e.apply_blocking(&[m]).unwrap();
            }
            e.flush(None).unwrap();
        }
        // Deletion times are whole seconds: let gc_grace_seconds = 0 pass them.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let before = e.read(TABLE, &scan_all(now())).unwrap();
        let cs = e.compact(TABLE).unwrap();
        assert_eq!(
            cs.partitions_copied, 50,
            "only partitions without tombstones"
        );
        assert_eq!(cs.tombstones_purged, 50);
        let after = e.read(TABLE, &scan_all(now())).unwrap();
        assert_eq!(after.partitions, before.partitions);
        e.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
