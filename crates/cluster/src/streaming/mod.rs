//! Streaming bookkeeping shared by every operation that moves ranges between nodes (bootstrap,
//! replace, decommission, removenode, repair): the node's outbound throttle
//! (`stream_throughput_outbound`), the sessions under way with their progress, and the
//! `nodetool netstats` text that shows them. The movement itself (which ranges, which peers,
//! paging) belongs to the node operations that drive it.

mod netstats;
mod progress;
mod throttle;

pub use netstats::{format_netstats, NetstatsCounters};
pub use progress::{
    Direction, PlanSnapshot, SessionSnapshot, StreamManager, StreamOperation, StreamPlan,
    StreamSummary, StreamTag, WholeSSTableCounters,
};
pub use throttle::StreamThrottle;

#[cfg(test)]
mod tests;
