//! Writing a segment: partitions in (token, key) order, as the row SSTable writer takes them
//! from a flush or compaction, cut into row groups of entries; each full group's streams are
//! encoded (chunk.rs) and appended, and the footer (footer.rs) is written at `finish`. The file
//! is written under a temporary name and renamed once synced, so a crash leaves no half segment.

use super::chunk::{BlockCompression, MAX_CHUNK_ROWS};
use super::footer::{Footer, MAGIC};
use super::group_sink::GroupSink;
use super::layout::{
    ColumnarSchema, GroupBuilder, StreamLayout, KIND_PARTITION, KIND_ROW, KIND_STATIC,
};
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
use std::thread::JoinHandle;

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
    /// Set once the file has its final name; a writer dropped before removes its temporary file.
    renamed: bool,
    options: SegmentOptions,
    builder: GroupBuilder,
    /// Where the group before the one being filled is encoded.
    sink: SinkState,
    /// Bytes in the file once the groups handed to the sink so far are written.
    written: u64,
    last: Option<(i64, Bytes)>,
    layout: TableLayout,
    entries: u64,
    partitions: u64,
}

/// The encoding half of the writer: a full group is encoded on a thread of its own while the
/// next one fills (a columnar compaction spent about a third of its time encoding, on one of
/// two cores), one group at a time so the segment dictionaries see the groups in order.
enum SinkState {
    Idle(Box<GroupSink>),
    Encoding(JoinHandle<(Box<GroupSink>, Result<(), ColumnarError>)>),
    /// Taken by `finish`, or lost with an encoder thread that could not start or panicked.
    Gone,
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
        let sink = GroupSink::new(
            out,
            tmp.clone(),
            MAGIC.len() as u64,
            StreamLayout::of(schema),
            options.compression,
        );
        Ok(SegmentWriter {
            path: path.to_path_buf(),
            tmp,
            renamed: false,
            options,
            builder: GroupBuilder::new(StreamLayout::of(schema)),
            sink: SinkState::Idle(Box::new(sink)),
            written: MAGIC.len() as u64,
            last: None,
            layout: TableLayout {
                cmp,
                path_cmp: HashMap::new(),
            },
            entries: 0,
            partitions: 0,
        })
    }

    /// Entries appended so far (rows, static rows, deletion-only partitions).
    pub(crate) fn entries(&self) -> u64 {
        self.entries
    }

    /// Bytes in the file so far: row groups are written whole, so this grows a group at a time
    /// (and lags the group being encoded).
    pub(crate) fn bytes_written(&self) -> u64 {
        self.written
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
            self.flush_group(false)?;
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

    /// Waits for the group being encoded, if any; its error, if it failed.
    fn wait_for_sink(&mut self) -> Result<(), ColumnarError> {
        match std::mem::replace(&mut self.sink, SinkState::Gone) {
            SinkState::Encoding(h) => {
                let (sink, outcome) = h
                    .join()
                    .map_err(|_| ColumnarError::Invalid("row group encoder panicked".into()))?;
                self.written = sink.pos;
                self.sink = SinkState::Idle(sink);
                outcome
            }
            other => {
                self.sink = other;
                Ok(())
            }
        }
    }

    /// Hands the group filled so far to the sink: to a thread of its own unless `inline` (the
    /// last group, which nothing else would overlap).
    fn flush_group(&mut self, inline: bool) -> Result<(), ColumnarError> {
        let rows = self.builder.rows;
        if rows == 0 {
            return Ok(());
        }
        self.wait_for_sink()?;
        let SinkState::Idle(mut sink) = std::mem::replace(&mut self.sink, SinkState::Gone) else {
            return Err(ColumnarError::Invalid("segment already finished".into()));
        };
        let cols = self.builder.take();
        if inline {
            let outcome = sink.encode_group(rows, cols);
            self.written = sink.pos;
            self.sink = SinkState::Idle(sink);
            return outcome;
        }
        let handle = std::thread::Builder::new()
            .name("columnar-encode".into())
            .spawn(move || {
                let outcome = sink.encode_group(rows, cols);
                (sink, outcome)
            })
            .map_err(|e| ColumnarError::io(&self.tmp, e))?;
        self.sink = SinkState::Encoding(handle);
        Ok(())
    }

    /// Writes the last row group and the footer, syncs, and renames the file into place.
    pub fn finish(mut self) -> Result<SegmentSummary, ColumnarError> {
        self.flush_group(true)?;
        self.wait_for_sink()?;
        let SinkState::Idle(mut sink) = std::mem::replace(&mut self.sink, SinkState::Gone) else {
            return Err(ColumnarError::Invalid("segment already finished".into()));
        };
        let dicts = sink.write_dictionaries()?;
        let footer = Footer {
            layout: self.builder.layout.clone(),
            groups: std::mem::take(&mut sink.groups),
            dicts,
        };
        let body = footer.encode();
        let mut trailer = Vec::with_capacity(16);
        trailer.extend_from_slice(&(body.len() as u32).to_le_bytes());
        trailer.extend_from_slice(&crc32c(&body).to_le_bytes());
        trailer.extend_from_slice(MAGIC);
        sink.write(&body)?;
        sink.write(&trailer)?;
        let io = |e| ColumnarError::io(&self.tmp, e);
        let GroupSink { out, pos, .. } = *sink;
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
            pos,
            body.len() as u64,
            self.entries,
            self.partitions,
        ))
    }
}

impl Drop for SegmentWriter {
    fn drop(&mut self) {
        // A group still being encoded writes to the file: let it finish before the file goes.
        if let SinkState::Encoding(h) = std::mem::replace(&mut self.sink, SinkState::Gone) {
            let _ = h.join();
        }
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
