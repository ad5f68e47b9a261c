//! Single-partition reads with a row limit: a slice of a wide partition such as
//! `WHERE pk = ? AND ck >= ? LIMIT 100` needs its first hundred rows, not the rest of the
//! partition. SSTables with a row index are read block by block until each has given a few more
//! rows than the limit; merged rows past the point where any SSTable stopped might be
//! incomplete (a later block could hold a newer version or a deletion), so they are cut. If
//! fewer live rows than the limit remain (deleted or expired rows), the read is repeated with a
//! larger allowance, up to the whole slice.

use super::{restrict, unfiltered, ReadPath};
use crate::clustering::CKey;
use crate::error::StorageError;
use crate::memtable::Memtable;
use crate::partition::{self, Limits, Partition, Row, TableLayout};
use crate::read::shortcut::Shortcut;
use crate::sstable::{IndexEntry, ReadCells, SSTableReader};
use crate::table::{SSTableSet, Table};
use crate::types::{PartitionData, ReadQuery};
use bytes::Bytes;
use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// An SSTable that holds a partition, with the partition's index entry when already known.
pub(crate) type Located = (Arc<SSTableReader>, Option<Arc<IndexEntry>>);

/// The SSTables a read of one partition looks in: the table's, or a pinned read's set
/// (nodetool export).
pub(crate) fn readable_sstables(t: &Table) -> SSTableSet {
    crate::exclusion::pinned().unwrap_or_else(|| t.sstables.read().clone())
}

/// What the active memtable says of a partition read in place.
enum InMemtable {
    /// It held the partition alone: the read's answer.
    Served(Option<PartitionData>),
    /// It does not hold the partition.
    Absent,
    /// It holds the partition, and so may another source: the read merges.
    Elsewhere,
}

/// The only SSTable that holds a partition, with the partition's index entry.
type Sole = (Arc<SSTableReader>, Arc<IndexEntry>);

/// Rows per SSTable read beyond the limit on the first attempt (tombstones and expired rows
/// take up room), and the factor by which a retry grows the allowance.
const FIRST_EXTRA_ROWS: usize = 16;
const RETRY_GROWTH: usize = 8;

impl ReadPath {
    /// Merges one partition from every source; `ranges` restricts which rows are cloned.
    pub(crate) fn merged_partition(
        &self,
        t: &Table,
        token: i64,
        key: &Bytes,
        ranges: Option<&[(CKey, CKey)]>,
    ) -> Result<Option<Partition>, StorageError> {
        let want = Want {
            token,
            key,
            ranges,
            reversed: false,
            allowance: usize::MAX,
            // The row cache keeps what this returns: values must not pin chunks.
            cells: ReadCells::default(),
            in_memtables: true,
        };
        self.merged_partition_upto(t, &want, None).map(|(p, _)| p)
    }

    /// The live view of one partition for `q`, within `limits`. `keep`: where an unfiltered
    /// read puts the merged partition, cut where the live view stopped (read/unfiltered.rs).
    pub(crate) fn read_single(
        &self,
        t: &Table,
        at: &OnePartition<'_>,
        limits: &mut Limits,
        located: Option<&[Located]>,
        keep: Option<&mut Vec<Partition>>,
    ) -> Result<Option<PartitionData>, StorageError> {
        // Whether the active memtable was looked at and lacks the partition: the one-SSTable
        // check below then does not look it up again.
        let mut active_absent = false;
        if keep.is_none() && at.in_memtables {
            match self.read_in_memtable(t, at, limits, located)? {
                InMemtable::Served(read) => return Ok(read),
                InMemtable::Absent => active_absent = true,
                // In the active memtable and elsewhere too: no SSTable holds it alone.
                InMemtable::Elsewhere => {}
            }
        }
        let may_be_sole = !at.in_memtables || active_absent;
        if keep.is_none() && !at.q.reversed && may_be_sole {
            if let Some((s, e)) = self.sole_sstable(t, at, located, active_absent)? {
                return self.read_sole_sstable(t, at, limits, &s, &e);
            }
        }
        let &OnePartition {
            token,
            key,
            ranges,
            q,
            layout,
            in_memtables,
        } = at;
        let want = limits.rows_left.min(limits.per_partition);
        let mut allowance = first_allowance(limits, want);
        loop {
            let plan = Want {
                token,
                key,
                ranges: Some(ranges),
                reversed: q.reversed,
                allowance,
                cells: ReadCells {
                    // The merged partition an unfiltered read keeps has every column.
                    columns: if keep.is_some() {
                        None
                    } else {
                        q.columns.as_deref()
                    },
                    // What a read returns lives until its response is written.
                    share: true,
                },
                in_memtables,
            };
            let (merged, frontier) = self.merged_partition_upto(t, &plan, located)?;
            let Some(mut p) = merged else {
                return Ok(None);
            };
            if let Some(f) = &frontier {
                cut_past(&mut p, f, q.reversed);
            }
            // A retry reads more of the partition, so it counts what this trial counted again:
            // only the accepted trial's counts are kept. A trial past the tombstone failure
            // threshold ends the read, since a larger one would scan at least as many.
            let mut trial = Limits {
                rows_left: limits.rows_left,
                per_partition: limits.per_partition,
                scan: limits.scan,
            };
            // `p` holds only rows of `ranges`, the query's slices cut where a page resumes.
            let data = partition::live_partition_within(&p, ranges, q, layout, &mut trial)?;
            let got = data.as_ref().map_or(0, |d| d.rows.len());
            if frontier.is_none() || got >= want {
                *limits = trial;
                if let Some(keep) = keep {
                    keep.push(unfiltered::cut(
                        p,
                        data.as_ref(),
                        want,
                        ranges,
                        q.reversed,
                        layout,
                    ));
                }
                return Ok(data);
            }
            allowance = allowance.saturating_mul(RETRY_GROWTH);
        }
    }

    /// The one SSTable holding the partition, when no memtable does and no other SSTable may
    /// (by the caller's list, or the bloom filters): its rows need no merge. A write racing the check is concurrent with the read, which may
    /// miss it as it may whenever it comes a moment later.
    fn sole_sstable(
        &self,
        t: &Table,
        at: &OnePartition<'_>,
        located: Option<&[Located]>,
        active_absent: bool,
    ) -> Result<Option<Sole>, StorageError> {
        let (token, key) = (at.token, at.key);
        if at.in_memtables && !active_absent {
            // The active memtable first, then those being flushed: a flush puts the memtable it
            // replaces among them before the new one is seen, so a partition that was in
            // neither when each was looked at was not written before this read began. (The
            // other order misses one whose memtable was switched out between the two looks.)
            let current = t.memtable.read().clone();
            if current.with_partition(token, key, |_| ()).is_some() {
                return Ok(None);
            }
        }
        if at.in_memtables && !t.flushing.read().is_empty() {
            return Ok(None);
        }
        if let Some(l) = located {
            return Ok(match l {
                [(s, Some(e))] => Some((s.clone(), e.clone())),
                _ => None,
            });
        }
        let sstables = readable_sstables(t);
        // Decided by the bloom filters alone: when two SSTables may hold the partition the merge
        // reads it, looking each index up once and in its own order (the max-timestamp
        // short-circuit may skip the older one's lookup), rather than after lookups here.
        let mut candidates = sstables.iter().filter(|s| s.may_contain(token, key));
        let (Some(s), None) = (candidates.next(), candidates.next()) else {
            return Ok(None);
        };
        Ok(self
            .caches
            .find_in_sstable(t, s, token, key)?
            .map(|e| (s.clone(), e)))
    }

    /// `read_single` of a partition only `s` holds (a forward read): its live rows are built
    /// from the rows as the SSTable gives them, with no merged copy in between.
    fn read_sole_sstable(
        &self,
        t: &Table,
        at: &OnePartition<'_>,
        limits: &mut Limits,
        s: &SSTableReader,
        e: &IndexEntry,
    ) -> Result<Option<PartitionData>, StorageError> {
        let (ranges, q) = (at.ranges, at.q);
        let want = limits.rows_left.min(limits.per_partition);
        let mut allowance = first_allowance(limits, want);
        loop {
            let cells = ReadCells {
                columns: q.columns.as_deref(),
                share: true,
            };
            let cache = Some(&*self.caches.chunk);
            let read = s.read_rows_sliced_upto(e, ranges, false, allowance, cache, cells)?;
            let mut trial = *limits;
            let read_rows = read.rows.len() as u64;
            let data = partition::live_partition_sorted(
                &read.header,
                read.rows,
                ranges,
                q,
                at.layout,
                &mut trial,
            )?;
            let got = data.as_ref().map_or(0, |d| d.rows.len());
            if !read.stopped || got >= want {
                *limits = trial;
                t.counters
                    .max_sstables_per_read
                    .fetch_max(1, Ordering::Relaxed);
                t.counters.sstables_per_read.record(1);
                t.counters
                    .rows_merged
                    .fetch_add(read_rows, Ordering::Relaxed);
                return Ok(data);
            }
            allowance = allowance.saturating_mul(RETRY_GROWTH);
        }
    }

    /// The live view of a partition that only the active memtable holds (recent data, and
    /// every partition of a table not flushed yet), read in place: no merged copy of its rows
    /// is made first. `Elsewhere` when the partition has another source (an SSTable, or a
    /// memtable being flushed); the caller then merges. `limits` change only when this answers.
    fn read_in_memtable(
        &self,
        t: &Table,
        at: &OnePartition<'_>,
        limits: &mut Limits,
        located: Option<&[Located]>,
    ) -> Result<InMemtable, StorageError> {
        let (token, key) = (at.token, at.key);
        let current = t.memtable.read().clone();
        let mut trial = *limits;
        let read = current.with_partition(token, key, |p| {
            partition::live_partition_within(p, at.ranges, at.q, at.layout, &mut trial)
        });
        let Some(data) = read else {
            return Ok(InMemtable::Absent);
        };
        // Looked at after the active memtable (see `sole_sstable`): checked first, a memtable
        // switched out in between, holding older rows of the partition, went unread.
        if !t.flushing.read().is_empty() {
            return Ok(InMemtable::Elsewhere);
        }
        let data = data?;
        // Checked after the memtable was read: a flush that moved the partition into an
        // SSTable meanwhile is seen here (a range scan's snapshot is rechecked by its caller
        // through the retirement counter).
        let in_sstables = match located {
            Some(l) => !l.is_empty(),
            None => t.sstables.read().iter().any(|s| s.may_contain(token, key)),
        };
        if in_sstables {
            return Ok(InMemtable::Elsewhere);
        }
        let visited = |l: &Limits| l.scan.stats.live_rows + l.scan.stats.tombstones_scanned;
        t.counters.rows_merged.fetch_add(
            visited(&trial).saturating_sub(visited(limits)),
            Ordering::Relaxed,
        );
        t.counters.sstables_per_read.record(0);
        *limits = trial;
        Ok(InMemtable::Served(data))
    }

    /// Memtables and SSTables merged for a read of one partition (of `ranges` of it), newest
    /// SSTables first, stopping at older ones the data so far shadows (the max-timestamp
    /// short-circuit, read/shortcut.rs); an SSTable with a row index is read only until it has
    /// given `allowance` rows of the slice. Returns the merged partition and, if an SSTable
    /// stopped early, the clustering up to which the merge is complete. `located`: the SSTables
    /// holding the partition with its index entries, when the caller has them already (a range
    /// scan); otherwise every SSTable is searched.
    fn merged_partition_upto(
        &self,
        t: &Table,
        want: &Want<'_>,
        located: Option<&[Located]>,
    ) -> Result<(Option<Partition>, Option<CKey>), StorageError> {
        let mut m = Merging {
            acc: None,
            frontier: None,
            reversed: want.reversed,
        };
        if want.in_memtables {
            merge_memtables(t, want, &mut m);
        }
        let touched = self.merge_sstables(t, want, located, &mut m)?;
        t.counters
            .max_sstables_per_read
            .fetch_max(touched, Ordering::Relaxed);
        t.counters.sstables_per_read.record(touched);
        let merged = m.acc.as_ref().map_or(0, |p| p.rows.len() as u64);
        t.counters.rows_merged.fetch_add(merged, Ordering::Relaxed);
        Ok((m.acc, m.frontier))
    }

    /// Merges the partition's SSTables into `m`, newest first, until the short-circuit says the
    /// rest is shadowed; returns how many SSTables were read.
    fn merge_sstables(
        &self,
        t: &Table,
        want: &Want<'_>,
        located: Option<&[Located]>,
        m: &mut Merging,
    ) -> Result<u64, StorageError> {
        let (token, key) = (want.token, want.key);
        let (sources, mut shortcut) = self.sstables_in_order(t, want, located);
        let mut touched = 0u64;
        for (n, (s, entry)) in sources.iter().enumerate() {
            // Rows past the frontier are cut from the result, so no source reads them: a
            // huge partition spread over SSTables costs one allowance, not one per SSTable.
            let clipped = want
                .ranges
                .map(|r| clip(r, m.frontier.as_ref(), want.reversed));
            let ranges = clipped.as_deref();
            if matches!(ranges, Some(r) if r.is_empty() || !s.may_have_rows_in(r)) {
                continue;
            }
            if let Some(a) = &m.acc {
                // Built once something was merged: a scan's partition in one SSTable, the
                // common case, never needs it.
                let shortcut = shortcut.get_or_insert_with(|| self.shortcut_for(t, want.ranges));
                if shortcut.covers(a, s.stats.max_timestamp_us) {
                    // Counted by token range (the sources cover the token), not bloom filter:
                    // asking each filter only to count cost a cache miss per SSTable on every
                    // read the short-circuit served.
                    let skipped = sources.len() - n;
                    t.counters
                        .sstables_skipped_by_timestamp
                        .fetch_add(skipped as u64, Ordering::Relaxed);
                    break;
                }
            }
            let found;
            let e = match entry {
                Some(e) => e,
                None if located.is_some() => continue,
                None => match self.caches.find_in_sstable(t, s, token, key)? {
                    Some(e) => {
                        found = e;
                        &found
                    }
                    None => continue,
                },
            };
            touched += 1;
            let cache = Some(&*self.caches.chunk);
            let (p, edge) = match ranges {
                Some(r) => s.read_partition_sliced_upto(
                    e,
                    r,
                    want.reversed,
                    want.allowance,
                    cache,
                    want.cells,
                )?,
                None => (s.read_partition_projected(e, cache, want.cells)?, None),
            };
            // A sliced read returns only rows of its ranges: nothing to restrict.
            m.add(p, edge);
        }
        Ok(touched)
    }

    fn shortcut_for(&self, t: &Table, ranges: Option<&[(CKey, CKey)]>) -> Shortcut {
        Shortcut::new(&t.def.read(), ranges, self.shortcut.load(Ordering::Relaxed))
    }

    /// The SSTables to read, newest first, with their index entries when `located` has them,
    /// and the short-circuit when it was needed to order them. Without `located`, those whose
    /// token range covers the partition's.
    fn sstables_in_order<'l>(
        &self,
        t: &Table,
        want: &Want<'_>,
        located: Option<&'l [Located]>,
    ) -> (Cow<'l, [Located]>, Option<Shortcut>) {
        match located {
            // A scan's partition is in one SSTable, mostly: nothing to order or copy.
            Some(l) if l.len() <= 1 => (Cow::Borrowed(l), None),
            Some(l) => {
                let mut sources = l.to_vec();
                sources.sort_by_key(|(s, _)| std::cmp::Reverse(s.stats.max_timestamp_us));
                (Cow::Owned(sources), None)
            }
            None => {
                let all = readable_sstables(t);
                let covering = all.iter().filter(|s| s.covers_token(want.token));
                let mut sstables: Vec<_> = covering.cloned().collect();
                let shortcut = self.shortcut_for(t, want.ranges);
                shortcut.order(&mut sstables);
                let sources = sstables.into_iter().map(|s| (s, None)).collect();
                (Cow::Owned(sources), Some(shortcut))
            }
        }
    }
}

/// The rows each source reads on a first attempt at `want` live rows. A read that fails past
/// a tombstone threshold first reads no more rows than it may scan tombstones: an unlimited
/// read of a partition of millions of deleted rows fails after about the threshold, not after
/// the whole partition.
fn first_allowance(limits: &Limits, want: usize) -> usize {
    let scan = &limits.scan;
    let tombstones_left =
        scan.failure_threshold - scan.stats.tombstones_scanned.min(scan.failure_threshold);
    let first = want.min(usize::try_from(tombstones_left).unwrap_or(usize::MAX));
    first.saturating_add(FIRST_EXTRA_ROWS)
}

/// One partition's read: its key, the slices of it to read (ascending, already cut where a
/// page resumes), and the query they come from.
pub(crate) struct OnePartition<'r> {
    pub token: i64,
    pub key: &'r Bytes,
    pub ranges: &'r [(CKey, CKey)],
    pub q: &'r ReadQuery,
    pub layout: &'r TableLayout,
    /// False when the memtables need not be looked at: a range scan listed theirs and this
    /// key was not among them.
    pub in_memtables: bool,
}

/// What a read of one partition asks of each source.
struct Want<'r> {
    token: i64,
    key: &'r Bytes,
    ranges: Option<&'r [(CKey, CKey)]>,
    reversed: bool,
    allowance: usize,
    /// Which values SSTables decode, and whether they may point into the chunks.
    cells: ReadCells<'r>,
    /// See `OnePartition::in_memtables`.
    in_memtables: bool,
}

/// The partition merged so far from a read's sources, and the clustering up to which it is
/// complete when a source stopped early.
struct Merging {
    acc: Option<Partition>,
    frontier: Option<CKey>,
    reversed: bool,
}

impl Merging {
    /// Merges `p`, whose source is complete up to `edge` (None: all of the slice).
    fn add(&mut self, p: Partition, edge: Option<CKey>) {
        if let Some(edge) = edge {
            let tighter = match &self.frontier {
                None => true,
                Some(f) if self.reversed => edge > *f,
                Some(f) => edge < *f,
            };
            if tighter {
                self.frontier = Some(edge);
            }
        }
        match &mut self.acc {
            Some(a) => a.merge(p),
            None => self.acc = Some(p),
        }
    }
}

/// Merges the partition's rows in the active and flushing memtables into `m`.
fn merge_memtables(t: &Table, want: &Want<'_>, m: &mut Merging) {
    let current = t.memtable.read().clone();
    let flushing: Vec<Arc<Memtable>> = t.flushing.read().clone();
    for mt in std::iter::once(&current).chain(flushing.iter()) {
        let copied = mt.with_partition(want.token, want.key, |p| match want.ranges {
            // Only the rows the read may use are copied: a page of a huge memtable
            // partition costs its own size, not the size of what follows it.
            Some(r) => restrict_upto(p, r, want.reversed, want.allowance),
            None => (restrict(p, None), None),
        });
        if let Some((p, edge)) = copied {
            m.add(p, edge);
        }
    }
}

/// `restrict` that copies at most `allowance` rows, taken in the read's order, and returns the
/// clustering up to which the copy is complete when rows were left out (as an SSTable's
/// `read_partition_sliced_upto` does). Deletions and the static row are always kept.
pub(crate) fn restrict_upto(
    p: &Partition,
    ranges: &[(CKey, CKey)],
    reversed: bool,
    allowance: usize,
) -> (Partition, Option<CKey>) {
    if allowance == usize::MAX {
        return (restrict(p, Some(ranges)), None);
    }
    let mut out = Partition::new(p.key.clone(), p.token);
    out.deletion = p.deletion;
    out.range_tombstones = p.range_tombstones.clone();
    out.static_row = p.static_row.clone();
    let mut ordered: Vec<&(CKey, CKey)> = ranges.iter().filter(|(s, e)| s <= e).collect();
    ordered.sort_by(|a, b| a.0.cmp(&b.0));
    if reversed {
        ordered.reverse();
    }
    let mut last: Option<&CKey> = None;
    // Gathered, then built into the map at once: inserting a page of rows one by one descends
    // the tree per row.
    let mut taken: Vec<(CKey, Box<Row>)> = Vec::new();
    for (s, e) in ordered {
        let it = p.rows.range(crate::clustering::map_bounds(s, e));
        let it: Box<dyn Iterator<Item = _>> = if reversed {
            Box::new(it.rev())
        } else {
            Box::new(it)
        };
        for (k, r) in it {
            if taken.len() >= allowance {
                // A row is left out: the copy is complete only up to the last one taken.
                let edge = last.cloned();
                out.rows = taken.into_iter().collect();
                return (out, edge);
            }
            taken.push((k.clone(), r.clone()));
            last = Some(k);
        }
    }
    out.rows = taken.into_iter().collect();
    (out, None)
}

/// Drops the rows past `frontier` in the read's direction (the frontier row itself stays): a
/// split of the map, not a comparison per row.
fn cut_past(p: &mut Partition, frontier: &CKey, reversed: bool) {
    use std::ops::Bound::{Excluded, Unbounded};
    if reversed {
        // Everything before the frontier goes: split at it and keep the upper part.
        let kept = p.rows.split_off(frontier);
        p.rows = kept;
    } else {
        let first_past = p
            .rows
            .range((Excluded(frontier), Unbounded))
            .next()
            .map(|(k, _)| k.clone());
        if let Some(k) = first_past {
            drop(p.rows.split_off(&k));
        }
    }
}

/// `ranges` cut at `frontier` (inclusive) in the read's direction (borrowed when there is no
/// frontier, the common case: a range scan reads thousands of partitions).
fn clip<'r>(
    ranges: &'r [(CKey, CKey)],
    frontier: Option<&CKey>,
    reversed: bool,
) -> Cow<'r, [(CKey, CKey)]> {
    let Some(f) = frontier else {
        return Cow::Borrowed(ranges);
    };
    let clipped: Vec<(CKey, CKey)> = ranges
        .iter()
        .filter_map(|(s, e)| {
            let (s, e) = if reversed {
                (s.clone().max(f.clone()), e.clone())
            } else {
                (s.clone(), e.clone().min(f.clone()))
            };
            (s <= e).then_some((s, e))
        })
        .collect();
    Cow::Owned(clipped)
}
