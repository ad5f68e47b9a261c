//! One topology change at a time, ordered by the metadata log (issue 13). Before a bootstrap,
//! replacement, decommission, removenode or rebuild moves any data, its node takes the ring's
//! topology claim: an entry of the metadata log (metadata_log.rs) that carries the schema
//! unchanged and the claim `(holder, operation)`. Entries are chosen by consensus, so of two
//! operations started at the same moment on different nodes exactly one gets the claim; the
//! other is refused, where the gossip check (moves.rs) alone lets both start when neither has
//! seen the other's announcement yet. The holder gives the claim back when its operation ends,
//! however it ends.
//!
//! A rebuild does not take the claim (a new data center's nodes rebuild in parallel), but is
//! refused while another node holds it.
//!
//! A claim whose holder is not alive (or no longer known) is void: an operation whose node died
//! does not block the ring for ever, and the operation that repairs the ring after it
//! (removenode, replace) can start. A node that restarts holding the claim gives it back: the
//! operation died with the process (a resumed bootstrap claims again).

use super::ClusterNode;
use crate::exec::{ExecError, ExecResult};
use crate::node::NodeState;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use helenus_cluster::locator::NodeId;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const CLAIM_FILE: &str = "topology_claim";
/// How long a node tries to give its claim back before leaving it to go void with it.
const RELEASE_TRIES: u32 = 20;

/// The ring's topology claim: who changes the ring now, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub holder: NodeId,
    pub operation: String,
}

/// Appends `[0 | 1 holder(16) len(u16) operation]`.
pub(super) fn encode_claim(out: &mut BytesMut, claim: Option<&Claim>) {
    let Some(claim) = claim else {
        out.put_u8(0);
        return;
    };
    out.put_u8(1);
    out.put_slice(claim.holder.0.as_bytes());
    let op = claim.operation.as_bytes();
    let op = op.get(..usize::from(u16::MAX)).unwrap_or(op);
    out.put_u16(u16::try_from(op.len()).unwrap_or(u16::MAX));
    out.put_slice(op);
}

pub(super) fn decode_claim(buf: &mut Bytes) -> Result<Option<Claim>, String> {
    let short = || "topology claim truncated".to_string();
    match buf.try_get_u8().map_err(|_| short())? {
        0 => Ok(None),
        1 => {
            if buf.remaining() < 18 {
                return Err(short());
            }
            let mut id = [0u8; 16];
            buf.copy_to_slice(&mut id);
            let len = usize::from(buf.get_u16());
            if buf.remaining() < len {
                return Err(short());
            }
            let operation = String::from_utf8(buf.split_to(len).to_vec())
                .map_err(|_| "topology claim operation is not UTF-8".to_string())?;
            Ok(Some(Claim {
                holder: NodeId(uuid::Uuid::from_bytes(id)),
                operation,
            }))
        }
        other => Err(format!("unknown topology claim tag {other}")),
    }
}

fn claim_path(node: &NodeState) -> PathBuf {
    node.config
        .primary_data_dir()
        .join("system")
        .join(CLAIM_FILE)
}

/// The claim as this node last installed it (kept with its schema epoch).
pub(super) fn load(node: &NodeState) -> Option<Claim> {
    let text = std::fs::read_to_string(claim_path(node)).ok()?;
    let (id, operation) = text.trim().split_once(' ')?;
    Some(Claim {
        holder: NodeId(uuid::Uuid::parse_str(id).ok()?),
        operation: operation.to_string(),
    })
}

/// Keeps `claim` as this node's view of the ring's claim (the file survives restarts).
pub(super) fn store(cluster: &ClusterNode, node: &NodeState, claim: Option<Claim>) {
    let path = claim_path(node);
    let saved = match &claim {
        Some(c) => super::schema::replace_file(&path, &format!("{} {}", c.holder.0, c.operation)),
        None => match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        },
    };
    if let Err(e) = saved {
        tracing::warn!(error = %e, "topology claim not saved");
    }
    *cluster.claim.lock() = claim;
}

/// Whether `claim` still holds: its holder is this node or a live peer.
fn in_force(cluster: &ClusterNode, claim: &Claim) -> bool {
    claim.holder == cluster.local() || cluster.service.is_alive(claim.holder)
}

/// Cassandra's refusal, naming the holder.
fn refusal(cluster: &ClusterNode, what: &str, claim: &Claim) -> ExecError {
    ExecError::Config(format!(
        "Other bootstrapping/leaving/moving nodes detected, cannot {what} while cassandra.consistent.rangemovement is true (/{} holds the ring's topology claim for a {})",
        super::streams::ip_of(cluster, claim.holder),
        claim.operation
    ))
}

/// Takes the ring's topology claim for `operation` (`what` names it in a refusal), or says who
/// holds it.
pub(super) async fn take(
    cluster: &ClusterNode,
    node: &NodeState,
    what: &str,
) -> Result<(), String> {
    let wanted = Claim {
        holder: cluster.local(),
        operation: what.to_string(),
    };
    let plan = |epoch: u64| -> ExecResult<super::metadata_log::Planned<()>> {
        let current = cluster.claim.lock().clone();
        match current {
            Some(c) if c.holder == cluster.local() => {
                Ok(super::metadata_log::Planned::Done(Ok(())))
            }
            // Final only once the round finds the next entry free: this node's view may be
            // behind a release it has not heard of yet (the round then learns it and plans
            // again).
            Some(c) if in_force(cluster, &c) => Ok(super::metadata_log::Planned::Done(Err(
                refusal(cluster, what, &c),
            ))),
            _ => super::metadata_log::Planned::claim(node, epoch, Some(wanted.clone()), ()),
        }
    };
    super::metadata_log::order(cluster, node, &plan)
        .await
        .map_err(|e| e.to_string())
}

/// For an operation that does not change the ring but reads it (rebuild: the new data center's
/// nodes are rebuilt in parallel, as with Cassandra): refused while another node holds the
/// claim, as this node last learned it.
pub(super) fn refuse_if_claimed(cluster: &ClusterNode, what: &str) -> Result<(), String> {
    match cluster.claim.lock().clone() {
        Some(c) if c.holder != cluster.local() && in_force(cluster, &c) => {
            Err(refusal(cluster, what, &c).to_string())
        }
        _ => Ok(()),
    }
}

/// Gives the claim back if this node holds it.
pub(super) async fn give_back(cluster: &ClusterNode, node: &NodeState) -> ExecResult<()> {
    let plan = |epoch: u64| -> ExecResult<super::metadata_log::Planned<()>> {
        match cluster.claim.lock().clone() {
            Some(c) if c.holder == cluster.local() => {
                super::metadata_log::Planned::claim(node, epoch, None, ())
            }
            _ => Ok(super::metadata_log::Planned::Done(Ok(()))),
        }
    };
    super::metadata_log::order(cluster, node, &plan).await
}

/// `take` from a thread outside the runtime's workers (the admin API's blocking handlers).
pub(super) fn take_blocking(cluster: &ClusterNode, what: &str) -> Result<(), String> {
    let node = cluster.node().ok_or("shutting down")?;
    let handle = tokio::runtime::Handle::try_current().map_err(|e| e.to_string())?;
    handle.block_on(take(cluster, &node, what))
}

/// Gives the claim back in the background, retrying while a majority is out of reach.
pub(super) fn release(cluster: &Arc<ClusterNode>) {
    let cluster = cluster.clone();
    tokio::spawn(async move {
        for _ in 0..RELEASE_TRIES {
            let Some(node) = cluster.node() else { return };
            match give_back(&cluster, &node).await {
                Ok(()) => return,
                Err(e) => tracing::warn!(error = %e, "topology claim not given back yet"),
            }
            tokio::time::sleep(Duration::from_secs(3)).await;
        }
    });
}

/// At start-up: a claim this node held died with its last process.
pub(super) fn release_if_held(cluster: &Arc<ClusterNode>) {
    let held = cluster
        .claim
        .lock()
        .as_ref()
        .is_some_and(|c| c.holder == cluster.local());
    if held {
        tracing::info!("giving back the topology claim this node held before it restarted");
        release(cluster);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn a_claim_survives_the_wire_and_truncation_is_an_error() {
        let claim = Claim {
            holder: NodeId(uuid::Uuid::from_bytes([7; 16])),
            operation: "decommission".into(),
        };
        for c in [None, Some(&claim)] {
            let mut out = BytesMut::new();
            encode_claim(&mut out, c);
            out.put_slice(b"rest");
            let mut buf = out.freeze();
            assert_eq!(decode_claim(&mut buf).unwrap().as_ref(), c);
            assert_eq!(&buf[..], b"rest");
        }
        let mut out = BytesMut::new();
        encode_claim(&mut out, Some(&claim));
        let whole = out.freeze();
        for cut in 0..whole.len() {
            assert!(
                decode_claim(&mut whole.slice(..cut)).is_err(),
                "cut at {cut}"
            );
        }
        assert!(decode_claim(&mut Bytes::from_static(&[9])).is_err());
    }
}
