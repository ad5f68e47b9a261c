//! Node configuration: `helenus.yaml` with Cassandra's setting names and units, plus command-line
//! overrides with the same names. Every default works without editing.

mod audit;
mod encryption;
mod error;
mod security;
mod settings;
mod units;

pub use audit::{
    categories as audit_categories, name_list as audit_list, AuditLogOptions, AUDIT_CATEGORIES,
};
pub use encryption::{ClientAuth, ClientEncryption};
pub use error::ConfigError;
use security::SecurityChoice;
pub use security::{Authenticator, Authorizer};
pub use units::{parse_duration_ms, parse_size_bytes};

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// How the commitlog makes writes durable (Cassandra's `commitlog_sync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitlogSyncMode {
    Periodic,
    Batch,
    Group,
}

#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub cluster_name: String,
    pub num_tokens: usize,
    pub listen_address: IpAddr,
    pub rpc_address: IpAddr,
    pub native_transport_port: u16,
    pub native_transport_max_frame_size_bytes: usize,
    pub native_transport_max_concurrent_connections: usize,
    /// Bytes of request frames read but not yet answered, node-wide (Cassandra:
    /// `native_transport_max_request_data_in_flight`, a tenth of its heap; Helenus has no heap,
    /// so a fixed 128 MiB). Past it connections stop being read: TCP backpressure.
    pub native_transport_max_request_data_in_flight_bytes: u64,
    /// Bytes of responses produced but not yet written to their sockets, node-wide (no Cassandra
    /// name: Netty's write buffers play this part there). Past it no new statement starts.
    pub native_transport_max_response_data_queued_bytes: u64,
    /// Statements running at once, node-wide, on the statement pool (Cassandra:
    /// `native_transport_max_threads`, 128).
    pub native_transport_max_threads: usize,
    /// Threads client connections are spread over, each connection on one (no Cassandra name:
    /// Netty's event loop threads); 0, the default, runs them on the node's shared runtime
    /// (transport/cores.rs has the measurements that chose it).
    pub native_transport_io_threads: usize,
    /// Requests per second admitted when rate limiting is enabled (Cassandra: 1,000,000).
    pub native_transport_max_requests_per_second: u64,
    pub native_transport_rate_limiting_enabled: bool,
    pub data_file_directories: Vec<PathBuf>,
    pub commitlog_directory: PathBuf,
    pub saved_caches_directory: PathBuf,
    pub hints_directory: PathBuf,
    pub commitlog_sync: CommitlogSyncMode,
    pub commitlog_sync_period_ms: u64,
    pub commitlog_sync_group_window_ms: u64,
    pub commitlog_segment_size_bytes: u64,
    /// `max_mutation_size`: a write whose mutation is larger is refused before it is applied
    /// (Cassandra's "Rejected an oversized mutation"); unset is half a commitlog segment.
    pub max_mutation_size_bytes: Option<u64>,
    pub memtable_space_bytes: u64,
    /// `memtable_cleanup_threshold` when given; otherwise 1 / (1 + `memtable_flush_writers`),
    /// Cassandra's default.
    pub memtable_cleanup_threshold: Option<f64>,
    /// Helenus's `default_table_layout`: how tables whose `extensions` name no
    /// `helenus.layout` store their SSTables (rows, as Cassandra, unless set to columnar). Their
    /// schema stays as written: it is for running a workload, or a test suite, on the columnar
    /// layout unchanged.
    pub default_table_layout: helenus_schema::StorageLayout,
    pub memtable_flush_writers: u64,
    pub key_cache_size_bytes: u64,
    pub file_cache_size_bytes: u64,
    pub row_cache_size_bytes: u64,
    pub concurrent_compactors: usize,
    pub compaction_throughput_mib_per_s: u64,
    pub data_center: String,
    pub rack: String,
    /// Nodes a new node first contacts (`seed_provider`'s `seeds`, or `--seeds`), with the
    /// storage port. Empty: a single node that opens no storage port and gossips with nobody.
    pub seeds: Vec<std::net::SocketAddr>,
    /// Internode messages and gossip (Cassandra: 7000).
    pub storage_port: u16,
    /// Failure detector sensitivity (Cassandra: 8).
    pub phi_convict_threshold: f64,
    pub hinted_handoff_enabled: bool,
    /// `stream_throughput_outbound` (Cassandra 5.0: `24MiB/s`; 0 unthrottled): the rate this
    /// node sends stream data at, over all its sessions; `nodetool setstreamthroughput`.
    pub stream_throughput_outbound_bytes_per_s: u64,
    /// `entire_sstable_stream_throughput_outbound` (24MiB/s): accepted and reported; Helenus
    /// streams partitions only so far, which the setting above throttles.
    pub entire_sstable_stream_throughput_outbound_bytes_per_s: u64,
    /// Whether a new node that is not a seed streams the ranges it gains before owning them
    /// (Cassandra: `auto_bootstrap`, true).
    pub auto_bootstrap: bool,
    /// `replace_address_first_boot` (or `--replace-address`): on its first start this node
    /// takes over the tokens of the dead node at this address and streams its ranges.
    pub replace_address_first_boot: Option<IpAddr>,
    /// Helenus's own: whether the admin API may cut this node off from peers
    /// (`/helenus/fault/partition`), for partition tests with real processes. Off by default.
    pub fault_injection_enabled: bool,
    /// A replica down longer than this gets no more hints (Cassandra: 3 h).
    pub max_hint_window_ms: u64,
    /// Replication factor token allocation balances for on a new node (Cassandra 4.0+'s
    /// `allocate_tokens_for_local_replication_factor`, 3).
    pub allocate_tokens_for_local_replication_factor: usize,
    pub api_address: Option<IpAddr>,
    pub api_port: u16,
    pub read_request_timeout_ms: u64,
    pub write_request_timeout_ms: u64,
    /// Reads without a single partition key (Cassandra: `range_request_timeout`, 10 s).
    pub range_request_timeout_ms: u64,
    /// Anything else: DDL, USE, ... (Cassandra: `request_timeout`, 10 s).
    pub request_timeout_ms: u64,
    /// A multi-partition batch larger than this gets a client warning (Cassandra: 5 KiB).
    pub batch_size_warn_threshold_bytes: u64,
    /// ... and one larger than this is refused with InvalidRequest "Batch too large" (50 KiB).
    pub batch_size_fail_threshold_bytes: u64,
    /// An unlogged batch over more partitions than this gets a client warning (10).
    pub unlogged_batch_across_partitions_warn_threshold: u64,
    /// A read that scans more tombstones than this gets a client warning (Cassandra: 1000).
    pub tombstone_warn_threshold: u64,
    /// ... and one that scans more than this is abandoned with a ReadFailure (100000).
    pub tombstone_failure_threshold: u64,
    /// Budget of the prepared-statement cache, by estimated bytes held.
    pub prepared_statements_cache_size_bytes: u64,
    /// Whether `ALTER TABLE ... DROP COMPACT STORAGE` is allowed (Cassandra 5.0: off).
    pub drop_compact_storage_enabled: bool,
    pub authenticator: Authenticator,
    pub authorizer: Authorizer,
    /// TLS for CQL clients and the admin API (`client_encryption_options`); `None`: plaintext.
    pub client_encryption: Option<ClientEncryption>,
    /// With PasswordAuthenticator, whether a loopback admin API asks for a superuser's
    /// credentials too (a non-loopback one always does). Off by default, as Cassandra's JMX is
    /// local-only and unauthenticated by default.
    pub admin_api_requires_credentials: bool,
    /// `audit_logging_options` (off by default, as in Cassandra).
    pub audit_logging: AuditLogOptions,
    /// How long a successful login is remembered, so that a driver's pool of connections does
    /// not pay bcrypt for each (Cassandra: `credentials_validity`, 2 s; 0 disables).
    pub credentials_validity_ms: u64,
    /// bcrypt cost (log2 rounds) of new password hashes (Cassandra's system property
    /// `cassandra.auth_bcrypt_gensalt_log2_rounds`, 10).
    pub auth_bcrypt_gensalt_log2_rounds: u32,
    /// Settings as given (name -> value text), for `system_views.settings`.
    pub raw: BTreeMap<String, String>,
}

const MIB: u64 = 1024 * 1024;

impl Default for NodeConfig {
    fn default() -> Self {
        let localhost: IpAddr = [127, 0, 0, 1].into();
        let base = PathBuf::from("data");
        NodeConfig {
            cluster_name: "Test Cluster".into(),
            num_tokens: 16,
            listen_address: localhost,
            rpc_address: localhost,
            native_transport_port: 9042,
            native_transport_max_frame_size_bytes: (16 * MIB) as usize,
            native_transport_max_concurrent_connections: 4096,
            native_transport_max_request_data_in_flight_bytes: 128 * MIB,
            native_transport_max_response_data_queued_bytes: 128 * MIB,
            native_transport_max_threads: 128,
            native_transport_io_threads: 0,
            native_transport_max_requests_per_second: 1_000_000,
            native_transport_rate_limiting_enabled: false,
            data_file_directories: vec![base.join("data")],
            commitlog_directory: base.join("commitlog"),
            saved_caches_directory: base.join("saved_caches"),
            hints_directory: base.join("hints"),
            commitlog_sync: CommitlogSyncMode::Periodic,
            commitlog_sync_period_ms: 10_000,
            commitlog_sync_group_window_ms: 15,
            commitlog_segment_size_bytes: 32 * MIB,
            max_mutation_size_bytes: None,
            memtable_space_bytes: 1024 * MIB,
            memtable_cleanup_threshold: None,
            default_table_layout: helenus_schema::StorageLayout::Rows,
            // Cassandra's default for one data directory.
            memtable_flush_writers: 2,
            key_cache_size_bytes: 100 * MIB,
            file_cache_size_bytes: 512 * MIB,
            row_cache_size_bytes: 0,
            concurrent_compactors: 2,
            compaction_throughput_mib_per_s: 64,
            data_center: "datacenter1".into(),
            rack: "rack1".into(),
            seeds: Vec::new(),
            storage_port: 7000,
            phi_convict_threshold: 8.0,
            hinted_handoff_enabled: true,
            stream_throughput_outbound_bytes_per_s: 24 * MIB,
            entire_sstable_stream_throughput_outbound_bytes_per_s: 24 * MIB,
            fault_injection_enabled: false,
            auto_bootstrap: true,
            replace_address_first_boot: None,
            max_hint_window_ms: 3 * 3600 * 1000,
            allocate_tokens_for_local_replication_factor: 3,
            api_address: None,
            api_port: 10000,
            read_request_timeout_ms: 5000,
            write_request_timeout_ms: 2000,
            range_request_timeout_ms: 10_000,
            request_timeout_ms: 10_000,
            batch_size_warn_threshold_bytes: 5 * 1024,
            batch_size_fail_threshold_bytes: 50 * 1024,
            unlogged_batch_across_partitions_warn_threshold: 10,
            tombstone_warn_threshold: 1000,
            tombstone_failure_threshold: 100_000,
            drop_compact_storage_enabled: false,
            authenticator: Authenticator::AllowAll,
            authorizer: Authorizer::AllowAll,
            client_encryption: None,
            admin_api_requires_credentials: false,
            audit_logging: AuditLogOptions::default(),
            credentials_validity_ms: 2000,
            auth_bcrypt_gensalt_log2_rounds: 10,
            prepared_statements_cache_size_bytes: 64 * MIB,
            raw: BTreeMap::new(),
        }
    }
}

fn scalar_text(v: &serde_yaml::Value) -> Option<String> {
    match v {
        serde_yaml::Value::String(s) => Some(s.clone()),
        serde_yaml::Value::Number(n) => Some(n.to_string()),
        serde_yaml::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

impl NodeConfig {
    /// The largest mutation a write may make, as Cassandra's `getMaxMutationSize`.
    pub fn max_mutation_bytes(&self) -> u64 {
        self.max_mutation_size_bytes
            .unwrap_or(self.commitlog_segment_size_bytes / 2)
    }

    /// The fraction of the memtable space at which the largest memtable is flushed, as
    /// Cassandra computes it.
    pub fn memtable_cleanup_threshold(&self) -> f64 {
        self.memtable_cleanup_threshold
            .unwrap_or(1.0 / (1.0 + self.memtable_flush_writers as f64))
    }

    /// Loads `path` over the defaults. Unknown keys are returned as warnings, not errors, so a
    /// cassandra.yaml can be used as a starting point.
    pub fn load(path: &Path) -> Result<(NodeConfig, Vec<String>), ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let yaml: serde_yaml::Value =
            serde_yaml::from_str(&text).map_err(|e| ConfigError::Yaml {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
        let mut cfg = NodeConfig::default();
        let mut warnings = Vec::new();
        if let serde_yaml::Value::Mapping(map) = yaml {
            for (k, v) in map {
                let Some(key) = k.as_str() else { continue };
                if v.is_null() {
                    continue;
                }
                if key == "data_file_directories" {
                    if let serde_yaml::Value::Sequence(items) = &v {
                        cfg.data_file_directories = items
                            .iter()
                            .filter_map(scalar_text)
                            .map(PathBuf::from)
                            .collect();
                    }
                    continue;
                }
                if key == "seed_provider" {
                    if let Some(seeds) = seeds_of_provider(&v) {
                        cfg.set("seeds", &seeds)?;
                    }
                    continue;
                }
                if security::is_security_setting(key) {
                    let choice = security::check_security_setting(key, &v)?;
                    cfg.apply_security(key, choice);
                    let text = scalar_text(&v).unwrap_or_else(|| format!("{v:?}"));
                    cfg.raw.insert(key.to_string(), text);
                    continue;
                }
                match scalar_text(&v) {
                    Some(value) => {
                        if !cfg.set(key, &value)? {
                            warnings.push(format!(
                                "unknown setting '{key}' in {} ignored",
                                path.display()
                            ));
                        }
                    }
                    None => {
                        warnings.push(format!("setting '{key}' has a structured value; ignored"))
                    }
                }
            }
        }
        Ok((cfg, warnings))
    }

    /// Sets one setting by its Cassandra name; returns Ok(false) for an unknown name.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, ConfigError> {
        if security::is_security_setting(key) {
            let parsed = serde_yaml::from_str(value)
                .unwrap_or_else(|_| serde_yaml::Value::String(value.to_string()));
            let choice = security::check_security_setting(key, &parsed)?;
            self.apply_security(key, choice);
        }
        let v = settings::Value { key, text: value };
        let known = settings::set_transport(self, v)?
            || settings::set_storage(self, v)?
            || settings::set_requests(self, v)?
            || settings::set_node(self, v)?
            || settings::set_cluster(self, v)?;
        if known {
            self.raw.insert(key.to_string(), value.to_string());
        }
        Ok(known)
    }

    /// Records what a checked security setting chose.
    fn apply_security(&mut self, key: &str, choice: SecurityChoice) {
        let class = match choice {
            SecurityChoice::ClientEncryption(tls) => {
                self.client_encryption = tls;
                return;
            }
            SecurityChoice::Audit(options) => {
                self.audit_logging = options;
                return;
            }
            SecurityChoice::Class(c) => Some(c),
            SecurityChoice::Off => None,
        };
        match (key, class.as_deref()) {
            ("authenticator", Some(c)) => {
                self.authenticator = if c == "PasswordAuthenticator" {
                    Authenticator::Password
                } else {
                    Authenticator::AllowAll
                }
            }
            ("authorizer", Some(c)) => {
                self.authorizer = if c == "CassandraAuthorizer" {
                    Authorizer::Cassandra
                } else {
                    Authorizer::AllowAll
                }
            }
            _ => {}
        }
    }

    /// Settings that are each valid but not together; Cassandra refuses to start on these too.
    pub fn check_consistency(&self) -> Result<(), ConfigError> {
        if self.authorizer == Authorizer::Cassandra && self.authenticator == Authenticator::AllowAll
        {
            return Err(ConfigError::Unsupported {
                key: "authorizer".into(),
                message: "CassandraAuthorizer can't be used with AllowAllAuthenticator".into(),
            });
        }
        if !self.admin_address().is_loopback() && self.authenticator != Authenticator::Password {
            return Err(ConfigError::Unsupported {
                key: "api_address".into(),
                message: format!(
                    "the admin API on {} (not a loopback address) would let anyone on the network \
                     flush, snapshot and delete snapshots: it needs authenticator: \
                     PasswordAuthenticator, and then every admin request needs a superuser's \
                     credentials (nodetool -u/-pw)",
                    self.admin_address()
                ),
            });
        }
        if !self.admin_address().is_loopback() && self.client_encryption.is_none() {
            return Err(ConfigError::Unsupported {
                key: "api_address".into(),
                message: format!(
                    "the admin API on {} (not a loopback address) would receive superuser                      credentials in clear text: it needs client_encryption_options (its TLS                      serves the admin API too)",
                    self.admin_address()
                ),
            });
        }
        if self.admin_api_requires_credentials && self.authenticator != Authenticator::Password {
            return Err(ConfigError::Unsupported {
                key: "admin_api_requires_credentials".into(),
                message: "credentials are checked against roles: it needs authenticator: \
                          PasswordAuthenticator"
                    .into(),
            });
        }
        Ok(())
    }

    /// Places every directory under `dir` (the `--data-dir` option).
    pub fn set_data_dir(&mut self, dir: &Path) {
        self.data_file_directories = vec![dir.join("data")];
        self.commitlog_directory = dir.join("commitlog");
        self.saved_caches_directory = dir.join("saved_caches");
        self.hints_directory = dir.join("hints");
    }

    pub fn primary_data_dir(&self) -> PathBuf {
        self.data_file_directories
            .first()
            .cloned()
            .unwrap_or_else(|| PathBuf::from("data/data"))
    }

    /// `api_address`, else the listen address when it is a loopback one (so that several local
    /// nodes each have their own), else 127.0.0.1: like Cassandra's JMX, the admin API is
    /// local-only unless the operator chooses otherwise.
    pub fn admin_address(&self) -> IpAddr {
        match self.api_address {
            Some(a) => a,
            None if self.listen_address.is_loopback() => self.listen_address,
            None => [127, 0, 0, 1].into(),
        }
    }

    /// Whether admin requests need a superuser's HTTP Basic credentials: always on a
    /// non-loopback address (which needs PasswordAuthenticator, see `check_consistency`), on a
    /// loopback one when `admin_api_requires_credentials` is set with PasswordAuthenticator.
    pub fn admin_requires_credentials(&self) -> bool {
        !self.admin_address().is_loopback()
            || (self.admin_api_requires_credentials
                && self.authenticator == Authenticator::Password)
    }

    /// Whether this node is part of a ring of several (it has seeds other than itself, or is
    /// a seed others name): only then does it open the storage port.
    pub fn is_clustered(&self) -> bool {
        !self.seeds.is_empty()
    }

    /// `listen_address:storage_port`.
    pub fn storage_address(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::new(self.listen_address, self.storage_port)
    }
}

/// The `seeds` parameter of cassandra.yaml's `seed_provider` list:
/// `[{class_name: ..., parameters: [{seeds: "a,b"}]}]`.
fn seeds_of_provider(v: &serde_yaml::Value) -> Option<String> {
    let providers = v.as_sequence()?;
    providers.iter().find_map(|p| {
        p.get("parameters")?
            .as_sequence()?
            .iter()
            .find_map(|params| params.get("seeds").and_then(scalar_text))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cassandra_units_parse() {
        assert_eq!(parse_duration_ms("10000ms", 1).unwrap(), 10_000);
        assert_eq!(parse_duration_ms("10s", 1).unwrap(), 10_000);
        assert_eq!(parse_size_bytes("32MiB", MIB).unwrap(), 32 * MIB);
        assert_eq!(parse_size_bytes("64MiB/s", MIB).unwrap(), 64 * MIB);
        assert!(parse_size_bytes("12 parsecs", 1).is_err());
    }

    #[test]
    fn tombstone_thresholds_default_to_cassandras_and_negative_means_none() {
        let mut cfg = NodeConfig::default();
        assert_eq!(cfg.tombstone_warn_threshold, 1000);
        assert_eq!(cfg.tombstone_failure_threshold, 100_000);
        assert!(cfg.set("tombstone_failure_threshold", "2000").unwrap());
        assert!(cfg.set("tombstone_warn_threshold", "-1").unwrap());
        assert_eq!(cfg.tombstone_failure_threshold, 2000);
        assert_eq!(cfg.tombstone_warn_threshold, u64::MAX);
        assert!(cfg.set("tombstone_warn_threshold", "many").is_err());
    }

    #[test]
    fn memtable_cleanup_threshold_follows_the_flush_writers_unless_given() {
        let mut cfg = NodeConfig::default();
        assert!((cfg.memtable_cleanup_threshold() - 1.0 / 3.0).abs() < 1e-9);
        assert!(cfg.set("memtable_flush_writers", "4").unwrap());
        assert!((cfg.memtable_cleanup_threshold() - 0.2).abs() < 1e-9);
        assert!(cfg.set("memtable_cleanup_threshold", "0.5").unwrap());
        assert!((cfg.memtable_cleanup_threshold() - 0.5).abs() < 1e-9);
        assert!(cfg.set("memtable_cleanup_threshold", "0").is_err());
        assert!(cfg.set("memtable_cleanup_threshold", "1.5").is_err());
        assert!(cfg.set("memtable_cleanup_threshold", "half").is_err());
    }

    #[test]
    fn yaml_overrides_defaults_and_warns_on_unknown_keys() {
        let dir = std::env::temp_dir().join(format!("helenus-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("helenus.yaml");
        std::fs::write(
            &p,
            "cluster_name: Prod\nnative_transport_port: 9142\ncommitlog_sync: batch\nno_such_thing: 1\n\
             data_file_directories:\n  - /tmp/x\ncommitlog_sync_period: 2s\n",
        )
        .unwrap();
        let (cfg, warnings) = NodeConfig::load(&p).unwrap();
        assert_eq!(cfg.cluster_name, "Prod");
        assert_eq!(cfg.native_transport_port, 9142);
        assert_eq!(cfg.commitlog_sync, CommitlogSyncMode::Batch);
        assert_eq!(cfg.commitlog_sync_period_ms, 2000);
        assert_eq!(cfg.data_file_directories, vec![PathBuf::from("/tmp/x")]);
        assert_eq!(warnings.len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Issue 11: the admin API deletes snapshots and flushes; off loopback it needs credentials.
    #[test]
    fn admin_api_is_local_unless_protected() {
        let mut cfg = NodeConfig::default();
        cfg.set("listen_address", "127.0.0.5").unwrap();
        assert_eq!(cfg.admin_address(), "127.0.0.5".parse::<IpAddr>().unwrap());
        assert!(!cfg.admin_requires_credentials());
        cfg.set("listen_address", "10.1.2.3").unwrap();
        assert_eq!(cfg.admin_address(), "127.0.0.1".parse::<IpAddr>().unwrap());
        cfg.check_consistency().unwrap();
        cfg.set("api_address", "10.1.2.3").unwrap();
        let err = cfg.check_consistency().unwrap_err().to_string();
        assert!(err.contains("PasswordAuthenticator"), "{err}");
        cfg.set("authenticator", "PasswordAuthenticator").unwrap();
        let err = cfg.check_consistency().unwrap_err().to_string();
        assert!(err.contains("client_encryption_options"), "{err}");
        cfg.client_encryption = Some(ClientEncryption {
            optional: false,
            certificate_chain: "node.pem".into(),
            private_key: "node.key".into(),
            client_auth: ClientAuth::default(),
            truststore: None,
            tls12: true,
            tls13: true,
        });
        cfg.check_consistency().unwrap();
        assert!(cfg.admin_requires_credentials());
        cfg.set("api_address", "127.0.0.1").unwrap();
        assert!(!cfg.admin_requires_credentials());
        cfg.set("admin_api_requires_credentials", "true").unwrap();
        assert!(cfg.admin_requires_credentials());
        cfg.set("authenticator", "AllowAllAuthenticator").unwrap();
        assert!(cfg.check_consistency().is_err());
    }

    #[test]
    fn client_encryption_and_audit_options_are_read_from_yaml() {
        let dir = std::env::temp_dir().join(format!("helenus-cfg-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("helenus.yaml");
        std::fs::write(
            &p,
            "client_encryption_options:\n  optional: true\n  keystore: /n.pem\n\
             audit_logging_options:\n  enabled: true\n  excluded_categories: QUERY\n",
        )
        .unwrap();
        let (cfg, warnings) = NodeConfig::load(&p).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let tls = cfg.client_encryption.unwrap();
        assert!(tls.optional);
        assert_eq!(tls.private_key, PathBuf::from("/n.pem"));
        assert!(cfg.audit_logging.enabled);
        assert_eq!(cfg.audit_logging.excluded_categories, vec!["QUERY"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Issue 11: `authenticator: PasswordAuthenticator` was ignored and the node served everyone.
    #[test]
    fn unsupported_security_settings_refuse_to_load() {
        let dir = std::env::temp_dir().join(format!("helenus-cfg-sec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("helenus.yaml");
        for text in [
            "authenticator: MutualTlsAuthenticator\n",
            "authorizer: LDAPAuthorizer\n",
            "client_encryption_options:\n  enabled: true\n  keystore: k.jks\n",
            "client_encryption_options:\n  enabled: true\n",
            "server_encryption_options:\n  internode_encryption: all\n",
            "authenticator:\n  class_name: org.apache.cassandra.auth.MutualTlsAuthenticator\n",
        ] {
            std::fs::write(&p, text).unwrap();
            let err = NodeConfig::load(&p).unwrap_err();
            assert!(
                matches!(err, ConfigError::Unsupported { .. }),
                "{text}: {err}"
            );
        }
        std::fs::write(
            &p,
            "authenticator: AllowAllAuthenticator\nclient_encryption_options:\n  enabled: false\n",
        )
        .unwrap();
        let (_, warnings) = NodeConfig::load(&p).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let mut cfg = NodeConfig::default();
        assert!(cfg.set("authenticator", "KerberosAuthenticator").is_err());
        assert!(cfg.set("authenticator", "AllowAllAuthenticator").unwrap());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn seeds_come_from_seed_provider_or_a_list_with_the_storage_port() {
        let dir = std::env::temp_dir().join(format!("helenus-cfg-seeds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("helenus.yaml");
        std::fs::write(
            &p,
            "storage_port: 7001\nseed_provider:\n  - class_name: org.apache.cassandra.locator.SimpleSeedProvider\n    parameters:\n      - seeds: \"127.0.0.1, 127.0.0.2:7005\"\n",
        )
        .unwrap();
        let (cfg, warnings) = NodeConfig::load(&p).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            cfg.seeds,
            vec![
                "127.0.0.1:7001".parse().unwrap(),
                "127.0.0.2:7005".parse().unwrap()
            ]
        );
        assert!(cfg.is_clustered());
        let mut cfg = NodeConfig::default();
        assert!(!cfg.is_clustered());
        assert!(cfg.set("seeds", "127.0.0.9").unwrap());
        assert_eq!(cfg.seeds, vec!["127.0.0.9:7000".parse().unwrap()]);
        assert!(cfg.set("seeds", "not an address").is_err());
        assert!(cfg.set("phi_convict_threshold", "12").unwrap());
        assert_eq!(cfg.phi_convict_threshold, 12.0);
        assert!(cfg.set("max_hint_window", "1h").unwrap());
        assert_eq!(cfg.max_hint_window_ms, 3_600_000);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn password_authentication_and_cassandra_authorizer_are_chosen_by_name() {
        let mut cfg = NodeConfig::default();
        assert_eq!(cfg.authenticator, Authenticator::AllowAll);
        assert!(cfg.set("authorizer", "CassandraAuthorizer").unwrap());
        assert!(cfg.check_consistency().is_err());
        assert!(cfg
            .set(
                "authenticator",
                "org.apache.cassandra.auth.PasswordAuthenticator"
            )
            .unwrap());
        assert_eq!(cfg.authenticator, Authenticator::Password);
        assert_eq!(cfg.authorizer, Authorizer::Cassandra);
        cfg.check_consistency().unwrap();
        assert!(cfg.set("credentials_validity", "5s").unwrap());
        assert_eq!(cfg.credentials_validity_ms, 5000);
        assert!(cfg.set("auth_bcrypt_gensalt_log2_rounds", "4").unwrap());
        assert!(cfg.set("auth_bcrypt_gensalt_log2_rounds", "40").is_err());
    }

    #[test]
    fn request_path_bounds_take_cassandra_names() {
        let mut cfg = NodeConfig::default();
        assert_eq!(cfg.range_request_timeout_ms, 10_000);
        assert!(cfg
            .set("native_transport_max_request_data_in_flight", "64MiB")
            .unwrap());
        assert_eq!(
            cfg.native_transport_max_request_data_in_flight_bytes,
            64 * MIB
        );
        assert!(cfg
            .set("native_transport_max_concurrent_connections", "-1")
            .unwrap());
        assert_eq!(
            cfg.native_transport_max_concurrent_connections,
            tokio::sync::Semaphore::MAX_PERMITS
        );
        assert!(cfg.set("range_request_timeout", "3s").unwrap());
        assert_eq!(cfg.range_request_timeout_ms, 3000);
        assert!(cfg.set("native_transport_max_threads", "8").unwrap());
        assert_eq!(cfg.native_transport_max_threads, 8);
        assert!(cfg.set("native_transport_io_threads", "2").unwrap());
        assert_eq!(cfg.native_transport_io_threads, 2);
        assert!(cfg
            .set("native_transport_rate_limiting_enabled", "yes")
            .is_err());
    }
}
