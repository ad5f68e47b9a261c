//! The partition index of an open SSTable: `Index.db` stays on disk and only a **partition
//! summary** is held in memory, as Cassandra does: every `MIN_INDEX_INTERVAL`-th entry's
//! (token, key, byte offset of the entry in Index.db, data-stream position), plus the entry
//! count. The summary is built at open by one sequential pass over Index.db (which also checks
//! its checksum), so no new component is written and every existing Index.db stays readable.
//!
//! The entries between two samples form an index *page*. Entry `i` is found by reading page
//! `i / MIN_INDEX_INTERVAL` with one `pread` and decoding forward; format 2 does not store
//! positions (each partition starts where the previous ends), so a sample carries the position
//! decoding restarts from. A lookup by key binary-searches the summary and reads one page;
//! the key cache (read/caches.rs) keeps decoded entries of hot partitions, so a hit reads nothing.
//! Sequential walks (compaction, scans, tools) use `IndexIter`, which reads many pages per
//! `pread` and decodes each entry once.
//!
//! Memory: ~(key length + 48) bytes per sample, i.e. under 1 byte per partition for short keys,
//! instead of the whole decoded index (~100+ bytes per partition).

use super::format::DataFormat;
use super::IndexEntry;
use crate::codec::compact::Dec;
use crate::codec::{crc32c_update, Reader};
use crate::error::StorageError;
use bytes::Bytes;
use std::fs::File;
use std::ops::Bound;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Every this many index entries one is sampled into the summary (Cassandra's
/// `min_index_interval` default). A page of 128 short entries is ~4 KiB: one disk page.
pub const MIN_INDEX_INTERVAL: usize = 128;
/// Bytes the open pass and `IndexIter` read per `pread` (at least one page).
const INDEX_READ_BYTES: usize = 64 << 10;
const MAGIC: &[u8; 4] = b"hl-1";
/// Index.db of a columnar SSTable: keyed entries (`EntryShape::Keyed`).
pub(crate) const KEYED_MAGIC: &[u8; 4] = b"hl-k";
/// Index.db of a columnar SSTable whose keys are in its segment (`EntryShape::Sampled`).
pub(crate) const SAMPLED_MAGIC: &[u8; 4] = b"hl-s";
/// A sampled Index.db whose unsampled entries all have one length, stated once (sampled.rs).
pub(crate) const UNIFORM_MAGIC: &[u8; 4] = b"hl-u";

/// How the entries of one Index.db are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EntryShape {
    Fixed,
    Compact,
    /// A columnar SSTable's: `vbytes key | uv (length << 1 | token stored) | [i64 token]`.
    /// No header length and no row-index blocks (a columnar partition has neither), and the
    /// token only where it is not the key's Murmur3 token: an entry of a bigint key is 10
    /// bytes instead of 20, and Index.db half of what it was beside the segment.
    Keyed,
    /// A columnar SSTable's since the segment holds the keys (sstable/index/sampled.rs): a
    /// keyed entry every `interval`-th (the summary's samples, the interval in the header),
    /// only `uv length` for the others, whose tokens and keys the segment's key stream gives.
    Sampled,
}

/// Where a sampled index finds its entries' tokens and keys: the columnar segment.
pub(crate) trait EntryKeys: Send + Sync {
    /// The token and key of the segment entries at `positions` (ascending).
    fn keys_at(&self, positions: &[u64]) -> Result<Vec<(i64, Bytes)>, StorageError>;
}

/// One summary sample: the first entry of an index page.
#[derive(Debug, Clone)]
struct Sample {
    token: i64,
    key: Bytes,
    /// Byte offset of the entry in Index.db.
    offset: u64,
    /// The partition's position in the data stream (format 2 derives positions from lengths).
    position: u64,
}

/// The on-disk partition index of one SSTable and its in-memory summary.
pub(crate) struct PartitionIndex {
    file: File,
    path: PathBuf,
    shape: EntryShape,
    count: usize,
    interval: usize,
    samples: Vec<Sample>,
    /// Offset of the checksum: entries end here.
    body_end: u64,
    /// The segment a `Sampled` index takes keys from.
    keys: Option<std::sync::Arc<dyn EntryKeys>>,
    /// The length of every unsampled entry of a `Sampled` index that states it once (magic
    /// `hl-u`: those entries take no bytes).
    uniform_length: Option<u32>,
}

/// One entry as it lies in a page, nothing allocated: the summary search compares keys
/// without copying them and materialises only the entry it returns.
struct RawEntry<'a> {
    key: &'a [u8],
    token: i64,
    position: u64,
    length: u32,
    header_len: u32,
    /// The row-index blocks' encoding (count included), decoded only by `to_entry`.
    blocks: &'a [u8],
}

impl PartitionIndex {
    /// Opens `path` and builds the summary by one sequential pass, verifying the checksum.
    /// `keys` is the segment of a columnar SSTable (a sampled index cannot open without it).
    pub fn open(
        path: &Path,
        format: DataFormat,
        keys: Option<std::sync::Arc<dyn EntryKeys>>,
    ) -> Result<Self, StorageError> {
        Self::open_with_interval(path, format, MIN_INDEX_INTERVAL, keys)
    }

    /// `open` sampling every `interval`-th entry (a sampled index's own interval wins).
    pub fn open_with_interval(
        path: &Path,
        format: DataFormat,
        interval: usize,
        keys: Option<std::sync::Arc<dyn EntryKeys>>,
    ) -> Result<Self, StorageError> {
        let file = File::open(path).map_err(|e| StorageError::io(path, e))?;
        let len = file
            .metadata()
            .map_err(|e| StorageError::io(path, e))?
            .len();
        let mut ix = PartitionIndex {
            file,
            path: path.to_path_buf(),
            shape: match format {
                DataFormat::Fixed => EntryShape::Fixed,
                DataFormat::Compact { .. } => EntryShape::Compact,
            },
            count: 0,
            interval: interval.max(1),
            samples: Vec::new(),
            body_end: len.saturating_sub(4),
            keys,
            uniform_length: None,
        };
        if len < 8 {
            return Err(ix.corrupt("too short"));
        }
        let mut magic = [0u8; 4];
        ix.file
            .read_exact_at(&mut magic, 0)
            .map_err(|e| StorageError::io(path, e))?;
        if ix.shape == EntryShape::Compact {
            if &magic == KEYED_MAGIC {
                ix.shape = EntryShape::Keyed;
            } else if &magic == SAMPLED_MAGIC || &magic == UNIFORM_MAGIC {
                if ix.keys.is_none() {
                    return Err(ix.corrupt("a sampled index without its segment"));
                }
                ix.shape = EntryShape::Sampled;
                // Read from the header by `scan`.
                ix.uniform_length = (&magic == UNIFORM_MAGIC).then_some(0);
            }
        }
        ix.scan()?;
        Ok(ix)
    }

    fn corrupt(&self, reason: &str) -> StorageError {
        StorageError::CorruptSSTable {
            file: self.path.clone(),
            reason: format!("index: {reason}"),
        }
    }

    /// The open pass: header, every entry (sampling every `interval`-th), checksum.
    fn scan(&mut self) -> Result<(), StorageError> {
        let mut s = Stream::new(self, 0);
        let magic = s.with(|r| r.take(4).map(<[u8]>::to_vec))?;
        let expected = match self.shape {
            EntryShape::Keyed => KEYED_MAGIC,
            EntryShape::Sampled if self.uniform_length.is_some() => UNIFORM_MAGIC,
            EntryShape::Sampled => SAMPLED_MAGIC,
            _ => MAGIC,
        };
        if magic != expected {
            return Err(self.corrupt("magic"));
        }
        let (count, min_entry_bytes) = match self.shape {
            EntryShape::Fixed => (s.with(|r| r.u32().map(|n| n as u64))?, 32u64),
            EntryShape::Compact => (s.with(|r| Dec::new(r, 0).uv())?, 12),
            EntryShape::Keyed => (s.with(|r| Dec::new(r, 0).uv())?, 2),
            EntryShape::Sampled => (s.with(|r| Dec::new(r, 0).uv())?, 1),
        };
        let mut interval = self.interval;
        let mut uniform = self.uniform_length;
        if self.shape == EntryShape::Sampled {
            let stored = s.with(|r| Dec::new(r, 0).uv())?;
            interval = usize::try_from(stored)
                .ok()
                .filter(|i| (1..=MAX_SAMPLED_INTERVAL).contains(i))
                .ok_or_else(|| self.corrupt("sampling interval"))?;
            if uniform.is_some() {
                let length = s.with(|r| Dec::new(r, 0).uv())?;
                uniform =
                    Some(
                        u32::try_from(length).map_err(|_| StorageError::CorruptSSTable {
                            file: self.path.clone(),
                            reason: "index: uniform entry length".into(),
                        })?,
                    );
            }
        }
        // Unsampled entries of a uniform index take no bytes: only its samples are counted.
        let stored_entries = match uniform {
            Some(_) => count.div_ceil(interval as u64),
            None => count,
        };
        if stored_entries.saturating_mul(min_entry_bytes) > self.body_end {
            return Err(self.corrupt("entry count"));
        }
        let count = usize::try_from(count).map_err(|_| self.corrupt("entry count"))?;
        let mut position = 0u64;
        let mut samples = Vec::with_capacity(count / interval + 1);
        let shape = self.shape;
        for i in 0..count {
            let offset = s.offset();
            let sampled = i % interval == 0;
            // Only sampled entries' keys are copied out of the read buffer.
            let (token, key, length, pos) = s.with(|r| {
                let e = match shape {
                    EntryShape::Sampled => sampled::raw_entry(r, position, sampled, uniform)?,
                    _ => raw_entry(shape, r, position)?,
                };
                let key = sampled.then(|| e.key.to_vec());
                Ok((e.token, key, e.length, e.position))
            })?;
            if let Some(key) = key {
                if let Some(prev) = samples.last() {
                    // Cheap ordering check at sample points (the whole index is checked by the
                    // writer); a disordered index would make searches miss.
                    let prev: &Sample = prev;
                    if (prev.token, prev.key.as_ref()) >= (token, key.as_slice()) {
                        return Err(self.corrupt("entries out of order"));
                    }
                }
                samples.push(Sample {
                    token,
                    key: Bytes::from(key),
                    offset,
                    position: pos,
                });
            }
            position = pos + u64::from(length);
        }
        if s.offset() != self.body_end {
            return Err(self.corrupt("trailing bytes"));
        }
        let crc = s.finish_crc()?;
        let mut stored = [0u8; 4];
        self.file
            .read_exact_at(&mut stored, self.body_end)
            .map_err(|e| StorageError::io(&self.path, e))?;
        if crc != u32::from_be_bytes(stored) {
            return Err(self.corrupt("checksum mismatch"));
        }
        self.count = count;
        self.interval = interval;
        self.samples = samples;
        self.uniform_length = uniform;
        Ok(())
    }

    /// Number of partitions.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Bytes the summary holds in memory (for metrics and tests).
    pub fn summary_bytes(&self) -> usize {
        self.samples
            .iter()
            .map(|s| s.key.len() + std::mem::size_of::<Sample>())
            .sum()
    }

    /// Byte range of pages `first..last` (exclusive) in Index.db.
    fn pages_range(&self, first: usize, last: usize) -> Option<(u64, u64)> {
        let start = self.samples.get(first)?.offset;
        let end = self.samples.get(last).map_or(self.body_end, |s| s.offset);
        (start <= end).then_some((start, end))
    }

    fn read_range(&self, start: u64, end: u64) -> Result<Vec<u8>, StorageError> {
        let len = usize::try_from(end - start).map_err(|_| self.corrupt("page size"))?;
        let mut buf = vec![0u8; len];
        self.file
            .read_exact_at(&mut buf, start)
            .map_err(|e| StorageError::io(&self.path, e))?;
        Ok(buf)
    }

    /// Entry `i`: one page read, decoding forward from the page's sample.
    pub fn entry(&self, i: usize) -> Result<IndexEntry, StorageError> {
        if i >= self.count {
            return Err(self.corrupt("entry position out of range"));
        }
        let page = i / self.interval;
        if self.shape == EntryShape::Sampled {
            return self
                .sampled_pages(page, page + 1)?
                .into_iter()
                .nth(i % self.interval)
                .ok_or_else(|| self.corrupt("page"));
        }
        let (start, end) = self
            .pages_range(page, page + 1)
            .ok_or_else(|| self.corrupt("summary"))?;
        let buf = self.read_range(start, end)?;
        let mut r = Reader::new(&buf, "index page");
        let mut position = self.samples.get(page).map_or(0, |s| s.position);
        for _ in 0..i % self.interval {
            let e = raw_entry(self.shape, &mut r, position)?;
            position = e.position + u64::from(e.length);
        }
        raw_entry(self.shape, &mut r, position)?.to_entry(self.shape)
    }

    /// Decodes page `page` forward: calls `f(position, entry)` for each entry until it
    /// returns `Some`, which is returned; `None` when the page ends first.
    fn walk_page<T>(
        &self,
        page: usize,
        mut f: impl FnMut(usize, &RawEntry<'_>) -> Result<Option<T>, StorageError>,
    ) -> Result<Option<T>, StorageError> {
        if page >= self.samples.len() {
            return Ok(None);
        }
        let first = page * self.interval;
        if self.shape == EntryShape::Sampled {
            for (at, e) in self.sampled_pages(page, page + 1)?.iter().enumerate() {
                if let Some(t) = f(first + at, &RawEntry::of(e))? {
                    return Ok(Some(t));
                }
            }
            return Ok(None);
        }
        let Some((start, end)) = self.pages_range(page, page + 1) else {
            return Ok(None);
        };
        let buf = self.read_range(start, end)?;
        let mut r = Reader::new(&buf, "index page");
        let mut position = self.samples.get(page).map_or(0, |s| s.position);
        let last = (first + self.interval).min(self.count);
        for i in first..last {
            let e = raw_entry(self.shape, &mut r, position)?;
            if let Some(t) = f(i, &e)? {
                return Ok(Some(t));
            }
            position = e.position + u64::from(e.length);
        }
        Ok(None)
    }

    /// The page whose first entry is the last one at or before (token, key); None when the key
    /// sorts before every entry.
    fn page_of(&self, token: i64, key: &[u8]) -> Option<usize> {
        let pp = self
            .samples
            .partition_point(|s| (s.token, s.key.as_ref()) <= (token, key));
        pp.checked_sub(1)
    }

    /// Position and entry of the partition, if present: one page read.
    pub fn search(
        &self,
        token: i64,
        key: &[u8],
    ) -> Result<Option<(usize, IndexEntry)>, StorageError> {
        let Some(page) = self.page_of(token, key) else {
            return Ok(None);
        };
        let shape = self.shape;
        self.walk_page(page, |i, e| match (e.token, e.key).cmp(&(token, key)) {
            std::cmp::Ordering::Less => Ok(None),
            std::cmp::Ordering::Equal => Ok(Some(Some((i, e.to_entry(shape)?)))),
            std::cmp::Ordering::Greater => Ok(Some(None)),
        })
        .map(Option::flatten)
    }

    /// Position of the first entry not below `bound` (a start bound): `count` when none.
    pub fn lower_bound(&self, bound: &Bound<(i64, Bytes)>) -> Result<usize, StorageError> {
        let (k, inclusive) = match bound {
            Bound::Unbounded => return Ok(0),
            Bound::Included(k) => (k, true),
            Bound::Excluded(k) => (k, false),
        };
        let Some(page) = self.page_of(k.0, &k.1) else {
            return Ok(0);
        };
        let found = self.walk_page(page, |i, e| {
            let ord = (e.token, e.key).cmp(&(k.0, k.1.as_ref()));
            let past = if inclusive { ord.is_ge() } else { ord.is_gt() };
            Ok(past.then_some(i))
        })?;
        // Not in this page: the next page's first entry is above the key.
        Ok(found.unwrap_or(((page + 1) * self.interval).min(self.count)))
    }

    /// Entries from position `i` on, decoded in order.
    pub fn iter_from(&self, i: usize) -> IndexIter<'_> {
        IndexIter {
            ix: self,
            next: i.min(self.count),
            buf: Bytes::new(),
            pos: 0,
            position: 0,
            skip: 0,
            loaded_to_page: None,
            read_ahead_bytes: 0,
            decoded: std::collections::VecDeque::new(),
        }
    }
}

/// Index entries in order from a position, reading up to `INDEX_READ_BYTES` of pages per
/// `pread`: O(1) amortised per entry.
pub struct IndexIter<'a> {
    ix: &'a PartitionIndex,
    next: usize,
    buf: Bytes,
    pos: usize,
    /// Data-stream position of the next entry (format 2).
    position: u64,
    /// Entries of the first loaded page to skip before `next`.
    skip: usize,
    /// The page after the last loaded one; None before the first load.
    loaded_to_page: Option<usize>,
    /// Bytes of further pages the next load may take: one page first (a range scan may need
    /// a few entries), doubling up to `INDEX_READ_BYTES` as the walk goes on.
    read_ahead_bytes: usize,
    /// A sampled index's entries of the loaded pages, keys resolved, not yet returned.
    decoded: std::collections::VecDeque<IndexEntry>,
}

impl IndexIter<'_> {
    /// Loads the pages from the one holding `self.next`.
    fn load(&mut self) -> Result<(), StorageError> {
        let ix = self.ix;
        let first = match self.loaded_to_page {
            Some(p) => p,
            None => {
                self.skip = self.next % ix.interval;
                self.next / ix.interval
            }
        };
        let mut last = first + 1;
        while let Some((s, e)) = ix.pages_range(first, last + 1) {
            if e - s > self.read_ahead_bytes as u64 || last >= ix.samples.len() {
                break;
            }
            last += 1;
        }
        self.loaded_to_page = Some(last);
        self.read_ahead_bytes = (self.read_ahead_bytes * 2).clamp(4096, INDEX_READ_BYTES);
        if ix.shape == EntryShape::Sampled {
            self.decoded = ix.sampled_pages(first, last)?.into();
            self.decoded.drain(..self.skip.min(self.decoded.len()));
            self.skip = 0;
            return Ok(());
        }
        let (start, end) = ix
            .pages_range(first, last)
            .ok_or_else(|| ix.corrupt("summary"))?;
        self.buf = Bytes::from(ix.read_range(start, end)?);
        self.pos = 0;
        self.position = ix.samples.get(first).map_or(0, |s| s.position);
        Ok(())
    }

    fn step(&mut self) -> Result<IndexEntry, StorageError> {
        if self.ix.shape == EntryShape::Sampled {
            if self.decoded.is_empty() {
                self.load()?;
            }
            return self
                .decoded
                .pop_front()
                .ok_or_else(|| self.ix.corrupt("page"));
        }
        if self.pos >= self.buf.len() {
            self.load()?;
        }
        let shape = self.ix.shape;
        loop {
            let rest = self
                .buf
                .get(self.pos..)
                .ok_or_else(|| self.ix.corrupt("page"))?;
            let mut r = Reader::new(rest, "index page");
            let e = raw_entry(shape, &mut r, self.position)?;
            self.pos += rest.len() - r.remaining();
            self.position = e.position + u64::from(e.length);
            if self.skip > 0 {
                self.skip -= 1;
                continue;
            }
            // The key points into the window instead of being copied: a scan reads thousands of
            // entries and keeps each only while it reads that partition.
            let key = self.buf.slice_ref(e.key);
            return e.to_entry_keyed(shape, key);
        }
    }
}

impl Iterator for IndexIter<'_> {
    type Item = Result<IndexEntry, StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.ix.count {
            return None;
        }
        let r = self.step();
        // After an error the rest cannot be trusted: end the walk.
        self.next = if r.is_ok() {
            self.next + 1
        } else {
            self.ix.count
        };
        Some(r)
    }
}

/// Reads Index.db forward through a bounded window, feeding the checksum as bytes arrive.
struct Stream<'a> {
    ix: &'a PartitionIndex,
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    buf_offset: u64,
    pos: usize,
    crc: u32,
}

impl<'a> Stream<'a> {
    fn new(ix: &'a PartitionIndex, offset: u64) -> Self {
        Stream {
            ix,
            buf: Vec::new(),
            buf_offset: offset,
            pos: 0,
            crc: 0,
        }
    }

    fn offset(&self) -> u64 {
        self.buf_offset + self.pos as u64
    }

    /// Runs a decoder on the unread bytes; when it fails for want of bytes and the file has
    /// more, reads more (growing the window for an entry larger than it) and retries.
    fn with<T>(
        &mut self,
        mut f: impl FnMut(&mut Reader<'_>) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        loop {
            let rest = self.buf.get(self.pos..).unwrap_or_default();
            let mut r = Reader::new(rest, "index");
            let res = f(&mut r);
            let used = rest.len() - r.remaining();
            let loaded_end = self.buf_offset + self.buf.len() as u64;
            match res {
                Ok(v) => {
                    self.pos += used;
                    return Ok(v);
                }
                Err(e) if loaded_end >= self.ix.body_end => return Err(e),
                Err(_) => self.refill(loaded_end)?,
            }
        }
    }

    fn refill(&mut self, loaded_end: u64) -> Result<(), StorageError> {
        self.buf.drain(..self.pos);
        self.buf_offset += self.pos as u64;
        self.pos = 0;
        let want = INDEX_READ_BYTES.max(self.buf.len());
        let n = usize::try_from((self.ix.body_end - loaded_end).min(want as u64))
            .map_err(|_| self.ix.corrupt("size"))?;
        let at = self.buf.len();
        self.buf.resize(at + n, 0);
        let piece = self.buf.get_mut(at..).unwrap_or_default();
        self.ix
            .file
            .read_exact_at(piece, loaded_end)
            .map_err(|e| StorageError::io(&self.ix.path, e))?;
        self.crc = crc32c_update(self.crc, piece);
        Ok(())
    }

    /// The checksum of the whole body (reading whatever the decode did not need).
    fn finish_crc(mut self) -> Result<u32, StorageError> {
        loop {
            let loaded_end = self.buf_offset + self.buf.len() as u64;
            if loaded_end >= self.ix.body_end {
                return Ok(self.crc);
            }
            self.pos = self.buf.len();
            self.refill(loaded_end)?;
        }
    }
}

/// Parses one entry without allocating; `position` is where it starts in the data stream when
/// the format does not store it. This is the summary search's inner loop (up to
/// `MIN_INDEX_INTERVAL` entries per key cache miss), so it reads the slice directly rather
/// than through `Reader`'s per-field `Result`s.
fn raw_entry<'a>(
    shape: EntryShape,
    r: &mut Reader<'a>,
    position: u64,
) -> Result<RawEntry<'a>, StorageError> {
    let buf = r.rest();
    let parsed = match shape {
        EntryShape::Fixed => raw_fixed(buf),
        EntryShape::Compact => raw_compact(buf, position),
        EntryShape::Keyed | EntryShape::Sampled => raw_keyed(buf, position),
    };
    let Some((e, used)) = parsed else {
        return Err(StorageError::Decode { what: "index" });
    };
    r.take(used)?;
    Ok(e)
}

/// A varint of format 2 (LEB128, as codec/compact.rs writes it).
#[inline]
fn uv(buf: &[u8], p: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let b = *buf.get(*p)?;
        *p += 1;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

#[inline]
fn skip<'a>(buf: &'a [u8], p: &mut usize, n: usize) -> Option<&'a [u8]> {
    let s = buf.get(*p..p.checked_add(n)?)?;
    *p += n;
    Some(s)
}

#[inline]
fn be<const N: usize>(buf: &[u8], p: &mut usize) -> Option<[u8; N]> {
    skip(buf, p, N)?.try_into().ok()
}

fn raw_compact(buf: &[u8], position: u64) -> Option<(RawEntry<'_>, usize)> {
    let mut p = 0usize;
    let kn = usize::try_from(uv(buf, &mut p)?).ok()?;
    let key = skip(buf, &mut p, kn)?;
    let token = i64::from_be_bytes(be(buf, &mut p)?);
    let length = u32::try_from(uv(buf, &mut p)?).ok()?;
    let header_len = u32::try_from(uv(buf, &mut p)?).ok()?;
    let start = p;
    // Every block consumes bytes or fails, so a corrupt count ends at the buffer's end.
    for _ in 0..uv(buf, &mut p)? {
        for _ in 0..uv(buf, &mut p)? {
            let n = usize::try_from(uv(buf, &mut p)?).ok()?;
            skip(buf, &mut p, n)?;
        }
        for _ in 0..3 {
            uv(buf, &mut p)?;
        }
    }
    let blocks = buf.get(start..p)?;
    let e = RawEntry {
        key,
        token,
        position,
        length,
        header_len,
        blocks,
    };
    Some((e, p))
}

fn raw_keyed(buf: &[u8], position: u64) -> Option<(RawEntry<'_>, usize)> {
    let mut p = 0usize;
    let kn = usize::try_from(uv(buf, &mut p)?).ok()?;
    let key = skip(buf, &mut p, kn)?;
    let tagged = uv(buf, &mut p)?;
    let token = if tagged & 1 == 1 {
        i64::from_be_bytes(be(buf, &mut p)?)
    } else {
        helenus_types::murmur3_token(key)
    };
    let e = RawEntry {
        key,
        token,
        position,
        length: u32::try_from(tagged >> 1).ok()?,
        header_len: 0,
        blocks: &[],
    };
    Some((e, p))
}

fn raw_fixed(buf: &[u8]) -> Option<(RawEntry<'_>, usize)> {
    let mut p = 0usize;
    let kn = u32::from_be_bytes(be(buf, &mut p)?) as usize;
    let key = skip(buf, &mut p, kn)?;
    let token = i64::from_be_bytes(be(buf, &mut p)?);
    let position = u64::from_be_bytes(be(buf, &mut p)?);
    let length = u32::from_be_bytes(be(buf, &mut p)?);
    let header_len = u32::from_be_bytes(be(buf, &mut p)?);
    let start = p;
    for _ in 0..u32::from_be_bytes(be(buf, &mut p)?) {
        for _ in 0..u16::from_be_bytes(be(buf, &mut p)?) {
            let n = u32::from_be_bytes(be(buf, &mut p)?) as usize;
            skip(buf, &mut p, n)?;
        }
        skip(buf, &mut p, 12)?;
    }
    let blocks = buf.get(start..p)?;
    let e = RawEntry {
        key,
        token,
        position,
        length,
        header_len,
        blocks,
    };
    Some((e, p))
}

impl RawEntry<'_> {
    fn to_entry(&self, shape: EntryShape) -> Result<IndexEntry, StorageError> {
        self.to_entry_keyed(shape, Bytes::copy_from_slice(self.key))
    }

    fn to_entry_keyed(&self, shape: EntryShape, key: Bytes) -> Result<IndexEntry, StorageError> {
        let mut r = Reader::new(self.blocks, "row index");
        let blocks = match shape {
            EntryShape::Fixed => super::format::decode_fixed_blocks(&mut r)?,
            EntryShape::Compact => super::format::decode_compact_blocks(&mut Dec::new(&mut r, 0))?,
            EntryShape::Keyed | EntryShape::Sampled => Vec::new(),
        };
        Ok(IndexEntry {
            token: self.token,
            key,
            position: self.position,
            length: self.length,
            header_len: self.header_len,
            blocks,
        })
    }
}

mod sampled;
#[cfg(test)]
use sampled::{encode_sampled_entry, encode_sampled_header};
pub(crate) use sampled::{SampledIndexBody, MAX_SAMPLED_INTERVAL};

#[cfg(test)]
mod tests;
