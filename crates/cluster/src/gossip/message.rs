//! Gossip's three messages (Cassandra's GossipDigestSyn/Ack/Ack2) and their binary form.
//!
//! Syn carries digests (node, generation, highest version seen); Ack answers with the states the
//! initiator lacks and digests of what the responder lacks; Ack2 sends those. Decoding checks
//! every length against the bytes present, since a peer's bytes are input like a client's.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use uuid::Uuid;

use super::state::{AppKey, EndpointState, Generation, Version, VersionedValue};
use crate::locator::NodeId;

/// What one node knows of another, in brief.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Digest {
    pub node: NodeId,
    pub generation: Generation,
    pub max_version: Version,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Syn {
    pub cluster_name: String,
    pub digests: Vec<Digest>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ack {
    /// What the responder wants: states newer than these versions.
    pub requests: Vec<Digest>,
    pub deltas: Vec<(NodeId, EndpointState)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ack2 {
    pub deltas: Vec<(NodeId, EndpointState)>,
}

/// Bytes that are not a gossip message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GossipDecodeError {
    #[error("gossip message truncated")]
    Truncated,
    #[error("gossip string is not UTF-8")]
    Utf8,
    #[error("unknown application state {0}")]
    UnknownKey(u8),
}

type Decoded<T> = Result<T, GossipDecodeError>;

fn need(buf: &Bytes, n: usize) -> Decoded<()> {
    if buf.remaining() < n {
        return Err(GossipDecodeError::Truncated);
    }
    Ok(())
}

fn get_u8(buf: &mut Bytes) -> Decoded<u8> {
    need(buf, 1)?;
    Ok(buf.get_u8())
}

fn get_u32(buf: &mut Bytes) -> Decoded<u32> {
    need(buf, 4)?;
    Ok(buf.get_u32())
}

fn get_u64(buf: &mut Bytes) -> Decoded<u64> {
    need(buf, 8)?;
    Ok(buf.get_u64())
}

fn get_node(buf: &mut Bytes) -> Decoded<NodeId> {
    need(buf, 16)?;
    let mut b = [0u8; 16];
    buf.copy_to_slice(&mut b);
    Ok(NodeId(Uuid::from_bytes(b)))
}

fn get_string(buf: &mut Bytes) -> Decoded<String> {
    let len = get_u32(buf)? as usize;
    need(buf, len)?;
    let raw = buf.split_to(len);
    String::from_utf8(raw.to_vec()).map_err(|_| GossipDecodeError::Utf8)
}

/// A count, refused if it could not possibly fit in what is left (each item takes `min_item`).
fn get_count(buf: &mut Bytes, min_item: usize) -> Decoded<usize> {
    let n = get_u32(buf)? as usize;
    if n.saturating_mul(min_item) > buf.remaining() {
        return Err(GossipDecodeError::Truncated);
    }
    Ok(n)
}

fn put_string(out: &mut BytesMut, s: &str) {
    out.put_u32(s.len() as u32);
    out.put_slice(s.as_bytes());
}

fn put_digests(out: &mut BytesMut, digests: &[Digest]) {
    out.put_u32(digests.len() as u32);
    for d in digests {
        out.put_slice(d.node.0.as_bytes());
        out.put_i64(d.generation);
        out.put_u64(d.max_version);
    }
}

fn get_digests(buf: &mut Bytes) -> Decoded<Vec<Digest>> {
    let n = get_count(buf, 32)?;
    (0..n)
        .map(|_| {
            Ok(Digest {
                node: get_node(buf)?,
                generation: get_u64(buf)? as i64,
                max_version: get_u64(buf)?,
            })
        })
        .collect()
}

fn put_deltas(out: &mut BytesMut, deltas: &[(NodeId, EndpointState)]) {
    out.put_u32(deltas.len() as u32);
    for (node, state) in deltas {
        out.put_slice(node.0.as_bytes());
        out.put_i64(state.generation);
        out.put_u64(state.heartbeat);
        out.put_u32(state.states.len() as u32);
        for (key, value) in &state.states {
            out.put_u8(*key as u8);
            out.put_u64(value.version);
            put_string(out, &value.value);
        }
    }
}

fn get_deltas(buf: &mut Bytes) -> Decoded<Vec<(NodeId, EndpointState)>> {
    let n = get_count(buf, 36)?;
    let mut deltas = Vec::with_capacity(n);
    for _ in 0..n {
        let node = get_node(buf)?;
        let mut state = EndpointState::new(get_u64(buf)? as i64);
        state.heartbeat = get_u64(buf)?;
        let keys = get_count(buf, 13)?;
        for _ in 0..keys {
            let raw = get_u8(buf)?;
            let key = AppKey::from_u8(raw).ok_or(GossipDecodeError::UnknownKey(raw))?;
            let version = get_u64(buf)?;
            let value = get_string(buf)?;
            state.states.insert(key, VersionedValue { value, version });
        }
        deltas.push((node, state));
    }
    Ok(deltas)
}

impl Syn {
    pub fn encode(&self) -> Bytes {
        let mut out = BytesMut::new();
        put_string(&mut out, &self.cluster_name);
        put_digests(&mut out, &self.digests);
        out.freeze()
    }

    pub fn decode(mut buf: Bytes) -> Decoded<Syn> {
        Ok(Syn {
            cluster_name: get_string(&mut buf)?,
            digests: get_digests(&mut buf)?,
        })
    }
}

impl Ack {
    pub fn encode(&self) -> Bytes {
        let mut out = BytesMut::new();
        put_digests(&mut out, &self.requests);
        put_deltas(&mut out, &self.deltas);
        out.freeze()
    }

    pub fn decode(mut buf: Bytes) -> Decoded<Ack> {
        Ok(Ack {
            requests: get_digests(&mut buf)?,
            deltas: get_deltas(&mut buf)?,
        })
    }
}

impl Ack2 {
    pub fn encode(&self) -> Bytes {
        let mut out = BytesMut::new();
        put_deltas(&mut out, &self.deltas);
        out.freeze()
    }

    pub fn decode(mut buf: Bytes) -> Decoded<Ack2> {
        Ok(Ack2 {
            deltas: get_deltas(&mut buf)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> EndpointState {
        let mut s = EndpointState::new(1_700_000_000);
        s.heartbeat = 42;
        s.states.insert(
            AppKey::Tokens,
            VersionedValue {
                value: "-5,7".into(),
                version: 3,
            },
        );
        s.states.insert(
            AppKey::Dc,
            VersionedValue {
                value: "dc1".into(),
                version: 1,
            },
        );
        s
    }

    #[test]
    fn messages_round_trip() {
        let node = NodeId(Uuid::from_u128(5));
        let digest = Digest {
            node,
            generation: -1,
            max_version: 9,
        };
        let syn = Syn {
            cluster_name: "Test Cluster".into(),
            digests: vec![digest],
        };
        assert_eq!(Syn::decode(syn.encode()).unwrap(), syn);
        let ack = Ack {
            requests: vec![digest],
            deltas: vec![(node, state())],
        };
        assert_eq!(Ack::decode(ack.encode()).unwrap(), ack);
        let ack2 = Ack2 {
            deltas: vec![(node, state())],
        };
        assert_eq!(Ack2::decode(ack2.encode()).unwrap(), ack2);
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let node = NodeId(Uuid::from_u128(5));
        let bytes = Ack {
            requests: vec![],
            deltas: vec![(node, state())],
        }
        .encode();
        for cut in 0..bytes.len() {
            assert!(Ack::decode(bytes.slice(..cut)).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn a_huge_count_is_refused_before_allocating() {
        let mut out = BytesMut::new();
        out.put_u32(u32::MAX);
        assert_eq!(
            Ack2::decode(out.freeze()),
            Err(GossipDecodeError::Truncated)
        );
    }
}
