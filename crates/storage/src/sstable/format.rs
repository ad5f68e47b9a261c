//! The data formats an SSTable's Data.db and Index.db can be in, chosen by the statistics'
//! `data_format`: 1 (codec/format1.rs, fixed-width; every file written before format 2) or 2 (compact,
//! codec/compact.rs). New SSTables are written in format 2; format 1 stays readable so existing
//! data needs no rewrite (compaction rewrites it in format 2 as it goes).
//!
//! Index.db in format 2: `"hl-1" | uv n | n * entry | u32 crc32c`, with
//! `entry = vbytes key | i64 token | uv length | uv header_len | uv n_blocks | n_blocks *
//! (uv count + count * vbytes first clustering, uv offset, uv length, uv rows)`. Positions are
//! not stored: partitions are back to back in the data stream, so each starts where the
//! previous one ends. Readers decode entries on demand (sstable/index.rs); `decode_index` (the
//! whole index at once) remains as the tests' reference. A columnar SSTable's Index.db starts
//! `"hl-k"` and holds keyed entries (`encode_keyed_index_entry`).

use super::IndexEntry;
use super::RowBlock;
use crate::clustering::{CKey, ClusteringComparator};
use crate::codec::compact::{Dec, Enc};
use crate::codec::{self, Reader, Writer};
use crate::error::StorageError;
use crate::partition::{Partition, Row};
use crate::types::ColumnId;
use std::collections::VecDeque;
use std::sync::Arc;

/// The data format new SSTables are written in.
pub const CURRENT_DATA_FORMAT: u8 = 2;

/// How one SSTable's partitions are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataFormat {
    /// Format 1: codec/format1.rs, key and token inside each partition.
    Fixed,
    /// Format 2: codec/compact.rs, timestamps relative to `base_us`.
    Compact { base_us: i64 },
}

/// What a slice read keeps of a row block: rows inside `ranges`, at most `keep` of them, with
/// `cells` of them.
pub struct BlockRows<'a> {
    pub ranges: &'a [(CKey, CKey)],
    pub keep: usize,
    pub cells: Cells<'a>,
}

/// Which cell values a read copies: those of `columns` only (None: all; see `Dec::projected`),
/// pointing into `shared` (the bytes decoded) when set (see `Dec::sharing`).
#[derive(Clone, Copy, Default)]
pub struct Cells<'a> {
    pub columns: Option<&'a [ColumnId]>,
    pub shared: Option<&'a bytes::Bytes>,
}

/// What a read asks of the cells it decodes: the values of `columns` only (None: all), and
/// whether they may point into the decompressed data (`Dec::sharing`).
#[derive(Clone, Copy, Default)]
pub struct ReadCells<'a> {
    pub columns: Option<&'a [ColumnId]>,
    pub share: bool,
}

impl<'a> ReadCells<'a> {
    /// The cells of a buffer decoded for this read.
    pub fn of(self, buf: &'a bytes::Bytes) -> Cells<'a> {
        Cells {
            columns: self.columns,
            shared: self.share.then_some(buf),
        }
    }
}

impl DataFormat {
    /// The format the statistics describe.
    pub fn from_stats(code: u8, base_us: i64) -> Result<Self, StorageError> {
        match code {
            0 | 1 => Ok(DataFormat::Fixed),
            2 => Ok(DataFormat::Compact { base_us }),
            _ => Err(StorageError::Decode {
                what: "sstable data format",
            }),
        }
    }

    pub fn code(self) -> u8 {
        match self {
            DataFormat::Fixed => 1,
            DataFormat::Compact { .. } => 2,
        }
    }

    pub fn base_us(self) -> i64 {
        match self {
            DataFormat::Fixed => 0,
            DataFormat::Compact { base_us } => base_us,
        }
    }

    pub fn encode_partition_indexed(
        self,
        out: &mut Vec<u8>,
        p: &Partition,
        row_starts: &mut Vec<usize>,
    ) -> usize {
        match self {
            DataFormat::Fixed => codec::encode_partition_indexed(out, p, row_starts),
            DataFormat::Compact { base_us } => {
                Enc { out, base_us }.partition_indexed(p, row_starts)
            }
        }
    }

    pub fn encode_partition_header(self, out: &mut Vec<u8>, p: &Partition, n: u32) -> usize {
        match self {
            DataFormat::Fixed => codec::encode_partition_header(out, p, n),
            DataFormat::Compact { base_us } => Enc { out, base_us }.partition_header(p, n),
        }
    }

    pub fn encode_keyed_row(self, out: &mut Vec<u8>, k: &CKey, r: &Row) {
        match self {
            DataFormat::Fixed => codec::encode_keyed_row(out, k, r),
            DataFormat::Compact { base_us } => Enc { out, base_us }.keyed_row(k, r),
        }
    }

    /// Decodes the header of the partition `e` points to; format 1 checks the stored key and
    /// token against the entry (a mismatch is corruption).
    pub fn decode_partition_header(
        self,
        r: &mut Reader<'_>,
        cmp: &Arc<ClusteringComparator>,
        e: &IndexEntry,
    ) -> Result<(Partition, usize), StorageError> {
        let (p, n) = match self {
            DataFormat::Fixed => codec::decode_partition_header(r, cmp)?,
            DataFormat::Compact { base_us } => {
                Dec::new(r, base_us).partition_header(cmp, e.key.clone(), e.token)?
            }
        };
        if p.token != e.token || p.key != e.key {
            return Err(StorageError::Decode {
                what: "partition key",
            });
        }
        Ok((p, n))
    }

    /// Decodes the whole partition `e` points to; `columns`: the regular columns a read
    /// returns (None: all; see `Dec::projected`).
    pub fn decode_partition(
        self,
        r: &mut Reader<'_>,
        cmp: &Arc<ClusteringComparator>,
        e: &IndexEntry,
        wanted: &Cells<'_>,
    ) -> Result<Partition, StorageError> {
        let (mut p, n) = self.decode_partition_header(r, cmp, e)?;
        match self {
            DataFormat::Fixed => codec::decode_rows(r, cmp, n, &mut p)?,
            DataFormat::Compact { base_us } => Dec::projected(r, base_us, wanted.columns)
                .sharing(wanted.shared)
                .rows(cmp, n, &mut p)?,
        }
        Ok(p)
    }

    /// Appends a row block's `n` rows inside `wanted.ranges` to `out` in clustering order; the
    /// compact format keeps only what `wanted` asks for (format 1 decodes every row whole).
    /// Returns whether it stopped at `wanted.keep` rows.
    pub fn decode_rows_in(
        self,
        r: &mut Reader<'_>,
        cmp: &Arc<ClusteringComparator>,
        n: usize,
        out: &mut Vec<(CKey, Row)>,
        wanted: &BlockRows<'_>,
    ) -> Result<bool, StorageError> {
        match self {
            DataFormat::Fixed => {
                let mut block = Partition::new(bytes::Bytes::new(), 0);
                codec::decode_rows(r, cmp, n, &mut block)?;
                let inside =
                    |(k, _): &(CKey, Box<Row>)| crate::clustering::in_ranges(wanted.ranges, k);
                out.extend(block.rows.into_iter().filter(inside).map(|(k, r)| (k, *r)));
                Ok(false)
            }
            DataFormat::Compact { base_us } => Dec::projected(r, base_us, wanted.cells.columns)
                .sharing(wanted.cells.shared)
                .rows_in(cmp, n, out, wanted.ranges, wanted.keep),
        }
    }

    pub fn decode_keyed_rows(
        self,
        r: &mut Reader<'_>,
        cmp: &Arc<ClusteringComparator>,
        n: usize,
        out: &mut VecDeque<(CKey, Row)>,
    ) -> Result<(), StorageError> {
        match self {
            DataFormat::Fixed => codec::decode_keyed_rows(r, cmp, n, out),
            DataFormat::Compact { base_us } => Dec::new(r, base_us).keyed_rows(cmp, n, out),
        }
    }

    /// The Index.db body (after the magic, before the checksum).
    #[cfg(test)]
    pub fn encode_index(self, out: &mut Vec<u8>, index: &[IndexEntry]) {
        self.encode_index_count(out, index.len());
        for e in index {
            self.encode_index_entry(out, e);
        }
    }

    /// The entry count that starts an Index.db body.
    pub fn encode_index_count(self, out: &mut Vec<u8>, count: usize) {
        if self == DataFormat::Fixed {
            Writer(out).u32(count as u32);
        } else {
            Enc { out, base_us: 0 }.uv(count as u64);
        }
    }

    /// One Index.db entry (entries follow the count, in partition order).
    pub fn encode_index_entry(self, out: &mut Vec<u8>, e: &IndexEntry) {
        if self == DataFormat::Fixed {
            let mut w = Writer(out);
            w.bytes(&e.key);
            w.i64(e.token);
            w.u64(e.position);
            w.u32(e.length);
            w.u32(e.header_len);
            w.u32(e.blocks.len() as u32);
            for b in &e.blocks {
                w.u16(b.first.len() as u16);
                for v in &b.first {
                    w.bytes(v);
                }
                w.u32(b.offset);
                w.u32(b.length);
                w.u32(b.rows);
            }
            return;
        }
        let mut w = Enc { out, base_us: 0 };
        w.vbytes(&e.key);
        w.out.extend_from_slice(&e.token.to_be_bytes());
        w.uv(u64::from(e.length));
        w.uv(u64::from(e.header_len));
        w.uv(e.blocks.len() as u64);
        for b in &e.blocks {
            w.uv(b.first.len() as u64);
            for v in &b.first {
                w.vbytes(v);
            }
            for v in [b.offset, b.length, b.rows] {
                w.uv(u64::from(v));
            }
        }
    }

    #[cfg(test)]
    /// Decodes an Index.db body.
    pub fn decode_index(self, buf: &[u8]) -> Result<Vec<IndexEntry>, StorageError> {
        let mut r = Reader::new(buf, "index");
        if self == DataFormat::Fixed {
            return decode_fixed_index(&mut r, buf.len());
        }
        let mut d = Dec::new(&mut r, 0);
        // An entry is at least 1 (key length) + 8 (token) + 3 (varints) bytes.
        let n = d.count(12)?;
        let mut index = Vec::with_capacity(n);
        let mut position = 0u64;
        for _ in 0..n {
            let key = d.vbytes()?;
            let token = i64::from_be_bytes(
                d.r.take(8)?
                    .try_into()
                    .map_err(|_| StorageError::Decode { what: "index" })?,
            );
            let length = u32_of(d.uv()?)?;
            let header_len = u32_of(d.uv()?)?;
            let blocks = decode_compact_blocks(&mut d)?;
            index.push(IndexEntry {
                token,
                key,
                position,
                length,
                header_len,
                blocks,
            });
            position += u64::from(length);
        }
        Ok(index)
    }
}

/// One entry of a columnar SSTable's Index.db (sstable/index.rs's `EntryShape::Keyed`): the
/// key, the entry count tagged with whether the token follows, and the token only when it is
/// not the key's Murmur3 token (tables of other partitioners, tests' made-up tokens).
pub fn encode_keyed_index_entry(out: &mut Vec<u8>, e: &IndexEntry) {
    let derived = helenus_types::murmur3_token(&e.key) == e.token;
    let mut w = Enc { out, base_us: 0 };
    w.vbytes(&e.key);
    w.uv(u64::from(e.length) << 1 | u64::from(!derived));
    if !derived {
        w.out.extend_from_slice(&e.token.to_be_bytes());
    }
}

fn u32_of(v: u64) -> Result<u32, StorageError> {
    u32::try_from(v).map_err(|_| StorageError::Decode { what: "index" })
}

/// The row index of one format-2 index entry: a varint count, then per block a counted
/// clustering prefix of varint-length values and varint offset, length and rows.
pub(crate) fn decode_compact_blocks(d: &mut Dec<'_, '_>) -> Result<Vec<RowBlock>, StorageError> {
    let nb = d.count(4)?;
    let mut blocks = Vec::with_capacity(nb);
    for _ in 0..nb {
        let nv = d.count(1)?;
        let first = (0..nv).map(|_| d.vbytes()).collect::<Result<Vec<_>, _>>()?;
        blocks.push(RowBlock {
            first,
            offset: u32_of(d.uv()?)?,
            length: u32_of(d.uv()?)?,
            rows: u32_of(d.uv()?)?,
        });
    }
    Ok(blocks)
}

/// The row index of one format-1 index entry: u32 count, then per block a u16-counted
/// clustering prefix of u32-length values, u32 offset, u32 length, u32 rows.
pub(crate) fn decode_fixed_blocks(r: &mut Reader<'_>) -> Result<Vec<RowBlock>, StorageError> {
    let nb = r.u32()? as usize;
    if nb.saturating_mul(14) > r.remaining() {
        return Err(StorageError::Decode { what: "row index" });
    }
    let mut blocks = Vec::with_capacity(nb);
    for _ in 0..nb {
        let nv = r.u16()? as usize;
        let first = (0..nv).map(|_| r.bytes()).collect::<Result<Vec<_>, _>>()?;
        blocks.push(RowBlock {
            first,
            offset: r.u32()?,
            length: r.u32()?,
            rows: r.u32()?,
        });
    }
    Ok(blocks)
}

#[cfg(test)]
fn decode_fixed_index(r: &mut Reader<'_>, len: usize) -> Result<Vec<IndexEntry>, StorageError> {
    let n = r.u32()? as usize;
    let mut index = Vec::with_capacity(n.min(len / 24 + 1));
    for _ in 0..n {
        let key = r.bytes()?;
        let (token, position, length, header_len) = (r.i64()?, r.u64()?, r.u32()?, r.u32()?);
        let blocks = decode_fixed_blocks(r)?;
        index.push(IndexEntry {
            key,
            token,
            position,
            length,
            header_len,
            blocks,
        });
    }
    Ok(index)
}
