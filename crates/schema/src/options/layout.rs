//! The storage layout of a table (issue 15), chosen with `WITH extensions = {'helenus.layout':
//! 'columnar'}`. `extensions` is the one table option whose map Cassandra's grammar, its schema
//! tables (`map<text, blob>`) and every driver's metadata parser take with keys of any name:
//! a compaction or compression sub-option would be refused by Cassandra ("Properties specified
//! [layout] are not understood"), and a comment would be a user's text. Cassandra 5.0 accepts
//! the same statement (it keeps no extensions given in CQL), so a DESCRIBE of a Helenus table
//! replays on Cassandra as a row table.

use super::TableParams;

/// The `extensions` key that names the layout.
pub const LAYOUT_EXTENSION: &str = "helenus.layout";

/// How a table's SSTables store its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StorageLayout {
    /// Rows one after another, as Cassandra stores them.
    #[default]
    Rows,
    /// Each column in compressed chunks with min/max statistics, for scans.
    Columnar,
}

impl StorageLayout {
    /// The extension value: `'rows'` or `'columnar'` (any case).
    pub fn parse(value: &[u8]) -> Result<Self, String> {
        let text = std::str::from_utf8(value).unwrap_or_default();
        match text.to_ascii_lowercase().as_str() {
            "rows" => Ok(StorageLayout::Rows),
            "columnar" => Ok(StorageLayout::Columnar),
            _ => Err(format!(
                "Unknown value '{}' for the extension '{LAYOUT_EXTENSION}': expected 'rows' or \
                 'columnar'",
                String::from_utf8_lossy(value)
            )),
        }
    }
}

impl TableParams {
    /// The layout the table's extensions choose (rows when none, or when the stored value is
    /// not one this version knows: it was checked when it was set).
    pub fn storage_layout(&self) -> StorageLayout {
        self.extensions
            .get(LAYOUT_EXTENSION)
            .and_then(|v| StorageLayout::parse(v).ok())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_extension_picks_the_layout_and_refuses_unknown_values() {
        let mut p = TableParams::default();
        assert_eq!(p.storage_layout(), StorageLayout::Rows);
        p.extensions
            .insert(LAYOUT_EXTENSION.into(), b"Columnar".to_vec());
        assert_eq!(p.storage_layout(), StorageLayout::Columnar);
        assert_eq!(StorageLayout::parse(b"rows").unwrap(), StorageLayout::Rows);
        assert!(StorageLayout::parse(b"parquet")
            .unwrap_err()
            .contains("expected 'rows' or 'columnar'"));
    }
}
