//! Schema agreement across the ring. Every node's schema carries an epoch: the number of schema
//! changes it descends from. Changes are ordered by the metadata log (metadata_log.rs), which
//! gives each epoch exactly one schema; the node that ordered one installs it and pushes it to
//! the live peers, waiting (bounded) for their acknowledgements, as Cassandra waits for schema
//! agreement. A node takes a schema from a peer when its epoch is higher (or, for schemas from
//! before the log, equal with a higher version); nodes that see a different version in gossip
//! pull from each other (the safety net for a node that was down while changes were made).

use super::topology_claim::Claim;
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

/// Writes a small state file whole or not at all (a crash leaves the old one).
pub(super) fn replace_file(path: &Path, contents: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, contents).and_then(|()| std::fs::rename(&tmp, path))
}

fn save_epoch(path: &Path, epoch: u64) {
    if let Err(e) = replace_file(path, &epoch.to_string()) {
        tracing::warn!(error = %e, "schema epoch not saved");
    }
}

/// Marks an entry that carries the topology claim; entries from before it start their schema
/// (JSON) at once, with `{`.
const WITH_CLAIM: u8 = 0xC1;

/// `[epoch u64][WITH_CLAIM][topology claim][user schema]`: a metadata log entry, and what
/// schema messages carry.
pub(super) fn encode_entry(
    epoch: u64,
    schema: &helenus_schema::Schema,
    claim: Option<&Claim>,
) -> ExecResult<Bytes> {
    let json =
        helenus_schema::encode_user_schema(schema).map_err(|e| ExecError::Server(e.to_string()))?;
    let mut out = BytesMut::with_capacity(32 + json.len());
    out.put_u64(epoch);
    out.put_u8(WITH_CLAIM);
    super::topology_claim::encode_claim(&mut out, claim);
    out.put_slice(&json);
    Ok(out.freeze())
}

/// An entry's epoch, topology claim and schema JSON.
fn decode_entry(mut payload: Bytes) -> Result<(u64, Option<Claim>, Bytes), String> {
    if payload.remaining() < 8 {
        return Err("schema message too short".into());
    }
    let epoch = payload.get_u64();
    if payload.first() != Some(&WITH_CLAIM) {
        return Ok((epoch, None, payload));
    }
    payload.advance(1);
    let claim = super::topology_claim::decode_claim(&mut payload)?;
    Ok((epoch, claim, payload))
}

/// This node's schema and topology claim as an entry.
fn export(cluster: &ClusterNode, node: &NodeState) -> Bytes {
    let epoch = cluster.schema_epoch.load(Ordering::Acquire);
    let claim = cluster.claim.lock().clone();
    encode_entry(epoch, &node.schema(), claim.as_ref())
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
    push(cluster, node).await;
    Ok(())
}

/// Pushes this node's entry to the live peers and waits (bounded) until they have it.
async fn push(cluster: &ClusterNode, node: &NodeState) {
    let payload = export(cluster, node);
    cluster
        .request_live_peers(Verb::SchemaPush, payload, AGREEMENT_WAIT)
        .await;
}

/// After the metadata log chose this node's change of the topology claim for `epoch`.
pub(super) async fn install_claim(
    cluster: &ClusterNode,
    node: &NodeState,
    epoch: u64,
    claim: Option<Claim>,
) {
    {
        let _installing = cluster.metadata.installing.lock().await;
        super::topology_claim::store(cluster, node, claim);
        set_epoch(cluster, node, epoch);
    }
    push(cluster, node).await;
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
    payload: Bytes,
) -> Result<(), String> {
    let (epoch, claim, payload) = decode_entry(payload)?;
    // One at a time: two schemas checked against the same epoch and installed in the other
    // order would leave the older one in place.
    let _installing = cluster.metadata.installing.lock().await;
    let keyspaces = helenus_schema::decode_user_schema(Path::new("<peer>"), &payload)
        .map_err(|e| e.to_string())?;
    let incoming = crate::exec::ddl::schema_with_user_keyspaces(keyspaces);
    let ours = cluster.schema_epoch.load(Ordering::Acquire);
    if epoch > ours {
        super::topology_claim::store(cluster, node, claim);
    }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use helenus_cluster::locator::NodeId;

    #[test]
    fn entries_carry_the_claim_and_entries_from_before_it_still_read() {
        let schema = crate::exec::ddl::schema_with_user_keyspaces(Vec::new());
        let claim = Claim {
            holder: NodeId(uuid::Uuid::from_bytes([3; 16])),
            operation: "bootstrap".into(),
        };
        let entry = encode_entry(7, &schema, Some(&claim)).unwrap();
        let (epoch, got, json) = decode_entry(entry).unwrap();
        assert_eq!((epoch, got.as_ref()), (7, Some(&claim)));
        assert_eq!(json.first(), Some(&b'{'));
        // Before the claim: the schema's JSON right after the epoch.
        let mut old = BytesMut::new();
        old.put_u64(5);
        old.put_slice(&json);
        let (epoch, got, old_json) = decode_entry(old.freeze()).unwrap();
        assert_eq!((epoch, got, old_json), (5, None, json));
        let cut = encode_entry(7, &schema, Some(&claim)).unwrap().slice(..12);
        assert!(decode_entry(cut).is_err());
        assert!(decode_entry(Bytes::from_static(b"1234")).is_err());
    }
}
