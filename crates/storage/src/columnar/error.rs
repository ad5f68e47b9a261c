//! The columnar layer's error: what a reader of a damaged or foreign file gets instead of a panic.

use crate::error::StorageError;
use std::fmt;
use std::path::PathBuf;

#[derive(Debug)]
pub enum ColumnarError {
    /// Bytes that do not decode: a truncated or damaged file, or not a columnar segment.
    Corrupt { what: &'static str },
    /// A chunk's CRC32C does not match its bytes.
    Checksum { group: usize, stream: usize },
    /// The footer's CRC32C does not match.
    FooterChecksum,
    /// Input the writer cannot take (partitions out of order, a bad option).
    Invalid(String),
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl ColumnarError {
    pub(crate) const fn corrupt(what: &'static str) -> Self {
        ColumnarError::Corrupt { what }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ColumnarError::Io {
            path: path.into(),
            source,
        }
    }
}

impl fmt::Display for ColumnarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ColumnarError::Corrupt { what } => write!(f, "corrupt columnar segment: {what}"),
            ColumnarError::Checksum { group, stream } => {
                write!(
                    f,
                    "columnar chunk checksum mismatch (row group {group}, stream {stream})"
                )
            }
            ColumnarError::FooterChecksum => write!(f, "columnar footer checksum mismatch"),
            ColumnarError::Invalid(s) => write!(f, "invalid columnar write: {s}"),
            ColumnarError::Io { path, source } => {
                write!(f, "I/O error on {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for ColumnarError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ColumnarError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// How the rest of the engine sees it: damaged bytes are a corrupt SSTable, as for row files.
impl From<ColumnarError> for StorageError {
    fn from(e: ColumnarError) -> Self {
        match e {
            ColumnarError::Io { path, source } => StorageError::Io { path, source },
            ColumnarError::Invalid(s) => StorageError::InvalidRequest(s),
            other => StorageError::CorruptSSTable {
                file: PathBuf::new(),
                reason: other.to_string(),
            },
        }
    }
}
