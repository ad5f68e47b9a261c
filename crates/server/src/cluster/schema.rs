//! Schema agreement across the ring. Every node's schema carries an epoch: the number of schema
//! changes it descends from. Changes are ordered by the metadata log (metadata_log.rs), which
//! gives each epoch exactly one schema; the node that ordered one installs it and pushes it to
//! the live peers, waiting (bounded) for their acknowledgements, as Cassandra waits for schema
//! agreement. A node takes a schema from a peer when its epoch is higher (or, for schemas from
//! before the log, equal with a higher version); nodes that see a different version in gossip
//! pull from each other (the safety net for a node that was down while changes were made).

use super::ClusterNode;
use crate::exec::{ExecError, ExecResult};
use crate::node::NodeState;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use helenus_cluster::messaging::{Envelope, Verb};
use helenus_cluster::schema_sync::peers_to_pull;
use helenus_protocol::SchemaChange;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long a DDL statement waits for live peers to take its schema (Cassandra's schema
/// agreement wait is 10 s by default in drivers; the answer does not depend on it). Ordering
/// takes at most 60% of the statement's timeout (metadata_log.rs): this fits in the rest.
const AGREEMENT_WAIT: Duration = Duration::from_secs(3);
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

/// `[epoch u64][user schema]`: a metadata log entry, and what schema messages carry.
pub(super) fn encode_entry(epoch: u64, schema: &helenus_schema::Schema) -> ExecResult<Bytes> {
    let json =
        helenus_schema::encode_user_schema(schema).map_err(|e| ExecError::Server(e.to_string()))?;
    let mut out = BytesMut::with_capacity(8 + json.len());
    out.put_u64(epoch);
    out.put_slice(&json);
    Ok(out.freeze())
}

/// This node's schema as an entry.
fn export(cluster: &ClusterNode, node: &NodeState) -> Bytes {
    let epoch = cluster.schema_epoch.load(Ordering::Acquire);
    encode_entry(epoch, &node.schema())
        .unwrap_or_else(|_| Bytes::copy_from_slice(&epoch.to_be_bytes()))
}

fn set_epoch(cluster: &ClusterNode, node: &NodeState, epoch: u64) {
    cluster.schema_epoch.store(epoch, Ordering::Release);
    save_epoch(&epoch_path(node), epoch);
}

/// After the metadata log chose this node's change for `epoch`: installs it here, then pushes
/// it to the live peers and waits (bounded) until they have it.
pub(super) async fn install_own(
    cluster: &ClusterNode,
    node: &NodeState,
    epoch: u64,
    schema: helenus_schema::Schema,
    change: &SchemaChange,
) -> ExecResult<()> {
    {
        let _installing = cluster.metadata.installing.lock().await;
        crate::exec::ddl::install_ordered(node, schema, change).await?;
        set_epoch(cluster, node, epoch);
    }
    cluster
        .service
        .set_schema_version(&node.schema().version.to_string());
    let payload = export(cluster, node);
    cluster
        .request_live_peers(Verb::SchemaPush, payload, AGREEMENT_WAIT)
        .await;
    Ok(())
}

/// A peer's SchemaPull (answered with our schema) or SchemaPush (taken if newer, acknowledged).
pub async fn serve(cluster: &ClusterNode, node: &NodeState, request: Envelope) {
    if request.verb == Verb::SchemaPull {
        let _ = cluster
            .messenger
            .respond(&request, Verb::SchemaPush, export(cluster, node));
        return;
    }
    if let Err(e) = take(cluster, node, request.payload.clone()).await {
        tracing::warn!(from = %request.from, error = %e, "schema from peer not taken");
    }
    let _ = cluster
        .messenger
        .respond(&request, Verb::SchemaPush, Bytes::new());
}

/// Installs a schema entry if it is newer than ours (see the module docs).
pub(super) async fn take(
    cluster: &ClusterNode,
    node: &NodeState,
    mut payload: Bytes,
) -> Result<(), String> {
    if payload.remaining() < 8 {
        return Err("schema message too short".into());
    }
    let epoch = payload.get_u64();
    // One at a time: two schemas checked against the same epoch and installed in the other
    // order would leave the older one in place.
    let _installing = cluster.metadata.installing.lock().await;
    let keyspaces = helenus_schema::decode_user_schema(Path::new("<peer>"), &payload)
        .map_err(|e| e.to_string())?;
    let incoming = crate::exec::ddl::schema_with_user_keyspaces(keyspaces);
    let ours = cluster.schema_epoch.load(Ordering::Acquire);
    let current = node.schema().version;
    let newer = epoch > ours || (epoch == ours && incoming.version > current);
    if !newer || incoming.version == current {
        if epoch > ours {
            set_epoch(cluster, node, epoch);
        }
        return Ok(());
    }
    crate::exec::ddl::install_schema(node, incoming)
        .await
        .map_err(|e| e.to_string())?;
    set_epoch(cluster, node, epoch);
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
