//! Incremental repair sessions, as Cassandra 4.0's consistent repair runs them: each SSTable is
//! repaired, unrepaired, or pending for one session (storage's `RepairState`), and a session
//! compares only what was unrepaired when it began, so repairing replicas that were repaired
//! before costs what was written since, not the whole data set.
//!
//! 1. Prepare: the coordinator asks every participant (each replica of the ranges repaired) to
//!    flush the session's tables and set aside, as pending for the session, its unrepaired
//!    SSTables within the ranges it replicates (anticompaction splits an SSTable that straddles
//!    a range's end). Writes that arrive later stay unrepaired: the session's view is fixed.
//! 2. Validate and sync: Merkle trees and digest lists are built over the pending SSTables
//!    alone (`View::Session`), and what a replica lacks is written into an SSTable pending for
//!    the session on it (`RepairSessionWrite`), so it is repaired with the rest.
//! 3. Finalize: once every range is in sync, each participant marks the session's SSTables
//!    repaired (at the session's start, Cassandra's `repairedAt`); if anything failed, they
//!    become unrepaired again and the next repair compares them. Compaction never mixes the
//!    three sets (storage keeps them apart).
//!
//! A participant keeps its sessions in memory. One that restarts releases whatever it still
//! has pending (`release_stale`): its data is compared again by the next repair, which is
//! slower but never wrong, whereas marking it repaired without knowing the session's outcome
//! could be. Cassandra instead keeps sessions in `system.repairs` and asks its peers.

use super::session_wire::{
    decode_finalize, decode_outcome, decode_prepare, encode_prepare, finalize_request,
    outcome_payload, take16, PrepareRequest,
};
use super::{ask, View};
use crate::cluster::bootstrap::answer_or_refuse;
use crate::cluster::ClusterNode;
use crate::node::NodeState;
use bytes::Bytes;
use helenus_cluster::locator::{NodeId, ReplicationMap, TokenRange};
use helenus_cluster::messaging::{Envelope, Verb};
use helenus_storage as st;
use parking_lot::Mutex;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// A prepare may anticompact gigabytes: it is asked again (idempotently, the second request
/// waits for the first's work) at these intervals before the coordinator gives up.
const PREPARE_WAITS: [Duration; 4] = [
    Duration::from_secs(10),
    Duration::from_secs(60),
    Duration::from_secs(600),
    Duration::from_secs(1800),
];

/// Cassandra's `ConsistentSession.State` names, as `nodetool repair_admin list` prints them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SessionState {
    Preparing,
    Prepared,
    Finalized,
    Failed,
}

/// One session as a participant knows it.
#[derive(Clone, Debug, Serialize)]
pub struct LocalSession {
    pub id: Uuid,
    pub keyspace: String,
    pub coordinator: String,
    pub participants: Vec<String>,
    #[serde(skip)]
    coordinator_id: Option<NodeId>,
    #[serde(skip)]
    participant_ids: Vec<NodeId>,
    #[serde(skip)]
    table_ids: Vec<st::TableId>,
    pub tables: usize,
    pub ranges: usize,
    pub started_ms: i64,
    pub last_activity_ms: i64,
    pub state: SessionState,
    /// SSTables set aside at prepare: marked without rewriting, and split.
    pub sstables_marked: usize,
    pub sstables_split: usize,
    pub bytes_anticompacted: u64,
}

/// A prepare's outcome, shared by the requests that asked for it.
type PrepareOutcome = Arc<tokio::sync::OnceCell<Result<(), String>>>;

/// Sessions that ended kept for `repair_admin list`; older ones are forgotten.
const ENDED_KEPT: usize = 100;

/// The sessions this node takes part in, by id; a prepare asked twice shares the first's work.
#[derive(Default)]
pub struct Sessions {
    known: Mutex<BTreeMap<Uuid, LocalSession>>,
    preparing: Mutex<BTreeMap<Uuid, PrepareOutcome>>,
}

impl Sessions {
    /// Every session known here, oldest first.
    pub fn list(&self) -> Vec<LocalSession> {
        let mut all: Vec<_> = self.known.lock().values().cloned().collect();
        all.sort_by_key(|s| s.started_ms);
        all
    }

    fn state(&self, id: Uuid) -> Option<SessionState> {
        self.known.lock().get(&id).map(|s| s.state)
    }

    fn update(&self, id: Uuid, now_ms: i64, change: impl FnOnce(&mut LocalSession)) {
        if let Some(s) = self.known.lock().get_mut(&id) {
            s.last_activity_ms = now_ms;
            change(s);
        }
    }

    /// Whether `view` may be read for a repair: a session's view only once it is prepared here
    /// (a participant that restarted mid-session released it, and must not answer with an
    /// empty view that the coordinator would take for missing data).
    /// A read of the view counts as the session's activity (`expire`).
    pub(super) fn check_view(&self, view: View, now_ms: i64) -> Result<(), String> {
        let View::Session(id) = view else {
            return Ok(());
        };
        let id = Uuid::from_bytes(id);
        let mut known = self.known.lock();
        match known.get_mut(&id) {
            Some(s) if s.state == SessionState::Prepared => {
                s.last_activity_ms = now_ms;
                Ok(())
            }
            other => Err(format!(
                "repair session {id} is {:?} on this node, not prepared",
                other.map(|s| s.state)
            )),
        }
    }

    /// The sessions under way here that their coordinator abandoned: it is down (Cassandra fails
    /// a repair's sessions when the failure detector convicts a node of it), or nothing asked
    /// anything of the session for `SESSION_IDLE_MS` (a coordinator that restarted forgot it).
    /// They are marked failed; the caller releases their SSTables.
    fn expire(&self, now_ms: i64, local: NodeId, is_up: impl Fn(NodeId) -> bool) -> Vec<Uuid> {
        let mut expired = Vec::new();
        for s in self.known.lock().values_mut() {
            let running = matches!(s.state, SessionState::Preparing | SessionState::Prepared);
            let coordinator_gone = s.coordinator_id.is_some_and(|c| c != local && !is_up(c));
            if running && (coordinator_gone || now_ms - s.last_activity_ms > SESSION_IDLE_MS) {
                s.state = SessionState::Failed;
                s.last_activity_ms = now_ms;
                expired.push(s.id);
            }
        }
        expired
    }
}

/// How long a session under way may go without a message before a participant gives up on it.
const SESSION_IDLE_MS: i64 = 3_600_000;

/// Housekeeping: releases the SSTables of the sessions `Sessions::expire` finds abandoned.
pub async fn expire_abandoned(cluster: &ClusterNode, node: &NodeState) {
    let now = node.exec.clock().wall_ms();
    let expired = cluster
        .repair_sessions
        .expire(now, cluster.local(), |n| cluster.is_up(n));
    for id in expired {
        let engine = node.engine.clone();
        let released =
            tokio::task::spawn_blocking(move || engine.release_repair(*id.as_bytes())).await;
        tracing::warn!(
            session = %id,
            released = ?released,
            "incremental repair session abandoned by its coordinator; its SSTables are unrepaired again"
        );
        cluster.repair_sessions.preparing.lock().remove(&id);
    }
}

/// A session the coordinator prepared: who takes part, and since when.
pub(super) struct Prepared {
    pub id: Uuid,
    pub started_ms: i64,
    pub participants: Vec<NodeId>,
}

/// Prepares session `id` on every replica of `ranges`, each for the ranges it replicates. On
/// a refusal the participants that prepared are released again and the error returned.
pub(super) async fn prepare(
    cluster: &ClusterNode,
    node: &NodeState,
    id: Uuid,
    keyspace: &str,
    map: &ReplicationMap,
    tables: Vec<st::TableId>,
    ranges: &[TokenRange],
) -> Result<Prepared, String> {
    let mut by_participant: BTreeMap<NodeId, Vec<TokenRange>> = BTreeMap::new();
    for r in ranges {
        for replica in map.replicas(r.end) {
            by_participant.entry(*replica).or_default().push(*r);
        }
    }
    let participants: Vec<NodeId> = by_participant.keys().copied().collect();
    let started_ms = node.exec.clock().wall_ms();
    let asks = by_participant.into_iter().map(|(to, ranges)| {
        let request = PrepareRequest {
            id,
            started_ms,
            keyspace: keyspace.to_string(),
            participants: participants.clone(),
            tables: tables.clone(),
            ranges,
        };
        async move {
            let outcome = if to == cluster.local() {
                prepare_here(cluster, node, request, to).await
            } else {
                let payload = encode_prepare(&request);
                match ask(
                    cluster,
                    to,
                    Verb::RepairPrepareRequest,
                    payload,
                    &PREPARE_WAITS,
                )
                .await
                {
                    Ok(reply) if reply.verb == Verb::RepairPrepareResponse => {
                        decode_outcome(reply.payload)
                    }
                    Ok(_) => Err("refused the prepare".into()),
                    Err(e) => Err(e),
                }
            };
            outcome.map_err(|e| format!("{}: {e}", cluster.address_of(to)))
        }
    });
    let outcomes = futures::future::join_all(asks).await;
    let prepared = Prepared {
        id,
        started_ms,
        participants,
    };
    if let Some(Err(e)) = outcomes.into_iter().find(Result::is_err) {
        finalize(cluster, node, &prepared, false).await;
        return Err(format!("incremental repair prepare failed on {e}"));
    }
    Ok(prepared)
}

/// Tells every participant the session's outcome: its pending SSTables become repaired (at the
/// session's start) or unrepaired. A participant that does not hear it keeps them pending
/// until it restarts or `repair_admin cancel` releases them; the failures are logged.
pub(super) async fn finalize(
    cluster: &ClusterNode,
    node: &NodeState,
    session: &Prepared,
    success: bool,
) {
    let payload = finalize_request(session.id, success, session.started_ms);
    let tells = session.participants.iter().map(|to| {
        let payload = payload.clone();
        async move {
            let outcome = if *to == cluster.local() {
                finalize_here(cluster, node, payload).await
            } else {
                match ask(
                    cluster,
                    *to,
                    Verb::RepairFinalizeRequest,
                    payload,
                    &super::REPAIR_MESSAGE_TIMEOUTS,
                )
                .await
                {
                    Ok(reply) if reply.verb == Verb::RepairFinalizeResponse => {
                        decode_outcome(reply.payload)
                    }
                    Ok(_) => Err("refused".into()),
                    Err(e) => Err(e),
                }
            };
            if let Err(e) = outcome {
                tracing::warn!(
                    session = %session.id,
                    peer = %cluster.address_of(*to),
                    error = %e,
                    "repair session not finalized there; its SSTables stay pending"
                );
            }
        }
    });
    futures::future::join_all(tells).await;
}

/// A participant's prepare: records the session, then flushes and anticompacts each table
/// once, however many times the coordinator asks. Refused while another session of any of the
/// same tables runs here, as Cassandra refuses it: the sessions' views would split the data
/// differently on different replicas.
async fn prepare_here(
    cluster: &ClusterNode,
    node: &NodeState,
    request: PrepareRequest,
    coordinator: NodeId,
) -> Result<(), String> {
    let now = node.exec.clock().wall_ms();
    let cell = {
        let mut known = cluster.repair_sessions.known.lock();
        if let Some(other) = known.values().find(|s| {
            s.id != request.id
                && matches!(s.state, SessionState::Preparing | SessionState::Prepared)
                && s.table_ids.iter().any(|t| request.tables.contains(t))
        }) {
            return Err(format!(
                "a repair session is already running for those tables ({})",
                other.id
            ));
        }
        forget_ended(&mut known);
        known.entry(request.id).or_insert_with(|| LocalSession {
            id: request.id,
            keyspace: request.keyspace.clone(),
            coordinator: cluster.address_of(coordinator).to_string(),
            coordinator_id: Some(coordinator),
            participants: request
                .participants
                .iter()
                .map(|p| cluster.address_of(*p).to_string())
                .collect(),
            participant_ids: request.participants.clone(),
            table_ids: request.tables.clone(),
            tables: request.tables.len(),
            ranges: request.ranges.len(),
            started_ms: request.started_ms,
            last_activity_ms: now,
            state: SessionState::Preparing,
            sstables_marked: 0,
            sstables_split: 0,
            bytes_anticompacted: 0,
        });
        cluster
            .repair_sessions
            .preparing
            .lock()
            .entry(request.id)
            .or_default()
            .clone()
    };
    cell.get_or_init(|| anticompact(cluster, node, &request))
        .await
        .clone()
}

/// Drops the oldest ended sessions past `ENDED_KEPT`.
fn forget_ended(known: &mut BTreeMap<Uuid, LocalSession>) {
    let mut ended: Vec<(i64, Uuid)> = known
        .values()
        .filter(|s| matches!(s.state, SessionState::Finalized | SessionState::Failed))
        .map(|s| (s.started_ms, s.id))
        .collect();
    if ended.len() > ENDED_KEPT {
        ended.sort_unstable();
        for (_, id) in ended.iter().take(ended.len() - ENDED_KEPT) {
            known.remove(id);
        }
    }
}

async fn anticompact(
    cluster: &ClusterNode,
    node: &NodeState,
    request: &PrepareRequest,
) -> Result<(), String> {
    let engine = node.engine.clone();
    let (tables, session) = (request.tables.clone(), *request.id.as_bytes());
    let storage_ranges = crate::cluster::cleanup::as_storage_ranges(&request.ranges);
    let done = tokio::task::spawn_blocking(move || {
        let mut total = st::AntiCompactionStats::default();
        for table in tables {
            let stats = engine
                .anticompact(table, &storage_ranges, session)
                .map_err(|e| e.to_string())?;
            total.sstables_marked += stats.sstables_marked;
            total.sstables_split += stats.sstables_split;
            total.bytes_rewritten += stats.bytes_rewritten;
        }
        Ok::<_, String>(total)
    })
    .await
    .map_err(|e| e.to_string())
    .and_then(|r| r);
    let now = node.exec.clock().wall_ms();
    let sessions = &cluster.repair_sessions;
    // A session cancelled while it anticompacted stays failed: what was just set aside for it
    // is given back.
    let cancelled = sessions.state(request.id) == Some(SessionState::Failed);
    match done {
        Ok(_) if cancelled => {
            let _ = node.engine.release_repair(session);
            Err(format!("repair session {} was cancelled", request.id))
        }
        Ok(stats) => {
            sessions.update(request.id, now, |s| {
                s.state = SessionState::Prepared;
                s.sstables_marked = stats.sstables_marked;
                s.sstables_split = stats.sstables_split;
                s.bytes_anticompacted = stats.bytes_rewritten;
            });
            Ok(())
        }
        Err(e) => {
            let _ = node.engine.release_repair(session);
            sessions.update(request.id, now, |s| s.state = SessionState::Failed);
            Err(e)
        }
    }
}

async fn finalize_here(
    cluster: &ClusterNode,
    node: &NodeState,
    payload: Bytes,
) -> Result<(), String> {
    let (id, success, repaired_at_ms) =
        decode_finalize(payload).ok_or("malformed finalize request")?;
    if success && cluster.repair_sessions.state(id) == Some(SessionState::Failed) {
        return Err(format!(
            "repair session {id} failed or was cancelled on this node"
        ));
    }
    let engine = node.engine.clone();
    let session = *id.as_bytes();
    tokio::task::spawn_blocking(move || {
        if success {
            engine.finalize_repair(session, repaired_at_ms)
        } else {
            engine.release_repair(session)
        }
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())?;
    let state = if success {
        SessionState::Finalized
    } else {
        SessionState::Failed
    };
    cluster
        .repair_sessions
        .update(id, node.exec.clock().wall_ms(), |s| s.state = state);
    cluster.repair_sessions.preparing.lock().remove(&id);
    Ok(())
}

/// The participant's side of the prepare and finalize messages.
pub async fn serve(cluster: Arc<ClusterNode>, node: Arc<NodeState>, request: Envelope) {
    let (verb, outcome) = match request.verb {
        Verb::RepairPrepareRequest => {
            let outcome = match decode_prepare(request.payload.clone()) {
                Some(p) => prepare_here(&cluster, &node, p, request.from).await,
                None => Err("malformed prepare request".into()),
            };
            (Verb::RepairPrepareResponse, outcome)
        }
        _ => (
            Verb::RepairFinalizeResponse,
            finalize_here(&cluster, &node, request.payload.clone()).await,
        ),
    };
    answer_or_refuse(
        &cluster,
        &request,
        verb,
        Ok(outcome_payload(&outcome)),
        "repair session message refused",
    );
}

/// `nodetool repair_admin cancel --session ID`: the session fails on every participant (this
/// node included); their pending SSTables become unrepaired. The participants are told in the
/// background; a coordinator still running the session then fails at its next message.
pub fn cancel(cluster: &Arc<ClusterNode>, id: Uuid) -> Result<(), String> {
    let participants: Vec<NodeId> = {
        let known = cluster.repair_sessions.known.lock();
        let session = known
            .get(&id)
            .ok_or_else(|| format!("no repair session {id} on this node"))?;
        if session.state == SessionState::Finalized {
            return Err(format!("repair session {id} is already finalized"));
        }
        let mut all = session.participant_ids.clone();
        all.push(cluster.local());
        all.sort_unstable();
        all.dedup();
        all
    };
    let cluster = cluster.clone();
    tokio::spawn(async move {
        let Some(node) = cluster.node() else { return };
        let session = Prepared {
            id,
            started_ms: 0,
            participants,
        };
        finalize(&cluster, &node, &session, false).await;
    });
    Ok(())
}

/// At start-up: the sessions this node's SSTables are still pending for are unknown now (the
/// node restarted), so they are released (see the module's comment).
pub fn release_stale(engine: &st::Engine) {
    let mut sessions: Vec<[u8; 16]> = engine
        .pending_repairs()
        .into_iter()
        .map(|p| p.session)
        .collect();
    sessions.sort_unstable();
    sessions.dedup();
    for s in sessions {
        match engine.release_repair(s) {
            Ok(n) => tracing::info!(
                session = %Uuid::from_bytes(s),
                "released {n} SSTables left pending for a repair session before the restart"
            ),
            Err(e) => tracing::warn!(error = %e, "could not release a stale repair session"),
        }
    }
}

/// The replica's side of a `RepairSessionWrite`: stored only while the session is prepared
/// here (a write for a session this node released would be marked repaired by nobody).
pub async fn serve_session_write(
    cluster: Arc<ClusterNode>,
    node: Arc<NodeState>,
    request: Envelope,
) {
    let mut payload = request.payload.clone();
    let stored = match (take16(&mut payload), take16(&mut payload)) {
        (Some(session), Some(table)) => {
            let now = node.exec.clock().wall_ms();
            match cluster
                .repair_sessions
                .check_view(View::Session(session), now)
            {
                Ok(()) => {
                    let engine = node.engine.clone();
                    tokio::task::spawn_blocking(move || {
                        let partitions = helenus_mutation::decode_mutations(payload)
                            .map_err(|e| e.to_string())?;
                        engine
                            .write_pending(table, session, partitions)
                            .map_err(|e| e.to_string())
                    })
                    .await
                    .map_err(|e| e.to_string())
                    .and_then(|r| r)
                }
                Err(e) => Err(e),
            }
        }
        _ => Err("malformed repair session write".into()),
    };
    answer_or_refuse(
        &cluster,
        &request,
        Verb::MutationResponse,
        stored.map(|()| Bytes::new()),
        "repair session write refused",
    );
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn session(id: Uuid, state: SessionState, coordinator: Option<NodeId>) -> LocalSession {
        LocalSession {
            id,
            keyspace: "k".into(),
            coordinator: String::new(),
            participants: Vec::new(),
            coordinator_id: coordinator,
            participant_ids: Vec::new(),
            table_ids: Vec::new(),
            tables: 1,
            ranges: 1,
            started_ms: 0,
            last_activity_ms: 1_000,
            state,
            sstables_marked: 0,
            sstables_split: 0,
            bytes_anticompacted: 0,
        }
    }

    #[test]
    fn a_session_view_is_readable_only_once_prepared() {
        let sessions = Sessions::default();
        assert!(sessions.check_view(View::Live, 0).is_ok());
        let id = Uuid::from_u128(3);
        assert!(sessions
            .check_view(View::Session(*id.as_bytes()), 0)
            .is_err());
        sessions
            .known
            .lock()
            .insert(id, session(id, SessionState::Preparing, None));
        assert!(sessions
            .check_view(View::Session(*id.as_bytes()), 0)
            .is_err());
        sessions.update(id, 9, |s| s.state = SessionState::Prepared);
        assert!(sessions
            .check_view(View::Session(*id.as_bytes()), 12)
            .is_ok());
        assert_eq!(sessions.list()[0].last_activity_ms, 12);
    }

    #[test]
    fn a_session_is_abandoned_when_its_coordinator_is_down_or_it_idles() {
        let (me, coordinator) = (NodeId(Uuid::from_u128(1)), NodeId(Uuid::from_u128(2)));
        let sessions = Sessions::default();
        for (n, state) in [(10, SessionState::Prepared), (11, SessionState::Finalized)] {
            let id = Uuid::from_u128(n);
            sessions
                .known
                .lock()
                .insert(id, session(id, state, Some(coordinator)));
        }
        // Up and active: kept.
        assert!(sessions.expire(2_000, me, |_| true).is_empty());
        // Idle past the limit: abandoned, once.
        let late = 1_000 + SESSION_IDLE_MS + 1;
        assert_eq!(
            sessions.expire(late, me, |_| true),
            vec![Uuid::from_u128(10)]
        );
        assert!(sessions.expire(late, me, |_| true).is_empty());
        // The coordinator down: abandoned at once; a finished session is left alone.
        sessions.update(Uuid::from_u128(10), 0, |s| s.state = SessionState::Prepared);
        assert_eq!(
            sessions.expire(5, me, |n| n != coordinator),
            vec![Uuid::from_u128(10)]
        );
        // This node coordinating: only its own job ends it.
        sessions.update(Uuid::from_u128(10), 0, |s| s.state = SessionState::Prepared);
        assert!(sessions
            .expire(5, coordinator, |n| n != coordinator)
            .is_empty());
    }
}
