//! Columnar SSTables (issue 15): the Index.db, Filter.db and Statistics.db of a row SSTable,
//! with the partitions in a columnar segment (`Columns.db`, crate::columnar) instead of the
//! Data.db stream and its CompressionInfo.db.
//!
//! An index entry's `length` is the number of segment entries (rows, the static row, or one
//! entry for a partition with only deletions) of its partition, so the position format 2
//! derives from the lengths before it is the number of its first entry. The summary, bloom
//! filter, key cache and token walks then work unchanged, and reading a partition rebuilds it
//! from its entries (the segment keeps the row groups it decoded last, so a walk in order
//! decodes each group once).
//!
//! What reads bytes of the Data.db stream never runs on these: compaction merges their
//! partitions decoded (no raw copies, no streamed wide partitions: a columnar table's wide
//! partition is merged in memory), and slice reads rebuild the partition, then keep the rows
//! inside the slice (no row-index blocks: a point read of a columnar table decodes the row
//! group that holds the partition, the cost of the layout).

use super::wide::SlicedRows;
use super::*;
use crate::columnar::{BlockCompression, ColumnarSchema, SegmentOptions, SegmentReader};
use crate::types::{ColumnarTypes, CompressionAlgorithm};

/// The segment of a columnar SSTable.
pub(crate) struct ColumnarData {
    pub segment: Arc<SegmentReader>,
}

/// The segment as the source of its sampled index's keys.
struct SegmentKeys {
    segment: Arc<SegmentReader>,
    path: PathBuf,
}

impl super::index::EntryKeys for SegmentKeys {
    fn keys_at(&self, positions: &[u64]) -> Result<Vec<(i64, Bytes)>, StorageError> {
        self.segment
            .keys_at(positions)
            .map_err(|e| segment_error(&self.path, e))
    }
}

/// A segment's error as the SSTable's (I/O stays I/O, the rest is corruption of the file).
fn segment_error(path: &Path, e: crate::columnar::ColumnarError) -> StorageError {
    match e {
        crate::columnar::ColumnarError::Io { path, source } => StorageError::Io { path, source },
        other => StorageError::CorruptSSTable {
            file: path.to_path_buf(),
            reason: other.to_string(),
        },
    }
}

impl ColumnarData {
    /// What the SSTable's index reads keys through.
    pub(super) fn entry_keys(&self, dir: &Path, gen: u64) -> Arc<dyn super::index::EntryKeys> {
        Arc::new(SegmentKeys {
            segment: self.segment.clone(),
            path: component_path(dir, gen, COLUMNS_COMPONENT),
        })
    }
}

/// The component that holds a columnar SSTable's partitions.
pub(crate) const COLUMNS_COMPONENT: &str = "Columns.db";

/// The segment schema of a table whose columns have the `types` given.
pub(crate) fn segment_schema(types: &ColumnarTypes, cmp: &ClusteringComparator) -> ColumnarSchema {
    ColumnarSchema {
        partition_key: types.partition_key,
        clustering: cmp
            .columns()
            .iter()
            .zip(types.clustering.iter())
            .map(|(c, t)| crate::columnar::ClusteringSpec {
                column: c.clone(),
                value_type: *t,
            })
            .collect(),
        columns: types.columns.clone(),
    }
}

/// The table's chunk compression for segment chunks (Deflate has no chunk codec there: LZ4).
fn block_compression(c: &CompressionOptions) -> BlockCompression {
    match c.algorithm {
        CompressionAlgorithm::None => BlockCompression::None,
        CompressionAlgorithm::Zstd { level } => BlockCompression::Zstd(level),
        CompressionAlgorithm::Lz4 | CompressionAlgorithm::Deflate => BlockCompression::Lz4,
    }
}

impl SSTableWriter {
    /// Makes this writer write a columnar SSTable: partitions go to a segment of `schema`
    /// instead of Data.db. Called before the first partition.
    pub(crate) fn use_columns(
        &mut self,
        schema: &ColumnarSchema,
        compression: &CompressionOptions,
    ) -> Result<(), StorageError> {
        if self.index_count > 0 {
            return Err(StorageError::InvalidRequest(
                "an SSTable's layout is chosen before its first partition".into(),
            ));
        }
        let options = SegmentOptions {
            compression: block_compression(compression),
            ..SegmentOptions::default()
        };
        let path = component_path(&self.dir, self.gen, COLUMNS_COMPONENT);
        self.columns = Some(crate::columnar::SegmentWriter::create(
            &path, schema, options,
        )?);
        // The Data.db stream `create` opened is not a component of this kind.
        if let Some(sink) = self.sink.take() {
            sink.finish()?;
            let data = component_path(&self.dir, self.gen, "Data.db");
            fs::remove_file(&data).map_err(|e| StorageError::io(&data, e))?;
        }
        Ok(())
    }

    pub(crate) fn is_columnar(&self) -> bool {
        self.columns.is_some()
    }

    /// Refuses what only a Data.db stream can take (encoded or streamed partitions).
    pub(super) fn refuse_if_columnar(&self) -> Result<(), StorageError> {
        if self.is_columnar() {
            return Err(StorageError::InvalidRequest(
                "a columnar SSTable takes whole partitions only".into(),
            ));
        }
        Ok(())
    }

    /// Appends a partition to the segment. The statistics' partition sizes and the output
    /// splitting count it at its row encoding's estimated size (`encoded_len_hint`): encoding
    /// it in rows only to measure it would write every partition twice.
    pub(super) fn append_columnar(&mut self, p: &Partition) -> Result<(), StorageError> {
        let Some(seg) = self.columns.as_mut() else {
            return Err(StorageError::InvalidRequest("not a columnar writer".into()));
        };
        let before = seg.entries();
        seg.append(p)?;
        let entries = u32::try_from(seg.entries() - before).map_err(|_| {
            StorageError::InvalidRequest("partition with too many rows for one SSTable".into())
        })?;
        self.note_stats(p);
        let bytes = crate::codec::encoded_len_hint(p) as u64;
        self.index_partition_sized(
            &IndexEntry {
                token: p.token,
                key: p.key.clone(),
                position: before,
                length: entries,
                header_len: 0,
                blocks: Vec::new(),
            },
            bytes,
        );
        self.logical_pos += bytes;
        Ok(())
    }

    /// Finishes the segment; returns its size on disk.
    pub(super) fn finish_columns(&mut self) -> Result<Option<u64>, StorageError> {
        match self.columns.take() {
            Some(seg) => Ok(Some(seg.finish()?.file_bytes)),
            None => Ok(None),
        }
    }
}

impl SSTableReader {
    /// Whether this SSTable stores its partitions in a columnar segment.
    pub fn is_columnar(&self) -> bool {
        self.columns.is_some()
    }

    /// False when no partition of this SSTable can have a token in `lo..=hi`: outside its
    /// token bounds or, for a columnar one, between its row groups' token ranges.
    pub fn may_have_tokens(&self, lo: i64, hi: i64) -> bool {
        if self.stats.partitions == 0 || self.stats.max_token < lo || self.stats.min_token > hi {
            return false;
        }
        self.segment().is_none_or(|seg| seg.may_have_tokens(lo, hi))
    }

    /// The columnar segment, for scans that read columns (None for a row SSTable).
    pub fn segment(&self) -> Option<&SegmentReader> {
        self.columns.as_ref().map(|c| c.segment.as_ref())
    }

    /// Opens the segment of a columnar generation (None for a row SSTable).
    pub(super) fn open_columns(
        dir: &Path,
        gen: u64,
        cmp: &ClusteringComparator,
    ) -> Result<Option<ColumnarData>, StorageError> {
        let path = component_path(dir, gen, COLUMNS_COMPONENT);
        if !path.exists() {
            return Ok(None);
        }
        let segment =
            SegmentReader::open(&path, cmp.columns()).map_err(|e| segment_error(&path, e))?;
        Ok(Some(ColumnarData {
            segment: Arc::new(segment),
        }))
    }

    /// The partition `e` points to, rebuilt from the segment (None for a row SSTable).
    pub(super) fn columnar_partition(
        &self,
        e: &IndexEntry,
    ) -> Option<Result<Partition, StorageError>> {
        let c = self.columns.as_ref()?;
        Some(
            c.segment
                .partition_at(e.position, u64::from(e.length), e.token, &e.key)
                .map_err(|err| StorageError::CorruptSSTable {
                    file: component_path(&self.dir, self.gen, COLUMNS_COMPONENT),
                    reason: err.to_string(),
                }),
        )
    }

    /// `read_rows_sliced_upto` of a columnar SSTable: the partition rebuilt, its rows inside
    /// `ranges` kept (all of them: the allowance saves nothing once the group is decoded).
    pub(super) fn columnar_sliced(
        &self,
        e: &IndexEntry,
        ranges: &[(CKey, CKey)],
    ) -> Option<Result<SlicedRows, StorageError>> {
        let p = match self.columnar_partition(e)? {
            Ok(p) => p,
            Err(err) => return Some(Err(err)),
        };
        let mut header = p;
        let rows: Vec<(CKey, crate::partition::Row)> = std::mem::take(&mut header.rows)
            .into_iter()
            .filter(|(k, _)| crate::clustering::in_ranges(ranges, k))
            .map(|(k, r)| (k, *r))
            .collect();
        let edge = rows.len().checked_sub(1);
        Some(Ok(SlicedRows {
            header,
            rows,
            stopped: false,
            edge,
        }))
    }

    /// The names of this SSTable's components, TOC.txt not included.
    pub fn data_components(&self) -> &'static [&'static str] {
        if self.is_columnar() {
            &COLUMNAR_COMPONENTS
        } else {
            &COMPONENTS
        }
    }
}
