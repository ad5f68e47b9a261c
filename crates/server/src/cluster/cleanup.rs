//! `nodetool cleanup`: which token ranges this node still replicates, so the storage engine can
//! drop the partitions of every other range (left behind when a joining node took them over).
//! Refused while a node joins or leaves, as Cassandra refuses it ("Node is involved in cluster
//! membership changes"): the ranges a node will keep are not settled until then.

use super::{strategy_of, ClusterNode};
use helenus_cluster::gossip::status;
use helenus_cluster::locator::{ReplicationStrategy, TokenRange};
use helenus_schema::KeyspaceMeta;

/// Storage's form of a token range: `[lo, hi)`, None unbounded.
type OwnedRange = (Option<i64>, Option<i64>);

/// The ranges of `keyspace` this node replicates, or None when it keeps everything (a keyspace
/// that is not spread over the ring).
pub fn owned_ranges(
    cluster: &ClusterNode,
    keyspace: &KeyspaceMeta,
) -> Result<Option<crate::topology::OwnedRanges>, String> {
    let moving = cluster.service.peers().iter().any(|p| {
        matches!(
            p.status.as_str(),
            status::JOINING | status::LEAVING | status::REPLACING | status::REMOVING
        )
    });
    if moving || *cluster.mode.lock() != "NORMAL" {
        return Err(
            "Node is involved in cluster membership changes. Not safe to run cleanup.".into(),
        );
    }
    if matches!(strategy_of(keyspace), ReplicationStrategy::Local) {
        return Ok(None);
    }
    let map = cluster.map_for(keyspace);
    Ok(Some(as_storage_ranges(&map.ranges_of(cluster.local()))))
}

/// `(start, end]` ring ranges, wrapping past the maximum token, as sorted, merged `[lo, hi)`.
pub(super) fn as_storage_ranges(ranges: &[TokenRange]) -> Vec<OwnedRange> {
    let after = |t: i64| t.checked_add(1);
    let mut out: Vec<OwnedRange> = Vec::new();
    for r in ranges {
        if r.start == r.end {
            return vec![(None, None)];
        }
        if r.start < r.end {
            out.push((after(r.start), after(r.end)));
        } else {
            // Past the maximum token and round from the minimum.
            if let Some(lo) = after(r.start) {
                out.push((Some(lo), None));
            }
            out.push((None, after(r.end)));
        }
    }
    out.sort_by_key(|&(lo, _)| lo.unwrap_or(i64::MIN));
    let mut merged: Vec<OwnedRange> = Vec::with_capacity(out.len());
    for (lo, hi) in out {
        match merged.last_mut() {
            // Touching or overlapping the previous range: one range.
            Some((_, prev_hi)) if prev_hi.is_none_or(|h| lo.is_none_or(|l| l <= h)) => {
                *prev_hi = match (*prev_hi, hi) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
            }
            _ => merged.push((lo, hi)),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_ranges_become_sorted_half_open_storage_ranges() {
        let r = |s, e| TokenRange::new(s, e);
        assert_eq!(
            as_storage_ranges(&[r(10, 20), r(-5, 10), r(100, -100)]),
            vec![(None, Some(-99)), (Some(-4), Some(21)), (Some(101), None)]
        );
        assert_eq!(as_storage_ranges(&[r(7, 7)]), vec![(None, None)]);
        assert_eq!(as_storage_ranges(&[r(0, i64::MAX)]), vec![(Some(1), None)]);
        assert_eq!(as_storage_ranges(&[]), Vec::<OwnedRange>::new());
    }
}
