//! Engine lifecycle under load: write backpressure when flushing falls behind, and a clean
//! shutdown that leaves nothing to replay.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

mod common;
use common::*;
use helenus_storage::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn clean_shutdown_flushes_so_restart_replays_nothing() {
    let dir = tempdir("shutdown-flush");
    {
        let e = open(&dir, 864000);
        for i in 0..200u32 {
            let mut m = mutation(&i.to_be_bytes());
            m.rows.push(row(b"a", vec![set(1, 1, b"v")]));
            e.apply_blocking(&[m]).unwrap();
        }
        assert_eq!(e.table_stats(TABLE).sstable_count, 0);
        e.shutdown().unwrap();
        // Writes after shutdown are refused rather than logged into a deleted segment.
        let mut m = mutation(b"late");
        m.rows.push(row(b"a", vec![set(1, 1, b"v")]));
        assert!(matches!(
            e.apply_blocking(&[m]),
            Err(StorageError::ShuttingDown)
        ));
    }
    let e = Engine::open(config(&dir, CommitlogSync::Batch)).unwrap();
    e.create_table(table_def(864000)).unwrap();
    e.create_table(counter_def()).unwrap();
    let replay = e.replay_commitlog().unwrap();
    assert_eq!(replay.mutations_replayed, 0);
    assert_eq!(replay.segments, 0);
    assert_eq!(
        e.read(TABLE, &scan_all(now())).unwrap().partitions.len(),
        200
    );
    e.shutdown().unwrap();
}

#[test]
fn writes_wait_for_flushes_when_memtables_exceed_twice_the_budget() {
    let dir = tempdir("backpressure");
    let mut cfg = config(&dir, CommitlogSync::Periodic { period_ms: 1000 });
    // 1 MiB memtable budget; flushes throttled to 1 MiB/s so they fall behind the writers.
    cfg.memtable_space_bytes = 1 << 20;
    cfg.flush_throughput_mib_per_s = 1;
    cfg.commitlog_segment_size_bytes = 8 << 20;
    let e = Engine::open(cfg).unwrap();
    e.create_table(table_def(864000)).unwrap();
    let limit = (1u64 << 20) * MEMTABLE_BACKPRESSURE_FACTOR;
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    // Samples unflushed bytes (active plus flushing memtables).
    let sampler = {
        let (e, done, peak) = (e.clone(), done.clone(), peak.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(
                    e.table_stats(TABLE).memtable_data_size_bytes,
                    Ordering::Relaxed,
                );
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let value = vec![7u8; 16 << 10];
    let started = Instant::now();
    let writers: Vec<_> = (0..4u8)
        .map(|w| {
            let (e, value) = (e.clone(), value.clone());
            std::thread::spawn(move || {
                for i in 0..64u32 {
                    let mut m = mutation(&[w, (i >> 8) as u8, i as u8]);
                    m.rows.push(row(b"a", vec![set(1, 1, &value)]));
                    e.apply_blocking(&[m]).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let stalls = e.write_stall_stats();
    // 4 MiB written against 1 MiB/s flushing: writers must have waited, none for the maximum.
    assert!(stalls.stalled_writes > 0, "{stalls:?}");
    assert_eq!(stalls.stall_timeouts, 0, "{stalls:?}");
    assert!(started.elapsed() < Duration::from_secs(30));
    // Unflushed memtables never grew far past the limit (one write per writer may overshoot).
    let slack = 4 * (value.len() as u64 + 1024);
    assert!(
        peak.load(Ordering::Relaxed) <= limit + slack,
        "peak {}",
        peak.load(Ordering::Relaxed)
    );
    assert_eq!(
        e.read(TABLE, &scan_all(now())).unwrap().partitions.len(),
        256
    );
    e.shutdown().unwrap();
}

#[test]
fn writes_below_the_budget_never_wait() {
    let dir = tempdir("no-backpressure");
    let e = open(&dir, 864000);
    for i in 0..100u32 {
        let mut m = mutation(&i.to_be_bytes());
        m.rows.push(row(b"a", vec![set(1, 1, b"v")]));
        e.apply_blocking(&[m]).unwrap();
    }
    assert_eq!(e.write_stall_stats(), WriteStallStats::default());
    e.shutdown().unwrap();
}

/// Memtable bytes written until the engine switches memtables by itself, or None within `cap`.
fn bytes_until_first_flush(threshold: f64, cap: u64) -> Option<u64> {
    let dir = tempdir("cleanup-threshold");
    let mut cfg = config(&dir, CommitlogSync::Periodic { period_ms: 1000 });
    cfg.memtable_space_bytes = 8 << 20;
    cfg.memtable_cleanup_threshold = threshold;
    cfg.commitlog_segment_size_bytes = 32 << 20;
    let e = Engine::open(cfg).unwrap();
    e.create_table(table_def(864000)).unwrap();
    let value = vec![7u8; 16 << 10];
    let mut written = 0u64;
    let mut flushed_at = None;
    for i in 0..(cap / value.len() as u64) as u32 {
        let mut m = mutation(&i.to_be_bytes());
        m.rows.push(row(b"a", vec![set(1, 1, &value)]));
        e.apply_blocking(&[m]).unwrap();
        written += value.len() as u64;
        if e.table_stats(TABLE).memtable_switch_count > 0 {
            flushed_at = Some(written);
            break;
        }
    }
    e.shutdown().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    flushed_at
}

#[test]
fn the_largest_memtable_flushes_at_the_cleanup_threshold_not_at_the_whole_budget() {
    // Cassandra's default for two flush writers: a third of the 8 MiB space.
    // The switch happens on a flush thread, which a busy machine schedules late: writes go on
    // meanwhile, so the bound above is loose. It still tells a third (2.7 MiB) from the whole
    // space (8 MiB).
    let at = bytes_until_first_flush(1.0 / 3.0, 7 << 20).expect("a flush below 7 MiB");
    assert!(
        (2 << 20..(6 << 20)).contains(&at),
        "flushed after {at} bytes"
    );
    // At 1.0 the memtable fills the whole space first.
    assert_eq!(bytes_until_first_flush(1.0, 6 << 20), None);
}

/// The nice value of each of this process's threads named `name` (Linux's /proc).
#[cfg(target_os = "linux")]
fn nice_of_threads_named(name: &str) -> Vec<i64> {
    let mut nices = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let path = task.unwrap().path();
        let Ok(comm) = std::fs::read_to_string(path.join("comm")) else {
            continue;
        };
        if comm.trim_end() != name {
            continue;
        }
        nices.push(nice_in(
            &std::fs::read_to_string(path.join("stat")).unwrap(),
        ));
    }
    nices
}

/// The nice value in a /proc stat line: field 19, counting the state after the name as 3.
#[cfg(target_os = "linux")]
fn nice_in(stat: &str) -> i64 {
    let after_name = stat.rsplit_once(") ").unwrap().1;
    after_name.split(' ').nth(16).unwrap().parse().unwrap()
}

/// Compaction threads run below requests; the flush thread at their priority, since writers wait
/// on it (a flush thread at nice 5 was measured and not kept: bench/results/ab-20261202-164011 and
/// -164623, no change in P99 at half load or in the maximum).
#[cfg(target_os = "linux")]
#[test]
fn compaction_threads_run_below_requests_and_flush_beside_them() {
    let dir = tempdir("thread-priorities");
    let e = open(&dir, 864000);
    // The compaction threads lower their own priority as they start: give them a moment.
    let deadline = Instant::now() + Duration::from_secs(10);
    let (flush, compaction) = loop {
        let flush = nice_of_threads_named("memtable-flush");
        let compaction = nice_of_threads_named("compaction-0");
        let settled =
            !flush.is_empty() && !compaction.is_empty() && compaction.iter().all(|&n| n > 0);
        if settled || Instant::now() > deadline {
            break (flush, compaction);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // The process's main thread keeps the nice value request threads have.
    let requests = nice_in(&std::fs::read_to_string("/proc/self/stat").unwrap());
    assert!(!flush.is_empty() && !compaction.is_empty());
    assert!(
        flush.iter().all(|&f| f == requests),
        "flush {flush:?}, requests {requests}"
    );
    assert!(
        compaction.iter().all(|&c| c > requests),
        "compaction {compaction:?}, requests {requests}"
    );
    e.shutdown().unwrap();
}
