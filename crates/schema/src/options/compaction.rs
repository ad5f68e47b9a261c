//! A table's compaction strategy (`WITH compaction = {...}`) as a type, next to the option map
//! `system_schema.tables.compaction` stores and DESCRIBE prints.

use super::OptionsError;
use std::collections::BTreeMap;

pub const SIZE_TIERED_CLASS: &str =
    "org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy";

const KNOWN_STRATEGIES: [&str; 4] = [
    "SizeTieredCompactionStrategy",
    "LeveledCompactionStrategy",
    "TimeWindowCompactionStrategy",
    "UnifiedCompactionStrategy",
];

/// Expands the short class names CQL accepts (`'LeveledCompactionStrategy'`) to the full names
/// Cassandra stores and prints.
pub fn full_compaction_class(class: &str) -> String {
    if class.contains('.') {
        class.to_string()
    } else {
        format!("org.apache.cassandra.db.compaction.{class}")
    }
}

/// The strategy and the options only it reads.
#[derive(Debug, Clone, PartialEq)]
pub enum CompactionStrategy {
    SizeTiered,
    Leveled {
        sstable_size_in_mb: u32,
        fanout_size: u32,
    },
    TimeWindow {
        /// `MINUTES`, `HOURS` or `DAYS`, as written.
        compaction_window_unit: String,
        compaction_window_size: u32,
    },
    Unified,
}

/// A table's compaction: the strategy, the options every strategy shares, and the map they were
/// read from (kept so that what was stored round-trips byte for byte).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionParams {
    pub strategy: CompactionStrategy,
    pub min_threshold: u32,
    pub max_threshold: u32,
    /// The droppable-tombstone ratio above which an SSTable is compacted alone.
    pub tombstone_threshold: f64,
    pub unchecked_tombstone_compaction: bool,
    /// Tombstones are purged only from repaired SSTables (incremental repair), so one cannot
    /// be dropped before every replica has it.
    pub only_purge_repaired_tombstones: bool,
    options: BTreeMap<String, String>,
}

impl CompactionParams {
    /// Reads and validates the map a CQL statement gave: the class is required and expanded, and
    /// the threshold defaults Cassandra shows are filled in.
    pub fn from_cql(mut options: BTreeMap<String, String>) -> Result<Self, OptionsError> {
        let class = options
            .remove("class")
            .ok_or(OptionsError::MissingCompactionClass)?;
        let full = full_compaction_class(&class);
        if !KNOWN_STRATEGIES.iter().any(|k| full.ends_with(k)) {
            return Err(OptionsError::UnknownCompactionClass(full));
        }
        // Cassandra lists min/max_threshold for every strategy but UCS, which has its own knobs.
        if !full.ends_with("UnifiedCompactionStrategy") {
            options
                .entry("max_threshold".into())
                .or_insert_with(|| "32".into());
            options
                .entry("min_threshold".into())
                .or_insert_with(|| "4".into());
        }
        options.insert("class".into(), full);
        Ok(Self::from_stored(&options))
    }

    /// Reads a stored map. Numbers that do not parse take Cassandra's defaults and a class other
    /// than LCS, TWCS or UCS counts as size-tiered: the engine has to compact the table somehow.
    pub fn from_stored(options: &BTreeMap<String, String>) -> Self {
        let get = |k: &str| options.get(k).map(String::as_str);
        let num = |k: &str, default: u32| get(k).and_then(|v| v.parse().ok()).unwrap_or(default);
        let class = get("class").unwrap_or_default();
        let strategy = if class.ends_with("LeveledCompactionStrategy") {
            CompactionStrategy::Leveled {
                sstable_size_in_mb: num("sstable_size_in_mb", 160),
                fanout_size: num("fanout_size", 10),
            }
        } else if class.ends_with("TimeWindowCompactionStrategy") {
            CompactionStrategy::TimeWindow {
                compaction_window_unit: get("compaction_window_unit").unwrap_or("DAYS").into(),
                compaction_window_size: num("compaction_window_size", 1),
            }
        } else if class.ends_with("UnifiedCompactionStrategy") {
            CompactionStrategy::Unified
        } else {
            CompactionStrategy::SizeTiered
        };
        CompactionParams {
            strategy,
            min_threshold: num("min_threshold", 4),
            max_threshold: num("max_threshold", 32),
            tombstone_threshold: get("tombstone_threshold")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.2),
            unchecked_tombstone_compaction: get("unchecked_tombstone_compaction")
                .is_some_and(|v| v.eq_ignore_ascii_case("true")),
            only_purge_repaired_tombstones: get("only_purge_repaired_tombstones")
                .is_some_and(|v| v.eq_ignore_ascii_case("true")),
            options: options.clone(),
        }
    }

    /// The option map as `system_schema.tables.compaction` stores it.
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
    fn leveled_gets_thresholds_and_typed_options() {
        let p = CompactionParams::from_cql(m(&[
            ("class", "LeveledCompactionStrategy"),
            ("sstable_size_in_mb", "64"),
        ]))
        .unwrap();
        assert_eq!(
            p.strategy,
            CompactionStrategy::Leveled {
                sstable_size_in_mb: 64,
                fanout_size: 10
            }
        );
        assert_eq!(
            p.options(),
            &m(&[
                (
                    "class",
                    "org.apache.cassandra.db.compaction.LeveledCompactionStrategy"
                ),
                ("max_threshold", "32"),
                ("min_threshold", "4"),
                ("sstable_size_in_mb", "64"),
            ])
        );
        assert_eq!(CompactionParams::from_stored(p.options()), p);
    }

    #[test]
    fn time_window_and_tombstone_options_are_typed() {
        let p = CompactionParams::from_cql(m(&[
            ("class", "TimeWindowCompactionStrategy"),
            ("compaction_window_unit", "HOURS"),
            ("compaction_window_size", "6"),
            ("tombstone_threshold", "0.5"),
            ("unchecked_tombstone_compaction", "TRUE"),
        ]))
        .unwrap();
        assert_eq!(
            p.strategy,
            CompactionStrategy::TimeWindow {
                compaction_window_unit: "HOURS".into(),
                compaction_window_size: 6
            }
        );
        assert_eq!(p.tombstone_threshold, 0.5);
        assert!(p.unchecked_tombstone_compaction);
        assert!(!p.only_purge_repaired_tombstones);
    }

    #[test]
    fn unified_gets_no_thresholds_in_its_map() {
        let p = CompactionParams::from_cql(m(&[("class", "UnifiedCompactionStrategy")])).unwrap();
        assert_eq!(p.strategy, CompactionStrategy::Unified);
        assert_eq!(p.options().len(), 1);
        assert_eq!((p.min_threshold, p.max_threshold), (4, 32));
    }

    #[test]
    fn defaults_apply_to_unparsable_stored_numbers() {
        let p = CompactionParams::from_stored(&m(&[
            ("class", SIZE_TIERED_CLASS),
            ("min_threshold", "x"),
        ]));
        assert_eq!(p.strategy, CompactionStrategy::SizeTiered);
        assert_eq!(p.min_threshold, 4);
        assert_eq!(p.tombstone_threshold, 0.2);
        assert!(!p.unchecked_tombstone_compaction);
    }

    #[test]
    fn missing_and_unknown_classes_are_refused() {
        assert_eq!(
            CompactionParams::from_cql(m(&[])).unwrap_err().to_string(),
            "Missing sub-option 'class' for the 'compaction' option."
        );
        assert_eq!(
            CompactionParams::from_cql(m(&[("class", "Nope")]))
                .unwrap_err()
                .to_string(),
            "Unable to find compaction strategy class 'org.apache.cassandra.db.compaction.Nope'"
        );
    }
}
