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
//!
//! A writer sizes its filter for every key of the flush or compaction, but an output split at
//! ring tokens holds only the keys of its token range, and their tokens pick only the blocks
//! of that range. At `finish` the filter keeps just those blocks (a *window*: `trim_to_tokens`),
//! flagged in the hash-count word and followed by `u64 total blocks | u64 first block` after
//! `m` (which then counts the kept bits): the same false-positive rate in a 1/n of the space.

use crate::codec::{Reader, Writer};
use crate::error::StorageError;

/// Flag in the hash-count word of a blocked filter.
const BLOCKED: u32 = 0x8000_0000;
/// Flag in the hash-count word of a blocked filter that keeps a window of its blocks.
const WINDOWED: u32 = 0x4000_0000;
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
    /// The blocks `bits` keeps, of a blocked filter trimmed to its keys' tokens.
    window: Option<Window>,
}

/// Blocks `first..first + kept` (modulo `total`, the blocks the filter was sized with) of a
/// blocked filter, kept in `bits`; keys whose tokens pick another block were never inserted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Window {
    total: u64,
    first: u64,
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
            window: None,
        }
    }

    /// Blocks the filter was sized with (all of them kept, unless it is a window).
    fn total_blocks(&self) -> u64 {
        self.window
            .map_or((self.bits.len() / BLOCK_WORDS) as u64, |w| w.total)
    }

    /// The block a token picks, among the blocks the filter was sized with.
    fn block_of(&self, token: i64) -> u64 {
        ((u128::from(token as u64) * u128::from(self.total_blocks())) >> 64) as u64
    }

    /// The first word of the key's block in `bits` (None when a window does not keep it), and
    /// the key's bit positions within the block.
    fn block(&self, token: i64, key: &[u8]) -> (Option<usize>, impl Iterator<Item = usize>) {
        let h1 = token as u64;
        let h2 = fnv1a(key);
        let block = self.block_of(token);
        let kept = match self.window {
            None => Some(block as usize),
            Some(w) => {
                let offset = (block + w.total - w.first) % w.total.max(1);
                let in_window = offset < (self.bits.len() / BLOCK_WORDS) as u64;
                in_window.then_some(offset as usize)
            }
        };
        // The block came from h1's high bits; the positions mix both hashes and take the top
        // 9 bits of successive sums (double hashing inside the block).
        let x = h2.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ h1.rotate_left(32);
        let bits = (0..u64::from(self.k))
            .map(move |i| (x.wrapping_add(i.wrapping_mul(h2)) >> 55) as usize);
        (kept.map(|b| b * BLOCK_WORDS), bits)
    }

    /// Keeps only the blocks tokens `min..=max` pick (the filter's keys' tokens): the blocks of
    /// an output split at ring tokens that its keys can reach. A filter of the classic layout,
    /// or whose tokens reach every block, stays whole.
    pub fn trim_to_tokens(&mut self, min: i64, max: i64) {
        if !self.blocked || self.window.is_some() || min > max {
            return;
        }
        let total = self.total_blocks();
        // Tokens in i64 order are u64 order shifted by 2^63: from `min` up they pick blocks
        // upward, wrapping past the last block to the first when `min` < 0 <= `max`. Counted
        // unwrapped (in u128), so a span of the whole ring is told from one of one block.
        let from = u128::from(min as u64);
        let to = from + (i128::from(max) - i128::from(min)) as u128;
        let block = |u: u128| (u * u128::from(total)) >> 64;
        let first = self.block_of(min);
        let kept = (block(to) - block(from) + 1).min(u128::from(total)) as u64;
        if kept >= total {
            return;
        }
        let mut bits = Vec::with_capacity(kept as usize * BLOCK_WORDS);
        for i in 0..kept {
            let b = ((first + i) % total) as usize * BLOCK_WORDS;
            bits.extend_from_slice(
                self.bits
                    .get(b..b + BLOCK_WORDS)
                    .unwrap_or(&[0; BLOCK_WORDS]),
            );
        }
        self.bits = bits;
        self.window = Some(Window { total, first });
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
            // A window is taken once every key is in: no insert falls outside it.
            let (Some(base), bits) = self.block(token, key) else {
                return;
            };
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
            let (Some(base), mut bits) = self.block(token, key) else {
                return false;
            };
            return bits.all(|p| set(base * 64 + p));
        }
        self.positions(token, key).all(set)
    }

    pub fn size_bytes(&self) -> u64 {
        (self.bits.len() * 8) as u64
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut w = Writer(out);
        let flags = match (self.blocked, self.window) {
            (true, Some(_)) => BLOCKED | WINDOWED,
            (true, None) => BLOCKED,
            (false, _) => 0,
        };
        w.u32(self.k | flags);
        w.u64((self.bits.len() * 64) as u64);
        if let Some(win) = self.window {
            w.u64(win.total);
            w.u64(win.first);
        }
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
        let k = word & !(BLOCKED | WINDOWED);
        let (blocked, windowed) = (word & BLOCKED != 0, word & WINDOWED != 0);
        let m = usize::try_from(r.u64()?).map_err(|_| bad())?;
        let window = match windowed {
            true => Some(Window {
                total: r.u64()?,
                first: r.u64()?,
            }),
            false => None,
        };
        if m / 64 * 8 > r.remaining() || k == 0 || k > 64 || (windowed && !blocked) {
            return Err(bad());
        }
        if blocked && (m == 0 || (m / 64) % BLOCK_WORDS != 0) {
            return Err(bad());
        }
        let kept = (m / 64 / BLOCK_WORDS) as u64;
        if window.is_some_and(|w| w.first >= w.total || kept > w.total) {
            return Err(bad());
        }
        let bits = (0..m / 64)
            .map(|_| r.u64())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(BloomFilter {
            k,
            bits,
            blocked,
            window,
        })
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
            window: None,
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

    /// A filter sized for every key of a merge, holding one ring range's keys, keeps only the
    /// blocks of that range, answers as before, and reads back the same.
    #[test]
    fn a_filter_trimmed_to_its_tokens_keeps_its_answers_in_less_space() {
        let n = 200_000i64;
        // Ranges of about 1/16 of the ring: one of negative tokens, one across 0, and the
        // last one (up to i64::MAX).
        let step = u64::MAX / 16;
        for (lo, hi) in [
            (i64::MIN + step as i64, i64::MIN + 2 * step as i64),
            (-(step as i64) / 2, step as i64 / 2),
            (i64::MAX - step as i64, i64::MAX),
        ] {
            let mut f = BloomFilter::new(n as usize, 0.01);
            let whole = f.size_bytes();
            let keys: Vec<i64> = (0..n * 8)
                .filter(|i| (lo..=hi).contains(&token(*i)))
                .take(n as usize / 16)
                .collect();
            for i in &keys {
                f.insert(token(*i), &i.to_be_bytes());
            }
            let (min, max) = keys.iter().fold((i64::MAX, i64::MIN), |(a, b), i| {
                (a.min(token(*i)), b.max(token(*i)))
            });
            let before: Vec<bool> = (0..n * 8)
                .map(|i| f.may_contain(token(i), &i.to_be_bytes()))
                .collect();
            f.trim_to_tokens(min, max);
            assert!(f.window.is_some());
            assert!(
                f.size_bytes() * 12 < whole,
                "{} of {whole} bytes kept",
                f.size_bytes()
            );
            let mut buf = Vec::new();
            f.encode(&mut buf);
            let g = BloomFilter::decode(&buf).unwrap();
            for (i, was) in (0..n * 8).zip(before) {
                let (t, key) = (token(i), i.to_be_bytes());
                let now = g.may_contain(t, &key);
                // Inside the tokens, the same answers; outside, none (nothing was there).
                if (min..=max).contains(&t) {
                    assert_eq!(now, was, "key {i}");
                } else {
                    assert!(!now || was, "key {i}");
                }
            }
            assert!(keys
                .iter()
                .all(|i| g.may_contain(token(*i), &i.to_be_bytes())));
        }
        // Tokens over the whole ring keep the whole filter.
        let mut f = BloomFilter::new(1000, 0.01);
        f.trim_to_tokens(i64::MIN, i64::MAX);
        assert!(f.window.is_none());
    }
}
