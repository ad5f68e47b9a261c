//! The memtable memory budget's shared state: flush requests, memtables being freed, flush
//! completions that wake writers waiting on backpressure, and the stall counters. Shared by the
//! write path (engine/backpressure.rs waits on it) and the flush thread (which signals it), so
//! neither reaches into the other.

use crate::byte_cache::ByteCache;
use crate::sstable::ChunkKey;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
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
    /// The chunk cache, which gives memtables its memory (`note_memtable_bytes`); None in
    /// engines built without one.
    chunk_cache: Option<ChunkCacheShare>,
}

/// The chunk cache's side of the one memory budget memtables and cached chunks share: the
/// cache holds `file_cache_size` minus what memtables hold, and never less than a quarter of
/// it. Separate budgets let a mixed load hold both at once (memtables near their flush point
/// and a full cache: 546 MiB RSS against Cassandra's 1,655, ratio 0.33, in
/// 20261202-022608-5464b8d), where Cassandra's memtables and caches share one heap.
struct ChunkCacheShare {
    cache: Arc<ByteCache<ChunkKey, Vec<u8>>>,
    configured_bytes: u64,
}

/// Budget moves smaller than this share of the configured size are not made: every look at
/// the memtables would otherwise evict a few chunks.
const CHUNK_BUDGET_STEP_DIVISOR: u64 = 64;

impl ChunkCacheShare {
    fn fit_beside(&self, memtable_bytes: u64) {
        let step = self.configured_bytes / CHUNK_BUDGET_STEP_DIVISOR;
        let floor = self.configured_bytes / 4;
        let mut room = self
            .configured_bytes
            .saturating_sub(memtable_bytes)
            .max(floor);
        // Empty memtables still hold a little: the cache gets its whole size back then.
        if self.configured_bytes - room < step {
            room = self.configured_bytes;
        }
        let now = self.cache.budget_bytes();
        if room.abs_diff(now) >= step || (room == self.configured_bytes && now != room) {
            self.cache.set_budget(room);
        }
    }
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
            chunk_cache: None,
        }
    }
}

impl MemtableBudget {
    /// A budget whose memtables take their memory from `chunk_cache` (of `configured_bytes`,
    /// `file_cache_size`) as they grow, and give it back as they are flushed.
    pub(crate) fn sharing_with(
        chunk_cache: Arc<ByteCache<ChunkKey, Vec<u8>>>,
        configured_bytes: u64,
    ) -> Self {
        MemtableBudget {
            chunk_cache: Some(ChunkCacheShare {
                cache: chunk_cache,
                configured_bytes,
            }),
            ..MemtableBudget::default()
        }
    }

    /// What all memtables hold now (active, flushing and being freed): the chunk cache's budget
    /// follows it.
    pub(crate) fn note_memtable_bytes(&self, memtable_bytes: u64) {
        if let Some(share) = &self.chunk_cache {
            share.fit_beside(memtable_bytes);
        }
    }

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
