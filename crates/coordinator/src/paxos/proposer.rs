//! The coordinator side of a lightweight transaction (`cas`): win a quorum's promise, finish any
//! proposal a failed coordinator left half-accepted, check the condition against the newest value
//! the quorum holds, propose the update and commit it. Contention (a higher ballot) restarts the
//! round after a randomised pause; the deadline turns into a CAS write timeout.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use helenus_cluster::locator::NodeId;
use helenus_cluster::messaging::{Messenger, Verb};
use tokio::sync::mpsc;

use super::acceptor::Acceptor;
use super::ballot::{Ballot, BallotGenerator};
use super::messages::{Commit, PaxosReply, PaxosRequest, Promise};

/// The verbs of one Paxos instance's three phases: lightweight transactions and the metadata
/// log run on acceptors of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PaxosVerbs {
    pub prepare: Verb,
    pub propose: Verb,
    pub commit: Verb,
}

impl PaxosVerbs {
    pub const LWT: PaxosVerbs = PaxosVerbs {
        prepare: Verb::PaxosPrepare,
        propose: Verb::PaxosPropose,
        commit: Verb::PaxosCommit,
    };
    pub const METADATA: PaxosVerbs = PaxosVerbs {
        prepare: Verb::MetadataPrepare,
        propose: Verb::MetadataPropose,
        commit: Verb::MetadataCommit,
    };
}

/// One compare-and-set.
pub struct CasRequest<'a> {
    pub verbs: PaxosVerbs,
    pub key: Bytes,
    /// Live replicas of the partition (from the replica plan).
    pub replicas: &'a [NodeId],
    /// Answers needed in each round (a quorum of all replicas, or of the local DC for LOCAL_SERIAL).
    pub quorum: usize,
    pub timeout: Duration,
}

/// The result of a compare-and-set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CasOutcome {
    pub applied: bool,
    /// The value the condition was checked against.
    pub current: Option<Bytes>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PaxosError {
    /// The outcome is unknown: the update may or may not be applied (the protocol's WriteTimeout
    /// with write type CAS).
    #[error("Operation timed out - received only {received} responses.")]
    Timeout { received: usize, block_for: usize },
    #[error("Cannot achieve consistency level SERIAL")]
    Unavailable { required: usize, alive: usize },
}

/// Runs one compare-and-set; `decide` maps the current value to the new one, or `None` when the
/// condition does not hold. The value is a register: the newest read or commit wins.
pub async fn cas(
    request: &CasRequest<'_>,
    messenger: &Messenger,
    local: &Acceptor,
    ballots: &BallotGenerator,
    decide: impl Fn(Option<&Bytes>) -> Option<Bytes>,
) -> Result<CasOutcome, PaxosError> {
    cas_with(request, messenger, local, ballots, newest_value, decide).await
}

/// What the condition is checked against, from the quorum's promises and the newest commit
/// among them.
pub type CurrentValue = fn(&[&Promise], Option<&Commit>) -> Option<Bytes>;

/// `cas` with the current value computed by `current`: a store whose values are partitions
/// (updates are mutations, not whole values) reconciles every read with the latest commit.
pub async fn cas_with(
    request: &CasRequest<'_>,
    messenger: &Messenger,
    local: &Acceptor,
    ballots: &BallotGenerator,
    current_of: CurrentValue,
    decide: impl Fn(Option<&Bytes>) -> Option<Bytes>,
) -> Result<CasOutcome, PaxosError> {
    if request.replicas.len() < request.quorum {
        return Err(PaxosError::Unavailable {
            required: request.quorum,
            alive: request.replicas.len(),
        });
    }
    let deadline = tokio::time::Instant::now() + request.timeout;
    let round = Round {
        request,
        messenger,
        local,
        deadline,
    };
    let mut attempt: u32 = 0;
    loop {
        if tokio::time::Instant::now() >= deadline {
            return Err(round.timeout(0));
        }
        if attempt > 0 {
            contention_pause(attempt, ballots).await;
        }
        attempt += 1;
        let ballot = ballots.next();
        let promises = round.prepare(ballot).await;
        let granted: Vec<&Promise> = promises.iter().filter(|p| p.promised).collect();
        if granted.len() < request.quorum {
            for p in &promises {
                ballots.observe(p.highest);
            }
            continue;
        }
        let latest_commit = granted
            .iter()
            .filter_map(|p| p.committed.as_ref())
            .max_by_key(|c| c.ballot);
        let floor = latest_commit.map_or(Ballot::ZERO, |c| c.ballot);
        let unfinished = granted
            .iter()
            .filter_map(|p| p.accepted.as_ref())
            .filter(|a| a.ballot > floor)
            .max_by_key(|a| a.ballot);
        if let Some(unfinished) = unfinished {
            // A coordinator died between propose and commit: finish its proposal under our
            // ballot before deciding anything new, or it could be chosen behind our back.
            let replay = Commit {
                ballot,
                update: unfinished.update.clone(),
            };
            if round.propose(&replay).await == Proposed::Accepted {
                round.commit(&replay).await;
            }
            continue;
        }
        let current = current_of(&granted, latest_commit);
        let Some(update) = decide(current.as_ref()) else {
            return Ok(CasOutcome {
                applied: false,
                current,
            });
        };
        let proposal = Commit { ballot, update };
        match round.propose(&proposal).await {
            Proposed::Accepted => {}
            Proposed::Refused => continue,
            // Some replicas accepted: a later round may still choose it, so the outcome is unknown.
            Proposed::Partly(received) => return Err(round.timeout(received)),
        }
        let committed = round.commit(&proposal).await;
        if committed < request.quorum {
            return Err(round.timeout(committed));
        }
        return Ok(CasOutcome {
            applied: true,
            current,
        });
    }
}

/// The value the condition sees: the newest of what the quorum's reads and commits say.
fn newest_value(granted: &[&Promise], latest_commit: Option<&Commit>) -> Option<Bytes> {
    let read = granted.iter().map(|p| &p.read).max_by_key(|r| r.written);
    match (read, latest_commit) {
        (Some(r), Some(c)) if c.ballot > r.written => Some(c.update.clone()),
        (Some(r), _) => r.value.clone(),
        (None, Some(c)) => Some(c.update.clone()),
        (None, None) => None,
    }
}

async fn contention_pause(attempt: u32, ballots: &BallotGenerator) {
    // Randomised so coordinators racing for one partition stop colliding, and growing with
    // each lost round up to 100 ms (Cassandra's contention backoff is of that order): short
    // fixed pauses let three coordinators on one key keep pre-empting each other.
    let jitter = ballots
        .next()
        .micros
        .unsigned_abs()
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        >> 54;
    let ceiling = (u64::from(attempt.min(10)) * 10).min(100);
    let millis = jitter % ceiling.max(1);
    tokio::time::sleep(Duration::from_millis(millis.max(1))).await;
}

#[derive(Debug, PartialEq, Eq)]
enum Proposed {
    Accepted,
    Refused,
    Partly(usize),
}

struct Round<'a> {
    request: &'a CasRequest<'a>,
    messenger: &'a Messenger,
    local: &'a Acceptor,
    deadline: tokio::time::Instant,
}

impl Round<'_> {
    fn timeout(&self, received: usize) -> PaxosError {
        PaxosError::Timeout {
            received,
            block_for: self.request.quorum,
        }
    }

    async fn prepare(&self, ballot: Ballot) -> Vec<Promise> {
        let request = PaxosRequest::Prepare {
            key: self.request.key.clone(),
            ballot,
        };
        let quorum = self.request.quorum;
        let n = self.request.replicas.len();
        let (replies, _) = self
            .gather(self.request.verbs.prepare, &request, |replies| {
                let granted = replies
                    .iter()
                    .filter(|r| matches!(r, PaxosReply::Promise(p) if p.promised))
                    .count();
                granted >= quorum || replies.len() - granted > n - quorum
            })
            .await;
        replies
            .into_iter()
            .filter_map(|r| match r {
                PaxosReply::Promise(p) => Some(p),
                _ => None,
            })
            .collect()
    }

    async fn propose(&self, proposal: &Commit) -> Proposed {
        let request = PaxosRequest::Propose {
            key: self.request.key.clone(),
            proposal: proposal.clone(),
        };
        let quorum = self.request.quorum;
        let n = self.request.replicas.len();
        let (replies, asked) = self
            .gather(self.request.verbs.propose, &request, |replies| {
                let ok = replies.iter().filter(|r| accepted(r)).count();
                ok >= quorum || replies.len() - ok > n - quorum
            })
            .await;
        let ok = replies.iter().filter(|r| accepted(r)).count();
        // Only a refusal from every replica asked proves the value can never be chosen: a
        // replica that did not answer may have accepted it, and a later round could finish it.
        if ok >= quorum {
            Proposed::Accepted
        } else if ok == 0 && replies.len() == asked {
            Proposed::Refused
        } else {
            Proposed::Partly(ok)
        }
    }

    async fn commit(&self, commit: &Commit) -> usize {
        let request = PaxosRequest::Commit {
            key: self.request.key.clone(),
            commit: commit.clone(),
        };
        let quorum = self.request.quorum;
        self.gather(self.request.verbs.commit, &request, |replies| {
            replies.len() >= quorum
        })
        .await
        .0
        .len()
    }

    /// Sends `request` to every replica and collects replies until `enough` says so, every
    /// replica has answered, or the deadline passes. Also returns how many replicas were asked.
    async fn gather(
        &self,
        verb: Verb,
        request: &PaxosRequest,
        enough: impl Fn(&[PaxosReply]) -> bool,
    ) -> (Vec<PaxosReply>, usize) {
        let payload = request.encode();
        let (tx, mut rx) = mpsc::channel(self.request.replicas.len().max(1));
        let mut expected = 0;
        for node in self.request.replicas {
            if *node == self.messenger.local() {
                let _ = tx.try_send(self.local.handle(request));
                expected += 1;
                continue;
            }
            let Ok((id, answer)) = self.messenger.request(*node, verb, payload.clone()) else {
                continue;
            };
            expected += 1;
            let tx = tx.clone();
            let messenger = self.messenger.clone();
            let deadline = self.deadline;
            tokio::spawn(async move {
                match tokio::time::timeout_at(deadline, answer).await {
                    Ok(Ok(reply)) => {
                        if let Ok(decoded) = PaxosReply::decode(reply.payload) {
                            let _ = tx.send(decoded).await;
                        }
                    }
                    _ => messenger.forget(id),
                }
            });
        }
        drop(tx);
        let mut replies = Vec::with_capacity(expected);
        while replies.len() < expected && !enough(&replies) {
            match tokio::time::timeout_at(self.deadline, rx.recv()).await {
                Ok(Some(reply)) => replies.push(reply),
                Ok(None) | Err(_) => break,
            }
        }
        (replies, expected)
    }
}

fn accepted(reply: &PaxosReply) -> bool {
    matches!(reply, PaxosReply::Accepted { ok: true, .. })
}

/// The replica side: answers a Paxos request from its acceptor.
pub fn serve_paxos(
    request: &helenus_cluster::messaging::Envelope,
    acceptor: &Acceptor,
    messenger: &Messenger,
) {
    if let Ok(decoded) = PaxosRequest::decode(request.payload.clone()) {
        let reply = acceptor.handle(&decoded);
        let _ = messenger.respond(request, Verb::PaxosResponse, reply.encode());
    }
}

/// Shared handle type for acceptors served from a message loop.
pub type SharedAcceptor = Arc<Acceptor>;
