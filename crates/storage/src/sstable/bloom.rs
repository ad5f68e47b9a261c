//! Bloom filter over partition keys (the Filter component).
//!
//! Layout: `[u32 BE hash count k, top bit set when blocked][u64 BE bit count m][m/64 u64 BE
//! words]`. Two hashes: h1 = the partition's Murmur3 token (already a good 64-bit hash of the
//! key), h2 = FNV-1a of the key bytes.
//!
//! Filters written now are *blocked*: all k bits of a key fall in one 512-bit block (one cache
//! line), picked from h1 by a multiply-shift, so an insert or a lookup touches one line and does
//! no division. The classic layout (k bits spread over the whole filter by double hashing modulo
//! m) is still read, for SSTables written before. A blocked filter has a slightly higher false
//! positive rate for the same size, so it is given a fifth more bits.

use crate::codec::{Reader, Writer};
use crate::error::StorageError;

/// Flag in the hash-count word of a blocked filter.
const BLOCKED: u32 = 0x8000_0000;
/// Bits per block: one 64-byte cache line.
const BLOCK_BITS: u64 = 512;
const BLOCK_WORDS: usize = (BLOCK_BITS / 64) as usize;
/// Extra bits a blocked filter gets to keep its false-positive rate near the classic one's.
const BLOCKED_EXTRA_BITS: f64 = 1.2;

/// A bloom filter sized for a key count and false-positive chance.
pub struct BloomFilter {
    k: u32,
    bits: Vec<u64>,
    blocked: bool,
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
        let words = ((m * BLOCKED_EXTRA_BITS) as usize)
            .div_ceil(64)
            .next_multiple_of(BLOCK_WORDS);
        BloomFilter {
            k,
            bits: vec![0; words],
            blocked: true,
        }
    }

    /// The first word of the key's block, and the key's bit positions within the block.
    fn block(&self, token: i64, key: &[u8]) -> (usize, impl Iterator<Item = usize>) {
        let blocks = (self.bits.len() / BLOCK_WORDS) as u64;
        let h1 = token as u64;
        let h2 = fnv1a(key);
        let block = ((u128::from(h1) * u128::from(blocks)) >> 64) as usize;
        // The block came from h1's high bits; the positions mix both hashes and take the top
        // 9 bits of successive sums (double hashing inside the block).
        let x = h2.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ h1.rotate_left(32);
        let bits = (0..u64::from(self.k))
            .map(move |i| (x.wrapping_add(i.wrapping_mul(h2)) >> 55) as usize);
        (block * BLOCK_WORDS, bits)
    }

    fn positions(&self, token: i64, key: &[u8]) -> impl Iterator<Item = usize> + '_ {
        let m = (self.bits.len() * 64) as u64;
        let h1 = token as u64;
        let h2 = fnv1a(key);
        (0..u64::from(self.k))
            .map(move |i| (h1.wrapping_add(i.wrapping_mul(h2)) % m.max(1)) as usize)
    }

    pub fn insert(&mut self, token: i64, key: &[u8]) {
        if self.blocked {
            let (base, bits) = self.block(token, key);
            for p in bits {
                if let Some(w) = self.bits.get_mut(base + p / 64) {
                    *w |= 1u64 << (p % 64);
                }
            }
            return;
        }
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
        let set = |p: usize| {
            self.bits
                .get(p / 64)
                .is_some_and(|w| w & (1u64 << (p % 64)) != 0)
        };
        if self.blocked {
            let (base, mut bits) = self.block(token, key);
            return bits.all(|p| set(base * 64 + p));
        }
        self.positions(token, key).all(set)
    }

    pub fn size_bytes(&self) -> u64 {
        (self.bits.len() * 8) as u64
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut w = Writer(out);
        w.u32(if self.blocked {
            self.k | BLOCKED
        } else {
            self.k
        });
        w.u64((self.bits.len() * 64) as u64);
        for b in &self.bits {
            w.u64(*b);
        }
    }

    pub fn decode(buf: &[u8]) -> Result<Self, StorageError> {
        let bad = || StorageError::Decode {
            what: "bloom filter",
        };
        let mut r = Reader::new(buf, "bloom filter");
        let word = r.u32()?;
        let (k, blocked) = (word & !BLOCKED, word & BLOCKED != 0);
        let m = usize::try_from(r.u64()?).map_err(|_| bad())?;
        if m / 64 * 8 > r.remaining() || k == 0 || k > 64 {
            return Err(bad());
        }
        if blocked && (m == 0 || (m / 64) % BLOCK_WORDS != 0) {
            return Err(bad());
        }
        let bits = (0..m / 64)
            .map(|_| r.u64())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(BloomFilter { k, bits, blocked })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(i: i64) -> i64 {
        i.wrapping_mul(0x1E37_79B9_7F4A_7C15)
    }

    fn false_positives(f: &BloomFilter, from: i64, n: i64) -> usize {
        (from..from + n)
            .filter(|i| f.may_contain(token(*i), &i.to_be_bytes()))
            .count()
    }

    #[test]
    fn inserted_keys_are_always_found_and_false_positives_are_rare() {
        for (n, fp) in [
            (1000i64, 0.01),
            (100_000, 0.01),
            (50_000, 0.1),
            (20_000, 0.001),
        ] {
            let mut f = BloomFilter::new(n as usize, fp);
            for i in 0..n {
                f.insert(token(i), &i.to_be_bytes());
            }
            for i in 0..n {
                assert!(f.may_contain(token(i), &i.to_be_bytes()));
            }
            let probes = 200_000;
            let rate = false_positives(&f, n, probes) as f64 / probes as f64;
            assert!(
                rate < fp * 1.5,
                "{n} keys at {fp}: false positive rate {rate}"
            );
            let mut buf = Vec::new();
            f.encode(&mut buf);
            let g = BloomFilter::decode(&buf).unwrap();
            assert!(g.blocked);
            assert!((0..n).all(|i| g.may_contain(token(i), &i.to_be_bytes())));
            assert_eq!(false_positives(&g, n, 1000), false_positives(&f, n, 1000));
        }
    }

    /// Filters of SSTables written before blocked filters answer as they did.
    #[test]
    fn classic_filters_still_read() {
        let mut f = BloomFilter {
            k: 7,
            bits: vec![0; 1000],
            blocked: false,
        };
        for i in 0..5000i64 {
            f.insert(token(i), &i.to_be_bytes());
        }
        let mut buf = Vec::new();
        f.encode(&mut buf);
        assert_eq!(
            &buf[..4],
            &7u32.to_be_bytes(),
            "no flag in the classic layout"
        );
        let g = BloomFilter::decode(&buf).unwrap();
        assert!(!g.blocked);
        assert!((0..5000).all(|i| g.may_contain(token(i), &i.to_be_bytes())));
        assert_eq!(
            false_positives(&g, 5000, 5000),
            false_positives(&f, 5000, 5000)
        );
        // A blocked filter whose size is not whole blocks is corrupt.
        let mut bad = Vec::new();
        Writer(&mut bad).u32(7 | BLOCKED);
        Writer(&mut bad).u64(64 * 3);
        bad.extend_from_slice(&[0u8; 24]);
        assert!(BloomFilter::decode(&bad).is_err());
    }
}
