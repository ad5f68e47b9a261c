//! The pure half of row-level repair: which token ranges to compare row by row, and given each
//! replica's digest list, which partitions to fetch from whom and write to whom.

use bytes::Bytes;
use helenus_cluster::locator::TokenRange;
use std::collections::BTreeMap;

/// One partition as a replica lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DigestEntry {
    pub token: i64,
    pub key: Bytes,
    pub digest: [u8; 16],
}

/// One version of an out-of-sync partition: read it from replica `from` (an index into the
/// replica list), write it to the replicas in `to`, which do not hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Version {
    pub from: usize,
    pub to: Vec<usize>,
}

/// A partition whose digest is not the same on every replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Divergent {
    pub token: i64,
    pub key: Bytes,
    /// One per distinct digest, in the order of the first replica holding it.
    pub versions: Vec<Version>,
}

/// Compares one window of digest lists (`lists[r]`: replica r's entries): the number of
/// distinct partitions compared, and those out of sync. A version is read from replica
/// `prefer` when it holds it (this node: no message), else from its first holder; replicas
/// holding an identical version share one read. Writing every other version to each replica
/// is exact whatever the versions hold (the reconcile rules merge them), and a replica is never
/// sent a version it already has.
pub(super) fn divergent(
    lists: &[Vec<DigestEntry>],
    prefer: Option<usize>,
) -> (u64, Vec<Divergent>) {
    let n = lists.len();
    let mut held: BTreeMap<(i64, Bytes), Vec<Option<[u8; 16]>>> = BTreeMap::new();
    for (r, list) in lists.iter().enumerate() {
        for e in list {
            let digests = held
                .entry((e.token, e.key.clone()))
                .or_insert_with(|| vec![None; n]);
            if let Some(slot) = digests.get_mut(r) {
                *slot = Some(e.digest);
            }
        }
    }
    let compared = held.len() as u64;
    let out = held
        .into_iter()
        .filter_map(|((token, key), digests)| {
            let versions = versions_of(&digests, prefer);
            (!versions.is_empty()).then_some(Divergent {
                token,
                key,
                versions,
            })
        })
        .collect();
    (compared, out)
}

/// The versions to move for one partition; none when every replica holds the same digest.
fn versions_of(digests: &[Option<[u8; 16]>], prefer: Option<usize>) -> Vec<Version> {
    let first = digests.first().copied().flatten();
    if first.is_some() && digests.iter().all(|d| *d == first) {
        return Vec::new();
    }
    let mut distinct: Vec<[u8; 16]> = Vec::new();
    for d in digests.iter().flatten() {
        if !distinct.contains(d) {
            distinct.push(*d);
        }
    }
    distinct
        .into_iter()
        .filter_map(|d| {
            let holds = |r: &usize| digests.get(*r) == Some(&Some(d));
            let from = prefer
                .filter(holds)
                .or_else(|| (0..digests.len()).find(holds))?;
            let to = (0..digests.len()).filter(|r| !holds(r)).collect();
            Some(Version { from, to })
        })
        .collect()
}

/// The differing leaf ranges of `range`'s trees (of `depth`), as the ranges to synchronise:
/// overlapping ones (from different pairs of trees) merged, and ones at most `gap_leaves`
/// leaves apart joined, in token order from the range's start.
pub(super) fn coalesce(
    range: TokenRange,
    differing: Vec<TokenRange>,
    depth: u32,
    gap_leaves: u64,
) -> Vec<TokenRange> {
    const RING: i128 = 1 << 64;
    let width = range.width();
    let max_gap = (width >> depth.min(64)).max(1) * u128::from(gap_leaves);
    // Offsets from the range's start, so a range wrapping past the maximum token sorts right.
    let offset = |t: i64| (i128::from(t) - i128::from(range.start)).rem_euclid(RING) as u128;
    let mut spans: Vec<(u128, u128)> = differing
        .iter()
        .map(|r| {
            let start = offset(r.start);
            let end = offset(r.end);
            (start, if end <= start { width } else { end })
        })
        .collect();
    spans.sort_unstable();
    let mut merged: Vec<(u128, u128)> = Vec::new();
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start <= last.1.saturating_add(max_gap) => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    // Truncating to i64 wraps past the maximum token, as ring arithmetic does.
    let token = |o: u128| (i128::from(range.start) + o as i128) as i64;
    merged
        .into_iter()
        .map(|(start, end)| TokenRange::new(token(start), token(end)))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn entry(token: i64, key: &str, digest: u8) -> DigestEntry {
        DigestEntry {
            token,
            key: Bytes::copy_from_slice(key.as_bytes()),
            digest: [digest; 16],
        }
    }

    fn version(from: usize, to: &[usize]) -> Version {
        Version {
            from,
            to: to.to_vec(),
        }
    }

    #[test]
    fn replicas_that_agree_move_nothing() {
        let list = vec![entry(1, "a", 1), entry(2, "b", 2)];
        let (compared, out) = divergent(&[list.clone(), list.clone(), list], Some(0));
        assert_eq!(compared, 2);
        assert!(out.is_empty());
    }

    #[test]
    fn a_missing_partition_is_read_once_and_written_only_where_missing() {
        let full = vec![entry(1, "a", 1), entry(2, "b", 2), entry(3, "c", 3)];
        let missed = vec![entry(1, "a", 1), entry(3, "c", 3)];
        // Replica 2 missed "b"; this node is replica 2, so the read goes to the first holder.
        let (compared, out) = divergent(&[full.clone(), full.clone(), missed.clone()], Some(2));
        assert_eq!(compared, 3);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].key, Bytes::from_static(b"b"));
        assert_eq!(out[0].versions, vec![version(0, &[2])]);
        // When this node holds it, it reads its own copy.
        let (_, out) = divergent(&[full.clone(), full, missed], Some(1));
        assert_eq!(out[0].versions, vec![version(1, &[2])]);
    }

    #[test]
    fn each_version_goes_to_the_replicas_without_it() {
        let lists = [
            vec![entry(5, "k", 1)],
            vec![entry(5, "k", 2)],
            vec![entry(5, "k", 1)],
        ];
        let (_, out) = divergent(&lists, None);
        assert_eq!(out[0].versions, vec![version(0, &[1]), version(1, &[0, 2])]);
        let (_, out) = divergent(&lists, Some(2));
        assert_eq!(out[0].versions, vec![version(2, &[1]), version(1, &[0, 2])]);
    }

    #[test]
    fn keys_sharing_a_token_are_told_apart() {
        let lists = [
            vec![entry(5, "x", 1), entry(5, "y", 1)],
            vec![entry(5, "y", 1)],
        ];
        let (compared, out) = divergent(&lists, Some(1));
        assert_eq!(compared, 2);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].key, Bytes::from_static(b"x"));
        assert_eq!(out[0].versions, vec![version(0, &[1])]);
    }

    #[test]
    fn a_partition_only_one_replica_holds_goes_to_all_the_others() {
        let lists = [vec![], vec![], vec![entry(-3, "z", 9)]];
        let (_, out) = divergent(&lists, Some(0));
        assert_eq!(out[0].versions, vec![version(2, &[0, 1])]);
    }

    #[test]
    fn close_differing_leaves_are_joined_and_far_ones_kept_apart() {
        // 1024 leaves of 1000 tokens.
        let range = TokenRange::new(0, 1_024_000);
        let leaf = |i: i64| TokenRange::new(i * 1000, (i + 1) * 1000);
        let got = coalesce(range, vec![leaf(900), leaf(3), leaf(5), leaf(40)], 10, 2);
        assert_eq!(
            got,
            vec![
                TokenRange::new(3000, 6000),
                TokenRange::new(40_000, 41_000),
                leaf(900)
            ]
        );
    }

    #[test]
    fn overlapping_differences_from_several_trees_are_merged() {
        let range = TokenRange::new(0, 1_024_000);
        let got = coalesce(
            range,
            vec![
                TokenRange::new(0, 5000),
                TokenRange::new(2000, 8000),
                TokenRange::new(0, 5000),
            ],
            10,
            0,
        );
        assert_eq!(got, vec![TokenRange::new(0, 8000)]);
    }

    #[test]
    fn a_range_wrapping_past_the_maximum_token_keeps_its_order() {
        let range = TokenRange::new(i64::MAX - 10_000, i64::MIN + 10_000);
        let before = TokenRange::new(i64::MAX - 5000, i64::MAX - 4000);
        let across = TokenRange::new(i64::MAX - 100, i64::MIN + 100);
        let after = TokenRange::new(i64::MIN + 9000, i64::MIN + 10_000);
        let got = coalesce(range, vec![after, across, before], 10, 0);
        assert_eq!(got, vec![before, across, after]);
        // The whole ring (a ring of one token): its last leaf ends where it starts.
        let ring = TokenRange::new(7, 7);
        let last = TokenRange::new(6, 7);
        assert_eq!(coalesce(ring, vec![last], 10, 0), vec![last]);
    }
}
