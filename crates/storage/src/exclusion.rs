//! The SSTables a range read on this thread leaves out: a stream page after whole-SSTable
//! streaming (engine/whole.rs) must not send again what went as files. The read path takes its
//! SSTable snapshot deep inside, and a stream page is one synchronous read on one thread, so
//! the set rides in a thread-local rather than through every read signature.

use crate::sstable::SSTableReader;
use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::Arc;

thread_local! {
    /// Set only for the length of one `leaving_out` call.
    static EXCLUDED: RefCell<Option<HashSet<u64>>> = const { RefCell::new(None) };
}

/// Whether a range read on this thread leaves SSTables out (then it must not purge tombstones:
/// what they shadow may be in a generation left out, sent whole).
pub(crate) fn excluding() -> bool {
    EXCLUDED.with(|e| e.borrow().is_some())
}

/// `sstables` without the generations this thread's read leaves out.
pub(crate) fn visible(mut sstables: Vec<Arc<SSTableReader>>) -> Vec<Arc<SSTableReader>> {
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

/// Runs `read` with generations `gens` left out of this thread's range reads.
pub(crate) fn leaving_out<R>(gens: &[u64], read: impl FnOnce() -> R) -> R {
    EXCLUDED.with(|e| *e.borrow_mut() = Some(gens.iter().copied().collect()));
    let _guard = ExcludeGuard;
    read()
}
