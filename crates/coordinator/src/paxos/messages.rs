//! Paxos payloads and their binary form (tag byte, then fields; big-endian; lengths checked
//! against the bytes present).

use bytes::{Buf, BufMut, Bytes, BytesMut};
use helenus_cluster::locator::NodeId;
use uuid::Uuid;

use super::ballot::Ballot;

/// A decided (or proposed) update and the ballot it was proposed with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Commit {
    pub ballot: Ballot,
    pub update: Bytes,
}

/// A replica's current value of the partition and the ballot of the commit that wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadValue {
    pub value: Option<Bytes>,
    pub written: Ballot,
}

/// An acceptor's answer to a prepare.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Promise {
    pub promised: bool,
    /// The highest ballot this acceptor has promised (ours if `promised`).
    pub highest: Ballot,
    /// An accepted proposal not yet known committed.
    pub accepted: Option<Commit>,
    pub committed: Option<Commit>,
    pub read: ReadValue,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PaxosRequest {
    Prepare { key: Bytes, ballot: Ballot },
    Propose { key: Bytes, proposal: Commit },
    Commit { key: Bytes, commit: Commit },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PaxosReply {
    Promise(Promise),
    Accepted { ok: bool, highest: Ballot },
    Committed,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PaxosDecodeError {
    #[error("paxos message truncated")]
    Truncated,
    #[error("unknown paxos message tag {0}")]
    Tag(u8),
}

type Decoded<T> = Result<T, PaxosDecodeError>;

fn need(buf: &Bytes, n: usize) -> Decoded<()> {
    if buf.remaining() < n {
        return Err(PaxosDecodeError::Truncated);
    }
    Ok(())
}

fn put_ballot(out: &mut BytesMut, b: &Ballot) {
    out.put_i64(b.micros);
    out.put_slice(b.node.0.as_bytes());
}

fn get_ballot(buf: &mut Bytes) -> Decoded<Ballot> {
    need(buf, 24)?;
    let micros = buf.get_i64();
    let mut id = [0u8; 16];
    buf.copy_to_slice(&mut id);
    Ok(Ballot {
        micros,
        node: NodeId(Uuid::from_bytes(id)),
    })
}

fn put_bytes(out: &mut BytesMut, b: &[u8]) {
    out.put_u32(b.len() as u32);
    out.put_slice(b);
}

fn get_bytes(buf: &mut Bytes) -> Decoded<Bytes> {
    need(buf, 4)?;
    let len = buf.get_u32() as usize;
    need(buf, len)?;
    Ok(buf.split_to(len))
}

fn get_u8(buf: &mut Bytes) -> Decoded<u8> {
    need(buf, 1)?;
    Ok(buf.get_u8())
}

fn put_commit(out: &mut BytesMut, c: &Commit) {
    put_ballot(out, &c.ballot);
    put_bytes(out, &c.update);
}

fn get_commit(buf: &mut Bytes) -> Decoded<Commit> {
    Ok(Commit {
        ballot: get_ballot(buf)?,
        update: get_bytes(buf)?,
    })
}

fn put_opt_commit(out: &mut BytesMut, c: &Option<Commit>) {
    match c {
        Some(c) => {
            out.put_u8(1);
            put_commit(out, c);
        }
        None => out.put_u8(0),
    }
}

fn get_opt_commit(buf: &mut Bytes) -> Decoded<Option<Commit>> {
    Ok(match get_u8(buf)? {
        0 => None,
        _ => Some(get_commit(buf)?),
    })
}

impl PaxosRequest {
    pub fn encode(&self) -> Bytes {
        let mut out = BytesMut::new();
        match self {
            PaxosRequest::Prepare { key, ballot } => {
                out.put_u8(1);
                put_bytes(&mut out, key);
                put_ballot(&mut out, ballot);
            }
            PaxosRequest::Propose { key, proposal } => {
                out.put_u8(2);
                put_bytes(&mut out, key);
                put_commit(&mut out, proposal);
            }
            PaxosRequest::Commit { key, commit } => {
                out.put_u8(3);
                put_bytes(&mut out, key);
                put_commit(&mut out, commit);
            }
        }
        out.freeze()
    }

    pub fn decode(mut buf: Bytes) -> Decoded<PaxosRequest> {
        let tag = get_u8(&mut buf)?;
        let key = get_bytes(&mut buf)?;
        Ok(match tag {
            1 => PaxosRequest::Prepare {
                key,
                ballot: get_ballot(&mut buf)?,
            },
            2 => PaxosRequest::Propose {
                key,
                proposal: get_commit(&mut buf)?,
            },
            3 => PaxosRequest::Commit {
                key,
                commit: get_commit(&mut buf)?,
            },
            other => return Err(PaxosDecodeError::Tag(other)),
        })
    }
}

impl PaxosReply {
    pub fn encode(&self) -> Bytes {
        let mut out = BytesMut::new();
        match self {
            PaxosReply::Promise(p) => {
                out.put_u8(1);
                out.put_u8(u8::from(p.promised));
                put_ballot(&mut out, &p.highest);
                put_opt_commit(&mut out, &p.accepted);
                put_opt_commit(&mut out, &p.committed);
                match &p.read.value {
                    Some(v) => {
                        out.put_u8(1);
                        put_bytes(&mut out, v);
                    }
                    None => out.put_u8(0),
                }
                put_ballot(&mut out, &p.read.written);
            }
            PaxosReply::Accepted { ok, highest } => {
                out.put_u8(2);
                out.put_u8(u8::from(*ok));
                put_ballot(&mut out, highest);
            }
            PaxosReply::Committed => out.put_u8(3),
        }
        out.freeze()
    }

    pub fn decode(mut buf: Bytes) -> Decoded<PaxosReply> {
        Ok(match get_u8(&mut buf)? {
            1 => {
                let promised = get_u8(&mut buf)? != 0;
                let highest = get_ballot(&mut buf)?;
                let accepted = get_opt_commit(&mut buf)?;
                let committed = get_opt_commit(&mut buf)?;
                let value = match get_u8(&mut buf)? {
                    0 => None,
                    _ => Some(get_bytes(&mut buf)?),
                };
                let written = get_ballot(&mut buf)?;
                PaxosReply::Promise(Promise {
                    promised,
                    highest,
                    accepted,
                    committed,
                    read: ReadValue { value, written },
                })
            }
            2 => PaxosReply::Accepted {
                ok: get_u8(&mut buf)? != 0,
                highest: get_ballot(&mut buf)?,
            },
            3 => PaxosReply::Committed,
            other => return Err(PaxosDecodeError::Tag(other)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ballot(m: i64) -> Ballot {
        Ballot {
            micros: m,
            node: NodeId(Uuid::from_u128(3)),
        }
    }

    #[test]
    fn requests_and_replies_round_trip_and_truncations_fail() {
        let commit = Commit {
            ballot: ballot(5),
            update: Bytes::from_static(b"u"),
        };
        let requests = [
            PaxosRequest::Prepare {
                key: Bytes::from_static(b"k"),
                ballot: ballot(1),
            },
            PaxosRequest::Propose {
                key: Bytes::from_static(b"k"),
                proposal: commit.clone(),
            },
            PaxosRequest::Commit {
                key: Bytes::from_static(b"k"),
                commit: commit.clone(),
            },
        ];
        for r in requests {
            let bytes = r.encode();
            assert_eq!(PaxosRequest::decode(bytes.clone()).unwrap(), r);
            for cut in 0..bytes.len() {
                assert!(PaxosRequest::decode(bytes.slice(..cut)).is_err());
            }
        }
        let replies = [
            PaxosReply::Promise(Promise {
                promised: true,
                highest: ballot(9),
                accepted: Some(commit.clone()),
                committed: None,
                read: ReadValue {
                    value: Some(Bytes::from_static(b"v")),
                    written: ballot(2),
                },
            }),
            PaxosReply::Accepted {
                ok: false,
                highest: ballot(7),
            },
            PaxosReply::Committed,
        ];
        for r in replies {
            let bytes = r.encode();
            assert_eq!(PaxosReply::decode(bytes.clone()).unwrap(), r);
            for cut in 0..bytes.len() {
                assert!(PaxosReply::decode(bytes.slice(..cut)).is_err());
            }
        }
    }
}
