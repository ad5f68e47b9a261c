//! Setting one `cassandra.yaml` name, one function per section. Each returns `Ok(false)` for a name
//! it does not own, so [`NodeConfig::set`] tries them in turn.

use super::units::{parse_duration_ms, parse_size_bytes};
use super::{CommitlogSyncMode, ConfigError, NodeConfig, MIB};
use std::net::IpAddr;
use std::path::PathBuf;

/// One setting as given: its name (for error messages) and its text.
#[derive(Debug, Clone, Copy)]
pub(super) struct Value<'a> {
    pub key: &'a str,
    pub text: &'a str,
}

impl Value<'_> {
    fn bad(&self, message: String) -> ConfigError {
        ConfigError::Value {
            key: self.key.to_string(),
            message,
        }
    }

    fn ip(&self) -> Result<IpAddr, ConfigError> {
        let v = self.text;
        v.parse::<IpAddr>()
            .map_err(|e| self.bad(format!("{v}: {e}")))
    }

    fn int(&self) -> Result<u64, ConfigError> {
        let v = self.text;
        v.trim()
            .parse::<u64>()
            .map_err(|e| self.bad(format!("{v}: {e}")))
    }

    /// Cassandra takes a negative threshold as "none".
    fn threshold(&self) -> Result<u64, ConfigError> {
        let v = self.text;
        match v.trim().parse::<i64>() {
            Ok(n) => Ok(u64::try_from(n).unwrap_or(u64::MAX)),
            Err(e) => Err(self.bad(format!("{v}: {e}"))),
        }
    }

    /// A fraction in (0, 1], as `memtable_cleanup_threshold` takes.
    fn fraction(&self) -> Result<f64, ConfigError> {
        let v = self.text.trim();
        match v.parse::<f64>() {
            Ok(f) if f > 0.0 && f <= 1.0 => Ok(f),
            Ok(_) => Err(self.bad(format!("{v}: must be above 0 and at most 1"))),
            Err(e) => Err(self.bad(format!("{v}: {e}"))),
        }
    }

    fn size(&self, default_unit_bytes: u64) -> Result<u64, ConfigError> {
        parse_size_bytes(self.text, default_unit_bytes).map_err(|m| self.bad(m))
    }

    fn duration_ms(&self) -> Result<u64, ConfigError> {
        parse_duration_ms(self.text, 1).map_err(|m| self.bad(m))
    }

    fn boolean(&self) -> Result<bool, ConfigError> {
        match self.text.trim() {
            "true" => Ok(true),
            "false" => Ok(false),
            other => Err(self.bad(format!("'{other}' is not true or false"))),
        }
    }
}

/// The native transport: addresses, port, frame size and the request limits.
pub(super) fn set_transport(c: &mut NodeConfig, v: Value) -> Result<bool, ConfigError> {
    match v.key {
        "cluster_name" => c.cluster_name = v.text.to_string(),
        "num_tokens" => c.num_tokens = v.int()?.clamp(1, 1024) as usize,
        "listen_address" => {
            let a = v.ip()?;
            if c.rpc_address == c.listen_address {
                c.rpc_address = a;
            }
            c.listen_address = a;
        }
        "rpc_address" | "native_transport_address" => c.rpc_address = v.ip()?,
        "native_transport_port" => c.native_transport_port = v.int()? as u16,
        "native_transport_max_frame_size" => {
            c.native_transport_max_frame_size_bytes = v.size(MIB)? as usize
        }
        "native_transport_max_frame_size_in_mb" => {
            c.native_transport_max_frame_size_bytes = (v.int()? * MIB) as usize
        }
        "native_transport_max_concurrent_connections" => {
            // Cassandra's -1 means no limit; the semaphore's own maximum stands in for it.
            c.native_transport_max_concurrent_connections = match v.text.trim() {
                "-1" => tokio::sync::Semaphore::MAX_PERMITS,
                _ => v.int()? as usize,
            }
        }
        "native_transport_max_request_data_in_flight" => {
            c.native_transport_max_request_data_in_flight_bytes = v.size(1)?
        }
        "native_transport_max_request_data_in_flight_in_bytes" => {
            c.native_transport_max_request_data_in_flight_bytes = v.int()?
        }
        "native_transport_max_response_data_queued" => {
            c.native_transport_max_response_data_queued_bytes = v.size(1)?
        }
        "native_transport_max_threads" => c.native_transport_max_threads = v.int()?.max(1) as usize,
        "native_transport_io_threads" => {
            c.native_transport_io_threads = v.int()?.clamp(0, 256) as usize
        }
        "native_transport_max_requests_per_second" => {
            c.native_transport_max_requests_per_second = v.int()?.max(1)
        }
        "native_transport_rate_limiting_enabled" => {
            c.native_transport_rate_limiting_enabled = v.boolean()?
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Directories, the commitlog, memtables, caches and compaction.
pub(super) fn set_storage(c: &mut NodeConfig, v: Value) -> Result<bool, ConfigError> {
    match v.key {
        "data_file_directories" => c.data_file_directories = vec![PathBuf::from(v.text)],
        "commitlog_directory" => c.commitlog_directory = PathBuf::from(v.text),
        "saved_caches_directory" => c.saved_caches_directory = PathBuf::from(v.text),
        "hints_directory" => c.hints_directory = PathBuf::from(v.text),
        "commitlog_sync" => {
            c.commitlog_sync = match v.text {
                "periodic" => CommitlogSyncMode::Periodic,
                "batch" => CommitlogSyncMode::Batch,
                "group" => CommitlogSyncMode::Group,
                other => return Err(v.bad(format!("'{other}' is not periodic, batch or group"))),
            }
        }
        "commitlog_sync_period" => c.commitlog_sync_period_ms = v.duration_ms()?,
        "commitlog_sync_period_in_ms" => c.commitlog_sync_period_ms = v.int()?,
        "commitlog_sync_group_window" => c.commitlog_sync_group_window_ms = v.duration_ms()?,
        "commitlog_sync_group_window_in_ms" => c.commitlog_sync_group_window_ms = v.int()?,
        "commitlog_segment_size" => c.commitlog_segment_size_bytes = v.size(MIB)?,
        "commitlog_segment_size_in_mb" => c.commitlog_segment_size_bytes = v.int()? * MIB,
        "max_mutation_size" => c.max_mutation_size_bytes = Some(v.size(1024)?),
        "max_mutation_size_in_kb" => c.max_mutation_size_bytes = Some(v.int()? * 1024),
        "memtable_heap_space" | "memtable_offheap_space" => c.memtable_space_bytes = v.size(MIB)?,
        "memtable_heap_space_in_mb" | "memtable_offheap_space_in_mb" => {
            c.memtable_space_bytes = v.int()? * MIB
        }
        "memtable_cleanup_threshold" => c.memtable_cleanup_threshold = Some(v.fraction()?),
        "default_table_layout" => {
            c.default_table_layout =
                helenus_schema::StorageLayout::parse(v.text.as_bytes()).map_err(|e| v.bad(e))?
        }
        "memtable_flush_writers" => c.memtable_flush_writers = v.int()?.max(1),
        "key_cache_size" => c.key_cache_size_bytes = v.size(MIB)?,
        "key_cache_size_in_mb" => c.key_cache_size_bytes = v.int()? * MIB,
        "file_cache_size" => c.file_cache_size_bytes = v.size(MIB)?,
        "file_cache_size_in_mb" => c.file_cache_size_bytes = v.int()? * MIB,
        "row_cache_size" => c.row_cache_size_bytes = v.size(MIB)?,
        "row_cache_size_in_mb" => c.row_cache_size_bytes = v.int()? * MIB,
        "concurrent_compactors" => c.concurrent_compactors = v.int()?.max(1) as usize,
        "compaction_throughput" => c.compaction_throughput_mib_per_s = v.size(MIB)? / MIB,
        "compaction_throughput_mb_per_sec" => c.compaction_throughput_mib_per_s = v.int()?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// Request timeouts, batch and tombstone thresholds, the prepared-statement cache and guardrails.
pub(super) fn set_requests(c: &mut NodeConfig, v: Value) -> Result<bool, ConfigError> {
    match v.key {
        "read_request_timeout" => c.read_request_timeout_ms = v.duration_ms()?,
        "write_request_timeout" => c.write_request_timeout_ms = v.duration_ms()?,
        "read_request_timeout_in_ms" => c.read_request_timeout_ms = v.int()?,
        "write_request_timeout_in_ms" => c.write_request_timeout_ms = v.int()?,
        "range_request_timeout" => c.range_request_timeout_ms = v.duration_ms()?,
        "range_request_timeout_in_ms" => c.range_request_timeout_ms = v.int()?,
        "request_timeout" => c.request_timeout_ms = v.duration_ms()?,
        "request_timeout_in_ms" => c.request_timeout_ms = v.int()?,
        "batch_size_warn_threshold" => c.batch_size_warn_threshold_bytes = v.size(1024)?,
        "batch_size_warn_threshold_in_kb" => c.batch_size_warn_threshold_bytes = v.int()? * 1024,
        "batch_size_fail_threshold" => c.batch_size_fail_threshold_bytes = v.size(1024)?,
        "batch_size_fail_threshold_in_kb" => c.batch_size_fail_threshold_bytes = v.int()? * 1024,
        "unlogged_batch_across_partitions_warn_threshold" => {
            c.unlogged_batch_across_partitions_warn_threshold = v.int()?
        }
        "tombstone_warn_threshold" => c.tombstone_warn_threshold = v.threshold()?,
        "tombstone_failure_threshold" => c.tombstone_failure_threshold = v.threshold()?,
        "prepared_statements_cache_size" => {
            // Cassandra's "auto" sizes it from the JVM heap; Helenus has none, so the default.
            if v.text.trim() != "auto" {
                c.prepared_statements_cache_size_bytes = v.size(MIB)?
            }
        }
        "prepared_statements_cache_size_mb" => {
            c.prepared_statements_cache_size_bytes = v.int()? * MIB
        }
        "drop_compact_storage_enabled" => c.drop_compact_storage_enabled = v.boolean()?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// A megabit per second, as Cassandra's older `*_megabits_per_sec` settings count it.
const BYTES_PER_MEGABIT: u64 = 125_000;

/// The ring: seeds, the storage port, failure detection, hints and token allocation. A seed
/// without a port takes `storage_port`, in whichever order the two are set.
pub(super) fn set_cluster(c: &mut NodeConfig, v: Value) -> Result<bool, ConfigError> {
    match v.key {
        "seeds" => {
            let mut seeds = Vec::new();
            for s in v.text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let addr = match s.parse::<std::net::SocketAddr>() {
                    Ok(a) => a,
                    Err(_) => std::net::SocketAddr::new(
                        s.parse::<IpAddr>()
                            .map_err(|e| v.bad(format!("seed '{s}': {e}")))?,
                        c.storage_port,
                    ),
                };
                seeds.push(addr);
            }
            c.seeds = seeds;
        }
        "storage_port" => {
            let port = v.int()? as u16;
            let old = c.storage_port;
            for s in c.seeds.iter_mut().filter(|s| s.port() == old) {
                s.set_port(port);
            }
            c.storage_port = port;
        }
        "phi_convict_threshold" => {
            c.phi_convict_threshold = v
                .text
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|p| p.is_finite() && *p > 0.0)
                .ok_or_else(|| v.bad(format!("'{}' is not a positive number", v.text)))?
        }
        "hinted_handoff_enabled" => c.hinted_handoff_enabled = v.boolean()?,
        // Cassandra 5.0's rates (`24MiB/s`, a bare number in MiB/s), and the names before 4.1
        // in megabits per second.
        "stream_throughput_outbound" => c.stream_throughput_outbound_bytes_per_s = v.size(MIB)?,
        "stream_throughput_outbound_megabits_per_sec" => {
            c.stream_throughput_outbound_bytes_per_s = v.int()? * BYTES_PER_MEGABIT
        }
        "entire_sstable_stream_throughput_outbound" => {
            c.entire_sstable_stream_throughput_outbound_bytes_per_s = v.size(MIB)?
        }
        "entire_sstable_stream_throughput_outbound_megabits_per_sec" => {
            c.entire_sstable_stream_throughput_outbound_bytes_per_s = v.int()? * BYTES_PER_MEGABIT
        }
        "fault_injection_enabled" => c.fault_injection_enabled = v.boolean()?,
        "auto_bootstrap" => c.auto_bootstrap = v.boolean()?,
        "replace_address_first_boot" | "replace_address" => {
            c.replace_address_first_boot = Some(v.ip()?)
        }
        "max_hint_window" => c.max_hint_window_ms = v.duration_ms()?,
        "max_hint_window_in_ms" => c.max_hint_window_ms = v.int()?,
        "allocate_tokens_for_local_replication_factor" => {
            c.allocate_tokens_for_local_replication_factor = v.int()?.clamp(1, 16) as usize
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// The admin API, the node's place in the topology, and the cassandra.yaml names accepted with
/// Helenus's one behaviour.
pub(super) fn set_node(c: &mut NodeConfig, v: Value) -> Result<bool, ConfigError> {
    match v.key {
        "api_address" => c.api_address = Some(v.ip()?),
        "api_port" => c.api_port = v.int()? as u16,
        "admin_api_requires_credentials" => c.admin_api_requires_credentials = v.boolean()?,
        "dc" | "data_center" => c.data_center = v.text.to_string(),
        "rack" => c.rack = v.text.to_string(),
        "credentials_validity" | "credentials_validity_in_ms" => {
            c.credentials_validity_ms = v.duration_ms()?
        }
        "auth_bcrypt_gensalt_log2_rounds" => {
            // bcrypt's own bounds: 4 (fast, for tests) to 31.
            let rounds = v.int()?;
            if !(4..=31).contains(&rounds) {
                return Err(v.bad(format!("{rounds} is outside bcrypt's 4..=31")));
            }
            c.auth_bcrypt_gensalt_log2_rounds = rounds as u32;
        }
        // Accepted for cassandra.yaml compatibility; Helenus has one behaviour for these.
        "partitioner"
        | "endpoint_snitch"
        | "start_native_transport"
        | "authenticator"
        | "authorizer"
        | "role_manager"
        | "network_authorizer"
        | "cidr_authorizer"
        | "crypto_provider"
        | "client_encryption_options"
        | "audit_logging_options"
        | "server_encryption_options"
        | "transparent_data_encryption_options"
        | "jmx_encryption_options"
        | "ssl_storage_port"
        | "concurrent_reads"
        | "concurrent_writes"
        | "concurrent_counter_writes"
        | "disk_access_mode"
        | "auto_snapshot"
        | "broadcast_address"
        | "broadcast_rpc_address"
        | "storage_compatibility_mode"
        // Helenus reads roles and permissions from memory on every check, so a change applies at
        // once and these caches have nothing to hold.
        | "roles_validity"
        | "roles_update_interval"
        | "permissions_validity"
        | "permissions_update_interval"
        | "credentials_update_interval" => {}
        _ => return Ok(false),
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn every_section_sets_its_names_and_records_them_raw() {
        let mut c = NodeConfig::default();
        for (key, value) in [
            ("native_transport_port", "9142"),
            ("commitlog_sync", "batch"),
            ("read_request_timeout", "7s"),
            ("tombstone_warn_threshold", "-1"),
            ("rack", "r9"),
            ("partitioner", "Murmur3Partitioner"),
        ] {
            assert!(c.set(key, value).unwrap(), "{key}");
            assert_eq!(c.raw.get(key).map(String::as_str), Some(value));
        }
        assert_eq!(c.native_transport_port, 9142);
        assert_eq!(c.commitlog_sync, CommitlogSyncMode::Batch);
        assert_eq!(c.read_request_timeout_ms, 7000);
        assert_eq!(c.tombstone_warn_threshold, u64::MAX);
        assert_eq!(c.rack, "r9");
        assert_eq!(c.stream_throughput_outbound_bytes_per_s, 24 * MIB);
        assert!(c.set("stream_throughput_outbound", "8MiB/s").unwrap());
        assert_eq!(c.stream_throughput_outbound_bytes_per_s, 8 * MIB);
        assert!(c.set("stream_throughput_outbound", "0MiB/s").unwrap());
        assert_eq!(c.stream_throughput_outbound_bytes_per_s, 0);
        assert!(c
            .set("entire_sstable_stream_throughput_outbound", "1GiB/s")
            .unwrap());
        assert_eq!(
            c.entire_sstable_stream_throughput_outbound_bytes_per_s,
            1024 * MIB
        );
        assert!(!c.set("no_such_setting", "1").unwrap());
        assert!(!c.raw.contains_key("no_such_setting"));
    }

    #[test]
    fn bad_values_name_the_setting_and_the_value() {
        let mut c = NodeConfig::default();
        let err = |c: &mut NodeConfig, k: &str, v: &str| c.set(k, v).unwrap_err().to_string();
        assert_eq!(
            err(&mut c, "native_transport_port", "x"),
            "invalid value for native_transport_port: x: invalid digit found in string"
        );
        assert_eq!(
            err(&mut c, "commitlog_sync", "sometimes"),
            "invalid value for commitlog_sync: 'sometimes' is not periodic, batch or group"
        );
        assert_eq!(
            err(&mut c, "drop_compact_storage_enabled", "yes"),
            "invalid value for drop_compact_storage_enabled: 'yes' is not true or false"
        );
        assert_eq!(
            err(&mut c, "key_cache_size", "12XB"),
            "invalid value for key_cache_size: unknown size unit 'XB' in '12XB'"
        );
    }
}
