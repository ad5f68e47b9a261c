//! What a request does, found from its text or its batch type: enough to pick Cassandra's timeout
//! for it and where it runs (`limits`). Its own module, so the prepared statement (`exec`) can keep
//! its kind without `exec` and `limits` depending on each other.

use helenus_protocol as proto;

/// What a request does, for its timeout and the error that reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    Read,
    Range,
    Write { write_type: &'static str },
    Other,
}

/// Classifies a CQL statement by its text: enough to pick Cassandra's timeout for it.
pub fn kind_of_statement(query: &str) -> RequestKind {
    let q = query.trim_start();
    let first: String = q
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_ascii_uppercase();
    match first.as_str() {
        "SELECT" => {
            let upper = q.to_ascii_uppercase();
            // Without a WHERE, or with one that scans (token ranges, filtering), Cassandra
            // runs a range read, which gets the longer range timeout. Aggregates over a range
            // too: Cassandra 5.0.9's `count(*)` of 4.16M rows fails with ReadTimeout after
            // `range_request_timeout` on this machine (bench/results/analytics-20261128-4m-*),
            // and an operator raises that setting on both servers alike.
            if !upper.contains("WHERE")
                || upper.contains("ALLOW FILTERING")
                || upper.contains("TOKEN(")
            {
                RequestKind::Range
            } else {
                RequestKind::Read
            }
        }
        "INSERT" | "UPDATE" | "DELETE" => RequestKind::Write {
            write_type: "SIMPLE",
        },
        "BEGIN" => RequestKind::Write {
            write_type: "BATCH",
        },
        _ => RequestKind::Other,
    }
}

/// The kind of a BATCH request (Cassandra's write types).
pub fn kind_of_batch(batch_type: proto::BatchType) -> RequestKind {
    RequestKind::Write {
        write_type: match batch_type {
            proto::BatchType::Logged => "BATCH",
            proto::BatchType::Unlogged => "UNLOGGED_BATCH",
            proto::BatchType::Counter => "COUNTER",
        },
    }
}
