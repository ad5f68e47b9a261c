//! Row generators for the system tables drivers read at connect and on schema refresh.

use super::{text, RowBuilder};
use crate::node::NodeState;
use bytes::Bytes;
use helenus_schema::{KeyspaceKind, KeyspaceMeta, TableKind, TableMeta};
use helenus_types::CqlValue;

type Rows = Vec<Vec<Option<Bytes>>>;

fn string_map(m: &std::collections::BTreeMap<String, String>) -> CqlValue {
    CqlValue::Map(
        m.iter()
            .map(|(k, v)| (text(k.clone()), text(v.clone())))
            .collect(),
    )
}

pub fn local_row(state: &NodeState, t: &TableMeta) -> Vec<Option<Bytes>> {
    let cfg = &state.config;
    let id = &state.identity;
    let tokens = CqlValue::Set(id.tokens.iter().map(|tk| text(tk.to_string())).collect());
    RowBuilder::new(t)
        .set("key", text("local"))
        .set("bootstrapped", text("COMPLETED"))
        .set("broadcast_address", CqlValue::Inet(cfg.listen_address))
        .set("broadcast_port", CqlValue::Int(i32::from(cfg.storage_port)))
        .set("cluster_name", text(cfg.cluster_name.clone()))
        .set("cql_version", text(crate::CQL_VERSION))
        .set("data_center", text(cfg.data_center.clone()))
        .set(
            "gossip_generation",
            CqlValue::Int(state.started_at_s as i32),
        )
        .set("host_id", CqlValue::Uuid(id.host_id))
        .set("listen_address", CqlValue::Inet(cfg.listen_address))
        .set("listen_port", CqlValue::Int(i32::from(cfg.storage_port)))
        .set("native_protocol_version", text("5"))
        .set(
            "partitioner",
            text("org.apache.cassandra.dht.Murmur3Partitioner"),
        )
        .set("rack", text(cfg.rack.clone()))
        .set("release_version", text(crate::RELEASE_VERSION))
        .set("rpc_address", CqlValue::Inet(cfg.rpc_address))
        .set("rpc_port", CqlValue::Int(cfg.native_transport_port as i32))
        .set("schema_version", CqlValue::Uuid(state.schema().version))
        .set("tokens", tokens)
        .build()
}

/// `system.peers` and `system.peers_v2`: every other ring member with tokens (a node still
/// choosing its tokens is not listed, as Cassandra lists a peer once it has joined).
pub fn peers(state: &NodeState, t: &TableMeta) -> Rows {
    let Some(cluster) = state.cluster() else {
        return Vec::new();
    };
    cluster
        .peers()
        .into_iter()
        // Owners only, as Cassandra lists token-metadata members: not a node still joining
        // (BOOT, BOOT_REPLACE: its ranges not yet received) nor one that has left or was
        // removed or replaced.
        .filter(|p| {
            !p.tokens.is_empty()
                && !matches!(p.status.as_str(), "BOOT" | "BOOT_REPLACE")
                && !helenus_cluster::gossip::status::is_gone(&p.status)
        })
        .filter_map(|p| {
            let address = p.address?;
            let native = p.native.unwrap_or(address);
            let tokens = CqlValue::Set(p.tokens.iter().map(|tk| text(tk.to_string())).collect());
            Some(
                RowBuilder::new(t)
                    .set("peer", CqlValue::Inet(address.ip()))
                    .set("peer_port", CqlValue::Int(i32::from(address.port())))
                    .set("data_center", text(p.location.datacenter.clone()))
                    .set("rack", text(p.location.rack.clone()))
                    .set("host_id", CqlValue::Uuid(p.host_id.0))
                    .set("rpc_address", CqlValue::Inet(native.ip()))
                    .set("native_address", CqlValue::Inet(native.ip()))
                    .set("native_port", CqlValue::Int(i32::from(native.port())))
                    .set_opt("release_version", p.release_version.clone().map(text))
                    .set_opt(
                        "schema_version",
                        p.schema_version
                            .as_deref()
                            .and_then(|v| v.parse::<uuid::Uuid>().ok())
                            .map(CqlValue::Uuid),
                    )
                    .set("tokens", tokens)
                    .build(),
            )
        })
        .collect()
}

/// One row per (table, local token range) with estimates from the storage engine, as the Spark
/// connector reads them to split scans.
pub fn size_estimates(state: &NodeState, t: &TableMeta) -> Rows {
    let schema = state.schema();
    let tokens = &state.identity.tokens;
    let mut out = Vec::new();
    for ks in schema.user_keyspaces() {
        for table in ks.tables.values() {
            let (partitions, mean_size) = state.estimate_partitions(table);
            let n = tokens.len().max(1) as i64;
            for (i, start) in tokens.iter().enumerate() {
                let end = tokens
                    .get(i + 1)
                    .copied()
                    .unwrap_or(tokens.first().copied().unwrap_or(0));
                out.push(
                    RowBuilder::new(t)
                        .set("keyspace_name", text(ks.name.clone()))
                        .set("table_name", text(table.name.clone()))
                        .set("range_start", text(start.to_string()))
                        .set("range_end", text(end.to_string()))
                        .set("partitions_count", CqlValue::Bigint(partitions / n))
                        .set("mean_partition_size", CqlValue::Bigint(mean_size))
                        .set("range_type", text("primary"))
                        .build(),
                );
            }
        }
    }
    out
}

fn schema_keyspaces(state: &NodeState) -> Vec<std::sync::Arc<KeyspaceMeta>> {
    state
        .schema()
        .keyspaces
        .values()
        .filter(|k| k.kind != KeyspaceKind::Virtual)
        .cloned()
        .collect()
}

pub fn keyspaces(state: &NodeState, t: &TableMeta) -> Rows {
    schema_keyspaces(state)
        .iter()
        .map(|ks| {
            RowBuilder::new(t)
                .set("keyspace_name", text(ks.name.clone()))
                .set("durable_writes", CqlValue::Boolean(ks.durable_writes))
                .set("replication", string_map(&ks.replication))
                .build()
        })
        .collect()
}

pub fn table_option_cells<'a>(b: RowBuilder<'a>, table: &TableMeta) -> RowBuilder<'a> {
    let p = &table.params;
    b.set(
        "additional_write_policy",
        text(p.additional_write_policy.clone()),
    )
    .set_opt(
        "allow_auto_snapshot",
        p.allow_auto_snapshot.map(CqlValue::Boolean),
    )
    .set(
        "bloom_filter_fp_chance",
        CqlValue::Double(p.bloom_filter_fp_chance),
    )
    .set("caching", string_map(&p.caching))
    .set_opt("cdc", p.cdc.map(CqlValue::Boolean))
    .set("comment", text(p.comment.clone()))
    .set("compaction", string_map(&p.compaction))
    .set("compression", string_map(&p.compression))
    .set("crc_check_chance", CqlValue::Double(p.crc_check_chance))
    .set("dclocal_read_repair_chance", CqlValue::Double(0.0))
    .set(
        "default_time_to_live",
        CqlValue::Int(p.default_time_to_live),
    )
    .set(
        "extensions",
        CqlValue::Map(
            p.extensions
                .iter()
                .map(|(k, v)| (text(k.clone()), CqlValue::Blob(Bytes::from(v.clone()))))
                .collect(),
        ),
    )
    .set("gc_grace_seconds", CqlValue::Int(p.gc_grace_seconds))
    .set("id", CqlValue::Uuid(table.id))
    .set_opt(
        "incremental_backups",
        p.incremental_backups.map(CqlValue::Boolean),
    )
    .set("max_index_interval", CqlValue::Int(p.max_index_interval))
    .set_opt("memtable", p.memtable.clone().map(text))
    .set(
        "memtable_flush_period_in_ms",
        CqlValue::Int(p.memtable_flush_period_in_ms),
    )
    .set("min_index_interval", CqlValue::Int(p.min_index_interval))
    .set("read_repair", text(p.read_repair.clone()))
    .set("read_repair_chance", CqlValue::Double(0.0))
    .set("speculative_retry", text(p.speculative_retry.clone()))
}

pub fn tables(state: &NodeState, t: &TableMeta) -> Rows {
    let mut out = Vec::new();
    for ks in schema_keyspaces(state) {
        for table in ks.tables.values() {
            let b = RowBuilder::new(t)
                .set("keyspace_name", text(ks.name.clone()))
                .set("table_name", text(table.name.clone()))
                .set(
                    "flags",
                    CqlValue::Set(table.flags.iter().map(|f| text(f.clone())).collect()),
                );
            out.push(table_option_cells(b, table).build());
        }
    }
    out
}

fn column_rows(t: &TableMeta, ks_name: &str, table: &TableMeta) -> Rows {
    table
        .columns
        .iter()
        .map(|c| {
            RowBuilder::new(t)
                .set("keyspace_name", text(ks_name.to_string()))
                .set("table_name", text(table.name.clone()))
                .set("column_name", text(c.name.clone()))
                .set("clustering_order", text(c.order.as_str()))
                .set(
                    "column_name_bytes",
                    CqlValue::Blob(Bytes::from(c.name.clone().into_bytes())),
                )
                .set("kind", text(c.kind.as_str()))
                .set("position", CqlValue::Int(c.position))
                .set("type", text(c.cql_type.to_string()))
                .build()
        })
        .collect()
}

pub fn columns(state: &NodeState, t: &TableMeta) -> Rows {
    let mut out = Vec::new();
    for ks in schema_keyspaces(state) {
        for table in ks.tables.values() {
            out.extend(column_rows(t, &ks.name, table));
        }
    }
    out
}

pub fn types(state: &NodeState, t: &TableMeta) -> Rows {
    let mut out = Vec::new();
    for ks in schema_keyspaces(state) {
        for ut in ks.types.values() {
            out.push(
                RowBuilder::new(t)
                    .set("keyspace_name", text(ks.name.clone()))
                    .set("type_name", text(ut.name.clone()))
                    .set(
                        "field_names",
                        CqlValue::List(ut.fields.iter().map(|(n, _)| text(n.clone())).collect()),
                    )
                    .set(
                        "field_types",
                        CqlValue::List(
                            ut.fields
                                .iter()
                                .map(|(_, ty)| text(ty.to_string()))
                                .collect(),
                        ),
                    )
                    .build(),
            );
        }
    }
    out
}

pub fn indexes(state: &NodeState, t: &TableMeta) -> Rows {
    let mut out = Vec::new();
    for ks in schema_keyspaces(state) {
        for table in ks.tables.values() {
            for idx in &table.indexes {
                out.push(
                    RowBuilder::new(t)
                        .set("keyspace_name", text(ks.name.clone()))
                        .set("table_name", text(table.name.clone()))
                        .set("index_name", text(idx.name.clone()))
                        .set("kind", text(idx.kind.clone()))
                        .set("options", string_map(&idx.options))
                        .build(),
                );
            }
        }
    }
    out
}

/// `system."IndexInfo"`: the indexes that answer queries, by keyspace (Cassandra's
/// `table_name` column holds the keyspace name). An index kept in an index table is listed once
/// its build completes; the others answer by scanning from their creation.
pub fn built_indexes(state: &NodeState, t: &TableMeta) -> Rows {
    use crate::index_storage::{index_table_id, indexed_column};
    let mut out = Vec::new();
    for ks in schema_keyspaces(state) {
        for table in ks.tables.values() {
            for idx in &table.indexes {
                let built = indexed_column(table, idx).is_none()
                    || state.engine.index_built(index_table_id(table, &idx.name));
                if built {
                    out.push(
                        RowBuilder::new(t)
                            .set("table_name", text(ks.name.clone()))
                            .set("index_name", text(idx.name.clone()))
                            .build(),
                    );
                }
            }
        }
    }
    out
}

pub fn dropped_columns(state: &NodeState, t: &TableMeta) -> Rows {
    let mut out = Vec::new();
    for ks in schema_keyspaces(state) {
        for table in ks.tables.values() {
            for (name, (ty, at_us)) in &table.dropped_columns {
                out.push(
                    RowBuilder::new(t)
                        .set("keyspace_name", text(ks.name.clone()))
                        .set("table_name", text(table.name.clone()))
                        .set("column_name", text(name.clone()))
                        .set("dropped_time", CqlValue::Timestamp(at_us / 1000))
                        .set("kind", text("regular".to_string()))
                        .set("type", text(ty.to_string()))
                        .build(),
                );
            }
        }
    }
    out
}

fn virtual_keyspace_list(state: &NodeState) -> Vec<std::sync::Arc<KeyspaceMeta>> {
    state
        .schema()
        .keyspaces
        .values()
        .filter(|k| k.kind == KeyspaceKind::Virtual)
        .cloned()
        .collect()
}

pub fn virtual_keyspaces(state: &NodeState, t: &TableMeta) -> Rows {
    virtual_keyspace_list(state)
        .iter()
        .map(|ks| {
            RowBuilder::new(t)
                .set("keyspace_name", text(ks.name.clone()))
                .build()
        })
        .collect()
}

pub fn virtual_tables(state: &NodeState, t: &TableMeta) -> Rows {
    let mut out = Vec::new();
    for ks in virtual_keyspace_list(state) {
        for table in ks.tables.values().filter(|x| x.kind == TableKind::Virtual) {
            out.push(
                RowBuilder::new(t)
                    .set("keyspace_name", text(ks.name.clone()))
                    .set("table_name", text(table.name.clone()))
                    .set("comment", text(table.params.comment.clone()))
                    .build(),
            );
        }
    }
    out
}

pub fn virtual_columns(state: &NodeState, t: &TableMeta) -> Rows {
    let mut out = Vec::new();
    for ks in virtual_keyspace_list(state) {
        for table in ks.tables.values() {
            out.extend(column_rows(t, &ks.name, table));
        }
    }
    out
}

pub fn settings(state: &NodeState, t: &TableMeta) -> Rows {
    let cfg = &state.config;
    let mut pairs: Vec<(String, String)> = vec![
        ("cluster_name".into(), cfg.cluster_name.clone()),
        ("listen_address".into(), cfg.listen_address.to_string()),
        ("rpc_address".into(), cfg.rpc_address.to_string()),
        (
            "native_transport_port".into(),
            cfg.native_transport_port.to_string(),
        ),
        ("num_tokens".into(), cfg.num_tokens.to_string()),
        (
            "commitlog_sync".into(),
            format!("{:?}", cfg.commitlog_sync).to_lowercase(),
        ),
        (
            "commitlog_sync_period".into(),
            format!("{}ms", cfg.commitlog_sync_period_ms),
        ),
        (
            "concurrent_compactors".into(),
            cfg.concurrent_compactors.to_string(),
        ),
        (
            "compaction_throughput".into(),
            format!("{}MiB/s", state.engine.compaction_throughput_mib_per_s()),
        ),
        (
            "partitioner".into(),
            "org.apache.cassandra.dht.Murmur3Partitioner".into(),
        ),
    ];
    for (k, v) in &cfg.raw {
        if !pairs.iter().any(|(n, _)| n == k) {
            pairs.push((k.clone(), v.clone()));
        }
    }
    pairs
        .into_iter()
        .map(|(k, v)| {
            RowBuilder::new(t)
                .set("name", text(k))
                .set("value", text(v))
                .build()
        })
        .collect()
}

pub fn clients(state: &NodeState, t: &TableMeta) -> Rows {
    state
        .clients()
        .into_iter()
        .map(|c| {
            RowBuilder::new(t)
                .set("address", CqlValue::Inet(c.address.ip()))
                .set("port", CqlValue::Int(c.address.port() as i32))
                .set("connection_stage", text("ready"))
                .set_opt("driver_name", c.driver_name.map(text))
                .set_opt("driver_version", c.driver_version.map(text))
                .set("hostname", text(c.address.ip().to_string()))
                .set_opt("keyspace_name", c.keyspace.map(text))
                .set("protocol_version", CqlValue::Int(c.protocol_version as i32))
                .set("request_count", CqlValue::Bigint(c.request_count as i64))
                .set("ssl_enabled", CqlValue::Boolean(c.ssl_enabled))
                .set(
                    "username",
                    text(c.username.unwrap_or_else(|| "anonymous".into())),
                )
                .build()
        })
        .collect()
}

/// `system_traces.sessions`: the node's recent traced requests.
pub fn trace_sessions(state: &NodeState, t: &TableMeta) -> Rows {
    state
        .traces
        .sessions()
        .iter()
        .map(|s| {
            let parameters = s
                .parameters
                .iter()
                .map(|(k, v)| (text(k.clone()), text(v.clone())))
                .collect();
            RowBuilder::new(t)
                .set("session_id", CqlValue::Uuid(s.session_id))
                .set("client", CqlValue::Inet(s.client))
                .set("command", text(s.command))
                .set("coordinator", CqlValue::Inet(s.coordinator))
                .set("coordinator_port", CqlValue::Int(s.coordinator_port))
                .set("duration", CqlValue::Int(s.duration_us))
                .set("parameters", CqlValue::Map(parameters))
                .set("request", text(s.request.clone()))
                .set("started_at", CqlValue::Timestamp(s.started_at_ms))
                .build()
        })
        .collect()
}

/// `system_traces.events`: the steps of the node's recent traced requests.
pub fn trace_events(state: &NodeState, t: &TableMeta) -> Rows {
    state
        .traces
        .sessions()
        .iter()
        .flat_map(|s| {
            s.events.iter().map(|e| {
                RowBuilder::new(t)
                    .set("session_id", CqlValue::Uuid(s.session_id))
                    .set("event_id", CqlValue::Timeuuid(e.event_id))
                    .set("activity", text(e.activity.clone()))
                    .set("source", CqlValue::Inet(s.coordinator))
                    .set("source_elapsed", CqlValue::Int(e.source_elapsed_us))
                    .set("source_port", CqlValue::Int(s.coordinator_port))
                    .set("thread", text(e.thread.clone()))
                    .build()
            })
        })
        .collect()
}
