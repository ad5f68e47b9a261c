//! Reading an SSTable: opening and checking its components, finding partitions through the
//! bloom filter and index, and reading them through the chunk cache.

use super::format::{Cells, ReadCells};
use super::*;

impl SSTableReader {
    /// Opens a complete generation.
    pub fn open(
        dir: &Path,
        gen: u64,
        cmp: &Arc<ClusteringComparator>,
    ) -> Result<Arc<Self>, StorageError> {
        let columns = Self::open_columns(dir, gen, cmp)?;
        let (algorithm, chunk_len, chunk_offsets) = match columns {
            // No Data.db stream: no chunk to read.
            Some(_) => (0, 1, Vec::new()),
            None => read_compression_info(dir, gen)?,
        };

        let spath = component_path(dir, gen, "Statistics.db");
        let stats =
            SSTableStats::decode(&fs::read(&spath).map_err(|e| StorageError::io(&spath, e))?)?;
        let format = DataFormat::from_stats(stats.data_format, stats.timestamp_base_us)?;
        let keys = columns.as_ref().map(|c| c.entry_keys(dir, gen));
        let index = PartitionIndex::open(&component_path(dir, gen, "Index.db"), format, keys)?;
        let fpath = component_path(dir, gen, "Filter.db");
        let filter =
            BloomFilter::decode(&fs::read(&fpath).map_err(|e| StorageError::io(&fpath, e))?)?;
        let data_path = component_path(
            dir,
            gen,
            if columns.is_some() {
                columnar_data::COLUMNS_COMPONENT
            } else {
                "Data.db"
            },
        );
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
        let repair = repair::load(dir, gen)?;
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
            columns,
            repair: parking_lot::Mutex::new(repair),
        }))
    }

    /// Paths of all components (for snapshots and deletion), TOC first: deleting in this order
    /// means a crash mid-delete leaves an incomplete generation that the next load discards.
    /// The repair sidecar comes last, when there is one (a snapshot keeps the state).
    pub fn component_paths(&self) -> Vec<PathBuf> {
        let sidecar = component_path(&self.dir, self.gen, repair::REPAIR_COMPONENT);
        std::iter::once(&"TOC.txt")
            .chain(self.data_components().iter())
            .map(|c| component_path(&self.dir, self.gen, c))
            .chain(sidecar.exists().then_some(sidecar))
            .collect()
    }

    /// Which repair set the SSTable is in.
    pub fn repair_state(&self) -> repair::RepairState {
        *self.repair.lock()
    }

    /// Makes `state` the SSTable's, on disk first. Callers hold the table's `repair_lock`, so
    /// that a compaction installing outputs decides their state from settled inputs; that lock,
    /// not this one, orders changes, so readers of the state never wait for the fsyncs.
    pub(crate) fn set_repair_state(&self, state: repair::RepairState) -> Result<(), StorageError> {
        if self.repair_state() != state {
            repair::store(&self.dir, self.gen, state)?;
            *self.repair.lock() = state;
        }
        Ok(())
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

    /// Whether a partition of this SSTable has a token within `[lo, hi]`: its statistics'
    /// bounds first, then one index search (an SSTable spanning the ring may hold none there).
    pub fn has_partition_within(&self, lo: i64, hi: i64) -> Result<bool, StorageError> {
        if hi < self.stats.min_token || lo > self.stats.max_token {
            return Ok(false);
        }
        let i = self.first_at_or_after_token(lo)?;
        if i >= self.partition_count() {
            return Ok(false);
        }
        Ok(self.entry(i)?.token <= hi)
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
        self.covers_token(token) && self.filter.may_contain(token, key)
    }

    /// Whether `token` lies within this SSTable's partitions' tokens.
    pub fn covers_token(&self, token: i64) -> bool {
        token >= self.stats.min_token && token <= self.stats.max_token
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

    pub(super) fn corrupt(&self, offset: u64) -> StorageError {
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
        self.read_partition_projected(e, cache, ReadCells::default())
    }

    /// `read_partition_at` with only the cells `wanted` asks for.
    pub(crate) fn read_partition_projected(
        &self,
        e: &IndexEntry,
        cache: Option<&ByteCache<ChunkKey, Vec<u8>>>,
        wanted: ReadCells<'_>,
    ) -> Result<Partition, StorageError> {
        if let Some(p) = self.columnar_partition(e) {
            return p;
        }
        let decode = |bytes: &Bytes| {
            let mut r = Reader::new(bytes, "sstable partition");
            self.format
                .decode_partition(&mut r, &self.cmp, e, &wanted.of(bytes))
                .map_err(|_| self.corrupt(e.position))
        };
        // A partition inside one chunk (a scan's small partitions) is decoded where the chunk
        // holds it, not copied out first.
        let span = self.span_from(e.position, e.length, |ci| self.read_chunk(ci, cache))?;
        decode(&span.into_bytes())
    }

    /// Decodes the partition `e` points to from its bytes (as `read_bytes`/`read_span` give them).
    pub(crate) fn decode_partition_bytes(
        &self,
        buf: &[u8],
        e: &IndexEntry,
    ) -> Result<Partition, StorageError> {
        let mut r = Reader::new(buf, "sstable partition");
        self.format
            .decode_partition(&mut r, &self.cmp, e, &Cells::default())
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
        self.read_partition_sliced_upto(e, ranges, false, usize::MAX, cache, ReadCells::default())
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
        let chunk_at = |ci: usize| -> Result<Arc<Vec<u8>>, StorageError> {
            if let Some((i, c)) = last.as_ref() {
                if *i == ci {
                    return Ok(c.clone());
                }
            }
            let c = self.read_chunk(ci, None)?;
            *last = Some((ci, c.clone()));
            Ok(c)
        };
        self.span_from(position, length, chunk_at)
    }

    /// The bytes at `position..position + length`, borrowed from the chunk `chunk_at` gives
    /// when they lie in one, else copied out of the chunks they span.
    pub(super) fn span_from(
        &self,
        position: u64,
        length: u32,
        mut chunk_at: impl FnMut(usize) -> Result<Arc<Vec<u8>>, StorageError>,
    ) -> Result<Span, StorageError> {
        let end = position + u64::from(length);
        if length > 0 && (end - 1) / self.chunk_len == position / self.chunk_len {
            let chunk = chunk_at((position / self.chunk_len) as usize)?;
            let start_in = (position % self.chunk_len) as usize;
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
    /// Index entries from the first one inside `start` on (a range scan's walk).
    pub(crate) fn entries_after(
        &self,
        start: &std::ops::Bound<(i64, Bytes)>,
    ) -> Result<IndexIter<'_>, StorageError> {
        Ok(self.entries_from(self.index.lower_bound(start)?))
    }
}

/// A row SSTable's CompressionInfo.db: (algorithm, chunk length, chunk offsets).
fn read_compression_info(dir: &Path, gen: u64) -> Result<(u8, u64, Vec<u64>), StorageError> {
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
    Ok((algorithm, chunk_len, chunk_offsets))
}
