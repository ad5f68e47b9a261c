//! Cassandra's variable-length integers (`VIntCoding`): the number of leading 1 bits in the
//! first byte is the count of extra bytes; signed values are zig-zag encoded.

use bytes::{BufMut, BytesMut};

/// Longest encoding: a 0xff marker byte plus 8 value bytes.
pub(crate) const MAX_VINT_SIZE: usize = 9;

pub(crate) fn unsigned_vint_size(value: u64) -> usize {
    let magnitude = (value | 1).leading_zeros() as usize;
    (639 - magnitude * 9) >> 6
}

pub(crate) fn write_unsigned_vint(value: u64, out: &mut BytesMut) {
    let size = unsigned_vint_size(value);
    if size == 1 {
        out.put_u8(value as u8);
        return;
    }
    let mut buf = [0u8; MAX_VINT_SIZE];
    let extra = size - 1;
    let be = value.to_be_bytes();
    buf[MAX_VINT_SIZE - 8..].copy_from_slice(&be);
    let start = MAX_VINT_SIZE - size;
    // The marker bits share the first byte with the value's top bits (except for size 9).
    buf[start] |= !(0xffu16 >> extra) as u8;
    out.put_slice(&buf[start..]);
}

pub(crate) fn write_signed_vint(value: i64, out: &mut BytesMut) {
    write_unsigned_vint(((value << 1) ^ (value >> 63)) as u64, out);
}

/// Reads an unsigned vint from the front of `buf`; returns the value and the bytes consumed.
pub(crate) fn read_unsigned_vint(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    if first < 0x80 {
        return Some((first as u64, 1));
    }
    let extra = first.leading_ones() as usize;
    let rest = buf.get(1..1 + extra)?;
    let mut value = (first & (0xffu16 >> extra) as u8) as u64;
    for b in rest {
        value = (value << 8) | *b as u64;
    }
    Some((value, 1 + extra))
}

pub(crate) fn read_signed_vint(buf: &[u8]) -> Option<(i64, usize)> {
    let (v, n) = read_unsigned_vint(buf)?;
    Some((((v >> 1) as i64) ^ -((v & 1) as i64), n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vints_round_trip_at_every_size_boundary() {
        let mut values = vec![0i64, 1, -1, 63, 64, -64, -65, i64::MAX, i64::MIN];
        for shift in 0..63 {
            values.push(1i64 << shift);
            values.push(-(1i64 << shift));
            values.push((1i64 << shift) - 1);
        }
        for v in values {
            let mut out = BytesMut::new();
            write_signed_vint(v, &mut out);
            assert_eq!(read_signed_vint(&out), Some((v, out.len())), "value {v}");
            assert_eq!(out.len(), unsigned_vint_size(((v << 1) ^ (v >> 63)) as u64));
        }
    }

    #[test]
    fn unsigned_vint_matches_cassandra_layout() {
        let mut out = BytesMut::new();
        write_unsigned_vint(300, &mut out);
        assert_eq!(&out[..], &[0x81, 0x2c]);
        let mut out = BytesMut::new();
        write_unsigned_vint(u64::MAX, &mut out);
        assert_eq!(out.len(), 9);
        assert_eq!(out[0], 0xff);
    }

    #[test]
    fn truncated_vint_is_rejected() {
        assert_eq!(read_unsigned_vint(&[0x81]), None);
        assert_eq!(read_unsigned_vint(&[]), None);
    }
}
