//! SSTables, format "hl-1". One generation is a set of files `hl-1-<gen>-<Component>`:
//!
//! * `Data.db` — the partitions (codec/compact.rs encoding; codec/format1.rs in data format
//!   1, see format.rs) back to back as one logical stream, cut into
//!   chunks of `chunk_length_in_kb`. Each chunk on disk:
//!   `[u8 chunk algorithm][u24 BE stored_len][u32 BE uncompressed_len][u32 BE crc32c(stored
//!   bytes)][stored bytes]`; chunk algorithm 0 = the file's (files written before it existed),
//!   1 raw, 2 lz4, 3 zstd, 4 deflate (compression.rs).
//! * `CompressionInfo.db` — `"hl-1" | u8 algorithm (0 none, 1 lz4, 2 zstd, 3 deflate) | u32 chunk_len |
//!   u64 uncompressed_len | u32 n_chunks | n_chunks * u64 file offset of the chunk | u32 crc32c`.
//! * `Index.db` — in data format 1 (format 2: sstable/format.rs)
//!   `"hl-1" | u32 n | n * entry | u32 crc32c`, in (token, key) order;
//!   `entry = key: u32 len + bytes, token i64, position u64 in the logical stream, length u32,
//!   header_len u32, u32 n_blocks, n_blocks * (first clustering: u16 count + count * (u32 len +
//!   bytes), u32 offset in partition, u32 length, u32 rows)`. Partitions over 64 KiB get a row
//!   index of ~64 KiB blocks, so a slice reads only the header and the blocks it overlaps. It
//!   stays on disk; a reader holds only a partition summary of every 128th entry
//!   (sstable/index.rs).
//! * `Filter.db` — bloom filter (bloom.rs).
//! * `Statistics.db` — see sstable/statistics.rs.
//! * `TOC.txt` — the component names, written last: a generation without it is incomplete and
//!   deleted at load.
//! * `Repair.txt` — the incremental-repair state, when not unrepaired (repair.rs); not in the
//!   TOC, as it changes after the SSTable is written.

use crate::byte_cache::ByteCache;
use crate::clustering::{CKey, ClusteringComparator};
use crate::codec::{crc32c, crc32c_update, Reader, Writer};
use crate::error::StorageError;
use crate::partition::Partition;
use crate::sstable::bloom::BloomFilter;
use crate::types::CompressionOptions;
use bytes::Bytes;
use compression::{ChunkCodec, STORED_LEN_MASK};
use helenus_types::SharedClock;
pub use statistics::SSTableStats;
use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) mod bloom;
mod columnar_data;
pub(crate) mod compression;
pub(crate) mod format;
pub(crate) mod index;
pub(crate) mod raw;
mod reader;
pub(crate) mod repair;
mod sink;
use sink::ChunkSink;
pub(crate) mod statistics;
#[cfg(test)]
mod tests;
pub(crate) mod tools;
pub(crate) mod wide;
pub(crate) mod writeback;
mod writer;

pub(crate) use columnar_data::segment_schema;
pub(crate) use format::ReadCells;
use format::{DataFormat, CURRENT_DATA_FORMAT};
pub use index::IndexIter;
use index::PartitionIndex;

const MAGIC: &[u8; 4] = b"hl-1";
pub(crate) const COMPONENTS: [&str; 5] = [
    "Data.db",
    "CompressionInfo.db",
    "Index.db",
    "Filter.db",
    "Statistics.db",
];
/// A columnar SSTable's components: its segment in place of Data.db and CompressionInfo.db.
pub(crate) const COLUMNAR_COMPONENTS: [&str; 4] =
    ["Columns.db", "Index.db", "Filter.db", "Statistics.db"];

/// Every component name either kind of SSTable may have (for cleanup and streaming).
pub(crate) fn all_component_names() -> impl Iterator<Item = &'static str> {
    COMPONENTS
        .iter()
        .chain(COLUMNAR_COMPONENTS.iter().take(1))
        .copied()
}
/// Upper bound on a chunk so a corrupt length cannot trigger a huge allocation.
const MAX_CHUNK_BYTES: usize = 16 << 20;

/// Path of one component of a generation.
pub fn component_path(dir: &Path, gen: u64, component: &str) -> PathBuf {
    dir.join(format!("hl-1-{gen}-{component}"))
}

/// Generations in `dir` that have a TOC (complete), ascending; incomplete ones are removed.
pub fn list_generations(dir: &Path) -> Result<Vec<u64>, StorageError> {
    let mut complete = Vec::new();
    let mut all = std::collections::BTreeSet::new();
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(complete),
        Err(e) => return Err(StorageError::io(dir, e)),
    };
    for ent in rd.flatten() {
        let name = ent.file_name().to_string_lossy().to_string();
        let Some(rest) = name.strip_prefix("hl-1-") else {
            continue;
        };
        let Some((gen, comp)) = rest.split_once('-') else {
            continue;
        };
        let Ok(gen) = gen.parse::<u64>() else {
            continue;
        };
        all.insert(gen);
        if comp == "TOC.txt" {
            complete.push(gen);
        }
    }
    for gen in all {
        // A repair state being written when the node stopped: the sidecar holds the old one.
        let _ = fs::remove_file(component_path(dir, gen, repair::REPAIR_TMP_COMPONENT));
        if !complete.contains(&gen) {
            for c in all_component_names().chain(["Columns.db.tmp", repair::REPAIR_COMPONENT]) {
                let _ = fs::remove_file(component_path(dir, gen, c));
            }
        }
    }
    complete.sort_unstable();
    Ok(complete)
}

/// One index entry: where a partition lives in the logical data stream.
#[derive(Debug, Clone)]
pub struct IndexEntry {
    pub token: i64,
    pub key: Bytes,
    pub position: u64,
    pub length: u32,
    /// Bytes before the first row (key, deletions, static row, row count).
    pub header_len: u32,
    /// Row index (empty for partitions under `ROW_INDEX_THRESHOLD_BYTES`).
    pub blocks: Vec<RowBlock>,
}

/// A run of consecutive rows of one partition.
#[derive(Debug, Clone)]
pub struct RowBlock {
    pub first: Vec<Bytes>,
    pub offset: u32,
    pub length: u32,
    pub rows: u32,
}

/// Partitions larger than this get a row index.
const ROW_INDEX_THRESHOLD_BYTES: usize = 64 << 10;
/// Target size of one row-index block: a `LIMIT`ed slice decodes a block or two, so smaller
/// blocks mean less work per read (at 64 KiB a 100-row slice decoded ~1,000 rows of a
/// 100-byte-row partition) for a larger index entry (one block per 16 KiB of partition).
const ROW_INDEX_BLOCK_BYTES: usize = 16 << 10;

/// The row-index blocks of a partition of `len` encoded bytes whose rows start at `starts`
/// (relative offsets): (first row's number, offset, length, rows). None below the threshold.
fn block_spans(starts: &[usize], len: usize) -> Vec<(usize, u32, u32, u32)> {
    if len <= ROW_INDEX_THRESHOLD_BYTES {
        return Vec::new();
    }
    let mut spans: Vec<(usize, u32, u32, u32)> = Vec::new();
    for (row, &start) in starts.iter().enumerate() {
        match spans.last_mut() {
            Some(b) if start - (b.1 as usize) < ROW_INDEX_BLOCK_BYTES => b.3 += 1,
            _ => spans.push((row, start as u32, 0, 1)),
        }
    }
    let ends: Vec<u32> = spans
        .iter()
        .skip(1)
        .map(|b| b.1)
        .chain(std::iter::once(len as u32))
        .collect();
    for (b, end) in spans.iter_mut().zip(ends) {
        b.2 = end - b.1;
    }
    spans
}

/// Writes one SSTable generation.
pub struct SSTableWriter {
    dir: PathBuf,
    gen: u64,
    /// The CompressionInfo code of the table's compression.
    file_code: u8,
    chunk_len: usize,
    /// The Data.db stream; None once a columnar writer (`use_columns`) has dropped it.
    sink: Option<ChunkSink>,
    pending: Vec<u8>,
    logical_pos: u64,
    /// Index.db entries encoded as partitions arrive (the count goes in front at the end).
    index_body: Vec<u8>,
    /// A columnar SSTable's sampled Index.db (its entries do not go to `index_body`).
    sampled_index: index::SampledIndexBody,
    index_count: usize,
    /// The statistics' cell count when the last partition was indexed: the next one's cells
    /// are the difference.
    cells_indexed: u64,
    /// The last partition's (token, key), for the order check.
    last_key: Option<(i64, Bytes)>,
    filter: BloomFilter,
    stats: SSTableStats,
    /// Smallest / largest row clustering so far (for the statistics' clustering bounds).
    min_ck: Option<CKey>,
    max_ck: Option<CKey>,
    scratch: Vec<u8>,
    format: DataFormat,
    /// Whether the timestamp base of `format` is fixed (it is, once the first partition is in).
    base_chosen: bool,
    /// The base of a first partition with no timestamps.
    clock: SharedClock,
    /// A columnar SSTable's segment (`Columns.db`), which takes the partitions instead of the
    /// Data.db stream (see `columnar_data.rs`).
    columns: Option<crate::columnar::SegmentWriter>,
}

fn read_checked(path: &Path) -> Result<Vec<u8>, StorageError> {
    let buf = fs::read(path).map_err(|e| StorageError::io(path, e))?;
    let corrupt = || StorageError::CorruptSSTable {
        file: path.to_path_buf(),
        reason: "checksum mismatch".into(),
    };
    if buf.len() < 8 || buf.get(..4) != Some(MAGIC.as_slice()) {
        return Err(corrupt());
    }
    let (body, crc) = buf.split_at(buf.len() - 4);
    if crc32c(body).to_be_bytes() != crc {
        return Err(corrupt());
    }
    Ok(body.get(4..).unwrap_or_default().to_vec())
}

/// Key for the decompressed-chunk cache: (SSTable identity, chunk index).
pub type ChunkKey = (u64, u32);

/// Bytes of a Data component: a range of one cached chunk, or copied from several.
pub(crate) enum Span {
    Chunk(Arc<Vec<u8>>, std::ops::Range<usize>),
    Owned(Vec<u8>),
}

impl Span {
    /// The bytes as `Bytes`: a chunk's are shared with it (the chunk lives as long as they
    /// do), owned ones are moved.
    pub(crate) fn into_bytes(self) -> bytes::Bytes {
        match self {
            Span::Chunk(c, r) => bytes::Bytes::from_owner(SharedChunk(c)).slice(r),
            Span::Owned(v) => bytes::Bytes::from(v),
        }
    }
}

/// A decompressed chunk as the owner of `Bytes` that point into it.
struct SharedChunk(Arc<Vec<u8>>);

impl AsRef<[u8]> for SharedChunk {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl std::ops::Deref for Span {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            // The range was checked against the chunk when the span was made.
            Span::Chunk(c, r) => c.get(r.clone()).unwrap_or_default(),
            Span::Owned(v) => v,
        }
    }
}

/// An open SSTable.
pub struct SSTableReader {
    pub dir: PathBuf,
    pub gen: u64,
    /// Unique across tables, for cache keys.
    pub uid: u64,
    data: File,
    data_path: PathBuf,
    algorithm: u8,
    chunk_len: u64,
    chunk_offsets: Vec<u64>,
    /// Index.db on disk behind an in-memory summary: use `entry`, `search`, `entries_from`.
    index: PartitionIndex,
    pub filter: BloomFilter,
    pub stats: SSTableStats,
    /// Row clustering bounds as comparator positions (None when unknown or no rows).
    clustering_bounds: Option<(CKey, CKey)>,
    cmp: Arc<ClusteringComparator>,
    pub(crate) format: DataFormat,
    /// A columnar SSTable's segment; its index entries count segment entries, not bytes.
    columns: Option<columnar_data::ColumnarData>,
    /// Mirrors the Repair.txt sidecar; changed only under the table's `repair_lock`.
    repair: parking_lot::Mutex<repair::RepairState>,
}

static NEXT_UID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
