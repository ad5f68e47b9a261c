//! The Statistics component of an SSTable: counts, timestamp and token bounds, clustering
//! bounds, and the TTL and tombstone drop-time histograms that drive single-SSTable tombstone
//! compaction (Cassandra's `estimatedDroppableTombstones`).
//!
//! Layout (`SSTableStats::encode`), version 1 then the version 2 extension:
//! `"hl-1" | u64 partitions | u64 rows | i64 min_ts | i64 max_ts | i64 min_token | i64 max_token |
//! u64 tombstones | i64 max_ldt | u64 uncompressed | u64 data_file | u64 max_partition | u32 level`
//! then, from version 2 on: `u8 version (2) | u64 cells | u64 static_rows | u64 wide_deletions |
//! u16 n + n * (u32 len + bytes) min clustering | same for max clustering |
//! histogram ttl_s | histogram drop_time_s`, where `histogram = u16 n | n * (i64 point, u64 count)`.
//! Files written before version 2 end after `level` and read with empty bounds and histograms.
//! From version 3 on: `u8 data_format | i64 timestamp_base_us` (the encoding of Data.db and
//! Index.db, see sstable/format.rs); earlier files are data format 1.
//! From version 4 on: `estimated histogram partition_size_bytes | estimated histogram
//! cells_per_partition` (histogram.rs, for `nodetool tablehistograms`); earlier files read with
//! empty ones.
//! From version 5 on: `u64 run_id` (see `SSTableStats::run_id`) | `DELETION_WORDS * u64`
//! deletion buckets (see `SSTableStats::deletion_buckets`); earlier files read with run 0 and
//! no buckets.

use crate::clustering::CKey;
use crate::codec::{Reader, Writer};
use crate::error::StorageError;
use crate::histogram::{CellCountHistogram, PartitionSizeHistogram};
use crate::partition::{Partition, Row};
use crate::reconcile::CellKind;
use bytes::Bytes;
use std::collections::BTreeMap;

const MAGIC: &[u8; 4] = b"hl-1";
/// Current statistics version (the extension byte after `level`).
const STATS_VERSION: u8 = 5;
/// Bins kept by a streaming histogram (Cassandra keeps 100 for tombstone drop times).
pub const HISTOGRAM_MAX_BINS: usize = 100;
/// Drop times are rounded up to this many seconds before binning. Cassandra rounds to 60 s to
/// keep its histogram small; the bin merging already bounds ours, and exact seconds let a
/// tombstone count as droppable exactly when compaction may purge it.
const DROP_TIME_ROUND_S: i64 = 1;
/// The ring in 1,024 equal token buckets, one bit each: 128 bytes per SSTable.
const DELETION_WORDS: usize = 16;
const DELETION_BUCKET_SHIFT: u32 = 64 - (DELETION_WORDS * 64).trailing_zeros();

/// A bounded streaming histogram (Ben-Haim & Tom-Tov, as Cassandra's `StreamingTombstoneHistogram`):
/// at most `HISTOGRAM_MAX_BINS` (point, count) bins; when full, the two closest bins merge into
/// their weighted mean.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamingHistogram {
    bins: BTreeMap<i64, u64>,
}

impl StreamingHistogram {
    pub fn add(&mut self, point: i64, count: u64) {
        *self.bins.entry(point).or_insert(0) += count;
        while self.bins.len() > HISTOGRAM_MAX_BINS {
            self.merge_closest();
        }
    }

    fn merge_closest(&mut self) {
        let mut best: Option<(i64, i64, i64)> = None; // (gap, left, right)
        let mut prev: Option<i64> = None;
        for &p in self.bins.keys() {
            if let Some(l) = prev {
                let gap = p.saturating_sub(l);
                if best.is_none_or(|(g, _, _)| gap < g) {
                    best = Some((gap, l, p));
                }
            }
            prev = Some(p);
        }
        let Some((_, l, r)) = best else { return };
        let cl = self.bins.remove(&l).unwrap_or(0);
        let cr = self.bins.remove(&r).unwrap_or(0);
        let total = cl + cr;
        let mean = if total == 0 {
            l
        } else {
            ((l as i128 * cl as i128 + r as i128 * cr as i128) / total as i128) as i64
        };
        *self.bins.entry(mean).or_insert(0) += total;
    }

    /// Count of values at points strictly below `x` (bins are points, so no interpolation).
    pub fn sum_below(&self, x: i64) -> u64 {
        self.bins.range(..x).map(|(_, c)| c).sum()
    }

    pub fn total(&self) -> u64 {
        self.bins.values().sum()
    }

    /// (point, count) in point order.
    pub fn bins(&self) -> impl Iterator<Item = (i64, u64)> + '_ {
        self.bins.iter().map(|(p, c)| (*p, *c))
    }

    fn encode(&self, w: &mut Writer<'_>) {
        w.u16(self.bins.len() as u16);
        for (p, c) in &self.bins {
            w.i64(*p);
            w.u64(*c);
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, StorageError> {
        let n = r.u16()? as usize;
        if n.saturating_mul(16) > r.remaining() {
            return Err(StorageError::Decode {
                what: "statistics histogram",
            });
        }
        let mut h = StreamingHistogram::default();
        for _ in 0..n {
            let (p, c) = (r.i64()?, r.u64()?);
            *h.bins.entry(p).or_insert(0) += c;
        }
        Ok(h)
    }
}

/// Per-SSTable statistics (the Statistics component).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SSTableStats {
    pub partitions: u64,
    pub rows: u64,
    pub min_timestamp_us: i64,
    pub max_timestamp_us: i64,
    pub min_token: i64,
    pub max_token: i64,
    pub tombstones: u64,
    /// Latest local deletion time of any tombstone or TTL (for droppable-tombstone estimates).
    pub max_local_deletion_time_s: i64,
    pub uncompressed_bytes: u64,
    pub data_file_bytes: u64,
    pub max_partition_bytes: u64,
    /// Compaction level (LCS) or 0.
    pub level: u32,
    /// Version of the file's statistics (1 = written before the extension).
    pub version: u8,
    /// Cells, row markers and deletions of every kind (the droppable ratio's denominator).
    pub cells: u64,
    /// Partitions with a non-empty static row (slice skipping must not drop them).
    pub static_rows: u64,
    /// Partition deletions plus range tombstones: deletions that can cover rows outside the
    /// clustering bounds (slice skipping must not drop them).
    pub wide_deletions: u64,
    /// Smallest and largest row clustering (empty when the SSTable has no rows or is version 1).
    pub min_clustering: Vec<Bytes>,
    pub max_clustering: Vec<Bytes>,
    /// TTLs (seconds) of expiring cells and row markers.
    pub ttl_histogram: StreamingHistogram,
    /// When each tombstone (and each expiring cell) becomes purgeable, before gc_grace.
    pub drop_time_histogram: StreamingHistogram,
    /// Encoding of Data.db and Index.db: 1 fixed-width (codec/format1.rs), 2 compact (codec/compact.rs).
    pub data_format: u8,
    /// Timestamps in format-2 data are deltas from this.
    pub timestamp_base_us: i64,
    /// Bytes of each partition (Cassandra's `EstimatedPartitionSizeHistogram`).
    pub partition_size_histogram: PartitionSizeHistogram,
    /// Cells, row markers and deletions of each partition (Cassandra's
    /// `EstimatedColumnCountHistogram`).
    pub cell_count_histogram: CellCountHistogram,
    /// The outputs of one flush or compaction share a random run id (0: none, files before
    /// version 5): a run split at ring tokens is one SSTable to size-tiered bucketing
    /// (ScyllaDB's SSTable runs), so its similar-sized pieces never form a bucket of their own.
    pub run_id: u64,
    /// Which 1/1024ths of the ring hold a partition with a deletion (a partition, range, row,
    /// cell or collection tombstone): a garbagecollect skips SSTables that hold none in its
    /// input's tokens. Empty when unknown (files before version 5).
    pub deletion_buckets: Vec<u64>,
}

impl SSTableStats {
    /// Statistics of an empty writer.
    pub fn empty(level: u32) -> Self {
        SSTableStats {
            min_timestamp_us: i64::MAX,
            max_timestamp_us: i64::MIN,
            min_token: i64::MAX,
            max_token: i64::MIN,
            level,
            version: STATS_VERSION,
            data_format: 1,
            deletion_buckets: vec![0; DELETION_WORDS],
            ..SSTableStats::default()
        }
    }

    /// Notes `tombstones` more tombstones in the partition at `token`.
    pub(crate) fn note_tombstones_at(&mut self, token: i64, tombstones: u64) {
        if tombstones == 0 {
            return;
        }
        self.tombstones += tombstones;
        let b = deletion_bucket(token);
        if let Some(w) = self.deletion_buckets.get_mut(b / 64) {
            *w |= 1 << (b % 64);
        }
    }

    /// Whether a partition with a deletion may lie within tokens `[lo, hi]`: false only when
    /// the statistics show none there (none at all, or none in those buckets).
    pub fn may_have_deletions_within(&self, lo: i64, hi: i64) -> bool {
        if self.version < 2 {
            return true;
        }
        if self.tombstones == 0 || hi < self.min_token || lo > self.max_token {
            return false;
        }
        if self.deletion_buckets.len() != DELETION_WORDS {
            return true;
        }
        (deletion_bucket(lo)..=deletion_bucket(hi)).any(|b| {
            let word = self.deletion_buckets.get(b / 64);
            word.is_none_or(|w| w & (1 << (b % 64)) != 0)
        })
    }

    /// Whether the two SSTables' token spans share a token.
    pub fn tokens_overlap(&self, other: &SSTableStats) -> bool {
        self.min_token <= other.max_token && other.min_token <= self.max_token
    }

    /// Tombstones whose drop time is before `gc_before_s`, over all cells: Cassandra's
    /// `getEstimatedDroppableTombstoneRatio`.
    pub fn estimated_droppable_tombstones(&self, gc_before_s: i64) -> f64 {
        let droppable = self.drop_time_histogram.sum_below(gc_before_s);
        if droppable == 0 {
            return 0.0;
        }
        droppable as f64 / self.cells.max(droppable) as f64
    }

    /// True when both clustering bounds are known (version 2, at least one row).
    pub fn has_clustering_bounds(&self) -> bool {
        self.version >= 2 && self.rows > 0
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(MAGIC);
        let mut w = Writer(out);
        for v in [self.partitions, self.rows] {
            w.u64(v);
        }
        for v in [
            self.min_timestamp_us,
            self.max_timestamp_us,
            self.min_token,
            self.max_token,
        ] {
            w.i64(v);
        }
        w.u64(self.tombstones);
        w.i64(self.max_local_deletion_time_s);
        for v in [
            self.uncompressed_bytes,
            self.data_file_bytes,
            self.max_partition_bytes,
        ] {
            w.u64(v);
        }
        w.u32(self.level);
        w.u8(STATS_VERSION);
        w.u64(self.cells);
        w.u64(self.static_rows);
        w.u64(self.wide_deletions);
        for c in [&self.min_clustering, &self.max_clustering] {
            w.u16(c.len() as u16);
            for v in c {
                w.bytes(v);
            }
        }
        self.ttl_histogram.encode(&mut w);
        self.drop_time_histogram.encode(&mut w);
        w.u8(self.data_format);
        w.i64(self.timestamp_base_us);
        self.partition_size_histogram.encode(&mut w);
        self.cell_count_histogram.encode(&mut w);
        w.u64(self.run_id);
        for i in 0..DELETION_WORDS {
            w.u64(self.deletion_buckets.get(i).copied().unwrap_or(u64::MAX));
        }
    }

    pub fn decode(buf: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(buf, "statistics");
        if r.take(4)? != MAGIC {
            return Err(StorageError::Decode {
                what: "statistics magic",
            });
        }
        let mut s = SSTableStats {
            partitions: r.u64()?,
            rows: r.u64()?,
            min_timestamp_us: r.i64()?,
            max_timestamp_us: r.i64()?,
            min_token: r.i64()?,
            max_token: r.i64()?,
            tombstones: r.u64()?,
            max_local_deletion_time_s: r.i64()?,
            uncompressed_bytes: r.u64()?,
            data_file_bytes: r.u64()?,
            max_partition_bytes: r.u64()?,
            level: r.u32()?,
            version: 1,
            data_format: 1,
            ..SSTableStats::default()
        };
        if r.remaining() == 0 {
            return Ok(s);
        }
        s.version = r.u8()?;
        if s.version < 2 {
            return Err(StorageError::Decode {
                what: "statistics version",
            });
        }
        s.cells = r.u64()?;
        s.static_rows = r.u64()?;
        s.wide_deletions = r.u64()?;
        for i in 0..2 {
            let n = r.u16()? as usize;
            let c = (0..n).map(|_| r.bytes()).collect::<Result<Vec<_>, _>>()?;
            if i == 0 {
                s.min_clustering = c;
            } else {
                s.max_clustering = c;
            }
        }
        s.ttl_histogram = StreamingHistogram::decode(&mut r)?;
        s.drop_time_histogram = StreamingHistogram::decode(&mut r)?;
        if s.version >= 3 {
            s.data_format = r.u8()?;
            s.timestamp_base_us = r.i64()?;
        }
        if s.version >= 4 {
            s.partition_size_histogram = PartitionSizeHistogram::decode(&mut r)?;
            s.cell_count_histogram = CellCountHistogram::decode(&mut r)?;
        }
        if s.version >= 5 {
            s.run_id = r.u64()?;
            s.deletion_buckets = (0..DELETION_WORDS)
                .map(|_| r.u64())
                .collect::<Result<_, _>>()?;
        }
        // Later versions append after this; what we know is read, the rest is ignored.
        Ok(s)
    }

    /// Adds one partition's clustering bounds, cells and histograms (the writer's other
    /// counters are updated by the writer).
    pub fn note_partition(
        &mut self,
        p: &Partition,
        min_ck: &mut Option<CKey>,
        max_ck: &mut Option<CKey>,
    ) {
        if let Some((first, _)) = p.rows.first_key_value() {
            if min_ck.as_ref().is_none_or(|m| first < m) {
                *min_ck = Some(first.clone());
            }
        }
        if let Some((last, _)) = p.rows.last_key_value() {
            if max_ck.as_ref().is_none_or(|m| last > m) {
                *max_ck = Some(last.clone());
            }
        }
        if !p.static_row.is_empty() {
            self.static_rows += 1;
        }
        if let Some(d) = p.deletion {
            self.wide_deletions += 1;
            self.note_tombstone(d.local_deletion_time_s);
        }
        for rt in &p.range_tombstones {
            self.wide_deletions += 1;
            self.note_tombstone(rt.2.local_deletion_time_s);
        }
        for r in std::iter::once(&p.static_row).chain(p.rows.values().map(|r| &**r)) {
            self.note_row(r);
        }
    }

    pub(crate) fn note_tombstone(&mut self, local_deletion_time_s: i64) {
        self.cells += 1;
        let t = round_up(local_deletion_time_s, DROP_TIME_ROUND_S);
        self.drop_time_histogram.add(t, 1);
    }

    pub(crate) fn note_expiring(&mut self, ttl_s: u32, expires_at_s: i64) {
        self.ttl_histogram.add(i64::from(ttl_s), 1);
        self.drop_time_histogram
            .add(round_up(expires_at_s, DROP_TIME_ROUND_S), 1);
    }

    fn note_row(&mut self, r: &Row) {
        if let Some(l) = r.liveness {
            self.cells += 1;
            if l.ttl_s > 0 {
                self.note_expiring(l.ttl_s, l.expires_at_s);
            }
        }
        if let Some(d) = r.deletion {
            self.note_tombstone(d.local_deletion_time_s);
        }
        for d in r.complex_deletions.values() {
            self.note_tombstone(d.local_deletion_time_s);
        }
        for c in r.cells.values() {
            match &c.kind {
                CellKind::Tombstone {
                    local_deletion_time_s,
                } => self.note_tombstone(*local_deletion_time_s),
                CellKind::Live {
                    ttl_s,
                    expires_at_s,
                    ..
                } => {
                    self.cells += 1;
                    if *ttl_s > 0 {
                        self.note_expiring(*ttl_s, *expires_at_s);
                    }
                }
                CellKind::Counter { .. } => self.cells += 1,
            }
        }
    }
}

/// The bucket of the ring `token` falls in (tokens in order: bucket 0 holds i64::MIN).
fn deletion_bucket(token: i64) -> usize {
    ((token as u64 ^ (1 << 63)) >> DELETION_BUCKET_SHIFT) as usize
}

fn round_up(t: i64, step: i64) -> i64 {
    t.div_euclid(step)
        .saturating_add(i64::from(t.rem_euclid(step) != 0))
        .saturating_mul(step)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_stays_bounded_and_keeps_counts() {
        let mut h = StreamingHistogram::default();
        for i in 0..10_000i64 {
            h.add(i * 7 % 5000, 1);
        }
        assert!(h.bins().count() <= HISTOGRAM_MAX_BINS);
        assert_eq!(h.total(), 10_000);
        let below = h.sum_below(2500) as f64;
        assert!((below - 5000.0).abs() < 600.0, "{below}");
    }

    #[test]
    fn version_1_statistics_still_decode() {
        let mut s = SSTableStats::empty(3);
        s.partitions = 5;
        s.min_clustering = vec![Bytes::from_static(b"a")];
        s.drop_time_histogram.add(60, 2);
        let mut buf = Vec::new();
        s.encode(&mut buf);
        let back = SSTableStats::decode(&buf).unwrap();
        assert_eq!(back, s);
        // A version 1 file is the same bytes cut after `level`.
        let v1_len = 4 + 8 * 2 + 8 * 4 + 8 + 8 + 8 * 3 + 4;
        let old = SSTableStats::decode(&buf[..v1_len]).unwrap();
        assert_eq!(old.version, 1);
        assert_eq!((old.partitions, old.level), (5, 3));
        assert!(old.min_clustering.is_empty() && old.drop_time_histogram.total() == 0);
        assert_eq!(old.estimated_droppable_tombstones(i64::MAX), 0.0);
    }

    #[test]
    fn version_2_statistics_read_as_data_format_1() {
        let mut s = SSTableStats::empty(0);
        s.data_format = 2;
        s.timestamp_base_us = 1_700_000_000_000_000;
        let mut buf = Vec::new();
        s.encode(&mut buf);
        let back = SSTableStats::decode(&buf).unwrap();
        assert_eq!(
            (back.data_format, back.timestamp_base_us),
            (2, s.timestamp_base_us)
        );
        // A version 2 file: version byte 2 and no data format / base at the end.
        let v1_len = 4 + 8 * 2 + 8 * 4 + 8 + 8 + 8 * 3 + 4;
        buf[v1_len] = 2;
        buf.truncate(buf.len() - 9);
        let old = SSTableStats::decode(&buf).unwrap();
        assert_eq!((old.version, old.data_format), (2, 1));
    }

    #[test]
    fn run_id_round_trips_and_earlier_versions_read_as_no_run() {
        let mut s = SSTableStats::empty(0);
        s.run_id = 0x5eed_0000_0000_0001;
        let mut buf = Vec::new();
        s.encode(&mut buf);
        assert_eq!(SSTableStats::decode(&buf).unwrap().run_id, s.run_id);
        // A version 4 file: version byte 4 and nothing after the histograms.
        let v1_len = 4 + 8 * 2 + 8 * 4 + 8 + 8 + 8 * 3 + 4;
        buf[v1_len] = 4;
        buf.truncate(buf.len() - 8 - 8 * DELETION_WORDS);
        let old = SSTableStats::decode(&buf).unwrap();
        assert_eq!((old.version, old.run_id), (4, 0));
        assert!(old.deletion_buckets.is_empty());
    }

    #[test]
    fn deletion_buckets_tell_where_the_ring_has_deletions() {
        let mut s = SSTableStats::empty(0);
        let (lo, hi) = (i64::MIN, i64::MAX);
        assert!(!s.may_have_deletions_within(lo, hi), "no tombstone at all");
        s.min_token = -1000;
        s.max_token = 5 << 60;
        s.note_tombstones_at(-1000, 0);
        assert_eq!(
            s.tombstones, 0,
            "a partition without tombstones marks nothing"
        );
        s.note_tombstones_at(5 << 60, 2);
        assert_eq!(s.tombstones, 2);
        let bucket = 1i64 << DELETION_BUCKET_SHIFT;
        assert!(s.may_have_deletions_within(5 << 60, 5 << 60));
        assert!(s.may_have_deletions_within(0, hi));
        // Beside it: other buckets of the SSTable's span, and outside its span.
        assert!(!s.may_have_deletions_within(-1000, (5 << 60) - bucket));
        assert!(!s.may_have_deletions_within(lo, -1001));
        let mut buf = Vec::new();
        s.encode(&mut buf);
        let back = SSTableStats::decode(&buf).unwrap();
        assert_eq!(back.deletion_buckets, s.deletion_buckets);
        // A version 4 file with tombstones cannot tell where they are.
        let mut old = back.clone();
        old.deletion_buckets.clear();
        assert!(old.may_have_deletions_within(-1000, -1000));
        assert_eq!(deletion_bucket(i64::MIN), 0);
        assert_eq!(deletion_bucket(i64::MAX), DELETION_WORDS * 64 - 1);
    }

    #[test]
    fn droppable_ratio_counts_only_tombstones_before_gc_before() {
        let mut s = SSTableStats::empty(0);
        s.cells = 10;
        s.drop_time_histogram.add(100, 3);
        s.drop_time_histogram.add(1000, 2);
        assert_eq!(s.estimated_droppable_tombstones(50), 0.0);
        assert!((s.estimated_droppable_tombstones(500) - 0.3).abs() < 1e-9);
        assert!((s.estimated_droppable_tombstones(5000) - 0.5).abs() < 1e-9);
    }
}
