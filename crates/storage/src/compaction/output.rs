//! Writing merged partitions into new SSTables, split by size, throttled, with progress reports:
//! shared by flush and compaction.

use super::control::Throttle;
use super::progress::Progress;
use crate::clustering::CKey;
use crate::partition::Partition;
use crate::sstable::raw::{rebase_within, ClusteringSpan, EncodedPartition, Horizon};
use crate::sstable::{SSTableReader, SSTableWriter};
use crate::table::Table;
use crate::types::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A partition ready to write: whole in memory, or a writer of its streamed rows.
pub(crate) enum Merged<'a> {
    Whole(Partition),
    /// A memtable's partition, written as it is.
    Memtable(&'a Partition),
    Streamed(Box<StreamedWrite<'a>>),
    /// Copied in encoded form (sstable_raw.rs), with bounds of its rows' clusterings (None when
    /// it has no rows).
    Encoded(EncodedPartition, Option<Arc<ClusteringSpan>>),
}

type StreamedWrite<'a> = dyn FnOnce(&mut SSTableWriter) -> Result<(), StorageError> + 'a;

/// How much a compaction writes between progress reports.
const PROGRESS_STEP_BYTES: u64 = 1 << 20;

/// Writes partitions (in order) into one or more SSTables, splitting at partition boundaries once
/// an output exceeds `max_output_bytes`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_outputs<'a>(
    progress: &Progress,
    t: &Table,
    def: &TableDef,
    parts: impl Iterator<Item = Result<Merged<'a>, StorageError>>,
    expected_keys: usize,
    level: u32,
    max_output_bytes: u64,
    task: u64,
    rate_mib_s: &dyn Fn() -> u64,
    timestamp_base: Option<i64>,
) -> Result<Vec<Arc<SSTableReader>>, StorageError> {
    let cmp = t.layout.read().cmp.clone();
    let mut outputs = Vec::new();
    let mut writer: Option<SSTableWriter> = None;
    let mut throttle = Throttle::new(rate_mib_s);
    let (mut written, mut reported) = (0u64, 0u64);
    for p in parts {
        let mut p = match p {
            Ok(p) => p,
            Err(e) => {
                if let Some(w) = writer.take() {
                    w.abort();
                }
                return Err(e);
            }
        };
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
            Merged::Whole(p) if nothing(p) => continue,
            Merged::Memtable(p) if nothing(p) => continue,
            _ => {}
        }
        if writer.is_none() {
            let gen = t.next_gen.fetch_add(1, Ordering::Relaxed);
            let fp = def.options.bloom_filter_fp_chance;
            let mut w = SSTableWriter::create(
                &t.dir,
                gen,
                &def.options.compression,
                expected_keys,
                fp,
                level,
            )?;
            if let Some(base) = timestamp_base {
                w.set_timestamp_base(base);
            }
            writer = Some(w);
        }
        let Some(w) = writer.as_mut() else { continue };
        let before = w.uncompressed_bytes();
        let appended = match p {
            Merged::Whole(p) => w.append(&p),
            Merged::Memtable(p) => w.append(p),
            Merged::Streamed(f) => f(w),
            Merged::Encoded(enc, bounds) => append_encoded(w, enc, bounds.as_deref()),
        };
        if let Err(e) = appended {
            if let Some(w) = writer.take() {
                w.abort();
            }
            return Err(e);
        }
        written += w.uncompressed_bytes() - before;
        // Progress is for compactionstats: a lock per partition cost more than the copy itself.
        if written - reported >= PROGRESS_STEP_BYTES {
            progress.update(task, written);
            reported = written;
        }
        if w.uncompressed_bytes() >= max_output_bytes {
            if let Some(w) = writer.take() {
                outputs.push(w.finish(&cmp)?);
            }
        }
        throttle.wrote(written);
    }
    if let Some(w) = writer.take() {
        // A streamed partition that merged to nothing may leave a writer with no partition.
        if w.is_empty() {
            w.abort();
        } else {
            outputs.push(w.finish(&cmp)?);
        }
    }
    Ok(outputs)
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
