//! Joining a ring that holds data (issue 13's bootstrap): a new node that is not a seed takes
//! tokens balanced for the ring, announces them as JOINING (Cassandra's BOOT), and only becomes
//! an owner (NORMAL) once it has received every range it gains, so no read it serves finds a
//! range it owns empty. While it streams, coordinators send it the writes of those ranges too
//! (pending replicas, `ClusterNode::pending_replicas`), so nothing written during the join is
//! missing at the end. A node whose bootstrap stopped half way (`bootstrapped: false` in
//! local.json) streams again on restart, skipping the ranges it recorded as received
//! (`available_ranges.rs`, Cassandra's `system.available_ranges_v2`); replaying what it already
//! holds would be harmless (the reconcile rules keep the newest of equal data), only slow.
//!
//! A replacement (replace.rs) streams the same way, the ranges of the dead node it replaces,
//! from the surviving replicas (`restore_moves`), never from the dead node.
//!
//! Streaming here sends partitions: the source reads each gained range unfiltered (tombstones,
//! timestamps and TTLs kept) in pages of whole partitions (`StreamRequest`), and the joining
//! node applies them as writes. The sources throttle the pages they send (`streams.rs`), and
//! the plan shows in `nodetool netstats` on both sides while it runs. A bootstrap that fails
//! (no live source left for a range) is reported there, in the mode and in the log, and the
//! node stays JOINING, owning nothing: `nodetool bootstrap resume` (resume.rs) or a restart
//! streams the ranges not yet received, then makes it NORMAL. Before a range's pages, the
//! SSTables wholly inside it are sent as their files (sstable_stream.rs), and the pages leave
//! them out.

use super::streams::{file_name, ip_of, tag_for};
use super::{ClusterNode, GOSSIP_INTERVAL};
use crate::available_ranges::AvailableRanges;
use crate::node::NodeState;
use bytes::Bytes;
use helenus_cluster::locator::{
    range_moves, restore_moves, Location, Member, NodeId, ReplicationMap, Token, TokenRange,
};
use helenus_cluster::messaging::{Envelope, Verb};
use helenus_cluster::streaming::{Direction, StreamOperation, StreamPlan};
use helenus_storage as st;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Partitions per stream page: whole partitions, so a page's size follows the data.
pub(super) const STREAM_PAGE_PARTITIONS: usize = 128;
/// A stream page not answered in this long fails the attempt (the source may be gone).
pub(super) const STREAM_PAGE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long gossip is given to tell every peer that this node is joining before the first
/// range is read: writes coordinated by a peer that knows reach this node, and everything
/// older is in the sources' data when it is read. The node announces itself only once it has
/// the ring's schema: a pending replica that refused writes for tables it does not know yet
/// would fail QUORUM writes whenever another replica is down (as during a replacement).
pub(super) const JOIN_SETTLE: Duration = Duration::from_secs(3);
/// How long the joining node waits for the ring's schema before giving up.
const SCHEMA_WAIT: Duration = Duration::from_secs(60);

/// What a bootstrap or decommission moved, for the log.
#[derive(Debug, Default, Clone, Copy)]
pub struct StreamTotals {
    pub ranges: usize,
    pub partitions: u64,
    pub bytes: u64,
    /// SSTables received or sent as their files (their bytes are in `bytes`).
    pub whole_sstables: u64,
    /// Ranges a resumed bootstrap did not stream: received before it failed.
    pub skipped: usize,
}

impl StreamTotals {
    /// Counts what `other` moved in (not its ranges: the caller knows those).
    fn add_moved(&mut self, other: &StreamTotals) {
        self.partitions += other.partitions;
        self.bytes += other.bytes;
        self.whole_sstables += other.whole_sstables;
    }

    pub(super) fn log(&self, started: Instant, what: &str) {
        tracing::info!(
            ranges = self.ranges,
            skipped = self.skipped,
            partitions = self.partitions,
            bytes = self.bytes,
            whole_sstables = self.whole_sstables,
            seconds = started.elapsed().as_secs_f64(),
            "{what}"
        );
    }
}

/// Where the page after `page` starts: just after its last partition (`None`: the range is
/// done). Pages of a range are read this way by bootstrap, decommission and repair.
pub(super) fn after_last(page: &[st::Mutation]) -> Option<st::PartitionBound> {
    page.last().map(|last| st::PartitionBound::Key {
        token: last.token,
        key: last.key.clone(),
        inclusive: false,
    })
}

/// Streams every range this node gains with `tokens` from the current replicas (those of the
/// dead node it is `replacing`, if it replaces one), then makes it an owner. Runs once the node
/// is open; on failure the node stays JOINING and says why (`nodetool bootstrap resume` or a
/// restart resumes).
pub async fn run(cluster: Arc<ClusterNode>, tokens: Vec<Token>, replacing: Option<NodeId>) {
    let started = Instant::now();
    match stream_all(&cluster, &tokens, replacing).await {
        Ok(totals) => {
            totals.log(
                started,
                "bootstrap streamed every gained range; joining the ring as NORMAL",
            );
            if let Err(e) = super::identity::mark_bootstrapped(&cluster) {
                tracing::error!(error = %e, "bootstrap done but local.json not updated");
            }
            if let Some(node) = cluster.node() {
                // The received ranges are now simply this node's own.
                let system_dir = node.config.primary_data_dir().join("system");
                if let Err(e) = crate::available_ranges::AvailableRanges::clear(&system_dir) {
                    tracing::warn!(error = %e, "the received ranges could not be cleared");
                }
            }
            match replacing {
                Some(dead) => super::replace::finish(&cluster, &tokens, dead),
                None => cluster.service.announce_normal(&tokens),
            }
            *cluster.mode.lock() = "NORMAL".into();
            super::resume::finished(&cluster, Ok(totals));
        }
        Err(e) => super::resume::finished(&cluster, Err(e)),
    }
    // Once NORMAL is announced: until then gossip shows the join to any other change.
    super::topology_claim::release(&cluster);
}

/// The ranges this node gains in `keyspace`'s map `before` (the current ring), each with the
/// replicas to stream it from, best first.
fn gained_ranges(
    cluster: &ClusterNode,
    before: &ReplicationMap,
    me: &Member,
    tokens: &[Token],
    replacing: Option<NodeId>,
) -> Result<Vec<(TokenRange, Vec<NodeId>)>, String> {
    let clash = |e| format!("tokens clash with the ring: {e}");
    if let Some(dead) = replacing {
        let restores =
            restore_moves(before, dead, Some((me.clone(), tokens.to_vec()))).map_err(clash)?;
        let mut gained: Vec<_> = restores
            .into_iter()
            .filter(|r| r.gaining == me.id)
            .map(|r| {
                let live = r
                    .sources
                    .into_iter()
                    .filter(|s| cluster.service.is_alive(*s))
                    .collect();
                (r.range, live)
            })
            .collect();
        balance_sources(&mut gained);
        return Ok(gained);
    }
    let after_ring = before
        .ring()
        .with_member(me.clone(), tokens.to_vec())
        .map_err(clash)?;
    let after = ReplicationMap::new(
        Arc::new(after_ring),
        before.strategy().clone(),
        cluster.local(),
    );
    Ok(range_moves(before, &after)
        .into_iter()
        .filter(|m| m.gaining.contains(&me.id))
        .map(|m| (m.range, stream_sources(cluster, before, &m, me.id)))
        .collect())
}

/// Puts first, for each range, the source that evens out what each source sends (ranges weighed
/// by their width: tokens spread data evenly), the others kept behind it as fallbacks. Any live
/// replica may serve a replacement, and each source's outbound throttle bounds its part, so the
/// busiest source sets the time: replica order alone gave one of two sources twice the other's
/// share (bench/ops.sh replace at 2M rows: 709 MB in 28.7 s from one, 353 MB in 14.4 s from the
/// other).
fn balance_sources(ranges: &mut [(TokenRange, Vec<NodeId>)]) {
    let mut load: HashMap<NodeId, u128> = HashMap::new();
    let mut widest_first: Vec<usize> = (0..ranges.len()).collect();
    widest_first.sort_by_key(|&i| std::cmp::Reverse(ranges.get(i).map_or(0, |r| r.0.width())));
    for i in widest_first {
        let Some((range, sources)) = ranges.get_mut(i) else {
            continue;
        };
        let least = sources
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| load.get(s).copied().unwrap_or(0))
            .map(|(j, _)| j);
        if let Some(head) = least.and_then(|j| sources.get_mut(..=j)) {
            head.rotate_right(1);
        }
        if let Some(first) = sources.first() {
            *load.entry(*first).or_default() += range.width();
        }
    }
}

async fn stream_all(
    cluster: &Arc<ClusterNode>,
    tokens: &[Token],
    replacing: Option<NodeId>,
) -> Result<StreamTotals, String> {
    let node = cluster.node().ok_or("shutting down")?;
    wait_for_schema(cluster, &node).await?;
    let what = if replacing.is_some() {
        "replace"
    } else {
        "bootstrap"
    };
    let allowed = match super::moves::refuse_if_moving(cluster, what, false, None) {
        Ok(()) => super::topology_claim::take(cluster, &node, what).await,
        Err(e) => Err(e),
    };
    if let Err(e) = allowed {
        // As Cassandra's node fails to start: it stops before announcing anything, and a
        // restart once the ring is quiet joins (local.json still says not bootstrapped).
        tracing::error!("{e}");
        node.request_stop();
        return Err(e);
    }
    match replacing {
        Some(dead) => cluster.service.announce_replacing(tokens, dead),
        None => cluster.service.announce_joining(tokens),
    }
    tokio::time::sleep(JOIN_SETTLE.max(2 * GOSSIP_INTERVAL)).await;
    let me = Member {
        id: cluster.local(),
        address: node.config.listen_address,
        location: Location::new(node.config.data_center.clone(), node.config.rack.clone()),
    };
    let schema = node.schema();
    // Every file (a table's gained range) is listed first, so netstats shows the totals from
    // the start, each expected from its first source.
    let plan = node.streams.start_plan(StreamOperation::Bootstrap);
    let mut received = AvailableRanges::load(&node.config.primary_data_dir().join("system"));
    let mut files = Vec::new();
    let (mut ranges, mut skipped) = (0, 0);
    // System keyspaces are each node's own (or computed); user keyspaces hold the ring's data.
    for keyspace in schema.user_keyspaces() {
        let before = cluster.map_for(keyspace);
        for (range, sources) in gained_ranges(cluster, &before, &me, tokens, replacing)? {
            if received.contains(&keyspace.name, range.start, range.end) {
                skipped += 1;
                continue;
            }
            add_range_files(cluster, &plan, keyspace, range, &sources, &mut files);
            ranges += 1;
        }
    }
    let counts = (ranges, skipped);
    stream_recording(
        cluster,
        &node,
        plan,
        &files,
        counts,
        &mut received,
        ("bootstrap", replacing.is_some()),
    )
    .await
}

/// `stream_files` for an operation that resumes (`what`: bootstrap, rebuild): each range is
/// recorded in `received` once it has arrived whole, and `skipped` ranges recorded before
/// were left out of `files`.
pub(super) async fn stream_recording(
    cluster: &ClusterNode,
    node: &NodeState,
    plan: StreamPlan,
    files: &[SourcedFile],
    (ranges, skipped): (usize, usize),
    received: &mut AvailableRanges,
    (what, shared): (&str, bool),
) -> Result<StreamTotals, String> {
    if skipped > 0 {
        tracing::info!(
            skipped,
            remaining = ranges,
            "resuming {what}: the ranges received before are not streamed again"
        );
    }
    let mut record = |file: &StreamFile| {
        // Not recorded is only streamed again on a resume: the operation goes on.
        if let Err(e) = received.add(&file.keyspace, file.range.start, file.range.end) {
            tracing::warn!(error = %e, range = %file.name, "a received range not recorded");
        }
    };
    let mut totals =
        stream_files(cluster, node, plan, (files, shared), ranges, &mut record).await?;
    totals.skipped = skipped;
    Ok(totals)
}

/// A file to receive and the replicas to read it from, best first.
pub(super) type SourcedFile = (StreamFile, Vec<NodeId>);

/// Adds to `files` one file per table of `keyspace` for `range`, each expected in `plan` from
/// its first source, so netstats shows the totals from the start.
pub(super) fn add_range_files(
    cluster: &ClusterNode,
    plan: &StreamPlan,
    keyspace: &helenus_schema::KeyspaceMeta,
    range: TokenRange,
    sources: &[NodeId],
    files: &mut Vec<SourcedFile>,
) {
    for table in keyspace.tables.values() {
        if let Some(first) = sources.first() {
            plan.expect(ip_of(cluster, *first), Direction::Receiving, 1);
        }
        let file = StreamFile {
            keyspace: keyspace.name.clone(),
            name: file_name(&keyspace.name, &table.name, range),
            table: *table.id.as_bytes(),
            range,
        };
        files.push((file, sources.to_vec()));
    }
}

/// Receives every file of `plan` (`ranges` token ranges), each from the first of its sources
/// that serves it; the plan fails with the first file that none does. `range_done` is told of
/// the last file of each keyspace's range once it is received (the files of a range are
/// listed together, `add_range_files`, with the same sources).
///
/// Files are received from their sources at once, one range at a time per source, as Cassandra
/// streams from every source peer in parallel: the stream throttle is each sender's, so a node
/// joining a ring of three receives from three senders at up to three times the rate one gives.
/// Each range comes from its first source, unless `shared` (a replacement, which any live
/// replica may serve): then a source that has sent its own ranges takes the last ones another
/// has not started, so that sources holding more bytes for the same token span (data not yet
/// compacted) do not keep the others waiting (measured: 701 MB against 559 MB from two sources
/// given even token spans). After a failure the other sources finish the file they are on
/// (releasing what they staged) and start no other.
pub(super) async fn stream_files(
    cluster: &ClusterNode,
    node: &NodeState,
    plan: StreamPlan,
    (files, shared): (&[SourcedFile], bool),
    ranges: usize,
    range_done: &mut (dyn FnMut(&StreamFile) + Send),
) -> Result<StreamTotals, String> {
    let units: Vec<&[SourcedFile]> = files
        .chunk_by(|a, b| a.0.keyspace == b.0.keyspace && a.0.range == b.0.range)
        .collect();
    if let Some((file, _)) = units
        .iter()
        .find_map(|u| u.first().filter(|f| f.1.is_empty()))
    {
        let reason = format!("{}: no live replica holds the range", file.name);
        plan.fail(&reason);
        return Err(reason);
    }
    let mut workers_of: Vec<NodeId> = Vec::new();
    for unit in &units {
        let candidates = unit.first().map_or(&[][..], |f| {
            if shared {
                &f.1[..]
            } else {
                f.1.get(..1).unwrap_or(&[])
            }
        });
        for s in candidates {
            if !workers_of.contains(s) {
                workers_of.push(*s);
            }
        }
    }
    let taken = parking_lot::Mutex::new(vec![false; units.len()]);
    let failed = std::sync::atomic::AtomicBool::new(false);
    let range_done = parking_lot::Mutex::new(range_done);
    let workers = workers_of.iter().map(|source| {
        let (plan, failed, range_done, taken, units) =
            (&plan, &failed, &range_done, &taken, &units);
        async move {
            let started = Instant::now();
            let mut totals = StreamTotals::default();
            let mut files_received = 0usize;
            loop {
                // The lock is released here, before any await.
                let next = next_unit(units, &mut taken.lock(), *source, shared);
                let Some(unit) = next else { break };
                for (file, sources) in unit.iter() {
                    if failed.load(std::sync::atomic::Ordering::Relaxed) {
                        return Ok(totals);
                    }
                    // This source first, the others kept as fallbacks; netstats expected the
                    // file from the first listed.
                    let mut order = vec![*source];
                    order.extend(sources.iter().filter(|s| *s != source));
                    let expected = sources.first().copied();
                    match stream_range(cluster, node, plan, file, &order, expected).await {
                        Ok(got) => {
                            totals.add_moved(&got);
                            files_received += 1;
                        }
                        Err(e) => {
                            failed.store(true, std::sync::atomic::Ordering::Relaxed);
                            return Err(format!("{}: {e}", file.name));
                        }
                    }
                }
                if let Some((last, _)) = unit.last() {
                    (range_done.lock())(last);
                }
            }
            // One line per source: an uneven split between sources shows here.
            tracing::info!(
                source = ?source,
                files = files_received,
                bytes = totals.bytes,
                seconds = started.elapsed().as_secs_f64(),
                "received everything expected from one source"
            );
            Ok(totals)
        }
    });
    let mut totals = StreamTotals {
        ranges,
        ..StreamTotals::default()
    };
    let mut first_error = None;
    for result in futures::future::join_all(workers).await {
        match result {
            Ok(got) => totals.add_moved(&got),
            Err(reason) => {
                first_error.get_or_insert(reason);
            }
        }
    }
    if let Some(reason) = first_error {
        plan.fail(&reason);
        return Err(reason);
    }
    plan.finish();
    Ok(totals)
}

/// The next range (its files) for `source` to stream, marked taken: the first one it comes
/// first for; then, when `shared`, the last one not yet taken that it holds.
fn next_unit<'u>(
    units: &[&'u [SourcedFile]],
    taken: &mut [bool],
    source: NodeId,
    shared: bool,
) -> Option<&'u [SourcedFile]> {
    let first_of = |u: &[SourcedFile]| u.first().and_then(|f| f.1.first().copied());
    let holds = |u: &[SourcedFile]| u.first().is_some_and(|f| f.1.contains(&source));
    let pick = (0..units.len())
        .find(|&i| {
            !taken.get(i).copied().unwrap_or(true)
                && units.get(i).is_some_and(|u| first_of(u) == Some(source))
        })
        .or_else(|| {
            (0..units.len()).rev().find(|&i| {
                shared
                    && !taken.get(i).copied().unwrap_or(true)
                    && units.get(i).is_some_and(|u| holds(u))
            })
        })?;
    if let Some(t) = taken.get_mut(pick) {
        *t = true;
    }
    units.get(pick).copied()
}

/// One table's range to stream, as netstats names it.
pub(super) struct StreamFile {
    pub keyspace: String,
    pub name: String,
    pub table: st::TableId,
    pub range: TokenRange,
}

/// Waits until this node has the schema every live peer announces (it pulls it), so it knows
/// every table whose ranges it must receive.
async fn wait_for_schema(cluster: &ClusterNode, node: &NodeState) -> Result<(), String> {
    let deadline = Instant::now() + SCHEMA_WAIT;
    loop {
        super::schema::pull_if_behind(cluster).await;
        let mine = node.schema().version.to_string();
        let owners: Vec<_> = cluster
            .service
            .peers()
            .into_iter()
            .filter(|p| p.alive && p.status == helenus_cluster::gossip::status::NORMAL)
            .collect();
        // Nobody up yet is no agreement. The topology claim taken next is ordered by a majority
        // of the ring: a node that has heard from one seed so far would be refused it.
        let agreed = !owners.is_empty()
            && owners
                .iter()
                .all(|p| p.schema_version.as_deref() == Some(mine.as_str()));
        let (reachable, quorum) = super::metadata_log::reachable_members(cluster);
        if agreed && reachable.len() >= quorum {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "no schema agreement with the ring, or fewer than {quorum} of its members reachable ({})",
                reachable.len()
            ));
        }
        tokio::time::sleep(GOSSIP_INTERVAL).await;
    }
}

/// Where a gained range can be read: the replica losing it first (it holds exactly what the
/// range had), then any other live replica of it.
fn stream_sources(
    cluster: &ClusterNode,
    before: &ReplicationMap,
    movement: &helenus_cluster::locator::RangeMove,
    me: NodeId,
) -> Vec<NodeId> {
    let mut sources: Vec<NodeId> = movement
        .sources
        .iter()
        .filter(|(gaining, _)| *gaining == me)
        .map(|(_, from)| *from)
        .collect();
    for r in before.replicas(movement.range.end) {
        if !sources.contains(r) {
            sources.push(*r);
        }
    }
    sources.retain(|s| *s != me && cluster.service.is_alive(*s));
    sources
}

/// Streams one file from the first of `sources` that answers every page (bootstrap and
/// rebuild); netstats expected it from `expected`.
pub(super) async fn stream_range(
    cluster: &ClusterNode,
    node: &NodeState,
    plan: &StreamPlan,
    file: &StreamFile,
    sources: &[NodeId],
    expected: Option<NodeId>,
) -> Result<StreamTotals, String> {
    let mut last_error = "no live replica holds the range".to_string();
    let mut expected_from = expected.map(|s| ip_of(cluster, s));
    for source in sources {
        let peer = ip_of(cluster, *source);
        if let Some(from) = expected_from.filter(|from| *from != peer) {
            plan.move_file(from, peer, Direction::Receiving);
        }
        expected_from = Some(peer);
        match stream_from(cluster, node, plan, file, *source).await {
            Ok(t) => return Ok(t),
            Err(e) => {
                tracing::warn!(%source, error = %e, "stream source failed, trying the next");
                last_error = format!("from {peer}: {e}");
            }
        }
    }
    Err(last_error)
}

async fn stream_from(
    cluster: &ClusterNode,
    node: &NodeState,
    plan: &StreamPlan,
    file: &StreamFile,
    source: NodeId,
) -> Result<StreamTotals, String> {
    let peer = ip_of(cluster, source);
    // The SSTables wholly inside the range come first as files; the pages leave them out.
    let whole = super::sstable_stream::pull_whole(cluster, node, plan, file, source).await?;
    plan.file_started(peer, Direction::Receiving, file.name.clone());
    let mut totals = StreamTotals {
        bytes: whole.bytes,
        whole_sstables: whole.files,
        ..StreamTotals::default()
    };
    for (mut start, end) in storage_pieces(file.range) {
        loop {
            let query = page_query(start.clone(), end.clone(), node.exec.clock().wall_secs());
            let (verb, payload) = super::sstable_stream::page_request(
                &tag_for(plan, peer),
                file.table,
                &query,
                &whole.excluded,
            );
            let reply = ask_source(cluster, source, verb, payload, Verb::StreamResponse).await?;
            let bytes = reply.len() as u64;
            let partitions = helenus_mutation::decode_mutations(reply)
                .map_err(|e| format!("undecodable page: {e}"))?;
            let Some(next) = after_last(&partitions) else {
                break;
            };
            start = next;
            totals.bytes += bytes;
            totals.partitions += partitions.len() as u64;
            plan.transferred(peer, Direction::Receiving, bytes);
            super::sstable_stream::count_partition_bytes(node, bytes);
            crate::proxy::apply_locally(&node.engine, partitions)
                .await
                .map_err(|e| format!("applying a page: {e}"))?;
        }
    }
    plan.file_done(peer, Direction::Receiving);
    Ok(totals)
}

/// Sends a stream request to `source` and waits for its answer with `answer_verb`, giving up
/// when the source is convicted down (a killed source would otherwise hold the stream for the
/// whole page timeout) or the timeout passes.
pub(super) async fn ask_source(
    cluster: &ClusterNode,
    source: NodeId,
    verb: Verb,
    payload: Bytes,
    answer_verb: Verb,
) -> Result<Bytes, String> {
    let (id, mut answer) = cluster
        .messenger
        .request(source, verb, payload)
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + STREAM_PAGE_TIMEOUT;
    loop {
        match tokio::time::timeout(GOSSIP_INTERVAL, &mut answer).await {
            Ok(Ok(r)) if r.verb == answer_verb => return Ok(r.payload),
            Ok(_) => return Err(format!("the source refused a {verb:?}")),
            Err(_) => {
                let down = !cluster.service.is_alive(source);
                if down || Instant::now() >= deadline {
                    cluster.messenger.forget(id);
                    return Err(match down {
                        true => "the source went down".into(),
                        false => format!("a {verb:?} timed out"),
                    });
                }
            }
        }
    }
}

/// The storage bounds of a ring range `(start, end]`; one that wraps past the ring's end is
/// read as two pieces.
pub(super) fn storage_pieces(range: TokenRange) -> Vec<(st::PartitionBound, st::PartitionBound)> {
    let after = |token| st::PartitionBound::Token {
        token,
        inclusive: false,
    };
    let through = |token| st::PartitionBound::Token {
        token,
        inclusive: true,
    };
    if range.start < range.end {
        vec![(after(range.start), through(range.end))]
    } else {
        vec![
            (after(range.start), st::PartitionBound::Unbounded),
            (st::PartitionBound::Unbounded, through(range.end)),
        ]
    }
}

pub(super) fn page_query(
    start: st::PartitionBound,
    end: st::PartitionBound,
    now_s: i64,
) -> st::ReadQuery {
    st::ReadQuery {
        columns: None,
        partitions: st::PartitionRange::Range { start, end },
        slices: Vec::new(),
        reversed: false,
        row_limit: None,
        per_partition_limit: None,
        partition_limit: Some(STREAM_PAGE_PARTITIONS),
        now_s,
        resume_after: None,
    }
}

/// Answers a peer's request with `verb` and the payload, or with `Failure` (logged as
/// `refused`) when it could not be served.
pub(super) fn answer_or_refuse(
    cluster: &ClusterNode,
    request: &Envelope,
    verb: Verb,
    outcome: Result<Bytes, String>,
    refused: &str,
) {
    let (verb, payload) = match outcome {
        Ok(payload) => (verb, payload),
        Err(e) => {
            tracing::warn!(error = %e, "{refused}");
            (Verb::Failure, Bytes::new())
        }
    };
    let _ = cluster.messenger.respond(request, verb, payload);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn a_range_that_wraps_is_read_in_two_pieces() {
        assert_eq!(storage_pieces(TokenRange::new(-5, 10)).len(), 1);
        let pieces = storage_pieces(TokenRange::new(10, -5));
        assert_eq!(
            pieces,
            vec![
                (
                    st::PartitionBound::Token {
                        token: 10,
                        inclusive: false
                    },
                    st::PartitionBound::Unbounded
                ),
                (
                    st::PartitionBound::Unbounded,
                    st::PartitionBound::Token {
                        token: -5,
                        inclusive: true
                    }
                ),
            ]
        );
    }

    #[test]
    fn a_replacement_takes_even_shares_from_its_sources() {
        let (a, b) = (
            NodeId(uuid::Uuid::from_u128(1)),
            NodeId(uuid::Uuid::from_u128(2)),
        );
        // Replica order names `a` first for every range, twice `b`'s width among the rest.
        let mut ranges: Vec<(TokenRange, Vec<NodeId>)> =
            [(0, 100), (100, 150), (150, 200), (200, 400)]
                .iter()
                .map(|&(s, e)| (TokenRange::new(s, e), vec![a, b]))
                .collect();
        balance_sources(&mut ranges);
        let share = |n: NodeId| -> u128 {
            ranges
                .iter()
                .filter(|(_, s)| s.first() == Some(&n))
                .map(|(r, _)| r.width())
                .sum()
        };
        assert_eq!((share(a), share(b)), (200, 200));
        // The other source stays behind as a fallback.
        assert!(ranges.iter().all(|(_, s)| s.len() == 2));
    }

    #[test]
    fn a_source_done_with_its_ranges_takes_the_last_of_another_only_when_shared() {
        let (a, b) = (
            NodeId(uuid::Uuid::from_u128(1)),
            NodeId(uuid::Uuid::from_u128(2)),
        );
        let file = |i: i64, sources: Vec<NodeId>| -> SourcedFile {
            let range = TokenRange::new(i * 10, i * 10 + 10);
            let f = StreamFile {
                keyspace: "ks".into(),
                name: format!("r{i}"),
                table: [0; 16],
                range,
            };
            (f, sources)
        };
        let files = [
            file(0, vec![a, b]),
            file(1, vec![a, b]),
            file(2, vec![b, a]),
            file(3, vec![b, a]),
        ];
        let units: Vec<&[SourcedFile]> = files.chunks(1).collect();
        let name = |u: Option<&[SourcedFile]>| u.and_then(|u| u.first()).map(|f| f.0.name.clone());
        let mut taken = vec![false; 4];
        let mut take = |who, shared| name(next_unit(&units, &mut taken, who, shared));
        assert_eq!(take(a, true).as_deref(), Some("r0"));
        assert_eq!(take(b, true).as_deref(), Some("r2"));
        assert_eq!(take(a, true).as_deref(), Some("r1"));
        assert_eq!(
            take(a, true).as_deref(),
            Some("r3"),
            "a steals b's last range"
        );
        assert_eq!(take(b, true), None);
        let mut taken = vec![false; 4];
        let mut take = |who| name(next_unit(&units, &mut taken, who, false));
        assert_eq!(take(a).as_deref(), Some("r0"));
        assert_eq!(take(a).as_deref(), Some("r1"));
        assert_eq!(take(a), None, "not shared: b's ranges stay b's");
    }
}
