//! `nodetool rebuild [SOURCE_DC]` (issue 13): a node receives, for every keyspace spread over
//! the ring, each range it replicates, from a live replica in SOURCE_DC (any other live
//! replica when none is named). It is how a new data center gets its data: its nodes join with
//! the keyspaces not yet replicated to it (nothing to stream), the keyspaces are then altered
//! to give it replicas, and each of its nodes is rebuilt from an existing data center.
//!
//! The ranges stream as a bootstrap's do (`bootstrap::stream_range`: unfiltered partition
//! pages, applied as writes, throttled by the sources), under a "Rebuild" plan in `nodetool
//! netstats`. The node stays NORMAL and serves meanwhile, as Cassandra's does; writes made
//! during the rebuild reach it as they reach any replica.
//!
//! Each (keyspace, range) received whole is recorded (`rebuilt_ranges.json`, synced), as
//! Cassandra records them in `available_ranges_v2`: a rebuild that failed, or whose node was
//! killed, run again streams only the ranges still missing. Once a rebuild completes the
//! record is cleared, so a later rebuild streams everything again (Cassandra keeps its record
//! and skips those ranges until it is truncated).

use super::bootstrap::{add_range_files, stream_recording, SourcedFile, StreamTotals};
use super::{strategy_of, ClusterNode};
use crate::available_ranges::{AvailableRanges, REBUILT};
use crate::node::NodeState;
use helenus_cluster::locator::{NodeId, ReplicationMap, ReplicationStrategy, TokenRange};
use helenus_cluster::streaming::{StreamOperation, StreamPlan};
use std::sync::Arc;
use std::time::Instant;

/// The rebuild of this node: whether one runs, and how the last one ended.
#[derive(Debug, Default)]
pub(super) struct Rebuild {
    running: bool,
    /// The last rebuild's outcome: what it streamed, or why it failed.
    last: Option<Result<String, String>>,
}

impl Rebuild {
    pub(super) fn is_running(&self) -> bool {
        self.running
    }
}

/// Checks the source data center and that no topology change is under way, then starts the
/// rebuild in the background (`status` follows it).
/// What `nodetool rebuild` asks for: where to stream from, and which keyspaces (none: all).
pub(super) struct Request {
    pub source_dc: Option<String>,
    pub keyspaces: Vec<String>,
}

pub(super) fn start(cluster: &Arc<ClusterNode>, request: Request) -> Result<(), String> {
    if let Some(dc) = &request.source_dc {
        check_datacenter(cluster, dc)?;
    }
    check_keyspaces(cluster, &request.keyspaces)?;
    if cluster.rebuild.lock().running {
        return Err("Node is still rebuilding. Check nodetool netstats.".into());
    }
    super::moves::refuse_if_moving(cluster, "rebuild", true, None)?;
    super::topology_claim::refuse_if_claimed(cluster, "rebuild")?;
    {
        let mut state = cluster.rebuild.lock();
        if state.running {
            return Err("Node is still rebuilding. Check nodetool netstats.".into());
        }
        *state = Rebuild {
            running: true,
            last: None,
        };
    }
    tokio::spawn(run(cluster.clone(), request));
    Ok(())
}

/// Cassandra's refusal of a data center the ring does not have.
/// Every keyspace named must exist, as Cassandra's rebuild opens each before streaming.
fn check_keyspaces(cluster: &ClusterNode, keyspaces: &[String]) -> Result<(), String> {
    let Some(node) = cluster.node() else {
        return Err("shutting down".into());
    };
    let schema = node.schema();
    let known: Vec<&str> = schema.user_keyspaces().map(|k| k.name.as_str()).collect();
    match keyspaces.iter().find(|k| !known.contains(&k.as_str())) {
        Some(unknown) => Err(format!("Unknown keyspace {unknown}")),
        None => Ok(()),
    }
}

fn check_datacenter(cluster: &ClusterNode, dc: &str) -> Result<(), String> {
    let dcs = cluster.service.ring().datacenters();
    if dcs.contains_key(dc) {
        return Ok(());
    }
    let names: Vec<&str> = dcs.keys().map(String::as_str).collect();
    Err(format!(
        "Provided datacenter '{dc}' is not a valid datacenter, available datacenters are: {}",
        names.join(",")
    ))
}

/// `{"state": "running" | "done" | "failed" | "none", "message": ...}` for `nodetool rebuild`
/// to poll.
pub(super) fn status(cluster: &ClusterNode) -> serde_json::Value {
    let state = cluster.rebuild.lock();
    match (&state.running, &state.last) {
        (true, _) => serde_json::json!({"state": "running"}),
        (false, Some(Ok(m))) => serde_json::json!({"state": "done", "message": m}),
        (false, Some(Err(e))) => serde_json::json!({"state": "failed", "message": e}),
        (false, None) => serde_json::json!({"state": "none"}),
    }
}

async fn run(cluster: Arc<ClusterNode>, request: Request) {
    let started = Instant::now();
    let outcome = stream_all(&cluster, &request).await;
    let mut state = cluster.rebuild.lock();
    state.running = false;
    state.last = Some(match outcome {
        Ok(totals) => {
            totals.log(started, "rebuild streamed every range");
            Ok(format!(
                "rebuilt {} ranges ({} received before): {} partitions, {} bytes",
                totals.ranges, totals.skipped, totals.partitions, totals.bytes
            ))
        }
        Err(e) => {
            tracing::error!(error = %e, "rebuild failed; run it again to resume");
            Err(e)
        }
    });
}

async fn stream_all(cluster: &ClusterNode, request: &Request) -> Result<StreamTotals, String> {
    let node = cluster.node().ok_or("shutting down")?;
    let plan = node.streams.start_plan(StreamOperation::Rebuild);
    let system_dir = node.config.primary_data_dir().join("system");
    let mut received = AvailableRanges::load_file(&system_dir, REBUILT);
    let planned = plan_files(cluster, &node, &plan, request, &received);
    let (files, ranges, skipped) = match planned {
        Ok(p) => p,
        Err(e) => {
            plan.fail(&e);
            return Err(e);
        }
    };
    let counts = (ranges, skipped);
    let totals = stream_recording(
        cluster,
        &node,
        plan,
        &files,
        counts,
        &mut received,
        ("rebuild", false),
    )
    .await?;
    if let Err(e) = AvailableRanges::clear_file(&system_dir, REBUILT) {
        tracing::warn!(error = %e, "the rebuilt ranges could not be cleared");
    }
    Ok(totals)
}

/// Files to receive: every table of every range this node replicates, each with the replicas
/// to read it from, best first; and the number of ranges. Every file is listed in the plan
/// first, so netstats shows the totals from the start.
fn plan_files(
    cluster: &ClusterNode,
    node: &NodeState,
    plan: &StreamPlan,
    request: &Request,
    received: &AvailableRanges,
) -> Result<(Vec<SourcedFile>, usize, usize), String> {
    let me = cluster.local();
    let source_dc = request.source_dc.as_deref();
    let mut files = Vec::new();
    let (mut ranges, mut skipped) = (0, 0);
    for keyspace in node.schema().user_keyspaces() {
        if matches!(strategy_of(keyspace), ReplicationStrategy::Local) {
            continue; // every node's own
        }
        if !request.keyspaces.is_empty() && !request.keyspaces.contains(&keyspace.name) {
            continue;
        }
        let map = cluster.map_for(keyspace);
        if let Some(dc) = source_dc {
            // Nothing of it lives there: nothing to rebuild from that data center.
            if map.strategy().replication_factor_in(map.ring(), dc) == 0 {
                tracing::info!(keyspace = %keyspace.name, dc, "rebuild skips a keyspace the source data center does not replicate");
                continue;
            }
        }
        for range in map.ranges_of(me) {
            if received.contains(&keyspace.name, range.start, range.end) {
                skipped += 1;
                continue;
            }
            let sources = sources_of(cluster, node, &map, range, source_dc);
            if sources.is_empty() {
                return Err(format!(
                    "unable to find sufficient sources for streaming range {range:?} in keyspace {}",
                    keyspace.name
                ));
            }
            add_range_files(cluster, plan, keyspace, range, &sources, &mut files);
            ranges += 1;
        }
    }
    Ok((files, ranges, skipped))
}

/// The live replicas of `range` other than this node, in `source_dc` if one is named; with
/// none named, those in this node's data center first (the nearest copy).
fn sources_of(
    cluster: &ClusterNode,
    node: &NodeState,
    map: &ReplicationMap,
    range: TokenRange,
    source_dc: Option<&str>,
) -> Vec<NodeId> {
    let ring = map.ring();
    let dc_of = |id: &NodeId| ring.member(*id).map(|m| m.location.datacenter.clone());
    let mut sources: Vec<NodeId> = map
        .replicas(range.end)
        .iter()
        .filter(|r| **r != cluster.local() && cluster.service.is_alive(**r))
        .filter(|r| source_dc.is_none_or(|dc| dc_of(r).as_deref() == Some(dc)))
        .copied()
        .collect();
    let local_dc = &node.config.data_center;
    sources.sort_by_key(|r| dc_of(r).as_ref() != Some(local_dc));
    sources
}
