//! One topology change at a time (issue 13): a bootstrap, replacement, decommission, removenode
//! or rebuild is refused while another is under way anywhere in the ring, as Cassandra refuses
//! one with `cassandra.consistent.rangemovement` true (its default). Each of them computes the
//! ranges it moves from the ring as it is when it starts; a second change made meanwhile would
//! move ranges computed against a ring that no longer holds, and leave replicas that own data
//! they never received.
//!
//! This gossip check gives Cassandra's refusal, naming the nodes that move; two changes
//! started before either is seen in gossip are kept apart by the metadata log's topology claim
//! (topology_claim.rs), taken right after this check.
//!
//! What is under way is read from gossip (peers JOINING, LEAVING, MOVING, REPLACING or being
//! removed) and from this node's own operations (its mode, a removal or a rebuild it runs).

use super::ClusterNode;
use helenus_cluster::gossip::status;
use helenus_cluster::locator::NodeId;
use helenus_cluster::service::PeerInfo;

/// Cassandra's MOVING status (`nodetool move`), never set by Helenus but refused if a peer
/// announces it.
const MOVING: &str = "MOVING";

/// The nodes changing the ring, by kind, as Cassandra lists them in its refusal.
#[derive(Debug, Default, PartialEq)]
struct Movements {
    bootstrapping: Vec<String>,
    leaving: Vec<String>,
    moving: Vec<String>,
}

impl Movements {
    fn is_empty(&self) -> bool {
        self.bootstrapping.is_empty() && self.leaving.is_empty() && self.moving.is_empty()
    }
}

/// Sorts what the peers announce, as Cassandra counts bootstrap tokens and leaving and moving
/// endpoints. A node JOINING, LEAVING or MOVING counts only while it is alive: one that died half way is not moving ranges any more (it is removed or restarted
/// first). A node being removed is dead by definition and counts until it is removed;
/// `ignore` is left out (the node a removal continues with).
fn peer_movements(peers: &[PeerInfo], ignore: Option<NodeId>) -> Movements {
    let mut out = Movements::default();
    for p in peers.iter().filter(|p| Some(p.host_id) != ignore) {
        let name = p
            .address
            .map_or_else(|| p.host_id.to_string(), |a| format!("/{}", a.ip()));
        match p.status.as_str() {
            // One still learning the ring (no tokens yet) moves nothing so far.
            status::JOINING | status::REPLACING if p.alive && !p.tokens.is_empty() => {
                out.bootstrapping.push(name)
            }
            status::LEAVING if p.alive => out.leaving.push(name),
            MOVING if p.alive => out.moving.push(name),
            status::REMOVING => out.leaving.push(name),
            _ => {}
        }
    }
    out
}

/// What this node itself has under way: its mode (JOINING, LEAVING, or a failed one), a
/// removal it coordinates, or a rebuild.
fn local_operation(cluster: &ClusterNode) -> Option<String> {
    let mode = cluster.mode.lock().clone();
    if mode != "NORMAL" {
        return Some(format!("this node is in mode {mode}"));
    }
    if cluster.removal.lock().is_running() {
        return Some("this node is processing a removal".into());
    }
    if cluster.rebuild.lock().is_running() {
        return Some("this node is rebuilding".into());
    }
    None
}

/// Refuses `what` (bootstrap, decommission, ...) while any node changes the ring; with
/// `check_local`, also while this node runs a topology operation of its own (a joining node
/// checks only its peers: its own mode is JOINING by definition).
pub(super) fn refuse_if_moving(
    cluster: &ClusterNode,
    what: &str,
    check_local: bool,
    ignore: Option<NodeId>,
) -> Result<(), String> {
    if check_local {
        if let Some(local) = local_operation(cluster) {
            return Err(format!(
                "Other bootstrapping/leaving/moving nodes detected, cannot {what} while cassandra.consistent.rangemovement is true ({local})"
            ));
        }
    }
    // A node that replaces another learns the ring under a first host id and then takes a new
    // one: the first, JOINING at this node's own address, is still in gossip for a while.
    let me = cluster.service.listen_address().ip();
    let peers: Vec<PeerInfo> = cluster
        .service
        .peers()
        .into_iter()
        .filter(|p| p.address.map(|a| a.ip()) != Some(me))
        .collect();
    let movements = peer_movements(&peers, ignore);
    if movements.is_empty() {
        return Ok(());
    }
    Err(refusal(what, &movements))
}

fn refusal(what: &str, m: &Movements) -> String {
    format!(
        "Other bootstrapping/leaving/moving nodes detected, cannot {what} while cassandra.consistent.rangemovement is true. Nodes detected, bootstrapping: [{}]; leaving: [{}]; moving: [{}]",
        m.bootstrapping.join(", "),
        m.leaving.join(", "),
        m.moving.join(", ")
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use helenus_cluster::locator::Location;

    fn peer(n: u8, status: &str, alive: bool) -> PeerInfo {
        let tokens = if status == status::JOINING && n == 6 {
            Vec::new()
        } else {
            vec![i64::from(n)]
        };
        PeerInfo {
            host_id: NodeId(uuid::Uuid::from_bytes([n; 16])),
            address: Some(format!("127.0.0.{n}:7000").parse().unwrap()),
            native: None,
            location: Location::new("dc1", "rack1"),
            tokens,
            status: status.into(),
            schema_version: None,
            auth_version: None,
            release_version: None,
            load: None,
            alive,
        }
    }

    #[test]
    fn live_movers_and_removed_nodes_block_a_change() {
        let peers = [
            peer(1, status::NORMAL, true),
            peer(2, status::JOINING, true),
            peer(3, status::LEAVING, false),
            peer(4, status::REMOVING, false),
            peer(5, status::REPLACING, true),
            peer(6, status::JOINING, true),
        ];
        let m = peer_movements(&peers, None);
        assert_eq!(m.bootstrapping, vec!["/127.0.0.2", "/127.0.0.5"]);
        assert_eq!(m.leaving, vec!["/127.0.0.4"]);
        assert!(m.moving.is_empty());
        let ignored = peer_movements(&peers[3..4], Some(peers[3].host_id));
        assert!(ignored.is_empty());
        assert!(refusal("bootstrap", &m).starts_with(
            "Other bootstrapping/leaving/moving nodes detected, cannot bootstrap while cassandra.consistent.rangemovement is true. Nodes detected, bootstrapping: [/127.0.0.2, /127.0.0.5]; leaving: [/127.0.0.4]"
        ));
    }

    #[test]
    fn a_quiet_ring_allows_a_change() {
        let peers = [peer(1, status::NORMAL, true), peer(2, status::LEFT, false)];
        assert!(peer_movements(&peers, None).is_empty());
    }
}
