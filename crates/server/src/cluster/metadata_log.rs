//! The metadata log (issue 12): schema changes ordered by consensus, so every node applies the
//! same changes in the same order and two concurrent DDL statements can never both take the
//! same place.
//!
//! The log's entry `e` is the schema of epoch `e` (the user keyspaces as the schema file holds
//! them, with their epoch in front), chosen by its own single-decree Paxos instance among the
//! ring's members (the coordinator crate's Paxos, on acceptors of its own: `Metadata*` verbs).
//! A DDL statement on a node at epoch `e` plans its change against its schema and proposes the
//! result for entry `e + 1`:
//! - if the entry is free, its proposal is chosen by a majority and committed; the node installs
//!   it, and pushes it to the live peers (waiting, bounded, for them: schema agreement);
//! - if another node's change took the entry, the proposer learns that schema, installs it, and
//!   plans its statement again against it, for the next entry (so `CREATE TABLE` racing another
//!   `CREATE TABLE` of the same name gets "already exists", and two `ALTER TABLE ... ADD` of
//!   different columns both land, one after the other);
//! - without a majority of the members up and reachable, nothing is changed and the statement
//!   fails: a node cut off from the others cannot fork the schema.
//!
//! Entries are whole schemas rather than statements, so a node that missed entries catches up
//! from the newest one it learns, and an acceptor keeps only the last `RETAINED` entries: asked
//! about an older one, it answers with the newest entry it holds (which descends from it), so
//! the proposer learns that instead. The gossiped schema versions and pulls stay as the safety
//! net (schema.rs) for nodes that were down while entries were chosen.
//!
//! Entries also carry the ring's topology claim (topology_claim.rs): a node takes it before it
//! changes the ring, so ring changes are ordered by this log as schema changes are.
//!
//! Membership is the ring's members as this node sees them. Ring changes happen one at a time
//! (the claim, and the gossip check of moves.rs), and majorities of two member sets that differ by one node always overlap, so a
//! join or departure during a schema change cannot let two values be chosen for one entry.

use super::ClusterNode;
use crate::exec::{ExecError, ExecResult};
use crate::node::NodeState;
use crate::topology::SchemaPlanner;
use bytes::{Buf, Bytes};
use helenus_cluster::locator::NodeId;
use helenus_coordinator::paxos::{
    cas_with, Acceptor, AcceptorState, Ballot, CasRequest, Commit, PaxosError, PaxosStore,
    PaxosVerbs, Promise, ReadValue,
};
use helenus_protocol::SchemaChange;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

const LOG_FILE: &str = "metadata_paxos.log";
/// Entries whose acceptor state is kept once a later one is committed.
const RETAINED: u64 = 32;

/// `[epoch u64][user schema]`: an entry's value, and the form schema messages carry.
pub fn entry_epoch(value: &[u8]) -> Option<u64> {
    value
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_be_bytes)
}

fn entry_key(epoch: u64) -> Bytes {
    Bytes::copy_from_slice(&epoch.to_be_bytes())
}

fn key_epoch(key: &[u8]) -> Option<u64> {
    key.try_into().ok().map(u64::from_be_bytes)
}

/// This node's acceptor state for the log's entries, in an append-only file synced before each
/// answer (a forgotten promise could let two schemas be chosen for one entry), rewritten with
/// only the retained entries when it has grown.
pub struct MetadataStore {
    path: PathBuf,
    inner: Mutex<StoreState>,
}

struct StoreState {
    entries: BTreeMap<u64, AcceptorState>,
    /// Entries at or below this were dropped from the store.
    floor: u64,
    log: std::fs::File,
    records: usize,
}

impl StoreState {
    /// The newest committed entry held.
    fn newest_commit(&self) -> Option<(u64, &Commit)> {
        self.entries
            .iter()
            .rev()
            .find_map(|(e, s)| s.committed.as_ref().map(|c| (*e, c)))
    }
}

fn encode_record(out: &mut Vec<u8>, epoch: u64, state: &AcceptorState) {
    let encoded = super::paxos::encode_state(state);
    out.extend_from_slice(&epoch.to_be_bytes());
    out.extend_from_slice(
        &u32::try_from(encoded.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    out.extend_from_slice(&encoded);
}

/// The records of a log file; a torn last record (a crash mid-append) ends it, since its
/// answer never left.
fn decode_records(mut buf: Bytes) -> BTreeMap<u64, AcceptorState> {
    let mut entries = BTreeMap::new();
    while buf.remaining() >= 12 {
        let epoch = buf.get_u64();
        let len = buf.get_u32() as usize;
        if buf.remaining() < len {
            break;
        }
        if let Some(state) = super::paxos::decode_state(buf.split_to(len)) {
            entries.insert(epoch, state);
        }
    }
    entries
}

impl MetadataStore {
    pub fn open(dir: &Path) -> std::io::Result<MetadataStore> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(LOG_FILE);
        let mut entries = BTreeMap::new();
        let mut records = 0;
        if let Ok(mut f) = std::fs::File::open(&path) {
            let mut all = Vec::new();
            f.read_to_end(&mut all)?;
            entries = decode_records(Bytes::from(all));
            records = entries.len();
        }
        let floor = entries
            .keys()
            .next()
            .map_or(0, |first| first.saturating_sub(1));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        Ok(MetadataStore {
            path,
            inner: Mutex::new(StoreState {
                entries,
                floor,
                log,
                records,
            }),
        })
    }

    /// Drops entries older than `RETAINED` behind the newest commit and rewrites the file with
    /// the rest, once it holds many more records than entries.
    fn compact(&self, state: &mut StoreState) -> std::io::Result<()> {
        let Some((newest, _)) = state.newest_commit() else {
            return Ok(());
        };
        if state.records < 4 * RETAINED as usize {
            return Ok(());
        }
        let keep_from = newest.saturating_sub(RETAINED);
        let kept = state.entries.split_off(&keep_from);
        if let Some(dropped) = state.entries.keys().next_back() {
            state.floor = state.floor.max(*dropped);
        }
        state.entries = kept;
        let mut bytes = Vec::new();
        for (epoch, s) in &state.entries {
            encode_record(&mut bytes, *epoch, s);
        }
        let tmp = self.path.with_extension("tmp");
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &self.path)?;
        state.log = std::fs::OpenOptions::new().append(true).open(&self.path)?;
        state.records = state.entries.len();
        Ok(())
    }
}

impl PaxosStore for MetadataStore {
    fn load(&self, key: &[u8]) -> AcceptorState {
        let Some(epoch) = key_epoch(key) else {
            return AcceptorState::default();
        };
        let state = self.inner.lock();
        if epoch <= state.floor {
            // Long decided, and forgotten here: the newest entry held descends from it, and
            // is what the proposer must learn.
            return AcceptorState {
                promised: Ballot::ZERO,
                accepted: None,
                committed: state.newest_commit().map(|(_, c)| Commit {
                    ballot: Ballot::ZERO,
                    update: c.update.clone(),
                }),
            };
        }
        state.entries.get(&epoch).cloned().unwrap_or_default()
    }

    fn save(&self, key: &[u8], acceptor: &AcceptorState) {
        let Some(epoch) = key_epoch(key) else { return };
        let mut state = self.inner.lock();
        if epoch <= state.floor {
            return;
        }
        let mut record = Vec::new();
        encode_record(&mut record, epoch, acceptor);
        let written = state
            .log
            .write_all(&record)
            .and_then(|()| state.log.sync_data());
        if let Err(e) = written {
            tracing::error!(error = %e, "metadata log state not made durable");
        }
        state.records += 1;
        state.entries.insert(epoch, acceptor.clone());
        if let Err(e) = self.compact(&mut state) {
            tracing::warn!(error = %e, "metadata log not compacted");
        }
    }

    fn read(&self, _key: &[u8]) -> ReadValue {
        // An entry's value is only ever its committed schema: there is nothing to read besides.
        ReadValue {
            value: None,
            written: Ballot::ZERO,
        }
    }

    fn apply(&self, _key: &[u8], _commit: &Commit) {
        // The proposer installs its chosen schema and pushes it to the live peers; a node that
        // missed the push pulls it when gossip shows its version differs (schema.rs).
    }
}

/// The value an entry's round sees: the newest committed schema any granted promise carries
/// (the entry's own, or a later one from an acceptor that dropped it), or none while the entry
/// is free.
fn newest_entry(granted: &[&Promise], latest: Option<&Commit>) -> Option<Bytes> {
    commits(granted, latest)
        .max_by_key(|c| entry_epoch(&c.update))
        .map(|c| c.update.clone())
}

/// The committed values a round's promises carry.
fn commits<'a>(
    granted: &'a [&'a Promise],
    latest: Option<&'a Commit>,
) -> impl Iterator<Item = &'a Commit> {
    granted
        .iter()
        .filter_map(|p| p.committed.as_ref())
        .chain(latest)
}

/// What a settled entry holds, asked after this node moved past it: its own commit is the
/// oldest any acceptor answers with (one that dropped it answers with a later entry).
fn settled_entry(granted: &[&Promise], latest: Option<&Commit>) -> Option<Bytes> {
    commits(granted, latest)
        .min_by_key(|c| entry_epoch(&c.update))
        .map(|c| c.update.clone())
}

/// This node's side of the log: its acceptor, one ordering at a time from here (two local
/// statements would otherwise race each other for every entry), and one installation at a time.
pub struct MetadataLog {
    pub acceptor: Acceptor,
    serial: tokio::sync::Mutex<()>,
    pub installing: tokio::sync::Mutex<()>,
}

impl MetadataLog {
    pub fn new(store: MetadataStore) -> MetadataLog {
        MetadataLog {
            acceptor: Acceptor::new(std::sync::Arc::new(store)),
            serial: tokio::sync::Mutex::new(()),
            installing: tokio::sync::Mutex::new(()),
        }
    }
}

/// The ring's members this node can reach now (itself included when it is one), and how many
/// of them order an entry: a majority of all members, reachable or not.
pub(super) fn reachable_members(cluster: &ClusterNode) -> (Vec<NodeId>, usize) {
    let members: Vec<_> = cluster.service.ring().members().map(|m| m.id).collect();
    let local = cluster.local();
    let quorum = members.len().max(1) / 2 + 1;
    let reachable = members
        .into_iter()
        .filter(|id| *id == local || cluster.service.is_alive(*id))
        .collect();
    (reachable, quorum)
}

fn unavailable(required: usize, alive: usize) -> ExecError {
    ExecError::Unavailable {
        consistency: helenus_protocol::Consistency::Quorum,
        required: i32::try_from(required).unwrap_or(i32::MAX),
        alive: i32::try_from(alive).unwrap_or(i32::MAX),
        message: format!(
            "Cannot change the schema: a majority of the ring's members ({required}) must order it and {alive} are reachable"
        ),
    }
}

/// How long a statement may take to be ordered (rounds lost to other nodes' changes included):
/// most of the statement's own `request_timeout`, leaving the rest to install the change and wait
/// for the peers, so the client hears why rather than a bare timeout.
fn order_timeout(node: &NodeState) -> Duration {
    Duration::from_millis(node.config.request_timeout_ms.saturating_mul(6) / 10)
}

/// A change planned against this node's state at one epoch.
pub(super) enum Planned<T> {
    /// Nothing to propose: if the next entry is still free, the ordering ends with this.
    Done(ExecResult<T>),
    /// Propose `entry` for the next epoch; once it is chosen, install it and end with `output`.
    Propose {
        entry: Bytes,
        install: Install,
        output: T,
    },
}

/// What a chosen entry of this node's changes here.
pub(super) enum Install {
    Schema(Box<helenus_schema::Schema>, SchemaChange),
    Claim(Option<super::topology_claim::Claim>),
}

impl<T> Planned<T> {
    /// An entry with this node's schema unchanged and the topology claim set to `claim`.
    pub(super) fn claim(
        node: &NodeState,
        epoch: u64,
        claim: Option<super::topology_claim::Claim>,
        output: T,
    ) -> ExecResult<Planned<T>> {
        let entry = super::schema::encode_entry(epoch + 1, &node.schema(), claim.as_ref())?;
        Ok(Planned::Propose {
            entry,
            install: Install::Claim(claim),
            output,
        })
    }

    fn proposal(&self) -> Option<&Bytes> {
        match self {
            Planned::Done(_) => None,
            Planned::Propose { entry, .. } => Some(entry),
        }
    }
}

/// One attempt's plan, kept while the epoch stays (a retried round must propose the same
/// bytes: a new table's id is drawn when it is planned, and the first proposal may still be
/// chosen by another node's round).
struct Attempt<T> {
    epoch: u64,
    planned: Planned<T>,
}

/// A DDL statement's schema change, ordered (see the module docs): what changed, None for a
/// statement that changes nothing, or the error `plan` gives against the ring's newest schema.
pub async fn order_change(
    cluster: &ClusterNode,
    node: &NodeState,
    plan: &SchemaPlanner<'_>,
) -> ExecResult<Option<SchemaChange>> {
    let planner = |epoch: u64| -> ExecResult<Planned<Option<SchemaChange>>> {
        Ok(match plan(&node.schema()) {
            Ok(Some((schema, change))) => {
                let claim = cluster.claim.lock().clone();
                let entry = super::schema::encode_entry(epoch + 1, &schema, claim.as_ref())?;
                Planned::Propose {
                    entry,
                    install: Install::Schema(Box::new(schema), change.clone()),
                    output: Some(change),
                }
            }
            Ok(None) => Planned::Done(Ok(None)),
            Err(e) => Planned::Done(Err(crate::exec::ddl::exec_error(e))),
        })
    };
    order(cluster, node, &planner).await
}

/// Orders the change `plan` makes against this node's state at an epoch (planned again when
/// another node's change takes the entry first) and installs it once chosen.
pub(super) async fn order<T>(
    cluster: &ClusterNode,
    node: &NodeState,
    plan: &(dyn Fn(u64) -> ExecResult<Planned<T>> + Send + Sync),
) -> ExecResult<T> {
    let _one_from_here = cluster.metadata.serial.lock().await;
    let timeout = order_timeout(node);
    let deadline = tokio::time::Instant::now() + timeout;
    let not_ordered = |what: String| {
        ExecError::Server(format!(
            "Schema change not confirmed within {} ms: {what}; it may still be applied",
            timeout.as_millis()
        ))
    };
    let mut current: Option<Attempt<T>> = None;
    loop {
        let epoch = cluster.schema_epoch.load(Ordering::Acquire);
        let (reachable, quorum) = reachable_members(cluster);
        let this = match current.take() {
            Some(a) if a.epoch == epoch => a,
            Some(a) => match proposal_was_chosen(cluster, a, &reachable, quorum, deadline).await {
                Some(output) => return Ok(output),
                None => Attempt {
                    epoch,
                    planned: plan(epoch)?,
                },
            },
            None => Attempt {
                epoch,
                planned: plan(epoch)?,
            },
        };
        let request = CasRequest {
            verbs: PaxosVerbs::METADATA,
            key: entry_key(epoch + 1),
            replicas: &reachable,
            quorum,
            timeout: deadline.saturating_duration_since(tokio::time::Instant::now()),
        };
        let proposal = this.planned.proposal().cloned();
        let outcome = cas_with(
            &request,
            &cluster.messenger,
            &cluster.metadata.acceptor,
            &cluster.ballots,
            newest_entry,
            |taken| match taken {
                Some(_) => None,
                None => proposal.clone(),
            },
        )
        .await;
        let chosen = match outcome {
            Err(PaxosError::Unavailable { required, alive }) => {
                return Err(unavailable(required, alive))
            }
            Err(PaxosError::Timeout { received, .. }) => {
                // Contention (another proposer's higher ballot) or a slow member: the entry is
                // still open, or holds our proposal, which the next round finds out.
                if tokio::time::Instant::now() >= deadline {
                    return Err(not_ordered(format!(
                        "{received} of the {quorum} ring members needed answered"
                    )));
                }
                current = Some(this);
                // Apart from the proposer that outranked ours, so the two stop colliding.
                let jitter = cluster.ballots.next().micros.unsigned_abs() % 20;
                tokio::time::sleep(Duration::from_millis(1 + jitter)).await;
                continue;
            }
            Ok(o) if o.applied => proposal.clone(),
            Ok(o) => o.current,
        };
        let Some(entry) = chosen else {
            // The entry is free and nothing needs to change against the newest state.
            return match this.planned {
                Planned::Done(result) => result,
                Planned::Propose { .. } => Err(ExecError::Server("entry lost its plan".into())),
            };
        };
        if Some(&entry) == proposal.as_ref() {
            let Planned::Propose {
                install, output, ..
            } = this.planned
            else {
                return Err(ExecError::Server("schema change lost its plan".into()));
            };
            match install {
                Install::Schema(schema, change) => {
                    super::schema::install_own(cluster, node, epoch + 1, *schema, &change).await?
                }
                Install::Claim(claim) => {
                    super::schema::install_claim(cluster, node, epoch + 1, claim).await
                }
            }
            return Ok(output);
        }
        super::schema::take(cluster, node, entry)
            .await
            .map_err(ExecError::Server)?;
        if cluster.schema_epoch.load(Ordering::Acquire) <= epoch {
            return Err(ExecError::Server(format!(
                "Schema change not applied: the schema of epoch {} could not be installed here",
                epoch + 1
            )));
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(not_ordered(
                "other nodes' changes kept taking its place".into(),
            ));
        }
    }
}

/// After a round whose outcome was unknown, this node moved past the entry it proposed for:
/// another node may have finished that proposal and ordered a later change, whose schema was
/// pushed here. If the entry holds this node's proposal, the change is in (the schema installed
/// here descends from it) and planning it again would refuse it as already made.
async fn proposal_was_chosen<T>(
    cluster: &ClusterNode,
    attempt: Attempt<T>,
    reachable: &[NodeId],
    quorum: usize,
    deadline: tokio::time::Instant,
) -> Option<T> {
    let Planned::Propose { entry, output, .. } = attempt.planned else {
        return None;
    };
    let request = CasRequest {
        verbs: PaxosVerbs::METADATA,
        key: entry_key(attempt.epoch + 1),
        replicas: reachable,
        quorum,
        timeout: deadline.saturating_duration_since(tokio::time::Instant::now()),
    };
    let learned = cas_with(
        &request,
        &cluster.messenger,
        &cluster.metadata.acceptor,
        &cluster.ballots,
        settled_entry,
        |_| None,
    )
    .await;
    match learned {
        Ok(o) if o.current.as_ref() == Some(&entry) => Some(output),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(error = ?e, epoch = attempt.epoch + 1, "could not learn what a schema entry holds");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use bytes::{BufMut, BytesMut};
    use helenus_cluster::locator::NodeId;

    fn temp_dir(name: &str) -> PathBuf {
        crate::test_dirs::fresh("ml", name)
    }

    fn ballot(m: i64) -> Ballot {
        Ballot {
            micros: m,
            node: NodeId(uuid::Uuid::from_u128(7)),
        }
    }

    fn entry(epoch: u64) -> Bytes {
        let mut b = BytesMut::new();
        b.put_u64(epoch);
        b.put_slice(b"schema");
        b.freeze()
    }

    fn committed_state(epoch: u64) -> AcceptorState {
        AcceptorState {
            promised: ballot(epoch as i64),
            accepted: None,
            committed: Some(Commit {
                ballot: ballot(epoch as i64),
                update: entry(epoch),
            }),
        }
    }

    #[test]
    fn promises_survive_a_restart_and_old_entries_answer_with_the_newest() {
        let dir = temp_dir("restart");
        let store = MetadataStore::open(&dir).unwrap();
        for epoch in 1..=200u64 {
            store.save(&entry_key(epoch), &committed_state(epoch));
        }
        let promised = AcceptorState {
            promised: ballot(1_000),
            ..AcceptorState::default()
        };
        store.save(&entry_key(201), &promised);
        drop(store);

        let store = MetadataStore::open(&dir).unwrap();
        assert_eq!(
            store.load(&entry_key(201)),
            promised,
            "a promise was forgotten"
        );
        assert_eq!(store.load(&entry_key(200)), committed_state(200));
        let old = store.load(&entry_key(3));
        let newest = old
            .committed
            .expect("a dropped entry answers with the newest commit");
        assert_eq!(entry_epoch(&newest.update), Some(200));
        assert_eq!(old.promised, Ballot::ZERO);
        let file = std::fs::metadata(dir.join(LOG_FILE)).unwrap().len();
        let mut one = Vec::new();
        encode_record(&mut one, 1, &committed_state(1));
        let most = (4 * RETAINED as usize + 1) * one.len();
        assert!(
            file <= most as u64,
            "the log was not compacted: {file} bytes"
        );
    }

    #[test]
    fn a_torn_last_record_is_ignored() {
        let dir = temp_dir("torn");
        let store = MetadataStore::open(&dir).unwrap();
        store.save(&entry_key(1), &committed_state(1));
        store.save(&entry_key(2), &committed_state(2));
        drop(store);
        let path = dir.join(LOG_FILE);
        let len = std::fs::metadata(&path).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 5).unwrap();
        let store = MetadataStore::open(&dir).unwrap();
        assert_eq!(store.load(&entry_key(1)), committed_state(1));
        assert_eq!(store.load(&entry_key(2)), AcceptorState::default());
    }

    /// A granted promise carrying the commit of `epoch` (if any) at ballot `ballot_of(epoch)`.
    fn promise(epoch: Option<u64>, ballot_of: fn(u64) -> i64) -> Promise {
        Promise {
            promised: true,
            highest: ballot(1),
            accepted: None,
            committed: epoch.map(|e| Commit {
                ballot: ballot(ballot_of(e)),
                update: entry(e),
            }),
            read: ReadValue {
                value: None,
                written: Ballot::ZERO,
            },
        }
    }

    #[test]
    fn a_round_sees_the_newest_committed_entry() {
        let promise = |epoch| promise(epoch, |e| 100 - e as i64);
        let (a, b, c) = (promise(None), promise(Some(5)), promise(Some(40)));
        assert_eq!(newest_entry(&[&a], None), None);
        let seen = newest_entry(&[&a, &b, &c], b.committed.as_ref()).unwrap();
        assert_eq!(entry_epoch(&seen), Some(40), "by epoch, not by ballot");
    }

    #[test]
    fn a_settled_entry_is_its_own_commit_not_a_later_one() {
        let promise = |epoch| promise(epoch, |e| e as i64);
        // One acceptor dropped entry 7 and answers with its newest, 60; one never learned it.
        let (dropped, held, unlearned) = (promise(Some(60)), promise(Some(7)), promise(None));
        let seen = settled_entry(&[&dropped, &held, &unlearned], dropped.committed.as_ref());
        assert_eq!(seen.as_ref().and_then(|e| entry_epoch(e)), Some(7));
        assert_eq!(settled_entry(&[&unlearned], None), None);
    }
}
