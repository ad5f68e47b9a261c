//! Cassandra's `EstimatedHistogram`: counts in buckets whose upper bounds grow by a factor of
//! 1.2 (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 17, ...), so that a few hundred bytes cover values
//! from 1 to 10^13 within 20%. `nodetool tablehistograms` prints the bucket bounds of its
//! percentiles, as Cassandra's does, so both servers' columns read the same way.
//!
//! * [`EstimatedHistogram`]: plain counts, kept per SSTable in its statistics (partition size,
//!   cells per partition), merged over a table's SSTables when asked.
//! * [`AtomicHistogram`]: counts recorded concurrently on the read and write paths (latency,
//!   SSTables per read). Cassandra decays old samples (a forward-decaying reservoir); these count
//!   since the node started, like its `EstimatedHistogram`-based metrics before 3.0.

use crate::codec::{Reader, Writer};
// Defined with the other read-out types, so `types` needs nothing from here.
use crate::error::StorageError;
use crate::types::Percentiles;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bucket bounds: `FROM_ZERO` adds a bucket for 0 before 1 (Cassandra's `considerZeroes`),
/// then each bound is the previous times 1.2, rounded half up, at least one more.
const fn offsets<const N: usize>(from_zero: bool) -> [u64; N] {
    let mut r = [0u64; N];
    let mut i = if from_zero { 1 } else { 0 };
    let mut last = 1u64;
    if i < N {
        r[i] = last;
        i += 1;
    }
    while i < N {
        // Math.round(last * 1.2) in integers: floor((12 * last + 5) / 10).
        let mut next = (last * 12 + 5) / 10;
        if next == last {
            next += 1;
        }
        r[i] = next;
        last = next;
        i += 1;
    }
    r
}

/// The bucket of `value`: the first whose bound is at least `value`; `offsets.len()` (the
/// overflow bucket) above the last bound.
fn bucket_of(offsets: &[u64], value: u64) -> usize {
    offsets.partition_point(|o| *o < value)
}

impl Percentiles {
    /// As Cassandra's `EstimatedHistogram.percentile`: the bound of the bucket where the count
    /// reaches `ceil(total * p)`; min and max are the bounds of the first and last non-empty
    /// buckets (max is `u64::MAX` when values overflowed the last bound). All 0 when empty.
    fn of(offsets: &[u64], counts: &[u64]) -> Percentiles {
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return Percentiles::default();
        }
        let bound = |i: usize| offsets.get(i).copied().unwrap_or(u64::MAX);
        let at = |p: f64| {
            let want = ((total as f64) * p).ceil() as u64;
            let mut seen = 0u64;
            for (i, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= want {
                    return bound(i);
                }
            }
            bound(counts.len().saturating_sub(1))
        };
        Percentiles {
            p50: at(0.5),
            p75: at(0.75),
            p95: at(0.95),
            p98: at(0.98),
            p99: at(0.99),
            min: counts.iter().position(|c| *c > 0).map_or(0, bound),
            max: counts.iter().rposition(|c| *c > 0).map_or(0, bound),
        }
    }
}

/// Counts per bucket of `N` bounds (plus one overflow bucket); empty until a value is added, so
/// an SSTable without the histogram costs nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EstimatedHistogram<const N: usize, const FROM_ZERO: bool> {
    counts: Vec<u64>,
}

impl<const N: usize, const FROM_ZERO: bool> EstimatedHistogram<N, FROM_ZERO> {
    const OFFSETS: [u64; N] = offsets::<N>(FROM_ZERO);

    pub fn add(&mut self, value: u64) {
        if self.counts.is_empty() {
            self.counts = vec![0; N + 1];
        }
        if let Some(c) = self.counts.get_mut(bucket_of(&Self::OFFSETS, value)) {
            *c += 1;
        }
    }

    pub fn merge(&mut self, other: &Self) {
        if other.counts.is_empty() {
            return;
        }
        if self.counts.is_empty() {
            self.counts = vec![0; N + 1];
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    pub fn percentiles(&self) -> Percentiles {
        Percentiles::of(&Self::OFFSETS, &self.counts)
    }

    /// `u16 n | n * (u16 bucket, u64 count)`: the non-empty buckets only.
    pub(crate) fn encode(&self, w: &mut Writer<'_>) {
        let used: Vec<(usize, u64)> = self
            .counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (i, *c))
            .collect();
        w.u16(used.len() as u16);
        for (i, c) in used {
            w.u16(i as u16);
            w.u64(c);
        }
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<Self, StorageError> {
        let mut h = Self::default();
        let n = r.u16()?;
        for _ in 0..n {
            let (i, c) = (usize::from(r.u16()?), r.u64()?);
            if h.counts.is_empty() {
                h.counts = vec![0; N + 1];
            }
            let slot = h.counts.get_mut(i).ok_or(StorageError::Decode {
                what: "estimated histogram bucket",
            })?;
            *slot += c;
        }
        Ok(h)
    }
}

/// Cassandra's `EstimatedPartitionSizeHistogram` (bytes, 150 buckets).
pub type PartitionSizeHistogram = EstimatedHistogram<150, false>;
/// Cassandra's `EstimatedColumnCountHistogram` (cells per partition, 114 buckets).
pub type CellCountHistogram = EstimatedHistogram<114, false>;

/// An [`EstimatedHistogram`] many threads record into: one relaxed add per value.
pub struct AtomicHistogram<const N: usize, const FROM_ZERO: bool> {
    counts: Box<[AtomicU64]>,
}

impl<const N: usize, const FROM_ZERO: bool> Default for AtomicHistogram<N, FROM_ZERO> {
    fn default() -> Self {
        AtomicHistogram {
            counts: (0..=N).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl<const N: usize, const FROM_ZERO: bool> AtomicHistogram<N, FROM_ZERO> {
    const OFFSETS: [u64; N] = offsets::<N>(FROM_ZERO);

    pub fn record(&self, value: u64) {
        if let Some(c) = self.counts.get(bucket_of(&Self::OFFSETS, value)) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn percentiles(&self) -> Percentiles {
        let counts: Vec<u64> = self
            .counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        Percentiles::of(&Self::OFFSETS, &counts)
    }
}

/// Local read or write latency in nanoseconds (Cassandra's reservoir: 164 buckets, so the
/// bounds it prints in microseconds, e.g. 11.86 and 14.24, are the same).
pub type LatencyHistogram = AtomicHistogram<164, false>;
/// SSTables one single-partition read touched (Cassandra's `SSTablesPerReadHistogram`, which
/// counts zeros).
pub type SSTablesPerReadHistogram = AtomicHistogram<165, true>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_grow_as_cassandras() {
        let o = offsets::<20>(false);
        assert_eq!(
            o,
            [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 17, 20, 24, 29, 35, 42, 50, 60, 72]
        );
        // The latency bounds Cassandra's nodetool prints as 11.86 and 14.24 microseconds.
        let l = offsets::<164>(false);
        assert!(l.contains(&11_864) && l.contains(&14_237));
        assert_eq!(offsets::<4>(true), [0, 1, 2, 3]);
    }

    #[test]
    fn percentiles_are_bucket_bounds() {
        let mut h = CellCountHistogram::default();
        assert_eq!(h.percentiles(), Percentiles::default());
        for v in 1..=100 {
            h.add(v);
        }
        let p = h.percentiles();
        assert_eq!((p.min, p.p50, p.max), (1, 50, 103));
        assert_eq!(p.p99, 103);
        let a = SSTablesPerReadHistogram::default();
        a.record(0);
        a.record(0);
        a.record(3);
        let p = a.percentiles();
        assert_eq!((p.min, p.p50, p.p99, p.max), (0, 0, 3, 3));
    }

    #[test]
    fn histograms_round_trip_sparse() {
        let mut h = PartitionSizeHistogram::default();
        for v in [10, 10, 5_000, 16 << 20] {
            h.add(v);
        }
        let mut buf = Vec::new();
        h.encode(&mut Writer(&mut buf));
        let back = PartitionSizeHistogram::decode(&mut Reader::new(&buf, "test")).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.total(), 4);
        let mut m = PartitionSizeHistogram::default();
        m.merge(&h);
        m.merge(&h);
        assert_eq!(m.total(), 8);
    }
}
