//! Tombstone purge: what compaction may drop after gc_grace_seconds without resurrecting data.

use crate::partition::{Partition, Row};
use crate::reconcile::CellKind;
use crate::types::DeletionTime;

/// When purging may drop a tombstone (see `purge`).
#[derive(Clone, Copy)]
pub(crate) struct PurgeAt {
    pub gc_before_s: i64,
    pub max_purgeable_ts: i64,
    pub now_s: i64,
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

/// Whether `purge` could drop anything of `p` were nothing older outside the compaction: a
/// deletion or TTL older than gc_grace. Only then does the merge look for the partition in the
/// other SSTables and memtables (the `max_purgeable_ts` bound); otherwise no bound changes what
/// `purge` does, and with the default gc_grace of ten days that is nearly every partition.
pub(crate) fn has_purge_candidates(p: &Partition, gc_before_s: i64, now: i64) -> bool {
    let old = |d: &DeletionTime| d.local_deletion_time_s < gc_before_s;
    p.deletion.as_ref().is_some_and(old)
        || p.range_tombstones.iter().any(|rt| old(&rt.2))
        || row_has_purge_candidates(&p.static_row, gc_before_s, now)
        || p.rows
            .values()
            .any(|r| row_has_purge_candidates(r, gc_before_s, now))
}

fn row_has_purge_candidates(r: &Row, gc_before_s: i64, now: i64) -> bool {
    let old = |d: &DeletionTime| d.local_deletion_time_s < gc_before_s;
    r.deletion.as_ref().is_some_and(old)
        || r.liveness
            .is_some_and(|l| l.ttl_s > 0 && l.expires_at_s <= now && l.expires_at_s < gc_before_s)
        || r.complex_deletions.values().any(old)
        || r.cells
            .values()
            .any(|c| c.tombstone_time_s(now).is_some_and(|t| t < gc_before_s))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clustering::{CKey, ClusteringComparator};
    use crate::reconcile::Cell;
    use crate::types::Liveness;
    use bytes::Bytes;

    const NOW: i64 = 1_000_000;

    /// The clustering of a table without clustering columns.
    fn no_clustering() -> CKey {
        CKey::row(
            Vec::new(),
            &std::sync::Arc::new(ClusteringComparator::new(Vec::new())),
        )
    }
    const GC_BEFORE: i64 = NOW - 864_000;

    fn one_row(cells: Vec<(u32, Cell)>, liveness: Option<Liveness>) -> Partition {
        let mut p = Partition::new(Bytes::from_static(b"k"), 7);
        let mut r = Row {
            liveness,
            ..Row::default()
        };
        for (col, c) in cells {
            r.cells.insert((col, None), c);
        }
        p.rows.insert(no_clustering(), Box::new(r));
        p
    }

    fn live(ttl_s: u32, expires_at_s: i64) -> Cell {
        Cell {
            timestamp_us: 5,
            kind: CellKind::Live {
                value: Bytes::from_static(b"v"),
                ttl_s,
                expires_at_s,
            },
        }
    }

    fn tombstone(at_s: i64) -> Cell {
        Cell {
            timestamp_us: 5,
            kind: CellKind::Tombstone {
                local_deletion_time_s: at_s,
            },
        }
    }

    /// The candidates are exactly what `purge` drops with no bound from outside the compaction.
    fn agrees_with_purge(p: &Partition) -> bool {
        let found = has_purge_candidates(p, GC_BEFORE, NOW);
        let mut unbounded = p.clone();
        let dropped = purge(&mut unbounded, GC_BEFORE, i64::MAX, NOW) > 0;
        assert_eq!(found, dropped, "{p:?}");
        found
    }

    #[test]
    fn only_deletions_and_ttls_older_than_gc_grace_are_candidates() {
        assert!(!agrees_with_purge(&one_row(vec![(1, live(0, 0))], None)));
        assert!(!agrees_with_purge(&one_row(
            vec![(1, tombstone(GC_BEFORE + 1)), (2, live(60, NOW - 1))],
            None
        )));
        assert!(agrees_with_purge(&one_row(
            vec![(1, live(0, 0)), (2, tombstone(GC_BEFORE - 1))],
            None
        )));
        assert!(agrees_with_purge(&one_row(
            vec![(1, live(60, GC_BEFORE - 1))],
            None
        )));
        let expired_row = Liveness {
            timestamp_us: 5,
            ttl_s: 60,
            expires_at_s: GC_BEFORE - 1,
        };
        assert!(agrees_with_purge(&one_row(vec![], Some(expired_row))));
        let deleted = DeletionTime {
            marked_for_delete_at_us: 9,
            local_deletion_time_s: GC_BEFORE - 1,
        };
        let mut p = one_row(vec![(1, live(0, 0))], None);
        p.range_tombstones
            .push((no_clustering(), no_clustering(), deleted));
        assert!(agrees_with_purge(&p));
        let mut p = one_row(vec![(1, live(0, 0))], None);
        p.deletion = Some(deleted);
        assert!(agrees_with_purge(&p));
    }
}
