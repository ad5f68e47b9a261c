//! The Helenus node: native transport (CQL protocol on 9042), statement execution over the storage
//! engine, and the system and virtual tables that drivers and cqlsh read.
//!
//! Owns the request pipeline from a decoded frame to an encoded response. Does not own the wire
//! format (`protocol`), the language (`cql`), schema metadata (`schema`) or data files (`storage`).
//!
//! Modules, each depending only on those listed after it (`tests/module_cycles.py --check` keeps
//! the graph acyclic, here and inside `exec`):
//! - `transport`: connections, frames, sessions, and the per-opcode dispatch of requests to `exec`
//!   (`transport/dispatch.rs`), under `limits`
//!   (request byte budgets, the statement pool).
//! - `admin` and `metrics`: the HTTP admin API `helenus nodetool` drives, Prometheus text.
//! - `exec`: statement execution (its docs describe its own layers).
//! - `proxy`: the only way statements reach data (`StorageProxy`: mutate, logged batches, read,
//!   compare-and-set, truncate, with the request's consistency level); `LocalProxy` is a single
//!   node over the local engine.
//! - `cluster`: the node as a ring member (with `--seeds`): gossip and messaging started before
//!   the node opens, the replicated proxy, the replica side of internode requests, schema
//!   agreement, the Paxos store, hints and the batchlog. `topology` is what the rest of the
//!   server sees of the ring (`ClusterView`); `ring_report` renders nodetool's ring commands.
//! - `system`: system and virtual tables, computed on read from `NodeState`.
//! - `index_storage`: secondary indexes as the engine keeps them (index tables in step with
//!   the schema, their builds); `exec` reads through them, `system` lists the built ones.
//! - `node`: `NodeState`, the state every connection shares (config, identity, schema, engine,
//!   clients, events, the prepared cache, traces). It knows nothing of `exec`: the cache it holds
//!   stores statements through the `prepared::CachedStatement` trait, and traces live in `trace`.
//! - `prepared`: the prepared-statement cache, bounded by the memory its statements hold.
//! - `trace`: query tracing sessions and events (`system_traces`).
//! - `repair_history`: the repairs run in the ring (`system_distributed`'s repair history).
//! - `auth`: roles, permissions, SASL PLAIN and password checks (PasswordAuthenticator,
//!   CassandraRoleManager, CassandraAuthorizer); `exec` decides what each statement needs.
//! - `audit`: the audit log (FileAuditLogger's lines, filters, nodetool enable/disable);
//!   `transport/audited.rs` says what each request records.
//! - `tls`: rustls server configurations from `client_encryption_options` and the accept step
//!   (optional TLS tells a ClientHello from a CQL frame by its first byte).
//! - `config` (with `config_security`), `local_node` (host id, tokens), `keys` (partition key
//!   encoding and tokens).

pub mod admin;
pub mod audit;
pub mod auth;
mod available_ranges;
mod cluster;
pub mod config;
pub mod exec;
pub mod exec_state;
pub mod export;
mod index_storage;
mod keys;
mod layout;
mod limits;
mod local_node;
pub mod metrics;
mod node;
mod prepared;
pub mod proxy;
mod repair_history;
mod request_kind;
mod ring_report;
mod system;
#[cfg(test)]
mod test_dirs;
pub mod tls;
mod topology;
mod trace;
mod transport;

pub use node::NodeState;

use config::NodeConfig;
use std::sync::Arc;

/// Reported in `system.local.release_version`: drivers pick their schema parser by it (>= 4.0 reads
/// virtual tables; cqlsh sends server-side DESCRIBE).
pub const RELEASE_VERSION: &str = "5.0.9";
pub const CQL_VERSION: &str = "3.4.7";

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot create {path}: {message}")]
    Dir { path: String, message: String },
    #[error("authentication: {0}")]
    Auth(String),
    #[error("schema: {0}")]
    Schema(#[from] helenus_schema::SchemaError),
    /// The engine did not open or its commitlog did not replay (a corrupt file stays
    /// distinguishable from a full disk).
    #[error("storage: {0}")]
    Storage(#[from] helenus_storage::StorageError),
    #[error("cannot listen on {addr}: {message}")]
    Listen { addr: String, message: String },
    #[error("client_encryption_options: {0}")]
    Tls(#[from] tls::TlsError),
    /// The node's place in a ring forbids this start (a decommissioned node).
    #[error("{0}")]
    Ring(String),
}

/// Opens the node's state: identity, schema, storage (with commitlog replay), on the system clock.
pub fn open_node(config: NodeConfig) -> Result<Arc<NodeState>, StartError> {
    open_node_with_clock(config, helenus_types::SystemClock::shared())
}

/// Opens the node's state with every part of it (executor and storage) on `clock`.
pub fn open_node_with_clock(
    config: NodeConfig,
    clock: helenus_types::SharedClock,
) -> Result<Arc<NodeState>, StartError> {
    let data_dir = config.primary_data_dir();
    for dir in [&data_dir, &config.commitlog_directory] {
        std::fs::create_dir_all(dir).map_err(|e| StartError::Dir {
            path: dir.display().to_string(),
            message: e.to_string(),
        })?;
    }
    let system_dir = data_dir.join("system");
    let identity = local_node::LocalIdentity::load_or_create(
        &system_dir,
        config.num_tokens,
        &config.cluster_name,
    )
    .map_err(|e| StartError::Dir {
        path: system_dir.display().to_string(),
        message: e.to_string(),
    })?;
    config
        .check_consistency()
        .map_err(|e| StartError::Auth(e.to_string()))?;
    let auth = auth::AuthService::open(&config, &system_dir, clock.clone())
        .map_err(|e| StartError::Auth(e.to_string()))?;
    let audit = audit::AuditLog::open(&config, clock.clone()).map_err(|e| StartError::Dir {
        path: "audit_logs_dir".into(),
        message: format!("audit log: {e}"),
    })?;
    let schema = exec::ddl::initial_schema(&system_dir)?;
    let engine = exec::storage_bridge::open_engine(&config, &schema, clock.clone())?;
    let mut node = NodeState::new(config, identity, schema, engine, clock);
    node.auth = Arc::new(auth);
    node.audit = Arc::new(audit);
    Ok(Arc::new(node))
}

/// Starts the node and serves until SIGINT/SIGTERM, then flushes and stops cleanly.
pub async fn run_until_shutdown(config: NodeConfig) -> Result<(), StartError> {
    init_logging();
    let t0 = std::time::Instant::now();
    let addr = std::net::SocketAddr::new(config.rpc_address, config.native_transport_port);
    let clock = helenus_types::SystemClock::shared();
    // A ring member settles its tokens with the ring before opening (cluster/mod.rs).
    let membership = if config.is_clustered() {
        Some(cluster::join_ring(&config, clock.clone()).await?)
    } else {
        None
    };
    let node = open_node_with_clock(config, clock.clone())?;
    let ring = match membership {
        Some(m) => Some(cluster::attach(&node, m)?),
        None => None,
    };
    // Built before any port opens: a bad certificate stops the node rather than serving plaintext.
    let (native_tls, admin_tls) = match &node.config.client_encryption {
        Some(options) => (
            Some(tls::ServerTls::native(options)?),
            Some(tls::ServerTls::admin(options)?),
        ),
        None => (None, None),
    };
    // Owned here to the end of this function: it stops after the storage shutdown below. Started
    // before the port opens: a client that connected once finds the node serving from then on.
    let statement_pool =
        limits::StatementPool::start(&node.config).map_err(|e| StartError::Listen {
            addr: addr.to_string(),
            message: format!("cannot start the statement pool: {e}"),
        })?;
    // Owned here to the end too: connections keep their threads while the drain below waits
    // for their statements.
    let connection_threads = Arc::new(
        transport::ConnectionThreads::start(node.config.native_transport_io_threads).map_err(
            |e| StartError::Listen {
                addr: addr.to_string(),
                message: format!("cannot start the connection threads: {e}"),
            },
        )?,
    );
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| StartError::Listen {
            addr: addr.to_string(),
            message: e.to_string(),
        })?;
    let security = match &node.config.client_encryption {
        Some(o) if o.optional => ", TLS optional",
        Some(_) => ", TLS",
        None => "",
    };
    println!(
        "Helenus {} listening for CQL clients on {addr}{security} (cluster '{}', data in {}), ready in {} ms",
        env!("CARGO_PKG_VERSION"),
        node.config.cluster_name,
        node.config.primary_data_dir().display(),
        t0.elapsed().as_millis()
    );
    let admin_addr = std::net::SocketAddr::new(node.config.admin_address(), node.config.api_port);
    match tokio::net::TcpListener::bind(admin_addr).await {
        Ok(l) => {
            let scheme = if admin_tls.is_some() { "https" } else { "http" };
            let credentials = match node.config.admin_requires_credentials() {
                true => ", superuser credentials required",
                false => "",
            };
            println!("Helenus admin API (nodetool) on {scheme}://{admin_addr}{credentials}");
            tokio::spawn(admin::serve(node.clone(), clock.clone(), l, admin_tls));
        }
        Err(e) => tracing::warn!("admin API not started on {admin_addr}: {e}"),
    }
    let limits = limits::Limits::new(&node.config, statement_pool.handle());
    let serving = tokio::spawn(transport::serve(
        node.clone(),
        limits.clone(),
        listener,
        native_tls,
        connection_threads.clone(),
    ));
    tokio::select! {
        _ = shutdown_signal() => {}
        _ = node.stop_requested() => println!("Helenus decommissioned: stopping"),
    }
    if let Some(ring) = &ring {
        // Peers mark this node down at once rather than after the failure detector's delay.
        ring.shutdown().await;
    }
    // Like `nodetool drain`: no new connections, then running statements get a bounded time
    // to finish; one that does not is left behind rather than holding the shutdown for ever.
    serving.abort();
    let drain_timeout = std::time::Duration::from_millis(
        node.config
            .write_request_timeout_ms
            .max(node.config.read_request_timeout_ms)
            .max(node.config.range_request_timeout_ms),
    );
    let unfinished = limits.drain(drain_timeout).await;
    if unfinished > 0 {
        println!("Helenus shutting down: {unfinished} statements still running were abandoned");
    }
    println!("Helenus shutting down: flushing memtables and syncing the commitlog");
    let engine = node.engine.clone();
    match tokio::task::spawn_blocking(move || engine.shutdown()).await {
        Ok(Ok(())) => println!("Helenus stopped cleanly: nothing to replay at the next start"),
        Ok(Err(e)) => {
            println!("Helenus stopped; unflushed data replays from the commitlog at the next start ({e})")
        }
        Err(e) => println!("Helenus stopped; storage shutdown did not finish ({e})"),
    }
    Ok(())
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("HELENUS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
