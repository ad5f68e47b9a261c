//! A table's SSTable compression (`WITH compression = {...}`) as a type, next to the option map
//! `system_schema.tables.compression` stores and DESCRIBE prints.

use super::OptionsError;
use std::collections::BTreeMap;

pub const LZ4_COMPRESSOR_CLASS: &str = "org.apache.cassandra.io.compress.LZ4Compressor";

/// Expands short compressor names (`'ZstdCompressor'`) to the full names Cassandra stores.
pub fn full_compressor_class(class: &str) -> String {
    if class.contains('.') {
        class.to_string()
    } else {
        format!("org.apache.cassandra.io.compress.{class}")
    }
}

/// The sub-options of `compression` Cassandra's compressors and CompressionParams accept.
const KNOWN_OPTIONS: &[&str] = &[
    "class",
    "enabled",
    "chunk_length_in_kb",
    "min_compress_ratio",
    "max_compressed_length",
    "crc_check_chance",
    "compression_level",
    "lz4_compressor_type",
    "lz4_high_compressor_level",
];

/// The compressor a table's SSTables are written with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compressor {
    Lz4,
    /// zstd at `compression_level` (3 when the table names none).
    Zstd {
        level: i32,
    },
    Deflate,
    /// Any other class (e.g. `SnappyCompressor`), by its full name.
    Other(String),
}

/// A table's compression: the compressor (`None` when compression is off), the chunk size, and the
/// map they were read from (kept so that what was stored round-trips byte for byte).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompressionParams {
    pub compressor: Option<Compressor>,
    pub chunk_length_in_kb: u32,
    options: BTreeMap<String, String>,
}

impl CompressionParams {
    /// Reads and validates the map a CQL statement gave. An empty map or `'enabled': 'false'`
    /// turns compression off (stored as `{'enabled': 'false'}`); otherwise a class is required
    /// (`sstable_compression` is its old name, `chunk_length_kb` the old name of
    /// `chunk_length_in_kb`) and the chunk size must be a power of two.
    pub fn from_cql(mut options: BTreeMap<String, String>) -> Result<Self, OptionsError> {
        if options.is_empty() || options.get("enabled").is_some_and(|e| e == "false") {
            if options.len() > 1 {
                return Err(OptionsError::DisabledCompressionWithOptions);
            }
            let off = BTreeMap::from([("enabled".to_string(), "false".to_string())]);
            return Ok(Self::from_stored(&off));
        }
        let class = options
            .remove("sstable_compression")
            .or_else(|| options.remove("class"))
            .ok_or(OptionsError::MissingCompressionClass)?;
        if class.is_empty() {
            return Err(OptionsError::EmptyCompressionClass);
        }
        options.insert("class".into(), full_compressor_class(&class));
        if let Some(kb) = options.remove("chunk_length_kb") {
            options.insert("chunk_length_in_kb".into(), kb);
        }
        let kb = options
            .entry("chunk_length_in_kb".into())
            .or_insert_with(|| "16".into());
        match kb.parse::<i64>() {
            Ok(k) if k <= 0 => return Err(OptionsError::ChunkLengthNotPositive),
            Ok(k) if k.count_ones() == 1 && k <= i64::from(u32::MAX) => {}
            _ => return Err(OptionsError::ChunkLengthNotPowerOfTwo),
        }
        if let Some(ratio) = options.get("min_compress_ratio") {
            if ratio.parse::<f64>().is_ok_and(|r| r < 0.0) {
                return Err(OptionsError::NegativeMinCompressRatio);
            }
        }
        let unknown: Vec<&str> = options
            .keys()
            .map(String::as_str)
            .filter(|k| !KNOWN_OPTIONS.contains(k))
            .collect();
        if !unknown.is_empty() {
            return Err(OptionsError::UnknownCompressionOptions(unknown.join(", ")));
        }
        Ok(Self::from_stored(&options))
    }

    /// Reads a stored map; a chunk size that does not parse counts as 16 KiB.
    pub fn from_stored(options: &BTreeMap<String, String>) -> Self {
        let get = |k: &str| options.get(k).map(String::as_str);
        let enabled = get("enabled").is_none_or(|v| v != "false");
        let class = get("class").unwrap_or_default();
        let compressor = if !enabled || class.is_empty() {
            None
        } else if class.ends_with("ZstdCompressor") {
            Some(Compressor::Zstd {
                level: get("compression_level")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(3),
            })
        } else if class.ends_with("DeflateCompressor") {
            Some(Compressor::Deflate)
        } else if class.ends_with("LZ4Compressor") {
            Some(Compressor::Lz4)
        } else {
            Some(Compressor::Other(class.to_string()))
        };
        CompressionParams {
            compressor,
            chunk_length_in_kb: get("chunk_length_in_kb")
                .and_then(|v| v.parse().ok())
                .unwrap_or(16),
            options: options.clone(),
        }
    }

    /// The option map as `system_schema.tables.compression` stores it.
    pub fn options(&self) -> &BTreeMap<String, String> {
        &self.options
    }

    pub fn into_options(self) -> BTreeMap<String, String> {
        self.options
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn m(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn old_option_names_are_renamed_and_class_expanded() {
        let p = CompressionParams::from_cql(m(&[
            ("sstable_compression", "ZstdCompressor"),
            ("chunk_length_kb", "64"),
        ]))
        .unwrap();
        assert_eq!(p.compressor, Some(Compressor::Zstd { level: 3 }));
        assert_eq!(p.chunk_length_in_kb, 64);
        assert_eq!(
            p.options(),
            &m(&[
                ("chunk_length_in_kb", "64"),
                ("class", "org.apache.cassandra.io.compress.ZstdCompressor"),
            ])
        );
        assert_eq!(CompressionParams::from_stored(p.options()), p);
    }

    #[test]
    fn empty_map_or_disabled_turns_compression_off() {
        // With `enabled: false` Cassandra 5.0 refuses any other option (see the test below).
        for given in [m(&[]), m(&[("enabled", "false")])] {
            let p = CompressionParams::from_cql(given).unwrap();
            assert_eq!(p.compressor, None);
            assert_eq!(p.options(), &m(&[("enabled", "false")]));
        }
    }

    #[test]
    fn defaults_and_other_classes() {
        let p = CompressionParams::from_cql(m(&[("class", "SnappyCompressor")])).unwrap();
        assert_eq!(p.chunk_length_in_kb, 16);
        assert_eq!(
            p.compressor,
            Some(Compressor::Other(
                "org.apache.cassandra.io.compress.SnappyCompressor".into()
            ))
        );
        let lz4 = CompressionParams::from_stored(&m(&[("class", LZ4_COMPRESSOR_CLASS)]));
        assert_eq!(lz4.compressor, Some(Compressor::Lz4));
    }

    #[test]
    fn missing_class_and_bad_chunk_length_are_refused() {
        assert_eq!(
            CompressionParams::from_cql(m(&[("chunk_length_in_kb", "16")]))
                .unwrap_err()
                .to_string(),
            "Missing sub-option 'class' for the 'compression' option."
        );
        assert_eq!(
            CompressionParams::from_cql(m(&[
                ("class", "LZ4Compressor"),
                ("chunk_length_in_kb", "3")
            ]))
            .unwrap_err()
            .to_string(),
            "chunk_length_in_kb must be a power of 2"
        );
    }

    #[test]
    fn empty_class_disabled_with_options_and_unknown_options_are_refused() {
        let err = |pairs: &[(&str, &str)]| {
            CompressionParams::from_cql(m(pairs))
                .unwrap_err()
                .to_string()
        };
        assert!(err(&[("class", "")]).starts_with("The 'class' option must not be empty"));
        assert!(err(&[("enabled", "false"), ("class", "SnappyCompressor")])
            .starts_with("If the 'enabled' option is set to false"));
        assert_eq!(
            err(&[("class", "SnappyCompressor"), ("chunk_length_in_kb", "-1")]),
            "Invalid negative or null chunk_length_in_kb"
        );
        assert_eq!(
            err(&[("class", "SnappyCompressor"), ("unknownOption", "32")]),
            "Unknown compression options unknownOption"
        );
        assert!(CompressionParams::from_cql(m(&[
            ("class", "SnappyCompressor"),
            ("min_compress_ratio", "2")
        ]))
        .is_ok());
    }
}
