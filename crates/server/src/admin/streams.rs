//! The admin API of streaming: `nodetool netstats` (the text, in Cassandra's layout), the
//! outbound stream throttle (`getstreamthroughput` / `setstreamthroughput`) and `nodetool
//! bootstrap resume`.

use super::{HttpRequest, RouteResult};
use crate::node::NodeState;
use helenus_cluster::streaming::{format_netstats, NetstatsCounters};
use serde_json::json;

/// `GET /storage_service/netstats[?human=true]`.
pub(super) fn netstats(node: &NodeState, req: &HttpRequest) -> RouteResult {
    let mode = node
        .cluster()
        .map_or_else(|| "NORMAL".to_string(), |c| c.operation_mode());
    // Helenus does not count read repairs or messages per pool yet: Cassandra's lines are
    // printed with zeros, so tools that parse them keep working.
    let counters = NetstatsCounters {
        pools: vec![
            ("Large messages", 0, 0, 0),
            ("Small messages", 0, 0, 0),
            ("Gossip messages", 0, 0, 0),
        ],
        ..NetstatsCounters::default()
    };
    let human = req.query.get("human").is_some_and(|h| h == "true");
    let text = format_netstats(&mode, &node.streams.snapshot(), Some(&counters), human);
    Ok(("text/plain", text))
}

/// `GET /storage_service/stream_throughput`: both rates in bytes per second (0: unthrottled).
pub(super) fn throughput(node: &NodeState) -> RouteResult {
    Ok((
        "application/json",
        json!({
            "bytes_per_s": node.streams.throttle().rate_bytes_per_s(),
            "entire_sstable_bytes_per_s": node.streams.entire_sstable_rate_bytes_per_s(),
        })
        .to_string(),
    ))
}

/// `POST /storage_service/stream_throughput?bytes_per_s=N[&entire_sstable=true]`.
pub(super) fn set_throughput(node: &NodeState, req: &HttpRequest) -> RouteResult {
    let rate: u64 = req
        .query
        .get("bytes_per_s")
        .and_then(|r| r.parse().ok())
        .ok_or((400, "needs bytes_per_s=N (0: unthrottled)".to_string()))?;
    if req.query.get("entire_sstable").is_some_and(|e| e == "true") {
        node.streams.set_entire_sstable_rate_bytes_per_s(rate);
    } else {
        node.streams.throttle().set_rate_bytes_per_s(rate);
    }
    tracing::info!(rate_bytes_per_s = rate, "stream throughput changed");
    throughput(node)
}

/// `nodetool bootstrap resume`: `POST /storage_service/bootstrap/resume` answers
/// `{"resuming": true}` when a failed bootstrap restarts, false when there is none to resume (a
/// node alone never bootstraps); `GET /storage_service/bootstrap_status` then follows it:
/// `{"state": "running" | "done" | "failed" | "none", "message": ...}`.
pub(super) fn bootstrap(node: &NodeState, segs: &[&str]) -> RouteResult {
    let body = match (segs, node.cluster()) {
        (["bootstrap", "resume"], Some(c)) => {
            json!({ "resuming": c.clone().resume_bootstrap().map_err(|e| (400, e))? })
        }
        (["bootstrap", "resume"], None) => json!({ "resuming": false }),
        (_, Some(c)) => c.bootstrap_status(),
        (_, None) => json!({"state": "none"}),
    };
    Ok(("application/json", body.to_string()))
}
