//! The read path: one partition merged from memtables and SSTables (single.rs), the
//! max-timestamp short-circuit that skips older SSTables (shortcut.rs), tombstone counting
//! (tombstones.rs), the key and row caches in front of it (caches.rs), and the unfiltered reads
//! and their resolution that replicas are reconciled with (unfiltered.rs), and the sequential scan
//! of canonical partitions that repairs hash (scan.rs).

pub(crate) mod caches;
pub(crate) mod columnar_scan;
mod range;
pub(crate) mod scan;
pub(crate) mod shortcut;
mod single;
mod tombstones;
mod unfiltered;

use crate::clustering::CKey;
use crate::partition::Partition;
use caches::Caches;
pub(crate) use range::live_memtables;
pub(crate) use single::readable_sstables;
use std::sync::atomic::AtomicBool;
pub(crate) use unfiltered::{resolve, unfiltered_gc_before};

/// The read path's state: the caches, and whether to use the max-timestamp short-circuit.
pub(crate) struct ReadPath {
    pub caches: Caches,
    /// Whether single-partition reads use the max-timestamp short-circuit (on; tests compare).
    pub shortcut: AtomicBool,
}

impl ReadPath {
    pub(crate) fn new(caches: Caches) -> Self {
        ReadPath {
            caches,
            shortcut: AtomicBool::new(true),
        }
    }
}

/// Clones a partition keeping only rows inside `ranges` (deletions and static row always kept).
pub(crate) fn restrict(p: &Partition, ranges: Option<&[(CKey, CKey)]>) -> Partition {
    let Some(ranges) = ranges else {
        return p.clone();
    };
    let mut out = Partition::new(p.key.clone(), p.token);
    out.deletion = p.deletion;
    out.range_tombstones = p.range_tombstones.clone();
    out.static_row = p.static_row.clone();
    for (s, e) in ranges {
        if s <= e {
            for (k, r) in p.rows.range(crate::clustering::map_bounds(s, e)) {
                out.rows.insert(k.clone(), r.clone());
            }
        }
    }
    out
}
