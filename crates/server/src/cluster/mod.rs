//! This node as a member of a ring (issue 12): gossip and internode messaging on the storage
//! port (`helenus-cluster`), the replicated `StorageProxy` statements go through
//! (`replicated`, over `helenus-coordinator`), the replica side of data-path messages (`replica`),
//! schema agreement (`schema`), and the events and views drivers and nodetool see.
//!
//! A node joins in two steps. `join_ring` runs before the node opens: it starts gossip and, on a
//! first start, learns the ring from the seeds before choosing tokens balanced for
//! `allocate_tokens_for_local_replication_factor`, so the tokens written to `local.json` are final
//! (they are never reassigned). `attach` runs once the node is open: it installs the replicated
//! proxy and serves peers' requests.

mod auth_sync;
mod background;
mod bootstrap;
mod cleanup;
mod counters;
mod decommission;
mod events;
mod identity;
mod metadata_log;
mod moves;
mod paxos;
mod peers;
mod rebuild;
mod removenode;
mod repair;
mod replace;
mod replica;
mod replicated;
mod resume;
mod schema;
mod sstable_stream;
mod start_tokens;
mod streams;
mod topology_claim;
mod whole_push;
mod wire;

use crate::config::NodeConfig;
use crate::local_node::LocalIdentity;
use crate::node::NodeState;
use crate::StartError;
use helenus_cluster::gossip::{FailureDetectorConfig, GossipConfig};
use helenus_cluster::locator::{Location, NodeId, ReplicationMap, ReplicationStrategy, Ring};
use helenus_cluster::messaging::{Envelope, Messenger, Verb};
use helenus_cluster::service::{ClusterService, PeerInfo, ServiceSettings};
use helenus_coordinator::hints::HintStore;
use helenus_schema::KeyspaceMeta;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::mpsc;

/// Cassandra gossips once a second.
const GOSSIP_INTERVAL: Duration = Duration::from_secs(1);
/// How often hints for live replicas are retried and schema versions compared.
const HOUSEKEEPING_INTERVAL: Duration = Duration::from_secs(2);

/// Gossip running, before the node is open: what `attach` needs.
pub struct Membership {
    service: ClusterService,
    inbox: mpsc::Receiver<Envelope>,
    /// The tokens this node is joining with, when it must first stream their ranges.
    bootstrap: Option<Vec<i64>>,
    /// The dead node whose tokens those are, when this node replaces it.
    replacing: Option<NodeId>,
}

/// Starts gossip and settles this node's tokens (see the module docs).
pub async fn join_ring(
    config: &NodeConfig,
    clock: helenus_types::SharedClock,
) -> Result<Membership, StartError> {
    let system_dir = config.primary_data_dir().join("system");
    let existing = LocalIdentity::load(&system_dir);
    if existing.as_ref().is_some_and(|i| i.decommissioned) {
        return Err(StartError::Ring(
            "This node was decommissioned and will not rejoin the ring: start it with an empty data directory to add it as a new node".into(),
        ));
    }
    let host_id = existing
        .as_ref()
        .map_or_else(uuid::Uuid::new_v4, |i| i.host_id);
    // A bootstrap or replacement that stopped half way resumes: the node announces its tokens
    // as JOINING (or replacing) again, never as an owner of data it may not have received.
    let resumed = existing
        .as_ref()
        .filter(|i| !i.bootstrapped)
        .map(|i| (i.tokens.clone(), i.replacing.map(NodeId)));
    let tokens = existing
        .filter(|i| i.bootstrapped)
        .map(|i| i.tokens)
        .unwrap_or_default();
    let location = Location::new(config.data_center.clone(), config.rack.clone());
    let settings = ServiceSettings {
        host_id: NodeId(host_id),
        listen: config.storage_address(),
        native: SocketAddr::new(config.rpc_address, config.native_transport_port),
        location: location.clone(),
        tokens: tokens.clone(),
        seeds: config.seeds.clone(),
        gossip: GossipConfig {
            cluster_name: config.cluster_name.clone(),
            interval: GOSSIP_INTERVAL,
            seeds: Vec::new(),
            failure_detector: FailureDetectorConfig {
                phi_convict_threshold: config.phi_convict_threshold,
                initial_interval: 2 * GOSSIP_INTERVAL,
            },
            random_seed: host_id.as_u64_pair().0,
            ..GossipConfig::default()
        },
        // Announced from the first gossip round: peers and drivers must not see a nil
        // version for a node that is already NORMAL.
        schema_version: crate::exec::ddl::initial_schema(&system_dir)
            .map(|s| s.version)
            .unwrap_or_default()
            .to_string(),
        release_version: crate::RELEASE_VERSION.to_string(),
        generation: clock.wall_secs(),
    };
    let listen = settings.listen;
    let (service, inbox) =
        ClusterService::start(settings, clock)
            .await
            .map_err(|e| StartError::Listen {
                addr: listen.to_string(),
                message: e.to_string(),
            })?;
    let settled =
        start_tokens::settle_tokens(&service, config, resumed, &tokens, host_id, location).await;
    let (bootstrap, replacing) = match settled {
        Ok(s) => s,
        Err(e) => {
            // Gone at once for the peers, rather than a ghost they convict later.
            service.shutdown().await;
            return Err(e);
        }
    };
    Ok(Membership {
        service,
        inbox,
        bootstrap,
        replacing,
    })
}

/// The running member: gossip, messaging, hints and placement for the replicated proxy.
pub struct ClusterNode {
    service: ClusterService,
    messenger: Messenger,
    hints: Arc<HintStore>,
    node: Weak<NodeState>,
    /// Replication maps by keyspace, rebuilt when the ring or the keyspace's replication changes.
    maps: Mutex<HashMap<String, CachedMap>>,
    /// Schema epoch: the number of schema changes this node's schema descends from (schema.rs).
    schema_epoch: std::sync::atomic::AtomicU64,
    /// When each replica was last seen going down, for `max_hint_window`.
    down_since: Mutex<HashMap<NodeId, tokio::time::Instant>>,
    /// This node's part in the metadata log that orders schema changes (metadata_log.rs).
    metadata: metadata_log::MetadataLog,
    /// The ring's topology claim as of this node's epoch (topology_claim.rs).
    claim: Mutex<Option<topology_claim::Claim>>,
    /// Logged batches this node holds for coordinators (replayed if not removed in time).
    batchlog: helenus_coordinator::batchlog::BatchlogStore,
    /// This node's Paxos acceptor and the ballots it proposes with (cluster/paxos.rs).
    acceptor: helenus_coordinator::paxos::Acceptor,
    ballots: helenus_coordinator::paxos::BallotGenerator,
    /// Replicas a hint delivery is running for: one at a time each, since a delivery drops
    /// the prefix of the hints file it sent.
    delivering: Mutex<std::collections::HashSet<NodeId>>,
    /// The range movements of the joins under way, for one keyspace and ring at a time
    /// (`pending_replicas`).
    pending: Mutex<Option<(PendingKey, Vec<helenus_cluster::locator::RangeMove>)>>,
    /// Cassandra's operation mode: JOINING while bootstrapping, NORMAL, LEAVING, DECOMMISSIONED
    /// (with the reason when a topology operation failed).
    mode: Mutex<String>,
    /// Repairs started here (`nodetool repair`), by number: running, or how they ended.
    repairs: Mutex<BTreeMap<u64, serde_json::Value>>,
    /// The `nodetool removenode` this node coordinates, if any (removenode.rs).
    removal: Mutex<removenode::Removal>,
    /// The `nodetool rebuild` of this node, if one runs, and how the last one ended.
    rebuild: Mutex<rebuild::Rebuild>,
    /// This node's bootstrap: running, failed (resumable) or done (resume.rs).
    bootstrap: Mutex<resume::BootstrapState>,
    /// Whether hints are stored (`hinted_handoff_enabled`, `nodetool disablehandoff`).
    hinted_handoff: std::sync::atomic::AtomicBool,
    /// The digest of the roles this node last pushed to its peers (auth_sync.rs).
    auth_pushed: Mutex<String>,
    /// The partition digests of this node's latest repair trees (repair/cache.rs).
    repair_digests: repair::DigestCache,
    /// The incremental repair sessions this node takes part in (repair/session.rs).
    repair_sessions: repair::Sessions,
}

/// Keyspace, ring snapshot, and the joins and departures a set of range movements was
/// computed for.
type PendingKey = (String, usize, helenus_cluster::service::RingChanges);

struct CachedMap {
    ring: Arc<Ring>,
    strategy: ReplicationStrategy,
    map: Arc<ReplicationMap>,
}

/// Makes the open node a ring member: statements go through the replicated proxy from now on.
pub fn attach(
    node: &Arc<NodeState>,
    membership: Membership,
) -> Result<Arc<ClusterNode>, StartError> {
    let Membership {
        service,
        inbox,
        bootstrap,
        replacing,
    } = membership;
    let hints_dir = node.config.hints_directory.clone();
    let hints =
        HintStore::open(&hints_dir, node.exec.clock().clone()).map_err(|e| StartError::Dir {
            path: hints_dir.display().to_string(),
            message: e.to_string(),
        })?;
    let messenger = Messenger::new(Arc::new(service.transport().clone()));
    let system_dir = node.config.primary_data_dir().join("system");
    let paxos_store = paxos::EnginePaxosStore::open(
        &system_dir,
        node.engine.clone(),
        node.exec.clock().clone(),
        node.config.commitlog_sync != crate::config::CommitlogSyncMode::Periodic,
    )
    .map_err(|e| StartError::Dir {
        path: system_dir.display().to_string(),
        message: e.to_string(),
    })?;
    let metadata_store =
        metadata_log::MetadataStore::open(&system_dir).map_err(|e| StartError::Dir {
            path: system_dir.display().to_string(),
            message: e.to_string(),
        })?;
    let batchlog_dir = system_dir.join("batchlog");
    let batchlog =
        helenus_coordinator::batchlog::BatchlogStore::open(&batchlog_dir).map_err(|e| {
            StartError::Dir {
                path: batchlog_dir.display().to_string(),
                message: e.to_string(),
            }
        })?;
    let ballots = helenus_coordinator::paxos::BallotGenerator::new(
        service.host_id(),
        node.exec.clock().clone(),
    );
    // Before any repair message can arrive: sessions pending from before a restart are
    // unknown now, and released.
    repair::release_stale(&node.engine);
    let cluster = Arc::new(ClusterNode {
        service,
        messenger,
        hints,
        node: Arc::downgrade(node),
        maps: Mutex::new(HashMap::new()),
        schema_epoch: std::sync::atomic::AtomicU64::new(schema::load_epoch(node)),
        down_since: Mutex::new(HashMap::new()),
        delivering: Mutex::new(std::collections::HashSet::new()),
        pending: Mutex::new(None),
        mode: Mutex::new(
            if bootstrap.is_some() {
                "JOINING"
            } else {
                "NORMAL"
            }
            .into(),
        ),
        repairs: Mutex::new(BTreeMap::new()),
        removal: Mutex::new(removenode::Removal::default()),
        rebuild: Mutex::new(rebuild::Rebuild::default()),
        bootstrap: Mutex::new(match bootstrap {
            Some(_) => resume::BootstrapState::Running,
            None => resume::BootstrapState::Idle,
        }),
        hinted_handoff: std::sync::atomic::AtomicBool::new(node.config.hinted_handoff_enabled),
        auth_pushed: Mutex::new(node.auth.digest()),
        repair_digests: repair::DigestCache::default(),
        repair_sessions: repair::Sessions::default(),
        metadata: metadata_log::MetadataLog::new(metadata_store),
        claim: Mutex::new(topology_claim::load(node)),
        batchlog,
        acceptor: helenus_coordinator::paxos::Acceptor::new(Arc::new(paxos_store)),
        ballots,
    });
    cluster
        .service
        .set_schema_version(&node.schema().version.to_string());
    auth_sync::announce_digest(&cluster, node);
    let sharer = cluster.clone();
    node.traces.on_record(Box::new(move |session| {
        let payload = bytes::Bytes::from(crate::trace::encode_session(session));
        for peer in sharer.service.peers().into_iter().filter(|p| p.alive) {
            let _ =
                sharer
                    .messenger
                    .send_one_way(peer.host_id, Verb::TraceSession, payload.clone());
        }
    }));
    let proxy = Arc::new(replicated::ReplicatedProxy::new(cluster.clone()));
    node.join_ring(proxy, cluster.clone());
    tokio::spawn(replica::serve(cluster.clone(), inbox));
    tokio::spawn(events::forward_events(cluster.clone()));
    tokio::spawn(housekeeping(cluster.clone()));
    topology_claim::release_if_held(&cluster);
    if let Some(tokens) = bootstrap {
        tokio::spawn(bootstrap::run(cluster.clone(), tokens, replacing));
    }
    Ok(cluster)
}

impl ClusterNode {
    /// Tells peers this node is going away and stops gossip and messaging.
    pub async fn shutdown(&self) {
        self.service.shutdown().await;
    }

    fn node(&self) -> Option<Arc<NodeState>> {
        self.node.upgrade()
    }

    fn local(&self) -> NodeId {
        self.service.host_id()
    }

    /// The node clock's wall time in milliseconds.
    fn service_clock_ms(&self) -> i64 {
        self.node().map_or(0, |n| n.exec.clock().wall_ms())
    }

    /// Replays logged batches whose coordinator did not remove them within twice the write
    /// timeout (it died half way): their mutations are written again at ONE, then dropped.
    async fn replay_batchlog(&self, node: &NodeState) {
        let delay = 2 * self.write_timeout();
        let before = self.service_clock_ms() - i64::try_from(delay.as_millis()).unwrap_or(0);
        let Ok(due) = self.batchlog.due(before) else {
            return;
        };
        for batch in due {
            let mut replayed = true;
            for encoded in &batch.mutations {
                let Ok(mutations) = helenus_mutation::decode_mutations(encoded.clone()) else {
                    continue;
                };
                let written = node
                    .proxy()
                    .mutate(mutations, helenus_coordinator::ConsistencyLevel::One)
                    .await;
                replayed &= written.is_ok();
            }
            if replayed {
                tracing::info!(batch = %batch.id, "logged batch replayed from the batchlog");
                let _ = self.batchlog.remove(batch.id);
            }
        }
    }

    /// The replication map of `keyspace` on the current ring.
    fn map_for(&self, keyspace: &KeyspaceMeta) -> Arc<ReplicationMap> {
        let ring = self.service.ring();
        let strategy = strategy_of(keyspace);
        let mut maps = self.maps.lock();
        if let Some(c) = maps.get(&keyspace.name) {
            if Arc::ptr_eq(&c.ring, &ring) && c.strategy == strategy {
                return c.map.clone();
            }
        }
        let map = Arc::new(ReplicationMap::new(
            ring.clone(),
            strategy.clone(),
            self.local(),
        ));
        maps.insert(
            keyspace.name.clone(),
            CachedMap {
                ring,
                strategy,
                map: map.clone(),
            },
        );
        map
    }

    /// Nodes gaining `token` of `keyspace` in the joins and departures under way: its writes
    /// must reach them too. Empty, and cheap, when the ring is not changing.
    fn pending_replicas(
        &self,
        keyspace: &KeyspaceMeta,
        map: &ReplicationMap,
        token: i64,
    ) -> Vec<NodeId> {
        let Some(changes) = self.service.ring_changes() else {
            return Vec::new();
        };
        let key = (
            keyspace.name.clone(),
            Arc::as_ptr(map.ring()) as usize,
            changes,
        );
        let mut cache = self.pending.lock();
        if cache.as_ref().map(|(k, _)| k) != Some(&key) {
            let mut ring = (**map.ring()).clone();
            for id in &key.2.leaving {
                ring = ring.without_member(*id);
            }
            for (member, tokens) in &key.2.joining {
                match ring.with_member(member.clone(), tokens.clone()) {
                    Ok(r) => ring = r,
                    Err(e) => tracing::warn!(error = %e, "a joining node's tokens clash"),
                }
            }
            let after = ReplicationMap::new(Arc::new(ring), map.strategy().clone(), self.local());
            *cache = Some((key, helenus_cluster::locator::range_moves(map, &after)));
        }
        cache
            .as_ref()
            .map(|(_, moves)| helenus_cluster::locator::pending_replicas(moves, token))
            .unwrap_or_default()
    }

    fn write_timeout(&self) -> Duration {
        self.node().map_or(Duration::from_secs(2), |n| {
            Duration::from_millis(n.config.write_request_timeout_ms)
        })
    }

    /// Whether `target`, down now, should still get hints (`max_hint_window`).
    fn within_hint_window(&self, target: NodeId) -> bool {
        let Some(node) = self.node() else {
            return false;
        };
        if !self
            .hinted_handoff
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return false;
        }
        let window = Duration::from_millis(node.config.max_hint_window_ms);
        self.down_since
            .lock()
            .get(&target)
            .is_none_or(|since| since.elapsed() <= window)
    }

    fn is_normal(&self, node: NodeId) -> bool {
        self.service
            .peers()
            .iter()
            .any(|p| p.host_id == node && p.status == helenus_cluster::gossip::status::NORMAL)
    }

    /// Whether gossip gives `node` tokens (a ring member, or one joining).
    fn has_tokens(&self, node: NodeId) -> bool {
        self.service
            .peers()
            .iter()
            .any(|p| p.host_id == node && !p.tokens.is_empty())
    }

    /// Whether `node` is this node or a peer gossip sees alive.
    fn is_up(&self, node: NodeId) -> bool {
        node == self.local() || self.service.is_alive(node)
    }

    /// `node`'s storage address as Cassandra prints endpoints (`/ip:port`).
    fn address_of(&self, node: NodeId) -> String {
        self.service
            .peers()
            .into_iter()
            .find(|p| p.host_id == node)
            .and_then(|p| p.address)
            .map_or_else(|| node.to_string(), |a| format!("/{a}"))
    }

    /// Whether `node` is gone from the ring: decommissioned, removed or replaced.
    fn has_left(&self, node: NodeId) -> bool {
        self.service
            .peers()
            .iter()
            .any(|p| p.host_id == node && helenus_cluster::gossip::status::is_gone(&p.status))
    }

    fn native_address(&self, node: NodeId) -> Option<SocketAddr> {
        self.service
            .peers()
            .into_iter()
            .find(|p| p.host_id == node)
            .and_then(|p| p.native)
    }
}

/// A keyspace's replication as placement needs it.
fn strategy_of(keyspace: &KeyspaceMeta) -> ReplicationStrategy {
    use helenus_schema::ReplicationStrategy as S;
    match keyspace.replication_params().strategy {
        S::Simple { replication_factor } => ReplicationStrategy::Simple {
            replication_factor: replication_factor as usize,
        },
        S::NetworkTopology { datacenters } => ReplicationStrategy::NetworkTopology {
            datacenters: datacenters
                .into_iter()
                .map(|(dc, rf)| (dc, rf as usize))
                .collect(),
        },
        S::Local => ReplicationStrategy::Local,
        S::Everywhere => ReplicationStrategy::Everywhere,
    }
}

/// Periodic work: hints to replicas that are up (a delivery that stopped half way resumes),
/// the load gossip carries, schema pulls from peers that disagree, and the incremental repair
/// sessions their coordinator abandoned.
async fn housekeeping(cluster: Arc<ClusterNode>) {
    let mut every = tokio::time::interval(HOUSEKEEPING_INTERVAL);
    loop {
        every.tick().await;
        let Some(node) = cluster.node() else { return };
        if cluster.service.removed_by_peers() {
            tracing::error!("This node was removed from the ring (nodetool removenode, or replaced) while it was down: it stops, and will not start again with this data directory");
            if let Err(e) = identity::mark_decommissioned(&cluster) {
                tracing::error!(error = %e, "local.json not marked");
            }
            node.request_stop();
            return;
        }
        if let Ok(targets) = cluster.hints.targets() {
            for target in targets {
                if cluster.service.is_alive(target) {
                    replica::deliver_hints_to(cluster.clone(), target).await;
                }
            }
        }
        let load: u64 = node
            .schema()
            .user_keyspaces()
            .flat_map(|k| k.tables.values())
            .map(|t| {
                node.engine
                    .table_stats(*t.id.as_bytes())
                    .live_disk_space_bytes
            })
            .sum();
        cluster.service.set_load(load);
        // Compactions end their outputs at the ring's tokens (whole-SSTable streaming).
        let tokens = cluster
            .service
            .ring()
            .tokens()
            .iter()
            .map(|(t, _)| *t)
            .collect();
        node.engine.set_ring_tokens(tokens);
        schema::pull_if_behind(&cluster).await;
        auth_sync::pull_if_behind(&cluster).await;
        cluster.replay_batchlog(&node).await;
        repair::expire_abandoned(&cluster, &node).await;
    }
}

impl crate::topology::ClusterView for ClusterNode {
    fn local(&self) -> NodeId {
        self.service.host_id()
    }

    fn peers(&self) -> Vec<PeerInfo> {
        self.service.peers()
    }

    fn ring(&self) -> Arc<Ring> {
        self.service.ring()
    }

    fn replicas(&self, keyspace: &KeyspaceMeta, token: i64) -> Vec<NodeId> {
        self.map_for(keyspace).replicas(token).to_vec()
    }

    fn ownership(&self, keyspace: Option<&KeyspaceMeta>) -> BTreeMap<NodeId, f64> {
        match keyspace {
            Some(k) => self.map_for(k).effective_ownership(),
            None => {
                let ring = self.service.ring();
                ReplicationMap::new(
                    ring,
                    ReplicationStrategy::Simple {
                        replication_factor: 1,
                    },
                    self.local(),
                )
                .effective_ownership()
            }
        }
    }

    fn isolate(&self, addresses: std::collections::HashSet<IpAddr>) {
        if addresses.is_empty() {
            tracing::warn!("fault injection: internode traffic healed");
        } else {
            tracing::warn!(?addresses, "fault injection: internode traffic cut");
        }
        self.service.transport().isolate_from(addresses);
    }

    fn decommission(self: Arc<Self>) -> Result<(), String> {
        decommission::start(&self)
    }

    fn remove_node(self: Arc<Self>, host_id: &str, force: bool) -> Result<(), String> {
        removenode::start(&self, host_id, force)
    }

    fn removal_status(&self) -> String {
        removenode::status(self)
    }

    fn rebuild(
        self: Arc<Self>,
        source_dc: Option<String>,
        keyspaces: Vec<String>,
    ) -> Result<(), String> {
        rebuild::start(
            &self,
            rebuild::Request {
                source_dc,
                keyspaces,
            },
        )
    }

    fn rebuild_status(&self) -> serde_json::Value {
        rebuild::status(self)
    }

    fn resume_bootstrap(self: Arc<Self>) -> Result<bool, String> {
        resume::resume(&self)
    }

    fn bootstrap_status(&self) -> serde_json::Value {
        resume::status(self)
    }

    fn start_repair(self: Arc<Self>, options: crate::topology::RepairOptions) -> u64 {
        repair::start(&self, options)
    }

    fn repair_status(&self, id: u64) -> Option<serde_json::Value> {
        self.repairs.lock().get(&id).cloned()
    }

    fn repair_sessions(&self) -> Vec<serde_json::Value> {
        self.repair_sessions
            .list()
            .iter()
            .filter_map(|s| serde_json::to_value(s).ok())
            .collect()
    }

    fn cancel_repair_session(self: Arc<Self>, id: uuid::Uuid) -> Result<(), String> {
        repair::cancel_session(&self, id)
    }

    fn set_hinted_handoff(&self, enabled: bool) {
        self.hinted_handoff
            .store(enabled, std::sync::atomic::Ordering::Relaxed);
    }

    fn hinted_handoff(&self) -> bool {
        self.hinted_handoff
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn operation_mode(&self) -> String {
        self.mode.lock().clone()
    }

    fn isolated(&self) -> Vec<IpAddr> {
        self.service
            .transport()
            .isolated_from()
            .into_iter()
            .collect()
    }

    fn schema_versions(&self) -> BTreeMap<String, Vec<IpAddr>> {
        let version = self
            .node()
            .map(|n| n.schema().version.to_string())
            .unwrap_or_default();
        helenus_cluster::schema_sync::schema_versions(
            (&version, self.service.listen_address().ip()),
            &self.service.peers(),
        )
    }

    fn order_schema_change<'a>(
        &'a self,
        plan: &'a crate::topology::SchemaPlanner<'a>,
    ) -> crate::topology::Ordered<'a> {
        Box::pin(async move {
            let node = self.node().ok_or("node shutting down")?;
            metadata_log::order_change(self, &node, plan)
                .await
                .map_err(|e| Box::new(e) as crate::topology::SchemaError)
        })
    }

    fn owned_ranges(
        &self,
        keyspace: &KeyspaceMeta,
    ) -> Result<Option<crate::topology::OwnedRanges>, String> {
        cleanup::owned_ranges(self, keyspace)
    }

    fn roles_changed(&self) -> crate::topology::Pending<'_> {
        Box::pin(auth_sync::push_changes(self))
    }
}

/// Answers a request this node cannot serve.
fn refuse(messenger: &Messenger, request: &Envelope) {
    let _ = messenger.respond(request, Verb::Failure, bytes::Bytes::new());
}
