//! The node's compaction throttle at run time: `nodetool getcompactionthroughput` and
//! `setcompactionthroughput`, as Cassandra's `compaction_throughput` in MiB/s (0: unthrottled).

use super::{HttpRequest, RouteResult};
use crate::node::NodeState;
use serde_json::json;

/// `GET /storage_service/compaction_throughput`: `{"mib_per_s": N, "written_mib_per_s":
/// {"1minute": R, "5minute": R, "15minute": R}}`, the cap and what compactions wrote lately.
pub(super) fn get(node: &NodeState) -> RouteResult {
    let [one, five, fifteen] = node
        .engine
        .compaction_rates_mib_per_s(std::time::Instant::now());
    Ok((
        "application/json",
        json!({
            "mib_per_s": node.engine.compaction_throughput_mib_per_s(),
            "written_mib_per_s": {"1minute": one, "5minute": five, "15minute": fifteen},
        })
        .to_string(),
    ))
}

/// `POST /storage_service/compaction_throughput?mib_per_s=N`: compactions running now follow
/// the new cap too.
pub(super) fn set(node: &NodeState, req: &HttpRequest) -> RouteResult {
    let rate: u64 = req
        .query
        .get("mib_per_s")
        .and_then(|r| r.parse().ok())
        .ok_or((400, "needs mib_per_s=N (0: unthrottled)".to_string()))?;
    node.engine.set_compaction_throughput_mib_per_s(rate);
    tracing::info!(rate_mib_per_s = rate, "compaction throughput changed");
    get(node)
}
