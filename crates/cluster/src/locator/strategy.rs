//! Replication strategies: which nodes hold the replicas of a token, walked exactly as Cassandra's
//! `SimpleStrategy` and `NetworkTopologyStrategy` walk the ring, so a driver's token-aware routing
//! and `nodetool getendpoints` agree with ours for the same tokens.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::ring::{Ring, Token};
use super::topology::NodeId;

/// A keyspace's replication, already parsed (transient replicas are not supported).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplicationStrategy {
    /// System keyspaces that live on every node unreplicated.
    Local,
    /// `replication_factor` nodes walking the ring, ignoring data centers and racks.
    Simple { replication_factor: usize },
    /// Per data center replica counts, spread over racks.
    NetworkTopology {
        datacenters: BTreeMap<String, usize>,
    },
    /// Every node (Cassandra's `EverywhereStrategy`, used by some system keyspaces).
    Everywhere,
}

impl ReplicationStrategy {
    /// The replicas of `token`, primary first. `local` answers for `Local`.
    pub fn replicas(&self, ring: &Ring, token: Token, local: NodeId) -> Vec<NodeId> {
        match self {
            ReplicationStrategy::Local => vec![local],
            ReplicationStrategy::Simple { replication_factor } => {
                simple_replicas(ring, token, *replication_factor)
            }
            ReplicationStrategy::NetworkTopology { datacenters } => {
                network_topology_replicas(ring, token, datacenters)
            }
            ReplicationStrategy::Everywhere => simple_replicas(ring, token, ring.members().count()),
        }
    }

    /// The replica count this strategy asks of one data center (what block_for is counted from).
    pub fn replication_factor_in(&self, ring: &Ring, datacenter: &str) -> usize {
        match self {
            ReplicationStrategy::Local => 1,
            ReplicationStrategy::Simple { replication_factor } => *replication_factor,
            ReplicationStrategy::NetworkTopology { datacenters } => {
                datacenters.get(datacenter).copied().unwrap_or(0)
            }
            ReplicationStrategy::Everywhere => ring
                .datacenters()
                .get(datacenter)
                .map(|s| s.nodes)
                .unwrap_or(0),
        }
    }

    /// The total replica count (QUORUM is counted from it).
    pub fn total_replication_factor(&self, ring: &Ring) -> usize {
        match self {
            ReplicationStrategy::Local => 1,
            ReplicationStrategy::Simple { replication_factor } => *replication_factor,
            ReplicationStrategy::NetworkTopology { datacenters } => datacenters.values().sum(),
            ReplicationStrategy::Everywhere => ring.datacenters().values().map(|s| s.nodes).sum(),
        }
    }
}

fn simple_replicas(ring: &Ring, token: Token, replication_factor: usize) -> Vec<NodeId> {
    let mut replicas = Vec::with_capacity(replication_factor);
    for (_, owner) in ring.walk_from(token) {
        if replicas.len() >= replication_factor {
            break;
        }
        if !replicas.contains(&owner) {
            replicas.push(owner);
        }
    }
    replicas
}

/// One data center's progress while walking the ring.
struct DatacenterFill {
    /// Replicas still wanted here: the RF, or fewer if the DC has fewer nodes.
    left: usize,
    /// How many replicas may share a rack already used, when there are fewer racks than RF.
    rack_repeats_allowed: usize,
}

fn network_topology_replicas(
    ring: &Ring,
    token: Token,
    datacenters: &BTreeMap<String, usize>,
) -> Vec<NodeId> {
    let shapes = ring.datacenters();
    let mut fills: HashMap<&str, DatacenterFill> = HashMap::new();
    for (dc, rf) in datacenters {
        let Some(shape) = shapes.get(dc) else {
            continue;
        };
        if *rf == 0 || shape.nodes == 0 {
            continue;
        }
        fills.insert(
            dc.as_str(),
            DatacenterFill {
                left: (*rf).min(shape.nodes),
                rack_repeats_allowed: rf.saturating_sub(shape.racks),
            },
        );
    }
    let mut to_fill = fills.len();
    let mut replicas: Vec<NodeId> = Vec::new();
    let mut seen_racks: BTreeSet<(&str, &str)> = BTreeSet::new();
    for (_, owner) in ring.walk_from(token) {
        if to_fill == 0 {
            break;
        }
        let Some(member) = ring.member(owner) else {
            continue;
        };
        let dc = member.location.datacenter.as_str();
        let Some(fill) = fills.get_mut(dc) else {
            continue;
        };
        if fill.left == 0 || replicas.contains(&owner) {
            continue;
        }
        if seen_racks.insert((dc, member.location.rack.as_str())) {
            // A rack not used yet in this DC.
        } else if fill.rack_repeats_allowed > 0 {
            // Fewer racks than RF: the difference is filled by the first nodes met.
            fill.rack_repeats_allowed -= 1;
        } else {
            continue;
        }
        replicas.push(owner);
        fill.left -= 1;
        if fill.left == 0 {
            to_fill -= 1;
        }
    }
    replicas
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locator::testing::{id, member};

    fn nts(pairs: &[(&str, usize)]) -> ReplicationStrategy {
        ReplicationStrategy::NetworkTopology {
            datacenters: pairs.iter().map(|(d, n)| (d.to_string(), *n)).collect(),
        }
    }

    /// Cassandra's SimpleStrategyTest.tryValidTokens shape: tokens 0,10,...,40 on five nodes.
    #[test]
    fn simple_strategy_takes_the_next_distinct_nodes_clockwise() {
        let ring =
            Ring::new((0..5).map(|i| (member(i, "dc1", "r1"), vec![(i as i64) * 10]))).unwrap();
        let s = ReplicationStrategy::Simple {
            replication_factor: 3,
        };
        // A key at token 15 belongs to the node at 20, then 30 and 40.
        assert_eq!(s.replicas(&ring, 15, id(0)), vec![id(2), id(3), id(4)]);
        // Past the last token it wraps to the first.
        assert_eq!(s.replicas(&ring, 41, id(0)), vec![id(0), id(1), id(2)]);
        assert_eq!(s.replicas(&ring, 0, id(0)), vec![id(0), id(1), id(2)]);
    }

    #[test]
    fn simple_strategy_skips_a_node_met_again_through_its_other_tokens() {
        let ring = Ring::new([
            (member(1, "dc1", "r1"), vec![10, 20]),
            (member(2, "dc1", "r1"), vec![30]),
        ])
        .unwrap();
        let s = ReplicationStrategy::Simple {
            replication_factor: 3,
        };
        assert_eq!(
            s.replicas(&ring, 5, id(1)),
            vec![id(1), id(2)],
            "RF above the node count"
        );
    }

    /// Cassandra's NetworkTopologyStrategyTest: one rack per node in a DC spreads replicas over
    /// racks before repeating one.
    #[test]
    fn network_topology_prefers_unused_racks() {
        // dc1: nodes on tokens 0 (r1), 10 (r1), 20 (r2), 30 (r3).
        let ring = Ring::new([
            (member(1, "dc1", "r1"), vec![0]),
            (member(2, "dc1", "r1"), vec![10]),
            (member(3, "dc1", "r2"), vec![20]),
            (member(4, "dc1", "r3"), vec![30]),
        ])
        .unwrap();
        let s = nts(&[("dc1", 3)]);
        // Walk from 0: node1 (r1), node2 (r1 again: skipped), node3 (r2), node4 (r3).
        assert_eq!(s.replicas(&ring, 0, id(1)), vec![id(1), id(3), id(4)]);
    }

    #[test]
    fn network_topology_repeats_racks_when_there_are_fewer_racks_than_replicas() {
        let ring = Ring::new([
            (member(1, "dc1", "r1"), vec![0]),
            (member(2, "dc1", "r1"), vec![10]),
            (member(3, "dc1", "r2"), vec![20]),
        ])
        .unwrap();
        let s = nts(&[("dc1", 3)]);
        // Two racks for RF 3: one repeat allowed, taken by the first node met in a used rack.
        assert_eq!(s.replicas(&ring, 0, id(1)), vec![id(1), id(2), id(3)]);
    }

    #[test]
    fn network_topology_fills_each_datacenter_to_its_own_factor() {
        let ring = Ring::new([
            (member(1, "dc1", "r1"), vec![0]),
            (member(2, "dc2", "r1"), vec![10]),
            (member(3, "dc1", "r1"), vec![20]),
            (member(4, "dc2", "r1"), vec![30]),
            (member(5, "dc1", "r1"), vec![40]),
        ])
        .unwrap();
        let s = nts(&[("dc1", 2), ("dc2", 1), ("dc3", 2)]);
        assert_eq!(s.replicas(&ring, 5, id(1)), vec![id(2), id(3), id(5)]);
        assert_eq!(s.total_replication_factor(&ring), 5);
        assert_eq!(s.replication_factor_in(&ring, "dc2"), 1);
        // A data center with fewer nodes than its factor gives what it has.
        let s = nts(&[("dc2", 3)]);
        assert_eq!(s.replicas(&ring, 35, id(1)), vec![id(2), id(4)]);
    }

    #[test]
    fn local_and_everywhere() {
        let ring =
            Ring::new((0..3).map(|i| (member(i, "dc1", "r1"), vec![(i as i64) * 10]))).unwrap();
        assert_eq!(
            ReplicationStrategy::Local.replicas(&ring, 5, id(7)),
            vec![id(7)]
        );
        assert_eq!(
            ReplicationStrategy::Everywhere.replicas(&ring, 5, id(0)),
            vec![id(1), id(2), id(0)]
        );
    }
}
