//! The spec's primitive notations (native_protocol_v5.spec §3): a bounds-checked zero-copy
//! [`Reader`] over `Bytes` and the matching writers over `BytesMut`.
//!
//! Every length read from the wire is checked against the bytes that remain *before* anything is
//! allocated or sliced, and list counts are capped by the smallest possible encoded element, so a
//! hostile length can never make us reserve more than a small multiple of the input.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::consistency::Consistency;
use crate::error::{EncodeError, WireError};
use crate::value::Value;

/// [string map]
pub type StringMap = BTreeMap<String, String>;
/// [string multimap]
pub type StringMultimap = BTreeMap<String, Vec<String>>;
/// [bytes map]; values may be null.
pub type BytesMap = BTreeMap<String, Option<Bytes>>;

/// A cursor over one frame body. Reads return `Bytes` slices that share the frame's buffer.
#[derive(Debug, Clone)]
pub struct Reader {
    buf: Bytes,
}

impl Reader {
    /// Wraps a body.
    pub fn new(buf: Bytes) -> Self {
        Reader { buf }
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    /// The unread tail, without consuming it.
    pub fn rest(&self) -> &Bytes {
        &self.buf
    }

    fn need(&self, n: usize) -> Result<(), WireError> {
        if self.buf.len() < n {
            return Err(WireError::Truncated {
                needed: n,
                remaining: self.buf.len(),
            });
        }
        Ok(())
    }

    pub fn read_u8(&mut self) -> Result<u8, WireError> {
        self.need(1)?;
        Ok(self.buf.get_u8())
    }

    /// [short] (unsigned 16-bit).
    pub fn read_u16(&mut self) -> Result<u16, WireError> {
        self.need(2)?;
        Ok(self.buf.get_u16())
    }

    pub fn read_i16(&mut self) -> Result<i16, WireError> {
        self.need(2)?;
        Ok(self.buf.get_i16())
    }

    /// [int]
    pub fn read_i32(&mut self) -> Result<i32, WireError> {
        self.need(4)?;
        Ok(self.buf.get_i32())
    }

    /// [long]
    pub fn read_i64(&mut self) -> Result<i64, WireError> {
        self.need(8)?;
        Ok(self.buf.get_i64())
    }

    /// Exactly `n` raw bytes, zero-copy.
    pub fn read_slice(&mut self, n: usize) -> Result<Bytes, WireError> {
        self.need(n)?;
        Ok(self.buf.split_to(n))
    }

    fn utf8(b: Bytes) -> Result<String, WireError> {
        match std::str::from_utf8(&b) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => Err(WireError::InvalidUtf8),
        }
    }

    /// [string]: [short] n, then n UTF-8 bytes.
    pub fn read_string(&mut self) -> Result<String, WireError> {
        let n = self.read_u16()? as usize;
        let b = self.read_slice(n)?;
        Self::utf8(b)
    }

    /// [long string]: [int] n, then n UTF-8 bytes.
    pub fn read_long_string(&mut self) -> Result<String, WireError> {
        let n = self.read_i32()?;
        let n = usize::try_from(n).map_err(|_| WireError::NegativeLength(n.into()))?;
        let b = self.read_slice(n)?;
        Self::utf8(b)
    }

    /// [uuid]: 16 bytes.
    pub fn read_uuid(&mut self) -> Result<[u8; 16], WireError> {
        self.need(16)?;
        let mut id = [0u8; 16];
        self.buf.copy_to_slice(&mut id);
        Ok(id)
    }

    /// Reads a [short] element count and checks that `count * min_element_bytes` can still fit,
    /// so the caller can `Vec::with_capacity(count)` safely.
    fn read_count(&mut self, min_element_bytes: usize) -> Result<usize, WireError> {
        let n = self.read_u16()? as usize;
        self.check_count(n, min_element_bytes)
    }

    /// Same as `read_count` for an [int] count.
    pub(crate) fn read_int_count(&mut self, min_element_bytes: usize) -> Result<usize, WireError> {
        let n = self.read_i32()?;
        let n = usize::try_from(n).map_err(|_| WireError::NegativeLength(n.into()))?;
        self.check_count(n, min_element_bytes)
    }

    fn check_count(&self, n: usize, min_element_bytes: usize) -> Result<usize, WireError> {
        let needed = n.saturating_mul(min_element_bytes.max(1));
        if needed > self.remaining() {
            return Err(WireError::Truncated {
                needed,
                remaining: self.remaining(),
            });
        }
        Ok(n)
    }

    /// Capacity that is safe to reserve for `n` elements (never more than the input could hold).
    pub(crate) fn capped(&self, n: usize) -> usize {
        n.min(self.remaining())
    }

    /// [string list]
    pub fn read_string_list(&mut self) -> Result<Vec<String>, WireError> {
        let n = self.read_count(2)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.read_string()?);
        }
        Ok(out)
    }

    /// [bytes]: [int] n; n < 0 is null.
    pub fn read_bytes(&mut self) -> Result<Option<Bytes>, WireError> {
        let n = self.read_i32()?;
        if n < 0 {
            return Ok(None);
        }
        self.read_slice(n as usize).map(Some)
    }

    /// [value]: like [bytes] but -1 is null, -2 is unset and other negatives are invalid.
    pub fn read_value(&mut self) -> Result<Value, WireError> {
        let n = self.read_i32()?;
        match n {
            -1 => Ok(Value::Null),
            -2 => Ok(Value::Unset),
            n if n < 0 => Err(WireError::NegativeLength(n.into())),
            n => Ok(Value::Bytes(self.read_slice(n as usize)?)),
        }
    }

    /// [short bytes]
    pub fn read_short_bytes(&mut self) -> Result<Bytes, WireError> {
        let n = self.read_u16()? as usize;
        self.read_slice(n)
    }

    /// [inetaddr]: [byte] n (4 or 16), then the address.
    pub fn read_inetaddr(&mut self) -> Result<IpAddr, WireError> {
        let n = self.read_u8()?;
        match n {
            4 => {
                self.need(4)?;
                let mut a = [0u8; 4];
                self.buf.copy_to_slice(&mut a);
                Ok(IpAddr::V4(Ipv4Addr::from(a)))
            }
            16 => {
                self.need(16)?;
                let mut a = [0u8; 16];
                self.buf.copy_to_slice(&mut a);
                Ok(IpAddr::V6(Ipv6Addr::from(a)))
            }
            n => Err(WireError::InvalidInetLength(n)),
        }
    }

    /// [inet]: [inetaddr] then [int] port.
    pub fn read_inet(&mut self) -> Result<SocketAddr, WireError> {
        let ip = self.read_inetaddr()?;
        let port = self.read_i32()?;
        let port = u16::try_from(port).map_err(|_| WireError::Invalid("inet port out of range"))?;
        Ok(SocketAddr::new(ip, port))
    }

    /// [consistency]
    pub fn read_consistency(&mut self) -> Result<Consistency, WireError> {
        let c = self.read_u16()?;
        Consistency::from_code(c).ok_or(WireError::UnknownConsistency(c))
    }

    /// [string map]
    pub fn read_string_map(&mut self) -> Result<StringMap, WireError> {
        let n = self.read_count(4)?;
        let mut out = StringMap::new();
        for _ in 0..n {
            let k = self.read_string()?;
            let v = self.read_string()?;
            out.insert(k, v);
        }
        Ok(out)
    }

    /// [string multimap]
    pub fn read_string_multimap(&mut self) -> Result<StringMultimap, WireError> {
        let n = self.read_count(4)?;
        let mut out = StringMultimap::new();
        for _ in 0..n {
            let k = self.read_string()?;
            let v = self.read_string_list()?;
            out.insert(k, v);
        }
        Ok(out)
    }

    /// [bytes map]
    pub fn read_bytes_map(&mut self) -> Result<BytesMap, WireError> {
        let n = self.read_count(6)?;
        let mut out = BytesMap::new();
        for _ in 0..n {
            let k = self.read_string()?;
            let v = self.read_bytes()?;
            out.insert(k, v);
        }
        Ok(out)
    }
}

fn short_len(what: &'static str, len: usize) -> Result<u16, EncodeError> {
    u16::try_from(len).map_err(|_| EncodeError::TooLong { what, len })
}

fn int_len(what: &'static str, len: usize) -> Result<i32, EncodeError> {
    i32::try_from(len).map_err(|_| EncodeError::TooLong { what, len })
}

/// [string]
pub fn write_string(out: &mut BytesMut, s: &str) -> Result<(), EncodeError> {
    out.put_u16(short_len("string", s.len())?);
    out.put_slice(s.as_bytes());
    Ok(())
}

/// [long string]
pub fn write_long_string(out: &mut BytesMut, s: &str) -> Result<(), EncodeError> {
    out.put_i32(int_len("long string", s.len())?);
    out.put_slice(s.as_bytes());
    Ok(())
}

/// [string list]
pub fn write_string_list<S: AsRef<str>>(out: &mut BytesMut, l: &[S]) -> Result<(), EncodeError> {
    out.put_u16(short_len("string list", l.len())?);
    for s in l {
        write_string(out, s.as_ref())?;
    }
    Ok(())
}

/// [bytes]; `None` is written as null (-1).
pub fn write_bytes(out: &mut BytesMut, b: Option<&[u8]>) -> Result<(), EncodeError> {
    match b {
        None => out.put_i32(-1),
        Some(b) => {
            out.put_i32(int_len("bytes", b.len())?);
            out.put_slice(b);
        }
    }
    Ok(())
}

/// [value]
pub fn write_value(out: &mut BytesMut, v: &Value) -> Result<(), EncodeError> {
    match v {
        Value::Null => out.put_i32(-1),
        Value::Unset => out.put_i32(-2),
        Value::Bytes(b) => write_bytes(out, Some(b))?,
    }
    Ok(())
}

/// [short bytes]
pub fn write_short_bytes(out: &mut BytesMut, b: &[u8]) -> Result<(), EncodeError> {
    out.put_u16(short_len("short bytes", b.len())?);
    out.put_slice(b);
    Ok(())
}

/// [inetaddr]
pub fn write_inetaddr(out: &mut BytesMut, ip: &IpAddr) {
    match ip {
        IpAddr::V4(a) => {
            out.put_u8(4);
            out.put_slice(&a.octets());
        }
        IpAddr::V6(a) => {
            out.put_u8(16);
            out.put_slice(&a.octets());
        }
    }
}

/// [inet]
pub fn write_inet(out: &mut BytesMut, addr: &SocketAddr) {
    write_inetaddr(out, &addr.ip());
    out.put_i32(i32::from(addr.port()));
}

/// [consistency]
pub fn write_consistency(out: &mut BytesMut, c: Consistency) {
    out.put_u16(c as u16);
}

/// [string map]
pub fn write_string_map(out: &mut BytesMut, m: &StringMap) -> Result<(), EncodeError> {
    out.put_u16(short_len("string map", m.len())?);
    for (k, v) in m {
        write_string(out, k)?;
        write_string(out, v)?;
    }
    Ok(())
}

/// [string multimap]
pub fn write_string_multimap(out: &mut BytesMut, m: &StringMultimap) -> Result<(), EncodeError> {
    out.put_u16(short_len("string multimap", m.len())?);
    for (k, v) in m {
        write_string(out, k)?;
        write_string_list(out, v)?;
    }
    Ok(())
}

/// [bytes map]
pub fn write_bytes_map(out: &mut BytesMut, m: &BytesMap) -> Result<(), EncodeError> {
    out.put_u16(short_len("bytes map", m.len())?);
    for (k, v) in m {
        write_string(out, k)?;
        write_bytes(out, v.as_deref())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(b: &[u8]) -> Reader {
        Reader::new(Bytes::copy_from_slice(b))
    }

    #[test]
    fn string_list_with_huge_count_fails_without_allocating() {
        let mut r = reader(&[0xff, 0xff, 0, 1, b'a']);
        assert!(matches!(
            r.read_string_list(),
            Err(WireError::Truncated { .. })
        ));
    }

    #[test]
    fn value_distinguishes_null_unset_and_rejects_other_negatives() {
        assert_eq!(
            reader(&[0xff, 0xff, 0xff, 0xff]).read_value(),
            Ok(Value::Null)
        );
        assert_eq!(
            reader(&[0xff, 0xff, 0xff, 0xfe]).read_value(),
            Ok(Value::Unset)
        );
        assert!(reader(&[0xff, 0xff, 0xff, 0xfd]).read_value().is_err());
    }

    #[test]
    fn bytes_slice_shares_the_input_buffer() {
        let input = Bytes::from_static(&[0, 0, 0, 3, 1, 2, 3]);
        let mut r = Reader::new(input.clone());
        let b = r.read_bytes().unwrap().unwrap();
        assert_eq!(&b[..], &[1, 2, 3]);
        assert_eq!(b.as_ptr(), input[4..].as_ptr());
    }

    #[test]
    fn inet_round_trips_v4_and_v6() {
        for addr in ["127.0.0.1:9042", "[::1]:7000"] {
            let a: SocketAddr = addr.parse().unwrap();
            let mut out = BytesMut::new();
            write_inet(&mut out, &a);
            assert_eq!(Reader::new(out.freeze()).read_inet().unwrap(), a);
        }
    }

    #[test]
    fn maps_round_trip() {
        let mut sm = StringMap::new();
        sm.insert("CQL_VERSION".into(), "3.0.0".into());
        let mut mm = StringMultimap::new();
        mm.insert("COMPRESSION".into(), vec!["lz4".into(), "snappy".into()]);
        let mut bm = BytesMap::new();
        bm.insert("k".into(), Some(Bytes::from_static(b"v")));
        bm.insert("n".into(), None);
        let mut out = BytesMut::new();
        write_string_map(&mut out, &sm).unwrap();
        write_string_multimap(&mut out, &mm).unwrap();
        write_bytes_map(&mut out, &bm).unwrap();
        let mut r = Reader::new(out.freeze());
        assert_eq!(r.read_string_map().unwrap(), sm);
        assert_eq!(r.read_string_multimap().unwrap(), mm);
        assert_eq!(r.read_bytes_map().unwrap(), bm);
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn string_over_u16_is_an_encode_error() {
        let s = "x".repeat(70_000);
        assert!(write_string(&mut BytesMut::new(), &s).is_err());
    }
}
