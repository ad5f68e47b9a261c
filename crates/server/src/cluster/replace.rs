//! Replacing a dead node (issue 13; Cassandra 4's `replace_address_first_boot`, at a new
//! address). On its first start the new node learns the ring, finds the node at the address it
//! replaces, makes sure that node is dead (its heartbeat does not move: a live node is refused
//! with Cassandra's message), and takes over its tokens under a new host id. It announces
//! BOOT_REPLACE naming the dead node, so coordinators send it the writes of the dead node's
//! ranges (the dead node leaving, the replacement joining: `ClusterService::ring_changes`), and
//! `bootstrap::run` streams those ranges from the surviving replicas. Only then does it mark the
//! dead node removed on its behalf and become NORMAL: it never serves a read for a range it has
//! not received. `replacing` in local.json makes a restart half way resume the replacement.

use super::{ClusterNode, GOSSIP_INTERVAL};
use crate::config::NodeConfig;
use crate::local_node::LocalIdentity;
use crate::StartError;
use helenus_cluster::gossip::status;
use helenus_cluster::locator::{NodeId, Ring, Token};
use helenus_cluster::service::ClusterService;
use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

/// How long the dead node's heartbeat must stay still before its tokens are taken: gossip
/// relays a live node's heartbeat to everyone within a few rounds.
const QUIET_BEFORE_REPLACE: Duration = Duration::from_secs(5);

/// Settles a first start that replaces the node at `address`: its tokens, and its host id.
/// Saves them (`bootstrapped: false`, `replacing`); `bootstrap::run` announces BOOT_REPLACE.
pub(super) async fn prepare(
    service: &ClusterService,
    config: &NodeConfig,
    host_id: uuid::Uuid,
    ring: &Ring,
    address: IpAddr,
    system_dir: &Path,
) -> Result<(Vec<Token>, NodeId), StartError> {
    if address == config.listen_address {
        return Err(StartError::Ring(format!(
            "Cannot replace /{address} from the same address: start the replacement on a new address"
        )));
    }
    let (dead, tokens) = find_replaced(service, ring, address)?;
    refuse_if_alive(service, dead, address).await?;
    tracing::info!(%dead, %address, tokens = tokens.len(), "replacing a dead node");
    let identity = LocalIdentity {
        host_id,
        tokens: tokens.clone(),
        cluster_name: config.cluster_name.clone(),
        bootstrapped: false,
        decommissioned: false,
        replacing: Some(dead.0),
    };
    identity.save(system_dir).map_err(|e| StartError::Dir {
        path: system_dir.display().to_string(),
        message: e.to_string(),
    })?;
    Ok((tokens, dead))
}

/// The ring member at `address` and its tokens.
fn find_replaced(
    service: &ClusterService,
    ring: &Ring,
    address: IpAddr,
) -> Result<(NodeId, Vec<Token>), StartError> {
    let peer = service
        .peers()
        .into_iter()
        .find(|p| p.address.is_some_and(|a| a.ip() == address) && !status::is_gone(&p.status))
        .ok_or_else(|| {
            StartError::Ring(format!(
                "Cannot replace_address /{address} because it doesn't exist in gossip"
            ))
        })?;
    let tokens = ring.tokens_of(peer.host_id);
    if tokens.is_empty() {
        return Err(StartError::Ring(format!(
            "Cannot replace_address /{address}: it owns no tokens (it is not a member of the ring)"
        )));
    }
    Ok((peer.host_id, tokens))
}

/// Refuses to take the tokens of a node whose heartbeat still moves.
async fn refuse_if_alive(
    service: &ClusterService,
    dead: NodeId,
    address: IpAddr,
) -> Result<(), StartError> {
    let first = service.heartbeat_of(dead);
    let start = tokio::time::Instant::now();
    while start.elapsed() < QUIET_BEFORE_REPLACE {
        tokio::time::sleep(GOSSIP_INTERVAL / 4).await;
        if service.heartbeat_of(dead) != first {
            return Err(StartError::Ring(format!(
                "Cannot replace a live node /{address}. Endpoint still alive or not yet marked down"
            )));
        }
    }
    Ok(())
}

/// After every range is received: the dead node leaves the ring everywhere (on its behalf) and
/// this node owns its tokens.
pub(super) fn finish(cluster: &ClusterNode, tokens: &[Token], dead: NodeId) {
    if !cluster.service.mark_removed(dead) {
        tracing::warn!(%dead, "the replaced node is no longer in gossip");
    }
    cluster.service.announce_normal(tokens);
}
