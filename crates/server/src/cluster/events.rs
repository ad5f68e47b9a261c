//! Gossip's view of peers as drivers see it: TOPOLOGY_CHANGE when a node becomes an owner or
//! leaves the ring (decommissioned, removed, replaced), STATUS_CHANGE when one goes up or down;
//! a replica coming back gets its hints.

use super::{replica, ClusterNode};
use crate::node::NodeEvent;
use helenus_cluster::gossip::{AppKey, GossipEvent};
use helenus_protocol as proto;
use std::net::SocketAddr;
use std::sync::Arc;

/// Gossip's view of peers becomes drivers' TOPOLOGY_CHANGE and STATUS_CHANGE events; a replica
/// coming back gets its hints.
pub(super) async fn forward_events(cluster: Arc<ClusterNode>) {
    let mut events = cluster.service.subscribe();
    loop {
        let event = match events.recv().await {
            Ok(e) => e,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(_) => return,
        };
        let Some(node) = cluster.node() else { return };
        let (peer, pushed) = match event {
            // A node is new to drivers once it owns tokens (NORMAL), which is when
            // system.peers lists it; first contact may be while it is still choosing them.
            GossipEvent::Joined(p) | GossipEvent::Changed(p, AppKey::Status)
                if cluster.is_normal(p) =>
            {
                (p, Some(topology(proto::TopologyChangeType::NewNode)))
            }
            GossipEvent::Changed(p, AppKey::Status) if cluster.has_left(p) => {
                (p, Some(topology(proto::TopologyChangeType::RemovedNode)))
            }
            GossipEvent::Joined(_) | GossipEvent::Evicted(_) => continue,
            // Drivers know token owners only; a node without tokens may share its address with
            // the one that replaced it, whose status its news would otherwise set.
            GossipEvent::Up(p) | GossipEvent::Down(p) | GossipEvent::Restarted(p)
                if !cluster.has_tokens(p) =>
            {
                continue
            }
            GossipEvent::Up(p) | GossipEvent::Restarted(p) => {
                cluster.down_since.lock().remove(&p);
                tokio::spawn(replica::deliver_hints_to(cluster.clone(), p));
                (p, Some(status(proto::StatusChangeType::Up)))
            }
            GossipEvent::Down(p) => {
                cluster
                    .down_since
                    .lock()
                    .insert(p, tokio::time::Instant::now());
                (p, Some(status(proto::StatusChangeType::Down)))
            }
            GossipEvent::Changed(_, _) => continue,
        };
        if let (Some(make), Some(address)) = (pushed, cluster.native_address(peer)) {
            let _ = node.events.send(NodeEvent(make(address)));
        }
    }
}

type MakeEvent = fn(SocketAddr) -> proto::Event;

fn topology(change: proto::TopologyChangeType) -> MakeEvent {
    match change {
        proto::TopologyChangeType::NewNode => |address| proto::Event::TopologyChange {
            change: proto::TopologyChangeType::NewNode,
            address,
        },
        proto::TopologyChangeType::RemovedNode => |address| proto::Event::TopologyChange {
            change: proto::TopologyChangeType::RemovedNode,
            address,
        },
        proto::TopologyChangeType::MovedNode => |address| proto::Event::TopologyChange {
            change: proto::TopologyChangeType::MovedNode,
            address,
        },
    }
}

fn status(change: proto::StatusChangeType) -> MakeEvent {
    match change {
        proto::StatusChangeType::Up => |address| proto::Event::StatusChange {
            change: proto::StatusChangeType::Up,
            address,
        },
        proto::StatusChangeType::Down => |address| proto::Event::StatusChange {
            change: proto::StatusChangeType::Down,
            address,
        },
    }
}
