//! The documented memory bound (lib.rs): loading far more than the memtable budget keeps the
//! process's resident memory under start + ALLOCATOR_SLACK x MEMTABLE_BACKPRESSURE_FACTOR x
//! memtable_space_bytes + caches + a fixed allowance. Runs under the node's allocator
//! (mimalloc), in its own binary. Before memtables counted the bytes they hold (they counted
//! encoded bytes, a fifth to a tenth of it), the same load went past the bound.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

mod common;
use bytes::Bytes;
use common::*;
use helenus_storage::*;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TABLE_ID: TableId = [0x72; 16];
const COLUMNS: u32 = 57;
/// What is neither memtable nor cache: allocator slack, flush and compaction buffers, SSTable
/// summaries and bloom filters of the files written.
const FIXED_ALLOWANCE_BYTES: u64 = 96 << 20;
/// Freed memtable pages the allocator has not yet reused or returned (lib.rs).
const ALLOCATOR_SLACK: u64 = 2;
const BUDGET_BYTES: u64 = 32 << 20;
/// About 8 x BUDGET_BYTES of memtable memory in all (~6 KB a row).
const ROWS: usize = 48_000;
/// The test gives up (and fails) rather than run longer than this.
const TIME_LIMIT: Duration = Duration::from_secs(240);

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    pages * page
}

fn def() -> TableDef {
    common::gdelt_def(TABLE_ID, COLUMNS)
}

fn wide_row(i: usize) -> Mutation {
    let key = Bytes::copy_from_slice(&(i as u64).to_be_bytes());
    let cells = (1..=COLUMNS)
        .filter(|col| (i + *col as usize * 7) % 8 >= 3)
        .map(|col| CellUpdate {
            column: col,
            path: None,
            timestamp_us: 1_000,
            op: CellOp::Set {
                value: Bytes::from(vec![(i % 251) as u8; 4 + (i + col as usize) % 21]),
                ttl_s: 0,
            },
        })
        .collect();
    Mutation {
        table: TABLE_ID,
        token: token(&key),
        key,
        partition_deletion: None,
        range_tombstones: Vec::new(),
        static_row: None,
        rows: vec![RowUpdate {
            clustering: Vec::new(),
            liveness: None,
            deletion: None,
            cells,
        }],
    }
}

#[test]
fn rss_stays_within_memtable_budget_plus_caches_and_fixed_overhead() {
    let dir = tempdir("rss-bound");
    let mut cfg = config(&dir, CommitlogSync::Periodic { period_ms: 1000 });
    cfg.memtable_space_bytes = BUDGET_BYTES;
    cfg.commitlog_segment_size_bytes = 32 << 20;
    let caches = cfg.key_cache_bytes + cfg.chunk_cache_bytes + cfg.row_cache_bytes;
    let e = Engine::open(cfg).unwrap();
    e.create_table(def()).unwrap();
    let start = rss_bytes();
    let bound = start
        + ALLOCATOR_SLACK * MEMTABLE_BACKPRESSURE_FACTOR * BUDGET_BYTES
        + caches
        + FIXED_ALLOWANCE_BYTES;
    let t0 = Instant::now();
    let mut peak = start;
    for i in 0..ROWS {
        e.apply_blocking(&[wide_row(i)]).unwrap();
        if i % 500 == 0 {
            peak = peak.max(rss_bytes());
            if std::env::var("RSS_DEBUG").is_ok() {
                eprintln!(
                    "{i} rss {} MiB memtables {} MiB",
                    rss_bytes() >> 20,
                    e.unflushed_memtable_bytes() >> 20
                );
            }
            assert!(t0.elapsed() < TIME_LIMIT, "load took over {TIME_LIMIT:?}");
        }
    }
    peak = peak.max(rss_bytes());
    let mib = |b: u64| b >> 20;
    eprintln!(
        "rss start {} MiB, peak {} MiB, bound {} MiB, in {:?}",
        mib(start),
        mib(peak),
        mib(bound),
        t0.elapsed()
    );
    assert!(
        peak <= bound,
        "peak RSS {} MiB over the bound {} MiB",
        mib(peak),
        mib(bound)
    );
    // The load really went past the budget: flushes happened.
    assert!(e.table_stats(TABLE_ID).sstable_count > 0);
}
