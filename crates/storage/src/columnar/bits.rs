//! Byte-level primitives of the columnar encodings: LEB128 varints, zigzag, and bit-packing of
//! unsigned integers at a fixed width. Every read is bounds-checked: chunk bytes come from disk.

use super::ColumnarError;

pub(super) fn put_uv(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn put_sv(out: &mut Vec<u8>, v: i64) {
    put_uv(out, zigzag(v));
}

pub(super) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

pub(super) fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Bits needed for `v` (0 for 0).
pub(super) fn width(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// A bounds-checked cursor over encoded bytes.
#[derive(Clone)]
pub(super) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], ColumnarError> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or_else(|| ColumnarError::corrupt("length overflow"))?;
        let s = self
            .buf
            .get(self.pos..end)
            .ok_or_else(|| ColumnarError::corrupt("truncated"))?;
        self.pos = end;
        Ok(s)
    }

    pub fn u8(&mut self) -> Result<u8, ColumnarError> {
        Ok(self.take(1)?.first().copied().unwrap_or(0))
    }

    pub fn u32_le(&mut self) -> Result<u32, ColumnarError> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(a))
    }

    pub fn u64_le(&mut self) -> Result<u64, ColumnarError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }

    pub fn uv(&mut self) -> Result<u64, ColumnarError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(ColumnarError::corrupt("varint too long"))
    }

    pub fn sv(&mut self) -> Result<i64, ColumnarError> {
        Ok(unzigzag(self.uv()?))
    }

    /// A count of items each at least `min_item_bits` bits long in what is left, so a corrupt
    /// count cannot ask for a huge allocation.
    pub fn count(&mut self, min_item_bits: usize) -> Result<usize, ColumnarError> {
        let n = usize::try_from(self.uv()?).map_err(|_| ColumnarError::corrupt("count"))?;
        if n.saturating_mul(min_item_bits) > self.remaining().saturating_mul(8) {
            return Err(ColumnarError::corrupt("count past end"));
        }
        Ok(n)
    }

    /// A length of at most `limit`.
    pub fn len_at_most(&mut self, limit: usize) -> Result<usize, ColumnarError> {
        let n = usize::try_from(self.uv()?).map_err(|_| ColumnarError::corrupt("length"))?;
        if n > limit {
            return Err(ColumnarError::corrupt("length past limit"));
        }
        Ok(n)
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }
}

/// Appends `values` packed at `w` bits each, little-endian bit order.
pub(super) fn pack(out: &mut Vec<u8>, values: impl Iterator<Item = u64>, w: u32) {
    if w == 0 {
        return;
    }
    let mut acc: u128 = 0;
    let mut bits = 0u32;
    let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    for v in values {
        acc |= u128::from(v & mask) << bits;
        bits += w;
        while bits >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
    }
    if bits > 0 {
        out.push(acc as u8);
    }
}

/// Bytes `n` values of `w` bits take.
pub(super) fn packed_len(n: usize, w: u32) -> usize {
    (n * w as usize).div_ceil(8)
}

/// Unpacks `n` values of `w` bits, calling `f` with each.
/// Value `i` of `w`-bit values packed in `bytes` as `unpack` reads them (bits past the end
/// read as 0): one value without unpacking those before it.
pub(super) fn packed_at(bytes: &[u8], w: u32, i: usize) -> u64 {
    if w == 0 || w > 64 {
        return 0;
    }
    let bit = i.saturating_mul(w as usize);
    let mut b = [0u8; 16];
    let rest = bytes.get(bit / 8..).unwrap_or_default();
    let n = rest.len().min(16);
    b[..n].copy_from_slice(&rest[..n]);
    let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    ((u128::from_le_bytes(b) >> (bit % 8)) as u64) & mask
}

pub(super) fn unpack(
    c: &mut Cursor<'_>,
    n: usize,
    w: u32,
    mut f: impl FnMut(u64),
) -> Result<(), ColumnarError> {
    if w > 64 {
        return Err(ColumnarError::corrupt("bit width"));
    }
    if w == 0 {
        (0..n).for_each(|_| f(0));
        return Ok(());
    }
    let bytes = c.take(packed_len(n, w))?;
    let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    // Values up to 56 bits wide are read with one unaligned 8-byte load each (a value and
    // its bit offset in the first byte fit in 64 bits), wider ones with a 16-byte load, wherever
    // that many bytes remain; the last few through the byte accumulator below.
    let mut done = 0;
    let wide = w as usize;
    if w <= 56 {
        while done < n {
            let bit = done * wide;
            let Some(word) = bytes.get(bit / 8..bit / 8 + 8) else {
                break;
            };
            let mut b = [0u8; 8];
            b.copy_from_slice(word);
            f((u64::from_le_bytes(b) >> (bit % 8)) & mask);
            done += 1;
        }
    } else {
        while done < n {
            let bit = done * wide;
            let Some(word) = bytes.get(bit / 8..bit / 8 + 16) else {
                break;
            };
            let mut b = [0u8; 16];
            b.copy_from_slice(word);
            f(((u128::from_le_bytes(b) >> (bit % 8)) as u64) & mask);
            done += 1;
        }
    }
    let start_bit = done * w as usize;
    let mut acc: u128 = 0;
    let mut bits = 0u32;
    let mut it = bytes.iter().skip(start_bit / 8);
    if !start_bit.is_multiple_of(8) {
        acc = u128::from(it.next().copied().unwrap_or(0) >> (start_bit % 8));
        bits = 8 - (start_bit % 8) as u32;
    }
    for _ in done..n {
        while bits < w {
            let b = it.next().copied().unwrap_or(0);
            acc |= u128::from(b) << bits;
            bits += 8;
        }
        f((acc as u64) & mask);
        acc >>= w;
        bits -= w;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_zigzag_round_trip() {
        for v in [0i64, 1, -1, 63, -64, 1 << 40, i64::MAX, i64::MIN] {
            let mut b = Vec::new();
            put_sv(&mut b, v);
            assert_eq!(Cursor::new(&b).sv().unwrap(), v);
        }
        assert!(Cursor::new(&[0x80; 11]).uv().is_err());
    }

    #[test]
    fn packing_round_trips_every_width() {
        // Lengths around the point where the 8-byte loads stop and the tail loop takes over.
        for (w, n) in (0..=64u32).flat_map(|w| [1u64, 7, 8, 9, 37, 200].map(|n| (w, n))) {
            let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
            let vals: Vec<u64> = (0..n)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) & mask)
                .collect();
            let mut b = Vec::new();
            pack(&mut b, vals.iter().copied(), w);
            assert_eq!(b.len(), packed_len(vals.len(), w));
            let mut back = Vec::new();
            unpack(&mut Cursor::new(&b), vals.len(), w, |v| back.push(v)).unwrap();
            assert_eq!(back, vals, "width {w}");
            if !b.is_empty() {
                assert!(
                    unpack(&mut Cursor::new(&b[..b.len() - 1]), vals.len(), w, |_| {}).is_err()
                );
            }
        }
    }
}
