//! The max-timestamp short-circuit of single-partition reads, as Cassandra's
//! `SinglePartitionReadCommand` does it: SSTables are visited newest-first by their
//! `max_timestamp_us`, and the read stops before the next SSTable once what it has merged so
//! far cannot be changed by anything at or below that SSTable's max timestamp:
//!
//! * a partition deletion at or above it shadows all of that SSTable's data (`deletes` is
//!   `ts <= marked_for_delete_at`), and of every older one;
//! * for a read of exactly one row of a table without static columns, collections or counters,
//!   when the row marker and every regular column are present with timestamps strictly above
//!   it: an older cell, marker or deletion loses to each of them (last write wins, no ties).
//!
//! Counter tables are never short-circuited: counter resolution needs every shard's clock.
//! Because the SSTables are sorted, once the test passes for one it passes for all older ones.

use crate::clustering::CKey;
use crate::partition::Partition;
use crate::sstable::SSTableReader;
use crate::types::{ColumnId, TableDef};
use std::sync::Arc;

/// What a single-partition read may skip, decided once per read from the table and the slice.
pub(crate) struct Shortcut {
    enabled: bool,
    /// The one row read, when the row test applies.
    row: Option<CKey>,
    regular_columns: Vec<ColumnId>,
}

impl Shortcut {
    /// The plan for reading `ranges` (None: the whole partition) of a table `def`.
    pub fn new(def: &TableDef, ranges: Option<&[(CKey, CKey)]>, enabled: bool) -> Self {
        let counters = def.columns.iter().any(|c| c.is_counter);
        let enabled = enabled && !counters;
        let row_test_applies = def
            .columns
            .iter()
            .all(|c| !c.is_static && c.multi_cell.is_none());
        let row = match ranges {
            Some([(s, e)]) if enabled && row_test_applies => single_row(s, e),
            _ => None,
        };
        let regular_columns = match row {
            Some(_) => def.columns.iter().map(|c| c.id).collect(),
            None => Vec::new(),
        };
        Shortcut {
            enabled,
            row,
            regular_columns,
        }
    }

    /// Orders `sstables` newest data first (merging is order-independent, so only the
    /// short-circuit cares).
    pub fn order(&self, sstables: &mut [Arc<SSTableReader>]) {
        if self.enabled {
            sstables.sort_by_key(|s| std::cmp::Reverse(s.stats.max_timestamp_us));
        }
    }

    /// True when nothing with timestamps at or below `max_ts_us` can change `acc`'s result.
    pub fn covers(&self, acc: &Partition, max_ts_us: i64) -> bool {
        if !self.enabled {
            return false;
        }
        if acc
            .deletion
            .is_some_and(|d| d.marked_for_delete_at_us >= max_ts_us)
        {
            return true;
        }
        let Some(k) = &self.row else {
            return false;
        };
        let Some(r) = acc.rows.get(k) else {
            return false;
        };
        r.liveness.is_some_and(|l| l.timestamp_us > max_ts_us)
            && self.regular_columns.iter().all(|c| {
                r.cells
                    .get(&(*c, None))
                    .is_some_and(|cell| cell.timestamp_us > max_ts_us)
            })
    }
}

/// The row a slice selects when it selects exactly one full clustering (every clustering of a
/// table without clustering columns is the empty one).
fn single_row(s: &CKey, e: &CKey) -> Option<CKey> {
    let n = s.cmp.len();
    let point = s.values.len() == n
        && e.values.len() == n
        && s.weight == -1
        && e.weight == 1
        && s.cmp.compare(&s.values, 0, &e.values, 0) == std::cmp::Ordering::Equal;
    point.then(|| CKey::row(s.values.clone(), &s.cmp))
}
