//! Writing a segment: partitions in (token, key) order, as the row SSTable writer takes them
//! from a flush or compaction, cut into row groups of entries; each full group's streams are
//! encoded (chunk.rs) and appended, and the footer (footer.rs) is written at `finish`. The file
//! is written under a temporary name and renamed once synced, so a crash leaves no half segment.

use super::chunk::{encode_chunk, encode_chunk_with, BlockCompression, MAX_CHUNK_ROWS};
use super::dict::StreamDict;
use super::footer::{ChunkEntry, DictEntry, Footer, GroupMeta, DERIVED_TOKENS, MAGIC};
use super::layout::{
    ColumnarSchema, GroupBuilder, StreamLayout, KIND_PARTITION, KIND_ROW, KIND_STATIC, S_KEY,
    S_TOKEN,
};
use super::vector::{Column, ColumnValues, ValueType};
use super::ColumnarError;
use crate::clustering::ClusteringComparator;
use crate::codec::crc32c;
use crate::partition::{stamp_local_times, Partition, Row, TableLayout};
use crate::types::{ColumnId, Mutation};
use bytes::Bytes;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How a segment is cut and compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentOptions {
    /// Entries (rows) per row group: the unit of chunk skipping and of a scan's reads. Smaller
    /// groups skip more (partitions are in token order, so a group's min/max spans as many
    /// partitions as it holds) but cost footer bytes and compression: on 1M GDELT-shaped
    /// rows, 8,192 / 16,384 / 65,536 rows gave files of 43.6 / 42.7 / 42.1 MB, and a
    /// restriction on a month-correlated column read 34/123, 30/62 and 16/16 groups.
    pub row_group_rows: usize,
    /// A row group is also cut once its values take this many bytes, so long values cannot
    /// make the writer hold an unbounded group in memory.
    pub row_group_bytes: usize,
    pub compression: BlockCompression,
}

impl Default for SegmentOptions {
    fn default() -> Self {
        SegmentOptions {
            row_group_rows: 16 * 1024,
            row_group_bytes: 64 << 20,
            compression: BlockCompression::Lz4,
        }
    }
}

/// What a finished segment holds, for reports and statistics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SegmentSummary {
    pub path: PathBuf,
    pub entries: u64,
    pub partitions: u64,
    pub row_groups: usize,
    pub file_bytes: u64,
    pub footer_bytes: u64,
    /// Bytes of each stream over all row groups, by name ("token", "col 3 value", ...).
    pub stream_bytes: Vec<(String, u64)>,
    /// Bytes of each regular column (its value, timestamp, TTL and deletion-time streams).
    pub column_bytes: Vec<(ColumnId, u64)>,
}

/// Writes one columnar segment (a columnar SSTable's Columns.db, or a file of its own).
pub struct SegmentWriter {
    path: PathBuf,
    tmp: PathBuf,
    /// None once the footer is written.
    out: Option<BufWriter<File>>,
    /// Set once the file has its final name; a writer dropped before removes its temporary file.
    renamed: bool,
    pos: u64,
    options: SegmentOptions,
    builder: GroupBuilder,
    groups: Vec<GroupMeta>,
    last: Option<(i64, Bytes)>,
    layout: TableLayout,
    entries: u64,
    partitions: u64,
    /// Per stream, its segment dictionary: value streams of regular columns only (keys and
    /// clustering values barely repeat within a segment).
    dicts: Vec<Option<StreamDict>>,
}

impl SegmentWriter {
    pub fn create(
        path: &Path,
        schema: &ColumnarSchema,
        options: SegmentOptions,
    ) -> Result<Self, ColumnarError> {
        if options.row_group_rows == 0 || options.row_group_rows > MAX_CHUNK_ROWS {
            return Err(ColumnarError::Invalid(format!(
                "row_group_rows must be 1..={MAX_CHUNK_ROWS}"
            )));
        }
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let file = File::create(&tmp).map_err(|e| ColumnarError::io(&tmp, e))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(MAGIC)
            .map_err(|e| ColumnarError::io(&tmp, e))?;
        let cmp = Arc::new(ClusteringComparator::new(
            schema.clustering.iter().map(|c| c.column.clone()).collect(),
        ));
        let streams = StreamLayout::of(schema);
        let dicts = (0..streams.streams())
            .map(|s| {
                streams
                    .is_column_value(s)
                    .then(|| StreamDict::for_values(streams.stream_type(s).physical()))
            })
            .collect();
        Ok(SegmentWriter {
            path: path.to_path_buf(),
            tmp,
            out: Some(out),
            renamed: false,
            pos: MAGIC.len() as u64,
            options,
            builder: GroupBuilder::new(StreamLayout::of(schema)),
            groups: Vec::new(),
            last: None,
            layout: TableLayout {
                cmp,
                path_cmp: HashMap::new(),
            },
            entries: 0,
            partitions: 0,
            dicts,
        })
    }

    /// Entries appended so far (rows, static rows, deletion-only partitions).
    pub(crate) fn entries(&self) -> u64 {
        self.entries
    }

    /// Appends a partition; partitions must arrive in (token, key) order. What the row SSTable
    /// writer's `append` takes, so flush and compaction can feed either.
    pub(crate) fn append(&mut self, p: &Partition) -> Result<(), ColumnarError> {
        if let Some(last) = &self.last {
            if (last.0, &last.1) >= (p.token, &p.key) {
                return Err(ColumnarError::Invalid("partitions out of order".into()));
            }
        }
        self.last = Some((p.token, p.key.clone()));
        let mut first = true;
        if !p.static_row.is_empty() {
            self.push_entry(p, KIND_STATIC, &[], &p.static_row, &mut first)?;
        }
        for (k, r) in &p.rows {
            self.push_entry(p, KIND_ROW, &k.values, r, &mut first)?;
        }
        let has_header = p.deletion.is_some() || !p.range_tombstones.is_empty();
        if first && has_header {
            self.push_entry(p, KIND_PARTITION, &[], &Row::default(), &mut first)?;
        }
        if !first {
            self.partitions += 1;
        }
        Ok(())
    }

    fn push_entry(
        &mut self,
        p: &Partition,
        kind: i64,
        ck: &[Bytes],
        row: &Row,
        first: &mut bool,
    ) -> Result<(), ColumnarError> {
        let header = *first || self.builder.rows == 0;
        *first = false;
        self.builder.push(p, kind, ck, row, header)?;
        self.entries += 1;
        if self.builder.rows >= self.options.row_group_rows
            || self.builder.raw_bytes >= self.options.row_group_bytes
        {
            self.flush_group()?;
        }
        Ok(())
    }

    /// Appends a mutation as the partition it writes, with TTL expiry and deletion times that
    /// it leaves at 0 set from `now_s` (as a memtable would). Counter increments are refused.
    pub fn append_mutation(&mut self, m: &Mutation, now_s: i64) -> Result<(), ColumnarError> {
        let mut p = Partition::from_mutation(m, &self.layout)
            .map_err(|e| ColumnarError::Invalid(e.to_string()))?;
        stamp_local_times(&mut p, now_s);
        if let Some(d) = &mut p.deletion {
            if d.local_deletion_time_s == 0 {
                d.local_deletion_time_s = now_s;
            }
        }
        self.append(&p)
    }

    fn flush_group(&mut self) -> Result<(), ColumnarError> {
        let rows = self.builder.rows;
        if rows == 0 {
            return Ok(());
        }
        let cols = self.builder.take();
        let derived = tokens_derived(&cols, self.builder.layout.key);
        let mut chunks = Vec::with_capacity(cols.len());
        for (s, col) in cols.iter().enumerate() {
            let t = self.builder.layout.stream_type(s);
            let dict = self.dicts.get_mut(s).and_then(Option::as_mut);
            let (mut bytes, stats) = encode_chunk_with(col, t, self.options.compression, dict);
            if derived && s == S_TOKEN {
                // Random 64-bit tokens do not compress: readers hash the keys instead.
                bytes.clear();
            }
            let offset = self.pos;
            self.write(&bytes)?;
            chunks.push(ChunkEntry {
                offset,
                len: bytes.len() as u64,
                crc: crc32c(&bytes),
                physical: col.values.physical(),
                stats,
            });
        }
        self.groups.push(GroupMeta {
            rows,
            flags: if derived { DERIVED_TOKENS } else { 0 },
            chunks,
        });
        Ok(())
    }

    /// Writes each non-empty segment dictionary as a chunk of its entries, after the groups.
    fn write_dictionaries(&mut self) -> Result<Vec<DictEntry>, ColumnarError> {
        let mut out = Vec::new();
        for s in 0..self.dicts.len() {
            let Some(Some(d)) = self.dicts.get_mut(s).map(Option::take) else {
                continue;
            };
            let (col, t) = match d {
                StreamDict::Bytes(b) => (ColumnValues::Bytes(b.entries), ValueType::Blob),
                StreamDict::Ints(i) => match i.into_entries() {
                    Some(entries) => (ColumnValues::Int(entries), ValueType::BigInt),
                    None => continue,
                },
            };
            let entries = col.len();
            if entries == 0 {
                continue;
            }
            let col = Column {
                values: col,
                validity: None,
            };
            let (bytes, _) = encode_chunk(&col, t, self.options.compression);
            let offset = self.pos;
            self.write(&bytes)?;
            out.push(DictEntry {
                stream: s,
                offset,
                len: bytes.len() as u64,
                crc: crc32c(&bytes),
                entries,
            });
        }
        Ok(out)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), ColumnarError> {
        let out = self
            .out
            .as_mut()
            .ok_or(ColumnarError::Invalid("segment already finished".into()))?;
        out.write_all(bytes)
            .map_err(|e| ColumnarError::io(&self.tmp, e))?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    /// Writes the last row group and the footer, syncs, and renames the file into place.
    pub fn finish(mut self) -> Result<SegmentSummary, ColumnarError> {
        self.flush_group()?;
        let dicts = self.write_dictionaries()?;
        let footer = Footer {
            layout: self.builder.layout.clone(),
            groups: std::mem::take(&mut self.groups),
            dicts,
        };
        let body = footer.encode();
        let mut trailer = Vec::with_capacity(16);
        trailer.extend_from_slice(&(body.len() as u32).to_le_bytes());
        trailer.extend_from_slice(&crc32c(&body).to_le_bytes());
        trailer.extend_from_slice(MAGIC);
        self.write(&body)?;
        self.write(&trailer)?;
        let io = |e| ColumnarError::io(&self.tmp, e);
        let out = self
            .out
            .take()
            .ok_or(ColumnarError::Invalid("segment already finished".into()))?;
        let file = out.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_all().map_err(io)?;
        drop(file);
        std::fs::rename(&self.tmp, &self.path).map_err(|e| ColumnarError::io(&self.path, e))?;
        if let Some(dir) = self.path.parent() {
            // The rename is durable only once the directory is synced.
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        self.renamed = true;
        Ok(summary(
            &footer,
            self.path.clone(),
            self.pos,
            body.len() as u64,
            self.entries,
            self.partitions,
        ))
    }
}

/// Whether every token of a group is the Murmur3 token of its serialized partition key (as the
/// server computes tokens; tests that make up tokens keep their token streams).
fn tokens_derived(cols: &[Column], key_type: ValueType) -> bool {
    let (Some(tokens), Some(keys)) = (cols.get(S_TOKEN), cols.get(S_KEY)) else {
        return false;
    };
    let mut buf = Vec::new();
    (0..tokens.len()).all(|i| {
        buf.clear();
        keys.serialize_into(i, key_type, &mut buf)
            && tokens.int(i) == Some(helenus_types::murmur3_token(&buf))
    })
}

impl Drop for SegmentWriter {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

fn summary(
    footer: &Footer,
    path: PathBuf,
    file_bytes: u64,
    footer_bytes: u64,
    entries: u64,
    partitions: u64,
) -> SegmentSummary {
    let layout = &footer.layout;
    let mut per_stream = vec![0u64; layout.streams()];
    for g in &footer.groups {
        for (s, c) in g.chunks.iter().enumerate() {
            if let Some(n) = per_stream.get_mut(s) {
                *n += c.len;
            }
        }
    }
    for d in &footer.dicts {
        if let Some(n) = per_stream.get_mut(d.stream) {
            *n += d.len;
        }
    }
    let column_bytes = layout
        .columns
        .iter()
        .enumerate()
        .map(|(j, c)| {
            let s = layout.column_stream(j);
            let n = per_stream
                .get(s..s + super::layout::PER_COLUMN)
                .map_or(0, |x| x.iter().sum());
            (c.id, n)
        })
        .collect();
    SegmentSummary {
        path,
        entries,
        partitions,
        row_groups: footer.groups.len(),
        file_bytes,
        footer_bytes,
        stream_bytes: per_stream
            .iter()
            .enumerate()
            .map(|(s, n)| (layout.stream_name(s), *n))
            .collect(),
        column_bytes,
    }
}
