//! Counting the tombstones a read scans, as Cassandra's `ReadCommand` does for its
//! `tombstone_warn_threshold` and `tombstone_failure_threshold`: per row of the merged partition
//! the read visits, each cell that is not live (a cell tombstone or an expired TTL cell) counts
//! one; a row with no live data and no such cell counts one for its deletion (a row deletion or
//! a collection deletion); each range tombstone overlapping the read's slices counts two, for
//! the open and close markers Cassandra's iterators yield. Data a deletion shadows is not counted
//! (Cassandra's merge drops it before counting), but the deletions that shadow it are, even when
//! nothing of the row reaches the result. A partition deletion is not counted, as in Cassandra.

use crate::clustering::CKey;
use crate::engine::Engine;
use crate::error::StorageError;
use crate::partition::{Limits, Row};
use crate::reconcile;
use crate::types::{ColumnId, DeletionTime, ReadQuery, ReadResult, ReadStats, TableId};
use std::sync::atomic::Ordering;

impl Engine {
    /// Reads live data, counting the tombstones scanned into the result's stats; fails with
    /// `TombstoneOverwhelming` as soon as more than `tombstone_failure_threshold` were scanned
    /// (Cassandra's `tombstone_failure_threshold`), without reading the rest.
    pub fn read_bounded(
        &self,
        table: TableId,
        q: &ReadQuery,
        tombstone_failure_threshold: u64,
    ) -> Result<ReadResult, StorageError> {
        let t = self.table(table)?;
        t.counters.reads.fetch_add(1, Ordering::Relaxed);
        let mut limits = Limits {
            rows_left: q.row_limit.unwrap_or(usize::MAX),
            per_partition: q.per_partition_limit.unwrap_or(usize::MAX),
            scan: TombstoneScan::new(tombstone_failure_threshold),
        };
        let result = self.read_limited(&t, q, &mut limits);
        let c = &t.counters;
        let scanned = match &result {
            Err(StorageError::TombstoneOverwhelming {
                tombstones_scanned, ..
            }) => {
                c.tombstone_failures.fetch_add(1, Ordering::Relaxed);
                *tombstones_scanned
            }
            _ => limits.scan.stats.tombstones_scanned,
        };
        c.tombstones_scanned.fetch_add(scanned, Ordering::Relaxed);
        c.tombstones_scanned_max
            .fetch_max(scanned, Ordering::Relaxed);
        let mut out = result?;
        out.stats = limits.scan.stats;
        Ok(out)
    }
}

/// Range tombstone markers per range tombstone (open and close).
const MARKERS_PER_RANGE_TOMBSTONE: u64 = 2;

/// The running count of one read, with the threshold past which it is abandoned.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TombstoneScan {
    pub stats: ReadStats,
    /// The read fails once more tombstones than this were scanned (u64::MAX: never).
    pub failure_threshold: u64,
}

impl TombstoneScan {
    pub fn new(failure_threshold: u64) -> Self {
        TombstoneScan {
            stats: ReadStats::default(),
            failure_threshold,
        }
    }

    fn add(&mut self, n: u64) -> Result<(), StorageError> {
        self.stats.tombstones_scanned = self.stats.tombstones_scanned.saturating_add(n);
        if self.stats.tombstones_scanned > self.failure_threshold {
            return Err(StorageError::TombstoneOverwhelming {
                tombstones_scanned: self.stats.tombstones_scanned,
                live_rows: self.stats.live_rows,
                failure_threshold: self.failure_threshold,
            });
        }
        Ok(())
    }

    /// Counts one visited row (`outer`: the partition or range deletion covering it; `live`:
    /// whether the read returns it).
    pub fn row(
        &mut self,
        row: &Row,
        outer: Option<DeletionTime>,
        live: bool,
        now_s: i64,
    ) -> Result<(), StorageError> {
        let d = reconcile::max_deletion(outer, row.deletion);
        // `is_live` is false for tombstones and expired cells alike.
        let mut dead_cells = if d.is_none() && row.complex_deletions.is_empty() {
            // The common row: nothing can shadow its cells.
            row.cells.values().filter(|c| !c.is_live(now_s)).count() as u64
        } else {
            let shadowed = |col: &ColumnId, has_path: bool, ts: i64| {
                let complex = has_path
                    .then(|| row.complex_deletions.get(col).copied())
                    .flatten();
                reconcile::deletes(d, ts) || reconcile::deletes(complex, ts)
            };
            // Shadowed data is dropped by Cassandra's merge before it counts.
            row.cells
                .iter()
                .filter(|((col, path), c)| {
                    !shadowed(col, path.is_some(), c.timestamp_us) && !c.is_live(now_s)
                })
                .count() as u64
        };
        if live {
            self.stats.live_rows += 1;
        } else if dead_cells == 0 && (row.deletion.is_some() || !row.complex_deletions.is_empty()) {
            dead_cells = 1;
        }
        self.add(dead_cells)
    }

    /// Counts the range tombstones of a partition that overlap the read's `ranges`.
    pub fn range_tombstones(
        &mut self,
        rts: &[(CKey, CKey, DeletionTime)],
        ranges: &[(CKey, CKey)],
    ) -> Result<(), StorageError> {
        let n = rts
            .iter()
            .filter(|(s, e, _)| ranges.iter().any(|(rs, re)| s <= re && rs <= e))
            .count() as u64;
        self.add(n * MARKERS_PER_RANGE_TOMBSTONE)
    }
}
