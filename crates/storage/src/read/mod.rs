//! The read path: one partition merged from memtables and SSTables (single.rs), the
//! max-timestamp short-circuit that skips older SSTables (shortcut.rs), tombstone counting
//! (tombstones.rs), and the key and row caches in front of it (caches.rs).

pub(crate) mod caches;
pub(crate) mod shortcut;
mod single;
mod tombstones;
