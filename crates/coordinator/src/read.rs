//! The read path across replicas (Cassandra's `AbstractReadExecutor`, `DigestResolver`,
//! `DataResolver` and `BlockingReadRepair`): full data from the closest replica and digests from
//! the others; if every digest matches, that data is the answer. On a mismatch, full data from
//! every contacted replica is reconciled, each replica that missed something gets a repair
//! mutation, and the read answers once those are acknowledged (blocking read repair), so a value
//! once returned at QUORUM is never "un-read" by the next QUORUM read. A replica slower than the
//! speculative-retry threshold gets a duplicate request sent to a spare replica.
//!
//! What the data means is the caller's business: a `ReadResolver` computes digests, merges
//! answers with the storage engine's reconcile rules, and says what a replica lacks.

use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use helenus_cluster::locator::NodeId;
use helenus_cluster::messaging::{Envelope, Messenger, Verb};
use tokio::sync::mpsc;

use crate::consistency::ConsistencyLevel;
use crate::replica_plan::{ReadPlan, Unavailable};
use crate::speculation::AnswerTimes;
use crate::write::LocalWriter;

/// Turns replica answers into one answer.
pub trait ReadResolver: Send + Sync {
    fn digest(&self, data: &Bytes) -> Bytes;
    /// Reconciles several replicas' answers.
    fn merge(&self, answers: &[Bytes]) -> Bytes;
    /// The mutation a replica that answered `theirs` needs to hold `merged`, if any.
    fn repair(&self, theirs: &Bytes, merged: &Bytes) -> Option<Bytes>;
}

/// Why a replica could not read: Cassandra's `RequestFailureReason` code (0 UNKNOWN,
/// 1 READ_TOO_MANY_TOMBSTONES, ...), which the coordinator reports per replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadFailureReason(pub u16);

impl ReadFailureReason {
    pub const UNKNOWN: ReadFailureReason = ReadFailureReason(0);
    pub const READ_TOO_MANY_TOMBSTONES: ReadFailureReason = ReadFailureReason(1);
}

/// Runs a read command against this node's storage.
pub trait LocalReader: Send + Sync {
    fn read(&self, command: &Bytes) -> Result<Bytes, ReadFailureReason>;
}

/// Why a read did not reach its level; fields as the protocol reports them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Unavailable(#[from] Unavailable),
    #[error("Operation timed out - received only {received} responses.")]
    Timeout {
        consistency: ConsistencyLevel,
        received: usize,
        block_for: usize,
        data_present: bool,
    },
    #[error("Operation failed - received {received} responses and {failures} failures")]
    Failure {
        consistency: ConsistencyLevel,
        received: usize,
        block_for: usize,
        failures: usize,
        data_present: bool,
        /// Each failed replica with its reason.
        reasons: Vec<(NodeId, ReadFailureReason)>,
    },
}

/// Read settings for one request.
#[derive(Clone, Default)]
pub struct ReadOptions {
    pub timeout: Duration,
    /// Send to a spare replica when an answer is this late (`speculative_retry`); `None` never.
    pub speculate_after: Option<Duration>,
    /// Where each remote replica's answer time goes (the table's, for its next thresholds).
    pub answer_times: Option<Arc<AnswerTimes>>,
}

const DATA: u8 = 0;
const DIGEST: u8 = 1;

#[derive(Debug)]
enum Answer {
    Data(NodeId, Bytes),
    Digest(NodeId, Bytes),
    Failed(NodeId, ReadFailureReason),
}

/// Reads as `plan` says.
pub async fn read(
    plan: &ReadPlan,
    command: Bytes,
    messenger: &Messenger,
    local: &dyn LocalReader,
    local_writer: &dyn LocalWriter,
    resolver: &dyn ReadResolver,
    options: ReadOptions,
) -> Result<Bytes, ReadError> {
    let deadline = tokio::time::Instant::now() + options.timeout;
    let ctx = Context {
        plan,
        command: &command,
        messenger,
        local,
        resolver,
        deadline,
        answer_times: options.answer_times.as_ref(),
    };
    let (tx, mut rx) = mpsc::channel(plan.contacts.len() + plan.spare.len() + 1);
    for (i, node) in plan.contacts.iter().enumerate() {
        ctx.ask(*node, if i == 0 { DATA } else { DIGEST }, &tx);
    }
    let mut spares = plan.spare.iter();
    let mut data: Option<(NodeId, Bytes)> = None;
    let mut digests: Vec<(NodeId, Bytes)> = Vec::new();
    let mut reasons: Vec<(NodeId, ReadFailureReason)> = Vec::new();
    let mut speculated = options.speculate_after.is_none();
    let speculate_at = tokio::time::Instant::now() + options.speculate_after.unwrap_or_default();
    while data.is_none() || digests.len() + 1 < plan.block_for {
        let wake = if speculated {
            deadline
        } else {
            speculate_at.min(deadline)
        };
        match tokio::time::timeout_at(wake, rx.recv()).await {
            Ok(Some(Answer::Data(n, d))) => {
                if data.is_none() {
                    data = Some((n, d));
                } else {
                    // A speculative duplicate: its digest counts like any other.
                    digests.push((n, resolver.digest(&d)));
                }
            }
            Ok(Some(Answer::Digest(n, d))) => digests.push((n, d)),
            Ok(Some(Answer::Failed(node, reason))) => {
                reasons.push((node, reason));
                let failures = reasons.len();
                if failures > plan.contacts.len() + plan.spare.len() - plan.block_for {
                    return Err(ReadError::Failure {
                        consistency: plan.consistency,
                        received: digests.len() + usize::from(data.is_some()),
                        block_for: plan.block_for,
                        failures,
                        data_present: data.is_some(),
                        reasons,
                    });
                }
            }
            Err(_) if !speculated && tokio::time::Instant::now() < deadline => {
                speculated = true;
                if let Some(spare) = spares.next() {
                    ctx.ask(*spare, if data.is_none() { DATA } else { DIGEST }, &tx);
                }
            }
            Ok(None) | Err(_) => {
                return Err(ReadError::Timeout {
                    consistency: plan.consistency,
                    received: digests.len() + usize::from(data.is_some()),
                    block_for: plan.block_for,
                    data_present: data.is_some(),
                })
            }
        }
    }
    let Some((data_node, data)) = data else {
        return Err(ctx.timeout(0, false));
    };
    let expected = resolver.digest(&data);
    if digests.iter().all(|(_, d)| *d == expected) {
        return Ok(data);
    }
    // Digests disagree: reconcile full answers from every replica that answered.
    let mut nodes: Vec<NodeId> = vec![data_node];
    nodes.extend(digests.iter().map(|(n, _)| *n));
    ctx.reconcile(&nodes, local_writer).await
}

struct Context<'a> {
    plan: &'a ReadPlan,
    command: &'a Bytes,
    messenger: &'a Messenger,
    local: &'a dyn LocalReader,
    resolver: &'a dyn ReadResolver,
    deadline: tokio::time::Instant,
    answer_times: Option<&'a Arc<AnswerTimes>>,
}

impl Context<'_> {
    fn timeout(&self, received: usize, data_present: bool) -> ReadError {
        ReadError::Timeout {
            consistency: self.plan.consistency,
            received,
            block_for: self.plan.block_for,
            data_present,
        }
    }

    /// Sends a data or digest request to `node` (or answers it here); the answer arrives on `tx`.
    fn ask(&self, node: NodeId, kind: u8, tx: &mpsc::Sender<Answer>) {
        if node == self.messenger.local() {
            let answer = match self.local.read(self.command) {
                Ok(d) if kind == DATA => Answer::Data(node, d),
                Ok(d) => Answer::Digest(node, self.resolver.digest(&d)),
                Err(reason) => Answer::Failed(node, reason),
            };
            let _ = tx.try_send(answer);
            return;
        }
        let mut payload = BytesMut::with_capacity(1 + self.command.len());
        payload.put_u8(kind);
        payload.put_slice(self.command);
        let Ok((id, reply)) = self
            .messenger
            .request(node, Verb::ReadRequest, payload.freeze())
        else {
            let _ = tx.try_send(Answer::Failed(node, ReadFailureReason::UNKNOWN));
            return;
        };
        let tx = tx.clone();
        let messenger = self.messenger.clone();
        let deadline = self.deadline;
        let answer_times = self.answer_times.cloned();
        let sent = std::time::Instant::now();
        tokio::spawn(async move {
            let answer = match tokio::time::timeout_at(deadline, reply).await {
                Ok(Ok(e)) => {
                    if let Some(times) = answer_times {
                        times.record(sent.elapsed());
                    }
                    decode_answer(node, &e)
                }
                _ => {
                    messenger.forget(id);
                    return;
                }
            };
            let _ = tx.send(answer).await;
        });
    }

    async fn reconcile(
        &self,
        nodes: &[NodeId],
        local_writer: &dyn LocalWriter,
    ) -> Result<Bytes, ReadError> {
        let (tx, mut rx) = mpsc::channel(nodes.len().max(1));
        for node in nodes {
            self.ask(*node, DATA, &tx);
        }
        drop(tx);
        let mut answers: Vec<(NodeId, Bytes)> = Vec::new();
        while answers.len() < nodes.len() {
            match tokio::time::timeout_at(self.deadline, rx.recv()).await {
                Ok(Some(Answer::Data(n, d))) => answers.push((n, d)),
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
        if answers.len() < self.plan.block_for {
            return Err(self.timeout(answers.len(), !answers.is_empty()));
        }
        let all: Vec<Bytes> = answers.iter().map(|(_, d)| d.clone()).collect();
        let merged = self.resolver.merge(&all);
        self.repair(&answers, &merged, local_writer).await?;
        Ok(merged)
    }

    /// Sends each stale replica what it lacks and waits for their acknowledgements.
    async fn repair(
        &self,
        answers: &[(NodeId, Bytes)],
        merged: &Bytes,
        local_writer: &dyn LocalWriter,
    ) -> Result<(), ReadError> {
        let mut waiting = Vec::new();
        for (node, theirs) in answers {
            let Some(mutation) = self.resolver.repair(theirs, merged) else {
                continue;
            };
            if *node == self.messenger.local() {
                if local_writer.apply(&mutation).await.is_err() {
                    return Err(self.timeout(answers.len(), true));
                }
                continue;
            }
            if let Ok((id, ack)) = self
                .messenger
                .request(*node, Verb::MutationRequest, mutation)
            {
                waiting.push((id, ack));
            }
        }
        for (id, ack) in waiting {
            if tokio::time::timeout_at(self.deadline, ack).await.is_err() {
                self.messenger.forget(id);
                // The repair did not land in time: the read cannot promise monotonicity.
                return Err(self.timeout(answers.len(), true));
            }
        }
        Ok(())
    }
}

fn decode_answer(node: NodeId, e: &Envelope) -> Answer {
    if e.verb != Verb::ReadResponse {
        let code = <[u8; 2]>::try_from(e.payload.as_ref()).map_or(0, u16::from_be_bytes);
        return Answer::Failed(node, ReadFailureReason(code));
    }
    match e.payload.first() {
        Some(&DATA) => Answer::Data(node, e.payload.slice(1..)),
        Some(&DIGEST) => Answer::Digest(node, e.payload.slice(1..)),
        _ => Answer::Failed(node, ReadFailureReason::UNKNOWN),
    }
}

/// The replica side: runs a ReadRequest and answers with data or its digest.
pub fn serve_read(
    request: &Envelope,
    local: &dyn LocalReader,
    resolver: &dyn ReadResolver,
    messenger: &Messenger,
) {
    let Some((&kind, command)) = request.payload.split_first() else {
        let _ = messenger.respond(request, Verb::Failure, Bytes::new());
        return;
    };
    let command = request.payload.slice(1..1 + command.len());
    match local.read(&command) {
        Ok(data) => {
            let body = if kind == DIGEST {
                resolver.digest(&data)
            } else {
                data
            };
            let mut payload = BytesMut::with_capacity(1 + body.len());
            payload.put_u8(kind);
            payload.put_slice(&body);
            let _ = messenger.respond(request, Verb::ReadResponse, payload.freeze());
        }
        Err(reason) => {
            let payload = Bytes::copy_from_slice(&reason.0.to_be_bytes());
            let _ = messenger.respond(request, Verb::Failure, payload);
        }
    }
}

#[cfg(test)]
mod tests;
