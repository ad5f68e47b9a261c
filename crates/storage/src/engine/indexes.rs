//! The engine's side of secondary indexes (index.rs has the design): which indexes a table
//! has, their entries added on the write path, and the build over data written before an
//! index existed.

use super::Engine;
use crate::index::{self, IndexDef, BUILD_BATCH_PARTITIONS, BUILT_MARKER};
use crate::partition::{self, Partition};
use crate::table::Table;
use crate::types::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Engine {
    /// Sets the indexes whose entries every write to `base` adds from now on. Their tables must
    /// be created first (`create_table` with `index_table_def`); a write skips an index whose
    /// table is gone, so dropping one is `set_indexes` without it, then `drop_table`.
    pub fn set_indexes(&self, base: TableId, defs: Vec<IndexDef>) -> Result<(), StorageError> {
        let t = self.table(base)?;
        *t.indexes.write() = Arc::from(defs);
        Ok(())
    }

    /// Whether the build of the index kept in `index_table` completed (its entries cover the
    /// data written before the index existed); survives restarts.
    pub fn index_built(&self, index_table: TableId) -> bool {
        self.table(index_table)
            .is_ok_and(|t| t.index_built.load(Ordering::Relaxed))
    }

    /// Adds the entries of every row of `base` to index `def` (registered with `set_indexes`
    /// before, so writes meanwhile are indexed too), then marks the index built. Returns the
    /// entries written. Blocking: run it on a thread of its own. Partitions are read whole, a
    /// batch of `BUILD_BATCH_PARTITIONS` at a time.
    pub fn build_index(&self, base: TableId, def: &IndexDef) -> Result<u64, StorageError> {
        let mut start = PartitionBound::Unbounded;
        let mut written = 0u64;
        loop {
            let q = ReadQuery {
                columns: None,
                partitions: PartitionRange::Range {
                    start: start.clone(),
                    end: PartitionBound::Unbounded,
                },
                slices: Vec::new(),
                reversed: false,
                row_limit: None,
                per_partition_limit: None,
                partition_limit: Some(BUILD_BATCH_PARTITIONS),
                now_s: self.clock.wall_secs(),
                resume_after: None,
            };
            let result = self.read(base, &q)?;
            let entries: Vec<Mutation> = result
                .partitions
                .iter()
                .flat_map(|p| index::entries_of_partition(def, p))
                .collect();
            written += entries.len() as u64;
            if !entries.is_empty() {
                self.apply_blocking(&entries)?;
            }
            let Some(last) = result.partitions.last() else {
                break;
            };
            if result.partitions.len() < BUILD_BATCH_PARTITIONS {
                break;
            }
            start = PartitionBound::Key {
                token: last.token,
                key: last.key.clone(),
                inclusive: false,
            };
        }
        let t = self.table(def.index_table)?;
        let marker = t.dir.join(BUILT_MARKER);
        std::fs::write(&marker, b"").map_err(|e| StorageError::io(&marker, e))?;
        t.index_built.store(true, Ordering::Relaxed);
        Ok(written)
    }

    /// The index entries of base mutation `m`, as partitions for the same commitlog entry.
    pub(super) fn index_parts(
        &self,
        m: &Mutation,
        defs: &[IndexDef],
        now_s: i64,
        parts: &mut Vec<(Arc<Table>, Partition)>,
    ) -> Result<(), StorageError> {
        for e in index::entries(m, defs, now_s) {
            // An index being dropped: its table may already be gone.
            let Ok(t) = self.table(e.table) else {
                continue;
            };
            let layout = t.layout.read().clone();
            let mut p = Partition::from_mutation(&e, &layout)?;
            partition::stamp_local_times(&mut p, now_s);
            parts.push((t, p));
        }
        Ok(())
    }
}
