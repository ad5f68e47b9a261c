//! Data a repair session's sync writes to this replica, stored in the session's pending set
//! (compaction/flush.rs `write_in_repair_set`): written to the memtable instead it would stay
//! unrepaired, and the next incremental repair would find it missing from the repaired data of
//! this replica and send it back and forth for ever.

use crate::engine::Engine;
use crate::partition::{self, Partition};
use crate::types::*;

impl Engine {
    /// Stores `partitions` (unfiltered, as a repair reads them) of `table` in new SSTables
    /// pending for `session`; their secondary index entries go to the index tables as any
    /// write's do. Durable when it returns.
    pub fn write_pending(
        &self,
        table: TableId,
        session: [u8; 16],
        partitions: Vec<Mutation>,
    ) -> Result<(), StorageError> {
        if partitions.is_empty() {
            return Ok(());
        }
        let t = self.table(table)?;
        let layout = t.layout.read().clone();
        let now = self.clock.wall_secs();
        let indexes = t.indexes.read().clone();
        let mut index_entries = Vec::new();
        let mut parts = Vec::with_capacity(partitions.len());
        for m in &partitions {
            if m.table != table {
                return Err(StorageError::InvalidRequest(
                    "a repair write names another table".into(),
                ));
            }
            let mut p = Partition::from_mutation(m, &layout)?;
            partition::stamp_local_times(&mut p, now);
            parts.push(p);
            if !indexes.is_empty() {
                index_entries.extend(crate::index::entries(m, &indexes, now));
            }
        }
        crate::compaction::write_in_repair_set(&self.background, &t, parts, session)?;
        if !index_entries.is_empty() {
            self.apply_blocking(&index_entries)?;
        }
        Ok(())
    }
}
