//! How ownership moves when the ring changes (Cassandra's `PendingRangeCalculatorService` and
//! `RangeStreamer`): comparing the replica maps before and after a node joins or leaves gives,
//! for every range, the replicas that gain it (pending: they receive writes while data streams in)
//! and the replica each should stream it from — the one losing the range where there is one, so
//! the new replica gets exactly the data the old one was responsible for (Cassandra's
//! "consistent range movement").
//!
//! A dead node cannot be a source: when one is removed (`nodetool removenode`) or replaced
//! (`replace_address_first_boot`), `restore_moves` pairs each gaining replica with the replicas
//! that survive instead.

use std::collections::BTreeSet;

use std::sync::Arc;

use super::replication_map::ReplicationMap;
use super::ring::{RingError, Token, TokenRange};
use super::topology::{Member, NodeId};

/// One range changing hands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeMove {
    pub range: TokenRange,
    /// Replicas that hold the range after the change but not before.
    pub gaining: Vec<NodeId>,
    /// Replicas that hold it before but not after.
    pub losing: Vec<NodeId>,
    /// For each gaining replica, where to stream the range from.
    pub sources: Vec<(NodeId, NodeId)>,
}

/// The ranges whose replicas differ between `before` and `after` (the same strategy on the ring
/// before and after one topology change), cut at the union of both rings' tokens.
pub fn range_moves(before: &ReplicationMap, after: &ReplicationMap) -> Vec<RangeMove> {
    let bounds: BTreeSet<Token> = before
        .ring()
        .tokens()
        .iter()
        .chain(after.ring().tokens().iter())
        .map(|(t, _)| *t)
        .collect();
    let bounds: Vec<Token> = bounds.into_iter().collect();
    let n = bounds.len();
    let mut moves = Vec::new();
    for (i, end) in bounds.iter().enumerate() {
        let start = bounds.get((i + n - 1) % n).copied().unwrap_or(*end);
        let old = before.replicas(*end);
        let new = after.replicas(*end);
        let gaining: Vec<NodeId> = new.iter().copied().filter(|n| !old.contains(n)).collect();
        if gaining.is_empty() {
            continue;
        }
        let losing: Vec<NodeId> = old.iter().copied().filter(|n| !new.contains(n)).collect();
        // Pair each gaining replica with a losing one; if nobody loses the range (the replica
        // count grew), any old replica has it.
        let sources = gaining
            .iter()
            .enumerate()
            .filter_map(|(k, g)| {
                let from = losing.get(k).or_else(|| old.first())?;
                Some((*g, *from))
            })
            .collect();
        moves.push(RangeMove {
            range: TokenRange::new(start, *end),
            gaining,
            losing,
            sources,
        });
    }
    moves
}

/// Replicas that are gaining `token` in a change under way (they get its writes too, and a write
/// counts them in its `block_for`).
pub fn pending_replicas(moves: &[RangeMove], token: Token) -> Vec<NodeId> {
    moves
        .iter()
        .filter(|m| m.range.contains(token))
        .flat_map(|m| m.gaining.iter().copied())
        .collect()
}

/// One range a node must receive because a dead replica of it goes away.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restore {
    pub range: TokenRange,
    pub gaining: NodeId,
    /// The range's other replicas before the change, in replica order (the dead node and the
    /// gaining one excluded): any of them holds the range.
    pub sources: Vec<NodeId>,
}

/// What re-replicates the ranges of `dead` (a member of `before`'s ring): with `replacement`, a
/// new node taking its tokens gains them (Cassandra 4's replace); without, the ring closes over
/// the gap and each range's next replicas gain it (removenode).
pub fn restore_moves(
    before: &ReplicationMap,
    dead: NodeId,
    replacement: Option<(Member, Vec<Token>)>,
) -> Result<Vec<Restore>, RingError> {
    let mut ring = before.ring().without_member(dead);
    if let Some((member, tokens)) = replacement {
        ring = ring.with_member(member, tokens)?;
    }
    let after = ReplicationMap::new(Arc::new(ring), before.strategy().clone(), dead);
    let mut restores = Vec::new();
    for movement in range_moves(before, &after) {
        let old = before.replicas(movement.range.end);
        for gaining in movement.gaining {
            restores.push(Restore {
                range: movement.range,
                gaining,
                sources: old
                    .iter()
                    .copied()
                    .filter(|n| *n != dead && *n != gaining)
                    .collect(),
            });
        }
    }
    Ok(restores)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locator::testing::{id, member};
    use crate::locator::{ReplicationStrategy, Ring};
    use std::sync::Arc;

    fn map(ring: Ring, rf: usize) -> ReplicationMap {
        ReplicationMap::new(
            Arc::new(ring),
            ReplicationStrategy::Simple {
                replication_factor: rf,
            },
            id(0),
        )
    }

    fn three() -> Ring {
        Ring::new((0..3u8).map(|i| (member(i, "dc1", "r1"), vec![i64::from(i) * 100]))).unwrap()
    }

    #[test]
    fn a_joining_node_gains_the_range_it_splits_from_the_node_that_loses_it() {
        let before = map(three(), 1);
        let after = map(
            three()
                .with_member(member(3, "dc1", "r1"), vec![50])
                .unwrap(),
            1,
        );
        let moves = range_moves(&before, &after);
        assert_eq!(moves.len(), 1);
        let m = &moves[0];
        assert_eq!(m.range, TokenRange::new(0, 50));
        assert_eq!(m.gaining, vec![id(3)]);
        assert_eq!(
            m.losing,
            vec![id(1)],
            "node 1 (token 100) owned (0, 100] before"
        );
        assert_eq!(m.sources, vec![(id(3), id(1))]);
        assert_eq!(pending_replicas(&moves, 25), vec![id(3)]);
        assert!(pending_replicas(&moves, 75).is_empty());
    }

    #[test]
    fn with_rf3_a_join_moves_three_ranges_each_from_the_replica_that_drops_out() {
        let four = Ring::new((0..4u8).map(|i| (member(i, "dc1", "r1"), vec![i64::from(i) * 100])))
            .unwrap();
        let before = map(four.clone(), 3);
        let after = map(
            four.with_member(member(4, "dc1", "r1"), vec![150]).unwrap(),
            3,
        );
        let moves = range_moves(&before, &after);
        for m in &moves {
            assert_eq!(m.gaining, vec![id(4)]);
            assert_eq!(
                m.losing.len(),
                1,
                "RF stays 3: someone drops out of {:?}",
                m.range
            );
            assert_eq!(m.sources, vec![(id(4), m.losing[0])]);
        }
        // The new node replicates its own range (100, 150] and the two before it: (0, 100] and
        // the wrapping (300, 0].
        assert_eq!(moves.len(), 3);
        let gained: u128 = moves.iter().map(|m| m.range.width()).sum();
        assert_eq!(gained, crate::locator::RING_SIZE - 150);
    }

    #[test]
    fn a_leaving_node_hands_its_ranges_to_the_next_replicas() {
        let before = map(three(), 2);
        let two = Ring::new((0..2u8).map(|i| (member(i, "dc1", "r1"), vec![i64::from(i) * 100])))
            .unwrap();
        let after = map(two, 2);
        let moves = range_moves(&before, &after);
        assert!(!moves.is_empty());
        for m in &moves {
            assert!(m.losing.contains(&id(2)));
            assert!(
                m.sources.iter().all(|(_, from)| *from == id(2)),
                "streamed from the leaving node"
            );
        }
    }

    fn four() -> Ring {
        Ring::new((0..4u8).map(|i| (member(i, "dc1", "r1"), vec![i64::from(i) * 100]))).unwrap()
    }

    #[test]
    fn removing_a_dead_node_gives_each_of_its_ranges_to_one_new_replica_fed_by_the_survivors() {
        let before = map(four(), 3);
        let restores = restore_moves(&before, id(2), None).unwrap();
        // Node 2 replicated three of the four ranges with RF 3: each gets one new replica.
        assert_eq!(restores.len(), 3);
        for r in &restores {
            assert_ne!(r.gaining, id(2));
            assert!(!before.replicas(r.range.end).contains(&r.gaining));
            assert_eq!(
                r.sources.len(),
                2,
                "the two surviving replicas of {:?}",
                r.range
            );
            assert!(!r.sources.contains(&id(2)) && !r.sources.contains(&r.gaining));
            assert!(r
                .sources
                .iter()
                .all(|s| before.replicas(r.range.end).contains(s)));
        }
        // The range node 2 did not replicate, (200, 300], needs nothing.
        assert!(restores.iter().all(|r| r.range.end != 300));
    }

    #[test]
    fn a_replacement_takes_exactly_the_dead_nodes_ranges_from_the_other_replicas() {
        let before = map(four(), 3);
        let tokens = before.ring().tokens_of(id(2));
        let restores =
            restore_moves(&before, id(2), Some((member(7, "dc1", "r1"), tokens))).unwrap();
        let gained: Vec<TokenRange> = restores.iter().map(|r| r.range).collect();
        assert_eq!(gained, before.ranges_of(id(2)));
        for r in &restores {
            assert_eq!(r.gaining, id(7));
            assert_eq!(r.sources.len(), 2);
            assert!(!r.sources.contains(&id(2)));
        }
        // A replacement whose tokens another live node holds is refused.
        let clash = restore_moves(&before, id(2), Some((member(7, "dc1", "r1"), vec![100])));
        assert!(clash.is_err());
    }
}
