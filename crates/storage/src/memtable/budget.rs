//! The memtable memory budget's shared state: flush requests, memtables being freed, flush
//! completions that wake writers waiting on backpressure, and the stall counters. Shared by the
//! write path (engine/backpressure.rs waits on it) and the flush thread (which signals it), so
//! neither reaches into the other.

use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// Wait statistics since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStallStats {
    /// Writes that had to wait.
    pub stalled_writes: u64,
    /// Total time writes spent waiting.
    pub stall_ms: u64,
    /// Writes that gave up waiting after `MAX_WRITE_STALL_MS`.
    pub stall_timeouts: u64,
}

pub(crate) struct MemtableBudget {
    /// A flush was requested and the flush thread has not taken it yet.
    pub flush_pending: AtomicBool,
    /// The last look at the node's memtables found them at or over the writers' limit: writers
    /// then check exactly (and wait). Looking at every table's memtables on every write cost
    /// two passes over all tables, system ones included, per write (2-3% of a node's CPU on
    /// point writes, perf), so the engine looks each time a memtable grows by another step
    /// (`Engine::budget_step_bytes`); a flush only makes room, so it never makes `false` wrong.
    pub maybe_over_limit: AtomicBool,
    /// Bytes of flushed memtables being freed (still held; counted by the engine's
    /// `memtable_bytes`).
    pub freeing_bytes: AtomicU64,
    /// Completed flush attempts, for async writers waiting on backpressure.
    pub flushes_done: tokio::sync::watch::Sender<u64>,
    /// The same, for blocking writers.
    pub flush_wait: (Mutex<()>, Condvar),
    stalled_writes: AtomicU64,
    stall_ms: AtomicU64,
    stall_timeouts: AtomicU64,
}

impl Default for MemtableBudget {
    fn default() -> Self {
        MemtableBudget {
            flush_pending: AtomicBool::new(false),
            maybe_over_limit: AtomicBool::new(false),
            freeing_bytes: AtomicU64::new(0),
            flushes_done: tokio::sync::watch::Sender::new(0),
            flush_wait: (Mutex::new(()), Condvar::new()),
            stalled_writes: AtomicU64::new(0),
            stall_ms: AtomicU64::new(0),
            stall_timeouts: AtomicU64::new(0),
        }
    }
}

impl MemtableBudget {
    /// Called after every flush attempt: wakes writers waiting for memtable space.
    pub(crate) fn note_flush_done(&self) {
        self.flushes_done.send_modify(|n| *n += 1);
        let _g = self.flush_wait.0.lock();
        self.flush_wait.1.notify_all();
    }

    pub(crate) fn note_stall(&self, started: Instant, timed_out: bool) {
        self.stalled_writes.fetch_add(1, Ordering::Relaxed);
        self.stall_ms
            .fetch_add(started.elapsed().as_millis() as u64, Ordering::Relaxed);
        if timed_out {
            self.stall_timeouts.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn stall_stats(&self) -> WriteStallStats {
        WriteStallStats {
            stalled_writes: self.stalled_writes.load(Ordering::Relaxed),
            stall_ms: self.stall_ms.load(Ordering::Relaxed),
            stall_timeouts: self.stall_timeouts.load(Ordering::Relaxed),
        }
    }
}
