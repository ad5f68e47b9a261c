//! The paging state handed to clients: where the last page stopped. Opaque to drivers; versioned so
//! a future format can be told apart.
//!
//! Layout: `[u8 version=1][i64 token][u32 len][partition key][u16 n]{[u32 len][clustering value]}*n
//! [u64 rows returned][u64 rows returned in the current partition]`.

use super::error::{ExecError, ExecResult};
use bytes::{Buf, BufMut, Bytes, BytesMut};

const VERSION: u8 = 1;
/// No partition key or clustering value is larger than this (Cassandra's own limit is 64 KiB for
/// keys; values are bounded by the frame size).
const MAX_COMPONENT_BYTES: usize = 16 * 1024 * 1024;
const MAX_CLUSTERING_COMPONENTS: usize = 1024;

#[derive(Debug, Clone, PartialEq)]
pub struct PagingState {
    pub token: i64,
    pub partition_key: Bytes,
    pub clustering: Vec<Bytes>,
    pub rows_returned: usize,
    pub partition_rows_returned: usize,
}

fn bad() -> ExecError {
    ExecError::Protocol("Invalid value for the paging state".into())
}

impl PagingState {
    pub fn encode(&self) -> Bytes {
        let mut out = BytesMut::new();
        out.put_u8(VERSION);
        out.put_i64(self.token);
        out.put_u32(self.partition_key.len() as u32);
        out.put_slice(&self.partition_key);
        out.put_u16(self.clustering.len() as u16);
        for c in &self.clustering {
            out.put_u32(c.len() as u32);
            out.put_slice(c);
        }
        out.put_u64(self.rows_returned as u64);
        out.put_u64(self.partition_rows_returned as u64);
        out.freeze()
    }

    pub fn decode(b: &[u8]) -> ExecResult<PagingState> {
        let mut buf = b;
        let take = |buf: &mut &[u8]| -> ExecResult<Bytes> {
            if buf.remaining() < 4 {
                return Err(bad());
            }
            let n = buf.get_u32() as usize;
            if n > MAX_COMPONENT_BYTES || buf.remaining() < n {
                return Err(bad());
            }
            let v = Bytes::copy_from_slice(&buf[..n]);
            buf.advance(n);
            Ok(v)
        };
        if buf.remaining() < 9 || buf.get_u8() != VERSION {
            return Err(bad());
        }
        let token = buf.get_i64();
        let partition_key = take(&mut buf)?;
        if buf.remaining() < 2 {
            return Err(bad());
        }
        let n = buf.get_u16() as usize;
        if n > MAX_CLUSTERING_COMPONENTS {
            return Err(bad());
        }
        let mut clustering = Vec::with_capacity(n.min(buf.remaining() / 4));
        for _ in 0..n {
            clustering.push(take(&mut buf)?);
        }
        if buf.remaining() != 16 {
            return Err(bad());
        }
        let rows_returned = buf.get_u64() as usize;
        let partition_rows_returned = buf.get_u64() as usize;
        Ok(PagingState {
            token,
            partition_key,
            clustering,
            rows_returned,
            partition_rows_returned,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_garbage() {
        let p = PagingState {
            token: -5,
            partition_key: Bytes::from_static(b"key"),
            clustering: vec![Bytes::from_static(b"a"), Bytes::new()],
            rows_returned: 100,
            partition_rows_returned: 3,
        };
        assert_eq!(PagingState::decode(&p.encode()).unwrap(), p);
        let enc = p.encode();
        for cut in 0..enc.len() {
            assert!(PagingState::decode(&enc[..cut]).is_err());
        }
        assert!(PagingState::decode(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]).is_err());
    }
}
