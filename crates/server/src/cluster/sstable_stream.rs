//! Whole-SSTable streaming (issue 13; Cassandra 4's zero-copy streaming): when a node pulls a
//! table's range (bootstrap, replace), the source first sends, as their files, the SSTables
//! whose partitions all lie in the range; the rest of the range then comes as partition pages
//! read with those SSTables left out, so each byte crosses once.
//!
//! The exchange, all pulled by the receiver:
//! 1. `WholeSSTableListRequest`: the source hard-links the SSTables wholly inside the range into
//!    a staging directory (so a compaction cannot delete them mid-send) and lists each one's
//!    components with their sizes and CRC32Cs (storage engine/whole.rs).
//! 2. `WholeSSTableChunkRequest`: pieces of a component, each let through by the source's
//!    `entire_sstable_stream_throughput_outbound` bucket and counted in its netstats. The
//!    receiver appends them to a staging directory of its own.
//! 3. The receiver checks sizes and checksums, opens the SSTable, and renames it into its table
//!    under a new generation. Any mismatch fails the range from this source (the staging is
//!    removed); the caller then tries the next source or fails the plan.
//! 4. `WholeSSTableRelease`: the source drops its staging (also when the pull failed).
//!
//! Only SSTables that lie wholly inside a range go whole: flush and compaction output is not
//! split at the ring's token boundaries, so with many vnodes an SSTable usually spans several
//! ranges, and those go as partitions. Decommission and removenode have the gaining node pull
//! this way too (whole_push.rs), then push the rest as partitions.

use super::bootstrap::ask_source;
use super::bootstrap::StreamFile;
use super::streams::{ip_of, send_page, stream_request, tag_for};
use super::{wire, ClusterNode};
use crate::node::NodeState;
use bytes::{Buf, BufMut, Bytes};
use helenus_cluster::locator::NodeId;
use helenus_cluster::messaging::{Envelope, Verb};
use helenus_cluster::streaming::{Direction, StreamPlan, StreamTag};
use helenus_storage as st;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Bytes of a component per chunk request: large enough that the request round trip costs
/// little, small enough to throttle smoothly.
const CHUNK_BYTES: u64 = 4 << 20;

/// What a pull of whole SSTables moved, and which of the source's generations the partition
/// pages must leave out.
#[derive(Debug, Default)]
pub(super) struct WholePull {
    pub excluded: Vec<u64>,
    pub files: u64,
    pub bytes: u64,
}

/// A malformed message.
pub(super) fn bad(what: &str) -> String {
    format!("malformed whole-SSTable message: {what}")
}

pub(super) fn take<'a>(buf: &mut &'a [u8], n: usize, what: &str) -> Result<&'a [u8], String> {
    if buf.len() < n {
        return Err(bad(what));
    }
    let (head, rest) = buf.split_at(n);
    *buf = rest;
    Ok(head)
}

pub(super) fn get_u64(buf: &mut &[u8], what: &str) -> Result<u64, String> {
    take(buf, 8, what).map(|mut b| b.get_u64())
}

pub(super) fn get_u32(buf: &mut &[u8], what: &str) -> Result<u32, String> {
    take(buf, 4, what).map(|mut b| b.get_u32())
}

pub(super) fn get_str(buf: &mut &[u8], what: &str) -> Result<String, String> {
    let n = take(buf, 2, what)?.get_u16() as usize;
    let s = take(buf, n, what)?;
    String::from_utf8(s.to_vec()).map_err(|_| bad(what))
}

pub(super) fn put_str(out: &mut Vec<u8>, s: &str) {
    out.put_u16(u16::try_from(s.len()).unwrap_or(u16::MAX));
    out.extend_from_slice(
        s.as_bytes()
            .get(..usize::from(u16::MAX))
            .unwrap_or(s.as_bytes()),
    );
}

/// The head every request but the excluding page carries: tag, session, table.
fn put_head(out: &mut Vec<u8>, tag: &StreamTag, session: &str, table: st::TableId) {
    tag.encode(out);
    put_str(out, session);
    out.extend_from_slice(&table);
}

fn get_head(buf: &mut &[u8]) -> Result<(StreamTag, String, st::TableId), String> {
    let tag = StreamTag::decode(take(buf, StreamTag::ENCODED_LEN, "tag")?).ok_or(bad("tag"))?;
    let session = get_str(buf, "session")?;
    let table: st::TableId = take(buf, 16, "table")?
        .try_into()
        .map_err(|_| bad("table"))?;
    Ok((tag, session, table))
}

fn encode_list(staged: &[st::WholeSSTable]) -> Bytes {
    let mut out = Vec::new();
    out.put_u32(u32::try_from(staged.len()).unwrap_or(u32::MAX));
    for w in staged {
        out.put_u64(w.gen);
        out.put_u32(u32::try_from(w.components.len()).unwrap_or(u32::MAX));
        for c in &w.components {
            put_str(&mut out, &c.name);
            out.put_u64(c.size);
            out.put_u32(c.crc32c);
        }
    }
    Bytes::from(out)
}

fn decode_list(mut buf: &[u8]) -> Result<Vec<st::WholeSSTable>, String> {
    let n = get_u32(&mut buf, "count")?;
    let mut staged = Vec::new();
    for _ in 0..n {
        let gen = get_u64(&mut buf, "generation")?;
        let parts = get_u32(&mut buf, "components")?;
        let mut components = Vec::new();
        for _ in 0..parts.min(16) {
            components.push(st::ComponentInfo {
                name: get_str(&mut buf, "component")?,
                size: get_u64(&mut buf, "size")?,
                crc32c: get_u32(&mut buf, "crc")?,
            });
        }
        staged.push(st::WholeSSTable { gen, components });
    }
    Ok(staged)
}

/// The receiver's side: pulls from `source` every SSTable of `file` that lies wholly inside its
/// range, and imports them. The source's staging is released whatever happens.
pub(super) async fn pull_whole(
    cluster: &ClusterNode,
    node: &NodeState,
    plan: &StreamPlan,
    file: &StreamFile,
    source: NodeId,
) -> Result<WholePull, String> {
    let session = uuid::Uuid::new_v4().to_string();
    let peer = ip_of(cluster, source);
    let mut list = Vec::new();
    put_head(&mut list, &tag_for(plan, peer), &session, file.table);
    list.put_i64(file.range.start);
    list.put_i64(file.range.end);
    let verbs = (
        Verb::WholeSSTableListRequest,
        Verb::WholeSSTableListResponse,
    );
    let listed = ask_source(cluster, source, verbs.0, Bytes::from(list), verbs.1).await;
    let result = match listed.and_then(|b| decode_list(&b)) {
        Ok(staged) => receive_all(cluster, node, plan, file, source, &session, staged).await,
        Err(e) => Err(e),
    };
    let (files, bytes) = result.as_ref().map_or((0, 0), |p| (p.files, p.bytes));
    let mut release = Vec::new();
    put_str(&mut release, &session);
    release.extend_from_slice(&file.table);
    release.put_u64(files);
    release.put_u64(bytes);
    let released = ask_source(
        cluster,
        source,
        Verb::WholeSSTableRelease,
        Bytes::from(release),
        Verb::WholeSSTableRelease,
    )
    .await;
    if let Err(e) = released {
        tracing::warn!(error = %e, "whole-SSTable staging not released on the source");
    }
    result
}

async fn receive_all(
    cluster: &ClusterNode,
    node: &NodeState,
    plan: &StreamPlan,
    file: &StreamFile,
    source: NodeId,
    session: &str,
    staged: Vec<st::WholeSSTable>,
) -> Result<WholePull, String> {
    let peer = ip_of(cluster, source);
    if !staged.is_empty() {
        // A pull that finds nothing leaves no empty session in netstats.
        plan.expect(peer, Direction::Receiving, staged.len() as u64);
    }
    let mut pull = WholePull::default();
    for w in staged {
        let name = format!("{} hl-1-{}-Data.db (whole SSTable)", file.name, w.gen);
        plan.file_started(peer, Direction::Receiving, name);
        let dir = receive_dir(node, file.table, session, w.gen).await?;
        let received = receive_components(cluster, plan, file, source, session, &w, &dir).await;
        if let Err(e) = received {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e);
        }
        let engine = node.engine.clone();
        let (table, sent) = (file.table, w.clone());
        super::background::in_background(move || {
            engine
                .import_received(table, &dir, &sent)
                .map_err(|e| format!("whole SSTable hl-1-{} from {peer}: {e}", sent.gen))
        })
        .await?;
        plan.file_done(peer, Direction::Receiving);
        node.streams.whole_sstables.count_received(w.bytes());
        pull.excluded.push(w.gen);
        pull.files += 1;
        pull.bytes += w.bytes();
    }
    Ok(pull)
}

async fn receive_dir(
    node: &NodeState,
    table: st::TableId,
    session: &str,
    gen: u64,
) -> Result<std::path::PathBuf, String> {
    let engine = node.engine.clone();
    let session = session.to_string();
    tokio::task::spawn_blocking(move || engine.receive_dir(table, &session, gen))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}

/// Fetches every component of `w` into `dir`, piece by piece.
async fn receive_components(
    cluster: &ClusterNode,
    plan: &StreamPlan,
    file: &StreamFile,
    source: NodeId,
    session: &str,
    w: &st::WholeSSTable,
    dir: &std::path::Path,
) -> Result<(), String> {
    let peer = ip_of(cluster, source);
    for c in &w.components {
        let mut offset = 0;
        while offset < c.size {
            let len = (c.size - offset).min(CHUNK_BYTES);
            let mut req = Vec::new();
            put_head(&mut req, &tag_for(plan, peer), session, file.table);
            req.put_u64(w.gen);
            put_str(&mut req, &c.name);
            req.put_u64(offset);
            req.put_u64(len);
            let verbs = (
                Verb::WholeSSTableChunkRequest,
                Verb::WholeSSTableChunkResponse,
            );
            let chunk = ask_source(cluster, source, verbs.0, Bytes::from(req), verbs.1).await?;
            if chunk.is_empty() || chunk.len() as u64 > len {
                return Err(format!("{} of hl-1-{} ended early", c.name, w.gen));
            }
            let (dir, gen, name, bytes) = (dir.to_path_buf(), w.gen, c.name.clone(), chunk.clone());
            tokio::task::spawn_blocking(move || st::append_received(&dir, gen, &name, &bytes))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
            offset += chunk.len() as u64;
            plan.transferred(peer, Direction::Receiving, chunk.len() as u64);
        }
    }
    Ok(())
}

/// The request for a page of partitions of `table` that leaves out the source's generations
/// `excluded` (sent whole), and its verb.
pub(super) fn page_request(
    tag: &StreamTag,
    table: st::TableId,
    query: &st::ReadQuery,
    excluded: &[u64],
) -> (Verb, Bytes) {
    let page = stream_request(tag, table, query);
    if excluded.is_empty() {
        return (Verb::StreamRequest, page);
    }
    let mut out = Vec::with_capacity(4 + 8 * excluded.len() + page.len());
    out.put_u32(u32::try_from(excluded.len()).unwrap_or(u32::MAX));
    for gen in excluded {
        out.put_u64(*gen);
    }
    out.extend_from_slice(&page);
    (Verb::StreamRequestExcluding, Bytes::from(out))
}

/// Counts a page of partitions received, beside the whole files.
pub(super) fn count_partition_bytes(node: &NodeState, bytes: u64) {
    node.streams
        .whole_sstables
        .partition_bytes_received
        .fetch_add(bytes, Ordering::Relaxed);
}

/// The sender's side of the four requests.
pub async fn serve(cluster: Arc<ClusterNode>, node: Arc<NodeState>, request: Envelope) {
    match request.verb {
        Verb::WholeSSTableListRequest => {
            let engine = node.engine.clone();
            let payload = request.payload.clone();
            let listed = blocking(move || stage(&engine, &payload)).await;
            let verb = Verb::WholeSSTableListResponse;
            super::bootstrap::answer_or_refuse(
                &cluster,
                &request,
                verb,
                listed,
                "whole-SSTable list refused",
            );
        }
        Verb::WholeSSTableChunkRequest => serve_chunk(&cluster, &node, &request).await,
        Verb::WholeSSTableRelease => {
            let engine = node.engine.clone();
            let payload = request.payload.clone();
            let streams = node.streams.clone();
            let released = blocking(move || release(&engine, &streams, &payload)).await;
            let verb = Verb::WholeSSTableRelease;
            super::bootstrap::answer_or_refuse(
                &cluster,
                &request,
                verb,
                released,
                "whole-SSTable release refused",
            );
        }
        Verb::StreamRequestExcluding => serve_page_excluding(&cluster, &node, &request).await,
        _ => {}
    }
}

fn stage(engine: &st::Engine, payload: &[u8]) -> Result<Bytes, String> {
    let mut buf = payload;
    let (_, session, table) = get_head(&mut buf)?;
    let start = get_u64(&mut buf, "range start")? as i64;
    let end = get_u64(&mut buf, "range end")? as i64;
    let staged = engine
        .stage_whole_sstables(table, start, end, &session)
        .map_err(|e| e.to_string())?;
    Ok(encode_list(&staged))
}

fn release(
    engine: &st::Engine,
    streams: &helenus_cluster::streaming::StreamManager,
    payload: &[u8],
) -> Result<Bytes, String> {
    let mut buf = payload;
    let session = get_str(&mut buf, "session")?;
    let table: st::TableId = take(&mut buf, 16, "table")?
        .try_into()
        .map_err(|_| bad("table"))?;
    let (files, bytes) = (get_u64(&mut buf, "files")?, get_u64(&mut buf, "bytes")?);
    let counters = &streams.whole_sstables;
    counters.sent.fetch_add(files, Ordering::Relaxed);
    counters.sent_bytes.fetch_add(bytes, Ordering::Relaxed);
    engine
        .release_staged(table, &session)
        .map_err(|e| e.to_string())?;
    Ok(Bytes::new())
}

async fn serve_chunk(cluster: &ClusterNode, node: &NodeState, request: &Envelope) {
    let engine = node.engine.clone();
    let payload = request.payload.clone();
    // A chunk must pass the throttle well within the requester's timeout, however low the rate.
    let rate = node.streams.entire_sstable_rate_bytes_per_s();
    let cap = if rate == 0 {
        CHUNK_BYTES
    } else {
        (rate * 5).clamp(64 << 10, CHUNK_BYTES)
    };
    let read = tokio::task::spawn_blocking(move || read_chunk(&engine, &payload, cap))
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r);
    let chunk = match read {
        Ok((tag, chunk)) => {
            let bytes = chunk.len() as u64;
            node.streams.entire_sstable_throttle().acquire(bytes).await;
            node.streams
                .served(&tag, ip_of(cluster, request.from), bytes);
            Ok(chunk)
        }
        Err(e) => Err(e),
    };
    let verb = Verb::WholeSSTableChunkResponse;
    super::bootstrap::answer_or_refuse(
        cluster,
        request,
        verb,
        chunk,
        "whole-SSTable chunk refused",
    );
}

/// Up to `cap` bytes of the component a chunk request names.
fn read_chunk(engine: &st::Engine, payload: &[u8], cap: u64) -> Result<(StreamTag, Bytes), String> {
    let mut buf = payload;
    let (tag, session, table) = get_head(&mut buf)?;
    let gen = get_u64(&mut buf, "generation")?;
    let component = get_str(&mut buf, "component")?;
    let offset = get_u64(&mut buf, "offset")?;
    let len = get_u64(&mut buf, "length")?.min(cap) as usize;
    let chunk = engine
        .read_staged(table, &session, gen, &component, offset, len)
        .map_err(|e| e.to_string())?;
    Ok((tag, Bytes::from(chunk)))
}

/// A page of partitions read without the generations the requester received whole.
async fn serve_page_excluding(cluster: &ClusterNode, node: &NodeState, request: &Envelope) {
    let engine = node.engine.clone();
    let payload = request.payload.clone();
    let read =
        super::background::in_background(move || read_page_excluding(&engine, payload)).await;
    let read = read.map(|(tag, partitions, page)| (tag, page, partitions > 0));
    send_page(cluster, node, request, read, Verb::StreamResponse).await;
}

fn read_page_excluding(
    engine: &st::Engine,
    payload: Bytes,
) -> Result<(StreamTag, usize, Bytes), String> {
    let mut buf = payload.as_ref();
    let n = get_u32(&mut buf, "exclusions")? as usize;
    let excluded = (0..n)
        .map(|_| get_u64(&mut buf, "excluded generation"))
        .collect::<Result<Vec<_>, _>>()?;
    let rest = payload.slice(payload.len() - buf.len()..);
    if rest.len() < StreamTag::ENCODED_LEN {
        return Err(bad("page request"));
    }
    let tag = StreamTag::decode(&rest).ok_or("stream request without its tag")?;
    let (table, query) =
        wire::decode_read(rest.slice(StreamTag::ENCODED_LEN..)).map_err(|e| e.to_string())?;
    let result = engine
        .read_unfiltered_excluding(table, &query, u64::MAX, &excluded)
        .map_err(|e| e.to_string())?;
    let page = helenus_mutation::encode_mutations(&result.partitions);
    Ok((tag, result.partitions.len(), page))
}

/// Runs storage work off the async workers; a panicked job is its request's error.
async fn blocking<T: Send + 'static>(
    job: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(job)
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use helenus_cluster::streaming::StreamOperation;

    fn listed() -> Vec<st::WholeSSTable> {
        vec![st::WholeSSTable {
            gen: 7,
            components: vec![st::ComponentInfo {
                name: "Data.db".into(),
                size: 1234,
                crc32c: 0xdead_beef,
            }],
        }]
    }

    #[test]
    fn a_list_survives_the_wire_and_a_truncated_one_is_refused() {
        let bytes = encode_list(&listed());
        assert_eq!(decode_list(&bytes).unwrap(), listed());
        for cut in 0..bytes.len() {
            assert!(decode_list(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn a_request_head_round_trips_and_garbage_is_an_error() {
        let tag = StreamTag {
            plan_id: uuid::Uuid::new_v4(),
            operation: StreamOperation::Bootstrap,
            files_total: 3,
            file_index: 1,
        };
        let mut out = Vec::new();
        put_head(
            &mut out,
            &tag,
            "6f1c1f3e-2b7a-4c59-9a39-3a1f0d7c2e11",
            [9; 16],
        );
        let mut buf = out.as_slice();
        let (got, session, table) = get_head(&mut buf).unwrap();
        assert_eq!((got.file_index, got.files_total), (1, 3));
        assert_eq!(session, "6f1c1f3e-2b7a-4c59-9a39-3a1f0d7c2e11");
        assert_eq!(table, [9; 16]);
        assert!(buf.is_empty());
        let mut short = &out[..out.len() - 1];
        assert!(get_head(&mut short).is_err());
    }

    #[test]
    fn a_page_request_names_what_it_leaves_out() {
        let tag = StreamTag {
            plan_id: uuid::Uuid::new_v4(),
            operation: StreamOperation::Bootstrap,
            files_total: 1,
            file_index: 0,
        };
        let q = st::ReadQuery::whole_partition(Bytes::from_static(b"k"), 1, 0);
        let (verb, _) = page_request(&tag, [1; 16], &q, &[]);
        assert_eq!(verb, Verb::StreamRequest);
        let (verb, payload) = page_request(&tag, [1; 16], &q, &[4, 5]);
        assert_eq!(verb, Verb::StreamRequestExcluding);
        let mut buf = payload.as_ref();
        assert_eq!(get_u32(&mut buf, "n").unwrap(), 2);
        assert_eq!(get_u64(&mut buf, "g").unwrap(), 4);
        assert_eq!(get_u64(&mut buf, "g").unwrap(), 5);
        assert_eq!(StreamTag::decode(buf).unwrap().plan_id, tag.plan_id);
    }
}
