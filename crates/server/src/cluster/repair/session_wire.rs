//! The messages of incremental repair sessions (session.rs): prepare requests, finalize
//! requests, the participants' answers, and the partitions a session's sync writes.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use helenus_cluster::locator::{NodeId, TokenRange};
use helenus_storage as st;
use uuid::Uuid;

/// What the coordinator asks a participant to prepare.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PrepareRequest {
    pub id: Uuid,
    pub started_ms: i64,
    pub keyspace: String,
    pub participants: Vec<NodeId>,
    pub tables: Vec<st::TableId>,
    pub ranges: Vec<TokenRange>,
}

pub(super) fn encode_prepare(p: &PrepareRequest) -> Bytes {
    let mut out = BytesMut::new();
    out.put_slice(p.id.as_bytes());
    out.put_i64(p.started_ms);
    out.put_u16(u16::try_from(p.keyspace.len()).unwrap_or(u16::MAX));
    out.put_slice(p.keyspace.as_bytes());
    out.put_u16(u16::try_from(p.participants.len()).unwrap_or(u16::MAX));
    for n in &p.participants {
        out.put_slice(n.0.as_bytes());
    }
    out.put_u16(u16::try_from(p.tables.len()).unwrap_or(u16::MAX));
    for t in &p.tables {
        out.put_slice(t);
    }
    out.put_u32(u32::try_from(p.ranges.len()).unwrap_or(u32::MAX));
    for r in &p.ranges {
        out.put_i64(r.start);
        out.put_i64(r.end);
    }
    out.freeze()
}

pub(super) fn take16(b: &mut Bytes) -> Option<[u8; 16]> {
    let mut out = [0u8; 16];
    (b.remaining() >= 16).then(|| b.copy_to_slice(&mut out))?;
    Some(out)
}

pub(super) fn decode_prepare(mut b: Bytes) -> Option<PrepareRequest> {
    let id = Uuid::from_bytes(take16(&mut b)?);
    if b.remaining() < 10 {
        return None;
    }
    let started_ms = b.get_i64();
    let len = b.get_u16() as usize;
    if b.remaining() < len {
        return None;
    }
    let keyspace = String::from_utf8(b.split_to(len).to_vec()).ok()?;
    if b.remaining() < 2 {
        return None;
    }
    let participants = (0..b.get_u16())
        .map(|_| take16(&mut b).map(|n| NodeId(Uuid::from_bytes(n))))
        .collect::<Option<Vec<_>>>()?;
    if b.remaining() < 2 {
        return None;
    }
    let tables = (0..b.get_u16())
        .map(|_| take16(&mut b))
        .collect::<Option<Vec<_>>>()?;
    if b.remaining() < 4 {
        return None;
    }
    let n = b.get_u32() as usize;
    if b.remaining() != n.checked_mul(16)? {
        return None;
    }
    let ranges = (0..n)
        .map(|_| TokenRange::new(b.get_i64(), b.get_i64()))
        .collect();
    Some(PrepareRequest {
        id,
        started_ms,
        keyspace,
        participants,
        tables,
        ranges,
    })
}

/// A prepare's or finalize's answer: `u8 1` for done, or `u8 0` and why not.
pub(super) fn outcome_payload(outcome: &Result<(), String>) -> Bytes {
    let mut out = BytesMut::new();
    match outcome {
        Ok(()) => out.put_u8(1),
        Err(e) => {
            out.put_u8(0);
            out.put_slice(e.as_bytes());
        }
    }
    out.freeze()
}

pub(super) fn decode_outcome(mut b: Bytes) -> Result<(), String> {
    match b.first() {
        Some(1) => Ok(()),
        Some(0) => {
            b.advance(1);
            Err(String::from_utf8_lossy(&b).into_owned())
        }
        _ => Err("malformed answer".into()),
    }
}

pub(super) fn finalize_request(id: Uuid, success: bool, repaired_at_ms: i64) -> Bytes {
    let mut out = BytesMut::with_capacity(25);
    out.put_slice(id.as_bytes());
    out.put_u8(u8::from(success));
    out.put_i64(repaired_at_ms);
    out.freeze()
}

pub(super) fn decode_finalize(mut b: Bytes) -> Option<(Uuid, bool, i64)> {
    if b.len() != 25 {
        return None;
    }
    let id = Uuid::from_bytes(take16(&mut b)?);
    let success = b.get_u8() == 1;
    Some((id, success, b.get_i64()))
}

pub(super) fn session_write_request(
    session: [u8; 16],
    table: st::TableId,
    partitions: &[st::Mutation],
) -> Bytes {
    let encoded = helenus_mutation::encode_mutations(partitions);
    let mut out = BytesMut::with_capacity(32 + encoded.len());
    out.put_slice(&session);
    out.put_slice(&table);
    out.put_slice(&encoded);
    out.freeze()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn prepare_requests_round_trip_and_bad_ones_are_refused() {
        let request = PrepareRequest {
            id: Uuid::from_u128(42),
            started_ms: 1_700_000_000_000,
            keyspace: "ks1".into(),
            participants: vec![NodeId(Uuid::from_u128(1)), NodeId(Uuid::from_u128(2))],
            tables: vec![[7; 16], [9; 16]],
            ranges: vec![TokenRange::new(-5, 10), TokenRange::new(10, -5)],
        };
        let encoded = encode_prepare(&request);
        assert_eq!(decode_prepare(encoded.clone()), Some(request));
        assert_eq!(decode_prepare(encoded.slice(..encoded.len() - 1)), None);
        let mut longer = BytesMut::from(&encoded[..]);
        longer.put_u8(0);
        assert_eq!(decode_prepare(longer.freeze()), None);
        assert_eq!(decode_prepare(Bytes::from_static(&[1; 20])), None);
    }

    #[test]
    fn outcomes_and_finalize_requests_round_trip() {
        assert_eq!(decode_outcome(outcome_payload(&Ok(()))), Ok(()));
        assert_eq!(
            decode_outcome(outcome_payload(&Err("disk full".into()))),
            Err("disk full".into())
        );
        assert!(decode_outcome(Bytes::new()).is_err());
        let id = Uuid::from_u128(5);
        assert_eq!(
            decode_finalize(finalize_request(id, true, 77)),
            Some((id, true, 77))
        );
        assert_eq!(
            decode_finalize(finalize_request(id, false, -1)),
            Some((id, false, -1))
        );
        assert_eq!(decode_finalize(Bytes::from_static(&[0; 24])), None);
    }
}
