//! Internode messages on the wire: a small versioned header, then the verb's payload.
//!
//! ```text
//! [version u8][verb u8][flags u8][id u64][from: host id 16 bytes][payload length u32][payload]
//! ```
//! Big-endian throughout. A receiver refuses a version it does not speak rather than guessing.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use uuid::Uuid;

use crate::locator::NodeId;

/// The message format this build writes and reads.
pub const MESSAGING_VERSION: u8 = 1;
/// Largest payload accepted (a frame bigger than this is a peer bug or an attack).
pub const MAX_PAYLOAD_BYTES: usize = 256 << 20;
const HEADER_BYTES: usize = 1 + 1 + 1 + 8 + 16 + 4;

/// What a message asks for. Numbers are part of the wire format: never reuse one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Verb {
    GossipDigestSyn = 1,
    GossipDigestAck = 2,
    GossipDigestAck2 = 3,
    MutationRequest = 10,
    MutationResponse = 11,
    ReadRequest = 12,
    ReadResponse = 13,
    RangeReadRequest = 14,
    RangeReadResponse = 15,
    HintRequest = 16,
    BatchStore = 17,
    BatchRemove = 18,
    PaxosPrepare = 20,
    PaxosPropose = 21,
    PaxosCommit = 22,
    PaxosResponse = 23,
    TruncateRequest = 24,
    /// Counter increments for the receiver to apply as their shard's leader; it answers with
    /// `CounterLeaderResponse` carrying the resolved cells for the other replicas.
    CounterLeaderRequest = 25,
    CounterLeaderResponse = 26,
    /// One page of a token range's partitions, unfiltered, for a node gaining the range
    /// (bootstrap); the payload is a read command, the response the partitions.
    StreamRequest = 27,
    StreamResponse = 28,
    SchemaPull = 30,
    SchemaPush = 31,
    /// A traced request's session and events, shared so any node answers `system_traces`.
    TraceSession = 34,
    /// A replica's Merkle tree of one table's token range (repair's validation); the payload
    /// is a read command over the range and the tree depth.
    RepairTreeRequest = 35,
    RepairTreeResponse = 36,
    /// Asks for the receiver's roles and permissions (`system_auth`), answered with `AuthPush`.
    AuthPull = 37,
    /// Roles and permissions for the receiver to merge (newest write of each entry wins).
    AuthPush = 38,
    Failure = 40,
    /// One page of (token, key, digest) for the partitions of a token range (row-level repair);
    /// the payload is a read command over the range whose partition limit bounds the page.
    RepairDigestsRequest = 41,
    RepairDigestsResponse = 42,
    /// The named partitions, unfiltered (row-level repair fetching what differs, by key).
    RepairRowsRequest = 43,
    RepairRowsResponse = 44,
    /// Whole-SSTable streaming (server cluster/sstable_stream.rs): the sender stages the
    /// SSTables of a table that lie wholly inside a range and lists them with their components'
    /// sizes and CRC32Cs; the receiver reads the components in pieces, then releases the stage.
    WholeSSTableListRequest = 50,
    WholeSSTableListResponse = 51,
    WholeSSTableChunkRequest = 52,
    WholeSSTableChunkResponse = 53,
    WholeSSTableRelease = 54,
    /// A `StreamRequest` that leaves out the SSTables already sent whole (answered with a
    /// `StreamResponse`).
    StreamRequestExcluding = 55,
    /// Asks the receiver (a node gaining a range in a decommission or removenode) to pull, as
    /// above, the SSTables of a table wholly inside the range from a named source; answered with
    /// `WholeSSTablePullResponse` (the generations received whole, or why the pull failed).
    WholeSSTablePullRequest = 56,
    WholeSSTablePullResponse = 57,
    /// A repair's record for the receiver's repair history (`system_distributed`), sent by the
    /// repair's coordinator when it starts and ends. Numbered apart from the streaming verbs.
    RepairHistory = 60,
    /// The metadata log's Paxos (server cluster/metadata_log.rs): one single-decree instance per
    /// schema epoch, on acceptors of their own, so LWT traffic and schema changes never share
    /// acceptor state. Answered with `PaxosResponse`.
    MetadataPrepare = 61,
    MetadataPropose = 62,
    MetadataCommit = 63,
    /// Incremental repair (server cluster/repair/session.rs): the coordinator asks each
    /// participant to set aside, as pending for the session, its unrepaired SSTables of the
    /// named tables within the session's ranges (anticompaction); answered with
    /// `RepairPrepareResponse` once they are.
    RepairPrepareRequest = 64,
    RepairPrepareResponse = 65,
    /// The session's outcome: its pending SSTables become repaired, or unrepaired again.
    /// Answered with `RepairFinalizeResponse`.
    RepairFinalizeRequest = 66,
    RepairFinalizeResponse = 67,
    /// Partitions a session's row-level sync writes to a replica that lacked them, stored in
    /// an SSTable pending for the session (so they are repaired with the rest of it); answered
    /// with `MutationResponse`.
    RepairSessionWrite = 68,
}

impl Verb {
    pub fn from_u8(v: u8) -> Option<Verb> {
        use Verb::*;
        Some(match v {
            1 => GossipDigestSyn,
            2 => GossipDigestAck,
            3 => GossipDigestAck2,
            10 => MutationRequest,
            11 => MutationResponse,
            12 => ReadRequest,
            13 => ReadResponse,
            14 => RangeReadRequest,
            15 => RangeReadResponse,
            16 => HintRequest,
            17 => BatchStore,
            18 => BatchRemove,
            20 => PaxosPrepare,
            21 => PaxosPropose,
            22 => PaxosCommit,
            23 => PaxosResponse,
            24 => TruncateRequest,
            25 => CounterLeaderRequest,
            26 => CounterLeaderResponse,
            27 => StreamRequest,
            28 => StreamResponse,
            30 => SchemaPull,
            31 => SchemaPush,
            34 => TraceSession,
            35 => RepairTreeRequest,
            36 => RepairTreeResponse,
            37 => AuthPull,
            38 => AuthPush,
            40 => Failure,
            41 => RepairDigestsRequest,
            42 => RepairDigestsResponse,
            43 => RepairRowsRequest,
            44 => RepairRowsResponse,
            50 => WholeSSTableListRequest,
            51 => WholeSSTableListResponse,
            52 => WholeSSTableChunkRequest,
            53 => WholeSSTableChunkResponse,
            54 => WholeSSTableRelease,
            55 => StreamRequestExcluding,
            56 => WholeSSTablePullRequest,
            57 => WholeSSTablePullResponse,
            60 => RepairHistory,
            61 => MetadataPrepare,
            62 => MetadataPropose,
            63 => MetadataCommit,
            64 => RepairPrepareRequest,
            65 => RepairPrepareResponse,
            66 => RepairFinalizeRequest,
            67 => RepairFinalizeResponse,
            68 => RepairSessionWrite,
            _ => return None,
        })
    }
}

/// Header flags.
pub mod flags {
    /// The message answers request `id` of the receiver.
    pub const RESPONSE: u8 = 1;
}

/// One internode message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub verb: Verb,
    pub flags: u8,
    /// Request id, echoed by the response so the sender can match it.
    pub id: u64,
    pub from: NodeId,
    pub payload: Bytes,
}

impl Envelope {
    pub fn is_response(&self) -> bool {
        self.flags & flags::RESPONSE != 0
    }

    /// The wire form: header then payload.
    pub fn encode(&self, out: &mut BytesMut) -> Result<(), EnvelopeError> {
        if self.payload.len() > MAX_PAYLOAD_BYTES {
            return Err(EnvelopeError::TooLarge(self.payload.len()));
        }
        out.reserve(HEADER_BYTES + self.payload.len());
        out.put_u8(MESSAGING_VERSION);
        out.put_u8(self.verb as u8);
        out.put_u8(self.flags);
        out.put_u64(self.id);
        out.put_slice(self.from.0.as_bytes());
        out.put_u32(
            u32::try_from(self.payload.len())
                .map_err(|_| EnvelopeError::TooLarge(self.payload.len()))?,
        );
        out.put_slice(&self.payload);
        Ok(())
    }

    /// One message from the front of `buf`, or `Ok(None)` if it holds only part of one yet.
    pub fn decode(buf: &mut BytesMut) -> Result<Option<Envelope>, EnvelopeError> {
        if buf.len() < HEADER_BYTES {
            return Ok(None);
        }
        let mut header = &buf[..HEADER_BYTES];
        let version = header.get_u8();
        if version != MESSAGING_VERSION {
            return Err(EnvelopeError::Version(version));
        }
        let verb_byte = header.get_u8();
        let verb = Verb::from_u8(verb_byte).ok_or(EnvelopeError::UnknownVerb(verb_byte))?;
        let flags = header.get_u8();
        let id = header.get_u64();
        let mut host = [0u8; 16];
        header.copy_to_slice(&mut host);
        let len = header.get_u32() as usize;
        if len > MAX_PAYLOAD_BYTES {
            return Err(EnvelopeError::TooLarge(len));
        }
        if buf.len() < HEADER_BYTES + len {
            return Ok(None);
        }
        buf.advance(HEADER_BYTES);
        let payload = buf.split_to(len).freeze();
        Ok(Some(Envelope {
            verb,
            flags,
            id,
            from: NodeId(Uuid::from_bytes(host)),
            payload,
        }))
    }
}

/// Why bytes from a peer are not a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    #[error("messaging version {0} is not spoken here (this node speaks {MESSAGING_VERSION})")]
    Version(u8),
    #[error("unknown verb {0}")]
    UnknownVerb(u8),
    #[error("payload of {0} bytes is over the {MAX_PAYLOAD_BYTES}-byte limit")]
    TooLarge(usize),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Envelope {
        Envelope {
            verb: Verb::MutationRequest,
            flags: 0,
            id: 42,
            from: NodeId(Uuid::from_u128(0xabc)),
            payload: Bytes::from_static(b"hello"),
        }
    }

    #[test]
    fn round_trip_and_partial_input() {
        let mut buf = BytesMut::new();
        sample().encode(&mut buf).unwrap();
        let whole = buf.clone();
        for cut in 0..whole.len() {
            let mut part = BytesMut::from(&whole[..cut]);
            assert_eq!(Envelope::decode(&mut part).unwrap(), None, "cut at {cut}");
        }
        sample().encode(&mut buf).unwrap();
        assert_eq!(Envelope::decode(&mut buf).unwrap(), Some(sample()));
        assert_eq!(Envelope::decode(&mut buf).unwrap(), Some(sample()));
        assert!(buf.is_empty());
    }

    #[test]
    fn unknown_version_verb_and_oversized_length_are_refused() {
        let mut buf = BytesMut::new();
        sample().encode(&mut buf).unwrap();
        let mut v = buf.clone();
        v[0] = 9;
        assert_eq!(Envelope::decode(&mut v), Err(EnvelopeError::Version(9)));
        let mut verb = buf.clone();
        verb[1] = 250;
        assert_eq!(
            Envelope::decode(&mut verb),
            Err(EnvelopeError::UnknownVerb(250))
        );
        let mut len = buf.clone();
        len[HEADER_BYTES - 4..HEADER_BYTES].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            Envelope::decode(&mut len),
            Err(EnvelopeError::TooLarge(_))
        ));
    }

    #[test]
    fn every_verb_number_maps_back() {
        for v in 0..=255u8 {
            if let Some(verb) = Verb::from_u8(v) {
                assert_eq!(verb as u8, v);
            }
        }
    }
}
