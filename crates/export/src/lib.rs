//! Table exports for other engines: Parquet files from CQL rows (`nodetool export`). This crate
//! owns the CQL-to-Parquet type mapping and the file writer; it does not read tables — the
//! server reads a consistent snapshot through the storage engine and hands rows here, so the
//! Parquet dependency stays out of every crate that does not write files for other engines.

mod mapping;
mod writer;

pub use mapping::{convert, parquet_schema, ColumnKind, ExportColumn, ParquetValue};
pub use writer::{ParquetFileWriter, WrittenFile, ROW_GROUP_BYTES, ROW_GROUP_ROWS};

use std::path::PathBuf;

/// Why an export could not write a file.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A stored value does not decode as its column's type.
    #[error("column {column}: {reason}")]
    BadValue { column: String, reason: String },
    /// A row does not have one cell per column of the file.
    #[error("a row of {got} cells for a file of {expected} columns")]
    RowWidth { got: usize, expected: usize },
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}
