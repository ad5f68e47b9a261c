//! Bloom filter over partition keys (the Filter component).
//!
//! Layout: `[u32 BE hash count k][u64 BE bit count m][m/64 u64 BE words]`. Bit positions use
//! double hashing: h1 = the partition's Murmur3 token (already a good 64-bit hash of the key),
//! h2 = FNV-1a of the key bytes.

use crate::codec::{Reader, Writer};
use crate::error::StorageError;

/// A bloom filter sized for a key count and false-positive chance.
pub struct BloomFilter {
    k: u32,
    bits: Vec<u64>,
}

fn fnv1a(key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h | 1
}

impl BloomFilter {
    /// A filter for `n` keys at false-positive chance `fp` (clamped to sane bounds).
    pub fn new(n: usize, fp: f64) -> Self {
        let fp = if fp.is_finite() {
            fp.clamp(1e-6, 0.9)
        } else {
            0.01
        };
        let n = n.max(1) as f64;
        let m = (-(n * fp.ln()) / (std::f64::consts::LN_2.powi(2)))
            .ceil()
            .max(64.0);
        let k = ((m / n) * std::f64::consts::LN_2).round().clamp(1.0, 20.0) as u32;
        let words = (m as usize).div_ceil(64);
        BloomFilter {
            k,
            bits: vec![0; words],
        }
    }

    fn positions(&self, token: i64, key: &[u8]) -> impl Iterator<Item = usize> + '_ {
        let m = (self.bits.len() * 64) as u64;
        let h1 = token as u64;
        let h2 = fnv1a(key);
        (0..u64::from(self.k))
            .map(move |i| (h1.wrapping_add(i.wrapping_mul(h2)) % m.max(1)) as usize)
    }

    pub fn insert(&mut self, token: i64, key: &[u8]) {
        let m = (self.bits.len() * 64) as u64;
        let h1 = token as u64;
        let h2 = fnv1a(key);
        for i in 0..u64::from(self.k) {
            let p = (h1.wrapping_add(i.wrapping_mul(h2)) % m.max(1)) as usize;
            if let Some(w) = self.bits.get_mut(p / 64) {
                *w |= 1u64 << (p % 64);
            }
        }
    }

    pub fn may_contain(&self, token: i64, key: &[u8]) -> bool {
        self.positions(token, key).all(|p| {
            self.bits
                .get(p / 64)
                .is_some_and(|w| w & (1u64 << (p % 64)) != 0)
        })
    }

    pub fn size_bytes(&self) -> u64 {
        (self.bits.len() * 8) as u64
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut w = Writer(out);
        w.u32(self.k);
        w.u64((self.bits.len() * 64) as u64);
        for b in &self.bits {
            w.u64(*b);
        }
    }

    pub fn decode(buf: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(buf, "bloom filter");
        let k = r.u32()?;
        let m = r.u64()? as usize;
        if m / 64 * 8 > r.remaining() || k == 0 || k > 64 {
            return Err(StorageError::Decode {
                what: "bloom filter",
            });
        }
        let bits = (0..m / 64)
            .map(|_| r.u64())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(BloomFilter { k, bits })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserted_keys_are_always_found_and_false_positives_are_rare() {
        let mut f = BloomFilter::new(1000, 0.01);
        for i in 0..1000i64 {
            f.insert(i.wrapping_mul(0x1E37_79B9_7F4A_7C15), &i.to_be_bytes());
        }
        for i in 0..1000i64 {
            assert!(f.may_contain(i.wrapping_mul(0x1E37_79B9_7F4A_7C15), &i.to_be_bytes()));
        }
        let fp = (1000..11000i64)
            .filter(|i| f.may_contain(i.wrapping_mul(0x1E37_79B9_7F4A_7C15), &i.to_be_bytes()))
            .count();
        assert!(fp < 300, "false positives: {fp}");
        let mut buf = Vec::new();
        f.encode(&mut buf);
        let g = BloomFilter::decode(&buf).unwrap();
        assert!(g.may_contain(0, &0i64.to_be_bytes()));
    }
}
