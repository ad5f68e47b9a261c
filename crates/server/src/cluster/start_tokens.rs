//! The tokens a node starts with: those of a join or replacement that stopped half way, those
//! chosen for the ring on a first start, or those of the dead node it replaces.

use super::{replace, GOSSIP_INTERVAL};
use crate::config::NodeConfig;
use crate::local_node::LocalIdentity;
use crate::StartError;
use helenus_cluster::locator::{
    allocate_tokens, Location, Member, NodeId, ReplicationStrategy, Ring,
};
use helenus_cluster::service::ClusterService;
use std::sync::Arc;
use std::time::Duration;

/// How long a first start waits to hear the ring from its seeds before choosing tokens.
const RING_DISCOVERY_TIMEOUT: Duration = Duration::from_secs(30);
/// A seed that hears nobody in this long is the first node of a new ring.
const LONE_SEED_WAIT: Duration = Duration::from_secs(3);

/// This node's tokens, and whether it must stream first (replacing a dead node or not): those
/// of a join or replacement that stopped half way, or, on a first start, tokens chosen for the
/// ring or taken over from the dead node it replaces.
pub(super) async fn settle_tokens(
    service: &ClusterService,
    config: &NodeConfig,
    resumed: Option<(Vec<i64>, Option<NodeId>)>,
    tokens: &[i64],
    host_id: uuid::Uuid,
    location: Location,
) -> Result<(Option<Vec<i64>>, Option<NodeId>), StartError> {
    let system_dir = config.primary_data_dir().join("system");
    Ok(match resumed {
        Some((tokens, Some(replaced))) => {
            tracing::info!(%replaced, "resuming an unfinished replacement");
            (Some(tokens), Some(replaced))
        }
        Some((tokens, None)) => {
            tracing::info!("resuming an unfinished bootstrap");
            (Some(tokens), None)
        }
        None if tokens.is_empty() => match config.replace_address_first_boot {
            Some(address) => {
                let ring = discover_ring(service, config).await;
                let (tokens, replaced) =
                    replace::prepare(service, config, host_id, &ring, address, &system_dir).await?;
                (Some(tokens), Some(replaced))
            }
            None => (
                choose_tokens(service, config, host_id, location, &system_dir).await?,
                None,
            ),
        },
        None => {
            if config.replace_address_first_boot.is_some() {
                tracing::warn!("replace_address_first_boot ignored: this node has already joined");
            }
            (None, None)
        }
    })
}

/// A first start: learns the ring from the seeds, takes tokens balanced for it and keeps them.
/// A node joining a ring that holds data (not a seed, `auto_bootstrap`) returns them for
/// `bootstrap::run`, which announces them as JOINING; any other becomes an owner at once.
async fn choose_tokens(
    service: &ClusterService,
    config: &NodeConfig,
    host_id: uuid::Uuid,
    location: Location,
    system_dir: &std::path::Path,
) -> Result<Option<Vec<i64>>, StartError> {
    let ring = discover_ring(service, config).await;
    let member = Member {
        id: NodeId(host_id),
        address: config.listen_address,
        location,
    };
    let strategy = ReplicationStrategy::Simple {
        replication_factor: config.allocate_tokens_for_local_replication_factor,
    };
    let tokens = allocate_tokens(&ring, &member, config.num_tokens, &strategy)
        .ok()
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| LocalIdentity::spread_tokens(host_id, config.num_tokens));
    let is_seed = config.seeds.contains(&config.storage_address());
    let must_stream = config.auto_bootstrap && !is_seed && !ring.is_empty();
    let identity = LocalIdentity {
        host_id,
        tokens: tokens.clone(),
        cluster_name: config.cluster_name.clone(),
        bootstrapped: !must_stream,
        decommissioned: false,
        replacing: None,
    };
    identity.save(system_dir).map_err(|e| StartError::Dir {
        path: system_dir.display().to_string(),
        message: e.to_string(),
    })?;
    if must_stream {
        // Announced by `bootstrap::run` once the node has the ring's schema.
        Ok(Some(tokens))
    } else {
        service.announce_normal(&tokens);
        Ok(None)
    }
}

/// Waits until gossip has shown the ring this node joins: another member's tokens, or, for a
/// seed nobody answers, an empty ring.
async fn discover_ring(service: &ClusterService, config: &NodeConfig) -> Arc<Ring> {
    let is_seed = config.seeds.contains(&config.storage_address());
    let start = tokio::time::Instant::now();
    loop {
        let ring = service.ring();
        let waited = start.elapsed();
        let settled = !ring.is_empty() && waited >= 2 * GOSSIP_INTERVAL;
        if settled
            || (is_seed
                && ring.is_empty()
                && service.peers().is_empty()
                && waited >= LONE_SEED_WAIT)
            || waited >= RING_DISCOVERY_TIMEOUT
        {
            return ring;
        }
        tokio::time::sleep(GOSSIP_INTERVAL / 4).await;
    }
}
