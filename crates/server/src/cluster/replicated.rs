//! The `StorageProxy` of a ring member: every write goes to the key's replicas (hints for the
//! ones down), every read asks as many replicas as the level needs, data from the closest and
//! digests from the others, reconciling and repairing on disagreement; range reads walk the
//! ring's ranges in token order, each read from its own replicas. System keyspaces
//! (LocalStrategy) stay on this node.
//!
//! Reads are asynchronous at the executor's seam: a read that needs other nodes awaits their
//! answers without holding a thread. A read that the local replica alone satisfies
//! (ONE/LOCAL_ONE with this node a replica) takes the engine's ordinary path, as on a single
//! node.

use super::replica::{Hints, LocalStore};
use super::{wire, ClusterNode};
use crate::proxy::{CasDecision, CasResult, ProxyError, ProxyFuture, StorageProxy};
use helenus_cluster::locator::{NodeId, ReplicationMap, ReplicationStrategy, Token, TokenRange};
use helenus_cluster::messaging::Verb;
use helenus_coordinator::batchlog::{batchlog_endpoints, remove_batch, store_batch, Batch};
use helenus_coordinator::paxos::{cas_with, CasRequest, PaxosError, PaxosVerbs};
use helenus_coordinator::read::{ReadError, ReadOptions};
use helenus_coordinator::speculation::{AnswerTimes, SpeculativeRetry};
use helenus_coordinator::{plan_read, plan_write, ConsistencyLevel, LiveReplicas, WriteType};
use helenus_schema::KeyspaceMeta;
use helenus_storage as st;
use parking_lot::RwLock;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

pub struct ReplicatedProxy {
    cluster: Arc<ClusterNode>,
    local: Arc<dyn StorageProxy>,
    /// Table id -> its keyspace and read settings, rebuilt when the schema generation moves.
    tables: RwLock<(u64, HashMap<st::TableId, ReplicatedTable>)>,
}

/// A replicated table as reads need it.
#[derive(Clone)]
struct ReplicatedTable {
    keyspace: Arc<KeyspaceMeta>,
    /// Its `speculative_retry` (the default when the stored text does not parse).
    speculation: SpeculativeRetry,
    /// Its replicas' recent answer times, kept across schema changes.
    answer_times: Arc<AnswerTimes>,
}

impl ReplicatedProxy {
    pub fn new(cluster: Arc<ClusterNode>) -> Self {
        let local: Arc<dyn StorageProxy> = match cluster.node() {
            Some(node) => Arc::new(crate::proxy::LocalProxy::new(node.engine.clone())),
            None => Arc::new(NoNode),
        };
        ReplicatedProxy {
            cluster,
            local,
            tables: RwLock::new((u64::MAX, HashMap::new())),
        }
    }

    /// `table` when it is replicated across the ring (not LocalStrategy).
    fn replicated_table(&self, table: &st::TableId) -> Option<ReplicatedTable> {
        let node = self.cluster.node()?;
        let generation = node.schema_generation();
        let previous = {
            let cached = self.tables.read();
            if cached.0 == generation {
                return cached.1.get(table).cloned();
            }
            cached.1.clone()
        };
        let schema = node.schema();
        let mut by_table = HashMap::new();
        for ks in schema.user_keyspaces() {
            if matches!(super::strategy_of(ks), ReplicationStrategy::Local) {
                continue;
            }
            for t in ks.tables.values() {
                let id = *t.id.as_bytes();
                let answer_times = previous
                    .get(&id)
                    .map_or_else(Default::default, |p| p.answer_times.clone());
                let speculation =
                    SpeculativeRetry::parse(&t.params.speculative_retry).unwrap_or_default();
                let entry = ReplicatedTable {
                    keyspace: ks.clone(),
                    speculation,
                    answer_times,
                };
                by_table.insert(id, entry);
            }
        }
        let found = by_table.get(table).cloned();
        *self.tables.write() = (generation, by_table);
        found
    }

    /// The keyspace of `table` when it is replicated across the ring (not LocalStrategy).
    fn replicated_keyspace(&self, table: &st::TableId) -> Option<Arc<KeyspaceMeta>> {
        self.replicated_table(table).map(|t| t.keyspace)
    }

    fn live(&self) -> impl Fn(NodeId) -> bool + '_ {
        let local = self.cluster.local();
        move |n| n == local || self.cluster.service.is_alive(n)
    }

    /// The timeout, and when a late replica gets a duplicate: the table's `speculative_retry`
    /// (by default its replicas' 99th percentile answer time).
    fn read_options(&self, read: &Read, range: bool) -> ReadOptions {
        let ms = self.cluster.node().map_or(5000, |n| {
            if range {
                n.config.range_request_timeout_ms
            } else {
                n.config.read_request_timeout_ms
            }
        });
        ReadOptions {
            timeout: Duration::from_millis(ms),
            speculate_after: read.speculation.delay(&read.answer_times),
            answer_times: Some(read.answer_times.clone()),
        }
    }

    /// One token's read at `consistency`: the local engine when it alone answers, else the
    /// coordinator's read across replicas, resolved into live rows.
    async fn read_token(
        &self,
        map: &ReplicationMap,
        token: Token,
        read: &Read,
        query: &st::ReadQuery,
        range: bool,
    ) -> Result<st::ReadResult, ProxyError> {
        let (table, consistency, threshold) = (read.table, read.consistency, read.threshold);
        let ring = map.ring().clone();
        let plan = {
            let is_alive = self.live();
            let live = LiveReplicas {
                ring: &ring,
                local: self.cluster.local(),
                is_alive: &is_alive,
            };
            plan_read(map, token, consistency, &live).map_err(ReadError::from)?
        };
        if plan.block_for <= 1 && plan.contacts.first() == Some(&self.cluster.local()) {
            return self.local.read(table, query, consistency, threshold).await;
        }
        let Some(node) = self.cluster.node() else {
            return Err(st::StorageError::ShuttingDown.into());
        };
        let store = LocalStore::new(&node);
        // Replicas read without limits: each would stop after its own live rows, and rows past
        // one replica's stop would be resolved without its data (no short-read protection yet).
        // The query's limits apply when the answers are resolved.
        let mut unlimited = query.clone();
        unlimited.row_limit = None;
        unlimited.per_partition_limit = None;
        unlimited.partition_limit = None;
        let command = wire::encode_read(table, &unlimited);
        let options = self.read_options(read, range);
        let messenger = self.cluster.messenger.clone();
        let answer = helenus_coordinator::read::read(
            &plan, command, &messenger, &store, &store, &store, options,
        )
        .await
        .map_err(|e| self.with_addresses(e, &ring))?;
        let partitions = helenus_mutation::decode_mutations(answer).map_err(|e| {
            st::StorageError::InvalidRequest(format!("replica answer not understood: {e}"))
        })?;
        Ok(node
            .engine
            .resolve_unfiltered(table, vec![partitions], query)?)
    }

    /// A read failure names its replicas by address, as the protocol reports them.
    fn with_addresses(&self, e: ReadError, ring: &helenus_cluster::locator::Ring) -> ProxyError {
        match e {
            ReadError::Failure {
                consistency,
                received,
                block_for,
                reasons,
                ..
            } => ProxyError::ReadFailure {
                consistency,
                received,
                block_for,
                reasons: reasons
                    .into_iter()
                    .filter_map(|(n, r)| Some((ring.member(n)?.address, r.0)))
                    .collect(),
            },
            other => other.into(),
        }
    }

    /// A range read: the ring's ranges in token order from the query's start, each read from
    /// its own replicas, until the query's limits are met.
    async fn read_range(
        &self,
        read: Read,
        query: &st::ReadQuery,
    ) -> Result<st::ReadResult, ProxyError> {
        let (table, consistency, threshold) = (read.table, read.consistency, read.threshold);
        let st::PartitionRange::Range { start, end } = &query.partitions else {
            return self.local.read(table, query, consistency, threshold).await;
        };
        let map = self.cluster.map_for(&read.keyspace);
        let local = self.cluster.local();
        let pieces = pieces_between(&map, start, end);
        let one = matches!(
            consistency,
            ConsistencyLevel::One | ConsistencyLevel::LocalOne
        );
        if one && pieces.iter().all(|(_, replicas)| replicas.contains(&local)) {
            // Every range has a replica here: one local scan answers, as on a single node.
            return self.local.read(table, query, consistency, threshold).await;
        }
        let mut out = st::ReadResult::default();
        let (mut rows, mut partitions) = (0usize, 0usize);
        for (range, _) in pieces {
            let mut sub = query.clone();
            sub.partitions = clip(range, start, end);
            sub.row_limit = query.row_limit.map(|l| l.saturating_sub(rows));
            sub.partition_limit = query.partition_limit.map(|l| l.saturating_sub(partitions));
            let got = self.read_token(&map, range.end, &read, &sub, true).await?;
            rows += got.partitions.iter().map(|p| p.rows.len()).sum::<usize>();
            partitions += got.partitions.len();
            out.stats.live_rows += got.stats.live_rows;
            out.stats.tombstones_scanned += got.stats.tombstones_scanned;
            out.partitions.extend(got.partitions);
            let full = query.row_limit.is_some_and(|l| rows >= l)
                || query.partition_limit.is_some_and(|l| partitions >= l);
            if full {
                break;
            }
        }
        Ok(out)
    }
}

type Groups = BTreeMap<(String, i64), (Arc<KeyspaceMeta>, Vec<st::Mutation>)>;

impl ReplicatedProxy {
    /// Writes the mutations of tables that are not replicated (system keyspaces) here and
    /// returns the others by partition.
    async fn write_unreplicated(
        &self,
        mutations: Vec<st::Mutation>,
        consistency: ConsistencyLevel,
    ) -> Result<Groups, ProxyError> {
        let (groups, local_only) = self.by_partition(mutations);
        if !local_only.is_empty() {
            self.local.mutate(local_only, consistency).await?;
        }
        Ok(groups)
    }

    /// Mutations by (keyspace, partition), each with its own replicas; those of tables that
    /// are not replicated (system keyspaces) apart.
    fn by_partition(&self, mutations: Vec<st::Mutation>) -> (Groups, Vec<st::Mutation>) {
        let mut groups: Groups = BTreeMap::new();
        let mut local_only = Vec::new();
        for m in mutations {
            match self.replicated_keyspace(&m.table) {
                Some(ks) => groups
                    .entry((ks.name.clone(), m.token))
                    .or_insert_with(|| (ks.clone(), Vec::new()))
                    .1
                    .push(m),
                None => local_only.push(m),
            }
        }
        (groups, local_only)
    }

    /// Writes every group to its replicas at once; the first failure is the answer.
    async fn write_groups(
        &self,
        groups: Groups,
        consistency: ConsistencyLevel,
        write_type: WriteType,
    ) -> Result<(), ProxyError> {
        if groups.len() == 1 {
            // The common case: no task to spawn.
            if let Some(((_, token), (ks, group))) = groups.into_iter().next() {
                let cluster = self.cluster.clone();
                return write_partition(cluster, &ks, token, group, consistency, write_type).await;
            }
            return Ok(());
        }
        let mut writes = tokio::task::JoinSet::new();
        for ((_, token), (ks, group)) in groups {
            let cluster = self.cluster.clone();
            writes.spawn(async move {
                write_partition(cluster, &ks, token, group, consistency, write_type).await
            });
        }
        let mut first_error = None;
        while let Some(done) = writes.join_next().await {
            let outcome = done.unwrap_or_else(|e| {
                Err(ProxyError::Storage(st::StorageError::InvalidRequest(
                    format!("write task failed: {e}"),
                )))
            });
            if let (Err(e), None) = (outcome, &first_error) {
                first_error = Some(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// What every part of one read shares.
struct Read {
    table: st::TableId,
    consistency: ConsistencyLevel,
    threshold: u64,
    keyspace: Arc<KeyspaceMeta>,
    /// The table's `speculative_retry` and its replicas' answer times, looked up once per read.
    speculation: SpeculativeRetry,
    answer_times: Arc<AnswerTimes>,
}

/// The ring's ranges (start exclusive, end inclusive) that meet the query's token span, in
/// token order; the range wrapping past the largest token is split in two.
fn pieces_between<'m>(
    map: &'m ReplicationMap,
    start: &st::PartitionBound,
    end: &st::PartitionBound,
) -> Vec<(TokenRange, &'m [NodeId])> {
    let from = bound_token(start).unwrap_or(i64::MIN);
    let to = bound_token(end).unwrap_or(i64::MAX);
    let mut pieces = Vec::new();
    for (range, replicas) in map.ranges() {
        if range.start < range.end {
            pieces.push((range, replicas));
        } else {
            // Wraps: (start, MAX] and (MIN, end].
            pieces.push((TokenRange::new(range.start, i64::MAX), replicas));
            pieces.push((TokenRange::new(i64::MIN, range.end), replicas));
        }
    }
    pieces.retain(|(r, _)| r.end >= from && r.start < to && r.start < r.end);
    pieces.sort_by_key(|(r, _)| r.start);
    pieces
}

fn bound_token(b: &st::PartitionBound) -> Option<i64> {
    match b {
        st::PartitionBound::Unbounded => None,
        st::PartitionBound::Token { token, .. } | st::PartitionBound::Key { token, .. } => {
            Some(*token)
        }
    }
}

/// The part of the query's partitions inside `range`: the query's own bound where it falls
/// inside the range (keys at one token never straddle ranges), the range's bound otherwise.
fn clip(
    range: TokenRange,
    start: &st::PartitionBound,
    end: &st::PartitionBound,
) -> st::PartitionRange {
    let start = match bound_token(start) {
        Some(t) if t > range.start => start.clone(),
        _ if range.start == i64::MIN => st::PartitionBound::Unbounded,
        _ => st::PartitionBound::Token {
            token: range.start,
            inclusive: false,
        },
    };
    let end = match bound_token(end) {
        Some(t) if t <= range.end => end.clone(),
        _ => st::PartitionBound::Token {
            token: range.end,
            inclusive: true,
        },
    };
    st::PartitionRange::Range { start, end }
}

impl StorageProxy for ReplicatedProxy {
    fn mutate(
        &self,
        mutations: Vec<st::Mutation>,
        consistency: ConsistencyLevel,
    ) -> ProxyFuture<'_, ()> {
        Box::pin(async move {
            let groups = self.write_unreplicated(mutations, consistency).await?;
            let write_type = if groups.len() > 1 {
                WriteType::UnloggedBatch
            } else {
                WriteType::Simple
            };
            self.write_groups(groups, consistency, write_type).await
        })
    }

    fn mutate_logged(
        &self,
        mutations: Vec<st::Mutation>,
        consistency: ConsistencyLevel,
    ) -> ProxyFuture<'_, ()> {
        Box::pin(async move {
            let groups = self.write_unreplicated(mutations, consistency).await?;
            if groups.len() < 2 {
                // One partition is atomic by itself (one commitlog entry on each replica).
                return self
                    .write_groups(groups, consistency, WriteType::Simple)
                    .await;
            }
            let batch = Batch {
                id: uuid::Uuid::new_v4(),
                created_ms: self.cluster.service_clock_ms(),
                mutations: groups
                    .values()
                    .map(|(_, group)| helenus_mutation::encode_mutations(group))
                    .collect(),
            };
            let endpoints = {
                let ring = self.cluster.service.ring();
                let is_alive = self.live();
                batchlog_endpoints(&ring, self.cluster.local(), &is_alive)
            };
            store_batch(
                &batch,
                &endpoints,
                &self.cluster.messenger,
                &self.cluster.batchlog,
                consistency,
                self.cluster.write_timeout(),
            )
            .await?;
            self.write_groups(groups, consistency, WriteType::Batch)
                .await?;
            remove_batch(
                batch.id,
                &endpoints,
                &self.cluster.messenger,
                &self.cluster.batchlog,
            );
            Ok(())
        })
    }

    fn read<'a>(
        &'a self,
        table: st::TableId,
        query: &'a st::ReadQuery,
        consistency: ConsistencyLevel,
        tombstone_failure_threshold: u64,
    ) -> ProxyFuture<'a, st::ReadResult> {
        let Some(replicated) = self.replicated_table(&table) else {
            return self
                .local
                .read(table, query, consistency, tombstone_failure_threshold);
        };
        let read = Read {
            table,
            consistency,
            threshold: tombstone_failure_threshold,
            keyspace: replicated.keyspace,
            speculation: replicated.speculation,
            answer_times: replicated.answer_times,
        };
        Box::pin(async move {
            match &query.partitions {
                st::PartitionRange::Single { token, .. } => {
                    let map = self.cluster.map_for(&read.keyspace);
                    self.read_token(&map, *token, &read, query, false).await
                }
                st::PartitionRange::Range { .. } => self.read_range(read, query).await,
            }
        })
    }

    fn cas<'a>(
        &'a self,
        table: st::TableId,
        query: &'a st::ReadQuery,
        serial: ConsistencyLevel,
        decide: CasDecision<'a>,
    ) -> Option<ProxyFuture<'a, CasResult>> {
        let keyspace = self.replicated_keyspace(&table)?;
        let st::PartitionRange::Single { key, token } = &query.partitions else {
            return None;
        };
        Some(Box::pin(async move {
            let node = self
                .cluster
                .node()
                .ok_or(ProxyError::Storage(st::StorageError::ShuttingDown))?;
            let map = self.cluster.map_for(&keyspace);
            let paxos_error = |error| ProxyError::Paxos {
                error,
                consistency: serial,
            };
            let plan = {
                let ring = map.ring().clone();
                let is_alive = self.live();
                let live = LiveReplicas {
                    ring: &ring,
                    local: self.cluster.local(),
                    is_alive: &is_alive,
                };
                plan_read(&map, *token, serial, &live)
            }
            .map_err(|u| {
                paxos_error(PaxosError::Unavailable {
                    required: u.required,
                    alive: u.alive,
                })
            })?;
            let replicas: Vec<NodeId> = plan.contacts.iter().chain(&plan.spare).copied().collect();
            let request = CasRequest {
                verbs: PaxosVerbs::LWT,
                key: super::paxos::paxos_key(&table, key),
                replicas: &replicas,
                quorum: plan.block_for,
                timeout: self.cluster.write_timeout(),
            };
            let resolve = |current: Option<&bytes::Bytes>| -> Option<st::ReadResult> {
                let partitions = match current {
                    Some(c) => helenus_mutation::decode_mutations(c.clone()).ok()?,
                    None => Vec::new(),
                };
                node.engine
                    .resolve_unfiltered(table, vec![partitions], query)
                    .ok()
            };
            let outcome = cas_with(
                &request,
                &self.cluster.messenger,
                &self.cluster.acceptor,
                &self.cluster.ballots,
                super::paxos::union_current,
                |current| {
                    let rows = resolve(current)?;
                    decide(&rows).map(|m| helenus_mutation::encode_mutations(&m))
                },
            )
            .await
            .map_err(paxos_error)?;
            let current = resolve(outcome.current.as_ref()).unwrap_or_default();
            Ok(CasResult {
                applied: outcome.applied,
                current,
            })
        }))
    }

    fn truncate(&self, table: st::TableId) -> Result<(), ProxyError> {
        if self.replicated_keyspace(&table).is_none() {
            return self.local.truncate(table);
        }
        let ring = self.cluster.service.ring();
        let local = self.cluster.local();
        let others: Vec<NodeId> = ring
            .members()
            .map(|m| m.id)
            .filter(|n| *n != local)
            .collect();
        if others.iter().any(|n| !self.cluster.service.is_alive(*n)) {
            return Err(ProxyError::Truncate(
                "Cannot perform truncate, some hosts are down".into(),
            ));
        }
        self.local.truncate(table)?;
        let timeout = self.cluster.write_timeout().max(Duration::from_secs(10));
        let messenger = self.cluster.messenger.clone();
        let payload = bytes::Bytes::copy_from_slice(&table);
        tokio::runtime::Handle::current().block_on(async move {
            for node in others {
                let (id, answer) = messenger
                    .request(node, Verb::TruncateRequest, payload.clone())
                    .map_err(|e| ProxyError::Truncate(e.to_string()))?;
                match tokio::time::timeout(timeout, answer).await {
                    Ok(Ok(r)) if r.verb == Verb::MutationResponse => {}
                    Ok(_) => {
                        return Err(ProxyError::Truncate(format!("truncate failed on {node}")))
                    }
                    Err(_) => {
                        messenger.forget(id);
                        return Err(ProxyError::Truncate(
                            "Truncate timed out - received only 0 responses".into(),
                        ));
                    }
                }
            }
            Ok(())
        })
    }
}

/// One partition's mutations to its replicas at `consistency`.
async fn write_partition(
    cluster: Arc<ClusterNode>,
    keyspace: &KeyspaceMeta,
    token: i64,
    mut mutations: Vec<st::Mutation>,
    consistency: ConsistencyLevel,
    mut write_type: WriteType,
) -> Result<(), ProxyError> {
    let map = cluster.map_for(keyspace);
    let ring = map.ring().clone();
    let local = cluster.local();
    let plan = {
        let is_alive = |n: NodeId| n == local || cluster.service.is_alive(n);
        let live = LiveReplicas {
            ring: &ring,
            local,
            is_alive: &is_alive,
        };
        // Nodes joining the ring get the writes of the ranges they are gaining, and a write
        // waits for one more acknowledgement per such node, as Cassandra's does.
        let pending = cluster.pending_replicas(keyspace, &map, token);
        plan_write(&map, token, &pending, consistency, &live)
            .map_err(helenus_coordinator::WriteError::from)?
    };
    let Some(node) = cluster.node() else {
        return Err(st::StorageError::ShuttingDown.into());
    };
    if mutations.iter().any(st::Mutation::has_counter_increments) {
        let leader = super::counters::choose_leader(&plan, local)
            .ok_or(ProxyError::Storage(st::StorageError::ShuttingDown))?;
        super::counters::assign_shard(&mut mutations, leader);
        mutations = super::counters::apply_at_leader(
            &cluster,
            leader,
            mutations,
            consistency,
            plan.block_for,
        )
        .await?;
        write_type = WriteType::Counter;
    }
    let store = LocalStore::new(&node);
    let hints: Arc<dyn helenus_coordinator::HintSink> = Arc::new(Hints(cluster.clone()));
    helenus_coordinator::write(
        &plan,
        helenus_mutation::encode_mutations(&mutations),
        write_type,
        &cluster.messenger,
        &store,
        hints,
        cluster.write_timeout(),
    )
    .await?;
    Ok(())
}

/// Stands in for the local engine once the node is gone (only during shutdown).
struct NoNode;

impl StorageProxy for NoNode {
    fn mutate(&self, _: Vec<st::Mutation>, _: ConsistencyLevel) -> ProxyFuture<'_, ()> {
        Box::pin(async { Err(st::StorageError::ShuttingDown.into()) })
    }

    fn read<'a>(
        &'a self,
        _: st::TableId,
        _: &'a st::ReadQuery,
        _: ConsistencyLevel,
        _: u64,
    ) -> ProxyFuture<'a, st::ReadResult> {
        Box::pin(async { Err(st::StorageError::ShuttingDown.into()) })
    }

    fn truncate(&self, _: st::TableId) -> Result<(), ProxyError> {
        Err(st::StorageError::ShuttingDown.into())
    }
}
