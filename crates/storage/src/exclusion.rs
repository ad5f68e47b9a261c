//! What a read on this thread sees of a table's SSTables and memtables, where that is not
//! everything: the SSTables a range read leaves out (a stream page after whole-SSTable
//! streaming, engine/whole.rs, must not send again what went as files), or a pinned set of
//! SSTables read instead of the live ones and the memtables (an export's point-in-time view,
//! engine/pinned.rs). The read path takes its SSTable snapshot deep inside, and both are one
//! synchronous read on one thread, so the sets ride in thread-locals rather than through every
//! read signature.

use crate::sstable::SSTableReader;
use crate::table::SSTableSet;
use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::Arc;

thread_local! {
    /// Set only for the length of one `leaving_out` call.
    static EXCLUDED: RefCell<Option<HashSet<u64>>> = const { RefCell::new(None) };
    /// Set only for the length of one `reading_pinned` call.
    static PINNED: RefCell<Option<SSTableSet>> = const { RefCell::new(None) };
}

/// Whether a range read on this thread leaves SSTables out (then it must not purge tombstones:
/// what they shadow may be in a generation left out, sent whole).
pub(crate) fn excluding() -> bool {
    EXCLUDED.with(|e| e.borrow().is_some())
}

/// The SSTables this thread's read is pinned to, if it is: it then reads those and no
/// memtable.
pub(crate) fn pinned() -> Option<SSTableSet> {
    PINNED.with(|p| p.borrow().clone())
}

/// Whether this thread's read is pinned (see `pinned`).
pub(crate) fn is_pinned() -> bool {
    PINNED.with(|p| p.borrow().is_some())
}

/// `sstables` without the generations this thread's read leaves out, or the pinned set.
pub(crate) fn visible(sstables: SSTableSet) -> Vec<Arc<SSTableReader>> {
    if let Some(p) = pinned() {
        return p.to_vec();
    }
    let mut sstables = Arc::unwrap_or_clone(sstables);
    EXCLUDED.with(|e| {
        if let Some(gens) = e.borrow().as_ref() {
            sstables.retain(|s| !gens.contains(&s.gen));
        }
    });
    sstables
}

/// Clears the exclusion when the read ends, however it ends.
struct ExcludeGuard;

impl Drop for ExcludeGuard {
    fn drop(&mut self) {
        EXCLUDED.with(|e| *e.borrow_mut() = None);
    }
}

/// Clears the pin when the read ends, however it ends.
struct PinGuard;

impl Drop for PinGuard {
    fn drop(&mut self) {
        PINNED.with(|p| *p.borrow_mut() = None);
    }
}

/// Runs `read` over `sstables` alone, instead of the table's live SSTables and memtables.
pub(crate) fn reading_pinned<R>(sstables: &[Arc<SSTableReader>], read: impl FnOnce() -> R) -> R {
    PINNED.with(|p| *p.borrow_mut() = Some(Arc::new(sstables.to_vec())));
    let _guard = PinGuard;
    read()
}

/// Runs `read` with generations `gens` left out of this thread's range reads.
pub(crate) fn leaving_out<R>(gens: &[u64], read: impl FnOnce() -> R) -> R {
    EXCLUDED.with(|e| *e.borrow_mut() = Some(gens.iter().copied().collect()));
    let _guard = ExcludeGuard;
    read()
}
