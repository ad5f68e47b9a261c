//! Counters across replicas, replicated as Cassandra replicates them. One replica, the leader,
//! applies each increment: under its counter lock it resolves the increment to an absolute
//! (clock, total) in a shard of its own (the cell path is the leader's host id). What the other
//! replicas receive, directly, through hints or by read repair, is that resolved shard, never the
//! increment: replaying it any number of times changes nothing (the higher clock wins), so no
//! increment is counted twice, and since no replica writes another's shard, none is lost. A
//! counter's value is the sum of its shards (storage's `live_row`).

use super::ClusterNode;
use crate::proxy::ProxyError;
use bytes::Bytes;
use helenus_cluster::locator::NodeId;
use helenus_cluster::messaging::{Envelope, Verb};
use helenus_coordinator::{ConsistencyLevel, WriteError, WritePlan, WriteType};
use helenus_storage as st;
use std::sync::Arc;

/// The replica that applies this write's increments: this node when it is a live replica (no
/// extra hop, as Cassandra prefers), otherwise the first live one the plan lists.
pub(super) fn choose_leader(plan: &WritePlan, local: NodeId) -> Option<NodeId> {
    if plan.live.contains(&local) {
        return Some(local);
    }
    plan.live.first().copied()
}

/// Names `leader`'s shard on every increment of `mutations`.
pub(super) fn assign_shard(mutations: &mut [st::Mutation], leader: NodeId) {
    let shard = Bytes::copy_from_slice(leader.0.as_bytes());
    for m in mutations {
        for c in m.cells_mut() {
            if matches!(c.op, st::CellOp::CounterAdd(_)) && c.path.is_none() {
                c.path = Some(shard.clone());
            }
        }
    }
}

/// Has `leader` apply the increments and returns the resolved mutations for every replica.
pub(super) async fn apply_at_leader(
    cluster: &Arc<ClusterNode>,
    leader: NodeId,
    mutations: Vec<st::Mutation>,
    consistency: ConsistencyLevel,
    block_for: usize,
) -> Result<Vec<st::Mutation>, ProxyError> {
    let timed_out = || {
        ProxyError::Write(WriteError::Timeout {
            consistency,
            received: 0,
            block_for,
            write_type: WriteType::Counter,
        })
    };
    if leader == cluster.local() {
        let Some(node) = cluster.node() else {
            return Err(st::StorageError::ShuttingDown.into());
        };
        let applied = node.engine.apply_as_counter_leader(mutations);
        return match tokio::time::timeout(cluster.write_timeout(), applied).await {
            Ok(resolved) => Ok(resolved?),
            Err(_) => Err(timed_out()),
        };
    }
    let payload = helenus_mutation::encode_mutations(&mutations);
    let (id, answer) = cluster
        .messenger
        .request(leader, Verb::CounterLeaderRequest, payload)
        .map_err(|_| timed_out())?;
    match tokio::time::timeout(cluster.write_timeout(), answer).await {
        Ok(Ok(r)) if r.verb == Verb::CounterLeaderResponse => {
            helenus_mutation::decode_mutations(r.payload).map_err(|_| timed_out())
        }
        Ok(_) => Err(ProxyError::Write(WriteError::Failure {
            consistency,
            received: 0,
            block_for,
            failures: 1,
            write_type: WriteType::Counter,
        })),
        Err(_) => {
            cluster.messenger.forget(id);
            Err(timed_out())
        }
    }
}

/// The leader's side of `apply_at_leader`.
pub(super) async fn serve_leader(cluster: &ClusterNode, engine: &st::Engine, request: &Envelope) {
    let resolved = match helenus_mutation::decode_mutations(request.payload.clone()) {
        Ok(mutations) => engine.apply_as_counter_leader(mutations).await.ok(),
        Err(_) => None,
    };
    let (verb, payload) = match resolved {
        Some(ms) => (
            Verb::CounterLeaderResponse,
            helenus_mutation::encode_mutations(&ms),
        ),
        None => (Verb::Failure, Bytes::new()),
    };
    let _ = cluster.messenger.respond(request, verb, payload);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn increment(path: Option<Bytes>) -> st::Mutation {
        st::Mutation {
            table: [7; 16],
            key: Bytes::from_static(b"k"),
            token: 1,
            partition_deletion: None,
            range_tombstones: vec![],
            static_row: None,
            rows: vec![st::RowUpdate {
                clustering: vec![],
                liveness: None,
                deletion: None,
                cells: vec![st::CellUpdate {
                    column: 1,
                    path,
                    timestamp_us: 10,
                    op: st::CellOp::CounterAdd(5),
                }],
            }],
        }
    }

    fn plan(live: &[NodeId]) -> WritePlan {
        WritePlan {
            consistency: ConsistencyLevel::Quorum,
            live: live.to_vec(),
            down: vec![],
            block_for: 2,
        }
    }

    #[test]
    fn the_local_replica_leads_and_a_coordinator_elsewhere_picks_the_first_live_one() {
        let (a, b, c) = (
            NodeId(uuid::Uuid::from_u128(1)),
            NodeId(uuid::Uuid::from_u128(2)),
            NodeId(uuid::Uuid::from_u128(3)),
        );
        assert_eq!(choose_leader(&plan(&[a, b]), b), Some(b));
        assert_eq!(choose_leader(&plan(&[a, b]), c), Some(a));
        assert_eq!(choose_leader(&plan(&[]), c), None);
    }

    #[test]
    fn increments_are_named_for_the_leader_shard() {
        let leader = NodeId(uuid::Uuid::from_u128(42));
        let mut ms = vec![increment(None)];
        assign_shard(&mut ms, leader);
        let cell = &ms[0].rows[0].cells[0];
        assert_eq!(
            cell.path.as_deref(),
            Some(uuid::Uuid::from_u128(42).as_bytes().as_slice())
        );
    }
}
