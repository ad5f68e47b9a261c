//! Key populations (cassandra-stress's `-pop dist=...`), a small fast PRNG and cassandra-stress
//! style keys.
//!
//! The generator is our own (SplitMix64): it is a few instructions per draw, deterministic from a
//! seed, and keeps the `rand` crate out of the build.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// SplitMix64: tiny, fast, statistically fine for load generation (not for cryptography).
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Rng { state: seed }
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.state)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi] (inclusive); `lo` when the range is empty.
    pub fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        let span = hi - lo;
        if span == u64::MAX {
            return self.next_u64();
        }
        // Multiply-shift maps 64 random bits onto the span without a division and with a bias of
        // at most span / 2^64, far below anything a benchmark could notice.
        lo + ((u128::from(self.next_u64()) * u128::from(span + 1)) >> 64) as u64
    }

    /// A standard normal draw (Box-Muller; one of the pair is discarded for simplicity).
    pub fn next_gaussian(&mut self) -> f64 {
        let u1 = self.next_f64().max(f64::MIN_POSITIVE);
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// The SplitMix64 finaliser, also used to derive values deterministically from a key index.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A distribution as written on the command line (`UNIFORM(1..1000)`, `GAUSSIAN(1..1000,5)`,
/// `SEQ(1..1000)`, `FIXED(34)`).
#[derive(Debug, Clone, PartialEq)]
pub enum DistSpec {
    /// Every value in [min, max] equally likely.
    Uniform { min: u64, max: u64 },
    /// Normal around `mean` with `stdev`, clamped to [min, max] by redrawing.
    Gaussian {
        min: u64,
        max: u64,
        mean: f64,
        stdev: f64,
    },
    /// min, min+1, ..., max, then wraps; shared by all workers so each key is visited once per lap.
    Seq { min: u64, max: u64 },
    /// Always the same value.
    Fixed(u64),
}

impl DistSpec {
    /// Smallest value the distribution can produce.
    pub fn min(&self) -> u64 {
        match *self {
            DistSpec::Uniform { min, .. } | DistSpec::Gaussian { min, .. } => min,
            DistSpec::Seq { min, .. } => min,
            DistSpec::Fixed(v) => v,
        }
    }

    /// Largest value the distribution can produce.
    pub fn max(&self) -> u64 {
        match *self {
            DistSpec::Uniform { max, .. } | DistSpec::Gaussian { max, .. } => max,
            DistSpec::Seq { max, .. } => max,
            DistSpec::Fixed(v) => v,
        }
    }

    /// One draw without shared state (`SEQ` draws uniformly here): for sizes, not keys.
    pub fn draw(&self, rng: &mut Rng) -> u64 {
        match *self {
            DistSpec::Fixed(v) => v,
            DistSpec::Uniform { min, max } | DistSpec::Seq { min, max } => {
                rng.range_inclusive(min, max)
            }
            DistSpec::Gaussian { .. } => Sampler::new(self.clone()).next(rng),
        }
    }

    /// Number of distinct values.
    pub fn population(&self) -> u64 {
        self.max().saturating_sub(self.min()).saturating_add(1)
    }
}

/// A sampler for one worker: random distributions draw from the worker's own [`Rng`]; `SEQ`
/// shares one counter between all samplers cloned from the same origin.
#[derive(Debug, Clone)]
pub struct Sampler {
    spec: DistSpec,
    seq: Arc<AtomicU64>,
}

/// Gaussian draws outside [min, max] are redrawn this many times, then clamped, so a badly chosen
/// stdev can never spin a worker.
const GAUSSIAN_MAX_REDRAWS: u32 = 16;

impl Sampler {
    /// A sampler for `spec`; clones share the `SEQ` position.
    pub fn new(spec: DistSpec) -> Self {
        Sampler {
            spec,
            seq: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The distribution this sampler draws from.
    pub fn spec(&self) -> &DistSpec {
        &self.spec
    }

    /// Next value.
    pub fn next(&self, rng: &mut Rng) -> u64 {
        match self.spec {
            DistSpec::Uniform { min, max } => rng.range_inclusive(min, max),
            DistSpec::Gaussian {
                min,
                max,
                mean,
                stdev,
            } => {
                for _ in 0..GAUSSIAN_MAX_REDRAWS {
                    let v = (mean + stdev * rng.next_gaussian()).round();
                    if v >= min as f64 && v <= max as f64 {
                        return v as u64;
                    }
                }
                mean.round().clamp(min as f64, max as f64) as u64
            }
            DistSpec::Seq { min, max } => {
                let span = max.saturating_sub(min).saturating_add(1).max(1);
                min + self.seq.fetch_add(1, Ordering::Relaxed) % span
            }
            DistSpec::Fixed(v) => v,
        }
    }
}

/// Length of cassandra-stress's default partition key (`key blob`, 10 bytes).
pub const STRESS_KEY_LEN: usize = 10;

/// The key cassandra-stress's `DataGenHex` writes for key index `index`: the index in upper-case
/// hexadecimal ASCII, right-aligned and left-padded with `'0'`, in `STRESS_KEY_LEN` bytes (the
/// leading digits are dropped if the index needs more than 10 hex digits).
pub fn stress_key(index: u64) -> [u8; STRESS_KEY_LEN] {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut key = [b'0'; STRESS_KEY_LEN];
    let mut rest = index;
    for slot in key.iter_mut().rev() {
        *slot = DIGITS[(rest & 0xf) as usize];
        rest >>= 4;
        if rest == 0 {
            break;
        }
    }
    key
}

/// Fills `out` with bytes derived only from `seed`, so a value can be regenerated from its key.
pub fn fill_bytes(seed: u64, out: &mut [u8]) {
    let mut rng = Rng::new(seed);
    for chunk in out.chunks_mut(8) {
        let bytes = rng.next_u64().to_le_bytes();
        let n = chunk.len();
        chunk.copy_from_slice(&bytes[..n]);
    }
}

/// `len` printable ASCII characters derived from `seed`.
pub fn ascii_string(seed: u64, len: usize) -> String {
    const ALPHABET: &[u8; 64] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";
    let mut rng = Rng::new(seed);
    let mut s = String::with_capacity(len);
    let mut bits = 0u64;
    for i in 0..len {
        if i % 10 == 0 {
            bits = rng.next_u64();
        }
        s.push(ALPHABET[(bits & 63) as usize] as char);
        bits >>= 6;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stress_key_is_zero_padded_upper_hex() {
        assert_eq!(&stress_key(0), b"0000000000");
        assert_eq!(&stress_key(1), b"0000000001");
        assert_eq!(&stress_key(0xABC), b"0000000ABC");
        assert_eq!(&stress_key(u64::MAX), b"FFFFFFFFFF");
    }

    #[test]
    fn uniform_stays_in_bounds_and_covers_them() {
        let s = Sampler::new(DistSpec::Uniform { min: 5, max: 9 });
        let mut rng = Rng::new(1);
        let mut seen = [false; 5];
        for _ in 0..1000 {
            let v = s.next(&mut rng);
            assert!((5..=9).contains(&v));
            seen[(v - 5) as usize] = true;
        }
        assert!(seen.iter().all(|b| *b));
    }

    #[test]
    fn gaussian_centres_on_mean_and_stays_in_bounds() {
        let s = Sampler::new(DistSpec::Gaussian {
            min: 1,
            max: 1000,
            mean: 500.0,
            stdev: 50.0,
        });
        let mut rng = Rng::new(7);
        let n = 20_000;
        let mut sum = 0u64;
        let mut within_one_sigma = 0;
        for _ in 0..n {
            let v = s.next(&mut rng);
            assert!((1..=1000).contains(&v));
            sum += v;
            if (450..=550).contains(&v) {
                within_one_sigma += 1;
            }
        }
        let mean = sum as f64 / n as f64;
        assert!((mean - 500.0).abs() < 5.0, "mean {mean}");
        let frac = within_one_sigma as f64 / n as f64;
        assert!((0.63..0.73).contains(&frac), "one-sigma fraction {frac}");
    }

    #[test]
    fn seq_is_shared_between_clones_and_wraps() {
        let a = Sampler::new(DistSpec::Seq { min: 1, max: 3 });
        let b = a.clone();
        let mut rng = Rng::new(0);
        let got: Vec<u64> = (0..4)
            .map(|i| {
                if i % 2 == 0 {
                    a.next(&mut rng)
                } else {
                    b.next(&mut rng)
                }
            })
            .collect();
        assert_eq!(got, vec![1, 2, 3, 1]);
    }

    #[test]
    fn values_are_deterministic_per_seed() {
        let mut a = [0u8; 34];
        let mut b = [0u8; 34];
        fill_bytes(42, &mut a);
        fill_bytes(42, &mut b);
        assert_eq!(a, b);
        assert_eq!(ascii_string(3, 20), ascii_string(3, 20));
        assert_eq!(ascii_string(3, 20).len(), 20);
    }

    #[test]
    fn range_inclusive_handles_degenerate_ranges() {
        let mut rng = Rng::new(9);
        assert_eq!(rng.range_inclusive(4, 4), 4);
        assert_eq!(rng.range_inclusive(4, 2), 4);
        let _ = rng.range_inclusive(0, u64::MAX);
    }
}
