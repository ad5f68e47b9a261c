//! Full repair (issue 13's `nodetool repair`): for every token range this node replicates (its
//! primary ranges with `-pr`, cut to `-st`/`-et`), every replica builds a Merkle tree of each
//! table's partitions in the range (`RepairTreeRequest`; a partition's digest hashes its
//! unfiltered form, so equal data gives equal trees whatever order or SSTables it came from),
//! and the trees are compared. Replicas already in sync cost one tree each and stream nothing.
//!
//! Where the trees differ, repair works row by row, as ScyllaDB's row-level repair does
//! (rows.rs): a missed write changes a leaf that holds many partitions that did not change, so
//! moving whole leaves would move mostly data every replica already has. Each replica lists the
//! (token, key, digest) of its partitions in the differing leaves (`RepairDigestsRequest`, the
//! same digest as the tree's), a partition whose digest is not the same on every replica is
//! fetched by key from one holder of each version (`RepairRowsRequest`), and each version is
//! written only to the replicas that do not hold it; the reconcile rules make the result exact
//! (the newest cell, tombstone or TTL wins everywhere). The writes count against this node's
//! outbound stream throttle, and the plan ("Repair") shows in `nodetool netstats` once it moves
//! data.
//!
//! A repair is incremental unless `-full` is given, as in Cassandra 4.0+: the trees and digest
//! lists then cover only the SSTables the session set aside as pending (session.rs), and once
//! every range is in sync they are marked repaired, so the next repair compares only what was
//! written since.
//!
//! Each keyspace's repair is recorded in the repair history (`history.rs`), served as
//! `system_distributed.parent_repair_history` and `repair_history` on every node.

mod cache;
mod compare;
mod history;
mod rows;
mod session;
mod session_wire;

pub use cache::DigestCache;
pub use rows::{serve_digests, serve_rows};
pub use session::{
    cancel as cancel_session, expire_abandoned, release_stale, serve as serve_session,
    serve_session_write, Sessions,
};

use super::bootstrap::{answer_or_refuse, storage_pieces};
use super::ClusterNode;
use crate::node::NodeState;
use crate::topology::RepairOptions;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use helenus_cluster::locator::{NodeId, ReplicationMap, TokenRange};
use helenus_cluster::messaging::{Envelope, Verb};
use helenus_cluster::repair::MerkleTree;
use helenus_cluster::streaming::{StreamOperation, StreamPlan};
use helenus_storage as st;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Leaves per tree: 2^10 of 16 bytes each; a differing leaf is about 1/1024 of a vnode range.
const TREE_DEPTH: u32 = 10;
/// Differing leaves this close are synchronised as one range: listing the digests of the
/// few partitions between them costs less than the round trips of separate ranges (a replica
/// that missed writes spread over the ring differs in most leaves). Measured on bench/ops.sh's
/// repair_missed (10% of rows missed): gaps of 2 leaves took 1.3x the time of 16, a whole
/// range (1024) 1.1x.
const COALESCE_GAP_LEAVES: u64 = 16;
/// How long each attempt at a tree or a page waits; after the last the repair fails (a
/// replica may be gone). The first is short: a lost message is retried soon.
const REPAIR_MESSAGE_TIMEOUTS: [Duration; 2] = [Duration::from_secs(10), Duration::from_secs(60)];

/// Which of a replica's data a repair compares: all of it (a full repair), or the SSTables an
/// incremental repair's session set aside (session.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum View {
    Live,
    Session([u8; 16]),
}

impl View {
    /// The unfiltered read of `q` over this view.
    fn read(
        self,
        engine: &st::Engine,
        table: st::TableId,
        q: &st::ReadQuery,
    ) -> Result<st::UnfilteredResult, String> {
        match self {
            View::Live => engine.read_unfiltered(table, q, u64::MAX),
            View::Session(s) => engine.read_unfiltered_pending(table, s, q, u64::MAX),
        }
        .map_err(|e| e.to_string())
    }

    /// On the wire: `u8 0`, or `u8 1` and the session's id.
    fn encode(self, out: &mut BytesMut) {
        match self {
            View::Live => out.put_u8(0),
            View::Session(s) => {
                out.put_u8(1);
                out.put_slice(&s);
            }
        }
    }

    fn decode(b: &mut Bytes) -> Option<View> {
        match b.remaining().checked_sub(1).map(|_| b.get_u8())? {
            0 => Some(View::Live),
            1 if b.remaining() >= 16 => {
                let mut s = [0u8; 16];
                b.copy_to_slice(&mut s);
                Some(View::Session(s))
            }
            _ => None,
        }
    }
}

/// What a repair compared and moved, as `nodetool repair` reports it.
#[derive(Debug, Default, Clone, Serialize)]
pub struct RepairSummary {
    pub keyspaces: Vec<String>,
    /// (range, table) pairs whose replicas were compared.
    pub ranges_compared: usize,
    /// ... of which the trees differed.
    pub ranges_out_of_sync: usize,
    /// Ranges synchronised row by row: runs of differing leaves.
    pub sub_ranges_repaired: usize,
    /// Partitions whose digests were compared across the replicas in those ranges.
    pub partitions_compared: u64,
    /// ... of which some replica lacked a version another held.
    pub partitions_out_of_sync: u64,
    /// Partitions written to replicas to bring them level (the sum of `partitions_written`).
    pub partitions_streamed: u64,
    /// Partitions written to each replica, by address.
    pub partitions_written: BTreeMap<String, u64>,
    /// Bytes of partitions read from and written to other replicas.
    pub bytes_streamed: u64,
    /// Whether the repair was incremental (compared only unrepaired data), and its session.
    pub incremental: bool,
    pub sessions: Vec<String>,
    pub seconds: f64,
}

/// Starts a repair in the background; its number, for `repair_status`.
pub fn start(cluster: &Arc<ClusterNode>, options: RepairOptions) -> u64 {
    let id = {
        let mut repairs = cluster.repairs.lock();
        let id = repairs.keys().next_back().map_or(1, |last| last + 1);
        repairs.insert(id, serde_json::json!({"state": "running"}));
        id
    };
    let cluster = cluster.clone();
    tokio::spawn(async move {
        let outcome = match run(cluster.clone(), options).await {
            Ok(summary) => {
                tracing::info!(?summary, "repair #{id} completed");
                serde_json::json!({"state": "done", "summary": summary})
            }
            Err(e) => {
                tracing::error!(error = %e, "repair #{id} failed");
                serde_json::json!({"state": "failed", "error": e})
            }
        };
        cluster.repairs.lock().insert(id, outcome);
    });
    id
}

/// Repairs what `options` names; the summary, or why it failed.
pub async fn run(
    cluster: Arc<ClusterNode>,
    options: RepairOptions,
) -> Result<RepairSummary, String> {
    let started = Instant::now();
    let node = cluster.node().ok_or("shutting down")?;
    let schema = node.schema();
    let keyspaces: Vec<_> = match &options.keyspace {
        Some(name) => vec![schema.keyspace(name).map_err(|e| e.to_string())?.clone()],
        None => schema.user_keyspaces().cloned().collect(),
    };
    let plan = node.streams.start_plan(StreamOperation::Repair);
    let outcome = repair_keyspaces(&cluster, &node, &plan, keyspaces, &options).await;
    match &outcome {
        Ok(_) => plan.finish(),
        Err(e) => plan.fail(e),
    }
    let mut summary = outcome?;
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

async fn repair_keyspaces(
    cluster: &ClusterNode,
    node: &NodeState,
    plan: &StreamPlan,
    keyspaces: Vec<Arc<helenus_schema::KeyspaceMeta>>,
    options: &RepairOptions,
) -> Result<RepairSummary, String> {
    let mut summary = RepairSummary::default();
    for keyspace in keyspaces {
        summary.keyspaces.push(keyspace.name.clone());
        let map = cluster.map_for(&keyspace);
        let ranges = ranges_to_repair(&map, cluster.local(), options);
        let tables: Vec<_> = keyspace
            .tables
            .values()
            .filter(|t| options.tables.is_empty() || options.tables.contains(&t.name))
            .collect();
        let names = tables.iter().map(|t| t.name.clone()).collect();
        // Each keyspace's repair is a parent repair in the history, as in Cassandra.
        let mut history =
            history::HistoryLog::start(cluster, node, &keyspace.name, names, &ranges, options);
        let session = match options.incremental {
            true => {
                // A session needs every replica of every range: a replica found down refuses
                // the repair before anything is prepared, recorded as a full repair records it
                // when it reaches that range.
                let down = ranges
                    .iter()
                    .find_map(|r| down_replica(cluster, map.replicas(r.end)).map(|e| (*r, e)));
                let ids = tables.iter().map(|t| *t.id.as_bytes()).collect();
                let id = history.parent_id();
                summary.incremental = true;
                summary.sessions.push(id.to_string());
                let prepared = match down {
                    Some((range, e)) => {
                        let failed = history.start_session(range, map.replicas(range.end));
                        history.end_job(failed, None, Err(&e));
                        Err(e)
                    }
                    None => {
                        session::prepare(cluster, node, id, &keyspace.name, &map, ids, &ranges)
                            .await
                    }
                };
                match prepared {
                    Ok(prepared) => Some(prepared),
                    Err(e) => {
                        history.finish(&Err(e.clone()));
                        return Err(e);
                    }
                }
            }
            false => None,
        };
        let job = KeyspaceJob {
            cluster,
            node,
            plan,
            keyspace: &keyspace.name,
            map: &map,
            tables: &tables,
            view: session
                .as_ref()
                .map_or(View::Live, |s| View::Session(*s.id.as_bytes())),
        };
        let outcome = job.repair(&ranges, &mut summary, &mut history).await;
        if let Some(s) = &session {
            session::finalize(cluster, node, s, outcome.is_ok()).await;
        }
        history.finish(&outcome);
        outcome?;
    }
    Ok(summary)
}

/// One keyspace's repair: its tables over the ranges asked for.
struct KeyspaceJob<'a> {
    cluster: &'a ClusterNode,
    node: &'a NodeState,
    plan: &'a StreamPlan,
    keyspace: &'a str,
    map: &'a ReplicationMap,
    tables: &'a [&'a Arc<helenus_schema::TableMeta>],
    view: View,
}

impl KeyspaceJob<'_> {
    async fn repair(
        &self,
        ranges: &[TokenRange],
        summary: &mut RepairSummary,
        history: &mut history::HistoryLog<'_>,
    ) -> Result<(), String> {
        for &range in ranges {
            let replicas = self.map.replicas(range.end).to_vec();
            let session = history.start_session(range, &replicas);
            if let Some(e) = down_replica(self.cluster, &replicas) {
                history.end_job(session, None, Err(&e));
                return Err(e);
            }
            for table in self.tables {
                let id = *table.id.as_bytes();
                let outcome = self
                    .repair_range(id, range, &replicas, summary)
                    .await
                    .map_err(|e| format!("{}.{} {range:?}: {e}", self.keyspace, table.name));
                history.end_job(
                    session,
                    Some(&table.name),
                    outcome.as_ref().map(|_| ()).map_err(String::as_str),
                );
                outcome?;
            }
        }
        Ok(())
    }
}

/// Cassandra's refusal when one of `replicas` is down.
fn down_replica(cluster: &ClusterNode, replicas: &[NodeId]) -> Option<String> {
    let down = replicas.iter().find(|r| !cluster.is_up(**r))?;
    Some(format!("Endpoint not alive: {}", cluster.address_of(*down)))
}

/// This node's ranges (or primary ranges), each cut to the `-st`/`-et` range when one is given.
fn ranges_to_repair(map: &ReplicationMap, me: NodeId, options: &RepairOptions) -> Vec<TokenRange> {
    let mine = if options.primary_range {
        map.primary_ranges_of(me)
    } else {
        map.ranges_of(me)
    };
    match (options.start, options.end) {
        (Some(start), Some(end)) => {
            let wanted = TokenRange::new(start, end);
            mine.into_iter()
                .filter_map(|r| intersect(r, wanted))
                .collect()
        }
        _ => mine,
    }
}

/// The part of `a` inside `b`, for ranges that do not wrap (`-st`/`-et` cut within one vnode
/// range, as Cassandra requires of subrange repair); `a` whole when `b` covers it.
fn intersect(a: TokenRange, b: TokenRange) -> Option<TokenRange> {
    if a.start >= a.end || b.start >= b.end {
        return (b.start == a.start && b.end == a.end).then_some(a);
    }
    let start = a.start.max(b.start);
    let end = a.end.min(b.end);
    (start < end).then(|| TokenRange::new(start, end))
}

impl KeyspaceJob<'_> {
    async fn repair_range(
        &self,
        table: st::TableId,
        range: TokenRange,
        replicas: &[NodeId],
        summary: &mut RepairSummary,
    ) -> Result<(), String> {
        summary.ranges_compared += 1;
        // Each replica builds its tree at once: the builds read and hash every partition of
        // the range, the longest part of a repair of replicas in sync.
        let (cluster, node, view) = (self.cluster, self.node, self.view);
        let trees = futures::future::try_join_all(
            replicas
                .iter()
                .map(|replica| tree_of(cluster, node, *replica, table, range, view)),
        )
        .await?;
        let Some((first, others)) = trees.split_first() else {
            return Ok(());
        };
        let differing: Vec<TokenRange> = others.iter().flat_map(|t| first.difference(t)).collect();
        if differing.is_empty() {
            return Ok(());
        }
        summary.ranges_out_of_sync += 1;
        let sync = rows::RowSync {
            cluster,
            node,
            plan: self.plan,
            table,
            replicas,
            tree_range: range,
            now_s: node.exec.clock().wall_secs(),
            view,
        };
        for sub in compare::coalesce(range, differing, TREE_DEPTH, COALESCE_GAP_LEAVES) {
            sync.sync(sub, summary).await?;
            summary.sub_ranges_repaired += 1;
        }
        Ok(())
    }
}

/// A replica's tree of `table` over `range`.
async fn tree_of(
    cluster: &ClusterNode,
    node: &NodeState,
    replica: NodeId,
    table: st::TableId,
    range: TokenRange,
    view: View,
) -> Result<MerkleTree, String> {
    if replica == cluster.local() {
        cluster
            .repair_sessions
            .check_view(view, node.exec.clock().wall_ms())?;
        let engine = node.engine.clone();
        let now = node.exec.clock().wall_secs();
        let (tree, digests) =
            super::background::in_background(move || build_tree(&engine, table, range, now, view))
                .await?;
        if let Some(digests) = digests {
            cluster.repair_digests.keep(table, range, view, digests);
        }
        return Ok(tree);
    }
    let reply = ask(
        cluster,
        replica,
        Verb::RepairTreeRequest,
        tree_request(table, range, view),
        &REPAIR_MESSAGE_TIMEOUTS,
    )
    .await?;
    if reply.verb != Verb::RepairTreeResponse {
        return Err(format!("{replica} could not build its tree"));
    }
    MerkleTree::decode(&reply.payload).ok_or_else(|| format!("{replica} sent a malformed tree"))
}

/// Sends a repair message and waits for the answer, asking again once if it is late: every
/// repair message is idempotent, and the first one written to a peer that restarted can be
/// lost in the dead connection before either side notices (the retry goes out on a new one).
async fn ask(
    cluster: &ClusterNode,
    to: NodeId,
    verb: Verb,
    payload: Bytes,
    waits: &[Duration],
) -> Result<Envelope, String> {
    for &wait in waits {
        let (id, answer) = cluster
            .messenger
            .request(to, verb, payload.clone())
            .map_err(|e| e.to_string())?;
        match tokio::time::timeout(wait, answer).await {
            Ok(Ok(reply)) => return Ok(reply),
            Ok(Err(_)) => return Err(format!("{to} did not answer")),
            Err(_) => {
                cluster.messenger.forget(id);
                tracing::warn!(%to, ?verb, "repair message unanswered, asking again");
            }
        }
    }
    Err(format!("{to} timed out"))
}

/// How the trees of this version hash a partition (`visit_digests`), last in a tree request:
/// nodes hashing differently would see every partition differ and stream everything, so a replica
/// refuses a request of another kind (the versions before this byte hashed MD5 and sent none).
const DIGEST_KIND_XXH3: u8 = 1;

fn tree_request(table: st::TableId, range: TokenRange, view: View) -> Bytes {
    let mut out = BytesMut::with_capacity(16 + 16 + 17 + 1);
    out.put_slice(&table);
    out.put_i64(range.start);
    out.put_i64(range.end);
    view.encode(&mut out);
    out.put_u8(DIGEST_KIND_XXH3);
    out.freeze()
}

fn decode_tree_request(mut payload: Bytes) -> Result<(st::TableId, TokenRange, View), String> {
    let malformed = || "malformed tree request".to_string();
    if payload.len() < 33 {
        return Err(malformed());
    }
    let mut table = [0u8; 16];
    payload.copy_to_slice(&mut table);
    let start = payload.get_i64();
    let end = payload.get_i64();
    let view = View::decode(&mut payload).ok_or_else(malformed)?;
    match payload.as_ref() {
        [DIGEST_KIND_XXH3] => Ok((table, TokenRange::new(start, end), view)),
        [] => Err(
            "the repair coordinator runs an older version that hashes partitions \
                   differently: upgrade every node before repairing"
                .to_string(),
        ),
        _ => Err(malformed()),
    }
}

/// Visits the partitions of `table` from `start` to `end` in storage order (token, key) with
/// their digests, one sequential scan, until the range ends or `visit` answers false. A digest
/// is XXH3-128 of the partition's canonical unfiltered form (storage's `scan_digest_bytes`), so
/// equal data gives equal digests whatever SSTables it came from. Replicas compare digests only
/// with each other, so the hash need not be Cassandra's MD5; XXH3 is ten times faster.
fn visit_digests(
    engine: &st::Engine,
    table: st::TableId,
    start: st::PartitionBound,
    end: st::PartitionBound,
    (now_s, view): (i64, View),
    mut visit: impl FnMut(i64, &Bytes, [u8; 16]) -> bool,
) -> Result<(), String> {
    let pending = match view {
        View::Live => None,
        View::Session(s) => Some(s),
    };
    engine
        .scan_digest_bytes(
            table,
            (&start, &end),
            now_s,
            pending,
            &mut |token, key, b| {
                visit(token, key, twox_hash::XxHash3_128::oneshot(b).to_le_bytes())
            },
        )
        .map_err(|e| e.to_string())
}

/// This node's tree of `table` over `range`, and the digests it hashed unless there were too
/// many to keep (cache.rs).
fn build_tree(
    engine: &st::Engine,
    table: st::TableId,
    range: TokenRange,
    now_s: i64,
    view: View,
) -> Result<(MerkleTree, Option<Vec<compare::DigestEntry>>), String> {
    let mut tree = MerkleTree::new(range, TREE_DEPTH);
    let mut digests = Some(Vec::new());
    for (start, end) in storage_pieces(range) {
        visit_digests(
            engine,
            table,
            start,
            end,
            (now_s, view),
            |token, key, digest| {
                tree.add(token, &digest);
                if digests
                    .as_ref()
                    .is_some_and(|d| d.len() >= cache::MAX_ENTRIES)
                {
                    digests = None;
                }
                if let Some(d) = digests.as_mut() {
                    d.push(compare::DigestEntry {
                        token,
                        key: key.clone(),
                        digest,
                    });
                }
                true
            },
        )?;
    }
    Ok((tree, digests))
}

/// The replica's side of `tree_of`.
pub fn serve_tree(cluster: &ClusterNode, node: &NodeState, request: &Envelope) {
    let built = decode_tree_request(request.payload.clone()).and_then(|(table, range, view)| {
        cluster
            .repair_sessions
            .check_view(view, node.exec.clock().wall_ms())?;
        let now = node.exec.clock().wall_secs();
        let (tree, digests) = build_tree(&node.engine, table, range, now, view)?;
        if let Some(digests) = digests {
            cluster.repair_digests.keep(table, range, view, digests);
        }
        Ok(tree)
    });
    let tree = built.map(|tree| Bytes::from(tree.encode()));
    answer_or_refuse(
        cluster,
        request,
        Verb::RepairTreeResponse,
        tree,
        "repair tree not built",
    );
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn a_subrange_cuts_the_ranges_it_overlaps() {
        let r = TokenRange::new(0, 100);
        assert_eq!(
            intersect(r, TokenRange::new(50, 200)),
            Some(TokenRange::new(50, 100))
        );
        assert_eq!(intersect(r, TokenRange::new(100, 200)), None);
        assert_eq!(
            intersect(r, TokenRange::new(-10, 10)),
            Some(TokenRange::new(0, 10))
        );
    }

    #[test]
    fn tree_requests_round_trip_and_bad_ones_are_refused() {
        let request = tree_request([3; 16], TokenRange::new(-7, 9), View::Live);
        assert_eq!(
            decode_tree_request(request.clone()),
            Ok(([3; 16], TokenRange::new(-7, 9), View::Live))
        );
        assert!(decode_tree_request(request.slice(1..)).is_err());
        let session = View::Session([8; 16]);
        let request = tree_request([3; 16], TokenRange::new(-7, 9), session);
        assert_eq!(
            decode_tree_request(request.clone()),
            Ok(([3; 16], TokenRange::new(-7, 9), session))
        );
        assert!(decode_tree_request(request.slice(..request.len() - 2)).is_err());
        // An older coordinator's request (no digest kind) is refused, saying why.
        let older = decode_tree_request(request.slice(..request.len() - 1));
        assert!(older.is_err_and(|e| e.contains("older version")));
        let mut other_kind = request.to_vec();
        if let Some(kind) = other_kind.last_mut() {
            *kind = 7;
        }
        assert!(decode_tree_request(Bytes::from(other_kind)).is_err());
    }
}
