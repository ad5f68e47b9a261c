//! How this node's bootstrap stands, and `nodetool bootstrap resume` (Cassandra's
//! `StorageService.resumeBootstrap`): a bootstrap that failed leaves the node JOINING, owning
//! nothing, with the error in the log, the mode and `nodetool netstats`; resuming streams the
//! ranges not yet received (bootstrap.rs skips those in `available_ranges.rs`) and then makes
//! the node NORMAL. A restart of the node resumes the same way.

use super::bootstrap::StreamTotals;
use super::ClusterNode;
use crate::local_node::LocalIdentity;
use helenus_cluster::locator::NodeId;
use std::sync::Arc;

/// Where this node's bootstrap is.
#[derive(Debug, Default)]
pub(super) enum BootstrapState {
    /// No bootstrap since this process started (the node was already an owner).
    #[default]
    Idle,
    Running,
    /// Why the last attempt failed.
    Failed(String),
    /// What the last attempt streamed.
    Done(String),
}

/// Records how a bootstrap attempt ended; a failure says so in the log and the mode as
/// Cassandra's does.
pub(super) fn finished(cluster: &ClusterNode, outcome: Result<StreamTotals, String>) {
    let state = match outcome {
        Ok(t) => BootstrapState::Done(format!(
            "Resume bootstrap complete: {} ranges streamed, {} already received ({} partitions, {} bytes)",
            t.ranges, t.skipped, t.partitions, t.bytes
        )),
        Err(e) => {
            let message = format!("Error during bootstrap: Stream failed: {e}");
            tracing::error!("{message}");
            tracing::error!(
                "Some data streaming failed. Use nodetool to check bootstrap state and resume. \
                 For more, see `nodetool help bootstrap`. IN_PROGRESS"
            );
            *cluster.mode.lock() =
                format!("JOINING ({message}; resume with nodetool bootstrap resume)");
            BootstrapState::Failed(message)
        }
    };
    *cluster.bootstrap.lock() = state;
}

/// `nodetool bootstrap resume`: restarts a failed bootstrap in the background (`Ok(true)`;
/// `status` follows it), or answers `Ok(false)` when this node has no bootstrap to resume.
pub(super) fn resume(cluster: &Arc<ClusterNode>) -> Result<bool, String> {
    {
        let mut state = cluster.bootstrap.lock();
        match &*state {
            BootstrapState::Running => {
                return Err("Node is still bootstrapping. Check nodetool netstats.".into())
            }
            BootstrapState::Failed(_) => *state = BootstrapState::Running,
            BootstrapState::Idle | BootstrapState::Done(_) => {
                tracing::info!(
                    "Resuming bootstrap is requested, but the node is already bootstrapped."
                );
                return Ok(false);
            }
        }
    }
    // The tokens it announced (and the node it replaces) are the ones local.json keeps.
    let identity = cluster
        .node()
        .and_then(|n| LocalIdentity::load(&n.config.primary_data_dir().join("system")));
    let Some(identity) = identity.filter(|i| !i.bootstrapped) else {
        *cluster.bootstrap.lock() = BootstrapState::Failed("local.json unreadable".into());
        return Err("Can't continue bootstrap: local.json has no unfinished bootstrap".into());
    };
    tracing::info!("Resuming bootstrap...");
    *cluster.mode.lock() = "JOINING".into();
    tokio::spawn(super::bootstrap::run(
        cluster.clone(),
        identity.tokens,
        identity.replacing.map(NodeId),
    ));
    Ok(true)
}

/// `{"state": "running" | "done" | "failed" | "none", "message": ...}` for `nodetool bootstrap
/// resume` to poll; while running, also how many (keyspace, range) pairs have arrived whole, for
/// its progress lines.
pub(super) fn status(cluster: &ClusterNode) -> serde_json::Value {
    let received = || {
        cluster.node().map_or(0, |node| {
            let system_dir = node.config.primary_data_dir().join("system");
            crate::available_ranges::AvailableRanges::load(&system_dir)
                .by_keyspace()
                .values()
                .map(std::collections::BTreeSet::len)
                .sum::<usize>()
        })
    };
    match &*cluster.bootstrap.lock() {
        BootstrapState::Idle => serde_json::json!({"state": "none"}),
        BootstrapState::Running => {
            serde_json::json!({"state": "running", "ranges_received": received()})
        }
        BootstrapState::Failed(e) => serde_json::json!({"state": "failed", "message": e}),
        BootstrapState::Done(m) => serde_json::json!({"state": "done", "message": m}),
    }
}
