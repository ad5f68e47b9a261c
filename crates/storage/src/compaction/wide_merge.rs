//! Bounded-memory compaction of one wide partition: the inputs' rows are merged as streams
//! (one row-index block per input in memory) and written a row at a time. The format announces
//! a partition's row count before its rows, so the merge runs twice: once to count the rows
//! that survive shadowing and purge, once to write them. Twice the reads of that partition buy
//! memory bounded by blocks and the chunk memo instead of the partition's size.

use super::purge::{purge_header, purge_row, MaxPurgeable, PurgeAt};
use crate::byte_cache::ByteCache;
use crate::clustering::CKey;
use crate::error::StorageError;
use crate::partition::{Partition, Row};
use crate::sstable::wide::RowCursor;
use crate::sstable::{ChunkKey, SSTableReader, SSTableWriter};
use std::sync::Arc;

/// Merges the rows of one partition across inputs, dropping shadowed data and purging.
struct RowMerge<'a> {
    cursors: Vec<RowCursor<'a>>,
    /// The merged header before purge: its deletions still shadow rows.
    covering: Partition,
    purge_at: PurgeAt,
    purged: u64,
}

impl RowMerge<'_> {
    fn next_row(&mut self) -> Option<Result<(CKey, Row), StorageError>> {
        loop {
            let mut min: Option<CKey> = None;
            for c in self.cursors.iter_mut() {
                match c.peek() {
                    Err(e) => return Some(Err(e)),
                    Ok(Some(k)) if min.as_ref().is_none_or(|m| k < m) => min = Some(k.clone()),
                    Ok(_) => {}
                }
            }
            let k = min?;
            let mut row: Option<Row> = None;
            for c in self.cursors.iter_mut() {
                if matches!(c.peek(), Ok(Some(x)) if *x == k) {
                    if let Some((_, r)) = c.pop() {
                        match &mut row {
                            Some(a) => a.merge(r),
                            None => row = Some(r),
                        }
                    }
                }
            }
            let Some(mut row) = row else { continue };
            row.drop_shadowed(self.covering.covering_deletion(&k));
            let pa = self.purge_at;
            self.purged += purge_row(
                &mut row,
                pa.gc_before_s,
                &mut MaxPurgeable::Known(pa.max_purgeable_ts),
                pa.now_s,
            );
            if !row.is_empty() {
                return Some(Ok((k, row)));
            }
        }
    }
}

/// Opens every input's partition: the merged header (shadowed parts dropped) and the cursors.
fn open<'a>(
    inputs: &'a [Arc<SSTableReader>],
    batch: &[(usize, usize)],
    memo: &'a ByteCache<ChunkKey, Vec<u8>>,
    purge_at: PurgeAt,
) -> Result<RowMerge<'a>, StorageError> {
    let mut header: Option<Partition> = None;
    let mut cursors = Vec::with_capacity(batch.len());
    for &(si, ii) in batch {
        let Some(s) = inputs.get(si) else { continue };
        let (h, c) = RowCursor::open(s, ii, memo)?;
        match &mut header {
            Some(a) => a.merge(h),
            None => header = Some(h),
        }
        cursors.push(c);
    }
    let mut covering = header.ok_or(StorageError::InvalidRequest(
        "streamed compaction of a partition with no input".into(),
    ))?;
    covering.drop_shadowed();
    Ok(RowMerge {
        cursors,
        covering,
        purge_at,
        purged: 0,
    })
}

/// Merges partition `batch` (input index, index position) of `inputs` into `w` with bounded
/// memory; returns the number of tombstones purged. Appends nothing when everything merged away.
pub(crate) fn write_streamed(
    w: &mut SSTableWriter,
    inputs: &[Arc<SSTableReader>],
    batch: &[(usize, usize)],
    memo: &ByteCache<ChunkKey, Vec<u8>>,
    purge_at: PurgeAt,
) -> Result<u64, StorageError> {
    let mut count = open(inputs, batch, memo, purge_at)?;
    let mut rows = 0u32;
    while let Some(r) = count.next_row() {
        r?;
        rows += 1;
    }
    let mut header = count.covering.clone();
    let header_purged = purge_header(
        &mut header,
        purge_at.gc_before_s,
        &mut MaxPurgeable::Known(purge_at.max_purgeable_ts),
        purge_at.now_s,
    );
    if rows == 0
        && header.deletion.is_none()
        && header.range_tombstones.is_empty()
        && header.static_row.is_empty()
    {
        return Ok(count.purged + header_purged);
    }
    let mut merge = open(inputs, batch, memo, purge_at)?;
    w.append_streamed(&header, rows, &mut || merge.next_row())?;
    Ok(merge.purged + header_purged)
}
