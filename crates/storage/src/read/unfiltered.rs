//! Unfiltered reads and their resolution: how a coordinator reconciles replicas.
//!
//! A replica's unfiltered read is the live read with one difference: besides the live view it
//! keeps each partition it merged (tombstones, timestamps and TTLs included), cut where the live
//! view stopped. So row and partition limits count live rows exactly as `read_bounded` does, and
//! the same query resolved from that one answer stops at the same row.
//!
//! Each kept partition is put in a canonical form before it leaves the node, so that replicas
//! holding the same data give the same bytes (and digest) whatever their flush and compaction
//! history: data a deletion shadows is dropped (as Cassandra's merge drops it), tombstones past
//! `gc_grace_seconds` are purged and expired TTL cells become tombstones (as compaction and
//! Cassandra's read-time purge do), and range tombstones are sorted. None of this changes what a
//! read returns: deletions are kept as long as what they shadow may still exist, but a node
//! that missed a tombstone past gc_grace can resurrect data, as in Cassandra.
//!
//! Resolution builds the in-memory partition from every answer's mutations (the memtable's
//! merge, so the reconcile rules of reconcile.rs decide) and runs the live read's last step on
//! it: slices, order, limits, TTL expiry at the query's `now_s`.
//!
//! Known limit: resolving several replicas' answers of a read with a row or partition limit may
//! return fewer rows than one node holding all the data would, because each replica stopped
//! after its own live rows, which the others' deletions may shadow. Cassandra's short-read
//! protection (asking the replicas for more) is not implemented yet.

use super::range::resume_ranges;
use super::{restrict, ReadPath};
use crate::clustering::CKey;
use crate::compaction::purge;
use crate::error::StorageError;
use crate::memtable::{self, PKey};
use crate::partition::{self, Limits, Partition, TableLayout, TombstoneScan};
use crate::table::Table;
use crate::types::*;
use std::collections::BTreeMap;
use std::ops::Bound;

impl ReadPath {
    /// The unfiltered partitions `q` covers, in token order, with what the read scanned.
    pub(crate) fn read_unfiltered(
        &self,
        t: &Table,
        q: &ReadQuery,
        tombstone_failure_threshold: u64,
    ) -> Result<UnfilteredResult, StorageError> {
        let mut kept = Vec::new();
        let live = self.read_counted(t, q, tombstone_failure_threshold, Some(&mut kept))?;
        let gc_before_s = unfiltered_gc_before(t, q.now_s);
        let table = t.id();
        let partitions = kept
            .into_iter()
            .filter_map(|p| canonical(p, gc_before_s, q.now_s))
            .map(|p| partition::to_mutation(&p, table))
            .collect();
        Ok(UnfilteredResult {
            partitions,
            stats: live.stats,
        })
    }
}

/// Tombstones older than this may be purged from an unfiltered read of `t` at `now_s`. With
/// SSTables left out (sent whole) a tombstone may shadow data that is not in the read: it is
/// kept, whatever its age, or the receiver would resurrect that data.
pub(crate) fn unfiltered_gc_before(t: &Table, now_s: i64) -> i64 {
    if crate::exclusion::excluding() {
        i64::MIN
    } else {
        now_s - i64::from(t.def.read().options.gc_grace_seconds)
    }
}

/// What an unfiltered read keeps of partition `p` (rows already restricted to `ranges`), whose
/// live view `data` was computed with room for `want` rows: the rows up to the last one the
/// view returned when it filled that room (a read past it might have stopped elsewhere), and the
/// range tombstones that reach the ranges.
pub(super) fn cut(
    mut p: Partition,
    data: Option<&PartitionData>,
    want: usize,
    ranges: &[(CKey, CKey)],
    reversed: bool,
    layout: &TableLayout,
) -> Partition {
    let last = data
        .filter(|d| d.rows.len() >= want)
        .and_then(|d| d.rows.last());
    if let Some(last) = last {
        let stop = CKey::row(last.clustering.clone(), &layout.cmp);
        if reversed {
            p.rows.retain(|k, _| *k >= stop);
        } else {
            p.rows.retain(|k, _| *k <= stop);
        }
    }
    p.range_tombstones
        .retain(|(s, e, _)| ranges.iter().any(|(rs, re)| s <= re && rs <= e));
    p
}

/// The canonical form of a kept partition (see the module doc); None when nothing is left.
pub(super) fn canonical(mut p: Partition, gc_before_s: i64, now_s: i64) -> Option<Partition> {
    p.drop_shadowed();
    // Shadowed data is gone, so every tombstone past gc_grace may go, whatever its timestamp.
    purge::purge(
        &mut p,
        gc_before_s,
        &mut purge::MaxPurgeable::Known(i64::MAX),
        now_s,
    );
    p.range_tombstones.sort_by(|a, b| {
        let by_time = |d: &DeletionTime| (d.marked_for_delete_at_us, d.local_deletion_time_s);
        a.0.cmp(&b.0)
            .then_with(|| a.1.cmp(&b.1))
            .then_with(|| by_time(&a.2).cmp(&by_time(&b.2)))
    });
    p.range_tombstones
        .dedup_by(|a, b| a.0 == b.0 && a.1 == b.1 && a.2 == b.2);
    let empty = p.deletion.is_none()
        && p.range_tombstones.is_empty()
        && p.static_row.is_empty()
        && p.rows.is_empty();
    (!empty).then_some(p)
}

/// What `read_bounded(q)` returns on a node holding everything in `answers` (unfiltered
/// partitions of `t`, from one or several replicas).
pub(crate) fn resolve(
    t: &Table,
    answers: Vec<Vec<Mutation>>,
    q: &ReadQuery,
) -> Result<ReadResult, StorageError> {
    let layout = t.layout.read().clone();
    let mut merged: BTreeMap<PKey, Partition> = BTreeMap::new();
    for m in answers.into_iter().flatten() {
        if m.table != t.id() {
            return Err(StorageError::InvalidRequest(
                "an unfiltered partition of another table".into(),
            ));
        }
        let mut p = Partition::from_mutation(&m, &layout)?;
        // Answers carry fixed times; a mutation in client form gets them as a write would.
        partition::stamp_local_times(&mut p, q.now_s);
        match merged.get_mut(&(p.token, p.key.clone())) {
            Some(cur) => cur.merge(p),
            None => {
                merged.insert((p.token, p.key.clone()), p);
            }
        }
    }
    let mut limits = Limits {
        rows_left: q.row_limit.unwrap_or(usize::MAX),
        per_partition: q.per_partition_limit.unwrap_or(usize::MAX),
        scan: TombstoneScan::new(u64::MAX),
    };
    let partition_limit = q.partition_limit.unwrap_or(usize::MAX);
    let mut out = ReadResult::default();
    if limits.rows_left == 0 || limits.per_partition == 0 || partition_limit == 0 {
        return Ok(out);
    }
    let mut ranges = partition::slice_ranges(q, &layout);
    let (start, end) = match &q.partitions {
        PartitionRange::Single { key, token } => {
            if let Some(r) = &q.resume_after {
                ranges = resume_ranges(ranges, r, q.reversed, &layout);
            }
            let k = (*token, key.clone());
            (Bound::Included(k.clone()), Bound::Included(k))
        }
        PartitionRange::Range { start, end } => match memtable::start_bound(start) {
            Some(s) => (s, memtable::end_bound(end)),
            None => return Ok(out),
        },
    };
    if ranges.is_empty() || !memtable::range_is_valid(&start, &end) {
        return Ok(out);
    }
    for p in merged.range((start, end)).map(|(_, p)| p) {
        let p = restrict(p, Some(&ranges));
        if let Some(d) = partition::live_partition(&p, q, &layout, &mut limits)? {
            out.partitions.push(d);
            if out.partitions.len() >= partition_limit || limits.rows_left == 0 {
                break;
            }
        }
    }
    out.stats = limits.scan.stats;
    Ok(out)
}
