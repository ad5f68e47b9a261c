//! Counting the tombstones a read scans, as Cassandra's `ReadCommand` does for its
//! `tombstone_warn_threshold` and `tombstone_failure_threshold`: per row of the merged partition
//! the read visits, each cell that is not live (a cell tombstone or an expired TTL cell) counts
//! one; a row with no live data and no such cell counts one for its deletion (a row deletion or
//! a collection deletion); each range tombstone overlapping the read's slices counts two, for
//! the open and close markers Cassandra's iterators yield. Data a deletion shadows is not counted
//! (Cassandra's merge drops it before counting), but the deletions that shadow it are, even when
//! nothing of the row reaches the result. A partition deletion is not counted, as in Cassandra.

use super::ReadPath;
use crate::error::StorageError;
use crate::partition::{Limits, Partition, TombstoneScan};
use crate::table::Table;
use crate::types::{ReadQuery, ReadResult};
use std::sync::atomic::Ordering;

impl ReadPath {
    /// Reads live data, counting the tombstones scanned into the result's stats; fails with
    /// `TombstoneOverwhelming` as soon as more than `tombstone_failure_threshold` were scanned
    /// (Cassandra's `tombstone_failure_threshold`), without reading the rest. `keep`: see
    /// `read_limited`.
    pub(crate) fn read_counted(
        &self,
        t: &Table,
        q: &ReadQuery,
        tombstone_failure_threshold: u64,
        keep: Option<&mut Vec<Partition>>,
    ) -> Result<ReadResult, StorageError> {
        t.counters.reads.fetch_add(1, Ordering::Relaxed);
        let mut limits = Limits {
            rows_left: q.row_limit.unwrap_or(usize::MAX),
            per_partition: q.per_partition_limit.unwrap_or(usize::MAX),
            scan: TombstoneScan::new(tombstone_failure_threshold),
        };
        let result = self.read_limited(t, q, &mut limits, keep);
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
