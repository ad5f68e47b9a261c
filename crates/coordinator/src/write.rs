//! The write path across replicas (Cassandra's `AbstractWriteResponseHandler` and
//! `StorageProxy.mutate`): send the mutation to every live replica, apply it here if this node is
//! one, count acknowledgements against the level's `block_for`, and answer as soon as enough have
//! arrived. Replicas believed down, and replicas that do not answer within the timeout, get a hint
//! so they catch up when they return.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use helenus_cluster::locator::NodeId;
use helenus_cluster::messaging::{Envelope, Messenger, Verb};
use tokio::sync::mpsc;

use crate::consistency::ConsistencyLevel;
use crate::replica_plan::{Unavailable, WritePlan};

/// What kind of write timed out or failed (the protocol's `writeType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteType {
    Simple,
    Batch,
    UnloggedBatch,
    Counter,
    BatchLog,
    Cas,
    View,
    Cdc,
}

impl WriteType {
    /// The string the native protocol sends.
    pub fn name(self) -> &'static str {
        match self {
            WriteType::Simple => "SIMPLE",
            WriteType::Batch => "BATCH",
            WriteType::UnloggedBatch => "UNLOGGED_BATCH",
            WriteType::Counter => "COUNTER",
            WriteType::BatchLog => "BATCH_LOG",
            WriteType::Cas => "CAS",
            WriteType::View => "VIEW",
            WriteType::Cdc => "CDC",
        }
    }
}

/// Why a write did not reach its consistency level; fields as the protocol reports them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    #[error("{0}")]
    Unavailable(#[from] Unavailable),
    #[error("Operation timed out - received only {received} responses.")]
    Timeout {
        consistency: ConsistencyLevel,
        received: usize,
        block_for: usize,
        write_type: WriteType,
    },
    #[error("Operation failed - received {received} responses and {failures} failures")]
    Failure {
        consistency: ConsistencyLevel,
        received: usize,
        block_for: usize,
        failures: usize,
        write_type: WriteType,
    },
}

/// A replica could not apply a mutation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplicaWriteError {
    #[error("replica overloaded")]
    Overloaded,
    #[error("{0}")]
    Failed(String),
}

/// A local write still running.
pub type ApplyFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), ReplicaWriteError>> + Send + 'a>>;

/// Applies a mutation to this node's storage (the replica side of a write). Async: storage
/// waits for its commitlog sync and for memtable room, and must not hold a worker thread.
pub trait LocalWriter: Send + Sync {
    fn apply<'a>(&'a self, mutation: &'a Bytes) -> ApplyFuture<'a>;
}

/// Keeps a mutation for a replica that missed it.
pub trait HintSink: Send + Sync {
    fn store(&self, target: NodeId, mutation: &Bytes);
}

enum Outcome {
    Ack,
    Failed,
}

/// Writes `mutation` as `plan` says and waits for the level.
pub async fn write(
    plan: &WritePlan,
    mutation: Bytes,
    write_type: WriteType,
    messenger: &Messenger,
    local: &dyn LocalWriter,
    hints: Arc<dyn HintSink>,
    timeout: Duration,
) -> Result<(), WriteError> {
    let (tx, mut outcomes) = mpsc::channel(plan.live.len().max(1));
    let mut hinted = 0;
    for node in &plan.down {
        hints.store(*node, &mutation);
        hinted += 1;
    }
    let mut sent = 0;
    for node in &plan.live {
        sent += 1;
        if *node == messenger.local() {
            let outcome = match local.apply(&mutation).await {
                Ok(()) => Outcome::Ack,
                Err(_) => Outcome::Failed,
            };
            let _ = tx.try_send(outcome);
            continue;
        }
        match messenger.request(*node, Verb::MutationRequest, mutation.clone()) {
            Ok((id, answer)) => {
                let tx = tx.clone();
                let messenger = messenger.clone();
                let hints = hints.clone();
                let mutation = mutation.clone();
                let target = *node;
                tokio::spawn(async move {
                    let outcome = match tokio::time::timeout(timeout, answer).await {
                        Ok(Ok(r)) if r.verb == Verb::MutationResponse => Outcome::Ack,
                        Ok(Ok(_)) => Outcome::Failed,
                        _ => {
                            // No answer in time: it may have missed the write.
                            messenger.forget(id);
                            hints.store(target, &mutation);
                            return;
                        }
                    };
                    let _ = tx.send(outcome).await;
                });
            }
            Err(_) => {
                hints.store(*node, &mutation);
                hinted += 1;
            }
        }
    }
    drop(tx);
    let block_for = plan.block_for;
    let consistency = plan.consistency;
    if consistency == ConsistencyLevel::Any && hinted > 0 {
        // ANY is satisfied by a hint stored here.
        return Ok(());
    }
    let (mut acks, mut failures) = (0usize, 0usize);
    let deadline = tokio::time::Instant::now() + timeout;
    while acks < block_for {
        match tokio::time::timeout_at(deadline, outcomes.recv()).await {
            Ok(Some(Outcome::Ack)) => acks += 1,
            Ok(Some(Outcome::Failed)) => {
                failures += 1;
                if sent - failures < block_for {
                    return Err(WriteError::Failure {
                        consistency,
                        received: acks,
                        block_for,
                        failures,
                        write_type,
                    });
                }
            }
            // Every answer is in (the rest timed out inside their tasks) or the deadline passed.
            Ok(None) | Err(_) => {
                return Err(WriteError::Timeout {
                    consistency,
                    received: acks,
                    block_for,
                    write_type,
                })
            }
        }
    }
    Ok(())
}

/// The replica side: applies a MutationRequest and answers it.
pub async fn serve_mutation(request: &Envelope, local: &dyn LocalWriter, messenger: &Messenger) {
    let verb = match local.apply(&request.payload).await {
        Ok(()) => Verb::MutationResponse,
        Err(_) => Verb::Failure,
    };
    // A lost answer is the coordinator's timeout to handle.
    let _ = messenger.respond(request, verb, Bytes::new());
}

#[cfg(test)]
mod tests {
    use super::*;
    use helenus_cluster::messaging::SimulatedNetwork;
    use std::sync::Mutex;
    use uuid::Uuid;

    fn node(n: u128) -> NodeId {
        NodeId(Uuid::from_u128(n))
    }

    #[derive(Default)]
    struct Store {
        rows: Mutex<Vec<Bytes>>,
        fail: bool,
    }

    impl LocalWriter for Store {
        fn apply<'a>(&'a self, mutation: &'a Bytes) -> ApplyFuture<'a> {
            Box::pin(async move {
                if self.fail {
                    return Err(ReplicaWriteError::Failed("disk full".into()));
                }
                self.rows.lock().unwrap().push(mutation.clone());
                Ok(())
            })
        }
    }

    #[derive(Default)]
    struct Hints(Mutex<Vec<NodeId>>);

    impl HintSink for Hints {
        fn store(&self, target: NodeId, _: &Bytes) {
            self.0.lock().unwrap().push(target);
        }
    }

    /// Node 1 coordinates; nodes 2 and 3 are replicas answering from their inboxes unless silent.
    struct Cluster {
        messenger: Messenger,
        inbox: mpsc::Receiver<Envelope>,
        local: Arc<Store>,
        replicas: Vec<Arc<Store>>,
        hints: Arc<Hints>,
    }

    fn cluster(silent: &[u128], failing: &[u128]) -> Cluster {
        let net = SimulatedNetwork::new(1);
        let (t1, inbox) = net.join(node(1), 64);
        let mut replicas = Vec::new();
        for n in [2u128, 3] {
            let (t, mut rx) = net.join(node(n), 64);
            let store = Arc::new(Store {
                fail: failing.contains(&n),
                ..Store::default()
            });
            replicas.push(store.clone());
            let messenger = Messenger::new(Arc::new(t));
            let silent = silent.contains(&n);
            tokio::spawn(async move {
                while let Some(request) = rx.recv().await {
                    if !silent {
                        serve_mutation(&request, store.as_ref(), &messenger).await;
                    }
                }
            });
        }
        Cluster {
            messenger: Messenger::new(Arc::new(t1)),
            inbox,
            local: Arc::new(Store::default()),
            replicas,
            hints: Arc::new(Hints::default()),
        }
    }

    fn pump(c: &mut Cluster) {
        let messenger = c.messenger.clone();
        let mut inbox = std::mem::replace(&mut c.inbox, mpsc::channel(1).1);
        tokio::spawn(async move {
            while let Some(e) = inbox.recv().await {
                messenger.complete(e);
            }
        });
    }

    fn plan(consistency: ConsistencyLevel, block_for: usize, down: Vec<NodeId>) -> WritePlan {
        let live = [node(1), node(2), node(3)]
            .into_iter()
            .filter(|n| !down.contains(n))
            .collect();
        WritePlan {
            consistency,
            live,
            down,
            block_for,
        }
    }

    const TIMEOUT: Duration = Duration::from_millis(300);

    #[tokio::test]
    async fn quorum_answers_with_one_replica_silent_and_the_silent_one_gets_a_hint() {
        let mut c = cluster(&[3], &[]);
        pump(&mut c);
        let p = plan(ConsistencyLevel::Quorum, 2, vec![]);
        let hints: Arc<dyn HintSink> = c.hints.clone();
        write(
            &p,
            Bytes::from_static(b"m"),
            WriteType::Simple,
            &c.messenger,
            c.local.as_ref(),
            hints,
            TIMEOUT,
        )
        .await
        .unwrap();
        assert_eq!(c.local.rows.lock().unwrap().len(), 1);
        tokio::time::sleep(TIMEOUT * 2).await;
        assert_eq!(c.replicas[0].rows.lock().unwrap().len(), 1);
        assert_eq!(
            *c.hints.0.lock().unwrap(),
            vec![node(3)],
            "hinted after its timeout"
        );
        assert_eq!(c.messenger.outstanding(), 0);
    }

    #[tokio::test]
    async fn all_times_out_with_the_counts_the_protocol_reports() {
        let mut c = cluster(&[3], &[]);
        pump(&mut c);
        let p = plan(ConsistencyLevel::All, 3, vec![]);
        let hints: Arc<dyn HintSink> = c.hints.clone();
        let err = write(
            &p,
            Bytes::from_static(b"m"),
            WriteType::Batch,
            &c.messenger,
            c.local.as_ref(),
            hints,
            TIMEOUT,
        )
        .await
        .unwrap_err();
        assert_eq!(
            err,
            WriteError::Timeout {
                consistency: ConsistencyLevel::All,
                received: 2,
                block_for: 3,
                write_type: WriteType::Batch
            }
        );
        assert_eq!(
            err.to_string(),
            "Operation timed out - received only 2 responses."
        );
    }

    #[tokio::test]
    async fn a_failing_replica_makes_all_fail_at_once() {
        let mut c = cluster(&[], &[2]);
        pump(&mut c);
        let p = plan(ConsistencyLevel::All, 3, vec![]);
        let hints: Arc<dyn HintSink> = c.hints.clone();
        let started = tokio::time::Instant::now();
        let err = write(
            &p,
            Bytes::from_static(b"m"),
            WriteType::Simple,
            &c.messenger,
            c.local.as_ref(),
            hints,
            TIMEOUT,
        )
        .await
        .unwrap_err();
        assert!(
            matches!(err, WriteError::Failure { failures: 1, .. }),
            "{err:?}"
        );
        assert!(
            started.elapsed() < TIMEOUT,
            "no waiting for a level that cannot be met"
        );
    }

    #[tokio::test]
    async fn down_replicas_are_hinted_and_any_is_satisfied_by_a_hint() {
        let mut c = cluster(&[], &[]);
        pump(&mut c);
        let p = WritePlan {
            consistency: ConsistencyLevel::Any,
            live: vec![],
            down: vec![node(2), node(3)],
            block_for: 1,
        };
        let hints: Arc<dyn HintSink> = c.hints.clone();
        write(
            &p,
            Bytes::from_static(b"m"),
            WriteType::Simple,
            &c.messenger,
            c.local.as_ref(),
            hints,
            TIMEOUT,
        )
        .await
        .unwrap();
        assert_eq!(c.hints.0.lock().unwrap().len(), 2);
    }
}
