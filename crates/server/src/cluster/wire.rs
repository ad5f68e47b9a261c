//! Read commands between nodes: a table and a `ReadQuery`, in a small versioned binary form.
//! Mutations travel in the storage model's own frozen encoding (`helenus_storage`'s
//! `encode_mutations`); this is the only other payload the data path defines.
//!
//! ```text
//! [version u8][table id 16][partitions][slices][flags u8][limits][now_s i64][resume_after]
//! ```
//! Lengths are u32 and checked against what is left, so a hostile peer cannot make a node
//! allocate more than the message it sent.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use helenus_storage as st;

const VERSION: u8 = 1;

/// Why a read command could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed read command: {0}")]
pub struct WireError(&'static str);

pub fn encode_read(table: st::TableId, q: &st::ReadQuery) -> Bytes {
    let mut out = BytesMut::with_capacity(128);
    out.put_u8(VERSION);
    out.put_slice(&table);
    match &q.partitions {
        st::PartitionRange::Single { key, token } => {
            out.put_u8(0);
            out.put_i64(*token);
            put_bytes(&mut out, key);
        }
        st::PartitionRange::Range { start, end } => {
            out.put_u8(1);
            put_bound(&mut out, start);
            put_bound(&mut out, end);
        }
    }
    out.put_u32(len32(q.slices.len()));
    for (a, b) in &q.slices {
        put_clustering_bound(&mut out, a);
        put_clustering_bound(&mut out, b);
    }
    out.put_u8(u8::from(q.reversed));
    for limit in [q.row_limit, q.per_partition_limit, q.partition_limit] {
        out.put_u64(limit.map_or(u64::MAX, |l| l as u64));
    }
    out.put_i64(q.now_s);
    match &q.resume_after {
        None => out.put_u8(0),
        Some(prefix) => {
            out.put_u8(1);
            put_prefix(&mut out, prefix);
        }
    }
    out.freeze()
}

pub fn decode_read(mut buf: Bytes) -> Result<(st::TableId, st::ReadQuery), WireError> {
    if get_u8(&mut buf)? != VERSION {
        return Err(WireError("unknown version"));
    }
    let mut table = [0u8; 16];
    need(&buf, 16)?;
    buf.copy_to_slice(&mut table);
    let partitions = match get_u8(&mut buf)? {
        0 => {
            need(&buf, 8)?;
            let token = buf.get_i64();
            st::PartitionRange::Single {
                token,
                key: get_bytes(&mut buf)?,
            }
        }
        1 => st::PartitionRange::Range {
            start: get_bound(&mut buf)?,
            end: get_bound(&mut buf)?,
        },
        _ => return Err(WireError("partition range kind")),
    };
    let n = get_len(&mut buf, 2)?;
    let mut slices = Vec::with_capacity(n);
    for _ in 0..n {
        slices.push((
            get_clustering_bound(&mut buf)?,
            get_clustering_bound(&mut buf)?,
        ));
    }
    let reversed = get_u8(&mut buf)? != 0;
    need(&buf, 8 * 4)?;
    let mut limit = || match buf.get_u64() {
        u64::MAX => None,
        l => Some(usize::try_from(l).unwrap_or(usize::MAX)),
    };
    let (row_limit, per_partition_limit, partition_limit) = (limit(), limit(), limit());
    let now_s = buf.get_i64();
    let resume_after = match get_u8(&mut buf)? {
        0 => None,
        _ => Some(get_prefix(&mut buf)?),
    };
    Ok((
        table,
        st::ReadQuery {
            columns: None,
            partitions,
            slices,
            reversed,
            row_limit,
            per_partition_limit,
            partition_limit,
            now_s,
            resume_after,
        },
    ))
}

fn len32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn put_bytes(out: &mut BytesMut, b: &[u8]) {
    out.put_u32(len32(b.len()));
    out.put_slice(b);
}

fn put_prefix(out: &mut BytesMut, prefix: &[Bytes]) {
    out.put_u32(len32(prefix.len()));
    for p in prefix {
        put_bytes(out, p);
    }
}

fn put_bound(out: &mut BytesMut, b: &st::PartitionBound) {
    match b {
        st::PartitionBound::Unbounded => out.put_u8(0),
        st::PartitionBound::Token { token, inclusive } => {
            out.put_u8(1);
            out.put_i64(*token);
            out.put_u8(u8::from(*inclusive));
        }
        st::PartitionBound::Key {
            token,
            key,
            inclusive,
        } => {
            out.put_u8(2);
            out.put_i64(*token);
            out.put_u8(u8::from(*inclusive));
            put_bytes(out, key);
        }
    }
}

fn put_clustering_bound(out: &mut BytesMut, b: &st::ClusteringBound) {
    out.put_u8(match b.kind {
        st::BoundKind::Inclusive => 0,
        st::BoundKind::Exclusive => 1,
    });
    put_prefix(out, &b.prefix);
}

fn need(buf: &Bytes, n: usize) -> Result<(), WireError> {
    if buf.remaining() < n {
        return Err(WireError("truncated"));
    }
    Ok(())
}

fn get_u8(buf: &mut Bytes) -> Result<u8, WireError> {
    need(buf, 1)?;
    Ok(buf.get_u8())
}

/// A count of items each at least `min_item_bytes` long: more than the rest could hold is a lie.
fn get_len(buf: &mut Bytes, min_item_bytes: usize) -> Result<usize, WireError> {
    need(buf, 4)?;
    let n = buf.get_u32() as usize;
    if n.saturating_mul(min_item_bytes.max(1)) > buf.remaining() {
        return Err(WireError("length past the end"));
    }
    Ok(n)
}

fn get_bytes(buf: &mut Bytes) -> Result<Bytes, WireError> {
    let n = get_len(buf, 1)?;
    Ok(buf.split_to(n))
}

fn get_prefix(buf: &mut Bytes) -> Result<Vec<Bytes>, WireError> {
    let n = get_len(buf, 4)?;
    (0..n).map(|_| get_bytes(buf)).collect()
}

fn get_bound(buf: &mut Bytes) -> Result<st::PartitionBound, WireError> {
    Ok(match get_u8(buf)? {
        0 => st::PartitionBound::Unbounded,
        1 => {
            need(buf, 9)?;
            st::PartitionBound::Token {
                token: buf.get_i64(),
                inclusive: buf.get_u8() != 0,
            }
        }
        2 => {
            need(buf, 9)?;
            let token = buf.get_i64();
            let inclusive = buf.get_u8() != 0;
            st::PartitionBound::Key {
                token,
                inclusive,
                key: get_bytes(buf)?,
            }
        }
        _ => return Err(WireError("partition bound kind")),
    })
}

fn get_clustering_bound(buf: &mut Bytes) -> Result<st::ClusteringBound, WireError> {
    let kind = match get_u8(buf)? {
        0 => st::BoundKind::Inclusive,
        1 => st::BoundKind::Exclusive,
        _ => return Err(WireError("clustering bound kind")),
    };
    Ok(st::ClusteringBound {
        prefix: get_prefix(buf)?,
        kind,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn queries() -> Vec<st::ReadQuery> {
        let bound = |p: &[&[u8]], kind| st::ClusteringBound {
            prefix: p.iter().map(|b| Bytes::copy_from_slice(b)).collect(),
            kind,
        };
        vec![
            st::ReadQuery {
                columns: None,
                partitions: st::PartitionRange::Single {
                    key: Bytes::from_static(b"\0\0\0\x07"),
                    token: -42,
                },
                slices: vec![(
                    bound(&[b"a"], st::BoundKind::Exclusive),
                    bound(&[b"b", b"c"], st::BoundKind::Inclusive),
                )],
                reversed: true,
                row_limit: Some(10),
                per_partition_limit: None,
                partition_limit: Some(1),
                now_s: 1_700_000_000,
                resume_after: Some(vec![Bytes::from_static(b"x")]),
            },
            st::ReadQuery {
                columns: None,
                partitions: st::PartitionRange::Range {
                    start: st::PartitionBound::Key {
                        token: i64::MIN,
                        key: Bytes::from_static(b"k"),
                        inclusive: false,
                    },
                    end: st::PartitionBound::Token {
                        token: 5,
                        inclusive: true,
                    },
                },
                slices: Vec::new(),
                reversed: false,
                row_limit: None,
                per_partition_limit: Some(3),
                partition_limit: None,
                now_s: 0,
                resume_after: None,
            },
        ]
    }

    fn same(a: &st::ReadQuery, b: &st::ReadQuery) {
        assert_eq!(a.partitions, b.partitions);
        assert_eq!(a.slices, b.slices);
        assert_eq!(a.reversed, b.reversed);
        assert_eq!(a.row_limit, b.row_limit);
        assert_eq!(a.per_partition_limit, b.per_partition_limit);
        assert_eq!(a.partition_limit, b.partition_limit);
        assert_eq!(a.now_s, b.now_s);
        assert_eq!(a.resume_after, b.resume_after);
    }

    #[test]
    fn read_commands_round_trip() {
        for q in queries() {
            let (table, back) = decode_read(encode_read([7; 16], &q)).unwrap();
            assert_eq!(table, [7; 16]);
            same(&q, &back);
        }
    }

    #[test]
    fn every_truncation_and_corruption_is_an_error_not_a_panic() {
        for q in queries() {
            let full = encode_read([1; 16], &q);
            for cut in 0..full.len() {
                assert!(decode_read(full.slice(..cut)).is_err(), "cut at {cut}");
            }
            let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
            for _ in 0..2000 {
                let mut bytes = full.to_vec();
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = (x as usize) % bytes.len();
                bytes[i] = (x >> 32) as u8;
                let _ = decode_read(Bytes::from(bytes));
            }
        }
    }
}
