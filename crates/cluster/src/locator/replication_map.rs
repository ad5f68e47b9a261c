//! A keyspace's replicas for every range of one ring snapshot, computed once when the ring or the
//! keyspace changes, so a request finds its replicas with one binary search.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::ring::{Ring, Token, TokenRange};
use super::strategy::ReplicationStrategy;
use super::topology::NodeId;

/// Replicas per ring range for one strategy on one ring snapshot.
#[derive(Clone, Debug)]
pub struct ReplicationMap {
    ring: Arc<Ring>,
    /// `replicas[i]`: the replicas of the range ending at ring token `i`, primary first.
    replicas: Vec<Vec<NodeId>>,
    local: NodeId,
    strategy: ReplicationStrategy,
}

impl ReplicationMap {
    pub fn new(ring: Arc<Ring>, strategy: ReplicationStrategy, local: NodeId) -> Self {
        let replicas = ring
            .tokens()
            .iter()
            .map(|(end, _)| strategy.replicas(&ring, *end, local))
            .collect();
        ReplicationMap {
            ring,
            replicas,
            local,
            strategy,
        }
    }

    pub fn ring(&self) -> &Arc<Ring> {
        &self.ring
    }

    pub fn strategy(&self) -> &ReplicationStrategy {
        &self.strategy
    }

    /// The replicas of a key's token, primary first (empty on an empty ring, except `Local`).
    pub fn replicas(&self, token: Token) -> &[NodeId] {
        if matches!(self.strategy, ReplicationStrategy::Local) {
            return std::slice::from_ref(&self.local);
        }
        self.ring
            .owner_index(token)
            .and_then(|i| self.replicas.get(i))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Every range with its replicas, in ring order.
    pub fn ranges(&self) -> impl Iterator<Item = (TokenRange, &[NodeId])> + '_ {
        (0..self.replicas.len())
            .filter_map(move |i| Some((self.ring.range_at(i)?, self.replicas.get(i)?.as_slice())))
    }

    /// The ranges a node holds a replica of (what it streams, repairs and cleans up against).
    pub fn ranges_of(&self, node: NodeId) -> Vec<TokenRange> {
        self.ranges()
            .filter(|(_, replicas)| replicas.contains(&node))
            .map(|(range, _)| range)
            .collect()
    }

    /// The ranges a node is the first replica of (`nodetool repair -pr`).
    pub fn primary_ranges_of(&self, node: NodeId) -> Vec<TokenRange> {
        self.ranges()
            .filter(|(_, replicas)| replicas.first() == Some(&node))
            .map(|(range, _)| range)
            .collect()
    }

    /// Each node's share of the data, counting every replica (`nodetool status KS`'s
    /// "Owns (effective)"): sums to the replication factor.
    pub fn effective_ownership(&self) -> BTreeMap<NodeId, f64> {
        let mut owns: BTreeMap<NodeId, f64> = BTreeMap::new();
        for (range, replicas) in self.ranges() {
            for node in replicas {
                *owns.entry(*node).or_default() += range.fraction();
            }
        }
        owns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locator::testing::{id, member};

    fn four_node_ring() -> Arc<Ring> {
        let step = (u64::MAX / 4) as i64;
        Arc::new(
            Ring::new((0..4).map(|i| {
                (
                    member(i, "dc1", "r1"),
                    vec![(i128::from(i64::MIN) + 1 + i128::from(step) * i128::from(i)) as i64],
                )
            }))
            .unwrap(),
        )
    }

    #[test]
    fn lookups_agree_with_walking_the_ring() {
        let ring = four_node_ring();
        let s = ReplicationStrategy::Simple {
            replication_factor: 2,
        };
        let map = ReplicationMap::new(ring.clone(), s.clone(), id(0));
        for token in [i64::MIN + 1, -5, 0, 12345, i64::MAX] {
            assert_eq!(
                map.replicas(token),
                s.replicas(&ring, token, id(0)).as_slice()
            );
        }
    }

    #[test]
    fn effective_ownership_sums_to_the_replication_factor() {
        let map = ReplicationMap::new(
            four_node_ring(),
            ReplicationStrategy::Simple {
                replication_factor: 3,
            },
            id(0),
        );
        let owns = map.effective_ownership();
        assert_eq!(owns.len(), 4);
        let total: f64 = owns.values().sum();
        assert!((total - 3.0).abs() < 1e-9, "{total}");
        for share in owns.values() {
            assert!((share - 0.75).abs() < 1e-6, "{share}");
        }
    }

    #[test]
    fn primary_ranges_partition_the_ring() {
        let map = ReplicationMap::new(
            four_node_ring(),
            ReplicationStrategy::Simple {
                replication_factor: 3,
            },
            id(0),
        );
        let mut total = 0u128;
        for i in 0..4 {
            let primary = map.primary_ranges_of(id(i));
            assert_eq!(primary.len(), 1);
            total += primary.iter().map(TokenRange::width).sum::<u128>();
            assert_eq!(map.ranges_of(id(i)).len(), 3);
        }
        assert_eq!(total, super::super::ring::RING_SIZE);
    }

    #[test]
    fn local_strategy_answers_the_local_node_even_on_an_empty_ring() {
        let map = ReplicationMap::new(Arc::new(Ring::default()), ReplicationStrategy::Local, id(9));
        assert_eq!(map.replicas(42), &[id(9)]);
    }
}
