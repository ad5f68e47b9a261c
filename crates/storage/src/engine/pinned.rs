//! Point-in-time reads of one table (`nodetool export`): the table is flushed and its SSTable
//! set at that moment kept; reads through the pin merge those SSTables alone, with the same
//! read path as every read (tombstones, TTLs, last write wins), and see none of the writes,
//! flushes or compactions that follow. SSTables hold their files open, so a compaction that
//! deletes a pinned SSTable's files does not take its data from the pin.

use crate::engine::Engine;
use crate::sstable::SSTableReader;
use crate::types::*;
use std::sync::Arc;

/// One table's SSTables as a flush left them.
pub struct PinnedTable {
    table: TableId,
    sstables: Vec<Arc<SSTableReader>>,
}

impl PinnedTable {
    /// SSTables pinned.
    pub fn sstable_count(&self) -> usize {
        self.sstables.len()
    }
}

impl Engine {
    /// Flushes `table` and pins its SSTables. Flushes of a table run one at a time, so when
    /// this one returns every write before it is in an SSTable: the set read after it is a
    /// cut of the table's history (writes that raced the flush into the next memtable are
    /// after the cut, whole, since a mutation goes to one memtable).
    pub fn flush_and_pin(&self, table: TableId) -> Result<PinnedTable, StorageError> {
        self.flush(Some(table))?;
        let t = self.table(table)?;
        let sstables = t.sstables.read().to_vec();
        Ok(PinnedTable { table, sstables })
    }

    /// `read` over the pinned SSTables alone.
    pub fn read_pinned(
        &self,
        pin: &PinnedTable,
        q: &ReadQuery,
    ) -> Result<ReadResult, StorageError> {
        crate::exclusion::reading_pinned(&pin.sstables, || self.read(pin.table, q))
    }
}
