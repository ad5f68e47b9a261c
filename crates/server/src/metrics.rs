//! Node metrics: Prometheus text for `/metrics`, and the JSON documents `helenus nodetool` prints
//! (tablestats, compactionstats, info).

use crate::node::NodeState;
use helenus_storage as st;
use helenus_types::Clock;
use serde_json::{json, Value};
use std::fmt::Write;

pub fn table_stats_json(s: &st::TableStats) -> Value {
    json!({
        "sstable_count": s.sstable_count,
        "live_disk_space_bytes": s.live_disk_space_bytes,
        "memtable_data_size_bytes": s.memtable_data_size_bytes,
        "memtable_heap_bytes": s.memtable_heap_bytes,
        "memtable_partitions": s.memtable_partitions,
        "memtable_switch_count": s.memtable_switch_count,
        "estimated_partitions": s.estimated_partitions,
        "mean_partition_size_bytes": s.mean_partition_size_bytes,
        "max_partition_size_bytes": s.max_partition_size_bytes,
        "local_read_count": s.local_read_count,
        "local_write_count": s.local_write_count,
        "bloom_filter_false_positives": s.bloom_filter_false_positives,
        "bloom_filter_space_bytes": s.bloom_filter_space_bytes,
        "key_cache_hit_rate": s.key_cache_hit_rate,
        "key_cache_hits": s.key_cache_hits,
        "key_cache_requests": s.key_cache_requests,
        "chunk_cache_hit_rate": s.chunk_cache_hit_rate,
        "row_cache_hits": s.row_cache_hits,
        "row_cache_requests": s.row_cache_requests,
        "tombstone_count": s.tombstone_count,
        "compression_ratio": s.compression_ratio,
        "sstables_per_read_max": s.sstables_per_read_max,
        "index_summary_bytes": s.index_summary_bytes,
        "sstables_skipped_by_timestamp": s.sstables_skipped_by_timestamp,
        "rows_merged_by_reads": s.rows_merged_by_reads,
        "tombstones_scanned_by_reads": s.tombstones_scanned_by_reads,
        "tombstones_scanned_max": s.tombstones_scanned_max,
        "tombstone_failures": s.tombstone_failures,
        "percent_repaired": s.percent_repaired,
        "repaired_bytes": s.repaired_bytes,
        "unrepaired_bytes": s.unrepaired_bytes,
        "pending_repair_bytes": s.pending_repair_bytes,
        "histograms": histograms_json(&s.histograms),
    })
}

/// `nodetool tablehistograms`'s columns, each as [50%, 75%, 95%, 98%, 99%, min, max] (bucket
/// bounds, see helenus_storage::histogram); latencies in microseconds as Cassandra prints them.
fn histograms_json(h: &st::TableHistograms) -> Value {
    use st::Percentiles;
    let row = |p: &Percentiles| [p.p50, p.p75, p.p95, p.p98, p.p99, p.min, p.max];
    let micros = |p: &Percentiles| row(p).map(|ns| ns as f64 / 1000.0);
    json!({
        "read_latency_us": micros(&h.read_latency_ns),
        "write_latency_us": micros(&h.write_latency_ns),
        "sstables": row(&h.sstables_per_read),
        "partition_size_bytes": row(&h.partition_size_bytes),
        "cell_count": row(&h.cell_count),
    })
}

pub fn compactions_json(list: &[st::CompactionProgress]) -> Value {
    Value::Array(
        list.iter()
            .map(|c| {
                json!({"id": c.id, "keyspace": c.keyspace, "table": c.table, "kind": c.kind,
                       "completed_bytes": c.completed_bytes, "total_bytes": c.total_bytes})
            })
            .collect(),
    )
}

/// Cassandra's `PendingTasksByTableName`: `{keyspace: {table: tasks}}`, a table's tasks being
/// the compactions its strategy would start now plus those running on it (flushes included).
pub fn pending_tasks_json(
    estimated: &[(String, String, usize)],
    running: &[st::CompactionProgress],
) -> Value {
    let mut by_table: std::collections::BTreeMap<&str, std::collections::BTreeMap<&str, usize>> =
        Default::default();
    let all = estimated
        .iter()
        .map(|(ks, t, n)| (ks.as_str(), t.as_str(), *n))
        .chain(
            running
                .iter()
                .map(|c| (c.keyspace.as_str(), c.table.as_str(), 1)),
        );
    for (ks, t, n) in all {
        *by_table.entry(ks).or_default().entry(t).or_default() += n;
    }
    json!(by_table)
}

/// `nodetool info`'s facts; uptime is measured on `clock`'s wall time.
pub fn info_json(node: &NodeState, clock: &dyn Clock) -> Value {
    let now_s = u64::try_from(clock.wall_secs()).unwrap_or(0);
    let uptime = now_s.saturating_sub(node.started_at_s);
    let (mut load, mut repaired, mut all) = (0u64, 0u64, 0u64);
    for ks in node.schema().user_keyspaces() {
        for t in ks.tables.values() {
            let stats = node.engine.table_stats(*t.id.as_bytes());
            load += stats.live_disk_space_bytes;
            repaired += stats.repaired_bytes;
            all += stats.repaired_bytes + stats.unrepaired_bytes + stats.pending_repair_bytes;
        }
    }
    // Over every user table's bytes, as the tables' own percentages weigh them; with no data,
    // all of it is repaired (Cassandra's convention).
    let percent_repaired = if all == 0 {
        100.0
    } else {
        repaired as f64 * 100.0 / all as f64
    };
    json!({
        "id": node.identity.host_id.to_string(),
        "gossip_active": false,
        "native_transport_active": true,
        "load_bytes": load,
        "percent_repaired": percent_repaired,
        "generation": node.started_at_s,
        "uptime_seconds": uptime,
        "data_center": node.config.data_center,
        "rack": node.config.rack,
        "tokens": node.identity.tokens.len(),
        "release_version": crate::RELEASE_VERSION,
        "clients": node.clients().len(),
    })
}

/// Prometheus text exposition of per-table storage metrics and connection counts.
pub fn render(node: &NodeState) -> String {
    let mut out = String::new();
    render_engine(node, &mut out);
    render_streams(node, &mut out);
    render_tables(node, &mut out);
    out
}

/// Whole SSTables streamed as files (cluster/sstable_stream.rs), beside the partition pages.
fn render_streams(node: &NodeState, out: &mut String) {
    use std::sync::atomic::Ordering::Relaxed;
    let w = &node.streams.whole_sstables;
    for (name, value) in [
        ("whole_sstables_received", &w.received),
        ("whole_sstable_bytes_received", &w.received_bytes),
        ("whole_sstables_sent", &w.sent),
        ("whole_sstable_bytes_sent", &w.sent_bytes),
        ("partition_bytes_received", &w.partition_bytes_received),
    ] {
        let _ = writeln!(
            out,
            "# TYPE helenus_stream_{name}_total counter\nhelenus_stream_{name}_total {}",
            value.load(Relaxed)
        );
    }
}

/// Engine-wide: connected clients, caches (hits / requests / bytes) and write backpressure.
fn render_engine(node: &NodeState, out: &mut String) {
    let _ = writeln!(
        out,
        "# TYPE helenus_connected_clients gauge\nhelenus_connected_clients {}",
        node.clients().len()
    );
    let caches = node.engine.cache_stats();
    for (cache, c) in [
        ("key", caches.key),
        ("chunk", caches.chunk),
        ("row", caches.row),
    ] {
        let _ = writeln!(
            out,
            "# TYPE helenus_{cache}_cache_hits_total counter\nhelenus_{cache}_cache_hits_total {}\n\
             # TYPE helenus_{cache}_cache_requests_total counter\nhelenus_{cache}_cache_requests_total {}\n\
             # TYPE helenus_{cache}_cache_bytes gauge\nhelenus_{cache}_cache_bytes {}\n\
             # TYPE helenus_{cache}_cache_capacity_bytes gauge\nhelenus_{cache}_cache_capacity_bytes {}",
            c.hits, c.requests, c.size_bytes, c.capacity_bytes
        );
    }
    let stalls = node.engine.write_stall_stats();
    let _ = writeln!(
        out,
        "# TYPE helenus_write_stalls_total counter\nhelenus_write_stalls_total {}\n\
         # TYPE helenus_write_stall_ms_total counter\nhelenus_write_stall_ms_total {}\n\
         # TYPE helenus_write_stall_timeouts_total counter\nhelenus_write_stall_timeouts_total {}\n\
         # TYPE helenus_unflushed_memtable_bytes gauge\nhelenus_unflushed_memtable_bytes {}",
        stalls.stalled_writes,
        stalls.stall_ms,
        stalls.stall_timeouts,
        node.engine.unflushed_memtable_bytes()
    );
    // Cassandra's BytesCompactedThroughput meter: its 1, 5 and 15 minute rates.
    let rates = node
        .engine
        .compaction_rates_mib_per_s(std::time::Instant::now());
    let _ = writeln!(
        out,
        "# TYPE helenus_compaction_written_bytes_per_second gauge"
    );
    for (window, mib) in ["1m", "5m", "15m"].into_iter().zip(rates) {
        let _ = writeln!(
            out,
            "helenus_compaction_written_bytes_per_second{{window=\"{window}\"}} {:.0}",
            mib * 1048576.0
        );
    }
}

type Gauge = (&'static str, fn(&st::TableStats) -> f64);

/// Per-table gauges: the metric name and how to read it from the table's statistics.
const TABLE_GAUGES: [Gauge; 15] = [
    ("helenus_table_sstables", |s| s.sstable_count as f64),
    ("helenus_table_live_disk_bytes", |s| {
        s.live_disk_space_bytes as f64
    }),
    ("helenus_table_memtable_bytes", |s| {
        s.memtable_data_size_bytes as f64
    }),
    ("helenus_table_local_reads_total", |s| {
        s.local_read_count as f64
    }),
    ("helenus_table_local_writes_total", |s| {
        s.local_write_count as f64
    }),
    ("helenus_table_key_cache_hit_ratio", |s| {
        s.key_cache_hit_rate
    }),
    ("helenus_table_chunk_cache_hit_ratio", |s| {
        s.chunk_cache_hit_rate
    }),
    ("helenus_table_key_cache_hits_total", |s| {
        s.key_cache_hits as f64
    }),
    ("helenus_table_key_cache_requests_total", |s| {
        s.key_cache_requests as f64
    }),
    ("helenus_table_row_cache_hits_total", |s| {
        s.row_cache_hits as f64
    }),
    ("helenus_table_row_cache_requests_total", |s| {
        s.row_cache_requests as f64
    }),
    ("helenus_table_estimated_partitions", |s| {
        s.estimated_partitions as f64
    }),
    // Cassandra's TombstoneScannedHistogram (as a total and a max) and TombstoneFailures.
    ("helenus_table_tombstones_scanned_total", |s| {
        s.tombstones_scanned_by_reads as f64
    }),
    ("helenus_table_tombstones_scanned_max", |s| {
        s.tombstones_scanned_max as f64
    }),
    ("helenus_table_tombstone_failures_total", |s| {
        s.tombstone_failures as f64
    }),
];

fn render_tables(node: &NodeState, out: &mut String) {
    let schema = node.schema();
    let tables: Vec<_> = schema
        .user_keyspaces()
        .flat_map(|k| k.tables.values().cloned())
        .collect();
    let stats: Vec<_> = tables
        .iter()
        .map(|t| node.engine.table_stats(*t.id.as_bytes()))
        .collect();
    for (name, f) in TABLE_GAUGES {
        let _ = writeln!(out, "# TYPE {name} gauge");
        for (t, s) in tables.iter().zip(&stats) {
            let _ = writeln!(
                out,
                "{name}{{keyspace=\"{}\",table=\"{}\"}} {}",
                t.keyspace,
                t.name,
                f(s)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_tasks_add_the_running_compactions_to_the_estimates_per_table() {
        let running = |ks: &str, t: &str| st::CompactionProgress {
            id: 1,
            keyspace: ks.into(),
            table: t.into(),
            kind: "Compaction".into(),
            completed_bytes: 0,
            total_bytes: 1,
        };
        let v = pending_tasks_json(
            &[("ks".into(), "a".into(), 3), ("ks".into(), "b".into(), 1)],
            &[running("ks", "a"), running("other", "c")],
        );
        assert_eq!(v, json!({"ks": {"a": 4, "b": 1}, "other": {"c": 1}}));
        assert_eq!(pending_tasks_json(&[], &[]), json!({}));
    }
}
