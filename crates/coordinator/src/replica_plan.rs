//! Which replicas a request contacts, or why it cannot run (Cassandra's `ReplicaPlans`): live
//! replicas are counted against the level's requirement before anything is sent, so a request
//! that cannot succeed fails at once with `Unavailable` rather than timing out.

use std::collections::BTreeMap;

use helenus_cluster::locator::{NodeId, ReplicationMap, ReplicationStrategy, Ring, Token};

use crate::consistency::{local_quorum_for, ConsistencyLevel};

/// Too few live replicas; fields and message as Cassandra 5.0's `UnavailableException`
/// (recorded: `crates/cluster/tests/golden/cassandra_cl_errors.txt`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Unavailable {
    pub consistency: ConsistencyLevel,
    pub required: usize,
    pub alive: usize,
    pub message: String,
}

impl Unavailable {
    fn new(consistency: ConsistencyLevel, required: usize, alive: usize) -> Self {
        Unavailable {
            consistency,
            required,
            alive,
            message: format!("Cannot achieve consistency level {consistency}"),
        }
    }

    /// Cassandra 5.0 passes its per-DC counts to this constructor shifted by one argument, so the
    /// error it sends says `alive = 0` whatever the DC has; drivers see that, so we send it too.
    fn in_datacenter(consistency: ConsistencyLevel, dc: &str, required: usize) -> Self {
        Unavailable {
            consistency,
            required,
            alive: 0,
            message: format!("Cannot achieve consistency level {consistency} in DC {dc}"),
        }
    }
}

/// What the coordinator knows of the cluster when it plans: the ring, itself, and who is up.
pub struct LiveReplicas<'a> {
    pub ring: &'a Ring,
    pub local: NodeId,
    pub is_alive: &'a dyn Fn(NodeId) -> bool,
}

impl LiveReplicas<'_> {
    fn datacenter(&self, node: NodeId) -> Option<&str> {
        self.ring
            .member(node)
            .map(|m| m.location.datacenter.as_str())
    }

    fn local_datacenter(&self) -> &str {
        self.datacenter(self.local).unwrap_or("datacenter1")
    }

    fn in_local_datacenter(&self, node: NodeId) -> bool {
        self.datacenter(node) == Some(self.local_datacenter())
    }

    /// Closest first: this node, then its rack, then its data center, then the rest, each group
    /// in ring order (the static part of Cassandra's snitch ordering).
    fn by_proximity(&self, nodes: &mut [NodeId]) {
        let here = self.ring.member(self.local).map(|m| m.location.clone());
        nodes.sort_by_key(|n| {
            if *n == self.local {
                return 0;
            }
            match (self.ring.member(*n), &here) {
                (Some(m), Some(h)) if m.location == *h => 1,
                (Some(m), Some(h)) if m.location.datacenter == h.datacenter => 2,
                _ => 3,
            }
        });
    }
}

/// The replicas a write goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WritePlan {
    pub consistency: ConsistencyLevel,
    /// Live natural and pending replicas: the mutation is sent to each.
    pub live: Vec<NodeId>,
    /// Replicas believed down: they get a hint instead.
    pub down: Vec<NodeId>,
    /// Acknowledgements to wait for.
    pub block_for: usize,
}

/// The replicas a read asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadPlan {
    pub consistency: ConsistencyLevel,
    /// Contacted at once: the first for data, the others for digests.
    pub contacts: Vec<NodeId>,
    /// Further live candidates, closest first, for a speculative retry or a read repair.
    pub spare: Vec<NodeId>,
    pub block_for: usize,
}

/// Plans a write of `token` (`pending`: replicas gaining the range while a node joins or leaves).
pub fn plan_write(
    map: &ReplicationMap,
    token: Token,
    pending: &[NodeId],
    consistency: ConsistencyLevel,
    cluster: &LiveReplicas<'_>,
) -> Result<WritePlan, Unavailable> {
    let natural = map.replicas(token);
    let mut all: Vec<NodeId> = natural.to_vec();
    all.extend(pending.iter().filter(|p| !natural.contains(p)));
    let (mut live, down): (Vec<NodeId>, Vec<NodeId>) =
        all.iter().partition(|n| (cluster.is_alive)(**n));
    cluster.by_proximity(&mut live);
    let local_dc = cluster.local_datacenter().to_string();
    let pending_local = pending
        .iter()
        .filter(|p| cluster.in_local_datacenter(**p))
        .count();
    let block_for = consistency.block_for_write(
        map.strategy(),
        map.ring(),
        &local_dc,
        pending.len(),
        pending_local,
    );
    assure_live(map.strategy(), cluster, consistency, &live, block_for)?;
    Ok(WritePlan {
        consistency,
        live,
        down,
        block_for,
    })
}

/// Plans a read of `token`: the closest live replicas that satisfy the level.
pub fn plan_read(
    map: &ReplicationMap,
    token: Token,
    consistency: ConsistencyLevel,
    cluster: &LiveReplicas<'_>,
) -> Result<ReadPlan, Unavailable> {
    let mut candidates: Vec<NodeId> = map
        .replicas(token)
        .iter()
        .copied()
        .filter(|n| (cluster.is_alive)(*n))
        .filter(|n| !consistency.is_datacenter_local() || cluster.in_local_datacenter(*n))
        .collect();
    cluster.by_proximity(&mut candidates);
    let local_dc = cluster.local_datacenter().to_string();
    let block_for = consistency.block_for(map.strategy(), map.ring(), &local_dc);
    assure_live(map.strategy(), cluster, consistency, &candidates, block_for)?;
    let contacts = match (consistency, map.strategy()) {
        (ConsistencyLevel::EachQuorum, ReplicationStrategy::NetworkTopology { datacenters }) => {
            each_quorum_contacts(map, cluster, datacenters.keys(), &candidates)
        }
        _ => candidates.iter().take(block_for).copied().collect(),
    };
    let spare = candidates
        .into_iter()
        .filter(|n| !contacts.contains(n))
        .collect();
    Ok(ReadPlan {
        consistency,
        contacts,
        spare,
        block_for,
    })
}

/// A local quorum from every data center, closest first.
fn each_quorum_contacts<'d>(
    map: &ReplicationMap,
    cluster: &LiveReplicas<'_>,
    datacenters: impl Iterator<Item = &'d String>,
    candidates: &[NodeId],
) -> Vec<NodeId> {
    let mut contacts = Vec::new();
    for dc in datacenters {
        let need = local_quorum_for(map.strategy(), map.ring(), dc);
        contacts.extend(
            candidates
                .iter()
                .filter(|n| cluster.datacenter(**n) == Some(dc.as_str()))
                .take(need),
        );
    }
    contacts
}

fn assure_live(
    strategy: &ReplicationStrategy,
    cluster: &LiveReplicas<'_>,
    consistency: ConsistencyLevel,
    live: &[NodeId],
    block_for: usize,
) -> Result<(), Unavailable> {
    match consistency {
        // A hint on the coordinator is enough, and the coordinator is always up.
        ConsistencyLevel::Any => Ok(()),
        ConsistencyLevel::LocalOne | ConsistencyLevel::LocalQuorum => {
            let local = live
                .iter()
                .filter(|n| cluster.in_local_datacenter(**n))
                .count();
            if local < block_for {
                let required = if consistency == ConsistencyLevel::LocalOne {
                    1
                } else {
                    block_for
                };
                return Err(Unavailable::new(consistency, required, local));
            }
            Ok(())
        }
        ConsistencyLevel::EachQuorum => {
            if let ReplicationStrategy::NetworkTopology { datacenters } = strategy {
                let mut per_dc: BTreeMap<&str, usize> = BTreeMap::new();
                for n in live {
                    if let Some(dc) = cluster.datacenter(*n) {
                        *per_dc.entry(dc).or_default() += 1;
                    }
                }
                for dc in datacenters.keys() {
                    let need = local_quorum_for(strategy, cluster.ring, dc);
                    let have = per_dc.get(dc.as_str()).copied().unwrap_or(0);
                    if have < need {
                        return Err(Unavailable::in_datacenter(consistency, dc, need));
                    }
                }
                return Ok(());
            }
            at_least(consistency, live.len(), block_for)
        }
        _ => at_least(consistency, live.len(), block_for),
    }
}

fn at_least(
    consistency: ConsistencyLevel,
    alive: usize,
    required: usize,
) -> Result<(), Unavailable> {
    if alive < required {
        return Err(Unavailable::new(consistency, required, alive));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use helenus_cluster::locator::{Location, Member};
    use std::collections::HashSet;
    use std::net::{IpAddr, Ipv4Addr};
    use std::sync::Arc;
    use uuid::Uuid;
    use ConsistencyLevel::*;

    fn id(n: u8) -> NodeId {
        NodeId(Uuid::from_u128(u128::from(n) + 1))
    }

    /// Nodes 0..n with tokens 0, 100, 200...; `dcs[i % len]` is node i's data center.
    fn ring(n: u8, dcs: &[&str]) -> Arc<Ring> {
        Arc::new(
            Ring::new((0..n).map(|i| {
                let member = Member {
                    id: id(i),
                    address: IpAddr::V4(Ipv4Addr::new(127, 0, 0, i + 1)),
                    location: Location::new(dcs[usize::from(i) % dcs.len()], "rack1"),
                };
                (member, vec![i64::from(i) * 100])
            }))
            .unwrap(),
        )
    }

    fn simple(rf: usize) -> ReplicationStrategy {
        ReplicationStrategy::Simple {
            replication_factor: rf,
        }
    }

    fn plan_with_down<T>(
        ring: &Ring,
        local: u8,
        down: &[u8],
        f: impl FnOnce(&LiveReplicas<'_>) -> T,
    ) -> T {
        let down: HashSet<NodeId> = down.iter().map(|n| id(*n)).collect();
        let alive = move |n: NodeId| !down.contains(&n);
        let cluster = LiveReplicas {
            ring,
            local: id(local),
            is_alive: &alive,
        };
        f(&cluster)
    }

    #[test]
    fn quorum_survives_one_dead_replica_of_three_and_all_does_not() {
        let r = ring(3, &["dc1"]);
        let map = ReplicationMap::new(r.clone(), simple(3), id(0));
        plan_with_down(&r, 0, &[2], |c| {
            let w = plan_write(&map, 50, &[], Quorum, c).unwrap();
            assert_eq!(w.block_for, 2);
            assert_eq!(w.live, vec![id(0), id(1)], "coordinator first");
            assert_eq!(w.down, vec![id(2)], "the dead replica gets a hint");
            let r = plan_read(&map, 50, Quorum, c).unwrap();
            assert_eq!(r.contacts, vec![id(0), id(1)]);
            let err = plan_read(&map, 50, All, c).unwrap_err();
            assert_eq!((err.required, err.alive), (3, 2));
            assert_eq!(err.message, "Cannot achieve consistency level ALL");
        });
    }

    #[test]
    fn any_accepts_a_write_with_every_replica_down() {
        let r = ring(3, &["dc1"]);
        let map = ReplicationMap::new(r.clone(), simple(2), id(0));
        plan_with_down(&r, 0, &[0, 1, 2], |c| {
            let w = plan_write(&map, 150, &[], Any, c).unwrap();
            assert!(w.live.is_empty());
            assert_eq!(w.down.len(), 2);
            assert!(plan_write(&map, 150, &[], One, c).is_err());
        });
    }

    #[test]
    fn a_pending_replica_is_written_and_raises_block_for() {
        let r = ring(3, &["dc1"]);
        let map = ReplicationMap::new(r.clone(), simple(3), id(0));
        plan_with_down(&r, 0, &[], |c| {
            let joining = NodeId(Uuid::from_u128(99));
            let w = plan_write(&map, 50, &[joining], Quorum, c).unwrap();
            assert_eq!(w.block_for, 3);
            assert!(w.live.contains(&joining));
        });
    }

    #[test]
    fn local_levels_count_only_the_coordinators_datacenter() {
        // Nodes 0, 2 in dc1; 1, 3 in dc2; NTS 2 + 2.
        let r = ring(4, &["dc1", "dc2"]);
        let nts = ReplicationStrategy::NetworkTopology {
            datacenters: [("dc1".to_string(), 2), ("dc2".to_string(), 2)].into(),
        };
        let map = ReplicationMap::new(r.clone(), nts, id(0));
        plan_with_down(&r, 0, &[], |c| {
            let read = plan_read(&map, 50, LocalQuorum, c).unwrap();
            assert_eq!(read.block_for, 2);
            assert_eq!(read.contacts, vec![id(0), id(2)], "stays in dc1");
            assert!(read.spare.is_empty(), "no remote spares for a local level");
            let one = plan_read(&map, 50, LocalOne, c).unwrap();
            assert_eq!(one.contacts, vec![id(0)]);
            let each = plan_read(&map, 50, EachQuorum, c).unwrap();
            assert_eq!(each.contacts.len(), 4);
        });
        plan_with_down(&r, 0, &[2], |c| {
            let err = plan_read(&map, 50, LocalQuorum, c).unwrap_err();
            assert_eq!((err.required, err.alive), (2, 1));
            assert!(
                plan_read(&map, 50, Quorum, c).is_ok(),
                "3 of 4 alive is a global quorum"
            );
        });
        plan_with_down(&r, 0, &[3], |c| {
            let err = plan_write(&map, 50, &[], EachQuorum, c).unwrap_err();
            assert_eq!(
                err.message,
                "Cannot achieve consistency level EACH_QUORUM in DC dc2"
            );
            assert_eq!(
                (err.required, err.alive),
                (2, 0),
                "alive = 0, as Cassandra 5.0 reports it"
            );
            assert!(plan_write(&map, 50, &[], LocalQuorum, c).is_ok());
        });
        plan_with_down(&r, 0, &[0, 2], |c| {
            let err = plan_read(&map, 50, LocalOne, c).unwrap_err();
            assert_eq!((err.required, err.alive), (1, 0));
        });
    }

    #[test]
    fn one_reads_the_closest_replica_and_keeps_the_rest_as_spares() {
        let r = ring(5, &["dc1"]);
        let map = ReplicationMap::new(r.clone(), simple(3), id(4));
        plan_with_down(&r, 2, &[], |c| {
            // Token 150 lives on nodes 2, 3, 4; node 2 coordinates.
            let read = plan_read(&map, 150, One, c).unwrap();
            assert_eq!(read.contacts, vec![id(2)]);
            assert_eq!(read.spare, vec![id(3), id(4)]);
        });
    }
}
