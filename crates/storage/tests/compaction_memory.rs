//! Compaction of a wide partition streams its rows: peak heap during the compaction stays far
//! below the partition's size. A counting allocator measures it (this file is its own test
//! binary, so the allocator sees only this test).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

mod common;
use bytes::Bytes;
use common::*;
use helenus_storage::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const ROWS: u32 = 48_000;
const VALUE_BYTES: usize = 1000;

fn write_wide(e: &Engine, ts: i64, every: u32) {
    for start in (0..ROWS).step_by(2000) {
        let mut m = mutation(b"wide");
        for i in (start..start + 2000).filter(|i| i % every == 0) {
            m.rows.push(row(
                &i.to_be_bytes(),
                vec![set(1, ts, &vec![(i % 251) as u8 ^ ts as u8; VALUE_BYTES])],
            ));
        }
        e.apply_blocking(&[m]).unwrap();
    }
    e.flush(None).unwrap();
}

#[test]
fn wide_partition_compacts_with_bounded_memory() {
    let dir = tempdir("wide-compaction");
    let mut cfg = config(&dir, CommitlogSync::Periodic { period_ms: 1000 });
    cfg.commitlog_segment_size_bytes = 16 << 20;
    let e = Engine::open(cfg).unwrap();
    let mut def = table_def(864000);
    // Keep background compaction away: the test runs the major compaction itself.
    def.options.compaction = CompactionOptions::SizeTiered {
        min_threshold: 32,
        max_threshold: 32,
    };
    e.create_table(def).unwrap();
    // ~48 MB partition; a second SSTable overwrites every third row, a range tombstone deletes
    // rows 1000..=1999, and another SSTable has a small unrelated partition.
    write_wide(&e, 1, 1);
    write_wide(&e, 2, 3);
    let mut m = mutation(b"wide");
    let bd = |v: u32| ClusteringBound {
        prefix: vec![Bytes::copy_from_slice(&v.to_be_bytes())],
        kind: BoundKind::Inclusive,
    };
    m.range_tombstones.push((
        bd(1000),
        bd(1999),
        DeletionTime {
            marked_for_delete_at_us: 3,
            local_deletion_time_s: now(),
        },
    ));
    e.apply_blocking(&[m]).unwrap();
    let mut m = mutation(b"small");
    m.rows.push(row(b"a", vec![set(1, 1, b"v")]));
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    let partition_bytes = e.table_stats(TABLE).max_partition_size_bytes as usize;
    assert!(partition_bytes > 40 << 20, "{partition_bytes}");

    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    e.compact(TABLE).unwrap();
    let peak = PEAK.load(Ordering::Relaxed) - base;
    eprintln!("partition {partition_bytes} bytes, compaction peak heap {peak} bytes");
    // Chunk memo (16 MiB) + chunk cache + blocks: well under the partition itself.
    assert!(
        peak < partition_bytes / 2,
        "peak {peak} for a {partition_bytes}-byte partition"
    );

    let st = e.table_stats(TABLE);
    assert_eq!(st.sstable_count, 1);
    let r = e.read(TABLE, &point(b"wide", now())).unwrap();
    let rows = &r.partitions[0].rows;
    assert_eq!(rows.len(), (ROWS - 1000) as usize);
    for row in rows {
        let i = u32::from_be_bytes(row.clustering[0].as_ref().try_into().unwrap());
        assert!(!(1000..=1999).contains(&i));
        let ts: u8 = if i % 3 == 0 { 2 } else { 1 };
        assert_eq!(row.cells[0].value[0], (i % 251) as u8 ^ ts, "row {i}");
        assert_eq!(row.cells[0].value.len(), VALUE_BYTES);
    }
    assert_eq!(
        e.read(TABLE, &point(b"small", now()))
            .unwrap()
            .partitions
            .len(),
        1
    );
    e.shutdown().unwrap();
}
