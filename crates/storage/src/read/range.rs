//! A query's partitions: one partition (through the row cache when the table uses it), or a
//! token range walked in batches over memtables and SSTables.

use super::single::Located;
use super::{restrict, ReadPath};
use crate::clustering::CKey;
use crate::memtable::{self, Memtable, PKey};
use crate::partition::{self, Limits, Partition, TableLayout};
use crate::sstable::{IndexEntry, SSTableReader};
use crate::table::Table;
use crate::types::*;
use bytes::Bytes;
use std::ops::Bound;
use std::sync::Arc;

/// Partitions fetched per source per round of a range scan.
const RANGE_BATCH: usize = 256;

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
                    && self.caches.row_cache_enabled()
                    && keep.is_none()
                {
                    self.merged_partition_cached(t, *token, key)?
                        .map(|p| restrict(&p, Some(&ranges)))
                } else {
                    let d =
                        self.read_single(t, *token, key, &ranges, q, &layout, limits, None, keep)?;
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
        loop {
            if !memtable::range_is_valid(&cursor, &end) {
                return Ok(());
            }
            let mut batch = Batch::next(t, &cursor, &end)?;
            let Some(last) = batch.keys.last().cloned() else {
                return Ok(());
            };
            let mut done: Option<PKey> = None;
            let mut outdated = false;
            for (token, key) in std::mem::take(&mut batch.keys) {
                if batch.outdated(t) {
                    outdated = true;
                    break;
                }
                done = Some((token, key.clone()));
                let located = batch.locate(token, &key);
                // Read as a single partition is, so a row limit bounds what is read of a huge
                // partition, not only what is returned (a page stops inside it and the next
                // page resumes there).
                let d = self.read_single(
                    t,
                    token,
                    &key,
                    ranges,
                    q,
                    layout,
                    limits,
                    Some(&located),
                    keep.as_deref_mut(),
                )?;
                if let Some(d) = d {
                    out.partitions.push(d);
                    if out.partitions.len() >= partition_limit || limits.rows_left == 0 {
                        return Ok(());
                    }
                }
            }
            if outdated {
                // A flush happened mid-batch: the keys left are listed again, with its SSTable.
                if let Some(k) = done {
                    cursor = Bound::Excluded(k);
                }
                continue;
            }
            if !batch.more {
                return Ok(());
            }
            cursor = Bound::Excluded(last);
        }
    }
}

/// One round of a range scan: the next keys after the cursor from every source, in order, and
/// each SSTable's index entries for them.
struct Batch {
    keys: Vec<PKey>,
    /// Whether a source had a full batch of keys, so more may follow the last key.
    more: bool,
    sstables: Vec<Arc<SSTableReader>>,
    entries: Vec<std::iter::Peekable<std::vec::IntoIter<Arc<IndexEntry>>>>,
    /// The memtables the keys came from (active, then flushing).
    memtables: Vec<Arc<Memtable>>,
}

impl Batch {
    fn next(t: &Table, cursor: &Bound<PKey>, end: &Bound<PKey>) -> Result<Batch, StorageError> {
        let mut keys: Vec<PKey> = Vec::new();
        // The smallest last key of the sources that had a full batch: past it, a source may
        // have keys this round did not fetch.
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
        let memtables = live_memtables(t);
        for mt in &memtables {
            note(mt.keys_in_range(cursor, end, RANGE_BATCH), &mut keys);
        }
        let sstables: Vec<Arc<SSTableReader>> = t.sstables.read().clone();
        let mut entries = Vec::with_capacity(sstables.len());
        for s in &sstables {
            let es = s.entries_in_range(cursor, end, RANGE_BATCH)?;
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
        Ok(Batch {
            keys,
            more: safe_max.is_some(),
            sstables,
            entries,
            memtables,
        })
    }

    /// Whether a memtable the keys came from has been flushed since: its rows are then in an
    /// SSTable this batch does not know, while partitions are read from the memtables live at
    /// the time, so reading on would skip them.
    fn outdated(&self, t: &Table) -> bool {
        let current = t.memtable.read();
        let flushing = t.flushing.read();
        self.memtables
            .iter()
            .any(|m| !Arc::ptr_eq(&current, m) && !flushing.iter().any(|f| Arc::ptr_eq(f, m)))
    }

    /// The SSTables holding this key, with their index entries (keys come in order, so each
    /// SSTable's entries are walked once).
    fn locate(&mut self, token: i64, key: &Bytes) -> Vec<Located> {
        let mut located = Vec::new();
        for (s, es) in self.sstables.iter().zip(self.entries.iter_mut()) {
            while es.peek().is_some_and(|e| (e.token, &e.key) < (token, key)) {
                es.next();
            }
            if let Some(e) = es.next_if(|e| e.token == token && e.key == *key) {
                located.push((s.clone(), Some(e)));
            }
        }
        located
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

/// The query's slices as comparator positions (all rows when none).
pub(super) fn slice_ranges(q: &ReadQuery, layout: &TableLayout) -> Vec<(CKey, CKey)> {
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

/// The table's active memtable, then those being flushed.
fn live_memtables(t: &Table) -> Vec<Arc<Memtable>> {
    let mut out = vec![t.memtable.read().clone()];
    out.extend(t.flushing.read().iter().cloned());
    out
}
