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
