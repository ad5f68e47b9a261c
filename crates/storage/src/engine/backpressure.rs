//! Write backpressure: a write waits, bounded, only when unflushed memtables (active plus
//! flushing) exceed `MEMTABLE_BACKPRESSURE_FACTOR` times `memtable_space_bytes`, that is when
//! flushing has fallen behind the write rate. Below that, writes never wait for flushes.
//!
//! Never a deadlock: writers wait before taking any engine lock (memtable, counter stripe), the
//! flush thread needs none of theirs, every flush attempt (success or failure) wakes waiters,
//! and a writer gives up waiting after `MAX_WRITE_STALL_MS` or when no flush thread is left,
//! then writes anyway: memory beyond the budget is preferred to an unavailable node. Async
//! writers check the deadline at each flush completion (this crate has no timer), so a single
//! flush that runs longer than the deadline holds them until it ends.

use crate::engine::Engine;
pub use crate::memtable::budget::WriteStallStats;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Unflushed memtable bytes, as a multiple of `memtable_space_bytes`, at which writes wait.
pub const MEMTABLE_BACKPRESSURE_FACTOR: u64 = 2;
/// Longest a single write waits for flushes to catch up.
pub const MAX_WRITE_STALL_MS: u64 = 10_000;
/// Blocking waiters re-check at least this often (a flush may complete on another table).
const STALL_POLL_MS: u64 = 50;

impl Engine {
    pub(super) fn memtable_limit_bytes(&self) -> u64 {
        self.config
            .memtable_space_bytes
            .max(1 << 20)
            .saturating_mul(MEMTABLE_BACKPRESSURE_FACTOR)
    }

    fn over_memtable_limit(&self) -> bool {
        self.memtable_bytes() >= self.memtable_limit_bytes()
    }

    /// The writers' fast path: false when the last look at the budget found room. When it did
    /// not, looks again now, and clears the note once there is room.
    fn maybe_over_memtable_limit(&self) -> bool {
        if !self.budget.maybe_over_limit.load(Ordering::Relaxed) {
            return false;
        }
        let over = self.over_memtable_limit();
        if !over {
            self.budget.maybe_over_limit.store(false, Ordering::Relaxed);
        }
        over
    }

    fn flush_thread_alive(&self) -> bool {
        self.background.flush_thread_alive()
    }

    /// Async writers: waits (bounded) while unflushed memtables are over the limit.
    pub(crate) async fn wait_for_memtable_space(&self) {
        if !self.maybe_over_memtable_limit() {
            return;
        }
        let started = Instant::now();
        let deadline = Duration::from_millis(MAX_WRITE_STALL_MS);
        let mut rx = self.budget.flushes_done.subscribe();
        let mut timed_out = false;
        while self.over_memtable_limit() && self.flush_thread_alive() {
            if started.elapsed() >= deadline {
                timed_out = true;
                break;
            }
            self.maybe_trigger_flush();
            // Without a timer in this crate's runtime features, the bound is counted in flush
            // completions: each one re-checks the limit and the deadline.
            if rx.changed().await.is_err() {
                break;
            }
        }
        self.budget.note_stall(started, timed_out);
    }

    /// Blocking writers (tools, tests): as `wait_for_memtable_space`.
    pub(crate) fn wait_for_memtable_space_blocking(&self) {
        if !self.maybe_over_memtable_limit() {
            return;
        }
        let started = Instant::now();
        let deadline = started + Duration::from_millis(MAX_WRITE_STALL_MS);
        let mut timed_out = false;
        let mut g = self.budget.flush_wait.0.lock();
        while self.over_memtable_limit() && self.flush_thread_alive() {
            let now = Instant::now();
            if now >= deadline {
                timed_out = true;
                break;
            }
            self.maybe_trigger_flush();
            let wait = (deadline - now).min(Duration::from_millis(STALL_POLL_MS));
            self.budget.flush_wait.1.wait_for(&mut g, wait);
        }
        drop(g);
        self.budget.note_stall(started, timed_out);
    }

    /// Bytes in memtables not yet written to SSTables (active and flushing), all tables.
    pub fn unflushed_memtable_bytes(&self) -> u64 {
        self.memtable_bytes()
    }

    /// Writes that waited for flushes, and for how long.
    pub fn write_stall_stats(&self) -> WriteStallStats {
        self.budget.stall_stats()
    }
}
