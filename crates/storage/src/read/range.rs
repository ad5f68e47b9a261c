//! A query's partitions: one partition (through the row cache when the table uses it), or a
//! token range walked in batches over memtables and SSTables.

use super::single::{Located, OnePartition};
use super::{restrict, ReadPath};
use crate::clustering::CKey;
use crate::memtable::{self, Memtable, PKey};
use crate::partition::{self, Limits, Partition, TableLayout};
use crate::sstable::{IndexEntry, IndexIter, SSTableReader};
use crate::table::Table;
use crate::types::*;
use bytes::Bytes;
use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Partitions fetched per source per round of a range scan, at most; a read starts with
/// `FIRST_RANGE_BATCH` and grows the rounds by `RANGE_BATCH_GROWTH`, so a page that ends
/// inside its first partitions (a page of a clustered table) does not list and decode the
/// index entries of hundreds of partitions it will not read.
const RANGE_BATCH: usize = 256;
const FIRST_RANGE_BATCH: usize = 4;
const RANGE_BATCH_GROWTH: usize = 4;

impl ReadPath {
    /// The live data of `q` within `limits`; an unfiltered read also collects the merged
    /// partitions in `keep` (and bypasses the row cache, which holds whole partitions).
    pub(crate) fn read_limited(
        &self,
        t: &Table,
        q: &ReadQuery,
        limits: &mut Limits,
        keep: Option<&mut Vec<Partition>>,
    ) -> Result<ReadResult, StorageError> {
        let layout = t.layout.read().clone();
        let partition_limit = q.partition_limit.unwrap_or(usize::MAX);
        let mut out = ReadResult::default();
        if limits.rows_left == 0 || limits.per_partition == 0 || partition_limit == 0 {
            return Ok(out);
        }
        let ranges = partition::slice_ranges(q, &layout);
        match &q.partitions {
            PartitionRange::Single { key, token } => {
                let ranges = match &q.resume_after {
                    Some(r) => resume_ranges(ranges, r, q.reversed, &layout),
                    None => ranges,
                };
                if ranges.is_empty() {
                    return Ok(out);
                }
                // A pinned read sees no memtable, and the row cache holds what they had.
                let pinned = crate::exclusion::is_pinned();
                let merged = if t.def.read().options.rows_per_partition_to_cache > 0
                    && self.caches.row_cache_enabled()
                    && keep.is_none()
                    && !pinned
                {
                    self.merged_partition_cached(t, *token, key)?
                        .map(|p| restrict(&p, Some(&ranges)))
                } else {
                    let at = OnePartition {
                        token: *token,
                        key,
                        ranges: &ranges,
                        q,
                        layout: &layout,
                        in_memtables: !pinned,
                    };
                    let d = self.read_single(t, &at, limits, None, keep)?;
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
                    keep,
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
        mut keep: Option<&mut Vec<Partition>>,
    ) -> Result<(), StorageError> {
        let mut batch_size = FIRST_RANGE_BATCH;
        // Reused for every partition: a scan locates thousands.
        let mut located: Vec<Located> = Vec::new();
        // One snapshot of the SSTables per pass, each index walked forward once: a pass ends
        // when a flush retires a memtable the keys may have come from (its rows then live in an
        // SSTable the snapshot lacks), and the next pass resumes after the last key read.
        'snapshot: loop {
            let retired_at = t.memtables_retired.load(Ordering::Acquire);
            // A stream page leaves out the SSTables it sent whole (engine/whole.rs).
            let sstables = crate::exclusion::visible(t.sstables.read().clone());
            let mut indexes = IndexCursors::open(&sstables, &cursor)?;
            loop {
                if !memtable::range_is_valid(&cursor, &end) {
                    return Ok(());
                }
                // No more keys than the partitions still wanted: a read of 128 partitions
                // (as the server asks) would otherwise decode up to a batch of index entries
                // past them, and throw them away.
                let wanted = partition_limit.saturating_sub(out.partitions.len()).max(1);
                let batch = Batch::next(t, &cursor, &end, batch_size.min(wanted), &mut indexes)?;
                // The memtables were listed after the snapshot: one retired in between had its
                // keys in neither, and an empty or final batch would end the scan without them.
                if t.memtables_retired.load(Ordering::Acquire) != retired_at {
                    continue 'snapshot;
                }
                batch_size = (batch_size * RANGE_BATCH_GROWTH).min(RANGE_BATCH);
                let Some((last, _)) = batch.keys.last().cloned() else {
                    return Ok(());
                };
                for ((token, key), in_memtables) in batch.keys {
                    indexes.locate(token, &key, &mut located);
                    let (limits_before, kept_before) =
                        (Limits { ..*limits }, keep.as_deref().map_or(0, Vec::len));
                    // Read as a single partition is, so a row limit bounds what is read of a
                    // huge partition, not only what is returned (a page stops inside it and the
                    // next page resumes there).
                    let at = OnePartition {
                        token,
                        key: &key,
                        ranges,
                        q,
                        layout,
                        in_memtables,
                    };
                    let d =
                        self.read_single(t, &at, limits, Some(&located), keep.as_deref_mut())?;
                    // A memtable retired since the snapshot may have held this partition when
                    // it was listed and been gone when it was read (its rows in an SSTable the
                    // snapshot lacks): the read is undone and done again with a new snapshot.
                    if t.memtables_retired.load(Ordering::Acquire) != retired_at {
                        *limits = limits_before;
                        if let Some(k) = keep.as_deref_mut() {
                            k.truncate(kept_before);
                        }
                        continue 'snapshot;
                    }
                    cursor = Bound::Excluded((token, key));
                    if let Some(d) = d {
                        out.partitions.push(d);
                        if out.partitions.len() >= partition_limit || limits.rows_left == 0 {
                            return Ok(());
                        }
                    }
                }
                if !batch.more {
                    return Ok(());
                }
                cursor = Bound::Excluded(last);
            }
        }
    }
}

/// Each SSTable's index entries from a scan's start on, walked forward once, with those read
/// ahead of the keys handed out so far.
struct IndexCursors<'s> {
    sources: Vec<IndexCursor<'s>>,
}

struct IndexCursor<'s> {
    sstable: &'s Arc<SSTableReader>,
    entries: IndexIter<'s>,
    /// Entries read from the index and not yet located, in order.
    pending: VecDeque<Arc<IndexEntry>>,
    /// Whether the walk reached the end of the scan's range or of the index.
    done: bool,
}

impl<'s> IndexCursors<'s> {
    fn open(sstables: &'s [Arc<SSTableReader>], start: &Bound<PKey>) -> Result<Self, StorageError> {
        let sources = sstables
            .iter()
            .map(|s| {
                Ok(IndexCursor {
                    sstable: s,
                    entries: s.entries_after(start)?,
                    pending: VecDeque::new(),
                    done: false,
                })
            })
            .collect::<Result<_, StorageError>>()?;
        Ok(IndexCursors { sources })
    }

    /// The SSTables holding this key, with their index entries, into `located` (keys come in
    /// order, so each SSTable's entries are walked once).
    fn locate(&mut self, token: i64, key: &Bytes, located: &mut Vec<Located>) {
        located.clear();
        for c in &mut self.sources {
            while c
                .pending
                .front()
                .is_some_and(|e| (e.token, &e.key) < (token, key))
            {
                c.pending.pop_front();
            }
            if c.pending
                .front()
                .is_some_and(|e| e.token == token && e.key == *key)
            {
                located.push((c.sstable.clone(), c.pending.pop_front()));
            }
        }
    }
}

impl IndexCursor<'_> {
    /// Reads entries until `size` are pending or the walk passes `end`.
    fn fill(&mut self, size: usize, end: &Bound<PKey>) -> Result<(), StorageError> {
        while !self.done && self.pending.len() < size {
            let Some(e) = self.entries.next() else {
                self.done = true;
                break;
            };
            let e = e?;
            if !memtable::is_before_end(end, e.token, &e.key) {
                self.done = true;
                break;
            }
            self.pending.push_back(Arc::new(e));
        }
        Ok(())
    }
}

/// One round of a range scan: the next keys after the cursor from every source, in order,
/// each with whether a memtable listed it (a key only SSTables listed is not looked up in the
/// memtables: a write landing there since is concurrent with this read, which may miss it).
struct Batch {
    keys: Vec<(PKey, bool)>,
    /// Whether a source had a full batch of keys, so more may follow the last key.
    more: bool,
}

impl Batch {
    fn next(
        t: &Table,
        cursor: &Bound<PKey>,
        end: &Bound<PKey>,
        size: usize,
        indexes: &mut IndexCursors<'_>,
    ) -> Result<Batch, StorageError> {
        let mut keys: Vec<(PKey, bool)> = Vec::new();
        // The smallest last key of the sources that may have more keys than they gave: past
        // it, a source may have keys this round did not fetch.
        let mut safe_max: Option<PKey> = None;
        let mut note_last = |last: PKey| {
            if !matches!(&safe_max, Some(s) if last >= *s) {
                safe_max = Some(last);
            }
        };
        for mt in &live_memtables(t) {
            let ks = mt.keys_in_range(cursor, end, size);
            if ks.len() >= size {
                if let Some(last) = ks.last() {
                    note_last(last.clone());
                }
            }
            keys.extend(ks.into_iter().map(|k| (k, true)));
        }
        for c in &mut indexes.sources {
            c.fill(size, end)?;
            // Entries at or before the cursor were passed over by keys from other sources.
            while c
                .pending
                .front()
                .is_some_and(|e| !memtable::is_after_start(cursor, e.token, &e.key))
            {
                c.pending.pop_front();
            }
            if !c.done {
                if let Some(e) = c.pending.back() {
                    note_last((e.token, e.key.clone()));
                }
            }
            keys.extend(c.pending.iter().map(|e| ((e.token, e.key.clone()), false)));
        }
        keys.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        keys.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            kept.1 |= same && later.1;
            same
        });
        if let Some(s) = &safe_max {
            keys.retain(|(k, _)| k <= s);
        }
        Ok(Batch {
            keys,
            more: safe_max.is_some(),
        })
    }
}

/// `ranges` cut to what follows `resume` in the read's order (a paged read resumed inside a
/// partition): what the last page returned is not read again.
pub(super) fn resume_ranges(
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
    // A row with a clustering prefix (dense COMPACT STORAGE) is followed by the longer rows
    // starting with it: resume just after the row itself, not after the whole prefix.
    let after = if resume.len() < layout.cmp.len() {
        at(crate::clustering::AFTER_ROW)
    } else {
        at(1)
    };
    let before = at(-1);
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

/// The table's active memtable, then those being flushed (none for a pinned read).
pub(crate) fn live_memtables(t: &Table) -> Vec<Arc<Memtable>> {
    if crate::exclusion::is_pinned() {
        return Vec::new();
    }
    let mut out = vec![t.memtable.read().clone()];
    out.extend(t.flushing.read().iter().cloned());
    out
}
