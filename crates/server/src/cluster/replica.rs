//! The replica side of the data path: mutations, reads (data or digest), truncation and schema
//! messages from peers, answered from this node's engine; and the storage model the coordinator
//! reconciles with (`LocalStore` as its reader, writer and resolver).
//!
//! A replica answers a read with the *unfiltered* partitions the query covers (tombstones and
//! timestamps kept), in the storage model's frozen encoding. Equal content encodes equally, so
//! the digest is a hash of those bytes; the coordinator reconciles disagreeing answers with the
//! engine's rules and writes the union back to the replicas it read (blocking read repair).

use super::{refuse, wire, ClusterNode};
use crate::node::NodeState;
use bytes::Bytes;
use helenus_cluster::locator::NodeId;
use helenus_cluster::messaging::{Envelope, Verb};
use helenus_coordinator::read::{serve_read, LocalReader, ReadFailureReason, ReadResolver};
use helenus_coordinator::write::serve_mutation;
use helenus_coordinator::{ApplyFuture, HintSink, LocalWriter, ReplicaWriteError};
use helenus_storage as st;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Reads inbound messages until the transport stops: responses go to their waiters, requests
/// each to a task of their own (a slow read must not hold up a mutation behind it).
pub async fn serve(cluster: Arc<ClusterNode>, mut inbox: mpsc::Receiver<Envelope>) {
    while let Some(envelope) = inbox.recv().await {
        if envelope.is_response() {
            cluster.messenger.complete(envelope);
            continue;
        }
        let Some(node) = cluster.node() else { return };
        let cluster = cluster.clone();
        match envelope.verb {
            Verb::MutationRequest => {
                tokio::spawn(async move {
                    let store = LocalStore::new(&node);
                    serve_mutation(&envelope, &store, &cluster.messenger).await;
                });
            }
            Verb::ReadRequest => {
                // Storage reads are synchronous: off the async workers.
                tokio::task::spawn_blocking(move || {
                    let store = LocalStore::new(&node);
                    serve_read(&envelope, &store, &store, &cluster.messenger);
                });
            }
            Verb::PaxosPrepare | Verb::PaxosPropose | Verb::PaxosCommit => {
                // A commit applies to the engine and waits for its commitlog.
                tokio::task::spawn_blocking(move || {
                    helenus_coordinator::paxos::serve_paxos(
                        &envelope,
                        &cluster.acceptor,
                        &cluster.messenger,
                    )
                });
            }
            Verb::MetadataPrepare | Verb::MetadataPropose | Verb::MetadataCommit => {
                // Each state change is synced before the answer.
                tokio::task::spawn_blocking(move || {
                    helenus_coordinator::paxos::serve_paxos(
                        &envelope,
                        &cluster.metadata.acceptor,
                        &cluster.messenger,
                    )
                });
            }
            Verb::BatchStore | Verb::BatchRemove => {
                // Stored batches are synced files.
                tokio::task::spawn_blocking(move || {
                    helenus_coordinator::batchlog::serve_batchlog(
                        &envelope,
                        &cluster.batchlog,
                        &cluster.messenger,
                    )
                });
            }
            Verb::RepairHistory => {
                if let Some(repair) = crate::repair_history::decode(&envelope.payload) {
                    node.repair_history.upsert(repair);
                }
            }
            Verb::TraceSession => {
                if let Some(session) = crate::trace::decode_session(&envelope.payload) {
                    node.traces.keep_remote(session);
                }
            }
            Verb::CounterLeaderRequest => {
                tokio::spawn(async move {
                    super::counters::serve_leader(&cluster, &node.engine, &envelope).await
                });
            }
            Verb::TruncateRequest => {
                tokio::task::spawn_blocking(move || serve_truncate(&node, &cluster, &envelope));
            }
            // Hashing a replica's ranges is a repair's heavy part: at the lower priority.
            Verb::RepairTreeRequest => {
                let spawned = super::background::spawn_background(move || {
                    super::repair::serve_tree(&cluster, &node, &envelope)
                });
                if let Err(e) = spawned {
                    tracing::warn!("repair tree request dropped: no thread for it: {e}");
                }
            }
            Verb::RepairDigestsRequest => {
                let spawned = super::background::spawn_background(move || {
                    super::repair::serve_digests(&cluster, &node, &envelope)
                });
                if let Err(e) = spawned {
                    tracing::warn!("repair digests request dropped: no thread for it: {e}");
                }
            }
            Verb::RepairRowsRequest => {
                tokio::spawn(super::repair::serve_rows(cluster, node, envelope));
            }
            Verb::RepairPrepareRequest | Verb::RepairFinalizeRequest => {
                tokio::spawn(super::repair::serve_session(cluster, node, envelope));
            }
            Verb::RepairSessionWrite => {
                tokio::spawn(super::repair::serve_session_write(cluster, node, envelope));
            }
            Verb::StreamRequest => {
                tokio::spawn(super::streams::serve_stream(cluster, node, envelope));
            }
            Verb::WholeSSTableListRequest
            | Verb::WholeSSTableChunkRequest
            | Verb::WholeSSTableRelease
            | Verb::StreamRequestExcluding => {
                tokio::spawn(super::sstable_stream::serve(cluster, node, envelope));
            }
            Verb::WholeSSTablePullRequest => {
                tokio::spawn(super::whole_push::serve(cluster, node, envelope));
            }
            Verb::SchemaPull | Verb::SchemaPush => {
                tokio::spawn(async move { super::schema::serve(&cluster, &node, envelope).await });
            }
            Verb::AuthPull | Verb::AuthPush => {
                tokio::spawn(
                    async move { super::auth_sync::serve(&cluster, &node, envelope).await },
                );
            }
            _ => refuse(&cluster.messenger, &envelope),
        }
    }
}

fn serve_truncate(node: &NodeState, cluster: &ClusterNode, request: &Envelope) {
    let table: Option<st::TableId> = request.payload.as_ref().try_into().ok();
    let verb = match table.map(|t| node.engine.truncate(t)) {
        Some(Ok(())) => Verb::MutationResponse,
        _ => Verb::Failure,
    };
    let _ = cluster
        .messenger
        .respond(request, verb, bytes::Bytes::new());
}

/// Sends `target` the hints kept for it, if any.
pub async fn deliver_hints_to(cluster: Arc<ClusterNode>, target: NodeId) {
    if !cluster.delivering.lock().insert(target) {
        return;
    }
    deliver(&cluster, target).await;
    cluster.delivering.lock().remove(&target);
}

async fn deliver(cluster: &ClusterNode, target: NodeId) {
    let timeout = cluster.write_timeout();
    match helenus_coordinator::hint_delivery::deliver_hints(
        &cluster.hints,
        target,
        &cluster.messenger,
        timeout,
    )
    .await
    {
        Ok(d) if d.sent > 0 => {
            tracing::info!(%target, sent = d.sent, remaining = d.remaining, "hints delivered")
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(%target, error = %e, "hint delivery failed"),
    }
}

/// This node's engine as the coordinator's replica: applies frozen mutations, answers frozen
/// unfiltered reads, and reconciles answers.
pub struct LocalStore {
    engine: Arc<st::Engine>,
    tombstone_failure_threshold: u64,
}

impl LocalStore {
    pub fn new(node: &NodeState) -> Self {
        LocalStore {
            engine: node.engine.clone(),
            tombstone_failure_threshold: node.config.tombstone_failure_threshold,
        }
    }
}

impl LocalWriter for LocalStore {
    fn apply<'a>(&'a self, mutation: &'a Bytes) -> ApplyFuture<'a> {
        Box::pin(async move {
            let mutations = helenus_mutation::decode_mutations(mutation.clone())
                .map_err(|e| ReplicaWriteError::Failed(e.to_string()))?;
            crate::proxy::apply_locally(&self.engine, mutations)
                .await
                .map_err(|e| match e {
                    st::StorageError::ShuttingDown => ReplicaWriteError::Overloaded,
                    other => ReplicaWriteError::Failed(other.to_string()),
                })
        })
    }
}

impl LocalReader for LocalStore {
    fn read(&self, command: &Bytes) -> Result<Bytes, ReadFailureReason> {
        let (table, query) =
            wire::decode_read(command.clone()).map_err(|_| ReadFailureReason::UNKNOWN)?;
        let result = self
            .engine
            .read_unfiltered(table, &query, self.tombstone_failure_threshold)
            .map_err(|e| match e {
                st::StorageError::TombstoneOverwhelming { .. } => {
                    tracing::error!("Scanned over {} tombstones during query; query aborted (see tombstone_failure_threshold)", self.tombstone_failure_threshold);
                    ReadFailureReason::READ_TOO_MANY_TOMBSTONES
                }
                _ => ReadFailureReason::UNKNOWN,
            })?;
        Ok(helenus_mutation::encode_mutations(&result.partitions))
    }
}

impl ReadResolver for LocalStore {
    fn digest(&self, data: &Bytes) -> Bytes {
        Bytes::copy_from_slice(&md5::compute(data).0)
    }

    /// The union of every answer: the engine's reconcile rules decide what wins when the result
    /// is resolved or applied, so order and duplicates do not matter.
    fn merge(&self, answers: &[Bytes]) -> Bytes {
        let mut all = Vec::new();
        for a in answers {
            if let Ok(mutations) = helenus_mutation::decode_mutations(a.clone()) {
                all.extend(mutations);
            }
        }
        helenus_mutation::encode_mutations(&all)
    }

    /// A replica whose answer was not everything gets the union; applying what it already
    /// has changes nothing.
    fn repair(&self, theirs: &Bytes, merged: &Bytes) -> Option<Bytes> {
        (theirs != merged).then(|| merged.clone())
    }
}

/// Hints for replicas that missed a write, kept on disk until they return.
pub struct Hints(pub Arc<ClusterNode>);

impl HintSink for Hints {
    fn store(&self, target: NodeId, mutation: &Bytes) {
        if !self.0.within_hint_window(target) {
            return;
        }
        if let Err(e) = self.0.hints.append(target, mutation) {
            tracing::warn!(%target, error = %e, "hint not stored");
        }
    }
}
