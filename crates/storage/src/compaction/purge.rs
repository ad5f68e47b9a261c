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

/// The bound on the tombstones `purge` may drop: below the oldest timestamp of the partition's
/// data outside the compaction. Known up front, or found when a deletion or TTL older than
/// gc_grace first asks for it: finding it looks the partition up in every other SSTable (a Bloom
/// filter and often an index search each, half of a background compaction's CPU), and with the
/// default gc_grace of ten days nearly no partition holds anything that old.
pub(crate) enum MaxPurgeable<'f> {
    Known(i64),
    Lazy(&'f mut dyn FnMut() -> i64),
}

impl MaxPurgeable<'_> {
    fn get(&mut self) -> i64 {
        let found = match self {
            MaxPurgeable::Known(ts) => return *ts,
            MaxPurgeable::Lazy(find) => find(),
        };
        *self = MaxPurgeable::Known(found);
        found
    }
}

/// Whether a deletion is older than gc_grace and nothing it could shadow lives outside.
fn purgeable(d: &DeletionTime, gc_before_s: i64, max: &mut MaxPurgeable<'_>) -> bool {
    d.local_deletion_time_s < gc_before_s && d.marked_for_delete_at_us < max.get()
}

/// Removes tombstones older than gc_grace whose timestamp is below `max` (no older data for
/// this partition exists outside the compaction), and expired TTL data in the same case.
pub(crate) fn purge(
    p: &mut Partition,
    gc_before_s: i64,
    max: &mut MaxPurgeable<'_>,
    now: i64,
) -> u64 {
    let mut purged = purge_header(p, gc_before_s, max, now);
    for r in p.rows.values_mut() {
        purged += purge_row(r, gc_before_s, max, now);
    }
    p.rows.retain(|_, r| !r.is_empty());
    purged
}

/// `purge` for the partition deletion, range tombstones and static row (not the rows).
pub(crate) fn purge_header(
    p: &mut Partition,
    gc_before_s: i64,
    max: &mut MaxPurgeable<'_>,
    now: i64,
) -> u64 {
    let mut purged = 0u64;
    if p.deletion.is_some_and(|d| purgeable(&d, gc_before_s, max)) {
        p.deletion = None;
        purged += 1;
    }
    let before = p.range_tombstones.len();
    p.range_tombstones
        .retain(|rt| !purgeable(&rt.2, gc_before_s, max));
    purged += (before - p.range_tombstones.len()) as u64;
    purged + purge_row(&mut p.static_row, gc_before_s, max, now)
}

/// `purge` for one row.
pub(crate) fn purge_row(
    r: &mut Row,
    gc_before_s: i64,
    max: &mut MaxPurgeable<'_>,
    now: i64,
) -> u64 {
    let mut purged = 0u64;
    if r.deletion.is_some_and(|d| purgeable(&d, gc_before_s, max)) {
        r.deletion = None;
        purged += 1;
    }
    if let Some(l) = r.liveness {
        let dead_at = l.expires_at_s;
        if l.ttl_s > 0 && dead_at <= now && dead_at < gc_before_s && l.timestamp_us < max.get() {
            r.liveness = None;
            purged += 1;
        }
    }
    let nb = r.complex_deletions.len();
    r.complex_deletions
        .retain(|_, d| !purgeable(d, gc_before_s, max));
    purged += (nb - r.complex_deletions.len()) as u64;
    let nc = r.cells.len();
    r.cells.retain(|_, c| match c.tombstone_time_s(now) {
        Some(t) => !(t < gc_before_s && c.timestamp_us < max.get()),
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

    /// The other SSTables are looked at exactly when `purge` can drop something: a deletion or
    /// TTL older than gc_grace.
    fn agrees_with_purge(p: &Partition) -> bool {
        let mut unbounded = p.clone();
        let mut looked = false;
        let mut lookup = || {
            looked = true;
            i64::MAX
        };
        let dropped = purge(
            &mut unbounded,
            GC_BEFORE,
            &mut MaxPurgeable::Lazy(&mut lookup),
            NOW,
        ) > 0;
        assert_eq!(looked, dropped, "{p:?}");
        looked
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
