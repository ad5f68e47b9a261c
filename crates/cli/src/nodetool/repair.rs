//! `repair` and `repair_admin`: start a repair and wait for it; list, cancel and summarise
//! incremental repair sessions.

use super::http::enc;
use super::{Node, NodetoolError};

/// `repair [-full] [-pr] [-st TOKEN -et TOKEN] [ks [tables...]]`: starts the repair on the node,
/// waits for it and prints what it compared and moved. Incremental unless `-full`, as
/// Cassandra's since 4.0.
pub fn run(node: &Node, args: &[String]) -> Result<(), NodetoolError> {
    let mut query = Vec::new();
    let mut names = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-full" | "--full" => query.push("full=true".to_string()),
            "-seq" | "--sequential" | "-inc" => {}
            "-pr" | "--partitioner-range" => query.push("pr=true".to_string()),
            "-st" | "--start-token" | "-et" | "--end-token" => {
                let v = it
                    .next()
                    .ok_or_else(|| NodetoolError::Usage(format!("{a} needs a token")))?;
                let key = if matches!(a.as_str(), "-st" | "--start-token") {
                    "st"
                } else {
                    "et"
                };
                query.push(format!("{key}={}", enc(v)));
            }
            other => names.push(other.to_string()),
        }
    }
    if let Some((ks, tables)) = names.split_first() {
        query.push(format!("ks={}", enc(ks)));
        if !tables.is_empty() {
            query.push(format!("tables={}", enc(&tables.join(","))));
        }
    }
    let started = node.request_json(
        "POST",
        &format!("/storage_service/repair?{}", query.join("&")),
    )?;
    let id = started["id"].as_u64().unwrap_or(0);
    println!(
        "Starting repair command #{id}, repairing keyspace {} with repair options (incremental: {}, primary range: {})",
        names.first().map_or("(all)", String::as_str),
        !query.iter().any(|q| q == "full=true"),
        query.iter().any(|q| q == "pr=true"),
    );
    loop {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let status = node.request_json("GET", &format!("/storage_service/repair?id={id}"))?;
        match status["state"].as_str() {
            Some("running") => continue,
            Some("done") => {
                let s = &status["summary"];
                println!(
                    "Repair completed successfully: {} ranges compared, {} out of sync, {} sub-ranges repaired, {} partitions ({} bytes) streamed",
                    s["ranges_compared"], s["ranges_out_of_sync"], s["sub_ranges_repaired"], s["partitions_streamed"], s["bytes_streamed"]
                );
                if let Some(compared) = s["partitions_compared"].as_u64() {
                    let written: Vec<String> = s["partitions_written"]
                        .as_object()
                        .map(|w| w.iter().map(|(peer, n)| format!("{peer} {n}")).collect())
                        .unwrap_or_default();
                    println!(
                        "Row-level sync: {compared} partitions compared by digest, {} out of sync; written to: {}",
                        s["partitions_out_of_sync"],
                        if written.is_empty() { "none".to_string() } else { written.join(", ") }
                    );
                }
                if let Some(sessions) = s["sessions"].as_array().filter(|a| !a.is_empty()) {
                    let ids: Vec<&str> = sessions.iter().filter_map(|v| v.as_str()).collect();
                    println!("Incremental repair sessions finalized: {}", ids.join(", "));
                }
                println!(
                    "Repair command #{id} finished in {:.3} seconds",
                    s["seconds"].as_f64().unwrap_or(0.0)
                );
                return Ok(());
            }
            _ => {
                return Err(NodetoolError::Refused(format!(
                    "Repair command #{id} failed: {}",
                    status["error"].as_str().unwrap_or("unknown error")
                )))
            }
        }
    }
}

/// `repair_admin [list [--all] | cancel --session ID | summarize-pending]`, as Cassandra's:
/// `list` shows the sessions still running unless `--all`.
pub fn admin(node: &Node, args: &[String]) -> Result<(), NodetoolError> {
    let usage = || {
        NodetoolError::Usage(
            "usage: nodetool repair_admin [list [--all] | cancel --session ID | summarize-pending]"
                .into(),
        )
    };
    match args.first().map(String::as_str) {
        None | Some("list") | Some("--all") => {
            let all = args.iter().any(|a| a == "--all" || a == "-a");
            let sessions = node.request_json("GET", "/storage_service/repair_admin")?;
            print!("{}", format_sessions(&sessions, all, now_ms()));
            Ok(())
        }
        Some("cancel") => {
            let id = args
                .iter()
                .position(|a| a == "--session" || a == "-s")
                .and_then(|i| args.get(i + 1))
                .ok_or_else(usage)?;
            node.request(
                "POST",
                &format!("/storage_service/repair_admin/cancel?session={}", enc(id)),
            )
            .map(|_| ())
        }
        Some("summarize-pending") => {
            let pending = node.request_json("GET", "/storage_service/repair_admin/pending")?;
            print!("{}", format_pending(&pending));
            Ok(())
        }
        Some(_) => Err(usage()),
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Cassandra's `repair_admin list` columns: id, state, last activity (seconds ago),
/// coordinator, participants.
fn format_sessions(sessions: &serde_json::Value, all: bool, now_ms: i64) -> String {
    let rows: Vec<[String; 5]> = sessions
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| all || !matches!(s["state"].as_str(), Some("FINALIZED" | "FAILED")))
        .map(|s| {
            let text = |k: &str| s[k].as_str().unwrap_or_default().to_string();
            let ago = (now_ms - s["last_activity_ms"].as_i64().unwrap_or(now_ms)).max(0) / 1000;
            let participants: Vec<&str> = s["participants"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p.as_str())
                .collect();
            [
                text("id"),
                text("state"),
                format!("{ago} (s)"),
                format!("/{}:7000", text("coordinator")),
                participants.join(","),
            ]
        })
        .collect();
    if rows.is_empty() {
        return "no sessions\n".into();
    }
    let header = [
        "id",
        "state",
        "last activity",
        "coordinator",
        "participants",
    ];
    table(&header, &rows)
}

fn format_pending(pending: &serde_json::Value) -> String {
    let rows: Vec<[String; 5]> = pending
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let text = |k: &str| match &p[k] {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            [
                format!("{}.{}", text("keyspace"), text("table")),
                text("session"),
                text("sstables"),
                text("bytes"),
                String::new(),
            ]
        })
        .collect();
    if rows.is_empty() {
        return "no pending repair data\n".into();
    }
    let header = ["table", "session", "sstables", "bytes", ""];
    table(&header, &rows)
}

/// Rows under a header, columns separated by ` | ` and padded to their widest cell.
fn table(header: &[&str; 5], rows: &[[String; 5]]) -> String {
    let used = header
        .iter()
        .rposition(|h| !h.is_empty())
        .map_or(0, |i| i + 1);
    let widths: Vec<usize> = (0..used)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(String::len)
                .chain(header.get(c).map(|h| h.len()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<&str>| -> String {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        padded.join(" | ").trim_end().to_string() + "\n"
    };
    let mut out = line(header.iter().take(used).copied().collect());
    for r in rows {
        out += &line(r.iter().take(used).map(String::as_str).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    #[test]
    fn list_shows_running_sessions_unless_all_is_asked() {
        let sessions = json!([
            {"id": "a-1", "state": "FINALIZED", "last_activity_ms": 1000, "coordinator": "127.0.0.1", "participants": ["127.0.0.1", "127.0.0.2"]},
            {"id": "b-2", "state": "PREPARED", "last_activity_ms": 4000, "coordinator": "127.0.0.2", "participants": ["127.0.0.2"]},
        ]);
        let running = format_sessions(&sessions, false, 9000);
        assert!(
            running.starts_with("id  | state    | last activity | coordinator"),
            "{running}"
        );
        assert!(running.contains("b-2 | PREPARED | 5 (s)"), "{running}");
        assert!(!running.contains("a-1"), "{running}");
        let all = format_sessions(&sessions, true, 9000);
        assert!(
            all.contains("a-1 | FINALIZED | 8 (s)         | /127.0.0.1:7000 | 127.0.0.1,127.0.0.2"),
            "{all}"
        );
        assert_eq!(format_sessions(&json!([]), true, 0), "no sessions\n");
    }

    #[test]
    fn pending_lists_each_table_and_session() {
        let pending = json!([{"keyspace": "ks", "table": "t", "session": "s-1", "sstables": 2, "bytes": 1234}]);
        let text = format_pending(&pending);
        assert_eq!(
            text.lines().nth(1),
            Some("ks.t  | s-1     | 2        | 1234"),
            "{text}"
        );
    }
}
