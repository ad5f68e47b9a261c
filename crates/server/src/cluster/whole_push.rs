//! Whole-SSTable streaming for the operations that push ranges (decommission, removenode): the
//! node driving the operation asks each node gaining a range to pull, from the node holding
//! it, the SSTables that lie wholly inside the range (sstable_stream.rs's `pull_whole`, the
//! receiver-driven exchange bootstrap uses). The gaining node pulls under a stream plan of its
//! own (the driver's operation, so `nodetool netstats` shows it on both sides) and answers with
//! the source's generations it received whole; the driver then pushes the rest of the range as
//! partition pages read with those generations left out, so each byte crosses once.
//!
//! A pull that fails (the gaining node refuses, times out, or a file does not check) is logged
//! and the whole range then goes as partition pages: some SSTables may have been imported
//! already, and receiving their partitions again is harmless (a merge of equal cells).
//!
//! `WholeSSTablePullRequest` payload (big-endian):
//! ```text
//! [operation u8][table 16 bytes][range start i64][range end i64][source host id 16 bytes]
//! [keyspace: u16 length + UTF-8][file name: u16 length + UTF-8]
//! ```
//! `WholeSSTablePullResponse` payload: `[0u8][files u64][bytes u64][count u32][generation u64]*`
//! when the pull went through, `[1u8][reason: u16 length + UTF-8]` when it failed.

use super::bootstrap::StreamFile;
use super::sstable_stream::{bad, get_str, get_u32, get_u64, pull_whole, put_str, take, WholePull};
use super::streams::ip_of;
use super::ClusterNode;
use crate::node::NodeState;
use bytes::{Buf, BufMut, Bytes};
use helenus_cluster::locator::{NodeId, TokenRange};
use helenus_cluster::messaging::{Envelope, Verb};
use helenus_cluster::streaming::{StreamOperation, StreamPlan};
use helenus_storage as st;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the driving node waits for a gaining node's pull before pushing the range as
/// partition pages instead. Every chunk of the pull has its own timeout on the gaining node;
/// this bounds a pull of many files at a low `entire_sstable_stream_throughput_outbound`.
const PULL_TIMEOUT: Duration = Duration::from_secs(6 * 3600);
/// Generations a response may list (far more SSTables than one table keeps).
const MAX_GENERATIONS: u32 = 1 << 20;

/// What the driving node asks a gaining node to pull.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PullRequest {
    operation: StreamOperation,
    table: st::TableId,
    range: TokenRange,
    source: NodeId,
    keyspace: String,
    name: String,
}

fn encode_request(r: &PullRequest) -> Bytes {
    let mut out = Vec::new();
    out.put_u8(r.operation.code());
    out.extend_from_slice(&r.table);
    out.put_i64(r.range.start);
    out.put_i64(r.range.end);
    out.extend_from_slice(r.source.0.as_bytes());
    put_str(&mut out, &r.keyspace);
    put_str(&mut out, &r.name);
    Bytes::from(out)
}

fn decode_request(mut buf: &[u8]) -> Result<PullRequest, String> {
    let operation = StreamOperation::from_code(take(&mut buf, 1, "operation")?.get_u8());
    let table: st::TableId = take(&mut buf, 16, "table")?
        .try_into()
        .map_err(|_| bad("table"))?;
    let start = get_u64(&mut buf, "range start")? as i64;
    let end = get_u64(&mut buf, "range end")? as i64;
    let source: [u8; 16] = take(&mut buf, 16, "source")?
        .try_into()
        .map_err(|_| bad("source"))?;
    let keyspace = get_str(&mut buf, "keyspace")?;
    let name = get_str(&mut buf, "file name")?;
    if !buf.is_empty() {
        return Err(bad("trailing bytes after a pull request"));
    }
    Ok(PullRequest {
        operation,
        table,
        range: TokenRange::new(start, end),
        source: NodeId(uuid::Uuid::from_bytes(source)),
        keyspace,
        name,
    })
}

fn encode_outcome(outcome: &Result<WholePull, String>) -> Bytes {
    let mut out = Vec::new();
    match outcome {
        Ok(pull) => {
            out.put_u8(0);
            out.put_u64(pull.files);
            out.put_u64(pull.bytes);
            out.put_u32(u32::try_from(pull.excluded.len()).unwrap_or(u32::MAX));
            for gen in &pull.excluded {
                out.put_u64(*gen);
            }
        }
        Err(reason) => {
            out.put_u8(1);
            put_str(&mut out, reason);
        }
    }
    Bytes::from(out)
}

/// The gaining node's answer: `Err` when the message is malformed, `Ok(Err(reason))` when it
/// says the pull failed.
fn decode_outcome(mut buf: &[u8]) -> Result<Result<WholePull, String>, String> {
    let outcome = match take(&mut buf, 1, "status")?.get_u8() {
        0 => {
            let files = get_u64(&mut buf, "files")?;
            let bytes = get_u64(&mut buf, "bytes")?;
            let n = get_u32(&mut buf, "generations")?;
            if n > MAX_GENERATIONS {
                return Err(bad("too many generations"));
            }
            let excluded = (0..n)
                .map(|_| get_u64(&mut buf, "generation"))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(WholePull {
                excluded,
                files,
                bytes,
            })
        }
        1 => Err(get_str(&mut buf, "reason")?),
        _ => return Err(bad("status")),
    };
    if !buf.is_empty() {
        return Err(bad("trailing bytes after a pull response"));
    }
    Ok(outcome)
}

/// Has `target` receive, from `source`, the SSTables of `file` wholly inside its range: this
/// node pulls them itself when it is the target. Never fails: a failed pull is logged and
/// nothing is left out, so the caller's pages carry the whole range.
pub(super) async fn push_whole(
    cluster: &ClusterNode,
    node: &NodeState,
    plan: &StreamPlan,
    file: &StreamFile,
    source: NodeId,
    target: NodeId,
) -> WholePull {
    if source == target || !may_hold_whole(cluster, node, file, source) {
        return WholePull::default();
    }
    let outcome = if target == cluster.local() {
        pull_whole(cluster, node, plan, file, source).await
    } else {
        let request = PullRequest {
            operation: plan.operation(),
            table: file.table,
            range: file.range,
            source,
            keyspace: file.keyspace.clone(),
            name: file.name.clone(),
        };
        ask_target(cluster, target, encode_request(&request)).await
    };
    outcome.unwrap_or_else(|e| {
        tracing::warn!(
            file = %file.name,
            target = %ip_of(cluster, target),
            source = %ip_of(cluster, source),
            error = %e,
            "whole-SSTable pull failed; the range goes as partition pages"
        );
        WholePull::default()
    })
}

/// False when `source` is this node and none of its SSTables lies wholly inside the range: a
/// decommission then skips the pull's round trips (a few per table and range, which cost more
/// than the partitions of a small range).
fn may_hold_whole(
    cluster: &ClusterNode,
    node: &NodeState,
    file: &StreamFile,
    source: NodeId,
) -> bool {
    source != cluster.local()
        || node
            .engine
            .has_whole_sstables(file.table, file.range.start, file.range.end)
            .unwrap_or(true)
}

/// Sends the pull request to `target` and waits for its answer, giving up when the target is
/// convicted down or `PULL_TIMEOUT` passes.
async fn ask_target(
    cluster: &ClusterNode,
    target: NodeId,
    payload: Bytes,
) -> Result<WholePull, String> {
    let (id, mut answer) = cluster
        .messenger
        .request(target, Verb::WholeSSTablePullRequest, payload)
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + PULL_TIMEOUT;
    loop {
        match tokio::time::timeout(super::GOSSIP_INTERVAL, &mut answer).await {
            Ok(Ok(r)) if r.verb == Verb::WholeSSTablePullResponse => {
                return decode_outcome(&r.payload).and_then(|outcome| outcome);
            }
            Ok(Ok(r)) => return Err(format!("the target answered {:?}", r.verb)),
            Ok(Err(_)) => return Err("the target's connection closed".into()),
            Err(_) => {
                let down = !cluster.service.is_alive(target);
                if down || Instant::now() >= deadline {
                    cluster.messenger.forget(id);
                    return Err(match down {
                        true => "the target went down".into(),
                        false => "the pull timed out".into(),
                    });
                }
            }
        }
    }
}

/// The gaining node's side: pulls what the request names under a plan of its own and answers
/// with what it received (or why it could not).
pub async fn serve(cluster: Arc<ClusterNode>, node: Arc<NodeState>, request: Envelope) {
    let outcome = match decode_request(&request.payload) {
        Ok(r) => pull_for(&cluster, &node, r).await,
        Err(e) => Err(e),
    };
    if let Err(e) = &outcome {
        tracing::warn!(from = %request.from, error = %e, "whole-SSTable pull for a peer failed");
    }
    let payload = encode_outcome(&outcome);
    let _ = cluster
        .messenger
        .respond(&request, Verb::WholeSSTablePullResponse, payload);
}

async fn pull_for(
    cluster: &ClusterNode,
    node: &NodeState,
    r: PullRequest,
) -> Result<WholePull, String> {
    if r.source == cluster.local() {
        return Err("asked to pull from itself".into());
    }
    let plan = node.streams.start_plan(r.operation);
    let file = StreamFile {
        keyspace: r.keyspace,
        name: r.name,
        table: r.table,
        range: r.range,
    };
    let pulled = pull_whole(cluster, node, &plan, &file, r.source).await;
    match &pulled {
        Ok(_) => plan.finish(),
        Err(e) => plan.fail(e),
    }
    pulled
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn request() -> PullRequest {
        PullRequest {
            operation: StreamOperation::Unbootstrap,
            table: [7; 16],
            range: TokenRange::new(i64::MAX - 3, i64::MIN + 5),
            source: NodeId(uuid::Uuid::from_u128(0x1234_5678_9abc_def0)),
            keyspace: "ks".into(),
            name: "ks.t (9223372036854775804,-9223372036854775803]".into(),
        }
    }

    #[test]
    fn a_pull_request_survives_the_wire_and_a_truncated_one_is_refused() {
        let bytes = encode_request(&request());
        assert_eq!(decode_request(&bytes).unwrap(), request());
        for cut in 0..bytes.len() {
            assert!(decode_request(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.to_vec();
        longer.push(0);
        assert!(decode_request(&longer).is_err());
    }

    #[test]
    fn a_pull_outcome_survives_the_wire_and_a_truncated_one_is_refused() {
        let pulled = Ok(WholePull {
            excluded: vec![3, 9],
            files: 2,
            bytes: 4096,
        });
        let bytes = encode_outcome(&pulled);
        let got = decode_outcome(&bytes).unwrap().unwrap();
        assert_eq!((got.excluded, got.files, got.bytes), (vec![3, 9], 2, 4096));
        for cut in 0..bytes.len() {
            assert!(decode_outcome(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let failed = encode_outcome(&Err("Data.db of hl-1-3 ended early".into()));
        assert_eq!(
            decode_outcome(&failed).unwrap().unwrap_err(),
            "Data.db of hl-1-3 ended early"
        );
        for cut in 0..failed.len() {
            assert!(decode_outcome(&failed[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn an_unknown_status_or_a_huge_count_is_an_error() {
        assert!(decode_outcome(&[2]).is_err());
        let mut huge = vec![0];
        huge.extend_from_slice(&[0; 16]);
        huge.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode_outcome(&huge).is_err());
    }
}
