//! `nodetool export KS TABLE DIR`: a point-in-time copy of one table as Parquet files, one per
//! primary token range of this node, named `KS.TABLE.START_END.parquet` for the range
//! `(START, END]`.
//!
//! The table is flushed and its SSTables pinned (storage's `flush_and_pin`); every read goes
//! through the pin, so writes, flushes and compactions during the export do not tear it. The
//! reads are the storage engine's ordinary live reads — merged, with deleted and expired data
//! left out — turned into CQL rows as `SELECT *` turns them, and handed to helenus-export's
//! Parquet writer.

mod ranges;

use crate::exec::rows::{partition_rows, ColumnLayout, Row};
use crate::node::NodeState;
use bytes::Bytes;
use helenus_export::{ExportColumn, ExportError, ParquetFileWriter};
use helenus_schema::{TableKind, TableMeta};
use helenus_storage::{
    PartitionBound, PartitionRange, PinnedTable, ReadQuery, ReadResult, StorageError,
};
pub use ranges::{ranges_of_tokens, ExportRange};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Partitions per storage read of a range.
const PARTITIONS_PER_READ: usize = 128;
/// Rows per storage read: a huge partition is read in pieces of this many rows, not whole.
const ROWS_PER_READ: usize = 5000;

/// The file formats `export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Parquet,
}

impl ExportFormat {
    pub fn parse(s: &str) -> Result<Self, ExportFailure> {
        match s.to_ascii_lowercase().as_str() {
            "" | "parquet" => Ok(ExportFormat::Parquet),
            other => Err(ExportFailure::Usage(format!(
                "unknown export format '{other}' (known: parquet)"
            ))),
        }
    }
}

/// One file written.
#[derive(Debug, Clone)]
pub struct ExportedFile {
    pub path: PathBuf,
    pub range: ExportRange,
    pub rows: u64,
    pub bytes: u64,
}

/// What an export wrote.
#[derive(Debug, Clone)]
pub struct ExportSummary {
    pub files: Vec<ExportedFile>,
    /// SSTables the pinned view held.
    pub sstables: usize,
    pub elapsed_ms: u64,
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportFailure {
    #[error("{0}")]
    Usage(String),
    #[error("Keyspace {0} does not exist")]
    NoKeyspace(String),
    #[error("Table {0}.{1} does not exist")]
    NoTable(String, String),
    #[error("{0}.{1} is not stored on disk (a virtual or computed table): nothing to export")]
    NotStored(String, String),
    #[error("cannot create {path}: {source}")]
    Directory {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("reading the table: {0}")]
    Storage(#[from] StorageError),
    #[error("writing Parquet: {0}")]
    Write(#[from] ExportError),
}

impl ExportFailure {
    /// The admin API's status: the caller's mistake (400) or ours (500).
    pub fn status(&self) -> u16 {
        match self {
            ExportFailure::Usage(_)
            | ExportFailure::NoKeyspace(_)
            | ExportFailure::NoTable(..)
            | ExportFailure::NotStored(..)
            | ExportFailure::Directory { .. } => 400,
            ExportFailure::Storage(_) | ExportFailure::Write(_) => 500,
        }
    }
}

/// What to export, and where.
pub struct ExportRequest<'a> {
    pub keyspace: &'a str,
    pub table: &'a str,
    /// An absolute directory on this node (created if missing).
    pub dir: &'a Path,
    pub format: ExportFormat,
    /// Seconds since the epoch that TTLs are judged against.
    pub now_s: i64,
}

/// Writes the table's snapshot, a file per primary range of this node.
pub fn export(node: &NodeState, req: &ExportRequest<'_>) -> Result<ExportSummary, ExportFailure> {
    let started = Instant::now();
    let schema = node.schema();
    let ks = schema
        .keyspaces
        .get(req.keyspace)
        .ok_or_else(|| ExportFailure::NoKeyspace(req.keyspace.to_string()))?;
    let t = ks
        .tables
        .get(req.table)
        .ok_or_else(|| ExportFailure::NoTable(req.keyspace.into(), req.table.into()))?;
    if t.kind != TableKind::User {
        return Err(ExportFailure::NotStored(
            req.keyspace.into(),
            req.table.into(),
        ));
    }
    if !req.dir.is_absolute() {
        return Err(ExportFailure::Usage(format!(
            "the export directory must be an absolute path on the node: {}",
            req.dir.display()
        )));
    }
    std::fs::create_dir_all(req.dir).map_err(|source| ExportFailure::Directory {
        path: req.dir.to_path_buf(),
        source,
    })?;
    let pin = node.engine.flush_and_pin(*t.id.as_bytes())?;
    let mut files = Vec::new();
    for range in ranges::primary_ranges(node, ks) {
        let path = req.dir.join(format!(
            "{}.{}.{}_{}.parquet",
            t.keyspace, t.name, range.start, range.end
        ));
        let mut out = RangeExport::new(t, &path, range)?;
        for (start, end) in range.scans() {
            out.scan(node, &pin, start, end, req.now_s)?;
        }
        let written = out.writer.finish()?;
        files.push(ExportedFile {
            path: written.path,
            range,
            rows: written.rows,
            bytes: written.bytes,
        });
    }
    Ok(ExportSummary {
        files,
        sstables: pin.sstable_count(),
        elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}

/// The file of one range being written.
struct RangeExport<'t> {
    table: &'t TableMeta,
    layout: ColumnLayout,
    /// The columns `SELECT *` returns, as indexes into a row's cells.
    visible: Vec<usize>,
    writer: ParquetFileWriter,
    /// Reused for every batch.
    rows: Vec<Row>,
    cells: Vec<Option<Bytes>>,
}

impl<'t> RangeExport<'t> {
    fn new(t: &'t TableMeta, path: &Path, range: ExportRange) -> Result<Self, ExportFailure> {
        let (visible, columns): (Vec<usize>, Vec<ExportColumn>) = t
            .visible_columns()
            .map(|(i, c)| {
                (
                    i,
                    ExportColumn {
                        name: c.name.clone(),
                        cql_type: c.cql_type.clone(),
                    },
                )
            })
            .unzip();
        let types: serde_json::Map<String, serde_json::Value> = columns
            .iter()
            .map(|c| (c.name.clone(), c.cql_type.to_string().into()))
            .collect();
        let metadata = vec![
            ("helenus.keyspace".to_string(), t.keyspace.clone()),
            ("helenus.table".to_string(), t.name.clone()),
            (
                "helenus.token_range".to_string(),
                format!("({}, {}]", range.start, range.end),
            ),
            (
                "helenus.cql_types".to_string(),
                serde_json::Value::Object(types).to_string(),
            ),
        ];
        Ok(RangeExport {
            table: t,
            layout: ColumnLayout::new(t).without_cell_meta(),
            visible,
            writer: ParquetFileWriter::create(path, columns, metadata)?,
            rows: Vec::new(),
            cells: Vec::new(),
        })
    }

    /// Writes the partitions of one scan, read a batch at a time; a partition cut by the row
    /// limit is read on from its last row before the scan goes on after it.
    fn scan(
        &mut self,
        node: &NodeState,
        pin: &PinnedTable,
        mut start: PartitionBound,
        end: PartitionBound,
        now_s: i64,
    ) -> Result<(), ExportFailure> {
        loop {
            let q = ReadQuery {
                partitions: PartitionRange::Range {
                    start,
                    end: end.clone(),
                },
                row_limit: Some(ROWS_PER_READ),
                partition_limit: Some(PARTITIONS_PER_READ),
                ..ReadQuery::whole_partition(Bytes::new(), 0, now_s)
            };
            let result = node.engine.read_pinned(pin, &q)?;
            // Counted as storage counts them: a partition of static data alone is one row.
            let used: usize = result.partitions.iter().map(|p| p.rows.len().max(1)).sum();
            let read = result.partitions.len();
            let last = result.partitions.last().map(|p| {
                let row = p.rows.last().map(|r| r.clustering.clone());
                (p.token, p.key.clone(), row)
            });
            self.write(result, true)?;
            let Some((token, key, last_row)) = last else {
                return Ok(());
            };
            if used >= ROWS_PER_READ {
                if let Some(after) = last_row {
                    self.finish_partition(node, pin, (token, key.clone()), after, now_s)?;
                }
            } else if read < PARTITIONS_PER_READ {
                return Ok(());
            }
            start = PartitionBound::Key {
                token,
                key,
                inclusive: false,
            };
        }
    }

    /// The rest of a partition after row `after`, a row limit at a time.
    fn finish_partition(
        &mut self,
        node: &NodeState,
        pin: &PinnedTable,
        (token, key): (i64, Bytes),
        mut after: Vec<Bytes>,
        now_s: i64,
    ) -> Result<(), ExportFailure> {
        loop {
            let q = ReadQuery {
                row_limit: Some(ROWS_PER_READ),
                resume_after: Some(after.clone()),
                ..ReadQuery::whole_partition(key.clone(), token, now_s)
            };
            let result = node.engine.read_pinned(pin, &q)?;
            let rows: usize = result.partitions.iter().map(|p| p.rows.len()).sum();
            let last = result
                .partitions
                .last()
                .and_then(|p| p.rows.last())
                .map(|r| r.clustering.clone());
            // Its static values came with the rows already read: no static row alone.
            self.write(result, false)?;
            match last {
                Some(row) if rows >= ROWS_PER_READ => after = row,
                _ => return Ok(()),
            }
        }
    }

    fn write(&mut self, result: ReadResult, statics_alone: bool) -> Result<(), ExportFailure> {
        self.rows.clear();
        for p in result.partitions {
            partition_rows(self.table, &self.layout, p, statics_alone, &mut self.rows);
        }
        for row in &self.rows {
            self.cells.clear();
            self.cells.extend(
                self.visible
                    .iter()
                    .map(|&i| row.cells.get(i).cloned().flatten()),
            );
            self.writer.write_row(&self.cells)?;
        }
        Ok(())
    }
}
