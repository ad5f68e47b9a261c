//! nodetool's output layouts, from the admin API's JSON answers.

use serde_json::Value;

/// `nodetool info`'s load: bytes in binary units with two decimals.
fn human_bytes(b: u64) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < units.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} bytes")
    } else {
        format!("{v:.2} {}", units[i])
    }
}

/// `nodetool tablestats`'s layout.
pub fn tablestats(v: &Value) {
    let tables = v.as_array().cloned().unwrap_or_default();
    println!("Total number of tables: {}", tables.len());
    println!("----------------");
    let mut last_ks = String::new();
    for t in tables {
        let ks = t["keyspace"].as_str().unwrap_or_default().to_string();
        let s = &t["stats"];
        let n = |k: &str| s[k].as_u64().unwrap_or(0);
        let f = |k: &str| s[k].as_f64().unwrap_or(0.0);
        if ks != last_ks {
            println!("Keyspace : {ks}");
            last_ks = ks;
        }
        println!("\t\tTable: {}", t["table"].as_str().unwrap_or_default());
        println!("\t\tSSTable count: {}", n("sstable_count"));
        println!("\t\tSpace used (live): {}", n("live_disk_space_bytes"));
        println!("\t\tSpace used (total): {}", n("live_disk_space_bytes"));
        println!(
            "\t\tSSTable Compression Ratio: {:.5}",
            f("compression_ratio")
        );
        println!(
            "\t\tNumber of partitions (estimate): {}",
            n("estimated_partitions")
        );
        println!("\t\tMemtable cell count: {}", n("memtable_partitions"));
        println!("\t\tMemtable data size: {}", n("memtable_data_size_bytes"));
        println!(
            "\t\tMemtable off heap memory used: {}",
            n("memtable_heap_bytes")
        );
        println!("\t\tMemtable switch count: {}", n("memtable_switch_count"));
        println!("\t\tLocal read count: {}", n("local_read_count"));
        println!("\t\tLocal write count: {}", n("local_write_count"));
        println!("\t\tPercent repaired: {}", round2(f("percent_repaired")));
        for (label, key) in [
            ("Bytes repaired", "repaired_bytes"),
            ("Bytes unrepaired", "unrepaired_bytes"),
            ("Bytes pending repair", "pending_repair_bytes"),
        ] {
            println!("\t\t{label}: {:.3}KiB", n(key) as f64 / 1024.0);
        }
        println!(
            "\t\tBloom filter false positives: {}",
            n("bloom_filter_false_positives")
        );
        println!(
            "\t\tBloom filter space used: {}",
            n("bloom_filter_space_bytes")
        );
        println!("\t\tIndex summary space used: {}", n("index_summary_bytes"));
        println!("\t\tKey cache hit rate: {:.3}", f("key_cache_hit_rate"));
        println!("\t\tChunk cache hit rate: {:.3}", f("chunk_cache_hit_rate"));
        println!(
            "\t\tCompacted partition mean bytes: {}",
            n("mean_partition_size_bytes")
        );
        println!(
            "\t\tCompacted partition maximum bytes: {}",
            n("max_partition_size_bytes")
        );
        println!("\t\tTombstones: {}", n("tombstone_count"));
        println!(
            "\t\tMaximum SSTables per read: {}",
            n("sstables_per_read_max")
        );
        println!(
            "\t\tSSTables skipped by max timestamp: {}",
            n("sstables_skipped_by_timestamp")
        );
        println!();
    }
    println!("----------------");
}

/// `nodetool tablehistograms`'s layout (Cassandra's TableHistograms): one row per percentile,
/// latencies and SSTables with two decimals, sizes and counts whole.
pub fn tablehistograms(ks: &str, t: &str, v: &Value) {
    let h = &v[0]["stats"]["histograms"];
    let col = |name: &str, i: usize| h[name][i].as_f64().unwrap_or(0.0);
    println!("{ks}/{t} histograms");
    println!("Percentile      Read Latency     Write Latency          SSTables    Partition Size        Cell Count");
    println!("                    (micros)          (micros)                             (bytes)                  ");
    for (i, p) in ["50%", "75%", "95%", "98%", "99%", "Min", "Max"]
        .iter()
        .enumerate()
    {
        println!(
            "{p:<10}{:>18.2}{:>18.2}{:>18.2}{:>18.0}{:>18.0}",
            col("read_latency_us", i),
            col("write_latency_us", i),
            col("sstables", i),
            col("partition_size_bytes", i),
            col("cell_count", i),
        );
    }
    println!();
}

/// `nodetool compactionstats`'s layout: pending tasks (what the strategies would start now plus
/// what runs), by table, then the running ones.
pub fn compactionstats(pending: &Value, v: &Value) {
    let by_table: Vec<(String, String, u64)> = pending
        .as_object()
        .into_iter()
        .flatten()
        .flat_map(|(ks, tables)| {
            tables
                .as_object()
                .into_iter()
                .flatten()
                .map(move |(t, n)| (ks.clone(), t.clone(), n.as_u64().unwrap_or(0)))
        })
        .collect();
    println!(
        "pending tasks: {}",
        by_table.iter().map(|(_, _, n)| n).sum::<u64>()
    );
    for (ks, t, n) in &by_table {
        println!("- {ks}.{t}: {n}");
    }
    println!();
    let list = v.as_array().cloned().unwrap_or_default();
    if !list.is_empty() {
        println!(
            "{:<38}{:<20}{:<14}{:<20}{:>14}{:>14}{:>8}{:>10}",
            "id", "compaction type", "keyspace", "table", "completed", "total", "unit", "progress"
        );
        for c in list {
            let done = c["completed_bytes"].as_u64().unwrap_or(0);
            let total = c["total_bytes"].as_u64().unwrap_or(0).max(1);
            println!(
                "{:<38}{:<20}{:<14}{:<20}{:>14}{:>14}{:>8}{:>9.2}%",
                c["id"].to_string(),
                c["kind"].as_str().unwrap_or_default(),
                c["keyspace"].as_str().unwrap_or_default(),
                c["table"].as_str().unwrap_or_default(),
                done,
                total,
                "bytes",
                done as f64 * 100.0 / total as f64
            );
        }
    }
}

/// `nodetool info`'s layout.
pub fn info(v: &Value) {
    println!(
        "ID                     : {}",
        v["id"].as_str().unwrap_or_default()
    );
    println!("Gossip active          : {}", v["gossip_active"]);
    println!("Native Transport active: {}", v["native_transport_active"]);
    println!(
        "Load                   : {}",
        human_bytes(v["load_bytes"].as_u64().unwrap_or(0))
    );
    println!("Generation No          : {}", v["generation"]);
    println!("Uptime (seconds)       : {}", v["uptime_seconds"]);
    println!(
        "Data Center            : {}",
        v["data_center"].as_str().unwrap_or_default()
    );
    println!(
        "Rack                   : {}",
        v["rack"].as_str().unwrap_or_default()
    );
    println!("Exceptions             : 0");
    println!(
        "Percent Repaired       : {}%",
        round2(v["percent_repaired"].as_f64().unwrap_or(100.0))
    );
    println!(
        "Token                  : (invoke with -T/--tokens to see all {} tokens)",
        v["tokens"]
    );
}

/// A percentage as Cassandra prints one: rounded to two decimals, at least one shown.
fn round2(p: f64) -> String {
    let r = (p * 100.0).round() / 100.0;
    if r.fract() == 0.0 {
        format!("{r:.1}")
    } else {
        format!("{r}")
    }
}
