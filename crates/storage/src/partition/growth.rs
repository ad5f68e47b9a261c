//! What a merge adds to a partition besides values, for the memtable's budget.

use super::Row;
use crate::clustering::CKey;

/// What merging an update added to a partition besides its values, for the memtable's budget:
/// an update that only overwrites cells adds nothing (its cells take the old ones' places, and
/// its own structures are dropped).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MergeGrowth {
    /// Rows inserted one by one into the partition's map.
    pub rows: u64,
    /// Rows of an update taken over with their map (the partition had none).
    pub adopted_rows: u64,
    /// Row maps started: a partition's second row moves its rows from inline into a map.
    pub row_maps: u64,
    /// Clustering values of the new rows' keys.
    pub row_key_values: u64,
    /// Cells of the new rows.
    pub new_row_cells: u64,
    /// Cells added beside a row's existing cells.
    pub added_cells: u64,
    /// Range tombstones and complex deletions added.
    pub deletions: u64,
}

impl MergeGrowth {
    pub(super) fn add(&mut self, other: MergeGrowth) {
        self.rows += other.rows;
        self.adopted_rows += other.adopted_rows;
        self.row_maps += other.row_maps;
        self.row_key_values += other.row_key_values;
        self.new_row_cells += other.new_row_cells;
        self.added_cells += other.added_cells;
        self.deletions += other.deletions;
    }

    /// Counts `row` at `key` as new to the partition.
    pub(super) fn add_new_row(&mut self, key: &CKey, row: &Row) {
        self.row_key_values += key.values.len() as u64;
        self.new_row_cells += row.cells.len() as u64;
        self.deletions += row.complex_deletions.len() as u64;
    }
}
