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

use crate::byte_cache::ByteCache;
use crate::clustering::{CKey, ClusteringComparator};
use crate::codec::{crc32c, crc32c_update, Reader, Writer};
use crate::error::StorageError;
use crate::partition::Partition;
use crate::sstable::bloom::BloomFilter;
use crate::types::CompressionOptions;
use bytes::Bytes;
use compression::{ChunkCodec, STORED_LEN_MASK};
use helenus_types::{SharedClock, SystemClock};
pub use statistics::SSTableStats;
use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) mod bloom;
pub(crate) mod compression;
pub(crate) mod format;
pub(crate) mod index;
pub(crate) mod raw;
mod sink;
use sink::ChunkSink;
pub(crate) mod statistics;
#[cfg(test)]
mod tests;
pub(crate) mod tools;
pub(crate) mod wide;

use format::{DataFormat, CURRENT_DATA_FORMAT};
pub use index::IndexIter;
use index::PartitionIndex;

const MAGIC: &[u8; 4] = b"hl-1";
const COMPONENTS: [&str; 5] = [
    "Data.db",
    "CompressionInfo.db",
    "Index.db",
    "Filter.db",
    "Statistics.db",
];
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
        if !complete.contains(&gen) {
            for c in COMPONENTS {
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
    sink: ChunkSink,
    pending: Vec<u8>,
    logical_pos: u64,
    /// Index.db entries encoded as partitions arrive (the count goes in front at the end).
    index_body: Vec<u8>,
    index_count: usize,
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
}

impl SSTableWriter {
    pub fn create(
        dir: &Path,
        gen: u64,
        compression: &CompressionOptions,
        expected_keys: usize,
        fp_chance: f64,
        level: u32,
    ) -> Result<Self, StorageError> {
        fs::create_dir_all(dir).map_err(|e| StorageError::io(dir, e))?;
        let chunk_len = (compression.chunk_length_in_kb.clamp(1, 4096) as usize) * 1024;
        let codec = ChunkCodec::new(compression);
        Ok(SSTableWriter {
            dir: dir.to_path_buf(),
            gen,
            file_code: codec.file_code(),
            chunk_len,
            sink: ChunkSink::create(dir, gen, codec)?,
            pending: Vec::with_capacity(chunk_len),
            logical_pos: 0,
            index_body: Vec::new(),
            index_count: 0,
            last_key: None,
            filter: BloomFilter::new(expected_keys, fp_chance),
            stats: SSTableStats::empty(level),
            min_ck: None,
            max_ck: None,
            scratch: Vec::new(),
            format: DataFormat::from_stats(CURRENT_DATA_FORMAT, 0)?,
            base_chosen: false,
            clock: SystemClock::shared(),
        })
    }

    /// Writes data format 1, as writers did before format 2 (tests of old files).
    #[cfg(test)]
    pub fn use_fixed_format(&mut self) {
        self.format = DataFormat::Fixed;
    }

    /// The format for the next partition. The timestamp base is the first partition's smallest
    /// timestamp: data is written before its statistics, so the true minimum is not known yet,
    /// and deltas are signed, so any nearby base keeps them short. A partition with no
    /// timestamps (a streamed header) falls back to the clock, near which writes are.
    /// The clock a first partition with no timestamps takes its base from (the system's
    /// unless set).
    pub(crate) fn set_clock(&mut self, clock: SharedClock) {
        self.clock = clock;
    }

    fn format_for(&mut self, p: &Partition) -> DataFormat {
        if !self.base_chosen {
            self.base_chosen = true;
            if let DataFormat::Compact { .. } = self.format {
                let base_us = p
                    .timestamp_range()
                    .map_or_else(|| self.clock.wall_micros(), |(lo, _)| lo);
                self.format = DataFormat::Compact { base_us };
            }
        }
        self.format
    }

    /// Appends a partition; partitions must arrive in (token, key) order.
    pub fn append(&mut self, p: &Partition) -> Result<(), StorageError> {
        self.check_order(p.token, &p.key)?;
        self.scratch.clear();
        let mut starts = Vec::new();
        let header_len =
            self.format_for(p)
                .encode_partition_indexed(&mut self.scratch, p, &mut starts);
        let spans = block_spans(&starts, self.scratch.len());
        let mut keys = p.rows.keys().enumerate();
        let mut blocks = Vec::with_capacity(spans.len());
        for (row, offset, length, rows) in spans {
            let first = keys
                .find(|(i, _)| *i == row)
                .map(|(_, k)| k.values.clone())
                .unwrap_or_default();
            blocks.push(RowBlock {
                first,
                offset,
                length,
                rows,
            });
        }
        self.note_stats(p);
        let scratch = std::mem::take(&mut self.scratch);
        let r = self.push_partition(p.token, &p.key, &scratch, header_len, blocks);
        self.scratch = scratch;
        r
    }

    fn check_order(&self, token: i64, key: &Bytes) -> Result<(), StorageError> {
        match &self.last_key {
            Some((last_token, last_key)) if (*last_token, last_key) >= (token, key) => Err(
                StorageError::InvalidRequest("sstable partitions out of order".into()),
            ),
            _ => Ok(()),
        }
    }

    /// Indexes and writes one encoded partition (its statistics are noted by the caller).
    fn push_partition(
        &mut self,
        token: i64,
        key: &Bytes,
        encoded: &[u8],
        header_len: usize,
        blocks: Vec<RowBlock>,
    ) -> Result<(), StorageError> {
        let len = encoded.len() as u64;
        let length = u32::try_from(len).map_err(|_| {
            StorageError::InvalidRequest(format!("partition of {len} bytes is too large"))
        })?;
        self.index_partition(&IndexEntry {
            token,
            key: key.clone(),
            position: self.logical_pos,
            length,
            header_len: header_len as u32,
            blocks,
        });
        self.emit(encoded)
    }

    /// Adds a partition's entry to the index, the bloom filter and the statistics.
    fn index_partition(&mut self, e: &IndexEntry) {
        self.format.encode_index_entry(&mut self.index_body, e);
        self.index_count += 1;
        self.filter.insert(e.token, &e.key);
        let s = &mut self.stats;
        s.partitions += 1;
        s.max_partition_bytes = s.max_partition_bytes.max(u64::from(e.length));
        s.min_token = s.min_token.min(e.token);
        s.max_token = s.max_token.max(e.token);
        self.last_key = Some((e.token, e.key.clone()));
    }

    /// Adds `p`'s rows, tombstones, timestamps and bounds to the statistics (not the partition
    /// count or size: a wide partition is noted a row at a time).
    fn note_stats(&mut self, p: &Partition) {
        let s = &mut self.stats;
        s.rows += p.rows.len() as u64;
        s.tombstones += p.tombstone_count();
        if let Some((lo, hi)) = p.timestamp_range() {
            s.min_timestamp_us = s.min_timestamp_us.min(lo);
            s.max_timestamp_us = s.max_timestamp_us.max(hi);
        }
        s.max_local_deletion_time_s = s.max_local_deletion_time_s.max(max_ldt(p));
        s.note_partition(p, &mut self.min_ck, &mut self.max_ck);
    }

    /// Appends bytes to the logical data stream, writing every full chunk.
    fn emit(&mut self, bytes: &[u8]) -> Result<(), StorageError> {
        self.logical_pos += bytes.len() as u64;
        let mut rest = bytes;
        while !rest.is_empty() {
            let room = self.chunk_len - self.pending.len();
            let (now, later) = rest.split_at(room.min(rest.len()));
            self.pending.extend_from_slice(now);
            rest = later;
            if self.pending.len() >= self.chunk_len {
                let chunk =
                    std::mem::replace(&mut self.pending, Vec::with_capacity(self.chunk_len));
                self.sink.write_chunk(chunk)?;
            }
        }
        Ok(())
    }

    /// Bytes of data written so far (uncompressed), for output splitting.
    pub fn uncompressed_bytes(&self) -> u64 {
        self.logical_pos
    }

    /// Writes the remaining components and the TOC; returns the opened reader.
    pub fn finish(
        mut self,
        cmp: &Arc<ClusteringComparator>,
    ) -> Result<Arc<SSTableReader>, StorageError> {
        if !self.pending.is_empty() {
            let chunk = std::mem::take(&mut self.pending);
            self.sink.write_chunk(chunk)?;
        }
        // The index and filter do not depend on where the chunks landed: they are encoded and
        // written while the writing thread finishes the data and syncs it.
        let mut head = MAGIC.to_vec();
        self.format.encode_index_count(&mut head, self.index_count);
        let crc = crc32c_update(crc32c(&head), &self.index_body);
        write_file_parts(
            &component_path(&self.dir, self.gen, "Index.db"),
            &[&head, &self.index_body, &crc.to_be_bytes()],
        )?;
        self.index_body = Vec::new();
        let mut fb = Vec::new();
        self.filter.encode(&mut fb);
        write_file(&component_path(&self.dir, self.gen, "Filter.db"), &fb)?;

        let data = self.sink.finish()?;
        self.stats.uncompressed_bytes = self.logical_pos;
        self.stats.data_file_bytes = data.bytes;
        self.stats.min_clustering = self.min_ck.take().map(|k| k.values).unwrap_or_default();
        self.stats.max_clustering = self.max_ck.take().map(|k| k.values).unwrap_or_default();
        self.stats.data_format = self.format.code();
        self.stats.timestamp_base_us = self.format.base_us();

        let mut ci = MAGIC.to_vec();
        {
            let mut w = Writer(&mut ci);
            w.u8(self.file_code);
            w.u32(self.chunk_len as u32);
            w.u64(self.logical_pos);
            w.u32(data.chunk_offsets.len() as u32);
            for o in &data.chunk_offsets {
                w.u64(*o);
            }
        }
        let crc = crc32c(&ci);
        ci.extend_from_slice(&crc.to_be_bytes());
        write_file(
            &component_path(&self.dir, self.gen, "CompressionInfo.db"),
            &ci,
        )?;
        let mut sb = Vec::new();
        self.stats.encode(&mut sb);
        write_file(&component_path(&self.dir, self.gen, "Statistics.db"), &sb)?;
        let toc = COMPONENTS.join("\n") + "\nTOC.txt\n";
        write_file(
            &component_path(&self.dir, self.gen, "TOC.txt"),
            toc.as_bytes(),
        )?;
        if let Ok(d) = File::open(&self.dir) {
            let _ = d.sync_all();
        }
        SSTableReader::open(&self.dir, self.gen, cmp)
    }

    /// Removes a half-written generation (error path).
    pub fn abort(self) {
        let _ = self.sink.finish();
        for c in std::iter::once(&"TOC.txt").chain(COMPONENTS.iter()) {
            let _ = fs::remove_file(component_path(&self.dir, self.gen, c));
        }
    }
}

fn max_ldt(p: &Partition) -> i64 {
    let mut m = p.deletion.map_or(i64::MIN, |d| d.local_deletion_time_s);
    for rt in &p.range_tombstones {
        m = m.max(rt.2.local_deletion_time_s);
    }
    for r in std::iter::once(&p.static_row).chain(p.rows.values()) {
        if let Some(d) = r.deletion {
            m = m.max(d.local_deletion_time_s);
        }
        for c in r.cells.values() {
            if let Some(t) = c.tombstone_time_s(i64::MAX) {
                m = m.max(t);
            }
        }
    }
    m
}

fn write_file(path: &Path, data: &[u8]) -> Result<(), StorageError> {
    write_file_parts(path, &[data])
}

/// Writes `parts` one after the other as the whole file, and syncs it.
fn write_file_parts(path: &Path, parts: &[&[u8]]) -> Result<(), StorageError> {
    let mut f = File::create(path).map_err(|e| StorageError::io(path, e))?;
    parts
        .iter()
        .try_for_each(|p| f.write_all(p))
        .and_then(|_| f.sync_all())
        .map_err(|e| StorageError::io(path, e))
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
}

static NEXT_UID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl SSTableReader {
    /// Opens a complete generation.
    pub fn open(
        dir: &Path,
        gen: u64,
        cmp: &Arc<ClusteringComparator>,
    ) -> Result<Arc<Self>, StorageError> {
        let ci_path = component_path(dir, gen, "CompressionInfo.db");
        let ci = read_checked(&ci_path)?;
        let mut r = Reader::new(&ci, "compression info");
        let algorithm = r.u8()?;
        let chunk_len = u64::from(r.u32()?).max(1);
        let _total = r.u64()?;
        let n = r.u32()? as usize;
        if n * 8 > r.remaining() {
            return Err(StorageError::CorruptSSTable {
                file: ci_path,
                reason: "chunk count".into(),
            });
        }
        let chunk_offsets = (0..n).map(|_| r.u64()).collect::<Result<Vec<_>, _>>()?;

        let spath = component_path(dir, gen, "Statistics.db");
        let stats =
            SSTableStats::decode(&fs::read(&spath).map_err(|e| StorageError::io(&spath, e))?)?;
        let format = DataFormat::from_stats(stats.data_format, stats.timestamp_base_us)?;
        let index = PartitionIndex::open(&component_path(dir, gen, "Index.db"), format)?;
        let fpath = component_path(dir, gen, "Filter.db");
        let filter =
            BloomFilter::decode(&fs::read(&fpath).map_err(|e| StorageError::io(&fpath, e))?)?;
        let data_path = component_path(dir, gen, "Data.db");
        let data = File::open(&data_path).map_err(|e| StorageError::io(&data_path, e))?;
        let clustering_bounds = (stats.has_clustering_bounds()
            && stats.min_clustering.len() == cmp.len()
            && stats.max_clustering.len() == cmp.len())
        .then(|| {
            (
                CKey::row(stats.min_clustering.clone(), cmp),
                CKey::row(stats.max_clustering.clone(), cmp),
            )
        });
        Ok(Arc::new(SSTableReader {
            dir: dir.to_path_buf(),
            gen,
            uid: NEXT_UID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            data,
            data_path,
            algorithm,
            chunk_len,
            chunk_offsets,
            index,
            filter,
            stats,
            clustering_bounds,
            cmp: cmp.clone(),
            format,
        }))
    }

    /// Paths of all components (for snapshots and deletion), TOC first: deleting in this order
    /// means a crash mid-delete leaves an incomplete generation that the next load discards.
    pub fn component_paths(&self) -> Vec<PathBuf> {
        std::iter::once(&"TOC.txt")
            .chain(COMPONENTS.iter())
            .map(|c| component_path(&self.dir, self.gen, c))
            .collect()
    }

    /// Bytes on disk.
    pub fn disk_bytes(&self) -> u64 {
        self.component_paths()
            .iter()
            .filter_map(|p| fs::metadata(p).ok())
            .map(|m| m.len())
            .sum()
    }

    /// Row clustering bounds as comparator positions (None when unknown or there are no rows).
    pub(crate) fn clustering_bounds(&self) -> Option<&(CKey, CKey)> {
        self.clustering_bounds.as_ref()
    }

    /// Index position of the partition, if present.
    pub fn find(&self, token: i64, key: &Bytes) -> Result<Option<usize>, StorageError> {
        if !self.may_contain(token, key) {
            return Ok(None);
        }
        Ok(self.search(token, key)?.map(|(i, _)| i))
    }

    /// Number of partitions.
    pub fn partition_count(&self) -> usize {
        self.index.len()
    }

    /// Index entry `i` (decoded from Index.db: one page read). Walks use `entries_from`.
    pub fn entry(&self, i: usize) -> Result<IndexEntry, StorageError> {
        self.index.entry(i)
    }

    /// Position of the first partition whose token is `token` or above (`partition_count`
    /// when none).
    pub fn first_at_or_after_token(&self, token: i64) -> Result<usize, StorageError> {
        self.index
            .lower_bound(&std::ops::Bound::Included((token, Bytes::new())))
    }

    /// Index entries from position `i` on, in (token, key) order, O(1) amortised each.
    pub fn entries_from(&self, i: usize) -> IndexIter<'_> {
        self.index.iter_from(i)
    }

    /// Bytes the in-memory partition summary takes.
    pub fn summary_bytes(&self) -> usize {
        self.index.summary_bytes()
    }

    /// False when no row of this SSTable can fall in `ranges` and nothing else in it can
    /// matter to a slice read: no partition or range deletion (it may shadow rows of other
    /// SSTables inside the slice) and no static rows (always returned). Row and cell
    /// tombstones sit at row clusterings, inside the bounds.
    pub fn may_have_rows_in(&self, ranges: &[(CKey, CKey)]) -> bool {
        let Some((lo, hi)) = &self.clustering_bounds else {
            return true;
        };
        if self.stats.wide_deletions > 0 || self.stats.static_rows > 0 {
            return true;
        }
        ranges.iter().any(|(s, e)| s <= hi && lo <= e)
    }

    /// Token range and bloom filter check: false means the partition is surely absent.
    pub fn may_contain(&self, token: i64, key: &Bytes) -> bool {
        token >= self.stats.min_token
            && token <= self.stats.max_token
            && self.filter.may_contain(token, key)
    }

    /// Index position and entry of the partition: a binary search of the summary and one index
    /// page read (the key cache's miss path).
    pub fn search(
        &self,
        token: i64,
        key: &Bytes,
    ) -> Result<Option<(usize, IndexEntry)>, StorageError> {
        self.index.search(token, key)
    }

    /// Reads and decompresses one chunk, verifying its checksum.
    pub fn read_chunk(
        &self,
        i: usize,
        cache: Option<&ByteCache<ChunkKey, Vec<u8>>>,
    ) -> Result<Arc<Vec<u8>>, StorageError> {
        let key = (self.uid, i as u32);
        if let Some(c) = cache.and_then(|c| c.get(&key)) {
            return Ok(c);
        }
        let offset = *self.chunk_offsets.get(i).ok_or_else(|| self.corrupt(0))?;
        let corrupt = || StorageError::CorruptChunk {
            file: self.data_path.clone(),
            offset,
        };
        let mut hdr = [0u8; 12];
        self.data
            .read_exact_at(&mut hdr, offset)
            .map_err(|_| corrupt())?;
        let word = u32::from_be_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]);
        let chunk_code = (word >> 24) as u8;
        let stored_len = (word & STORED_LEN_MASK) as usize;
        let raw_len = u32::from_be_bytes([hdr[4], hdr[5], hdr[6], hdr[7]]) as usize;
        let crc = u32::from_be_bytes([hdr[8], hdr[9], hdr[10], hdr[11]]);
        if stored_len > MAX_CHUNK_BYTES || raw_len > MAX_CHUNK_BYTES {
            return Err(corrupt());
        }
        let mut stored = vec![0u8; stored_len];
        self.data
            .read_exact_at(&mut stored, offset + 12)
            .map_err(|_| corrupt())?;
        if crc32c(&stored) != crc {
            return Err(corrupt());
        }
        let raw = compression::decompress(chunk_code, self.algorithm, stored, raw_len)
            .ok_or_else(corrupt)?;
        let raw = Arc::new(raw);
        if let Some(c) = cache {
            c.insert(key, raw.clone(), raw_len as u64);
        }
        Ok(raw)
    }

    fn corrupt(&self, offset: u64) -> StorageError {
        StorageError::CorruptChunk {
            file: self.data_path.clone(),
            offset,
        }
    }

    /// Reads the partition at index position `i` (one index page read; walks use
    /// `entries_from` and `read_partition_at`).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn read_partition(
        &self,
        i: usize,
        cache: Option<&ByteCache<ChunkKey, Vec<u8>>>,
    ) -> Result<Partition, StorageError> {
        self.read_partition_at(&self.entry(i)?, cache)
    }

    /// Reads the partition `e` (an entry of this SSTable's index) points to.
    pub fn read_partition_at(
        &self,
        e: &IndexEntry,
        cache: Option<&ByteCache<ChunkKey, Vec<u8>>>,
    ) -> Result<Partition, StorageError> {
        let buf = self.read_bytes(e.position, e.length, cache)?;
        self.decode_partition_bytes(&buf, e)
    }

    /// Decodes the partition `e` points to from its bytes (as `read_bytes`/`read_span` give them).
    pub(crate) fn decode_partition_bytes(
        &self,
        buf: &[u8],
        e: &IndexEntry,
    ) -> Result<Partition, StorageError> {
        let mut r = Reader::new(buf, "sstable partition");
        self.format
            .decode_partition(&mut r, &self.cmp, e)
            .map_err(|_| self.corrupt(e.position))
    }

    /// Reads the partition `e` points to, decoding only the row blocks that overlap
    /// `ranges` when it has a row index (the result may hold extra rows; callers filter).
    #[cfg(test)]
    pub fn read_partition_sliced(
        &self,
        e: &IndexEntry,
        ranges: &[(CKey, CKey)],
        cache: Option<&ByteCache<ChunkKey, Vec<u8>>>,
    ) -> Result<Partition, StorageError> {
        self.read_partition_sliced_upto(e, ranges, false, usize::MAX, cache)
            .map(|(p, _)| p)
    }

    /// Reads `length` bytes of the logical data stream at `position`.
    pub(crate) fn read_bytes(
        &self,
        position: u64,
        length: u32,
        cache: Option<&ByteCache<ChunkKey, Vec<u8>>>,
    ) -> Result<Vec<u8>, StorageError> {
        self.gather(position, length, |ci| self.read_chunk(ci, cache))
    }

    /// The bytes at `position..position + length` copied out of the chunks `chunk_at` gives.
    fn gather(
        &self,
        position: u64,
        length: u32,
        mut chunk_at: impl FnMut(usize) -> Result<Arc<Vec<u8>>, StorageError>,
    ) -> Result<Vec<u8>, StorageError> {
        let mut buf = Vec::with_capacity(length as usize);
        let mut pos = position;
        let end = position + u64::from(length);
        while pos < end {
            let chunk = chunk_at((pos / self.chunk_len) as usize)?;
            let start_in = (pos % self.chunk_len) as usize;
            let take = ((end - pos) as usize).min(chunk.len().saturating_sub(start_in));
            let piece = chunk
                .get(start_in..start_in + take)
                .filter(|p| !p.is_empty())
                .ok_or_else(|| self.corrupt(pos))?;
            buf.extend_from_slice(piece);
            pos += take as u64;
        }
        Ok(buf)
    }

    /// The bytes at `position..position + length`, borrowed from the decompressed chunk when they
    /// lie in one (a sequential walk's common case). `last` keeps the most recently read chunk,
    /// so a walk in file order decompresses each chunk once without a shared cache.
    pub(crate) fn read_span(
        &self,
        position: u64,
        length: u32,
        last: &mut Option<(usize, Arc<Vec<u8>>)>,
    ) -> Result<Span, StorageError> {
        let end = position + u64::from(length);
        let mut chunk_at = |ci: usize| -> Result<Arc<Vec<u8>>, StorageError> {
            if let Some((i, c)) = last.as_ref() {
                if *i == ci {
                    return Ok(c.clone());
                }
            }
            let c = self.read_chunk(ci, None)?;
            *last = Some((ci, c.clone()));
            Ok(c)
        };
        let first = (position / self.chunk_len) as usize;
        let start_in = (position % self.chunk_len) as usize;
        if length > 0 && (end - 1) / self.chunk_len == position / self.chunk_len {
            let chunk = chunk_at(first)?;
            let range = start_in..start_in + length as usize;
            if chunk.get(range.clone()).is_none() {
                return Err(self.corrupt(position));
            }
            return Ok(Span::Chunk(chunk, range));
        }
        self.gather(position, length, chunk_at).map(Span::Owned)
    }

    /// Number of chunks in the Data component.
    pub fn chunk_count(&self) -> usize {
        self.chunk_offsets.len()
    }

    /// Index entries of the partitions in the key range, up to `limit`, in order (a range scan
    /// reads the partitions through them without looking each key up again).
    pub fn entries_in_range(
        &self,
        start: &std::ops::Bound<(i64, Bytes)>,
        end: &std::ops::Bound<(i64, Bytes)>,
        limit: usize,
    ) -> Result<Vec<Arc<IndexEntry>>, StorageError> {
        use std::ops::Bound;
        let lo = self.index.lower_bound(start)?;
        let mut out = Vec::new();
        for e in self.entries_from(lo).take(limit) {
            let e = e?;
            let k = (e.token, &e.key);
            let inside = match end {
                Bound::Unbounded => true,
                Bound::Included(b) => k <= (b.0, &b.1),
                Bound::Excluded(b) => k < (b.0, &b.1),
            };
            if !inside {
                break;
            }
            out.push(Arc::new(e));
        }
        Ok(out)
    }
}
