//! Row-level synchronisation of one range where the replicas' trees differ: digest lists
//! compared a window at a time, then only the partitions that differ are read (by key) and
//! written (to the replicas lacking them). Both sides of the two messages live here.

use super::compare::{self, DigestEntry, Divergent};
use super::{ask, visit_digests, RepairSummary, View, REPAIR_MESSAGE_TIMEOUTS};
use crate::cluster::bootstrap::{
    answer_or_refuse, page_query, storage_pieces, STREAM_PAGE_PARTITIONS,
};
use crate::cluster::streams::{ip_of, send_page};
use crate::cluster::{wire, ClusterNode};
use crate::node::NodeState;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use helenus_cluster::locator::{NodeId, TokenRange};
use helenus_cluster::messaging::{Envelope, Verb};
use helenus_cluster::streaming::{Direction, StreamPlan, StreamTag};
use helenus_storage as st;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Digest entries per page: a few tens of KB, and a window's comparison state stays small.
const DIGEST_PAGE: usize = 1024;
/// The most a peer may ask for in one digest page, whatever its request says.
const MAX_DIGEST_PAGE: usize = 8192;

/// What one repair of one (range, table) shares across its sub-ranges.
pub(super) struct RowSync<'a> {
    pub cluster: &'a ClusterNode,
    pub node: &'a NodeState,
    pub plan: &'a StreamPlan,
    pub table: st::TableId,
    pub replicas: &'a [NodeId],
    /// The range the trees were built over: the replicas kept their digests under it.
    pub tree_range: TokenRange,
    pub now_s: i64,
    /// What is compared, and where what a replica lacks is written: in a session's view, to
    /// an SSTable pending for it.
    pub view: View,
}

/// Where one replica's digest list stands: entries read but not compared yet, and where the
/// next page starts.
struct Cursor {
    next: st::PartitionBound,
    buffered: VecDeque<DigestEntry>,
    done: bool,
}

impl RowSync<'_> {
    /// Brings the replicas level over `sub`. The lists are compared a window at a time: up to
    /// the smallest last key among the replicas with more to list, so a partition is compared
    /// only once every replica's list has passed it, and memory stays a page per replica.
    pub async fn sync(&self, sub: TokenRange, summary: &mut RepairSummary) -> Result<(), String> {
        let me = self
            .replicas
            .iter()
            .position(|r| *r == self.cluster.local());
        for (start, end) in storage_pieces(sub) {
            let mut cursors: Vec<Cursor> = self
                .replicas
                .iter()
                .map(|_| Cursor {
                    next: start.clone(),
                    buffered: VecDeque::new(),
                    done: false,
                })
                .collect();
            loop {
                self.refill(&mut cursors, &end).await?;
                if cursors.iter().all(|c| c.done && c.buffered.is_empty()) {
                    break;
                }
                let horizon = cursors
                    .iter()
                    .filter(|c| !c.done)
                    .filter_map(|c| c.buffered.back())
                    .map(|e| (e.token, e.key.clone()))
                    .min();
                let window: Vec<Vec<DigestEntry>> = cursors
                    .iter_mut()
                    .map(|c| take_through(&mut c.buffered, horizon.as_ref()))
                    .collect();
                let (compared, divergent) = compare::divergent(&window, me);
                summary.partitions_compared += compared;
                summary.partitions_out_of_sync += divergent.len() as u64;
                for chunk in divergent.chunks(STREAM_PAGE_PARTITIONS) {
                    self.repair_chunk(chunk, summary).await?;
                }
            }
        }
        Ok(())
    }

    /// Reads the next page of every list whose buffered entries are all compared, from all
    /// those replicas at once.
    async fn refill(&self, cursors: &mut [Cursor], end: &st::PartitionBound) -> Result<(), String> {
        let wanted: Vec<usize> = (0..cursors.len())
            .filter(|i| {
                cursors
                    .get(*i)
                    .is_some_and(|c| c.buffered.is_empty() && !c.done)
            })
            .collect();
        let pages = futures::future::try_join_all(wanted.iter().filter_map(|i| {
            let replica = *self.replicas.get(*i)?;
            let start = cursors.get(*i)?.next.clone();
            Some(self.digest_page(replica, start, end.clone()))
        }))
        .await?;
        for (i, page) in wanted.into_iter().zip(pages) {
            let Some(cursor) = cursors.get_mut(i) else {
                continue;
            };
            cursor.done = page.len() < DIGEST_PAGE;
            if let Some(last) = page.last() {
                cursor.next = st::PartitionBound::Key {
                    token: last.token,
                    key: last.key.clone(),
                    inclusive: false,
                };
            }
            cursor.buffered.extend(page);
        }
        Ok(())
    }

    /// One page of `replica`'s digest list from `start` to `end`.
    async fn digest_page(
        &self,
        replica: NodeId,
        start: st::PartitionBound,
        end: st::PartitionBound,
    ) -> Result<Vec<DigestEntry>, String> {
        if replica == self.cluster.local() {
            let cached = self.cluster.repair_digests.page(
                self.table,
                self.tree_range,
                self.view,
                &start,
                &end,
                DIGEST_PAGE,
            );
            if let Some(page) = cached {
                return Ok(page);
            }
            let engine = self.node.engine.clone();
            let (table, now_s, view) = (self.table, self.now_s, self.view);
            return super::super::background::in_background(move || {
                list_digests(&engine, table, (start, end), (now_s, view), DIGEST_PAGE)
            })
            .await;
        }
        let mut query = page_query(start, end, self.now_s);
        query.partition_limit = Some(DIGEST_PAGE);
        let payload = digests_request(self.tree_range, self.view, self.table, &query);
        let reply = ask(
            self.cluster,
            replica,
            Verb::RepairDigestsRequest,
            payload,
            &REPAIR_MESSAGE_TIMEOUTS,
        )
        .await?;
        if reply.verb != Verb::RepairDigestsResponse {
            return Err(format!("{replica} could not list its digests"));
        }
        decode_digests(reply.payload)
            .ok_or_else(|| format!("{replica} sent a malformed digest list"))
    }

    /// Reads each version of `chunk`'s partitions from one replica holding it, then writes to
    /// each replica the versions it lacks; the replicas are read, then written, at once.
    async fn repair_chunk(
        &self,
        chunk: &[Divergent],
        summary: &mut RepairSummary,
    ) -> Result<(), String> {
        let reads = self.replicas.iter().enumerate().map(|(source, replica)| {
            let keys: Vec<(i64, Bytes)> = chunk
                .iter()
                .filter(|d| d.versions.iter().any(|v| v.from == source))
                .map(|d| (d.token, d.key.clone()))
                .collect();
            self.read_keys(*replica, keys)
        });
        let mut read: Vec<HashMap<(i64, Bytes), Vec<st::Mutation>>> = Vec::new();
        for (partitions, bytes) in futures::future::try_join_all(reads).await? {
            summary.bytes_streamed += bytes;
            let mut by_key: HashMap<(i64, Bytes), Vec<st::Mutation>> = HashMap::new();
            for p in partitions {
                by_key.entry((p.token, p.key.clone())).or_default().push(p);
            }
            read.push(by_key);
        }
        let mut writes = Vec::new();
        for (target, replica) in self.replicas.iter().enumerate() {
            let mut partitions = Vec::new();
            let mut keys = 0;
            for d in chunk {
                let before = partitions.len();
                for v in d.versions.iter().filter(|v| v.to.contains(&target)) {
                    let fetched = read
                        .get(v.from)
                        .and_then(|m| m.get(&(d.token, d.key.clone())));
                    partitions.extend(fetched.into_iter().flatten().cloned());
                }
                keys += u64::from(partitions.len() > before);
            }
            if keys > 0 {
                writes.push((*replica, keys, partitions));
            }
        }
        let sent = futures::future::try_join_all(
            writes
                .iter()
                .map(|(replica, _, partitions)| self.write_to(*replica, partitions)),
        )
        .await?;
        for ((replica, keys, _), bytes) in writes.iter().zip(sent) {
            summary.partitions_streamed += keys;
            summary.bytes_streamed += bytes;
            *summary
                .partitions_written
                .entry(ip_of(self.cluster, *replica).to_string())
                .or_default() += keys;
        }
        Ok(())
    }

    /// The named partitions as `replica` holds them, unfiltered (absent ones left out), and
    /// the bytes that came over the network for them.
    async fn read_keys(
        &self,
        replica: NodeId,
        keys: Vec<(i64, Bytes)>,
    ) -> Result<(Vec<st::Mutation>, u64), String> {
        if keys.is_empty() {
            return Ok((Vec::new(), 0));
        }
        if replica == self.cluster.local() {
            let engine = self.node.engine.clone();
            let (table, now_s, view) = (self.table, self.now_s, self.view);
            let read = tokio::task::spawn_blocking(move || {
                read_partitions(&engine, table, (now_s, view), keys)
            })
            .await
            .map_err(|e| e.to_string())?;
            return read.map(|partitions| (partitions, 0));
        }
        let peer = ip_of(self.cluster, replica);
        self.plan.expect(peer, Direction::Receiving, 1);
        self.plan.file_started(
            peer,
            Direction::Receiving,
            format!("{} partitions", keys.len()),
        );
        // The replica counts what it serves; files are this node's to count.
        let tag = StreamTag {
            plan_id: self.plan.id(),
            operation: self.plan.operation(),
            files_total: 0,
            file_index: 0,
        };
        let payload = rows_request(&tag, self.table, (self.now_s, self.view), &keys);
        let reply = ask(
            self.cluster,
            replica,
            Verb::RepairRowsRequest,
            payload,
            &REPAIR_MESSAGE_TIMEOUTS,
        )
        .await?;
        if reply.verb != Verb::RepairRowsResponse {
            return Err(format!("{replica} refused to send partitions"));
        }
        let bytes = reply.payload.len() as u64;
        self.plan.transferred(peer, Direction::Receiving, bytes);
        self.plan.file_done(peer, Direction::Receiving);
        let partitions =
            helenus_mutation::decode_mutations(reply.payload).map_err(|e| e.to_string())?;
        Ok((partitions, bytes))
    }

    /// Writes `partitions` to `replica`, a page at a time; the bytes sent.
    async fn write_to(&self, replica: NodeId, partitions: &[st::Mutation]) -> Result<u64, String> {
        if replica == self.cluster.local() {
            match self.view {
                View::Live => crate::proxy::apply_locally(&self.node.engine, partitions.to_vec())
                    .await
                    .map_err(|e| e.to_string())?,
                View::Session(id) => {
                    let (engine, table) = (self.node.engine.clone(), self.table);
                    let partitions = partitions.to_vec();
                    tokio::task::spawn_blocking(move || engine.write_pending(table, id, partitions))
                        .await
                        .map_err(|e| e.to_string())?
                        .map_err(|e| e.to_string())?
                }
            }
            return Ok(0);
        }
        let mut bytes = 0;
        let peer = ip_of(self.cluster, replica);
        self.plan.expect(peer, Direction::Sending, 1);
        for page in partitions.chunks(STREAM_PAGE_PARTITIONS) {
            let (verb, payload) = match self.view {
                View::Live => (
                    Verb::MutationRequest,
                    helenus_mutation::encode_mutations(page),
                ),
                View::Session(id) => (
                    Verb::RepairSessionWrite,
                    super::session_wire::session_write_request(id, self.table, page),
                ),
            };
            let page_bytes = payload.len() as u64;
            bytes += page_bytes;
            self.node.streams.throttle().acquire(page_bytes).await;
            let reply = ask(
                self.cluster,
                replica,
                verb,
                payload,
                &REPAIR_MESSAGE_TIMEOUTS,
            )
            .await?;
            if reply.verb != Verb::MutationResponse {
                return Err(format!("{replica} refused a repair write"));
            }
            self.plan.transferred(peer, Direction::Sending, page_bytes);
        }
        self.plan.file_done(peer, Direction::Sending);
        Ok(bytes)
    }
}

/// The entries of `buffered` up to and including `horizon` (all of them without one).
fn take_through(
    buffered: &mut VecDeque<DigestEntry>,
    horizon: Option<&(i64, Bytes)>,
) -> Vec<DigestEntry> {
    let Some((token, key)) = horizon else {
        return buffered.drain(..).collect();
    };
    let through = buffered
        .iter()
        .take_while(|e| (e.token, &e.key) <= (*token, key))
        .count();
    buffered.drain(..through).collect()
}

/// Up to `limit` of this node's digest entries of `table` from `start` to `end`.
fn list_digests(
    engine: &st::Engine,
    table: st::TableId,
    (start, end): (st::PartitionBound, st::PartitionBound),
    read_as: (i64, View),
    limit: usize,
) -> Result<Vec<DigestEntry>, String> {
    let mut out = Vec::new();
    visit_digests(engine, table, start, end, read_as, |token, key, digest| {
        out.push(DigestEntry {
            token,
            key: key.clone(),
            digest,
        });
        out.len() < limit
    })?;
    Ok(out)
}

/// This node's copies of the named partitions, unfiltered.
fn read_partitions(
    engine: &st::Engine,
    table: st::TableId,
    (now_s, view): (i64, View),
    keys: Vec<(i64, Bytes)>,
) -> Result<Vec<st::Mutation>, String> {
    let mut out = Vec::with_capacity(keys.len());
    for (token, key) in keys {
        let query = st::ReadQuery::whole_partition(key, token, now_s);
        out.extend(view.read(engine, table, &query)?.partitions);
    }
    Ok(out)
}

/// A `RepairDigestsRequest` payload: the range of the tree compared (its digests may still be
/// kept), then a read command over the part to list, its partition limit the page size.
fn digests_request(
    tree_range: TokenRange,
    view: View,
    table: st::TableId,
    query: &st::ReadQuery,
) -> Bytes {
    let read = wire::encode_read(table, query);
    let mut out = BytesMut::with_capacity(16 + 17 + read.len());
    out.put_i64(tree_range.start);
    out.put_i64(tree_range.end);
    view.encode(&mut out);
    out.put_slice(&read);
    out.freeze()
}

/// The replica's side of `digest_page`: from the digests kept with the tree when there are,
/// else read and hashed again.
pub fn serve_digests(cluster: &ClusterNode, node: &NodeState, request: &Envelope) {
    let listed = decode_digests_request(request.payload.clone())
        .and_then(|(tree_range, view, table, query)| {
            cluster
                .repair_sessions
                .check_view(view, node.exec.clock().wall_ms())?;
            let st::PartitionRange::Range { start, end } = query.partitions else {
                return Err("a digest list needs a range".to_string());
            };
            let limit = query
                .partition_limit
                .unwrap_or(DIGEST_PAGE)
                .clamp(1, MAX_DIGEST_PAGE);
            match cluster
                .repair_digests
                .page(table, tree_range, view, &start, &end, limit)
            {
                Some(page) => Ok(page),
                None => list_digests(
                    &node.engine,
                    table,
                    (start, end),
                    (query.now_s, view),
                    limit,
                ),
            }
        })
        .map(|entries| encode_digests(&entries));
    answer_or_refuse(
        cluster,
        request,
        Verb::RepairDigestsResponse,
        listed,
        "repair digests not listed",
    );
}

/// The replica's side of `read_keys`: read like a stream page, and like one throttled by the
/// outbound bucket and shown in this node's netstats under the requester's plan.
pub async fn serve_rows(cluster: Arc<ClusterNode>, node: Arc<NodeState>, request: Envelope) {
    let payload = request.payload.clone();
    let engine = node.engine.clone();
    let (sessions, now_ms) = (cluster.clone(), node.exec.clock().wall_ms());
    let read = tokio::task::spawn_blocking(move || {
        let (tag, table, read_as, keys) =
            decode_rows_request(payload).ok_or("malformed repair rows request")?;
        sessions.repair_sessions.check_view(read_as.1, now_ms)?;
        let partitions = read_partitions(&engine, table, read_as, keys)?;
        Ok::<_, String>((tag, helenus_mutation::encode_mutations(&partitions)))
    })
    .await
    .map_err(|e| e.to_string())
    .and_then(|read| read);
    let read = read.map(|(tag, page)| (tag, page, true));
    send_page(&cluster, &node, &request, read, Verb::RepairRowsResponse).await;
}

fn decode_digests_request(
    mut payload: Bytes,
) -> Result<(TokenRange, View, st::TableId, st::ReadQuery), String> {
    if payload.remaining() < 16 {
        return Err("malformed digest list request".into());
    }
    let tree_range = TokenRange::new(payload.get_i64(), payload.get_i64());
    let view = View::decode(&mut payload).ok_or("malformed digest list request")?;
    let (table, query) = wire::decode_read(payload).map_err(|e| e.to_string())?;
    Ok((tree_range, view, table, query))
}

fn encode_digests(entries: &[DigestEntry]) -> Bytes {
    let keys: usize = entries.iter().map(|e| e.key.len()).sum();
    let mut out = BytesMut::with_capacity(4 + entries.len() * (8 + 4 + 16) + keys);
    out.put_u32(u32::try_from(entries.len()).unwrap_or(u32::MAX));
    for e in entries {
        out.put_i64(e.token);
        put_key(&mut out, &e.key);
        out.put_slice(&e.digest);
    }
    out.freeze()
}

fn decode_digests(mut payload: Bytes) -> Option<Vec<DigestEntry>> {
    if payload.remaining() < 4 {
        return None;
    }
    let n = payload.get_u32() as usize;
    let mut out = Vec::with_capacity(n.min(MAX_DIGEST_PAGE));
    for _ in 0..n {
        if payload.remaining() < 8 {
            return None;
        }
        let token = payload.get_i64();
        let key = get_key(&mut payload)?;
        let mut digest = [0u8; 16];
        if payload.remaining() < 16 {
            return None;
        }
        payload.copy_to_slice(&mut digest);
        out.push(DigestEntry { token, key, digest });
    }
    payload.is_empty().then_some(out)
}

/// A `RepairRowsRequest` payload: the stream tag, the table, "now" for TTLs, the view, then
/// the keys.
fn rows_request(
    tag: &StreamTag,
    table: st::TableId,
    (now_s, view): (i64, View),
    keys: &[(i64, Bytes)],
) -> Bytes {
    let mut head = Vec::with_capacity(StreamTag::ENCODED_LEN);
    tag.encode(&mut head);
    let mut out = BytesMut::with_capacity(head.len() + 16 + 8 + 17 + 4 + keys.len() * 32);
    out.put_slice(&head);
    out.put_slice(&table);
    out.put_i64(now_s);
    view.encode(&mut out);
    out.put_u32(u32::try_from(keys.len()).unwrap_or(u32::MAX));
    for (token, key) in keys {
        out.put_i64(*token);
        put_key(&mut out, key);
    }
    out.freeze()
}

type RowsRequest = (StreamTag, st::TableId, (i64, View), Vec<(i64, Bytes)>);

fn decode_rows_request(mut payload: Bytes) -> Option<RowsRequest> {
    let tag = StreamTag::decode(&payload)?;
    if payload.remaining() < StreamTag::ENCODED_LEN + 16 + 8 + 1 {
        return None;
    }
    payload.advance(StreamTag::ENCODED_LEN);
    let mut table = [0u8; 16];
    payload.copy_to_slice(&mut table);
    let now_s = payload.get_i64();
    let view = View::decode(&mut payload)?;
    if payload.remaining() < 4 {
        return None;
    }
    let n = payload.get_u32() as usize;
    let mut keys = Vec::with_capacity(n.min(STREAM_PAGE_PARTITIONS));
    for _ in 0..n {
        if payload.remaining() < 8 {
            return None;
        }
        let token = payload.get_i64();
        keys.push((token, get_key(&mut payload)?));
    }
    payload
        .is_empty()
        .then_some((tag, table, (now_s, view), keys))
}

fn put_key(out: &mut BytesMut, key: &Bytes) {
    out.put_u32(u32::try_from(key.len()).unwrap_or(u32::MAX));
    out.put_slice(key);
}

fn get_key(payload: &mut Bytes) -> Option<Bytes> {
    if payload.remaining() < 4 {
        return None;
    }
    let len = payload.get_u32() as usize;
    (payload.remaining() >= len).then(|| payload.split_to(len))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use helenus_cluster::streaming::StreamOperation;

    fn entry(token: i64, key: &'static [u8], digest: u8) -> DigestEntry {
        DigestEntry {
            token,
            key: Bytes::from_static(key),
            digest: [digest; 16],
        }
    }

    #[test]
    fn digest_lists_round_trip_and_truncated_ones_are_refused() {
        let entries = vec![entry(-4, b"a", 1), entry(9, b"", 2), entry(9, b"bcd", 3)];
        let encoded = encode_digests(&entries);
        assert_eq!(decode_digests(encoded.clone()), Some(entries));
        assert_eq!(decode_digests(encoded.slice(..encoded.len() - 1)), None);
        assert_eq!(decode_digests(Bytes::from_static(&[0, 0, 0, 1])), None);
        assert_eq!(decode_digests(encode_digests(&[])), Some(vec![]));
    }

    #[test]
    fn rows_requests_round_trip_and_truncated_ones_are_refused() {
        let tag = StreamTag {
            plan_id: uuid::Uuid::from_u128(7),
            operation: StreamOperation::Repair,
            files_total: 0,
            file_index: 0,
        };
        let keys = vec![
            (1, Bytes::from_static(b"k1")),
            (-2, Bytes::from_static(b"k2")),
        ];
        let view = View::Session([6; 16]);
        let request = rows_request(&tag, [5; 16], (1234, view), &keys);
        assert_eq!(
            decode_rows_request(request.clone()),
            Some((tag, [5; 16], (1234, view), keys))
        );
        assert_eq!(
            decode_rows_request(request.slice(..request.len() - 1)),
            None
        );
        assert_eq!(decode_rows_request(request.slice(..10)), None);
    }

    #[test]
    fn digest_list_requests_round_trip_and_short_ones_are_refused() {
        let query = page_query(
            st::PartitionBound::Unbounded,
            st::PartitionBound::Unbounded,
            77,
        );
        let view = View::Session([2; 16]);
        let request = digests_request(TokenRange::new(-3, 8), view, [4; 16], &query);
        let (range, decoded_view, table, decoded) =
            decode_digests_request(request.clone()).unwrap();
        assert_eq!(
            (range, decoded_view, table, decoded.now_s),
            (TokenRange::new(-3, 8), view, [4; 16], 77)
        );
        assert!(decode_digests_request(request.slice(..15)).is_err());
    }

    #[test]
    fn a_window_takes_entries_through_the_horizon() {
        let mut buffered: VecDeque<_> = vec![
            entry(1, b"a", 0),
            entry(2, b"a", 0),
            entry(2, b"b", 0),
            entry(3, b"a", 0),
        ]
        .into();
        let taken = take_through(&mut buffered, Some(&(2, Bytes::from_static(b"a"))));
        assert_eq!(taken, vec![entry(1, b"a", 0), entry(2, b"a", 0)]);
        assert_eq!(buffered.len(), 2);
        assert_eq!(take_through(&mut buffered, None).len(), 2);
        assert!(buffered.is_empty());
    }
}
