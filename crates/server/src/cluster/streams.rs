//! The page-level plumbing every stream shares: a stream request carries a tag naming the
//! requester's plan (so the serving node shows the session in `nodetool netstats`), the
//! serving node throttles each page it sends with the node's outbound bucket
//! (`stream_throughput_outbound`), and a pushing node does the same before each page it sends.

use super::bootstrap::answer_or_refuse;
use super::{wire, ClusterNode};
use crate::node::NodeState;
use bytes::Bytes;
use helenus_cluster::locator::{NodeId, TokenRange};
use helenus_cluster::messaging::{Envelope, Verb};
use helenus_cluster::streaming::{Direction, StreamPlan, StreamTag};
use helenus_storage as st;
use std::net::IpAddr;
use std::sync::Arc;

/// A `StreamRequest` payload: the tag, then the read.
pub(super) fn stream_request(tag: &StreamTag, table: st::TableId, query: &st::ReadQuery) -> Bytes {
    let read = wire::encode_read(table, query);
    let mut out = Vec::with_capacity(StreamTag::ENCODED_LEN + read.len());
    tag.encode(&mut out);
    out.extend_from_slice(&read);
    Bytes::from(out)
}

/// The tag of a page read from `peer` in `plan`: which of the files expected from it is read.
pub(super) fn tag_for(plan: &StreamPlan, peer: IpAddr) -> StreamTag {
    let (done, total) = plan.files(peer, Direction::Receiving);
    StreamTag {
        plan_id: plan.id(),
        operation: plan.operation(),
        files_total: u32::try_from(total).unwrap_or(u32::MAX),
        file_index: u32::try_from(done).unwrap_or(u32::MAX),
    }
}

/// A stream "file" as netstats names it: one table's token range.
pub(super) fn file_name(keyspace: &str, table: &str, range: TokenRange) -> String {
    format!("{keyspace}.{table} ({},{}]", range.start, range.end)
}

/// `node`'s address, as sessions are keyed (its host id's bytes would mean nothing to an
/// operator; an unknown node shows as 0.0.0.0).
pub(super) fn ip_of(cluster: &ClusterNode, node: NodeId) -> IpAddr {
    if node == cluster.local() {
        if let Some(n) = cluster.node() {
            return n.config.listen_address;
        }
    }
    cluster
        .service
        .peers()
        .into_iter()
        .find(|p| p.host_id == node)
        .and_then(|p| p.address)
        .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip())
}

/// The source's side: one page of a range, unfiltered, with no tombstone threshold (a stream
/// must carry every deletion, however many), sent once the outbound throttle allows it.
pub async fn serve_stream(cluster: Arc<ClusterNode>, node: Arc<NodeState>, request: Envelope) {
    let payload = request.payload.clone();
    let engine = node.engine.clone();
    let read = super::background::in_background(move || read_page(&engine, payload)).await;
    // An empty page moves no data: it counts nothing against the throttle or in netstats.
    let read = read.map(|(tag, partitions, page)| (tag, page, partitions > 0));
    send_page(&cluster, &node, &request, read, Verb::StreamResponse).await;
}

/// Answers `request` with a page read for a stream plan (tagged `tag`), once the outbound
/// throttle allows its bytes (when `counts`), counting them in this node's netstats under the
/// requester's plan; or refuses it with why the read failed.
pub(super) async fn send_page(
    cluster: &ClusterNode,
    node: &NodeState,
    request: &Envelope,
    read: Result<(StreamTag, Bytes, bool), String>,
    verb: Verb,
) {
    let page = match read {
        Ok((tag, page, counts)) => {
            let bytes = if counts { page.len() as u64 } else { 0 };
            node.streams.throttle().acquire(bytes).await;
            node.streams
                .served(&tag, ip_of(cluster, request.from), bytes);
            Ok(page)
        }
        Err(e) => Err(e),
    };
    answer_or_refuse(cluster, request, verb, page, "stream page refused");
}

/// The tag, the number of partitions and the encoded page a stream request asks for.
fn read_page(engine: &st::Engine, payload: Bytes) -> Result<(StreamTag, usize, Bytes), String> {
    let tag = StreamTag::decode(&payload).ok_or("stream request without its tag")?;
    let (table, query) =
        wire::decode_read(payload.slice(StreamTag::ENCODED_LEN..)).map_err(|e| e.to_string())?;
    let result = engine
        .read_unfiltered(table, &query, u64::MAX)
        .map_err(|e| e.to_string())?;
    let page = helenus_mutation::encode_mutations(&result.partitions);
    Ok((tag, result.partitions.len(), page))
}
