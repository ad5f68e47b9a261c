//! Schema agreement across the ring. Every node's schema carries an epoch: the number of schema
//! changes it descends from. A DDL statement moves its node's epoch past every epoch it knows and
//! pushes the whole user schema to the live peers, waiting (bounded) for their acknowledgements,
//! as Cassandra waits for schema agreement. A node takes a schema from a peer when its epoch is
//! higher, or equal with a higher version; so every node ends on the same schema, whichever
//! messages are lost, because nodes that see a different version in gossip pull from each other
//! (the safety net).
//!
//! Schema changes are serialised across the ring by a lease from the schema leader (the live
//! member with the lowest host id): a DDL statement takes the lease, starts from the leader's
//! schema (sent with the grant), applies, pushes, and gives the lease back; a lease not given
//! back expires. Two concurrent DDL statements on two nodes therefore apply one after the other
//! and neither is lost. What this does not survive is a leader change while a lease is held
//! (two leaders for a moment): a Raft-ordered metadata log is the complete answer.

use super::ClusterNode;
use crate::node::NodeState;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use helenus_cluster::messaging::{Envelope, Verb};
use helenus_cluster::schema_sync::peers_to_pull;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long a DDL statement waits for live peers to take its schema (Cassandra's schema
/// agreement wait is 10 s by default in drivers; the answer does not depend on it).
const AGREEMENT_WAIT: Duration = Duration::from_secs(5);
const PULL_TIMEOUT: Duration = Duration::from_secs(5);
const EPOCH_FILE: &str = "schema_epoch";
/// How long a granted lease lasts if its holder never gives it back (it died mid-DDL).
const LEASE_DURATION: Duration = Duration::from_secs(10);
/// How long a DDL statement tries to obtain the lease before giving up.
const LEASE_WAIT: Duration = Duration::from_secs(10);

/// Who holds the schema lease granted by this node (when it is the leader).
#[derive(Default)]
pub struct LeaseState {
    holder: Option<(helenus_cluster::locator::NodeId, tokio::time::Instant)>,
}

/// The schema leader: the live ring member (or this node) with the lowest host id.
fn leader(cluster: &ClusterNode) -> helenus_cluster::locator::NodeId {
    let local = cluster.local();
    cluster
        .service
        .ring()
        .members()
        .map(|m| m.id)
        .filter(|id| *id == local || cluster.service.is_alive(*id))
        .chain(std::iter::once(local))
        .min()
        .unwrap_or(local)
}

/// Grants the lease to `to` if it is free, expired or already `to`'s.
fn grant(cluster: &ClusterNode, to: helenus_cluster::locator::NodeId) -> bool {
    let mut lease = cluster.schema_lease.lock();
    let now = tokio::time::Instant::now();
    let free = match lease.holder {
        None => true,
        Some((holder, until)) => holder == to || until <= now,
    };
    if free {
        lease.holder = Some((to, now + LEASE_DURATION));
    }
    free
}

/// Takes the schema lease before a DDL statement, first taking the leader's schema if newer.
pub async fn acquire_lease(cluster: &ClusterNode) -> Result<(), String> {
    let Some(node) = cluster.node() else {
        return Err("node shutting down".into());
    };
    let deadline = tokio::time::Instant::now() + LEASE_WAIT;
    loop {
        let leader = leader(cluster);
        if leader == cluster.local() {
            if grant(cluster, leader) {
                return Ok(());
            }
        } else if let Ok((id, answer)) =
            cluster
                .messenger
                .request(leader, Verb::SchemaLease, Bytes::new())
        {
            match tokio::time::timeout_at(deadline, answer).await {
                Ok(Ok(reply)) if reply.verb == Verb::SchemaPush => {
                    if let Err(e) = take(cluster, &node, reply.payload).await {
                        tracing::warn!(error = %e, "leader's schema not taken");
                    }
                    return Ok(());
                }
                Ok(_) => {}
                Err(_) => cluster.messenger.forget(id),
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!(
                "Schema change not started: the schema lease was not obtained within {} s (another schema change is running or the schema leader does not answer)",
                LEASE_WAIT.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Gives the lease back after a DDL statement (pushed or not).
pub fn release_lease(cluster: &ClusterNode) {
    let leader = leader(cluster);
    if leader == cluster.local() {
        let mut lease = cluster.schema_lease.lock();
        if lease.holder.is_some_and(|(h, _)| h == leader) {
            lease.holder = None;
        }
    } else {
        let _ = cluster
            .messenger
            .send_one_way(leader, Verb::SchemaRelease, Bytes::new());
    }
}

fn epoch_path(node: &NodeState) -> PathBuf {
    node.config
        .primary_data_dir()
        .join("system")
        .join(EPOCH_FILE)
}

pub fn load_epoch(node: &NodeState) -> u64 {
    std::fs::read_to_string(epoch_path(node))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

fn save_epoch(path: &Path, epoch: u64) {
    let tmp = path.with_extension("tmp");
    let saved = std::fs::write(&tmp, epoch.to_string()).and_then(|_| std::fs::rename(&tmp, path));
    if let Err(e) = saved {
        tracing::warn!(error = %e, "schema epoch not saved");
    }
}

/// `[epoch u64][schema file bytes]`.
fn export(cluster: &ClusterNode, node: &NodeState) -> Bytes {
    let mut out = BytesMut::new();
    out.put_u64(cluster.schema_epoch.load(Ordering::Acquire));
    if let Ok(json) = helenus_schema::encode_user_schema(&node.schema()) {
        out.put_slice(&json);
    }
    out.freeze()
}

/// After DDL here: a new epoch, announced in gossip and pushed to live peers.
pub async fn announce_change(cluster: &ClusterNode) {
    let Some(node) = cluster.node() else { return };
    // Our epoch is already the highest we have taken from any peer.
    let epoch = cluster.schema_epoch.fetch_add(1, Ordering::AcqRel) + 1;
    save_epoch(&epoch_path(&node), epoch);
    cluster
        .service
        .set_schema_version(&node.schema().version.to_string());
    let payload = export(cluster, &node);
    cluster
        .request_live_peers(Verb::SchemaPush, payload, AGREEMENT_WAIT)
        .await;
}

/// A peer's SchemaPull (answered with our schema), SchemaPush (taken if newer, acknowledged),
/// SchemaLease (granted with our schema, or refused while another holds it) or SchemaRelease.
pub async fn serve(cluster: &ClusterNode, node: &NodeState, request: Envelope) {
    match request.verb {
        Verb::SchemaLease => {
            let (verb, payload) = if grant(cluster, request.from) {
                (Verb::SchemaPush, export(cluster, node))
            } else {
                (Verb::Failure, Bytes::new())
            };
            let _ = cluster.messenger.respond(&request, verb, payload);
        }
        Verb::SchemaRelease => {
            let mut lease = cluster.schema_lease.lock();
            if lease.holder.is_some_and(|(h, _)| h == request.from) {
                lease.holder = None;
            }
        }
        Verb::SchemaPull => {
            let _ = cluster
                .messenger
                .respond(&request, Verb::SchemaPush, export(cluster, node));
        }
        _ => {
            if let Err(e) = take(cluster, node, request.payload.clone()).await {
                tracing::warn!(from = %request.from, error = %e, "schema from peer not taken");
            }
            let _ = cluster
                .messenger
                .respond(&request, Verb::SchemaPush, Bytes::new());
        }
    }
}

/// Installs a peer's schema if it is newer than ours (see the module docs).
async fn take(cluster: &ClusterNode, node: &NodeState, mut payload: Bytes) -> Result<(), String> {
    if payload.remaining() < 8 {
        return Err("schema message too short".into());
    }
    let epoch = payload.get_u64();
    let keyspaces = helenus_schema::decode_user_schema(Path::new("<peer>"), &payload)
        .map_err(|e| e.to_string())?;
    let incoming = crate::exec::ddl::schema_with_user_keyspaces(keyspaces);
    let ours = cluster.schema_epoch.load(Ordering::Acquire);
    let current = node.schema().version;
    let newer = epoch > ours || (epoch == ours && incoming.version > current);
    if !newer || incoming.version == current {
        if epoch > ours {
            cluster.schema_epoch.store(epoch, Ordering::Release);
            save_epoch(&epoch_path(node), epoch);
        }
        return Ok(());
    }
    crate::exec::ddl::install_schema(node, incoming)
        .await
        .map_err(|e| e.to_string())?;
    cluster.schema_epoch.store(epoch, Ordering::Release);
    save_epoch(&epoch_path(node), epoch);
    cluster
        .service
        .set_schema_version(&node.schema().version.to_string());
    Ok(())
}

/// The safety net: pulls from live peers whose gossiped version differs from ours.
pub async fn pull_if_behind(cluster: &ClusterNode) {
    let Some(node) = cluster.node() else { return };
    let version = node.schema().version.to_string();
    for peer in peers_to_pull(&version, &cluster.service.peers()) {
        if let Some(schema) = cluster
            .pull_from(peer, Verb::SchemaPull, Verb::SchemaPush, PULL_TIMEOUT)
            .await
        {
            if let Err(e) = take(cluster, &node, schema).await {
                tracing::warn!(from = %peer, error = %e, "pulled schema not taken");
            }
        }
    }
}
