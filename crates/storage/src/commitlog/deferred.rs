//! Appends that share one `pwrite` across the requests of one read from a client connection.
//!
//! Every entry used to be written to its segment with a `pwrite` of its own before its write was
//! acknowledged: 10.5% of the node's CPU on in-memory writes (perf, helenus-stress, 2026-12-01),
//! as much as the whole memtable merge. A connection that decodes many requests from one read
//! runs most of them to completion before it hands any answer to its writer, so their entries
//! can wait in the log's buffer and reach the file together, before the first of those answers
//! leaves: `deferring_appends` runs one request with its appends buffered and returns what it
//! left unwritten; the connection writes that (`UnwrittenAppends::write`) before it sends the
//! answers or hands the request to a task of its own. An acknowledged write is therefore in the
//! kernel's page cache, as before, and survives `kill -9` of the process.
//!
//! Only the `periodic` sync mode defers: in `batch` and `group` modes a writer waits for an
//! `fdatasync` anyway, which writes the buffer first.

use super::Commitlog;
use crate::error::StorageError;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

thread_local! {
    /// Whether appends on this thread may leave their entries in the log's buffer.
    static DEFERRING: Cell<bool> = const { Cell::new(false) };
    /// The logs this thread's deferred appends went to, with the last sequence number in each.
    static OWED: RefCell<Vec<(Arc<Commitlog>, u64)>> = const { RefCell::new(Vec::new()) };
}

/// Whether the calling thread is inside `deferring_appends`.
pub(super) fn deferring() -> bool {
    DEFERRING.with(Cell::get)
}

/// Notes that entry `seq` of `log` was left in its buffer by this thread.
pub(super) fn owe(log: &Arc<Commitlog>, seq: u64) {
    OWED.with_borrow_mut(|owed| note(owed, log, seq));
}

fn note(owed: &mut Vec<(Arc<Commitlog>, u64)>, log: &Arc<Commitlog>, seq: u64) {
    match owed.iter_mut().find(|(l, _)| Arc::ptr_eq(l, log)) {
        Some((_, s)) => *s = (*s).max(seq),
        None => owed.push((log.clone(), seq)),
    }
}

/// Runs `f` with the commitlog appends it makes on this thread left in their logs' buffers;
/// returns its result and what it left unwritten, which the caller must write before it
/// acknowledges anything `f` did.
pub fn deferring_appends<R>(f: impl FnOnce() -> R) -> (R, UnwrittenAppends) {
    /// Restores the flag even if `f` unwinds.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            DEFERRING.with(|d| d.set(self.0));
        }
    }
    let restore = Restore(DEFERRING.with(|d| d.replace(true)));
    let result = f();
    drop(restore);
    let owed = OWED.with_borrow_mut(std::mem::take);
    (result, UnwrittenAppends(owed))
}

/// Commitlog entries appended but possibly not yet in their segment files.
#[derive(Default)]
pub struct UnwrittenAppends(Vec<(Arc<Commitlog>, u64)>);

impl UnwrittenAppends {
    /// Adds `other`'s entries to these.
    pub fn absorb(&mut self, other: UnwrittenAppends) {
        for (log, seq) in &other.0 {
            note(&mut self.0, log, *seq);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Writes every entry up to the noted ones to the files (one `pwrite` per log, covering
    /// other connections' buffered entries too). On an error the entries stay buffered and
    /// nothing that depends on them may be acknowledged.
    pub fn write(&mut self) -> Result<(), StorageError> {
        while let Some((log, seq)) = self.0.last() {
            log.write_through(*seq)?;
            self.0.pop();
        }
        Ok(())
    }
}
