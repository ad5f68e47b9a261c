//! The flush thread and the compaction pool, and the narrow handle they work through: the
//! tables, the commitlog, the memtable budget, task progress, their rate limits and their job
//! queues, but not the engine. They hold it weakly, so dropping the engine stops them.

use super::progress::Progress;
use crate::commitlog::Commitlog;
use crate::compaction::control::{lower_thread_priority, RateLimiter};
use crate::memtable::budget::MemtableBudget;
use crate::table::{Table, Tables};
use crate::types::*;
use helenus_types::SharedClock;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Weak};
use std::time::Instant;

/// Background work requests.
pub(crate) enum Job {
    Flush(TableId),
    Compact(TableId),
}

/// The part of `StorageConfig` background work follows.
#[derive(Clone, Copy)]
pub(crate) struct WorkerConfig {
    pub concurrent_compactors: usize,
    pub compaction_throughput_mib_per_s: u64,
    pub flush_throughput_mib_per_s: u64,
    pub parallel_major_compaction_min_bytes: u64,
}

impl WorkerConfig {
    pub(crate) fn of(config: &StorageConfig) -> Self {
        WorkerConfig {
            concurrent_compactors: config.concurrent_compactors,
            compaction_throughput_mib_per_s: config.compaction_throughput_mib_per_s,
            flush_throughput_mib_per_s: config.flush_throughput_mib_per_s,
            parallel_major_compaction_min_bytes: config.parallel_major_compaction_min_bytes,
        }
    }
}

/// What flushes and compactions need, owned by the engine.
pub(crate) struct Background {
    pub config: WorkerConfig,
    /// Now, for gc_grace_seconds and TTLs.
    pub clock: SharedClock,
    pub tables: Arc<Tables>,
    pub log: Arc<Commitlog>,
    pub budget: Arc<MemtableBudget>,
    pub progress: Progress,
    /// `compaction_throughput`, shared by every compaction of the node (as Cassandra's is).
    pub compaction_limiter: RateLimiter,
    /// Its cap in MiB/s (0: unthrottled): the configured one until `nodetool
    /// setcompactionthroughput` changes it; compactions already running follow the change.
    pub compaction_cap_mib_s: AtomicU64,
    /// `flush_throughput` (unlimited by default).
    pub flush_limiter: RateLimiter,
    /// The ring's tokens, sorted (empty outside a cluster): Leveled compactions end an output
    /// at each, so their SSTables lie wholly inside one token range and stream whole.
    pub ring_tokens: parking_lot::RwLock<Arc<Vec<i64>>>,
    /// Flush requests (one flush thread).
    flush_jobs: Mutex<Option<mpsc::Sender<Job>>>,
    /// Compaction requests (a pool of `concurrent_compactors` threads).
    compaction_jobs: Mutex<Option<mpsc::Sender<Job>>>,
    workers: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

impl Background {
    /// Starts the flush thread and the compaction pool.
    pub(crate) fn start(
        config: WorkerConfig,
        clock: SharedClock,
        tables: Arc<Tables>,
        log: Arc<Commitlog>,
        budget: Arc<MemtableBudget>,
    ) -> Result<Arc<Background>, StorageError> {
        let (ftx, frx) = mpsc::channel();
        let (ctx, crx) = mpsc::channel();
        let bg = Arc::new(Background {
            config,
            clock,
            tables,
            log,
            budget,
            progress: Progress::default(),
            compaction_limiter: RateLimiter::new_at(Instant::now()),
            compaction_cap_mib_s: AtomicU64::new(config.compaction_throughput_mib_per_s),
            flush_limiter: RateLimiter::new_at(Instant::now()),
            ring_tokens: parking_lot::RwLock::new(Arc::new(Vec::new())),
            flush_jobs: Mutex::new(Some(ftx)),
            compaction_jobs: Mutex::new(Some(ctx)),
            workers: Mutex::new(Vec::new()),
        });
        let frx = Arc::new(Mutex::new(frx));
        let crx = Arc::new(Mutex::new(crx));
        let mut handles = vec![spawn_loop(&bg, frx, "memtable-flush".into(), false)?];
        for i in 0..config.concurrent_compactors.clamp(1, 16) {
            handles.push(spawn_loop(
                &bg,
                crx.clone(),
                format!("compaction-{i}"),
                true,
            )?);
        }
        bg.workers.lock().extend(handles);
        Ok(bg)
    }

    pub(crate) fn table(&self, id: TableId) -> Result<Arc<Table>, StorageError> {
        self.tables.get(id)
    }

    pub(crate) fn flush_thread_alive(&self) -> bool {
        self.flush_jobs.lock().is_some()
    }

    /// Asks the flush thread to flush `id`; false when there is no flush thread any more.
    pub(crate) fn request_flush(&self, id: TableId) -> bool {
        match self.flush_jobs.lock().as_ref() {
            Some(tx) => tx.send(Job::Flush(id)).is_ok(),
            None => false,
        }
    }

    /// Asks the compaction pool to look at `id` (ignored once stopped).
    pub(crate) fn request_compaction(&self, id: TableId) {
        if let Some(tx) = self.compaction_jobs.lock().as_ref() {
            let _ = tx.send(Job::Compact(id));
        }
    }

    /// Stops the flush and compaction threads, letting running work finish.
    pub(crate) fn stop(&self) {
        self.flush_jobs.lock().take();
        self.compaction_jobs.lock().take();
        // Wake writers waiting on backpressure: there is no flush thread to wait for now.
        self.budget.note_flush_done();
        // Let a running flush or compaction finish so no half-replaced SSTable set is left.
        let workers: Vec<_> = std::mem::take(&mut *self.workers.lock());
        let me = std::thread::current().id();
        for w in workers {
            if w.thread().id() != me {
                let _ = w.join();
            }
        }
    }
}

fn spawn_loop(
    bg: &Arc<Background>,
    rx: Arc<Mutex<mpsc::Receiver<Job>>>,
    name: String,
    low_priority: bool,
) -> Result<std::thread::JoinHandle<()>, StorageError> {
    let weak: Weak<Background> = Arc::downgrade(bg);
    std::thread::Builder::new()
        .name(name)
        .spawn(move || loop {
            if low_priority {
                lower_thread_priority();
            }
            let job = rx.lock().recv();
            let Ok(job) = job else { return };
            let Some(bg) = weak.upgrade() else { return };
            match job {
                Job::Flush(id) => {
                    bg.budget.flush_pending.store(false, Ordering::Release);
                    if let Ok(t) = bg.table(id) {
                        // Errors leave the memtable readable in `flushing`; a later flush retries.
                        let _ = super::flush::flush_table(&bg, &t);
                    }
                }
                Job::Compact(id) => {
                    if let Ok(t) = bg.table(id) {
                        let _ = super::background_compaction(&bg, &t);
                    }
                }
            }
        })
        .map_err(|e| StorageError::io("thread", e))
}
