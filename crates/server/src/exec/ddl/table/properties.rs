//! The `WITH` properties of CREATE and ALTER TABLE: option strings checked and turned into
//! `TableParams`, with Cassandra's validation messages and defaults.

use super::super::{map_value, scalar};
use crate::exec::error::{ExecError, ExecResult};
use helenus_cql::ast::{OptionValue, Properties, Term};
use helenus_schema::{
    CompactionParams, CompressionParams, StorageLayout, TableParams, LAYOUT_EXTENSION,
};
use std::collections::BTreeMap;

/// Applies `WITH` properties to table params, with Cassandra's validation and defaults.
pub fn apply_table_properties(params: &mut TableParams, props: &Properties) -> ExecResult<()> {
    let mut seen = std::collections::HashSet::new();
    for (name, _) in props {
        if !seen.insert(name.as_str()) {
            return Err(ExecError::Syntax(format!(
                "Multiple definitions for property '{name}'"
            )));
        }
    }
    for (name, v) in props {
        apply_property(params, name, v)?;
    }
    if params.max_index_interval < params.min_index_interval {
        return Err(ExecError::Config(format!(
            "max_index_interval must be greater than or equal to min_index_interval ({}) (got {})",
            params.min_index_interval, params.max_index_interval
        )));
    }
    Ok(())
}

/// One `WITH` property: scalar ones here, the map-valued ones in their own functions.
fn apply_property(params: &mut TableParams, name: &str, v: &OptionValue) -> ExecResult<()> {
    match name {
        "comment" => params.comment = scalar(v, name)?,
        "default_time_to_live" => {
            let ttl = int_option(v, name)?;
            if ttl < 0 {
                return Err(ExecError::Config(format!(
                    "default_time_to_live must be greater than or equal to 0 (got {ttl})"
                )));
            }
            params.default_time_to_live = ttl
        }
        "gc_grace_seconds" => {
            let g = int_option(v, name)?;
            if g < 0 {
                return Err(ExecError::Config(format!(
                    "gc_grace_seconds must be greater than or equal to 0 (got {g})"
                )));
            }
            params.gc_grace_seconds = g
        }
        "bloom_filter_fp_chance" => {
            let p = double_option(v, name)?;
            if p <= 0.0 || p > 1.0 {
                return Err(ExecError::Config(format!("bloom_filter_fp_chance must be larger than 0.0 and less than or equal to 1.0 (got {p})")));
            }
            params.bloom_filter_fp_chance = p
        }
        "crc_check_chance" => params.crc_check_chance = double_option(v, name)?,
        "memtable_flush_period_in_ms" => params.memtable_flush_period_in_ms = int_option(v, name)?,
        "min_index_interval" => params.min_index_interval = int_option(v, name)?,
        "max_index_interval" => params.max_index_interval = int_option(v, name)?,
        "speculative_retry" => {
            // Stored as Cassandra stores it ('99PERCENTILE' shows as '99p').
            let text = scalar(v, name)?;
            let policy = helenus_coordinator::speculation::SpeculativeRetry::parse(&text)
                .map_err(ExecError::Config)?;
            params.speculative_retry = policy.to_string()
        }
        "additional_write_policy" => params.additional_write_policy = scalar(v, name)?,
        "read_repair" => params.read_repair = scalar(v, name)?.to_uppercase(),
        "cdc" => params.cdc = Some(bool_option(v, name)?),
        "allow_auto_snapshot" => params.allow_auto_snapshot = Some(bool_option(v, name)?),
        "incremental_backups" => params.incremental_backups = Some(bool_option(v, name)?),
        "memtable" => {
            // Only the configuration a stock cassandra.yaml 5.0 defines.
            let m = scalar(v, name)?;
            if m != "default" {
                return Err(ExecError::Config(format!(
                    "Memtable configuration \"{m}\" not found."
                )));
            }
            params.memtable = Some(m)
        }
        "caching" => params.caching = caching(map_value(v, name)?),
        "compaction" => params.compaction = compaction(map_value(v, name)?)?,
        "compression" => params.compression = compression(map_value(v, name)?)?,
        "extensions" => params.extensions = extensions(v)?,
        "id" => {
            if uuid::Uuid::parse_str(&scalar(v, name)?).is_err() {
                return Err(ExecError::Config("Invalid table id".into()));
            }
        }
        other => return Err(ExecError::Syntax(format!("Unknown property '{other}'"))),
    }
    Ok(())
}

/// `extensions = {'name': value}`, a `map<text, blob>`: string values are kept as their UTF-8
/// bytes, blob literals (`0x...`) decoded. The layout extension's value is checked here.
fn extensions(v: &OptionValue) -> ExecResult<BTreeMap<String, Vec<u8>>> {
    let invalid = || ExecError::Syntax("Invalid value for property 'extensions'".into());
    let OptionValue::Map(entries) = v else {
        return Err(ExecError::Syntax(
            "Invalid value for property 'extensions'. It should be a map.".into(),
        ));
    };
    let mut out = BTreeMap::new();
    for (k, t) in entries {
        let bytes = match t {
            Term::String(s) => s.clone().into_bytes(),
            Term::Blob(hex) => decode_hex(hex).ok_or_else(invalid)?,
            _ => return Err(invalid()),
        };
        if k == LAYOUT_EXTENSION {
            StorageLayout::parse(&bytes).map_err(ExecError::Config)?;
        }
        out.insert(k.clone(), bytes);
    }
    Ok(out)
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

fn double_option(v: &OptionValue, name: &str) -> ExecResult<f64> {
    scalar(v, name)?
        .parse::<f64>()
        .map_err(|_| ExecError::Syntax(format!("Invalid double value for '{name}'")))
}

fn int_option(v: &OptionValue, name: &str) -> ExecResult<i32> {
    scalar(v, name)?
        .parse::<i32>()
        .map_err(|_| ExecError::Syntax(format!("Invalid integer value for '{name}'")))
}

fn bool_option(v: &OptionValue, name: &str) -> ExecResult<bool> {
    match scalar(v, name)?.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(ExecError::Syntax(format!(
            "Invalid boolean value for '{name}'"
        ))),
    }
}

/// `caching`: both sub-options, upper-cased, with Cassandra's defaults.
fn caching(m: BTreeMap<String, String>) -> BTreeMap<String, String> {
    let get = |key: &str, default: &str| {
        m.get(key)
            .cloned()
            .unwrap_or_else(|| default.into())
            .to_uppercase()
    };
    let mut c = BTreeMap::new();
    c.insert("keys".to_string(), get("keys", "ALL"));
    c.insert(
        "rows_per_partition".to_string(),
        get("rows_per_partition", "NONE"),
    );
    c
}

/// `compaction`: parsed once into the schema's `CompactionParams` (class written out in full,
/// threshold defaults) and kept as the option map the schema stores.
fn compaction(m: BTreeMap<String, String>) -> ExecResult<BTreeMap<String, String>> {
    Ok(CompactionParams::from_cql(m)?.into_options())
}

/// `compression`: off, or a compressor class and a power-of-two chunk size, parsed once into the
/// schema's `CompressionParams`.
fn compression(m: BTreeMap<String, String>) -> ExecResult<BTreeMap<String, String>> {
    Ok(CompressionParams::from_cql(m)?.into_options())
}

#[cfg(test)]
mod tests {
    use super::*;
    use helenus_cql::ast;

    fn map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn compaction_writes_the_class_out_and_defaults_thresholds() {
        let m = compaction(map(&[("class", "LeveledCompactionStrategy")])).unwrap();
        assert_eq!(
            m.get("class").map(String::as_str),
            Some("org.apache.cassandra.db.compaction.LeveledCompactionStrategy")
        );
        assert_eq!(m.get("max_threshold").map(String::as_str), Some("32"));
        assert_eq!(m.get("min_threshold").map(String::as_str), Some("4"));
        assert!(matches!(
            compaction(map(&[("class", "NoSuchStrategy")])),
            Err(ExecError::Config(m)) if m.starts_with("Unable to find compaction strategy class")
        ));
        assert!(compaction(map(&[])).is_err());
    }

    #[test]
    fn compression_off_and_chunk_lengths() {
        let off = compression(map(&[])).unwrap();
        assert_eq!(off, map(&[("enabled", "false")]));
        let m = compression(map(&[
            ("sstable_compression", "LZ4Compressor"),
            ("chunk_length_kb", "64"),
        ]))
        .unwrap();
        assert_eq!(m.get("chunk_length_in_kb").map(String::as_str), Some("64"));
        assert!(m.get("class").is_some_and(|c| c.ends_with("LZ4Compressor")));
        assert!(compression(map(&[
            ("class", "LZ4Compressor"),
            ("chunk_length_in_kb", "3")
        ]))
        .is_err());
    }

    #[test]
    fn caching_defaults_and_upper_cases() {
        let c = caching(map(&[("keys", "none")]));
        assert_eq!(c, map(&[("keys", "NONE"), ("rows_per_partition", "NONE")]));
    }

    #[test]
    fn table_properties_are_validated() {
        let props = |text: &str| -> Properties {
            let ddl = format!("CREATE TABLE t (k int PRIMARY KEY) WITH {text}");
            let ast::Statement::CreateTable(c) = helenus_cql::parse(&ddl).unwrap().statement else {
                panic!("not a CREATE TABLE")
            };
            c.options.properties
        };
        let mut params = TableParams::default();
        apply_table_properties(
            &mut params,
            &props("gc_grace_seconds = 10 AND comment = 'c'"),
        )
        .unwrap();
        assert_eq!(
            (params.gc_grace_seconds, params.comment.as_str()),
            (10, "c")
        );
        let err = apply_table_properties(&mut params, &props("default_time_to_live = -1"));
        assert!(
            matches!(err, Err(ExecError::Config(m)) if m == "default_time_to_live must be greater than or equal to 0 (got -1)")
        );
        let err = apply_table_properties(&mut params, &props("comment = 'a' AND comment = 'b'"));
        assert!(
            matches!(err, Err(ExecError::Syntax(m)) if m == "Multiple definitions for property 'comment'")
        );
        let err = apply_table_properties(
            &mut params,
            &props("min_index_interval = 512 AND max_index_interval = 256"),
        );
        assert!(
            matches!(err, Err(ExecError::Config(m)) if m.starts_with("max_index_interval must be"))
        );
    }
}
