//! `system_auth` across the ring: every node holds every role and permission (Cassandra's advice
//! for `system_auth` is a replication factor of every node in each data center). A role
//! statement pushes this node's stamped roles to the live peers and waits, bounded, for them to
//! merge, so a role created through one node logs in through any other as soon as the statement
//! returns. Nodes gossip a digest of their roles; one that sees a peer's digest differ (it was
//! down or partitioned during a push, or has just joined) pulls and merges. Merging keeps the
//! newest write of each entry (`auth::replicated`), so the ring converges whatever is lost.

use super::ClusterNode;
use crate::node::NodeState;
use bytes::Bytes;
use helenus_cluster::messaging::{Envelope, Verb};
use std::time::Duration;

/// How long a role statement waits for live peers to take its change.
const PUSH_WAIT: Duration = Duration::from_secs(5);
const PULL_TIMEOUT: Duration = Duration::from_secs(5);

/// Announces this node's roles digest in gossip.
pub fn announce_digest(cluster: &ClusterNode, node: &NodeState) {
    cluster.service.set_auth_version(&node.auth.digest());
}

/// After a role change here: gossip the new digest and push the roles to the live peers,
/// waiting (bounded) for their acknowledgements. Does nothing if the roles are as last pushed.
pub async fn push_changes(cluster: &ClusterNode) {
    let Some(node) = cluster.node() else { return };
    let digest = node.auth.digest();
    {
        let mut pushed = cluster.auth_pushed.lock();
        if *pushed == digest {
            return;
        }
        pushed.clone_from(&digest);
    }
    cluster.service.set_auth_version(&digest);
    let payload = match node.auth.export() {
        Ok(bytes) => Bytes::from(bytes),
        Err(e) => {
            tracing::warn!(error = %e, "roles not pushed");
            return;
        }
    };
    let mut waiting = Vec::new();
    for peer in cluster.service.peers().into_iter().filter(|p| p.alive) {
        if let Ok(pending) =
            cluster
                .messenger
                .request(peer.host_id, Verb::AuthPush, payload.clone())
        {
            waiting.push(pending);
        }
    }
    let deadline = tokio::time::Instant::now() + PUSH_WAIT;
    for (id, answer) in waiting {
        if tokio::time::timeout_at(deadline, answer).await.is_err() {
            cluster.messenger.forget(id);
        }
    }
}

/// A peer's AuthPull (answered with our roles) or AuthPush (merged, then acknowledged).
pub async fn serve(cluster: &ClusterNode, node: &NodeState, request: Envelope) {
    if request.verb == Verb::AuthPull {
        let (verb, payload) = match node.auth.export() {
            Ok(bytes) => (Verb::AuthPush, Bytes::from(bytes)),
            Err(_) => (Verb::Failure, Bytes::new()),
        };
        let _ = cluster.messenger.respond(&request, verb, payload);
        return;
    }
    take(cluster, node, &request.payload, request.from);
    let _ = cluster
        .messenger
        .respond(&request, Verb::AuthPush, Bytes::new());
}

fn take(
    cluster: &ClusterNode,
    node: &NodeState,
    payload: &[u8],
    from: helenus_cluster::locator::NodeId,
) {
    if payload.is_empty() {
        return;
    }
    match node.auth.merge(payload) {
        Ok(true) => announce_digest(cluster, node),
        Ok(false) => {}
        Err(e) => tracing::warn!(%from, error = %e, "roles from peer not merged"),
    }
}

/// The safety net: pulls from live peers whose gossiped roles digest differs from ours.
pub async fn pull_if_behind(cluster: &ClusterNode) {
    let Some(node) = cluster.node() else { return };
    let ours = node.auth.digest();
    let differing: Vec<_> = cluster
        .service
        .peers()
        .into_iter()
        .filter(|p| p.alive && p.auth_version.as_deref().is_some_and(|v| v != ours))
        .map(|p| p.host_id)
        .collect();
    for peer in differing {
        if let Some(roles) = cluster
            .pull_from(peer, Verb::AuthPull, Verb::AuthPush, PULL_TIMEOUT)
            .await
        {
            take(cluster, &node, &roles, peer);
        }
    }
}
