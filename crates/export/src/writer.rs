//! One Parquet file of rows: rows are buffered column by column and written as row groups
//! (zstd, dictionary encoding on), into a temporary name renamed into place when the file is
//! complete, so a reader never sees half a file under the final name.

use crate::mapping::{convert, parquet_schema, ColumnKind, ExportColumn, ParquetValue};
use crate::ExportError;
use bytes::Bytes;
use parquet::basic::{Compression, ZstdLevel};
use parquet::data_type::{
    BoolType, ByteArray, ByteArrayType, DoubleType, FloatType, Int32Type, Int64Type,
};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedColumnWriter, SerializedFileWriter};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Rows per row group at most: about what Spark and DuckDB parallelise over, and few enough
/// that a narrow table's group buffers stay small.
pub const ROW_GROUP_ROWS: usize = 128 * 1024;
/// Bytes of values buffered before a row group is written whatever its row count, so a table
/// of wide rows does not hold hundreds of megabytes per file being written.
pub const ROW_GROUP_BYTES: usize = 64 << 20;
/// zstd's default level: most of its ratio at a fraction of the higher levels' cost.
const ZSTD_LEVEL: i32 = 3;

enum Values {
    Boolean(Vec<bool>),
    Int32(Vec<i32>),
    Int64(Vec<i64>),
    Float(Vec<f32>),
    Double(Vec<f64>),
    Bytes(Vec<ByteArray>),
}

/// A column's values for the row group being built, and a definition level per row (0: null).
struct ColumnBuffer {
    values: Values,
    def_levels: Vec<i16>,
}

impl ColumnBuffer {
    fn new(kind: ColumnKind) -> Self {
        use parquet::basic::Type as P;
        let values = match kind.physical() {
            P::BOOLEAN => Values::Boolean(Vec::new()),
            P::INT32 => Values::Int32(Vec::new()),
            P::INT64 => Values::Int64(Vec::new()),
            P::FLOAT => Values::Float(Vec::new()),
            P::DOUBLE => Values::Double(Vec::new()),
            _ => Values::Bytes(Vec::new()),
        };
        ColumnBuffer {
            values,
            def_levels: Vec::new(),
        }
    }

    /// Appends one value; the bytes it buffers.
    fn push(&mut self, column: &str, v: Option<ParquetValue>) -> Result<usize, ExportError> {
        let Some(v) = v else {
            self.def_levels.push(0);
            return Ok(0);
        };
        let size = match (&mut self.values, v) {
            (Values::Boolean(out), ParquetValue::Boolean(b)) => {
                out.push(b);
                1
            }
            (Values::Int32(out), ParquetValue::Int32(n)) => {
                out.push(n);
                4
            }
            (Values::Int64(out), ParquetValue::Int64(n)) => {
                out.push(n);
                8
            }
            (Values::Float(out), ParquetValue::Float(n)) => {
                out.push(n);
                4
            }
            (Values::Double(out), ParquetValue::Double(n)) => {
                out.push(n);
                8
            }
            (Values::Bytes(out), ParquetValue::Bytes(b)) => {
                let n = b.len();
                out.push(b);
                n
            }
            (_, other) => {
                return Err(ExportError::BadValue {
                    column: column.to_string(),
                    reason: format!("{other:?} does not fit the column's Parquet type"),
                })
            }
        };
        self.def_levels.push(1);
        Ok(size)
    }

    fn write(&mut self, col: &mut SerializedColumnWriter<'_>) -> Result<(), ExportError> {
        let defs = Some(self.def_levels.as_slice());
        match &mut self.values {
            Values::Boolean(v) => {
                col.typed::<BoolType>().write_batch(v, defs, None)?;
                v.clear();
            }
            Values::Int32(v) => {
                col.typed::<Int32Type>().write_batch(v, defs, None)?;
                v.clear();
            }
            Values::Int64(v) => {
                col.typed::<Int64Type>().write_batch(v, defs, None)?;
                v.clear();
            }
            Values::Float(v) => {
                col.typed::<FloatType>().write_batch(v, defs, None)?;
                v.clear();
            }
            Values::Double(v) => {
                col.typed::<DoubleType>().write_batch(v, defs, None)?;
                v.clear();
            }
            Values::Bytes(v) => {
                col.typed::<ByteArrayType>().write_batch(v, defs, None)?;
                v.clear();
            }
        }
        self.def_levels.clear();
        Ok(())
    }
}

/// What a finished file holds.
#[derive(Debug, Clone)]
pub struct WrittenFile {
    pub path: PathBuf,
    pub rows: u64,
    pub bytes: u64,
}

/// Writes rows of serialized CQL values (one cell per column, in the columns' order) to one
/// Parquet file.
pub struct ParquetFileWriter {
    path: PathBuf,
    tmp_path: PathBuf,
    /// None once closed.
    writer: Option<SerializedFileWriter<File>>,
    columns: Vec<ExportColumn>,
    kinds: Vec<ColumnKind>,
    buffers: Vec<ColumnBuffer>,
    buffered_rows: usize,
    buffered_bytes: usize,
    rows: u64,
}

impl ParquetFileWriter {
    /// Starts the file that will be at `path`; `metadata` goes into its footer's key-value
    /// pairs (keyspace, table, token range: what a reader may want to know of its origin).
    pub fn create(
        path: &Path,
        columns: Vec<ExportColumn>,
        metadata: Vec<(String, String)>,
    ) -> Result<Self, ExportError> {
        let schema = parquet_schema(&columns)?;
        let kv = metadata
            .into_iter()
            .map(|(k, v)| KeyValue::new(k, v))
            .collect();
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL)?))
            .set_dictionary_enabled(true)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_created_by(format!("helenus {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(kv))
            .build();
        let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
        tmp_name.push(".tmp");
        let tmp_path = path.with_file_name(tmp_name);
        let file = File::create(&tmp_path).map_err(|source| ExportError::Io {
            path: tmp_path.clone(),
            source,
        })?;
        let writer = SerializedFileWriter::new(file, schema, Arc::new(props))?;
        let kinds: Vec<ColumnKind> = columns
            .iter()
            .map(|c| ColumnKind::of(&c.cql_type))
            .collect();
        Ok(ParquetFileWriter {
            path: path.to_path_buf(),
            tmp_path,
            writer: Some(writer),
            buffers: kinds.iter().map(|k| ColumnBuffer::new(*k)).collect(),
            kinds,
            columns,
            buffered_rows: 0,
            buffered_bytes: 0,
            rows: 0,
        })
    }

    /// Appends one row; `cells[i]` is column i's serialized value, None when null.
    pub fn write_row(&mut self, cells: &[Option<Bytes>]) -> Result<(), ExportError> {
        if cells.len() != self.columns.len() {
            return Err(ExportError::RowWidth {
                got: cells.len(),
                expected: self.columns.len(),
            });
        }
        let columns = self.columns.iter().zip(&self.kinds);
        for ((cell, (c, kind)), buf) in cells.iter().zip(columns).zip(&mut self.buffers) {
            let v = match cell {
                Some(bytes) => convert(c, *kind, bytes)?,
                None => None,
            };
            self.buffered_bytes += buf.push(&c.name, v)?;
        }
        self.buffered_rows += 1;
        self.rows += 1;
        if self.buffered_rows >= ROW_GROUP_ROWS || self.buffered_bytes >= ROW_GROUP_BYTES {
            self.flush_row_group()?;
        }
        Ok(())
    }

    fn flush_row_group(&mut self) -> Result<(), ExportError> {
        if self.buffered_rows == 0 {
            return Ok(());
        }
        let Some(writer) = self.writer.as_mut() else {
            return Ok(());
        };
        let mut group = writer.next_row_group()?;
        for buf in &mut self.buffers {
            let Some(mut col) = group.next_column()? else {
                return Err(ExportError::RowWidth {
                    got: self.columns.len(),
                    expected: 0,
                });
            };
            buf.write(&mut col)?;
            col.close()?;
        }
        group.close()?;
        self.buffered_rows = 0;
        self.buffered_bytes = 0;
        Ok(())
    }

    /// Writes the last row group and the footer, and moves the file to its name.
    pub fn finish(mut self) -> Result<WrittenFile, ExportError> {
        self.flush_row_group()?;
        if let Some(writer) = self.writer.take() {
            writer.close()?;
        }
        std::fs::rename(&self.tmp_path, &self.path).map_err(|source| ExportError::Io {
            path: self.path.clone(),
            source,
        })?;
        let bytes = std::fs::metadata(&self.path)
            .map_err(|source| ExportError::Io {
                path: self.path.clone(),
                source,
            })?
            .len();
        Ok(WrittenFile {
            path: self.path.clone(),
            rows: self.rows,
            bytes,
        })
    }
}

impl Drop for ParquetFileWriter {
    /// A file abandoned before `finish` (a failed export) leaves no temporary behind.
    fn drop(&mut self) {
        if self.writer.is_some() {
            let _ = std::fs::remove_file(&self.tmp_path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use helenus_types::{serialize_to_bytes, CqlType, CqlValue, NativeType};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;

    fn columns() -> Vec<ExportColumn> {
        let c = |name: &str, n| ExportColumn {
            name: name.into(),
            cql_type: CqlType::Native(n),
        };
        vec![
            c("id", NativeType::Int),
            c("name", NativeType::Varchar),
            c("at", NativeType::Timestamp),
        ]
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("helenus-export-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn rows_read_back_with_nulls_and_row_groups() {
        let path = scratch("rows.parquet");
        let meta = vec![("helenus.table".to_string(), "ks.t".to_string())];
        let mut w = ParquetFileWriter::create(&path, columns(), meta).unwrap();
        let n = ROW_GROUP_ROWS + 10;
        for i in 0..n as i32 {
            let name = (i % 3 != 0).then(|| serialize_to_bytes(&CqlValue::Text(format!("n{i}"))));
            w.write_row(&[
                Some(serialize_to_bytes(&CqlValue::Int(i))),
                name,
                Some(serialize_to_bytes(&CqlValue::Timestamp(
                    i64::from(i) * 1000,
                ))),
            ])
            .unwrap();
        }
        let written = w.finish().unwrap();
        assert_eq!(written.rows, n as u64);
        assert_eq!(written.bytes, std::fs::metadata(&path).unwrap().len());
        assert!(!scratch("rows.parquet.tmp").exists());

        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let md = reader.metadata();
        assert_eq!(md.file_metadata().num_rows(), n as i64);
        assert_eq!(md.num_row_groups(), 2, "a group per ROW_GROUP_ROWS rows");
        let kv = md.file_metadata().key_value_metadata().unwrap();
        assert!(kv.iter().any(|k| k.key == "helenus.table"));
        let rows: Vec<_> = reader.get_row_iter(None).unwrap().take(4).collect();
        let fields: Vec<Vec<Field>> = rows
            .into_iter()
            .map(|r| {
                r.unwrap()
                    .get_column_iter()
                    .map(|(_, f)| f.clone())
                    .collect()
            })
            .collect();
        assert_eq!(fields[0][0], Field::Int(0));
        assert_eq!(fields[0][1], Field::Null);
        assert_eq!(fields[1][1], Field::Str("n1".into()));
        assert_eq!(fields[2][2], Field::TimestampMillis(2000));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_row_of_the_wrong_width_is_refused() {
        let path = scratch("width.parquet");
        let mut w = ParquetFileWriter::create(&path, columns(), Vec::new()).unwrap();
        let err = w.write_row(&[None]).unwrap_err();
        assert!(matches!(
            err,
            ExportError::RowWidth {
                got: 1,
                expected: 3
            }
        ));
    }

    #[test]
    fn an_abandoned_file_leaves_nothing_behind() {
        let path = scratch("abandoned.parquet");
        let w = ParquetFileWriter::create(&path, columns(), Vec::new()).unwrap();
        assert!(scratch("abandoned.parquet.tmp").exists());
        drop(w);
        assert!(!scratch("abandoned.parquet.tmp").exists());
        assert!(!path.exists());
    }

    #[test]
    fn columns_are_dictionary_encoded_and_zstd_compressed() {
        let path = scratch("encodings.parquet");
        let mut w = ParquetFileWriter::create(&path, columns(), Vec::new()).unwrap();
        for i in 0..1000 {
            w.write_row(&[
                Some(serialize_to_bytes(&CqlValue::Int(i % 4))),
                Some(serialize_to_bytes(&CqlValue::Text("same".into()))),
                None,
            ])
            .unwrap();
        }
        w.finish().unwrap();
        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let col = reader.metadata().row_group(0).column(1);
        assert!(
            matches!(col.compression(), Compression::ZSTD(_)),
            "{:?}",
            col.compression()
        );
        assert!(col.dictionary_page_offset().is_some());
        std::fs::remove_file(&path).unwrap();
    }
}
