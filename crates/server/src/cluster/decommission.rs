//! Leaving the ring (issue 13's `nodetool decommission`): the node announces LEAVING (it still
//! owns its ranges, and coordinators also send their writes to the nodes that will own them
//! next), pushes every range it replicates to each node gaining it, announces LEFT (peers drop
//! it from the ring and from `system.peers`), and stops. It is refused, as Cassandra refuses
//! it, when the nodes left in its data center would be fewer than a keyspace's replication
//! factor there.
//!
//! For each range and table, the gaining node first pulls from this node the SSTables lying
//! wholly inside the range, as their files (whole_push.rs). The rest is pushed as unfiltered
//! partition pages (tombstones, timestamps and TTLs kept) read with those SSTables left out, as
//! ordinary mutations, acknowledged one page at a time, each let through by the node's outbound
//! stream throttle (the files go through `entire_sstable_stream_throughput_outbound`); the plan
//! ("Unbootstrap") shows in `nodetool netstats` while it runs, here and on the gaining node.

use super::bootstrap::{
    after_last, page_query, storage_pieces, StreamFile, StreamTotals, JOIN_SETTLE,
};
use super::streams::{file_name, ip_of};
use super::whole_push::push_whole;
use super::ClusterNode;
use crate::node::NodeState;
use bytes::Bytes;
use helenus_cluster::locator::{range_moves, NodeId, ReplicationMap};
use helenus_cluster::messaging::Verb;
use helenus_cluster::streaming::{Direction, StreamOperation, StreamPlan};
use helenus_storage as st;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A page not acknowledged in this long fails the decommission (the node stays LEAVING).
const PUSH_PAGE_TIMEOUT: Duration = Duration::from_secs(30);

/// Checks that the node may leave, announces LEAVING and starts handing its ranges over in
/// the background; `ClusterNode::operation_mode` tells how it went.
pub fn start(cluster: &Arc<ClusterNode>) -> Result<(), String> {
    let node = cluster.node().ok_or("shutting down")?;
    let mode = cluster.mode.lock().clone();
    if mode != "NORMAL" {
        // Cassandra's words, a second decommission among them.
        return Err(format!(
            "Node in {mode} state; wait for status to become normal or restart"
        ));
    }
    super::moves::refuse_if_moving(cluster, "decommission", true, None)?;
    super::topology_claim::take_blocking(cluster, "decommission")?;
    let leaving = {
        let mut mode = cluster.mode.lock();
        if *mode != "NORMAL" {
            Err(format!(
                "Node in {mode} state; wait for status to become normal or restart"
            ))
        } else {
            refuse_if_replicas_would_be_missing(cluster, &node).map(|()| *mode = "LEAVING".into())
        }
    };
    if let Err(e) = leaving {
        super::topology_claim::release(cluster);
        return Err(e);
    }
    cluster.service.announce_leaving();
    tokio::spawn(run(cluster.clone()));
    Ok(())
}

fn refuse_if_replicas_would_be_missing(
    cluster: &ClusterNode,
    node: &NodeState,
) -> Result<(), String> {
    let ring = cluster.service.ring();
    if ring.tokens_of(cluster.local()).is_empty() {
        return Err("this node owns no tokens (it is not NORMAL)".into());
    }
    let dc = &node.config.data_center;
    let remaining = ring
        .members()
        .filter(|m| m.location.datacenter == *dc && m.id != cluster.local())
        .count();
    for keyspace in node.schema().user_keyspaces() {
        let rf = cluster
            .map_for(keyspace)
            .strategy()
            .replication_factor_in(&ring, dc);
        if rf > remaining {
            return Err(format!(
                "Not enough live nodes to maintain replication factor in keyspace {} (RF = {rf}, N = {}). Perform a forceful decommission to ignore.",
                keyspace.name,
                remaining + 1
            ));
        }
    }
    Ok(())
}

async fn run(cluster: Arc<ClusterNode>) {
    let started = Instant::now();
    tokio::time::sleep(JOIN_SETTLE).await;
    let handed_over = hand_over(&cluster).await;
    // Given back while this node still answers: once it has left, its claim is void anyway.
    if let Some(node) = cluster.node() {
        if let Err(e) = super::topology_claim::give_back(&cluster, &node).await {
            tracing::warn!(error = %e, "topology claim not given back; it ends when this node leaves");
        }
    }
    match handed_over {
        Ok(totals) => {
            totals.log(
                started,
                "decommission handed every range over; leaving the ring",
            );
            if let Err(e) = super::identity::mark_decommissioned(&cluster) {
                tracing::error!(error = %e, "local.json not marked decommissioned");
            }
            cluster.service.announce_left();
            // Two gossip rounds carry LEFT to every peer before this node goes quiet.
            tokio::time::sleep(2 * super::GOSSIP_INTERVAL).await;
            *cluster.mode.lock() = "DECOMMISSIONED".into();
            // Long enough for `nodetool decommission`, polling the mode, to see it.
            tokio::time::sleep(2 * super::GOSSIP_INTERVAL).await;
            if let Some(node) = cluster.node() {
                node.request_stop();
            }
        }
        Err(e) => {
            tracing::error!(error = %e, "decommission failed: the node stays LEAVING");
            *cluster.mode.lock() = format!("LEAVING (decommission failed: {e})");
        }
    }
}

async fn hand_over(cluster: &ClusterNode) -> Result<StreamTotals, String> {
    let node = cluster.node().ok_or("shutting down")?;
    let me = cluster.local();
    // Every file is listed first, so netstats shows the totals from the start.
    let plan = node.streams.start_plan(StreamOperation::Unbootstrap);
    let mut files = Vec::new();
    let mut ranges = 0;
    for keyspace in node.schema().user_keyspaces() {
        let before = cluster.map_for(keyspace);
        let after = ReplicationMap::new(
            Arc::new(before.ring().without_member(me)),
            before.strategy().clone(),
            me,
        );
        for movement in range_moves(&before, &after) {
            if !movement.losing.contains(&me) {
                continue;
            }
            for target in &movement.gaining {
                for table in keyspace.tables.values() {
                    plan.expect(ip_of(cluster, *target), Direction::Sending, 1);
                    let file = StreamFile {
                        keyspace: keyspace.name.clone(),
                        name: file_name(&keyspace.name, &table.name, movement.range),
                        table: *table.id.as_bytes(),
                        range: movement.range,
                    };
                    files.push((file, *target));
                }
            }
            ranges += 1;
        }
    }
    let mut totals = StreamTotals {
        ranges,
        ..StreamTotals::default()
    };
    for (file, target) in &files {
        match push_range(cluster, &node, &plan, file, *target).await {
            Ok(pushed) => {
                totals.partitions += pushed.partitions;
                totals.bytes += pushed.bytes;
                totals.whole_sstables += pushed.whole_sstables;
            }
            Err(e) => {
                let reason = format!("{} to {}: {e}", file.name, ip_of(cluster, *target));
                plan.fail(&reason);
                return Err(reason);
            }
        }
    }
    plan.finish();
    Ok(totals)
}

/// Sends this node's copy of one file to `target`: the SSTables wholly inside its range as
/// their files (pulled by the target), then the rest a page at a time.
async fn push_range(
    cluster: &ClusterNode,
    node: &NodeState,
    plan: &StreamPlan,
    file: &StreamFile,
    target: NodeId,
) -> Result<StreamTotals, String> {
    let peer = ip_of(cluster, target);
    let whole = push_whole(cluster, node, plan, file, cluster.local(), target).await;
    plan.file_started(peer, Direction::Sending, file.name.clone());
    // The files' bytes also show in the plan the target's pull made here.
    plan.transferred(peer, Direction::Sending, whole.bytes);
    let mut totals = StreamTotals {
        bytes: whole.bytes,
        whole_sstables: whole.files,
        ..StreamTotals::default()
    };
    let excluded = Arc::new(whole.excluded);
    for (mut start, end) in storage_pieces(file.range) {
        loop {
            let query = page_query(start.clone(), end.clone(), node.exec.clock().wall_secs());
            let page = read_page(node, file.table, query, excluded.clone()).await?;
            let Some(next) = after_last(&page) else {
                break;
            };
            start = next;
            totals.partitions += page.len() as u64;
            let payload = helenus_mutation::encode_mutations(&page);
            let bytes = payload.len() as u64;
            totals.bytes += bytes;
            node.streams.throttle().acquire(bytes).await;
            send_page(cluster, target, payload).await?;
            plan.transferred(peer, Direction::Sending, bytes);
        }
    }
    plan.file_done(peer, Direction::Sending);
    Ok(totals)
}

/// One page of this node's partitions, unfiltered, leaving out the generations sent whole.
async fn read_page(
    node: &NodeState,
    table: st::TableId,
    query: st::ReadQuery,
    excluded: Arc<Vec<u64>>,
) -> Result<Vec<st::Mutation>, String> {
    let engine = node.engine.clone();
    let page = super::background::in_background(move || {
        engine
            .read_unfiltered_excluding(table, &query, u64::MAX, &excluded)
            .map_err(|e| e.to_string())
    })
    .await?;
    Ok(page.partitions)
}

/// Sends a page to `target` as mutations and waits for its acknowledgement.
async fn send_page(cluster: &ClusterNode, target: NodeId, payload: Bytes) -> Result<(), String> {
    let (id, answer) = cluster
        .messenger
        .request(target, Verb::MutationRequest, payload)
        .map_err(|e| e.to_string())?;
    match tokio::time::timeout(PUSH_PAGE_TIMEOUT, answer).await {
        Ok(Ok(r)) if r.verb == Verb::MutationResponse => Ok(()),
        Ok(_) => Err("the target refused a page".into()),
        Err(_) => {
            cluster.messenger.forget(id);
            Err("a page timed out".into())
        }
    }
}
