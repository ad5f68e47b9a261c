//! Single-SSTable tombstone compaction, for when the strategy has nothing to do.

use super::worker::Background;
use super::{compact_sstables, reserve, CompactionKind};
use crate::sstable::SSTableReader;
use crate::table::Table;
use crate::types::*;
use std::sync::Arc;

/// Single-SSTable tombstone compaction (Cassandra's `worthDroppingTombstones`): when the strategy
/// has nothing to do, rewrite alone the SSTable with the highest estimated droppable-tombstone
/// ratio above `tombstone_threshold`. Unless `unchecked_tombstone_compaction`, only when no
/// other SSTable overlapping its tokens holds data as old as its own, since such data would keep
/// the tombstones from being purged.
pub(super) fn tombstone_compaction(
    bg: &Background,
    t: &Arc<Table>,
    def: &TableDef,
    free: &[Arc<SSTableReader>],
) -> Result<Option<CompactionStats>, StorageError> {
    let gc_before = bg.clock.wall_secs() - i64::from(def.options.gc_grace_seconds);
    let threshold = def.options.tombstone_threshold;
    let all: Vec<Arc<SSTableReader>> = t.sstables.read().to_vec();
    let futile = t.futile_tombstone_gens.lock().clone();
    let pick = free
        .iter()
        .filter(|s| !futile.contains(&s.gen))
        .filter(|s| super::purges_tombstones(def, std::slice::from_ref(s)))
        .map(|s| (s.stats.estimated_droppable_tombstones(gc_before), s))
        .filter(|(ratio, _)| *ratio > threshold)
        .filter(|(_, s)| {
            def.options.unchecked_tombstone_compaction
                || !all.iter().any(|o| {
                    o.gen != s.gen
                        && overlaps(o, s)
                        && o.stats.min_timestamp_us <= s.stats.max_timestamp_us
                })
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, s)| s.clone());
    let Some(s) = pick else { return Ok(None) };
    let inputs = reserve(t, vec![s.clone()]);
    if inputs.is_empty() {
        return Ok(None);
    }
    let stats = compact_sstables(
        bg,
        t,
        inputs,
        CompactionKind::Background,
        s.stats.level,
        u64::MAX,
    )?;
    if stats.tombstones_purged == 0 {
        t.futile_tombstone_gens
            .lock()
            .extend(stats.output_generations.iter().copied());
    } else {
        bg.request_compaction(def.id);
    }
    Ok(Some(stats))
}

fn overlaps(a: &SSTableReader, b: &SSTableReader) -> bool {
    a.stats.min_token <= b.stats.max_token && b.stats.min_token <= a.stats.max_token
}
