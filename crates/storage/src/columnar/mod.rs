//! Columnar segments: a table's rows stored column by column, for scans that read only the
//! columns a query needs (issue 15). **Not yet wired to tables**: no table option selects this
//! layout, and flush, compaction and reads still write and read row SSTables only. This module
//! is the self-contained foundation they will call.
//!
//! A segment is one file: row groups of up to `SegmentOptions::row_group_rows` entries (rows,
//! static rows, partitions with only deletions), each holding one chunk per stream, then a
//! footer with every chunk's offset, length, CRC32C and statistics (footer.rs). The streams
//! (layout.rs) keep everything Cassandra's reconciliation needs: per-cell timestamps, TTLs and
//! deletion times, row liveness and deletions, partition deletions and range tombstones; what
//! has no column of its own (collections, counters, columns missing from the schema) is kept
//! in an extras stream, so a segment round-trips any partition the row SSTable writer takes.
//!
//! Layers, each using only those above it:
//!
//! ```text
//! bits.rs     varints, zigzag, bit-packing, a bounds-checked cursor
//! vector.rs   typed vectors (i64, f32, f64, offsets + bytes), null bitmaps, value types
//! ints.rs     integer encodings: bit-packed (frame of reference), run-length, delta, dictionary
//! varlen.rs   text/blob encodings: plain, sorted dictionary
//! stats.rs    per-chunk min/max/null count in CQL order (and the values themselves when at
//!             most 8 are distinct), and the predicate-skip rule
//! chunk.rs    one chunk: null bitmap + values, the chooser's encoding, LZ4/zstd when it pays
//! layout.rs   partitions <-> streams (writer side: GroupBuilder; reader side: GroupColumns)
//! footer.rs   the footer index
//! writer.rs   SegmentWriter: partitions in (token, key) order, as the row SSTable writer
//! reader.rs   SegmentReader: pruned scans with chunk skipping; partitions rebuilt for merges
//! ```
//!
//! Wiring it in (a later change): a table option picks the layout; flush and compaction hand
//! the same `Partition`s they give `SSTableWriter::append` to `SegmentWriter::append`; merges
//! read `SegmentReader::for_each_partition`; scans that need few columns call `scan` and
//! reconcile batches across sources by (token, key, clustering) with the cell timestamps in
//! `ColumnBatch::cells`. Chunk skipping is exact for one segment: a scan merging several
//! sources must not skip a row group whose rows another source may update, unless it skips
//! on the merged result (or the table is compacted to one segment per range).

mod bits;
mod chunk;
mod error;
mod footer;
mod ints;
mod layout;
mod reader;
mod stats;
mod varlen;
mod vector;
mod writer;

#[cfg(test)]
mod tests;

pub(crate) use chunk::typed_column;
pub use chunk::{BlockCompression, MAX_CHUNK_ROWS};
pub use error::ColumnarError;
pub use layout::{ClusteringSpec, ColumnSpec, ColumnarSchema};
pub use reader::{
    CellMeta, ColumnBatch, KeyColumns, Restriction, RowGroupBatch, RowMeta, ScanRequest,
    SegmentReader, Target,
};
pub use stats::{ChunkStats, CompareOp, STAT_PREFIX_BYTES};
pub use vector::{Bitmap, BytesVec, Column, ColumnValues, Physical, Scalar, ValueType};
pub use writer::{SegmentOptions, SegmentSummary, SegmentWriter};
