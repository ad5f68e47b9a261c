//! The node's shared state: configuration, identity, schema, storage engine, connected clients and
//! the event bus. One `NodeState` per process, shared by every connection.

use crate::config::NodeConfig;
use crate::local_node::LocalIdentity;
use helenus_schema::{KeyspaceMeta, Schema, TableMeta};
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::sync::broadcast;

/// What `system_views.clients` shows about one connection.
#[derive(Debug, Clone)]
pub struct ClientInfo {
    pub address: SocketAddr,
    pub driver_name: Option<String>,
    pub driver_version: Option<String>,
    pub keyspace: Option<String>,
    pub protocol_version: u8,
    pub request_count: u64,
    /// The role the connection logged in as (`None`: anonymous).
    pub username: Option<String>,
    /// Whether the connection is TLS (`system_views.clients.ssl_enabled`).
    pub ssl_enabled: bool,
}

/// A server-pushed event (schema, topology or status change), fanned out to connections that
/// REGISTERed for its type.
#[derive(Debug, Clone)]
pub struct NodeEvent(pub helenus_protocol::Event);

pub struct NodeState {
    pub config: NodeConfig,
    pub identity: LocalIdentity,
    pub started_at_s: u64,
    schema: RwLock<Arc<Schema>>,
    /// Bumped after every schema replacement, so cached statements can tell cheaply whether the
    /// tables they were planned against may have changed since they were last checked.
    schema_generation: AtomicU64,
    /// Serialises schema changes (DDL is rare; reads never take this).
    pub schema_change_lock: tokio::sync::Mutex<()>,
    pub engine: Arc<helenus_storage::Engine>,
    /// Where statements read and write data on a node alone.
    local_proxy: Arc<dyn crate::proxy::StorageProxy>,
    /// Where they go once the node is a member of a ring (set once, at start).
    replicated_proxy: OnceLock<Arc<dyn crate::proxy::StorageProxy>>,
    /// The ring as the system tables and nodetool see it (set with the replicated proxy).
    cluster_view: OnceLock<Arc<dyn crate::topology::ClusterView>>,
    /// The executor's clock, write timestamps and LWT locks (a test may swap in a manual clock).
    pub exec: crate::exec_state::ExecState,
    pub events: broadcast::Sender<NodeEvent>,
    clients: Mutex<HashMap<u64, ClientInfo>>,
    next_client_id: AtomicU64,
    pub prepared: crate::prepared::PreparedCache,
    /// Recent traced requests, served as `system_traces.sessions` and `events`.
    pub traces: crate::trace::TraceStore,
    /// Repairs coordinated here or heard of, served as `system_distributed`'s repair history.
    pub repair_history: crate::repair_history::RepairHistory,
    /// Roles, permissions and logins (allow-all unless the node was configured otherwise).
    pub auth: Arc<crate::auth::AuthService>,
    /// Who ran what (`audit_logging_options`); off unless configured or enabled by nodetool.
    pub audit: Arc<crate::audit::AuditLog>,
    /// Stream sessions under way and the outbound stream throttle (`nodetool netstats`,
    /// `setstreamthroughput`); a node alone keeps the settings.
    pub streams: Arc<helenus_cluster::streaming::StreamManager>,
    /// Set when the node itself decides to stop (after a decommission), as SIGTERM would.
    stop_requested: tokio::sync::Notify,
}

impl NodeState {
    pub fn new(
        config: NodeConfig,
        identity: LocalIdentity,
        schema: Schema,
        engine: Arc<helenus_storage::Engine>,
        clock: helenus_types::SharedClock,
    ) -> NodeState {
        let (events, _) = broadcast::channel(1024);
        let prepared_cache_bytes = config.prepared_statements_cache_size_bytes;
        let streams = Arc::new(helenus_cluster::streaming::StreamManager::new(
            config.stream_throughput_outbound_bytes_per_s,
            config.entire_sstable_stream_throughput_outbound_bytes_per_s,
        ));
        NodeState {
            config,
            identity,
            started_at_s: u64::try_from(clock.wall_secs()).unwrap_or(0),
            schema: RwLock::new(Arc::new(schema)),
            schema_generation: AtomicU64::new(0),
            schema_change_lock: tokio::sync::Mutex::new(()),
            local_proxy: Arc::new(crate::proxy::LocalProxy::new(engine.clone())),
            replicated_proxy: OnceLock::new(),
            cluster_view: OnceLock::new(),
            engine,
            exec: crate::exec_state::ExecState::new(clock.clone()),
            events,
            clients: Mutex::new(HashMap::new()),
            next_client_id: AtomicU64::new(1),
            prepared: crate::prepared::PreparedCache::new(prepared_cache_bytes),
            auth: Arc::new(crate::auth::AuthService::allow_all(clock.clone())),
            audit: Arc::new(crate::audit::AuditLog::disabled(clock.clone())),
            streams,
            traces: crate::trace::TraceStore::new(clock),
            repair_history: crate::repair_history::RepairHistory::default(),
            stop_requested: tokio::sync::Notify::new(),
        }
    }

    /// Asks the running server to stop cleanly, as SIGTERM does.
    pub fn request_stop(&self) {
        self.stop_requested.notify_one();
    }

    /// Resolves once `request_stop` was called (at most one waiter).
    pub async fn stop_requested(&self) {
        self.stop_requested.notified().await;
    }

    /// Where statements read and write data, with their consistency level.
    pub fn proxy(&self) -> &Arc<dyn crate::proxy::StorageProxy> {
        self.replicated_proxy.get().unwrap_or(&self.local_proxy)
    }

    /// Makes this node a ring member: statements go through `proxy` from now on.
    pub fn join_ring(
        &self,
        proxy: Arc<dyn crate::proxy::StorageProxy>,
        view: Arc<dyn crate::topology::ClusterView>,
    ) {
        let _ = self.replicated_proxy.set(proxy);
        let _ = self.cluster_view.set(view);
    }

    /// The ring, when this node is in one.
    pub fn cluster(&self) -> Option<&Arc<dyn crate::topology::ClusterView>> {
        self.cluster_view.get()
    }

    /// A consistent snapshot of the schema; cheap (an Arc clone) and lock-free for the caller after.
    pub fn schema(&self) -> Arc<Schema> {
        self.schema.read().clone()
    }

    pub fn replace_schema(&self, schema: Schema) {
        *self.schema.write() = Arc::new(schema);
        // After the swap: a reader that sees the new generation also sees the new schema.
        self.schema_generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Changes with every schema replacement (see [`NodeState::replace_schema`]).
    pub fn schema_generation(&self) -> u64 {
        self.schema_generation.load(Ordering::Acquire)
    }

    pub fn keyspace(&self, name: &str) -> Option<Arc<KeyspaceMeta>> {
        self.schema().keyspaces.get(name).cloned()
    }

    pub fn table(&self, ks: &str, name: &str) -> Option<Arc<TableMeta>> {
        self.schema()
            .keyspaces
            .get(ks)
            .and_then(|k| k.tables.get(name).cloned())
    }

    pub fn register_client(&self, info: ClientInfo) -> u64 {
        let id = self.next_client_id.fetch_add(1, Ordering::Relaxed);
        self.clients.lock().insert(id, info);
        id
    }

    pub fn update_client(&self, id: u64, f: impl FnOnce(&mut ClientInfo)) {
        if let Some(c) = self.clients.lock().get_mut(&id) {
            f(c);
        }
    }

    pub fn unregister_client(&self, id: u64) {
        self.clients.lock().remove(&id);
    }

    pub fn clients(&self) -> Vec<ClientInfo> {
        self.clients.lock().values().cloned().collect()
    }

    /// (partitions, mean partition size in bytes) for `system.size_estimates`.
    pub fn estimate_partitions(&self, table: &TableMeta) -> (i64, i64) {
        let stats = self.engine.table_stats(*table.id.as_bytes());
        (
            stats.estimated_partitions as i64,
            stats.mean_partition_size_bytes as i64,
        )
    }
}
