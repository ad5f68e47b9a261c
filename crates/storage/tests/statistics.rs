//! SSTable statistics at work: clustering bounds skip SSTables on slices, and the droppable
//! tombstone estimate drives single-SSTable tombstone compaction.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

mod common;
use common::*;
use helenus_storage::*;

fn bound(v: &[u8]) -> ClusteringBound {
    ClusteringBound {
        prefix: vec![b(v)],
        kind: BoundKind::Inclusive,
    }
}

fn slice(e: &Engine, lo: &[u8], hi: &[u8]) -> Vec<Vec<u8>> {
    let q = ReadQuery {
        slices: vec![(bound(lo), bound(hi))],
        ..point(b"p", now())
    };
    let r = e.read(TABLE, &q).unwrap();
    r.partitions
        .iter()
        .flat_map(|p| p.rows.iter().map(|r| r.clustering[0].to_vec()))
        .collect()
}

#[test]
fn slices_skip_sstables_outside_their_clustering_bounds() {
    let dir = tempdir("ckbounds");
    let e = open(&dir, 864000);
    for part in [[b"a", b"b", b"c"], [b"x", b"y", b"z"]] {
        let mut m = mutation(b"p");
        for ck in part {
            m.rows.push(row(ck, vec![set(1, 1, b"v")]));
        }
        e.apply_blocking(&[m]).unwrap();
        e.flush(None).unwrap();
    }
    assert_eq!(
        slice(&e, b"x", b"z"),
        vec![b"x".to_vec(), b"y".to_vec(), b"z".to_vec()]
    );
    assert_eq!(e.table_stats(TABLE).sstables_per_read_max, 1);
    assert_eq!(slice(&e, b"a", b"z").len(), 6);
    assert_eq!(e.table_stats(TABLE).sstables_per_read_max, 2);
    e.shutdown().unwrap();
}

#[test]
fn sstable_with_a_range_tombstone_is_not_skipped_by_its_row_bounds() {
    let dir = tempdir("ckbounds-rt");
    let e = open(&dir, 864000);
    let mut m = mutation(b"p");
    for ck in [b"x", b"y"] {
        m.rows.push(row(ck, vec![set(1, 1, b"old")]));
    }
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    // Second SSTable: rows a..b only, plus a range tombstone over x..y (newer).
    let mut m = mutation(b"p");
    m.rows.push(row(b"a", vec![set(1, 2, b"new")]));
    m.range_tombstones.push((
        bound(b"x"),
        bound(b"y"),
        DeletionTime {
            marked_for_delete_at_us: 2,
            local_deletion_time_s: now(),
        },
    ));
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    assert!(slice(&e, b"x", b"y").is_empty());
    e.shutdown().unwrap();
}

#[test]
fn statistics_record_clustering_bounds_and_ttl_histogram() {
    let dir = tempdir("statsdump");
    let e = open(&dir, 864000);
    let mut m = mutation(b"p");
    m.rows.push(row(b"m", vec![set(1, 1, b"v")]));
    let mut ttl = set(2, 1, b"t");
    ttl.op = CellOp::Set {
        value: b(b"t"),
        ttl_s: 3600,
    };
    m.rows.push(row(b"q", vec![ttl]));
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    let data = walk(&dir)
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with("Data.db") && p.to_string_lossy().contains("/t-"))
        .unwrap();
    let mut out = Vec::new();
    dump_sstable(&data, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("min_clustering=[6d] max_clustering=[71]"),
        "{text}"
    );
    assert!(text.contains("ttl_histogram_s 3600:1"), "{text}");
    assert!(
        text.contains("estimated_droppable_tombstones gc_grace=0:0.000"),
        "{text}"
    );
    e.shutdown().unwrap();
}

fn walk(d: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn write_and_delete(e: &Engine, n: u8, deleted: u8) {
    for i in 0..n {
        let mut m = mutation(&[b'k', i]);
        m.rows.push(row(b"a", vec![set(1, 1, b"v")]));
        e.apply_blocking(&[m]).unwrap();
    }
    // One deletion time for all: tombstones written across a second boundary become droppable
    // a second apart, and a background compaction between the two purged some and left the
    // rest under the droppable ratio for good (the test then saw 3 tombstones left).
    let deleted_at = now();
    for i in 0..deleted {
        let mut m = mutation(&[b'k', i]);
        m.partition_deletion = Some(DeletionTime {
            marked_for_delete_at_us: 2,
            local_deletion_time_s: deleted_at,
        });
        e.apply_blocking(&[m]).unwrap();
    }
}

#[test]
fn sstable_mostly_droppable_tombstones_is_compacted_alone() {
    let dir = tempdir("tombstone-compaction");
    let e = open(&dir, 0);
    write_and_delete(&e, 100, 80);
    e.flush(None).unwrap();
    // Tombstones become droppable once their deletion time is before now - gc_grace (0 s).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    // The flush also queued a background compaction, which may get there first.
    let mut purged = 0;
    for _ in 0..50 {
        if let Some(st) = e.run_background_compaction(TABLE).unwrap() {
            assert_eq!(st.input_sstables, 1);
            purged += st.tombstones_purged;
        }
        if e.table_stats(TABLE).tombstone_count == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(purged == 80 || purged == 0, "{purged}");
    assert_eq!(e.table_stats(TABLE).tombstone_count, 0);
    assert_eq!(e.table_stats(TABLE).sstable_count, 1);
    assert_eq!(
        e.read(TABLE, &scan_all(now())).unwrap().partitions.len(),
        20
    );
    // Nothing droppable is left: the strategy has nothing more to do.
    assert!(e.run_background_compaction(TABLE).unwrap().is_none());
    e.shutdown().unwrap();
}

#[test]
fn tombstone_compaction_waits_for_overlapping_older_data_unless_unchecked() {
    let dir = tempdir("tombstone-compaction-checked");
    let e = open(&dir, 0);
    write_and_delete(&e, 100, 0);
    e.flush(None).unwrap();
    write_and_delete(&e, 0, 80);
    e.flush(None).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    // The tombstones shadow data in the older SSTable: checked mode leaves them alone.
    assert!(e.run_background_compaction(TABLE).unwrap().is_none());
    let mut def = table_def(0);
    def.options.unchecked_tombstone_compaction = true;
    e.alter_table(def).unwrap();
    // Unchecked runs it, but purge still keeps tombstones that shadow older data; the output
    // is remembered so it is not rewritten again.
    let st = e.run_background_compaction(TABLE).unwrap().unwrap();
    assert_eq!(st.tombstones_purged, 0);
    assert!(e.run_background_compaction(TABLE).unwrap().is_none());
    assert_eq!(
        e.read(TABLE, &scan_all(now())).unwrap().partitions.len(),
        20
    );
    e.shutdown().unwrap();
}

/// `nodetool tablehistograms`'s columns come from histograms the read and write paths and the
/// SSTable writers fill: a table written, flushed and read reports non-zero latencies, SSTables
/// per read, partition sizes and cells per partition.
#[test]
fn table_histograms_record_latencies_sizes_and_cells() {
    let dir = tempdir("tablehistograms");
    let e = open(&dir, 864000);
    assert_eq!(e.table_stats(TABLE).histograms, TableHistograms::default());
    // Ten partitions of 20 rows with two cells each (plus a row marker-free write: 40 cells),
    // in two SSTables.
    for round in 0..2u8 {
        for p in 0..5u8 {
            let mut m = mutation(&[b'p', round, p]);
            for ck in 0..20u8 {
                m.rows
                    .push(row(&[ck], vec![set(1, 1, b"value"), set(2, 1, b"other")]));
            }
            e.apply_blocking(&[m]).unwrap();
        }
        e.flush(None).unwrap();
    }
    for p in 0..5u8 {
        e.read(TABLE, &point(&[b'p', 0, p], now())).unwrap();
    }
    let h = e.table_stats(TABLE).histograms;
    assert!(h.write_latency_ns.p50 > 0 && h.write_latency_ns.max >= h.write_latency_ns.p50);
    assert!(h.read_latency_ns.p50 > 0 && h.read_latency_ns.max >= h.read_latency_ns.p50);
    // Each read found its partition in one SSTable.
    assert_eq!((h.sstables_per_read.min, h.sstables_per_read.max), (1, 1));
    // 40 cells per partition: the bucket bound at or above 40 (Cassandra's 42).
    assert_eq!((h.cell_count.min, h.cell_count.max), (42, 42));
    assert!(h.partition_size_bytes.p50 > 40 * 5);
    // The histograms survive a restart with the SSTables' statistics.
    e.shutdown().unwrap();
    drop(e);
    let e = open(&dir, 864000);
    assert_eq!(e.table_stats(TABLE).histograms.cell_count.p99, 42);
    e.shutdown().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
