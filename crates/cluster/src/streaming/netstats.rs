//! `nodetool netstats` text, in Cassandra 5.0's layout (its `NetStats.java`): the mode, each
//! stream plan with a block per peer session, then read repair counts and the message pools.
//! Two Helenus additions, each on lines Cassandra's parsers skip: the rate on a file's progress
//! line, and a `Failed:` line under a plan that failed.

use super::progress::{Direction, PlanSnapshot, StreamSummary};
use std::fmt::Write;

/// Read repair counts and message pools, as netstats prints them after the streams.
#[derive(Debug, Clone, Default)]
pub struct NetstatsCounters {
    pub read_repair_attempted: u64,
    pub read_repair_blocking: u64,
    pub read_repair_background: u64,
    /// (pool name, pending, completed, dropped) for Large, Small and Gossip messages.
    pub pools: Vec<(&'static str, u64, u64, u64)>,
}

/// The whole netstats output; `starting` leaves the counters out, as Cassandra does while
/// the node starts; `human` prints sizes as KiB/MiB/GiB (`-H`).
pub fn format_netstats(
    mode: &str,
    plans: &[PlanSnapshot],
    counters: Option<&NetstatsCounters>,
    human: bool,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Mode: {mode}");
    if plans.is_empty() {
        out.push_str("Not sending any streams.\n");
    }
    for plan in plans {
        let _ = writeln!(out, "{} {}", plan.operation.description(), plan.plan_id);
        for session in &plan.sessions {
            let _ = writeln!(out, "    /{}", session.peer);
            for (direction, summary) in [
                (Direction::Receiving, session.receiving),
                (Direction::Sending, session.sending),
            ] {
                let Some(summary) = summary else { continue };
                out.push_str(&summary_line(direction, &summary, human));
                if let Some((dir, name, so_far)) = &session.current {
                    if *dir == direction {
                        let total = current_file_estimate(&summary, *so_far);
                        let _ = writeln!(
                            out,
                            "            {name} {so_far}/{total} bytes ({}%) {} idx:0/{} at {}/s",
                            so_far * 100 / total.max(1),
                            match direction {
                                Direction::Receiving => "received from",
                                Direction::Sending => "sent to",
                            },
                            session.peer,
                            size(session.rate_bytes_per_s, true),
                        );
                    }
                }
            }
        }
        if let Some(reason) = &plan.failure {
            let _ = writeln!(out, "    Failed: {reason}");
        }
    }
    if let Some(c) = counters {
        let _ = write!(
            out,
            "Read Repair Statistics:\nAttempted: {}\nMismatch (Blocking): {}\nMismatch (Background): {}\n",
            c.read_repair_attempted, c.read_repair_blocking, c.read_repair_background
        );
        let _ = writeln!(
            out,
            "{:<25}{:>10}{:>10}{:>15}{:>10}",
            "Pool Name", "Active", "Pending", "Completed", "Dropped"
        );
        for (name, pending, completed, dropped) in &c.pools {
            let _ = writeln!(
                out,
                "{name:<25}{:>10}{pending:>10}{completed:>15}{dropped:>10}",
                "n/a"
            );
        }
    }
    out
}

fn summary_line(direction: Direction, s: &StreamSummary, human: bool) -> String {
    let bytes_total = s.bytes_total_estimate();
    // A session that has not started a file yet knows no size: 0%, where Java would print
    // NaN (Cassandra knows every file's size before it starts).
    let pct = |a: u64, b: u64| {
        if b == 0 {
            0.0
        } else {
            a as f64 / b as f64 * 100.0
        }
    };
    let bytes = |n: u64| {
        if human {
            format!("{} total", size(n as f64, false))
        } else {
            format!("{n} bytes total")
        }
    };
    let (verb, done, tail) = match direction {
        Direction::Receiving => ("Receiving", "Already received", ""),
        // Cassandra's non-human Sending line ends with a space.
        Direction::Sending => ("Sending", "Already sent", if human { "" } else { " " }),
    };
    format!(
        "        {verb} {} files, {}. {done} {} files ({:.2}%), {} ({:.2}%){tail}\n",
        s.files_total,
        bytes(bytes_total),
        s.files_done,
        pct(s.files_done, s.files_total),
        bytes(s.bytes_done),
        pct(s.bytes_done, bytes_total),
    )
}

/// The size of the file under way: the average of the files done, at least what moved.
fn current_file_estimate(s: &StreamSummary, so_far: u64) -> u64 {
    let average = s.bytes_done.checked_div(s.files_done).unwrap_or(0);
    average.max(so_far)
}

/// Cassandra's `FileUtils.stringifyFileSize`: two decimals at most ("#.##"), binary units.
fn size(value: f64, short: bool) -> String {
    const UNITS: [(f64, &str); 4] = [
        (1024.0 * 1024.0 * 1024.0 * 1024.0, "TiB"),
        (1024.0 * 1024.0 * 1024.0, "GiB"),
        (1024.0 * 1024.0, "MiB"),
        (1024.0, "KiB"),
    ];
    let (n, unit) = UNITS.iter().find(|(scale, _)| value >= *scale).map_or(
        (value, if short { "B" } else { "bytes" }),
        |(scale, unit)| (value / scale, unit),
    );
    let text = format!("{n:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {unit}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::super::progress::{SessionSnapshot, StreamOperation};
    use super::*;
    use uuid::Uuid;

    fn counters() -> NetstatsCounters {
        NetstatsCounters {
            pools: vec![
                ("Large messages", 0, 0, 0),
                ("Small messages", 0, 1234, 0),
                ("Gossip messages", 0, 77, 0),
            ],
            ..NetstatsCounters::default()
        }
    }

    #[test]
    fn an_idle_node_prints_cassandras_layout() {
        let text = format_netstats("NORMAL", &[], Some(&counters()), false);
        assert_eq!(
            text,
            "Mode: NORMAL\n\
             Not sending any streams.\n\
             Read Repair Statistics:\n\
             Attempted: 0\n\
             Mismatch (Blocking): 0\n\
             Mismatch (Background): 0\n\
             Pool Name                    Active   Pending      Completed   Dropped\n\
             Large messages                  n/a         0              0         0\n\
             Small messages                  n/a         0           1234         0\n\
             Gossip messages                 n/a         0             77         0\n"
        );
    }

    #[test]
    fn a_session_prints_files_and_bytes_received_and_sent() {
        let id = Uuid::from_u128(0x1234);
        let plan = PlanSnapshot {
            plan_id: id,
            operation: StreamOperation::Bootstrap,
            sessions: vec![SessionSnapshot {
                peer: "127.0.0.2".parse().unwrap(),
                receiving: Some(StreamSummary {
                    files_total: 4,
                    files_done: 1,
                    bytes_done: 2048,
                }),
                sending: Some(StreamSummary {
                    files_total: 2,
                    files_done: 2,
                    bytes_done: 100,
                }),
                current: Some((Direction::Receiving, "ks.t (-5,10]".into(), 1024)),
                rate_bytes_per_s: 1536.0,
            }],
            failure: None,
        };
        let text = format_netstats("JOINING", std::slice::from_ref(&plan), None, false);
        assert_eq!(
            text,
            format!(
                "Mode: JOINING\n\
                 Bootstrap {id}\n\
                 \x20   /127.0.0.2\n\
                 \x20       Receiving 4 files, 8192 bytes total. Already received 1 files (25.00%), 2048 bytes total (25.00%)\n\
                 \x20           ks.t (-5,10] 1024/2048 bytes (50%) received from idx:0/127.0.0.2 at 1.5 KiB/s\n\
                 \x20       Sending 2 files, 100 bytes total. Already sent 2 files (100.00%), 100 bytes total (100.00%) \n"
            )
        );
        let failed = PlanSnapshot {
            failure: Some("from 127.0.0.2: a page timed out".into()),
            ..plan
        };
        let human = format_netstats("JOINING", &[failed], None, true);
        assert!(human.contains("Receiving 4 files, 8 KiB total. Already received 1 files (25.00%), 2 KiB total (25.00%)\n"));
        assert!(human.ends_with("    Failed: from 127.0.0.2: a page timed out\n"));
    }
}
