//! Writing merged partitions into new SSTables, split by size, throttled, with progress reports:
//! shared by flush and compaction.

use super::control::{RateLimiter, Throttle};
use super::worker::Background;
use crate::clustering::{CKey, ClusteringComparator};
use crate::partition::Partition;
use crate::sstable::raw::{rebase_within, ClusteringSpan, EncodedPartition, Horizon};
use crate::sstable::{SSTableReader, SSTableWriter};
use crate::table::Table;
use crate::types::*;
use helenus_types::SharedClock;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A partition ready to write: whole in memory, or a writer of its streamed rows.
pub(crate) enum Merged<'a> {
    Whole(Partition),
    /// A memtable's partition, written as it is.
    Memtable(&'a Partition),
    /// Its token, and the writer of its rows.
    Streamed(i64, Box<StreamedWrite<'a>>),
    /// Copied in encoded form (sstable/raw.rs), with bounds of its rows' clusterings (None when
    /// it has no rows).
    Encoded(EncodedPartition, Option<Arc<ClusteringSpan>>),
}

type StreamedWrite<'a> = dyn FnOnce(&mut SSTableWriter) -> Result<(), StorageError> + 'a;

/// How much a compaction writes between progress reports.
const PROGRESS_STEP_BYTES: u64 = 1 << 20;

/// Where a flush or compaction ends its outputs, and the run they form.
#[derive(Clone, Copy)]
pub(crate) struct OutputShape<'a> {
    /// An output ends (at a partition boundary) once it holds this many bytes, uncompressed.
    pub max_bytes: u64,
    /// Ring tokens (sorted; empty for none): an output holding at least `ring_min_bytes` ends
    /// before the first partition past one of them, so it lies within whole ring ranges.
    pub ring: &'a [i64],
    pub ring_min_bytes: u64,
    /// Written into every output (`SSTableStats::run_id`; 0 for none).
    pub run_id: u64,
}

impl OutputShape<'_> {
    /// One output, of no run: a flush's.
    pub(crate) const WHOLE: OutputShape<'static> = OutputShape {
        max_bytes: u64::MAX,
        ring: &[],
        ring_min_bytes: 0,
        run_id: 0,
    };
}

/// A run id no other run has (on any node: SSTables streamed whole keep theirs): the two
/// halves of a new time UUID, whose timestamp never repeats within the process and whose node
/// is random per process, folded together; never 0.
pub(crate) fn new_run_id() -> u64 {
    let (time, node) = helenus_types::time::new_timeuuid().as_u64_pair();
    (time ^ node).max(1)
}

/// Writes partitions (in order) into one or more SSTables, split as `shape` says.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_outputs<'a>(
    bg: &Background,
    t: &Table,
    def: &TableDef,
    parts: impl Iterator<Item = Result<Merged<'a>, StorageError>>,
    expected_keys: usize,
    level: u32,
    shape: OutputShape<'_>,
    task: u64,
    (limiter, rate_mib_s): (&RateLimiter, &dyn Fn() -> u64),
    timestamp_base: Option<i64>,
) -> Result<Vec<Arc<SSTableReader>>, StorageError> {
    let mut out = Outputs {
        shape,
        range_of_open: 0,
        t,
        def,
        expected_keys,
        level,
        timestamp_base,
        clock: &bg.clock,
        cmp: t.layout.read().cmp.clone(),
        finished: Vec::new(),
        writer: None,
    };
    let mut throttle = Throttle::new(limiter, rate_mib_s);
    let (mut written, mut reported) = (0u64, 0u64);
    for p in parts {
        let n = match p.and_then(|p| out.append(p)) {
            Ok(Some(n)) => n,
            Ok(None) => continue,
            Err(e) => {
                out.abort();
                return Err(e);
            }
        };
        written += n;
        // Progress is for compactionstats: a lock per partition cost more than the copy itself.
        if written - reported >= PROGRESS_STEP_BYTES {
            bg.progress.update(task, written);
            reported = written;
        }
        out.split_if_full()?;
        throttle.wrote(written);
    }
    out.finish()
}

/// The SSTables one flush or compaction range writes: those finished and the one being written.
struct Outputs<'o> {
    shape: OutputShape<'o>,
    /// The ring range (index into the ring tokens' gaps) of the open output's last partition.
    range_of_open: usize,
    t: &'o Table,
    def: &'o TableDef,
    expected_keys: usize,
    level: u32,
    timestamp_base: Option<i64>,
    clock: &'o SharedClock,
    cmp: Arc<ClusteringComparator>,
    finished: Vec<Arc<SSTableReader>>,
    writer: Option<SSTableWriter>,
}

impl Outputs<'_> {
    /// Appends a partition, opening an output if none is open; returns the uncompressed bytes
    /// it took, None for a partition with nothing left to write.
    fn append(&mut self, mut p: Merged<'_>) -> Result<Option<u64>, StorageError> {
        if let Merged::Whole(p) = &mut p {
            p.drop_shadowed();
        }
        let nothing = |p: &Partition| {
            p.deletion.is_none()
                && p.range_tombstones.is_empty()
                && p.static_row.is_empty()
                && p.rows.is_empty()
        };
        match &p {
            Merged::Whole(p) if nothing(p) => return Ok(None),
            Merged::Memtable(p) if nothing(p) => return Ok(None),
            _ => {}
        }
        self.split_at_ring_range(merged_token(&p))?;
        let w = match &mut self.writer {
            Some(w) => w,
            None => self.writer.insert(self.open()?),
        };
        let before = w.uncompressed_bytes();
        match p {
            Merged::Whole(p) => w.append(&p),
            Merged::Memtable(p) => w.append(p),
            Merged::Streamed(_, f) => f(w),
            Merged::Encoded(enc, bounds) => append_encoded(w, enc, bounds.as_deref()),
        }?;
        Ok(Some(w.uncompressed_bytes() - before))
    }

    fn open(&self) -> Result<SSTableWriter, StorageError> {
        let gen = self.t.next_gen.fetch_add(1, Ordering::Relaxed);
        let options = &self.def.options;
        let mut w = SSTableWriter::create(
            &self.t.dir,
            gen,
            &options.compression,
            self.expected_keys,
            options.bloom_filter_fp_chance,
            self.level,
            self.clock.clone(),
        )?;
        if let DataLayout::Columnar(types) = &options.layout {
            w.use_columns(
                &crate::sstable::segment_schema(types, &self.cmp),
                &options.compression,
            )?;
        }
        if let Some(base) = self.timestamp_base {
            w.set_timestamp_base(base);
        }
        w.set_run_id(self.shape.run_id);
        Ok(w)
    }

    /// Finishes the open output when the partition at `token` lies in another ring range
    /// (`(t_i, t_i+1]`) than the output's last partition and the output holds enough; notes
    /// the range of the partition.
    fn split_at_ring_range(&mut self, token: i64) -> Result<(), StorageError> {
        let ring = self.shape.ring;
        if ring.is_empty() {
            return Ok(());
        }
        let range = ring.partition_point(|t| *t < token);
        let min = self.shape.ring_min_bytes;
        if range != self.range_of_open {
            if let Some(w) = self.writer.take_if(|w| w.uncompressed_bytes() >= min) {
                if w.is_empty() {
                    w.abort();
                } else {
                    self.finished.push(w.finish(&self.cmp)?);
                }
            }
        }
        self.range_of_open = range;
        Ok(())
    }

    /// Finishes the open output once it reaches `max_output_bytes`.
    fn split_if_full(&mut self) -> Result<(), StorageError> {
        if let Some(w) = self
            .writer
            .take_if(|w| w.uncompressed_bytes() >= self.shape.max_bytes)
        {
            self.finished.push(w.finish(&self.cmp)?);
        }
        Ok(())
    }

    fn abort(&mut self) {
        if let Some(w) = self.writer.take() {
            w.abort();
        }
    }

    fn finish(mut self) -> Result<Vec<Arc<SSTableReader>>, StorageError> {
        if let Some(w) = self.writer.take() {
            // A streamed partition that merged to nothing may leave a writer with no partition.
            if w.is_empty() {
                w.abort();
            } else {
                self.finished.push(w.finish(&self.cmp)?);
            }
        }
        Ok(self.finished)
    }
}

fn merged_token(p: &Merged<'_>) -> i64 {
    match p {
        Merged::Whole(p) => p.token,
        Merged::Memtable(p) => p.token,
        Merged::Streamed(token, _) => *token,
        Merged::Encoded(enc, _) => enc.token,
    }
}

/// Appends a partition re-encoded for `timestamp_base`; one encoded for another base (an output
/// whose base was not set up front) is re-encoded again.
fn append_encoded(
    w: &mut SSTableWriter,
    enc: EncodedPartition,
    bounds: Option<&(CKey, CKey)>,
) -> Result<(), StorageError> {
    let enc = match w.timestamp_base() {
        Some(base) if base != enc.base_us => rebase_within(
            enc.token,
            enc.key,
            &enc.bytes,
            enc.base_us,
            base,
            Horizon::ALL,
        )?
        .ok_or(StorageError::Decode {
            what: "raw partition changed",
        })?,
        _ => enc,
    };
    w.append_encoded(&enc, bounds)
}
