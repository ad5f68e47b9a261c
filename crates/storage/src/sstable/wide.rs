//! Wide partitions a row at a time: reading one input's rows block by block (through the row
//! index) and writing a partition whose rows arrive as a stream. Compaction uses both for
//! partitions too large to merge in memory, so its memory is bounded by row-index blocks and
//! chunks, not by the partition.

use super::format::{BlockRows, ReadCells};
use super::{
    IndexEntry, RowBlock, SSTableReader, SSTableWriter, ROW_INDEX_BLOCK_BYTES,
    ROW_INDEX_THRESHOLD_BYTES,
};
use crate::byte_cache::ByteCache;
use crate::clustering::{CKey, ClusteringComparator};
use crate::codec::Reader;
use crate::error::StorageError;
use crate::partition::{Partition, Row};
use crate::sstable::ChunkKey;
use std::collections::VecDeque;

/// The rows of one partition of one SSTable, decoded one row-index block at a time.
pub struct RowCursor<'a> {
    s: &'a SSTableReader,
    cache: &'a ByteCache<ChunkKey, Vec<u8>>,
    /// (position in the data stream, length, rows) of each block still to read.
    blocks: VecDeque<(u64, u32, u32)>,
    rows: VecDeque<(CKey, Row)>,
}

impl<'a> RowCursor<'a> {
    /// Opens partition `i` of `s`: returns its header (rows empty) and a cursor over its rows.
    pub fn open(
        s: &'a SSTableReader,
        i: usize,
        cache: &'a ByteCache<ChunkKey, Vec<u8>>,
    ) -> Result<(Partition, RowCursor<'a>), StorageError> {
        let e: &IndexEntry = &s.entry(i)?;
        let head = s.read_bytes(e.position, e.header_len, Some(cache))?;
        let (p, n) = s
            .format
            .decode_partition_header(
                &mut Reader::new(&head, "sstable partition header"),
                &s.cmp,
                e,
            )
            .map_err(|_| s.corrupt(e.position))?;
        if e.header_len > e.length {
            return Err(s.corrupt(e.position));
        }
        let blocks: VecDeque<(u64, u32, u32)> = if e.blocks.is_empty() {
            std::iter::once((
                e.position + u64::from(e.header_len),
                e.length - e.header_len,
                n as u32,
            ))
            .collect()
        } else {
            e.blocks
                .iter()
                .map(|b| (e.position + u64::from(b.offset), b.length, b.rows))
                .collect()
        };
        let cursor = RowCursor {
            s,
            cache,
            blocks,
            rows: VecDeque::new(),
        };
        Ok((p, cursor))
    }

    /// The next row's clustering, loading the next block when needed.
    pub fn peek(&mut self) -> Result<Option<&CKey>, StorageError> {
        while self.rows.is_empty() {
            let Some((pos, len, n)) = self.blocks.pop_front() else {
                return Ok(None);
            };
            let bytes = self.s.read_bytes(pos, len, Some(self.cache))?;
            self.s
                .format
                .decode_keyed_rows(
                    &mut Reader::new(&bytes, "sstable row block"),
                    &self.s.cmp,
                    n as usize,
                    &mut self.rows,
                )
                .map_err(|_| self.s.corrupt(pos))?;
        }
        Ok(self.rows.front().map(|(k, _)| k))
    }

    pub fn pop(&mut self) -> Option<(CKey, Row)> {
        self.rows.pop_front()
    }
}

impl SSTableWriter {
    /// Appends a partition whose rows come from `next_row`, in clustering order; `header` holds
    /// everything but the rows, and `row_count` must be exactly the number of rows produced
    /// (the format announces it before the rows).
    pub fn append_streamed(
        &mut self,
        header: &Partition,
        row_count: u32,
        next_row: &mut dyn FnMut() -> Option<Result<(CKey, Row), StorageError>>,
    ) -> Result<(), StorageError> {
        self.refuse_if_columnar()?;
        self.check_order(header.token, &header.key)?;
        let start = self.logical_pos;
        let mut buf = Vec::new();
        let format = self.format_for(header);
        let header_len = format.encode_partition_header(&mut buf, header, row_count);
        self.emit(&buf)?;
        self.note_stats(header);
        let mut blocks: Vec<RowBlock> = Vec::new();
        let mut produced = 0u32;
        let mut last: Option<CKey> = None;
        while let Some(item) = next_row() {
            let (k, r) = item?;
            if last.as_ref().is_some_and(|l| *l >= k) {
                return Err(StorageError::InvalidRequest(
                    "streamed rows out of order".into(),
                ));
            }
            let offset = (self.logical_pos - start) as usize;
            match blocks.last_mut() {
                Some(b) if offset - (b.offset as usize) < ROW_INDEX_BLOCK_BYTES => b.rows += 1,
                _ => blocks.push(RowBlock {
                    first: k.values.clone(),
                    offset: offset as u32,
                    length: 0,
                    rows: 1,
                }),
            }
            buf.clear();
            format.encode_keyed_row(&mut buf, &k, &r);
            self.emit(&buf)?;
            // Statistics through a one-row partition: the same code as whole partitions.
            let mut one = Partition::new(header.key.clone(), header.token);
            one.rows.insert(k.clone(), Box::new(r));
            self.note_stats(&one);
            last = Some(k);
            produced += 1;
        }
        if produced != row_count {
            return Err(StorageError::InvalidRequest(format!(
                "streamed partition announced {row_count} rows, produced {produced}"
            )));
        }
        let len = self.logical_pos - start;
        let len32 = u32::try_from(len).map_err(|_| {
            StorageError::InvalidRequest(format!("partition of {len} bytes is too large"))
        })?;
        if len as usize > ROW_INDEX_THRESHOLD_BYTES {
            let ends: Vec<u32> = blocks
                .iter()
                .skip(1)
                .map(|b| b.offset)
                .chain(std::iter::once(len32))
                .collect();
            for (b, end) in blocks.iter_mut().zip(ends) {
                b.length = end - b.offset;
            }
        } else {
            blocks.clear();
        }
        self.index_partition(&IndexEntry {
            token: header.token,
            key: header.key.clone(),
            position: start,
            length: len32,
            header_len: header_len as u32,
            blocks,
        });
        Ok(())
    }

    /// True when nothing was appended.
    pub fn is_empty(&self) -> bool {
        self.index_count == 0
    }
}

/// The rows of one partition inside some clustering ranges, as one SSTable gives them: in
/// clustering order within each row-index block, blocks in the read's direction.
pub(crate) struct SlicedRows {
    /// The partition's header: key, deletion, static row, range tombstones; no rows.
    pub header: Partition,
    pub rows: Vec<(CKey, Row)>,
    /// Whether the read stopped at its row allowance: rows beyond the edge were not read.
    pub stopped: bool,
    /// The index in `rows` of the last row in the read's direction, when any was read.
    pub edge: Option<usize>,
}

impl SSTableReader {
    /// Like `read_partition_sliced`, but stops once the blocks read (in clustering order, or
    /// reverse order when `reversed`) hold at least `max_rows` rows inside `ranges`. Returns the
    /// clustering up to which the result is complete when it stopped early: rows beyond it in
    /// the read's direction were not read. Only rows inside `ranges` are returned.
    pub fn read_partition_sliced_upto(
        &self,
        e: &IndexEntry,
        ranges: &[(CKey, CKey)],
        reversed: bool,
        max_rows: usize,
        cache: Option<&ByteCache<ChunkKey, Vec<u8>>>,
        wanted: ReadCells<'_>,
    ) -> Result<(Partition, Option<CKey>), StorageError> {
        let read = self.read_rows_sliced_upto(e, ranges, reversed, max_rows, cache, wanted)?;
        Ok(if read.stopped {
            finish(read.header, read.rows, read.edge, reversed)
        } else {
            (finish(read.header, read.rows, None, reversed).0, None)
        })
    }

    /// `read_partition_sliced_upto`'s rows as the SSTable holds them, not put in a map: a read
    /// with no other source to merge builds its live rows straight from them.
    pub(crate) fn read_rows_sliced_upto(
        &self,
        e: &IndexEntry,
        ranges: &[(CKey, CKey)],
        reversed: bool,
        max_rows: usize,
        cache: Option<&ByteCache<ChunkKey, Vec<u8>>>,
        wanted: ReadCells<'_>,
    ) -> Result<SlicedRows, StorageError> {
        if let Some(read) = self.columnar_sliced(e, ranges) {
            return read;
        }
        // Every row takes at least a byte: a partition with fewer bytes of rows than the
        // allowance is read whole, in place (a scan's small partitions).
        let row_bytes = e.length.saturating_sub(e.header_len) as usize;
        let whole = max_rows == usize::MAX || row_bytes < max_rows;
        if e.blocks.is_empty() && whole {
            return self.read_rows_whole(e, ranges, cache, wanted);
        }
        let head = self.read_bytes(e.position, e.header_len, cache)?;
        let (p, row_count) = self
            .format
            .decode_partition_header(
                &mut Reader::new(&head, "sstable partition header"),
                &self.cmp,
                e,
            )
            .map_err(|_| self.corrupt(e.position))?;
        // A partition under the row-index threshold is one block of all its rows: a page that
        // resumes inside it skips the rows before the slice undecoded, and one that ends inside
        // it stops at the allowance, instead of decoding the whole partition each time.
        let unindexed;
        let overlapping: Vec<&RowBlock> = if e.blocks.is_empty() {
            let fits = row_count <= max_rows && crate::clustering::covers_all(ranges);
            if fits {
                return self.read_rows_whole(e, ranges, cache, wanted);
            }
            unindexed = RowBlock {
                first: Vec::new(),
                offset: e.header_len,
                length: u32::try_from(row_bytes).map_err(|_| self.corrupt(e.position))?,
                rows: u32::try_from(row_count).map_err(|_| self.corrupt(e.position))?,
            };
            vec![&unindexed]
        } else {
            overlapping_blocks(&e.blocks, ranges, &self.cmp)
                .into_iter()
                .filter_map(|i| e.blocks.get(i))
                .collect()
        };
        let order: Box<dyn Iterator<Item = &&RowBlock>> = if reversed {
            Box::new(overlapping.iter().rev())
        } else {
            Box::new(overlapping.iter())
        };
        // The blocks' rows, gathered and put in the partition's map once at the end: each block
        // merged into the map would copy the map, and counting the rows kept so far in the map
        // would walk it, per block (a 5,000-row page read 50 blocks that way: quadratic).
        // Sized up front (growing a page of rows copies it each time), within a bound that
        // row counts read from a damaged file cannot push past.
        let expected: usize = overlapping.iter().map(|b| b.rows as usize).sum();
        let mut out = SlicedRows {
            header: p,
            rows: Vec::with_capacity(expected.min(max_rows).min(MAX_PRESIZED_ROWS)),
            stopped: false,
            // Where the rows read so far end in the read's direction: the last row of the last
            // block forward, the first row of the last block reversed (blocks go backwards).
            edge: None,
        };
        for b in order {
            if max_rows != usize::MAX && out.rows.len() >= max_rows {
                out.stopped = true;
                return Ok(out);
            }
            // Forward, a block can stop at the row that completes the allowance; reversed, the
            // rows wanted are the block's last ones, so it is read whole.
            let keep = if reversed {
                usize::MAX
            } else {
                max_rows.saturating_sub(out.rows.len())
            };
            let pos = e.position + u64::from(b.offset);
            let bytes = bytes::Bytes::from(self.read_bytes(pos, b.length, cache)?);
            let before = out.rows.len();
            // Only rows inside the ranges are added.
            let stopped = self
                .format
                .decode_rows_in(
                    &mut Reader::new(&bytes, "sstable row block"),
                    &self.cmp,
                    b.rows as usize,
                    &mut out.rows,
                    &BlockRows {
                        ranges,
                        keep,
                        cells: wanted.of(&bytes),
                    },
                )
                .map_err(|_| self.corrupt(pos))?;
            if out.rows.len() > before {
                out.edge = Some(if reversed { before } else { out.rows.len() - 1 });
            }
            if stopped {
                out.stopped = true;
                return Ok(out);
            }
        }
        Ok(out)
    }

    /// A partition without a row index read whole, decoded where its chunk holds it (a scan's
    /// small partitions are not copied out first), keeping the rows inside `ranges`.
    fn read_rows_whole(
        &self,
        e: &IndexEntry,
        ranges: &[(CKey, CKey)],
        cache: Option<&ByteCache<ChunkKey, Vec<u8>>>,
        wanted: ReadCells<'_>,
    ) -> Result<SlicedRows, StorageError> {
        let span = self.span_from(e.position, e.length, |ci| self.read_chunk(ci, cache))?;
        let bytes = span.into_bytes();
        let mut r = Reader::new(&bytes, "sstable partition");
        let (header, n) = self
            .format
            .decode_partition_header(&mut r, &self.cmp, e)
            .map_err(|_| self.corrupt(e.position))?;
        let mut rows = Vec::with_capacity(n.min(r.remaining()).min(MAX_PRESIZED_ROWS));
        self.format
            .decode_rows_in(
                &mut r,
                &self.cmp,
                n,
                &mut rows,
                &BlockRows {
                    ranges,
                    keep: usize::MAX,
                    cells: wanted.of(&bytes),
                },
            )
            .map_err(|_| self.corrupt(e.position))?;
        let edge = rows.len().checked_sub(1);
        Ok(SlicedRows {
            header,
            rows,
            stopped: false,
            edge,
        })
    }
}

/// Rows a sliced read makes room for before reading them.
const MAX_PRESIZED_ROWS: usize = 1 << 16;

/// Puts the gathered `rows` into `p` and names the clustering at `edge` (an index into `rows`):
/// where a read that stopped early is complete up to. Rows are in order within a block and
/// blocks come in the read's direction, so building the map sorts runs, not rows.
fn finish(
    mut p: Partition,
    rows: Vec<(CKey, Row)>,
    edge: Option<usize>,
    reversed: bool,
) -> (Partition, Option<CKey>) {
    let at = match edge.and_then(|i| rows.get(i)) {
        Some((k, _)) => Some(k.clone()),
        // Nothing read from the blocks: the edge is the map's own, as before any block.
        None => if reversed {
            p.rows.first_key_value()
        } else {
            p.rows.last_key_value()
        }
        .map(|(k, _)| k.clone()),
    };
    let mut block: crate::partition::Rows =
        rows.into_iter().map(|(k, r)| (k, Box::new(r))).collect();
    p.rows.append(&mut block);
    (p, at)
}

/// Indexes of the row-index blocks that may hold rows of `ranges`, in order: a binary search per
/// range over the blocks' first clusterings (a block runs up to the next block's first).
fn overlapping_blocks(
    blocks: &[RowBlock],
    ranges: &[(CKey, CKey)],
    cmp: &ClusteringComparator,
) -> Vec<usize> {
    let mut spans: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for (start, end) in ranges {
        if start > end {
            continue;
        }
        let at_or_before = |k: &CKey| {
            blocks.partition_point(|b| {
                cmp.compare(&b.first, 0, &k.values, k.weight) != std::cmp::Ordering::Greater
            })
        };
        let first = at_or_before(start).saturating_sub(1);
        let past = at_or_before(end);
        if past > first {
            spans.push((first, past));
        }
    }
    spans.sort_unstable();
    let mut out: Vec<usize> = Vec::new();
    for (first, past) in spans {
        let from = out.last().map_or(first, |&l| first.max(l + 1));
        out.extend(from..past);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clustering::tests::Bytewise;
    use crate::types::ClusteringColumn;
    use bytes::Bytes;
    use std::sync::Arc;

    #[test]
    fn overlapping_blocks_match_a_linear_check() {
        let cmp = Arc::new(ClusteringComparator::new(vec![ClusteringColumn {
            cmp: Arc::new(Bytewise),
            descending: false,
        }]));
        // Offset so that big-endian bytes order as the numbers do.
        let key = |v: i32| {
            CKey::row(
                vec![Bytes::copy_from_slice(&(v + 1000).to_be_bytes())],
                &cmp,
            )
        };
        // Blocks starting at 0, 10, 20, ... 90.
        let blocks: Vec<RowBlock> = (0..10)
            .map(|i| RowBlock {
                first: key(i * 10).values,
                offset: 0,
                length: 0,
                rows: 10,
            })
            .collect();
        let linear = |ranges: &[(CKey, CKey)]| -> Vec<usize> {
            (0..blocks.len())
                .filter(|&i| {
                    let first = key(i as i32 * 10);
                    let next = (i + 1 < blocks.len()).then(|| key(i as i32 * 10 + 10));
                    ranges
                        .iter()
                        .any(|(s, e)| s <= e && first <= *e && !matches!(&next, Some(n) if n <= s))
                })
                .collect()
        };
        for (a, b) in [
            (-5, -1),
            (-5, 0),
            (0, 0),
            (5, 15),
            (10, 10),
            (9, 10),
            (95, 200),
            (30, 20),
        ] {
            let r = vec![(key(a), key(b))];
            assert_eq!(
                overlapping_blocks(&blocks, &r, &cmp),
                linear(&r),
                "{a}..{b}"
            );
        }
        let r = vec![(key(5), key(12)), (key(11), key(25)), (key(70), key(71))];
        assert_eq!(overlapping_blocks(&blocks, &r, &cmp), linear(&r));
    }
}
