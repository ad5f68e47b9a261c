//! Columnar segments: a table's rows stored column by column, for scans that read only the
//! columns a query needs (issue 15). A table in the columnar layout (`DataLayout::Columnar`)
//! has SSTables whose partitions are a segment (sstable/columnar_data.rs); column scans read
//! them through engine/columnar.rs and read/columnar_scan.rs.
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
//! dict.rs     segment dictionaries of value streams (writer and reader sides)
//! derive.rs   columns fixed by another column in a row group, stored as a mapping from it
//! chunk.rs    one chunk: null bitmap + values, the chooser's encoding, LZ4/zstd when it pays
//! layout.rs   partitions <-> streams (writer side: GroupBuilder; reader side: GroupColumns)
//! footer.rs   the footer index
//! writer.rs   SegmentWriter: partitions in (token, key) order, as the row SSTable writer
//! select.rs   restrictions evaluated on encoded chunks (dictionary codes, no vectors)
//! reader.rs   SegmentReader: pruned scans with chunk skipping; partitions rebuilt for merges
//! ```
//!
//! How the engine uses it: flush and compaction hand `SSTableWriter::append`'s partitions to
//! `SegmentWriter::append`; reads and merges rebuild partitions with `partition_at`; scans
//! that need few columns read groups with `read_group`. Chunk skipping is exact for one
//! segment only: a scan serves a group from its chunks (and skips it by its statistics) only
//! when no other source holds a partition in its token span and its rows carry no deletion or
//! TTL (`group_is_plain`); every other token goes through the merged row path.

mod bits;
mod chunk;
mod derive;
mod dict;
mod error;
mod footer;
mod group_sink;
mod ints;
mod layout;
mod reader;
mod select;
mod stats;
mod varlen;
mod vector;
mod writer;

#[cfg(test)]
mod derive_tests;
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
pub use select::ValuePredicate;
pub use stats::{ChunkStats, CompareOp, STAT_PREFIX_BYTES};
pub use vector::{
    java_double_compare, Bitmap, BytesVec, Column, ColumnValues, Physical, Scalar, ValueType,
};
pub use writer::{SegmentOptions, SegmentSummary, SegmentWriter};
