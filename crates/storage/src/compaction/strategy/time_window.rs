//! Time-window: SSTables group by the window of their newest write. The newest window compacts
//! size-tiered (as Cassandra's TWCS does with its STCS defaults); an older window with more than
//! one SSTable compacts whole, newest such window first.

use super::{gens, size_tiered, Choice, SSTableInfo, Strategy, UNSPLIT};
use std::collections::BTreeMap;

pub(crate) struct TimeWindow {
    pub window_us: i64,
}

impl TimeWindow {
    /// `unit` is MINUTES, HOURS or DAYS (anything else counts as days).
    pub(crate) fn new(unit: &str, size: u32) -> Self {
        let unit_s = match unit.to_ascii_uppercase().as_str() {
            "MINUTES" => 60,
            "HOURS" => 3600,
            _ => 86_400,
        };
        TimeWindow {
            window_us: unit_s * i64::from(size.max(1)) * 1_000_000,
        }
    }
}

impl Strategy for TimeWindow {
    fn choose(&self, free: &[SSTableInfo], _all: &[SSTableInfo]) -> Choice {
        let mut windows: BTreeMap<i64, Vec<SSTableInfo>> = BTreeMap::new();
        for s in free {
            windows
                .entry(s.max_timestamp_us.div_euclid(self.window_us.max(1)))
                .or_default()
                .push(s.clone());
        }
        let newest = windows.keys().next_back().copied();
        let mut pick = Vec::new();
        for (k, v) in windows.iter().rev() {
            if Some(*k) == newest {
                pick = size_tiered::pick(v, 4, 32);
            } else if v.len() > 1 {
                pick = v.clone();
            }
            if !pick.is_empty() {
                break;
            }
        }
        Choice {
            inputs: gens(&pick),
            level: 0,
            max_output_bytes: UNSPLIT,
        }
    }
}
