//! Memtable flush: the active memtable is switched for an empty one, written to new SSTables by
//! the compaction output writer, then freed before writers waiting for memory are woken.

use super::output::{write_outputs, Merged, OutputShape};
use super::worker::Background;
use crate::memtable::Memtable;
use crate::table::Table;
use crate::types::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Flushes a table's memtable to a new SSTable (blocking).
pub(crate) fn flush_table(bg: &Background, t: &Arc<Table>) -> Result<(), StorageError> {
    /// Wakes writers waiting on backpressure however the flush ends.
    struct Done<'a>(&'a Background);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.budget.note_flush_done();
        }
    }
    let _f = t.flush_lock.lock();
    let _done = Done(bg);
    if t.dropped.load(Ordering::Relaxed) {
        return Ok(());
    }
    let (old, pos) = {
        let mut g = t.memtable.write();
        if g.is_empty() {
            return Ok(());
        }
        let pos = bg.log.position();
        let old = std::mem::replace(&mut *g, Arc::new(Memtable::default()));
        t.flushing.write().push(old.clone());
        (old, pos)
    };
    t.counters.memtable_switches.fetch_add(1, Ordering::Relaxed);
    let def = t.def.read().clone();
    let readers = write_memtable(bg, t, &def, &old, "Flush")?;
    Arc::make_mut(&mut t.sstables.write()).extend(readers);
    // The memtable is freed here, before writers waiting for memory are woken (`Done`), and
    // stays counted until then: freed on a thread of its own it could lag behind the load,
    // uncounted, and memory outgrow the budget. With values in arena chunks and a row's cells in
    // one vector, freeing is a few frees per row, not one per cell.
    let freeing = old.heap_bytes();
    bg.budget
        .freeing_bytes
        .fetch_add(freeing, Ordering::Relaxed);
    t.flushing.write().retain(|m| !Arc::ptr_eq(m, &old));
    t.memtables_retired.fetch_add(1, Ordering::Release);
    bg.log.discard(def.id, pos);
    drop(old);
    bg.budget
        .freeing_bytes
        .fetch_sub(freeing, Ordering::Relaxed);
    bg.budget
        .note_memtable_bytes(bg.tables.memtable_usage(&bg.budget).1);
    bg.request_compaction(def.id);
    Ok(())
}

/// Writes a memtable's partitions, in order, to new SSTables (not yet in the table's set).
fn write_memtable(
    bg: &Background,
    t: &Table,
    def: &TableDef,
    m: &Memtable,
    label: &str,
) -> Result<Vec<Arc<crate::sstable::SSTableReader>>, StorageError> {
    let task = bg.progress.start(def, label, m.size_bytes());
    let shards = m.read_shards();
    let result = write_outputs(
        bg,
        t,
        def,
        shards
            .iter()
            .flat_map(|m| m.values())
            .map(|p| Ok(Merged::Memtable(p))),
        parts_len_hint(m),
        0,
        OutputShape::WHOLE,
        task,
        // Flushes are not held to the compaction cap (as in Cassandra): a slow flush makes writes wait.
        (&bg.flush_limiter, &|| bg.config.flush_throughput_mib_per_s),
        None,
    );
    bg.progress.end(task);
    result
}

fn parts_len_hint(m: &Memtable) -> usize {
    m.partition_count() as usize
}

/// Writes `parts` (any order, a key possibly more than once) to new SSTables pending for
/// `session`, and adds them to the table's set: what a repair session's sync writes to a replica
/// that lacked them. They go through a memtable of their own (which merges and orders them),
/// not the table's, so they land in the session's set rather than the unrepaired one; they are
/// installed as a compaction's outputs are (their state set under the repair lock).
pub(crate) fn write_in_repair_set(
    bg: &Background,
    t: &Arc<Table>,
    parts: Vec<crate::partition::Partition>,
    session: [u8; 16],
) -> Result<usize, StorageError> {
    let staging = Memtable::default();
    for p in parts {
        let size = crate::codec::encoded_len_hint(&p) as u64;
        staging.apply(p, size);
    }
    let def = t.def.read().clone();
    let readers = write_memtable(bg, t, &def, &staging, "Repair")?;
    let written = readers.len();
    let states = super::OutputStates::PendingFirst(written, session);
    super::install_outputs(t, &Default::default(), Vec::new(), readers, states)?;
    bg.request_compaction(def.id);
    Ok(written)
}
