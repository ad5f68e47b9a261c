//! The tombstones a read scans (for `tombstone_warn_threshold` / `tombstone_failure_threshold`):
//! counted across memtables and SSTables, per kind, and a read past the failure threshold fails
//! with `TombstoneOverwhelming` instead of returning.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

mod common;

use common::*;
use helenus_storage::*;

const TS: i64 = 1_000_000;

fn deletion(ts: i64) -> DeletionTime {
    DeletionTime {
        marked_for_delete_at_us: ts,
        local_deletion_time_s: now(),
    }
}

fn deleted_row(ck: &[u8], ts: i64) -> RowUpdate {
    RowUpdate {
        deletion: Some(deletion(ts)),
        ..row(ck, Vec::new())
    }
}

fn cell_tombstone(col: ColumnId, ts: i64) -> CellUpdate {
    CellUpdate {
        column: col,
        path: None,
        timestamp_us: ts,
        op: CellOp::Delete,
    }
}

fn range_tombstone(
    from: &[u8],
    to: &[u8],
    ts: i64,
) -> (ClusteringBound, ClusteringBound, DeletionTime) {
    let bound = |v: &[u8]| ClusteringBound {
        prefix: vec![b(v)],
        kind: BoundKind::Inclusive,
    };
    (bound(from), bound(to), deletion(ts))
}

/// Ten live rows, then (flushed to an SSTable) five row deletions, then in the memtable three
/// rows with a cell tombstone each and one range tombstone over rows of the first batch.
fn load(e: &Engine) {
    let mut m = mutation(b"p");
    for i in 0..10u8 {
        m.rows.push(row(&[i], vec![set(1, TS, b"v")]));
    }
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    let mut m = mutation(b"p");
    for i in 20..25u8 {
        m.rows.push(deleted_row(&[i], TS));
    }
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    let mut m = mutation(b"p");
    for i in 30..33u8 {
        m.rows
            .push(row(&[i], vec![set(1, TS, b"v"), cell_tombstone(2, TS)]));
    }
    // Shadows rows 0..=3: they vanish from the result and are not counted themselves.
    m.range_tombstones.push(range_tombstone(&[0], &[3], TS + 1));
    e.apply_blocking(&[m]).unwrap();
}

#[test]
fn read_counts_row_deletions_cell_tombstones_and_range_markers_across_sources() {
    let dir = tempdir("tombstone-scan-counts");
    let e = open(&dir, 864_000);
    load(&e);
    let r = e.read(TABLE, &point(b"p", now())).unwrap();
    let rows: usize = r.partitions.iter().map(|p| p.rows.len()).sum();
    assert_eq!(rows, 6 + 3);
    // 5 row deletions + 3 cell tombstones + 2 markers of the range tombstone.
    assert_eq!(
        r.stats,
        ReadStats {
            live_rows: 9,
            tombstones_scanned: 5 + 3 + 2,
        }
    );
    let s = e.table_stats(TABLE);
    assert_eq!(s.tombstones_scanned_by_reads, 10);
    assert_eq!(s.tombstones_scanned_max, 10);
    assert_eq!(s.tombstone_failures, 0);
}

#[test]
fn range_scan_counts_tombstones_of_every_partition() {
    let dir = tempdir("tombstone-scan-range");
    let e = open(&dir, 864_000);
    load(&e);
    let mut m = mutation(b"q");
    m.rows.push(deleted_row(b"x", TS));
    m.rows.push(row(b"y", vec![set(1, TS, b"v")]));
    e.apply_blocking(&[m]).unwrap();
    let r = e.read(TABLE, &scan_all(now())).unwrap();
    assert_eq!(r.stats.tombstones_scanned, 10 + 1);
    assert_eq!(r.stats.live_rows, 9 + 1);
}

#[test]
fn read_stops_at_the_row_limit_and_counts_only_what_it_visited() {
    let dir = tempdir("tombstone-scan-limit");
    let e = open(&dir, 864_000);
    load(&e);
    let q = ReadQuery {
        row_limit: Some(2),
        ..point(b"p", now())
    };
    let r = e.read(TABLE, &q).unwrap();
    // Rows 4 and 5 are the first live ones; the range tombstone's markers come before them.
    assert_eq!(r.stats.live_rows, 2);
    assert_eq!(r.stats.tombstones_scanned, 2);
}

#[test]
fn expired_cells_count_as_tombstones() {
    let dir = tempdir("tombstone-scan-ttl");
    let e = open(&dir, 864_000);
    let mut m = mutation(b"p");
    let mut c = set(1, TS, b"v");
    c.op = CellOp::Set {
        value: b(b"v"),
        ttl_s: 1,
    };
    m.rows.push(row(b"a", vec![c]));
    e.apply_blocking(&[m]).unwrap();
    let later = now() + 10;
    let r = e.read(TABLE, &point(b"p", later)).unwrap();
    assert!(r.partitions.is_empty());
    assert_eq!(r.stats.tombstones_scanned, 1);
}

#[test]
fn read_past_the_failure_threshold_fails_typed() {
    let dir = tempdir("tombstone-scan-fail");
    let e = open(&dir, 864_000);
    let mut m = mutation(b"p");
    for i in 0..3000u16 {
        m.rows.push(deleted_row(&i.to_be_bytes(), TS));
    }
    m.rows.push(row(&[0xff, 0xff], vec![set(1, TS, b"v")]));
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    // Under the threshold the read completes and reports what it scanned.
    let r = e.read_bounded(TABLE, &point(b"p", now()), 3000).unwrap();
    assert_eq!(r.stats.tombstones_scanned, 3000);
    assert_eq!(r.stats.live_rows, 1);
    // Past it, the read is abandoned as soon as the count passes it (at threshold + 1).
    match e.read_bounded(TABLE, &point(b"p", now()), 2000) {
        Err(StorageError::TombstoneOverwhelming {
            tombstones_scanned,
            live_rows,
            failure_threshold,
        }) => {
            assert_eq!(tombstones_scanned, 2001);
            assert_eq!(live_rows, 0);
            assert_eq!(failure_threshold, 2000);
        }
        other => panic!("expected TombstoneOverwhelming, got {other:?}"),
    }
    assert_eq!(e.table_stats(TABLE).tombstone_failures, 1);
    // A paged read (row limit) over the same tombstones fails the same way.
    let q = ReadQuery {
        row_limit: Some(100),
        ..point(b"p", now())
    };
    assert!(matches!(
        e.read_bounded(TABLE, &q, 2000),
        Err(StorageError::TombstoneOverwhelming { .. })
    ));
}

#[test]
fn unlimited_read_over_many_tombstones_fails_before_merging_the_whole_partition() {
    let dir = tempdir("tombstone-scan-early");
    let e = open(&dir, 864_000);
    let mut m = mutation(b"p");
    for i in 0..20_000u16 {
        m.rows.push(deleted_row(&i.to_be_bytes(), TS));
    }
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    let before = e.table_stats(TABLE).rows_merged_by_reads;
    let r = e.read_bounded(TABLE, &point(b"p", now()), 1000);
    assert!(matches!(r, Err(StorageError::TombstoneOverwhelming { .. })));
    let merged = e.table_stats(TABLE).rows_merged_by_reads - before;
    assert!(
        merged < 2_000,
        "merged {merged} rows of 20000 before failing"
    );
}
