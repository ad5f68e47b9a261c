//! Reading a segment: the footer once at open, then per row group only the chunks a scan asks
//! for (each a positioned read of its byte range, checked against its CRC32C), after skipping
//! row groups whose statistics rule out a restriction. Also rebuilds whole partitions, for a
//! merge with other sources (compaction, reads that reconcile).

use super::chunk::{decode_chunk, decode_chunk_with};
use super::derive;
use super::dict::Dictionary;
use super::footer::{ChunkEntry, Footer, MAGIC, TRAILER_LEN};
use super::layout::{
    ColumnSpec, Entry, GroupColumns, Serialized, KIND_ROW, KIND_STATIC, S_BASE_TS, S_EXTRAS, S_KEY,
    S_KIND, S_LIVE_TS, S_LIVE_TTL, S_PART_DEL_TS, S_ROW_DEL_TS, S_TOKEN,
};
use super::select::{decode_selected, select_chunk, ValuePredicate};
use super::stats::{ChunkStats, CompareOp};
use super::vector::{Bitmap, Column, ColumnValues, Physical, Scalar, ValueType};
use super::ColumnarError;
use crate::clustering::{CKey, ClusteringComparator};
use crate::codec::crc32c;
use crate::partition::{to_mutation, Partition};
use crate::reconcile;
use crate::types::{ClusteringColumn, ColumnId, Mutation, TableId};
use bytes::Bytes;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What a restriction compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The partition key (its serialized form, ordered by the schema's partition key type).
    PartitionKey,
    /// The i-th clustering column.
    Clustering(usize),
    Column(ColumnId),
}

/// `target op value`, the value in Cassandra's serialized form.
#[derive(Debug, Clone, PartialEq)]
pub struct Restriction {
    pub target: Target,
    pub op: CompareOp,
    pub value: Vec<u8>,
}

/// What a scan reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScanRequest {
    /// Regular columns, in the order the batches return them.
    pub columns: Vec<ColumnId>,
    /// Row groups that cannot satisfy all of these are skipped, unread.
    pub restrictions: Vec<Restriction>,
    /// Tokens, keys, entry kinds and clustering of every row.
    pub keys: bool,
    /// Timestamps, TTLs and deletion times of cells and rows, for reconciliation.
    pub metadata: bool,
}

/// One row group's selected columns, one slot per entry.
#[derive(Debug, Clone, PartialEq)]
pub struct RowGroupBatch {
    pub group: usize,
    pub rows: usize,
    pub keys: Option<KeyColumns>,
    pub row_meta: Option<RowMeta>,
    pub columns: Vec<ColumnBatch>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct KeyColumns {
    pub tokens: Column,
    pub keys: Column,
    /// 0 row, 1 static row, 2 partition without rows (only deletions).
    pub kinds: Column,
    pub clustering: Vec<Column>,
}

/// Row-level times, absolute (null where absent).
#[derive(Debug, Clone, PartialEq)]
pub struct RowMeta {
    pub liveness_ts: Column,
    pub liveness_ttl: Column,
    pub liveness_expires: Column,
    pub deletion_ts: Column,
    pub deletion_ldt: Column,
    /// Set on a partition's first entry of each row group.
    pub partition_deletion_ts: Column,
    pub partition_deletion_ldt: Column,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ColumnBatch {
    pub id: ColumnId,
    pub value_type: ValueType,
    /// Live values (null: no live cell here, a tombstone, or a cell kept in extras).
    pub values: Column,
    pub cells: Option<CellMeta>,
}

/// Per-cell times, absolute: a timestamp with a null value is a cell tombstone.
#[derive(Debug, Clone, PartialEq)]
pub struct CellMeta {
    pub timestamps: Column,
    pub ttl: Column,
    /// TTL expiry for expiring cells, deletion time for tombstones.
    pub local_deletion: Column,
}

/// An open segment.
pub struct SegmentReader {
    path: PathBuf,
    file: File,
    footer: Footer,
    cmp: Arc<ClusteringComparator>,
    bytes_read: AtomicU64,
    /// The entry number each row group starts at (and the total last), for reads by entry.
    group_starts: Vec<u64>,
    /// The row groups most recently decoded whole for `partition_at`: reads walking a segment
    /// in order (range reads, merges) take a group's partitions one by one, and each would
    /// otherwise decode every stream of the group again.
    recent: parking_lot::Mutex<Vec<(usize, Arc<DecodedGroup>)>>,
    /// Streams `read_group` decoded last, by (group, stream): pages of a scan read a group's
    /// key and column streams once per page, and a page is a fraction of a group.
    streams: parking_lot::Mutex<RecentStreams>,
    /// Numberings of determinants (derive.rs) by (group, stream): the columns one determinant
    /// fixes (a place's name, latitude, longitude) are often read together.
    numberings: parking_lot::Mutex<RecentNumberings>,
    /// Per stream, its segment dictionary (loaded at open: a few entries per distinct value).
    dicts: Vec<Option<Dictionary>>,
    /// Every row group has a token range, each starting where the one before ends or later
    /// (as the writer, appending in token order, makes them): searches may bisect them.
    groups_in_token_order: bool,
}

/// Decoded streams by (group, stream), oldest first.
type RecentStreams = std::collections::VecDeque<((usize, usize), Arc<Column>)>;

/// Streams `read_group` keeps decoded per segment.
const RECENT_STREAMS: usize = 16;

type RecentNumberings = std::collections::VecDeque<((usize, usize), Arc<derive::Numbering>)>;

/// Determinant numberings kept per segment.
const RECENT_NUMBERINGS: usize = 4;

/// A row group's streams, decoded, with its raw streams serialized once.
struct DecodedGroup {
    cols: Vec<Column>,
    serialized: Serialized,
}

/// Row groups `partition_at` keeps decoded (each a full set of streams).
const RECENT_GROUPS: usize = 2;

impl SegmentReader {
    /// Opens `path`; `clustering` orders clustering keys when partitions are rebuilt.
    pub fn open(path: &Path, clustering: &[ClusteringColumn]) -> Result<Self, ColumnarError> {
        let file = File::open(path).map_err(|e| ColumnarError::io(path, e))?;
        let len = file
            .metadata()
            .map_err(|e| ColumnarError::io(path, e))?
            .len();
        let min = (MAGIC.len() + TRAILER_LEN) as u64;
        if len < min {
            return Err(ColumnarError::corrupt("file too short"));
        }
        let mut head = [0u8; 8];
        file.read_exact_at(&mut head, 0)
            .map_err(|e| ColumnarError::io(path, e))?;
        let mut tail = [0u8; TRAILER_LEN];
        file.read_exact_at(&mut tail, len - TRAILER_LEN as u64)
            .map_err(|e| ColumnarError::io(path, e))?;
        let (lens, magic) = tail.split_at(8);
        if &head != MAGIC || magic != MAGIC {
            return Err(ColumnarError::corrupt("not a columnar segment"));
        }
        let mut c = super::bits::Cursor::new(lens);
        let footer_len = u64::from(c.u32_le()?);
        let footer_crc = c.u32_le()?;
        let footer_start = (len - TRAILER_LEN as u64)
            .checked_sub(footer_len)
            .filter(|s| *s >= MAGIC.len() as u64)
            .ok_or(ColumnarError::corrupt("footer length"))?;
        let mut body = vec![0u8; footer_len as usize];
        file.read_exact_at(&mut body, footer_start)
            .map_err(|e| ColumnarError::io(path, e))?;
        if crc32c(&body) != footer_crc {
            return Err(ColumnarError::FooterChecksum);
        }
        let footer = Footer::decode(&body, footer_start)?;
        let mut dicts: Vec<Option<Dictionary>> = vec![None; footer.layout.streams()];
        let mut dict_bytes = 0;
        for d in &footer.dicts {
            let len = usize::try_from(d.len).map_err(|_| ColumnarError::corrupt("dictionary"))?;
            let mut buf = vec![0u8; len];
            file.read_exact_at(&mut buf, d.offset)
                .map_err(|e| ColumnarError::io(path, e))?;
            if crc32c(&buf) != d.crc {
                return Err(ColumnarError::corrupt("dictionary checksum"));
            }
            let bytes = footer.layout.stream_type(d.stream).physical() == Physical::Bytes;
            let physical = if bytes {
                Physical::Bytes
            } else {
                Physical::Int
            };
            let dict = match decode_chunk(&buf, d.entries, physical)?.values {
                ColumnValues::Bytes(entries) if bytes => Dictionary::Bytes(entries),
                ColumnValues::Int(entries) if !bytes => Dictionary::Ints(entries),
                _ => return Err(ColumnarError::corrupt("dictionary")),
            };
            if let Some(slot) = dicts.get_mut(d.stream) {
                *slot = Some(dict);
            }
            dict_bytes += d.len;
        }
        let mut group_starts = Vec::with_capacity(footer.groups.len() + 1);
        let mut at = 0u64;
        for g in &footer.groups {
            group_starts.push(at);
            at += g.rows as u64;
        }
        group_starts.push(at);
        let mut reader = SegmentReader {
            path: path.to_path_buf(),
            file,
            footer,
            cmp: Arc::new(ClusteringComparator::new(clustering.to_vec())),
            bytes_read: AtomicU64::new(footer_len + TRAILER_LEN as u64 + dict_bytes),
            group_starts,
            recent: parking_lot::Mutex::new(Vec::new()),
            streams: parking_lot::Mutex::new(std::collections::VecDeque::new()),
            numberings: parking_lot::Mutex::new(std::collections::VecDeque::new()),
            dicts,
            groups_in_token_order: false,
        };
        let ranges: Vec<_> = (0..reader.row_groups())
            .map(|g| reader.group_token_range(g))
            .collect();
        reader.groups_in_token_order = ranges.iter().all(Option::is_some)
            && ranges
                .windows(2)
                .all(|w| matches!(w, [Some((_, a)), Some((b, _))] if a <= b));
        Ok(reader)
    }

    /// Entries in the segment.
    pub fn entries(&self) -> u64 {
        self.group_starts.last().copied().unwrap_or(0)
    }

    /// The row group holding entry `at` (the last one starting at or before it) and its first
    /// entry.
    fn group_of_entry(&self, at: u64) -> (usize, u64) {
        let g = self
            .group_starts
            .partition_point(|s| *s <= at)
            .saturating_sub(1);
        (g, self.group_starts.get(g).copied().unwrap_or(0))
    }

    /// Every stream of row group `g`, decoded (from the recent groups when there).
    fn whole_group(&self, g: usize) -> Result<Arc<DecodedGroup>, ColumnarError> {
        if let Some((_, d)) = self.recent.lock().iter().find(|(i, _)| *i == g) {
            return Ok(d.clone());
        }
        let cols = (0..self.footer.layout.streams())
            .map(|s| self.stream(g, s))
            .collect::<Result<Vec<_>, _>>()?;
        let serialized = GroupColumns::serialize_all(&self.footer.layout, &cols);
        let d = Arc::new(DecodedGroup { cols, serialized });
        let mut recent = self.recent.lock();
        if recent.len() >= RECENT_GROUPS {
            recent.remove(0);
        }
        recent.push((g, d.clone()));
        Ok(d)
    }

    /// The partition made of entries `first..first + count` (as the SSTable index records
    /// them), rebuilt; `key` and `token` name it when it has no entry.
    pub(crate) fn partition_at(
        &self,
        first: u64,
        count: u64,
        token: i64,
        key: &bytes::Bytes,
    ) -> Result<Partition, ColumnarError> {
        let mut p = Partition::new(key.clone(), token);
        let end = first
            .checked_add(count)
            .filter(|e| *e <= self.entries())
            .ok_or(ColumnarError::corrupt("entry out of range"))?;
        let mut at = first;
        while at < end {
            let (g, start) = self.group_of_entry(at);
            let d = self.whole_group(g)?;
            let gc = GroupColumns::with_serialized(
                &self.footer.layout,
                &d.cols,
                &self.cmp,
                d.serialized.clone(),
            );
            let upto = end.min(start + self.group_rows(g) as u64);
            if upto <= at {
                return Err(ColumnarError::corrupt("empty row group"));
            }
            for i in at..upto {
                let e = gc.entry((i - start) as usize)?;
                if e.token != token || e.key != *key {
                    return Err(ColumnarError::corrupt("entry of another partition"));
                }
                add_entry(&mut p, e, &self.cmp)?;
            }
            at = upto;
        }
        Ok(p)
    }

    pub fn row_groups(&self) -> usize {
        self.footer.groups.len()
    }

    pub fn group_rows(&self, g: usize) -> usize {
        self.footer.groups.get(g).map_or(0, |m| m.rows)
    }

    /// The regular columns this segment stores as columns.
    pub fn columns(&self) -> &[ColumnSpec] {
        &self.footer.layout.columns
    }

    /// How the key stream stores partition keys (their serialized form: `Column::serialized`).
    pub fn key_type(&self) -> ValueType {
        self.footer.layout.key
    }

    /// How the clustering streams store each clustering column, in clustering order.
    pub fn clustering_types(&self) -> &[ValueType] {
        &self.footer.layout.clustering
    }

    /// Bytes each stream takes in the file over all row groups, in stream order, with a name
    /// for each (`token`, `key`, ... then `c<id>.value`, `c<id>.ts`, ...): where a segment's
    /// size goes, for size reports.
    pub fn stream_sizes(&self) -> Vec<(String, u64)> {
        let l = &self.footer.layout;
        (0..l.streams())
            .map(|s| {
                let bytes = self
                    .footer
                    .groups
                    .iter()
                    .filter_map(|g| g.chunks.get(s))
                    .map(|c| c.len)
                    .chain(
                        self.footer
                            .dicts
                            .iter()
                            .filter(|d| d.stream == s)
                            .map(|d| d.len),
                    )
                    .sum();
                (l.stream_name(s), bytes)
            })
            .collect()
    }

    /// Bytes read from the file so far (footer and chunks).
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }

    fn target_stream(&self, t: Target) -> Option<usize> {
        let l = &self.footer.layout;
        match t {
            Target::PartitionKey => Some(S_KEY),
            Target::Clustering(i) => (i < l.clustering.len()).then(|| l.clustering_stream(i)),
            Target::Column(id) => l.column_index(id).map(|j| l.column_stream(j)),
        }
    }

    /// Statistics of the chunk of row group `g` a restriction on `t` would look at.
    pub fn chunk_stats(&self, g: usize, t: Target) -> Option<&ChunkStats> {
        let s = self.target_stream(t)?;
        Some(&self.footer.groups.get(g)?.chunks.get(s)?.stats)
    }

    /// Whether row group `g` cannot hold a row satisfying `r` (decided from the footer).
    pub fn can_skip(&self, g: usize, r: &Restriction) -> bool {
        let Some(s) = self.target_stream(r.target) else {
            // Not a column here: its cells, if any, are in the extras stream, without bounds.
            return false;
        };
        let t = self.footer.layout.stream_type(s);
        let (Some(stats), Some(v)) = (self.chunk_stats(g, r.target), t.scalar(&r.value)) else {
            return false;
        };
        stats.can_skip(r.op, &v)
    }

    /// The smallest and largest token of row group `g` (from the footer).
    pub fn group_token_range(&self, g: usize) -> Option<(i64, i64)> {
        let stats = &self.footer.groups.get(g)?.chunks.get(S_TOKEN)?.stats;
        match (&stats.min, &stats.max) {
            (Some(Scalar::Int(lo)), Some(Scalar::Int(hi))) => Some((*lo, *hi)),
            _ => None,
        }
    }

    /// False when no row group's token range meets `lo..=hi` (true when one has no range).
    pub fn may_have_tokens(&self, lo: i64, hi: i64) -> bool {
        let ranges = || (0..self.row_groups()).map(|g| self.group_token_range(g));
        if !self.groups_in_token_order {
            return ranges().any(|r| r.is_none_or(|(glo, ghi)| glo <= hi && ghi >= lo));
        }
        // In token order, the first group ending at or after `lo` is the only candidate.
        let ends_before = |g: usize| self.group_token_range(g).is_some_and(|(_, ghi)| ghi < lo);
        let (mut a, mut b) = (0, self.row_groups());
        while a < b {
            let mid = a + (b - a) / 2;
            if ends_before(mid) {
                a = mid + 1;
            } else {
                b = mid;
            }
        }
        self.group_token_range(a).is_some_and(|(glo, _)| glo <= hi)
    }

    /// Whether row group `g`'s live rows are exactly its values of `columns` (decided from the
    /// footer): only rows, each with a primary-key liveness and no TTL on it, no deletion of a
    /// row or partition, nothing in the extras stream, and no TTL on a cell of `columns`. Cell
    /// tombstones are fine: their value slots are null, as an absent cell's.
    pub fn group_is_plain(&self, g: usize, columns: &[ColumnId]) -> bool {
        let Some(meta) = self.footer.groups.get(g) else {
            return false;
        };
        let rows = meta.rows as u32;
        let stats = |s: usize| meta.chunks.get(s).map(|c| &c.stats);
        let all_null = |s: usize| stats(s).is_some_and(|st| st.nulls >= rows);
        let only_rows = stats(S_KIND).is_some_and(|st| {
            st.nulls == 0 && st.max == Some(Scalar::Int(KIND_ROW)) && st.min == st.max
        });
        let all_live = stats(S_LIVE_TS).is_some_and(|st| st.nulls == 0);
        let l = &self.footer.layout;
        only_rows
            && all_live
            && all_null(S_LIVE_TTL)
            && all_null(S_ROW_DEL_TS)
            && all_null(S_PART_DEL_TS)
            && all_null(S_EXTRAS)
            && columns.iter().all(|id| match l.column_index(*id) {
                Some(j) => all_null(l.column_stream(j) + 2),
                // Not a column of this segment: no value anywhere (extras are empty).
                None => true,
            })
    }

    /// Row groups not ruled out by any of `restrictions`.
    pub fn matching_groups(&self, restrictions: &[Restriction]) -> Vec<usize> {
        (0..self.row_groups())
            .filter(|g| !restrictions.iter().any(|r| self.can_skip(*g, r)))
            .collect()
    }

    fn entry(&self, g: usize, s: usize) -> Result<&ChunkEntry, ColumnarError> {
        self.footer
            .groups
            .get(g)
            .and_then(|m| m.chunks.get(s))
            .ok_or(ColumnarError::corrupt("no such chunk"))
    }

    /// Reads and decodes stream `s` of row group `g`.
    fn stream(&self, g: usize, s: usize) -> Result<Column, ColumnarError> {
        let rows = self.group_rows(g);
        if s == S_TOKEN
            && self
                .footer
                .groups
                .get(g)
                .is_some_and(|m| m.derived_tokens())
        {
            return self.derived_tokens(g);
        }
        if let Some(a) = self.determinant(g, s) {
            let (mapping, numbering) = self.mapping(g, s, a, |buf, k, physical, dict| {
                decode_chunk_with(buf, k, physical, dict)
            })?;
            return derive::expand(&mapping, &numbering);
        }
        let (buf, physical) = self.chunk_bytes(g, s)?;
        decode_chunk_with(&buf, rows, physical, self.dict(s))
    }

    /// The stream whose values fix stream `s`'s in group `g`, when `s` is stored as a mapping.
    fn determinant(&self, g: usize, s: usize) -> Option<usize> {
        self.footer.groups.get(g)?.determinant_of(s)
    }

    /// The numbering of determinant stream `a`'s values in group `g`.
    fn numbering(&self, g: usize, a: usize) -> Result<Arc<derive::Numbering>, ColumnarError> {
        if let Some((_, n)) = self.numberings.lock().iter().find(|(at, _)| *at == (g, a)) {
            return Ok(n.clone());
        }
        let determinant = self.shared_stream(g, a)?;
        let n = derive::number(&determinant, usize::MAX)
            .map(Arc::new)
            .ok_or(ColumnarError::corrupt("derived stream"))?;
        let mut recent = self.numberings.lock();
        if recent.len() >= RECENT_NUMBERINGS {
            recent.pop_front();
        }
        recent.push_back(((g, a), n.clone()));
        Ok(n)
    }

    /// `read` applied to derived stream `s`'s mapping chunk (one entry per distinct value of
    /// its determinant `a`), with the numbering of `a`'s rows that maps rows to entries.
    fn mapping<T>(
        &self,
        g: usize,
        s: usize,
        a: usize,
        read: impl FnOnce(&[u8], usize, Physical, Option<&Dictionary>) -> Result<T, ColumnarError>,
    ) -> Result<(T, Arc<derive::Numbering>), ColumnarError> {
        let numbering = self.numbering(g, a)?;
        let (buf, physical) = self.chunk_bytes(g, s)?;
        let out = read(&buf, numbering.distinct(), physical, self.dict(s))?;
        Ok((out, numbering))
    }

    fn dict(&self, s: usize) -> Option<&Dictionary> {
        self.dicts.get(s).and_then(Option::as_ref)
    }

    /// The stored bytes of stream `s` of row group `g` (empty: every row null), checked
    /// against their CRC32C, and the chunk's physical type.
    fn chunk_bytes(&self, g: usize, s: usize) -> Result<(Vec<u8>, Physical), ColumnarError> {
        let e = self.entry(g, s)?;
        if e.len == 0 {
            return Ok((Vec::new(), e.physical));
        }
        if e.physical != self.footer.layout.stream_type(s).physical()
            && e.physical != Physical::Bytes
        {
            return Err(ColumnarError::corrupt("chunk physical type"));
        }
        let len = usize::try_from(e.len).map_err(|_| ColumnarError::corrupt("chunk length"))?;
        let mut buf = vec![0u8; len];
        self.file
            .read_exact_at(&mut buf, e.offset)
            .map_err(|err| ColumnarError::io(&self.path, err))?;
        self.bytes_read.fetch_add(e.len, Ordering::Relaxed);
        if crc32c(&buf) != e.crc {
            return Err(ColumnarError::Checksum {
                group: g,
                stream: s,
            });
        }
        Ok((buf, e.physical))
    }

    /// The rows of row group `g` whose value of column `id` satisfies `p`, evaluated on the
    /// chunk's encoding (select.rs) without decoding it into a vector. A column this segment
    /// does not store has no value in any row.
    pub fn select_rows(
        &self,
        g: usize,
        id: ColumnId,
        p: &ValuePredicate,
    ) -> Result<Bitmap, ColumnarError> {
        let rows = self.group_rows(g);
        let Some(j) = self.footer.layout.column_index(id) else {
            return Ok(Bitmap::filled(rows, false));
        };
        let s = self.footer.layout.column_stream(j);
        if let Some(a) = self.determinant(g, s) {
            // Each distinct value tested once, then looked up per row.
            let (hits, numbering) = self.mapping(g, s, a, |buf, k, physical, dict| {
                select_chunk(buf, k, physical, p, dict)
            })?;
            return Ok(Bitmap::from_bools(
                numbering.ids.iter().map(|id| hits.get(*id as usize)),
                rows,
            ));
        }
        let (buf, physical) = self.chunk_bytes(g, s)?;
        select_chunk(&buf, rows, physical, p, self.dict(s))
    }

    /// The tokens of a group whose footer says they are the Murmur3 tokens of its keys.
    fn derived_tokens(&self, g: usize) -> Result<Column, ColumnarError> {
        let keys = self.cached_stream(g, S_KEY)?;
        let key_type = self.footer.layout.key;
        let mut buf = Vec::new();
        let tokens = (0..keys.len())
            .map(|i| {
                buf.clear();
                keys.serialize_into(i, key_type, &mut buf)
                    .then(|| helenus_types::murmur3_token(&buf))
                    .ok_or(ColumnarError::corrupt("a derived token without a key"))
            })
            .collect::<Result<Vec<i64>, _>>()?;
        Ok(Column {
            values: ColumnValues::Int(tokens),
            validity: None,
        })
    }

    /// Stream `s` of group `g`, from the recently decoded streams when there.
    fn cached_stream(&self, g: usize, s: usize) -> Result<Column, ColumnarError> {
        self.shared_stream(g, s).map(|c| Column::clone(&c))
    }

    /// `cached_stream` without copying the column out of the cache.
    fn shared_stream(&self, g: usize, s: usize) -> Result<Arc<Column>, ColumnarError> {
        if let Some((_, c)) = self.streams.lock().iter().find(|(at, _)| *at == (g, s)) {
            return Ok(c.clone());
        }
        let c = Arc::new(self.stream(g, s)?);
        let mut recent = self.streams.lock();
        if recent.len() >= RECENT_STREAMS {
            recent.pop_front();
        }
        recent.push_back(((g, s), c.clone()));
        Ok(c)
    }

    /// The token and partition key of the entries at `positions` (ascending), from the key
    /// streams of their row groups: what a sampled SSTable index does not store.
    pub(crate) fn keys_at(&self, positions: &[u64]) -> Result<Vec<(i64, Bytes)>, ColumnarError> {
        let key_type = self.footer.layout.key;
        let mut out = Vec::with_capacity(positions.len());
        // The row group being read: its number, first entry, rows, keys and stored tokens.
        type Current = (usize, u64, u64, Arc<Column>, Option<Arc<Column>>);
        let mut current: Option<Current> = None;
        let mut buf = Vec::new();
        for &at in positions {
            if !current
                .as_ref()
                .is_some_and(|(_, start, rows, ..)| at >= *start && at - start < *rows)
            {
                if at >= self.entries() {
                    return Err(ColumnarError::corrupt("entry out of range"));
                }
                let (g, start) = self.group_of_entry(at);
                let derived = self
                    .footer
                    .groups
                    .get(g)
                    .is_some_and(|m| m.derived_tokens());
                let tokens = match derived {
                    true => None,
                    false => Some(self.shared_stream(g, S_TOKEN)?),
                };
                let keys = self.shared_stream(g, S_KEY)?;
                current = Some((g, start, self.group_rows(g) as u64, keys, tokens));
            }
            let Some((_, start, _, keys, tokens)) = &current else {
                return Err(ColumnarError::corrupt("row group"));
            };
            let i = (at - start) as usize;
            buf.clear();
            if !keys.serialize_into(i, key_type, &mut buf) {
                return Err(ColumnarError::corrupt("an entry without a key"));
            }
            let token = match tokens {
                Some(t) => t.int(i).ok_or(ColumnarError::corrupt("token"))?,
                None => helenus_types::murmur3_token(&buf),
            };
            out.push((token, Bytes::copy_from_slice(&buf)));
        }
        Ok(out)
    }

    /// Column `id` of row group `g` with only the values of the rows set in `selected` (its
    /// other rows null): the scan's column after restrictions on others left a few rows. Not
    /// kept in the recent streams (it is not the whole stream).
    pub fn read_selected(
        &self,
        g: usize,
        id: ColumnId,
        selected: &Bitmap,
    ) -> Result<Column, ColumnarError> {
        let l = &self.footer.layout;
        let rows = self.group_rows(g);
        let Some(j) = l.column_index(id) else {
            return Ok(Column::nulls(Physical::Bytes, rows));
        };
        let s = l.column_stream(j);
        if self.determinant(g, s).is_some() {
            let mut col = self.stream(g, s)?;
            let mut validity = col
                .validity
                .take()
                .unwrap_or_else(|| Bitmap::filled(rows, true));
            validity.and_with(selected);
            col.validity = Some(validity);
            return Ok(col);
        }
        let (buf, physical) = self.chunk_bytes(g, s)?;
        decode_selected(&buf, rows, physical, self.dict(s), selected)
    }

    /// Reads the streams `req` selects of row group `g` (whether or not it could be skipped).
    pub fn read_group(&self, g: usize, req: &ScanRequest) -> Result<RowGroupBatch, ColumnarError> {
        let rows = self.group_rows(g);
        let l = &self.footer.layout;
        let keys = if req.keys {
            Some(KeyColumns {
                tokens: self.cached_stream(g, S_TOKEN)?,
                keys: self.cached_stream(g, S_KEY)?,
                kinds: self.cached_stream(g, S_KIND)?,
                clustering: (0..l.clustering.len())
                    .map(|i| self.stream(g, l.clustering_stream(i)))
                    .collect::<Result<_, _>>()?,
            })
        } else {
            None
        };
        let base = if req.metadata {
            Some(self.stream(g, S_BASE_TS)?)
        } else {
            None
        };
        let row_meta = match &base {
            Some(b) => Some(self.row_meta(g, b)?),
            None => None,
        };
        let mut columns = Vec::with_capacity(req.columns.len());
        for id in &req.columns {
            let Some(j) = l.column_index(*id) else {
                columns.push(ColumnBatch {
                    id: *id,
                    value_type: ValueType::Opaque,
                    values: Column::nulls(Physical::Bytes, rows),
                    cells: base.as_ref().map(|_| CellMeta {
                        timestamps: Column::nulls(Physical::Int, rows),
                        ttl: Column::nulls(Physical::Int, rows),
                        local_deletion: Column::nulls(Physical::Int, rows),
                    }),
                });
                continue;
            };
            let s = l.column_stream(j);
            let values = self.cached_stream(g, s)?;
            let cells = match &base {
                Some(b) => Some(CellMeta {
                    timestamps: cell_timestamps(self.stream(g, s + 1)?, &values, b),
                    ttl: self.stream(g, s + 2)?,
                    local_deletion: self.stream(g, s + 3)?,
                }),
                None => None,
            };
            columns.push(ColumnBatch {
                id: *id,
                value_type: l.stream_type(s),
                values,
                cells,
            });
        }
        Ok(RowGroupBatch {
            group: g,
            rows,
            keys,
            row_meta,
            columns,
        })
    }

    fn row_meta(&self, g: usize, base: &Column) -> Result<RowMeta, ColumnarError> {
        Ok(RowMeta {
            liveness_ts: absolute(self.stream(g, 4)?, base),
            liveness_ttl: self.stream(g, 5)?,
            liveness_expires: self.stream(g, 6)?,
            deletion_ts: absolute(self.stream(g, 7)?, base),
            deletion_ldt: self.stream(g, 8)?,
            partition_deletion_ts: self.stream(g, 9)?,
            partition_deletion_ldt: self.stream(g, 10)?,
        })
    }

    /// The row groups `req`'s restrictions leave, read one at a time.
    pub fn scan<'a>(
        &'a self,
        req: &'a ScanRequest,
    ) -> impl Iterator<Item = Result<RowGroupBatch, ColumnarError>> + 'a {
        self.matching_groups(&req.restrictions)
            .into_iter()
            .map(move |g| self.read_group(g, req))
    }

    /// Rebuilds every partition in order, a row group at a time, calling `f` with each.
    pub(crate) fn for_each_partition(
        &self,
        mut f: impl FnMut(Partition) -> Result<(), ColumnarError>,
    ) -> Result<(), ColumnarError> {
        let mut current: Option<Partition> = None;
        for g in 0..self.row_groups() {
            let cols = (0..self.footer.layout.streams())
                .map(|s| self.stream(g, s))
                .collect::<Result<Vec<_>, _>>()?;
            let gc = GroupColumns::new(&self.footer.layout, &cols, &self.cmp);
            for i in 0..self.group_rows(g) {
                let e = gc.entry(i)?;
                let same = current
                    .as_ref()
                    .is_some_and(|p| p.token == e.token && p.key == e.key);
                if !same {
                    if let Some(p) = current.take() {
                        f(p)?;
                    }
                }
                let p = current.get_or_insert_with(|| Partition::new(e.key.clone(), e.token));
                add_entry(p, e, &self.cmp)?;
            }
        }
        match current {
            Some(p) => f(p),
            None => Ok(()),
        }
    }

    /// Every partition as the mutation that writes it back (`table` names it), in order, a row
    /// group at a time: everything the segment holds, deletions and times included.
    pub fn for_each_mutation(
        &self,
        table: TableId,
        mut f: impl FnMut(Mutation) -> Result<(), ColumnarError>,
    ) -> Result<(), ColumnarError> {
        self.for_each_partition(|p| f(to_mutation(&p, table)))
    }

    /// Every partition, rebuilt.
    #[cfg(test)]
    pub(crate) fn partitions(&self) -> Result<Vec<Partition>, ColumnarError> {
        let mut out = Vec::new();
        self.for_each_partition(|p| {
            out.push(p);
            Ok(())
        })?;
        Ok(out)
    }
}

/// `deltas` + `base`, row by row (null where either is).
/// A column's absolute cell timestamps: its deltas from the row's, where a live cell without
/// one (a value but no delta: format version 3) has the row's own.
fn cell_timestamps(deltas: Column, values: &Column, base: &Column) -> Column {
    let rows = deltas.len();
    let implied = (0..rows).any(|i| !deltas.is_valid(i) && values.is_valid(i));
    let deltas = if implied {
        let ints = (0..rows).map(|i| deltas.int(i).unwrap_or(0)).collect();
        let valid = Bitmap::from_bools(
            (0..rows).map(|i| deltas.is_valid(i) || values.is_valid(i)),
            rows,
        );
        Column {
            values: ColumnValues::Int(ints),
            validity: Some(valid),
        }
    } else {
        deltas
    };
    absolute(deltas, base)
}

fn absolute(deltas: Column, base: &Column) -> Column {
    let mut out = deltas;
    if let ColumnValues::Int(v) = &mut out.values {
        for (i, x) in v.iter_mut().enumerate() {
            *x = x.wrapping_add(base.int(i).unwrap_or(0));
        }
    }
    out
}

fn add_entry(
    p: &mut Partition,
    e: Entry,
    cmp: &Arc<ClusteringComparator>,
) -> Result<(), ColumnarError> {
    p.deletion = reconcile::max_deletion(p.deletion, e.partition_deletion);
    for rt in e.range_tombstones {
        if !p.range_tombstones.contains(&rt) {
            p.range_tombstones.push(rt);
        }
    }
    match e.kind {
        KIND_STATIC => p.static_row = e.row,
        KIND_ROW => {
            p.rows.insert(CKey::row(e.clustering, cmp), Box::new(e.row));
        }
        super::layout::KIND_PARTITION => {}
        _ => return Err(ColumnarError::corrupt("entry kind")),
    }
    Ok(())
}
