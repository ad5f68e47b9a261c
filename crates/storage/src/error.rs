//! The engine's error type.

use std::fmt;
use std::path::PathBuf;

/// Everything that can go wrong in the storage engine.
#[derive(Debug)]
pub enum StorageError {
    /// An OS-level I/O failure on `path`.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// An SSTable chunk failed its checksum or would not decompress.
    CorruptChunk { file: PathBuf, offset: u64 },
    /// An SSTable component is malformed (bad header, truncated index, ...).
    CorruptSSTable { file: PathBuf, reason: String },
    /// A serialized record (commitlog entry, partition) did not decode.
    Decode { what: &'static str },
    /// The table id is not registered.
    UnknownTable([u8; 16]),
    /// A mutation or query is malformed (e.g. wrong number of clustering values).
    InvalidRequest(String),
    /// The engine is shutting down or a background thread died.
    ShuttingDown,
    /// A read scanned more tombstones than its failure threshold and was abandoned
    /// (Cassandra's TombstoneOverwhelmingException).
    TombstoneOverwhelming {
        tombstones_scanned: u64,
        live_rows: u64,
        failure_threshold: u64,
    },
}

impl StorageError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StorageError::Io {
            path: path.into(),
            source,
        }
    }
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageError::Io { path, source } => {
                write!(f, "I/O error on {}: {source}", path.display())
            }
            StorageError::CorruptChunk { file, offset } => {
                write!(f, "corrupt chunk in {} at offset {offset}", file.display())
            }
            StorageError::CorruptSSTable { file, reason } => {
                write!(f, "corrupt sstable {}: {reason}", file.display())
            }
            StorageError::Decode { what } => write!(f, "cannot decode {what}"),
            StorageError::UnknownTable(id) => {
                write!(f, "unknown table ")?;
                for b in id {
                    write!(f, "{b:02x}")?;
                }
                Ok(())
            }
            StorageError::InvalidRequest(s) => write!(f, "invalid storage request: {s}"),
            StorageError::ShuttingDown => write!(f, "storage engine is shutting down"),
            StorageError::TombstoneOverwhelming {
                tombstones_scanned,
                live_rows,
                failure_threshold,
            } => write!(
                f,
                "Scanned over {failure_threshold} tombstones ({tombstones_scanned} scanned, \
                 {live_rows} live rows); query aborted (see tombstone_failure_threshold)"
            ),
        }
    }
}

impl std::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StorageError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
