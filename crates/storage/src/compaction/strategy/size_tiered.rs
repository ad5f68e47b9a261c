//! Size-tiered: SSTables of similar size group into buckets; the bucket of the smallest
//! SSTables with at least `min_threshold` members is compacted, at most `max_threshold` of them.
//! The pieces of one run (a compaction's outputs split at ring tokens) count as one SSTable of
//! their summed size, as ScyllaDB's size-tiered strategy treats SSTable runs.

use super::{gens, Choice, SSTableInfo, Strategy, UNSPLIT};
use std::collections::BTreeMap;

/// Cassandra's defaults: a bucket takes SSTables within half and one and a half times its
/// average size, and every SSTable under 50 MiB goes to one bucket.
const BUCKET_LOW: f64 = 0.5;
const BUCKET_HIGH: f64 = 1.5;
const MIN_SSTABLE_SIZE_BYTES: u64 = 50 << 20;

pub(crate) struct SizeTiered {
    pub min_threshold: usize,
    pub max_threshold: usize,
}

impl Strategy for SizeTiered {
    fn choose(&self, free: &[SSTableInfo], _all: &[SSTableInfo]) -> Choice {
        Choice {
            inputs: gens(&pick(free, self.min_threshold, self.max_threshold)),
            level: 0,
            max_output_bytes: UNSPLIT,
        }
    }
}

/// A run's pieces (one SSTable alone for most), and their summed size.
struct Run {
    bytes: u64,
    pieces: Vec<SSTableInfo>,
}

/// Size-tiered buckets (Cassandra's `getBuckets`) of runs: similar sizes group together.
pub(super) fn pick(
    sstables: &[SSTableInfo],
    min_threshold: usize,
    max_threshold: usize,
) -> Vec<SSTableInfo> {
    let mut runs: BTreeMap<(u64, u64), Run> = BTreeMap::new();
    for s in sstables {
        let run = runs.entry(s.run_key()).or_insert(Run {
            bytes: 0,
            pieces: Vec::new(),
        });
        run.bytes += s.data_bytes;
        run.pieces.push(s.clone());
    }
    let mut sorted: Vec<Run> = runs.into_values().collect();
    sorted.sort_by_key(|r| r.bytes);
    let mut buckets: Vec<(f64, Vec<Run>)> = Vec::new();
    for r in sorted {
        let size = r.bytes as f64;
        let fit = buckets.iter_mut().find(|(avg, _)| {
            (size > avg * BUCKET_LOW && size < avg * BUCKET_HIGH)
                || (size < MIN_SSTABLE_SIZE_BYTES as f64 && *avg < MIN_SSTABLE_SIZE_BYTES as f64)
        });
        match fit {
            Some((avg, b)) => {
                *avg = (*avg * b.len() as f64 + size) / (b.len() + 1) as f64;
                b.push(r);
            }
            None => buckets.push((size, vec![r])),
        }
    }
    buckets
        .into_iter()
        .filter(|(_, b)| b.len() >= min_threshold.max(2))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, mut b)| {
            b.truncate(max_threshold.max(2));
            b.into_iter().flat_map(|r| r.pieces).collect()
        })
        .unwrap_or_default()
}
