//! Schema agreement across the ring. Every node's schema carries an epoch: the number of schema
//! changes it descends from. A DDL statement moves its node's epoch past every epoch it knows and
//! pushes the whole user schema to the live peers, waiting (bounded) for their acknowledgements,
//! as Cassandra waits for schema agreement. A node takes a schema from a peer when its epoch is
//! higher, or equal with a higher version (a tie only concurrent DDL on two nodes can make); so
//! every node ends on the same schema, whichever messages are lost, because nodes that see a
//! different version in gossip pull from each other (the safety net). Two concurrent DDL
//! statements on two nodes still converge, but one of them can be lost: ordering them through
//! a metadata log (Raft) is the next step (issue 12).

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
    let mut waiting = Vec::new();
    for peer in cluster.service.peers().into_iter().filter(|p| p.alive) {
        if let Ok(pending) =
            cluster
                .messenger
                .request(peer.host_id, Verb::SchemaPush, payload.clone())
        {
            waiting.push(pending);
        }
    }
    let deadline = tokio::time::Instant::now() + AGREEMENT_WAIT;
    for (id, answer) in waiting {
        if tokio::time::timeout_at(deadline, answer).await.is_err() {
            cluster.messenger.forget(id);
        }
    }
}

/// A peer's SchemaPull (answered with our schema) or SchemaPush (taken if newer, acknowledged).
pub async fn serve(cluster: &ClusterNode, node: &NodeState, request: Envelope) {
    match request.verb {
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
        let Ok((id, answer)) = cluster
            .messenger
            .request(peer, Verb::SchemaPull, Bytes::new())
        else {
            continue;
        };
        match tokio::time::timeout(PULL_TIMEOUT, answer).await {
            Ok(Ok(reply)) if reply.verb == Verb::SchemaPush => {
                if let Err(e) = take(cluster, &node, reply.payload).await {
                    tracing::warn!(from = %peer, error = %e, "pulled schema not taken");
                }
            }
            Ok(_) => {}
            Err(_) => cluster.messenger.forget(id),
        }
    }
}
