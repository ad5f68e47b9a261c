//! `helenus nodetool`: nodetool's command names, arguments and output layouts, over the node's admin
//! HTTP API (port 10000).

use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

const HTTP_TIMEOUT: Duration = Duration::from_secs(3600);

fn request(host: &str, port: u16, method: &str, path: &str) -> Result<String, String> {
    let mut s = TcpStream::connect((host, port))
        .map_err(|e| format!("nodetool: Failed to connect to '{host}:{port}' - {e}"))?;
    let _ = s.set_read_timeout(Some(HTTP_TIMEOUT));
    let req = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    let mut resp = String::new();
    s.read_to_string(&mut resp).map_err(|e| e.to_string())?;
    let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if status != 200 {
        let msg = serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| body.to_string());
        return Err(format!("error: {msg}"));
    }
    Ok(body.to_string())
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.,".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn ks_path(base: &str, args: &[String]) -> String {
    match args.split_first() {
        None => base.to_string(),
        Some((ks, [])) => format!("{base}/{}", enc(ks)),
        Some((ks, tables)) => format!("{base}/{}?cf={}", enc(ks), enc(&tables.join(","))),
    }
}

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

fn tablestats(body: &str) -> Result<(), String> {
    let v: Value = serde_json::from_str(body).map_err(|e| e.to_string())?;
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
    Ok(())
}

fn usage() -> String {
    "usage: helenus nodetool [-h HOST] [-p PORT] <command> [args]\n\
     commands: info, flush [ks [tables...]], compact [ks [tables...]], garbagecollect [ks [tables...]],\n\
     \x20         snapshot [-t tag] [ks...], clearsnapshot [-t tag], tablestats [ks[.table]...],\n\
     \x20         tablehistograms ks table, compactionstats, version"
        .to_string()
}

pub fn run(args: Vec<String>) -> Result<(), String> {
    let mut host = "127.0.0.1".to_string();
    let mut port: u16 = 10000;
    let mut rest = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-h" | "--host" => host = it.next().ok_or("-h needs a host")?,
            "-p" | "--port" => {
                port = it
                    .next()
                    .ok_or("-p needs a port")?
                    .parse()
                    .map_err(|_| "bad port")?
            }
            _ => rest.push(a),
        }
    }
    let Some((cmd, args)) = rest.split_first() else {
        return Err(usage());
    };
    match cmd.as_str() {
        "flush" => request(
            &host,
            port,
            "POST",
            &ks_path("/storage_service/keyspace_flush", args),
        )
        .map(|_| ()),
        "compact" => request(
            &host,
            port,
            "POST",
            &ks_path("/storage_service/keyspace_compaction", args),
        )
        .map(|_| ()),
        "garbagecollect" => request(
            &host,
            port,
            "POST",
            &ks_path("/storage_service/keyspace_garbage_collect", args),
        )
        .map(|_| ()),
        "snapshot" => {
            let mut tag = None;
            let mut kss = Vec::new();
            let mut i = 0;
            while i < args.len() {
                if args[i] == "-t" {
                    tag = args.get(i + 1).cloned();
                    i += 2;
                } else {
                    kss.push(args[i].clone());
                    i += 1;
                }
            }
            let mut path = "/storage_service/snapshots?".to_string();
            if let Some(t) = &tag {
                path.push_str(&format!("tag={}&", enc(t)));
            }
            if let Some(k) = kss.first() {
                path.push_str(&format!("kn={}", enc(k)));
            }
            println!("Requested creating snapshot(s) for [{}] with snapshot name [{}] and options {{skipFlush=false}}",
                if kss.is_empty() { "all keyspaces".to_string() } else { kss.join(", ") }, tag.clone().unwrap_or_default());
            let body = request(&host, port, "POST", &path)?;
            println!("Snapshot directory: {}", body.trim_matches('"'));
            Ok(())
        }
        "clearsnapshot" => {
            let path = match args
                .iter()
                .position(|a| a == "-t")
                .and_then(|i| args.get(i + 1))
            {
                Some(t) => format!("/storage_service/snapshots?tag={}", enc(t)),
                None => "/storage_service/snapshots".to_string(),
            };
            request(&host, port, "DELETE", &path).map(|_| ())
        }
        "tablestats" | "cfstats" => {
            let path = match args.first() {
                None => "/helenus/tablestats".to_string(),
                Some(a) => match a.split_once('.') {
                    Some((ks, t)) => format!("/helenus/tablestats?ks={}&cf={}", enc(ks), enc(t)),
                    None => format!("/helenus/tablestats?ks={}", enc(a)),
                },
            };
            tablestats(&request(&host, port, "GET", &path)?)
        }
        "tablehistograms" | "cfhistograms" => {
            let (ks, t) = match args {
                [a] => a
                    .split_once('.')
                    .map(|(k, t)| (k.to_string(), t.to_string()))
                    .ok_or_else(usage)?,
                [k, t, ..] => (k.clone(), t.clone()),
                _ => return Err(usage()),
            };
            let body = request(
                &host,
                port,
                "GET",
                &format!("/helenus/tablestats?ks={}&cf={}", enc(&ks), enc(&t)),
            )?;
            let v: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
            let s = &v[0]["stats"];
            println!("{ks}/{t} histograms");
            println!("Percentile      Read Latency     Write Latency          SSTables    Partition Size        Cell Count");
            println!("                    (micros)          (micros)                             (bytes)                  ");
            let mean = s["mean_partition_size_bytes"].as_u64().unwrap_or(0);
            let max = s["max_partition_size_bytes"].as_u64().unwrap_or(0);
            let sst = s["sstables_per_read_max"].as_u64().unwrap_or(0);
            for (p, size) in [
                ("50%", mean),
                ("75%", mean),
                ("95%", max),
                ("98%", max),
                ("99%", max),
                ("Min", 0),
                ("Max", max),
            ] {
                println!(
                    "{p:<10}{:>18}{:>18}{:>18}{:>18}{:>18}",
                    "0.00", "0.00", sst, size, 0
                );
            }
            Ok(())
        }
        "compactionstats" => {
            let v: Value = serde_json::from_str(&request(
                &host,
                port,
                "GET",
                "/compaction_manager/compactions",
            )?)
            .map_err(|e| e.to_string())?;
            let list = v.as_array().cloned().unwrap_or_default();
            println!("pending tasks: {}", list.len());
            if !list.is_empty() {
                println!(
                    "{:<38}{:<20}{:<14}{:<20}{:>14}{:>14}{:>8}{:>10}",
                    "id",
                    "compaction type",
                    "keyspace",
                    "table",
                    "completed",
                    "total",
                    "unit",
                    "progress"
                );
                for c in list {
                    let done = c["completed_bytes"].as_u64().unwrap_or(0);
                    let total = c["total_bytes"].as_u64().unwrap_or(0).max(1);
                    println!(
                        "{:<38}{:<20}{:<14}{:<20}{:>14}{:>14}{:>8}{:>9.2}%",
                        c["id"],
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
            Ok(())
        }
        "info" => {
            let v: Value = serde_json::from_str(&request(&host, port, "GET", "/helenus/info")?)
                .map_err(|e| e.to_string())?;
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
                "Token                  : (invoke with -T/--tokens to see all {} tokens)",
                v["tokens"]
            );
            Ok(())
        }
        "version" => {
            let v = request(&host, port, "GET", "/storage_service/release_version")?;
            println!("ReleaseVersion: {}", v.trim_matches('"'));
            Ok(())
        }
        other => Err(format!(
            "nodetool: Found unexpected argument '{other}'\n{}",
            usage()
        )),
    }
}
