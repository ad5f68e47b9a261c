//! `nodetool removenode HOSTID` (issue 13): takes a dead node out of the ring when it cannot
//! decommission itself. The node this runs on (the coordinator) marks the dead node `removing`
//! on its behalf in gossip: it still owns its ranges, and the nodes that will replicate them
//! instead are pending, so writes made during the removal reach them. For every range the dead
//! node replicated, each gaining node then receives the range from a surviving replica
//! (`restore_moves`). Finally the dead node is marked `removed`: every peer drops it from the
//! ring, from `nodetool status` and `system.peers`, and ignores it if it ever comes back.
//!
//! Cassandra has each gaining node pull its ranges and confirm; here the coordinator drives
//! every copy. The gaining node first pulls from the source the SSTables lying wholly inside
//! the range, as their files (whole_push.rs, asked by the coordinator); the coordinator then
//! copies the rest page by page, pulling from the source with those SSTables left out and
//! pushing to the gaining node (either may be itself), with the same unfiltered pages as
//! bootstrap and decommission. `removenode
//! force` ends a removal that cannot finish (a gaining node down) by marking the node removed
//! at once; what was not copied is then repair's to restore. The pages this node sends count
//! against its outbound stream throttle, and the plan ("Restore replica count") shows in
//! `nodetool netstats`.

use super::bootstrap::{
    after_last, page_query, storage_pieces, StreamFile, StreamTotals, JOIN_SETTLE,
};
use super::sstable_stream::page_request;
use super::streams::{file_name, ip_of};
use super::whole_push::push_whole;
use super::ClusterNode;
use crate::node::NodeState;
use helenus_cluster::gossip::status;
use helenus_cluster::locator::{restore_moves, NodeId};
use helenus_cluster::messaging::Verb;
use helenus_cluster::streaming::{Direction, StreamOperation, StreamPlan, StreamTag};
use helenus_storage as st;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A page not answered in this long fails the removal (the dead node stays `removing`).
const PAGE_TIMEOUT: Duration = Duration::from_secs(30);

/// The removal this node coordinates, and how the last one ended.
#[derive(Debug, Default)]
pub(super) struct Removal {
    running: Option<Running>,
    failed: Option<String>,
}

impl Removal {
    /// Whether this node coordinates a removal now.
    pub(super) fn is_running(&self) -> bool {
        self.running.is_some()
    }
}

#[derive(Debug)]
struct Running {
    node: NodeId,
    tokens: usize,
    /// Gaining nodes whose ranges are still being copied.
    waiting: Vec<NodeId>,
}

/// Checks that `host_id` names a dead ring member (Cassandra's refusals and messages), marks
/// it `removing` and starts restoring its ranges in the background. `force` instead ends the
/// removal under way by marking its node removed now.
pub(super) fn start(cluster: &Arc<ClusterNode>, host_id: &str, force: bool) -> Result<(), String> {
    if force {
        return force_removal(cluster);
    }
    let uuid = uuid::Uuid::parse_str(host_id.trim())
        .map_err(|_| format!("Invalid UUID string: {host_id}"))?;
    let dead = NodeId(uuid);
    if dead == cluster.local() {
        return Err("Cannot remove self".into());
    }
    let peer = cluster
        .service
        .peers()
        .into_iter()
        .find(|p| p.host_id == dead && !status::is_gone(&p.status))
        .ok_or("Host ID not found.")?;
    let tokens = cluster.service.ring().tokens_of(dead);
    if tokens.is_empty() {
        return Err("Node to be removed is not a member of the token ring".into());
    }
    if cluster.service.is_alive(dead) {
        return Err(format!(
            "Node {} is alive and owns this ID. Use decommission command to remove it from the ring",
            peer.address.map_or_else(|| dead.to_string(), |a| format!("/{a}"))
        ));
    }
    if cluster.removal.lock().running.is_some() {
        return Err("This node is already processing a removal. Wait for it to complete, or use 'removenode force' if this has failed.".into());
    }
    // The node a removal continues with (already `removing`) is no other change.
    super::moves::refuse_if_moving(cluster, "removenode", true, Some(dead))?;
    super::topology_claim::take_blocking(cluster, "removenode")?;
    {
        let mut removal = cluster.removal.lock();
        if removal.running.is_some() {
            super::topology_claim::release(cluster);
            return Err("This node is already processing a removal. Wait for it to complete, or use 'removenode force' if this has failed.".into());
        }
        if peer.status == status::REMOVING {
            tracing::warn!(%dead, "Node is already being removed, continuing removal anyway");
        }
        *removal = Removal {
            running: Some(Running {
                node: dead,
                tokens: tokens.len(),
                waiting: Vec::new(),
            }),
            failed: None,
        };
    }
    cluster.service.mark_removing(dead);
    tokio::spawn(run(cluster.clone(), dead));
    Ok(())
}

fn force_removal(cluster: &ClusterNode) -> Result<(), String> {
    let running = cluster.removal.lock().running.take();
    match running {
        Some(r) => {
            tracing::warn!(node = %r.node, "removal forced: the node is removed without waiting for its ranges");
            cluster.service.mark_removed(r.node);
            Ok(())
        }
        None => Err("No removal in progress to force (call 'removenode HOSTID' first)".into()),
    }
}

/// `nodetool removenode status`, in Cassandra's words; a failure is told once.
pub(super) fn status(cluster: &ClusterNode) -> String {
    let mut removal = cluster.removal.lock();
    let failed = removal.failed.take();
    match (&removal.running, failed) {
        (Some(r), _) => {
            let waiting: Vec<String> = r.waiting.iter().map(|n| cluster.address_of(*n)).collect();
            format!(
                "RemovalStatus: Removing {} tokens of {} ({}). Waiting for replication confirmation from [{}].",
                r.tokens,
                r.node,
                cluster.address_of(r.node),
                waiting.join(",")
            )
        }
        (None, Some(failed)) => format!("RemovalStatus: Failed: {failed}"),
        (None, None) => "RemovalStatus: No removals in process.".into(),
    }
}

async fn run(cluster: Arc<ClusterNode>, dead: NodeId) {
    let started = Instant::now();
    // Gossip tells every coordinator that the gaining nodes are pending before a range is
    // read: anything written after the read reaches them directly.
    tokio::time::sleep(JOIN_SETTLE).await;
    let outcome = restore_all(&cluster, dead).await;
    super::topology_claim::release(&cluster);
    let mut removal = cluster.removal.lock();
    if removal.running.as_ref().map(|r| r.node) != Some(dead) {
        return; // forced meanwhile
    }
    removal.running = None;
    match outcome {
        Ok(totals) => {
            totals.log(
                started,
                "removenode restored every range; the node is removed",
            );
            cluster.service.mark_removed(dead);
        }
        Err(e) => {
            tracing::error!(error = %e, %dead, "removenode failed: the node stays 'removing'");
            removal.failed = Some(e);
        }
    }
}

async fn restore_all(cluster: &ClusterNode, dead: NodeId) -> Result<StreamTotals, String> {
    let node = cluster.node().ok_or("shutting down")?;
    let plan = node
        .streams
        .start_plan(StreamOperation::RestoreReplicaCount);
    let outcome = restore_with(cluster, &node, &plan, dead).await;
    match &outcome {
        Ok(_) => plan.finish(),
        Err(e) => plan.fail(e),
    }
    outcome
}

async fn restore_with(
    cluster: &ClusterNode,
    node: &NodeState,
    plan: &StreamPlan,
    dead: NodeId,
) -> Result<StreamTotals, String> {
    let mut totals = StreamTotals::default();
    let mut plans = Vec::new();
    let schema = node.schema();
    for keyspace in schema.user_keyspaces() {
        let before = cluster.map_for(keyspace);
        let restores = restore_moves(&before, dead, None).map_err(|e| e.to_string())?;
        plans.push((keyspace, restores));
    }
    let mut waiting: Vec<NodeId> = plans
        .iter()
        .flat_map(|(_, rs)| rs.iter().map(|r| r.gaining))
        .collect();
    waiting.sort();
    waiting.dedup();
    set_waiting(cluster, dead, waiting)?;
    for (keyspace, restores) in plans {
        for r in restores {
            if !cluster.is_up(r.gaining) {
                return Err(format!(
                    "{} gains {:?} of {} but is down",
                    cluster.address_of(r.gaining),
                    r.range,
                    keyspace.name
                ));
            }
            let sources: Vec<NodeId> = r
                .sources
                .into_iter()
                .filter(|s| cluster.is_up(*s))
                .collect();
            for table in keyspace.tables.values() {
                let file = StreamFile {
                    keyspace: keyspace.name.clone(),
                    name: file_name(&keyspace.name, &table.name, r.range),
                    table: *table.id.as_bytes(),
                    range: r.range,
                };
                let copied = copy_range(cluster, node, plan, &file, &sources, r.gaining)
                    .await
                    .map_err(|e| format!("{}.{}: {e}", keyspace.name, table.name))?;
                totals.partitions += copied.partitions;
                totals.bytes += copied.bytes;
                totals.whole_sstables += copied.whole_sstables;
            }
            totals.ranges += 1;
        }
    }
    Ok(totals)
}

/// Records who still has ranges to receive; fails when the removal was forced meanwhile.
fn set_waiting(cluster: &ClusterNode, dead: NodeId, waiting: Vec<NodeId>) -> Result<(), String> {
    let mut removal = cluster.removal.lock();
    match removal.running.as_mut() {
        Some(r) if r.node == dead => {
            r.waiting = waiting;
            Ok(())
        }
        _ => Err("the removal was forced".into()),
    }
}

/// Copies one table's range to `target` from the first source that serves every page.
async fn copy_range(
    cluster: &ClusterNode,
    node: &NodeState,
    plan: &StreamPlan,
    file: &StreamFile,
    sources: &[NodeId],
    target: NodeId,
) -> Result<StreamTotals, String> {
    let mut last_error = "no live replica holds the range".to_string();
    for source in sources {
        match copy_from(cluster, node, plan, file, *source, target).await {
            Ok(t) => return Ok(t),
            Err(e) => {
                tracing::warn!(%source, error = %e, "removenode source failed, trying the next");
                last_error = format!("from {source}: {e}");
            }
        }
    }
    Err(last_error)
}

/// The SSTables wholly inside the range go first, as files the target pulls from `source`; the
/// pages copied after them leave those out.
async fn copy_from(
    cluster: &ClusterNode,
    node: &NodeState,
    plan: &StreamPlan,
    file: &StreamFile,
    source: NodeId,
    target: NodeId,
) -> Result<StreamTotals, String> {
    let whole = push_whole(cluster, node, plan, file, source, target).await;
    let to = ip_of(cluster, target);
    let sends = target != cluster.local();
    if sends {
        plan.expect(to, Direction::Sending, 1);
        plan.file_started(to, Direction::Sending, file.name.clone());
    }
    let mut totals = StreamTotals {
        bytes: whole.bytes,
        whole_sstables: whole.files,
        ..StreamTotals::default()
    };
    for (mut start, end) in storage_pieces(file.range) {
        loop {
            let query = page_query(start.clone(), end.clone(), node.exec.clock().wall_secs());
            let page = fetch_page(
                cluster,
                node,
                plan,
                file.table,
                query,
                source,
                &whole.excluded,
            )
            .await?;
            let Some(next) = after_last(&page) else {
                break;
            };
            start = next;
            totals.partitions += page.len() as u64;
            let bytes = deliver_page(cluster, node, page, target).await?;
            totals.bytes += bytes;
            if sends {
                plan.transferred(to, Direction::Sending, bytes);
            }
        }
    }
    if sends {
        plan.file_done(to, Direction::Sending);
    }
    Ok(totals)
}

/// One page of a range from `source`, leaving out its generations `excluded` (sent whole):
/// this node's storage, or a peer's (`StreamRequest`, or `StreamRequestExcluding`).
async fn fetch_page(
    cluster: &ClusterNode,
    node: &NodeState,
    plan: &StreamPlan,
    table: st::TableId,
    query: st::ReadQuery,
    source: NodeId,
    excluded: &[u64],
) -> Result<Vec<st::Mutation>, String> {
    if source == cluster.local() {
        let engine = node.engine.clone();
        let excluded = excluded.to_vec();
        let page = tokio::task::spawn_blocking(move || {
            engine.read_unfiltered_excluding(table, &query, u64::MAX, &excluded)
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
        return Ok(page.partitions);
    }
    // The source counts what it serves; files are this node's to count.
    let tag = StreamTag {
        plan_id: plan.id(),
        operation: plan.operation(),
        files_total: 0,
        file_index: 0,
    };
    let (verb, payload) = page_request(&tag, table, &query, excluded);
    let reply = ask(cluster, source, verb, payload, Verb::StreamResponse).await?;
    helenus_mutation::decode_mutations(reply).map_err(|e| format!("undecodable page: {e}"))
}

/// Applies a page on `target`: here, or as ordinary mutations sent to it. Returns its size.
async fn deliver_page(
    cluster: &ClusterNode,
    node: &NodeState,
    page: Vec<st::Mutation>,
    target: NodeId,
) -> Result<u64, String> {
    let payload = helenus_mutation::encode_mutations(&page);
    let bytes = payload.len() as u64;
    if target == cluster.local() {
        crate::proxy::apply_locally(&node.engine, page)
            .await
            .map_err(|e| format!("applying a page: {e}"))?;
    } else {
        node.streams.throttle().acquire(bytes).await;
        ask(
            cluster,
            target,
            Verb::MutationRequest,
            payload,
            Verb::MutationResponse,
        )
        .await?;
    }
    Ok(bytes)
}

async fn ask(
    cluster: &ClusterNode,
    to: NodeId,
    verb: Verb,
    payload: bytes::Bytes,
    expected: Verb,
) -> Result<bytes::Bytes, String> {
    let (id, answer) = cluster
        .messenger
        .request(to, verb, payload)
        .map_err(|e| e.to_string())?;
    match tokio::time::timeout(PAGE_TIMEOUT, answer).await {
        Ok(Ok(r)) if r.verb == expected => Ok(r.payload),
        Ok(_) => Err(format!("{to} refused a page")),
        Err(_) => {
            cluster.messenger.forget(id);
            Err(format!("a page to {to} timed out"))
        }
    }
}
