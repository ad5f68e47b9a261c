//! Changes to this node's identity file (local.json, `crate::local_node`) as its topology
//! operations finish: a bootstrap done, a decommission done.

use super::ClusterNode;
use crate::local_node::LocalIdentity;

/// Records in local.json that this node holds its ranges: a restart no longer streams.
pub(super) fn mark_bootstrapped(cluster: &ClusterNode) -> std::io::Result<()> {
    update_identity(cluster, |identity| {
        identity.bootstrapped = true;
        identity.replacing = None;
    })
}

/// Records in local.json that this node left the ring: it refuses to start again.
pub(super) fn mark_decommissioned(cluster: &ClusterNode) -> std::io::Result<()> {
    update_identity(cluster, |identity| identity.decommissioned = true)
}

fn update_identity(
    cluster: &ClusterNode,
    change: impl FnOnce(&mut LocalIdentity),
) -> std::io::Result<()> {
    let Some(node) = cluster.node() else {
        return Ok(());
    };
    let system_dir = node.config.primary_data_dir().join("system");
    match LocalIdentity::load(&system_dir) {
        Some(mut identity) => {
            change(&mut identity);
            identity.save(&system_dir)
        }
        None => Err(std::io::Error::other("local.json is missing")),
    }
}
