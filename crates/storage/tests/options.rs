//! Per-table options the engine honours: chunk compression (LZ4, zstd, Deflate, none).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

mod common;
use common::*;
use helenus_storage::*;

fn def_with(id: u8, algorithm: CompressionAlgorithm, chunk_kb: u32) -> TableDef {
    let mut d = table_def(864000);
    d.id = [id; 16];
    d.name = format!("t{id}");
    d.options.compression = CompressionOptions {
        algorithm,
        chunk_length_in_kb: chunk_kb,
    };
    d
}

fn write_rows(e: &Engine, table: TableId, keys: std::ops::Range<u32>, ts: i64) {
    for k in keys {
        let mut m = mutation(format!("pk{k}").as_bytes());
        m.table = table;
        for c in 0..5u8 {
            let v = format!("value {k} {c} {ts} {}", "x".repeat(40));
            m.rows.push(row(&[c], vec![set(1, ts, v.as_bytes())]));
        }
        e.apply_blocking(&[m]).unwrap();
    }
}

#[test]
fn each_compression_reads_back_after_flush_and_compaction() {
    let dir = tempdir("compression");
    let algs = [
        (20u8, CompressionAlgorithm::Lz4, 4),
        (21, CompressionAlgorithm::Zstd { level: 3 }, 16),
        (22, CompressionAlgorithm::Zstd { level: 19 }, 64),
        (23, CompressionAlgorithm::Deflate, 16),
        (24, CompressionAlgorithm::None, 16),
    ];
    {
        let e = open(&dir, 864000);
        for (id, alg, kb) in algs {
            e.create_table(def_with(id, alg, kb)).unwrap();
            let t = [id; 16];
            write_rows(&e, t, 0..300, 1);
            e.flush(Some(t)).unwrap();
            write_rows(&e, t, 150..400, 2);
            e.flush(Some(t)).unwrap();
            let st = e.table_stats(t);
            assert_eq!(st.sstable_count, 2);
            if alg != CompressionAlgorithm::None {
                assert!(
                    st.compression_ratio < 0.5,
                    "{alg:?}: {}",
                    st.compression_ratio
                );
            }
            e.compact(t).unwrap();
            assert_eq!(e.table_stats(t).sstable_count, 1);
        }
        e.shutdown().unwrap();
    }
    // Reopen: the readers take the algorithm from the files, not from the table options.
    let e = Engine::open(config(&dir, CommitlogSync::Batch)).unwrap();
    for (id, _, kb) in algs {
        e.create_table(def_with(id, CompressionAlgorithm::Lz4, kb))
            .unwrap();
    }
    e.replay_commitlog().unwrap();
    for (id, _, _) in algs {
        let t = [id; 16];
        let r = e.read(t, &scan_all(now())).unwrap();
        assert_eq!(r.partitions.len(), 400);
        let r = e.read(t, &point(b"pk10", now())).unwrap();
        let v = format!("value 10 0 1 {}", "x".repeat(40));
        assert_eq!(
            r.partitions[0].rows[0].cells[0].value.as_ref(),
            v.as_bytes()
        );
        let r = e.read(t, &point(b"pk200", now())).unwrap();
        let v = format!("value 200 0 2 {}", "x".repeat(40));
        assert_eq!(
            r.partitions[0].rows[0].cells[0].value.as_ref(),
            v.as_bytes()
        );
    }
    e.shutdown().unwrap();
}

#[test]
fn key_cache_counts_hits_per_sstable_lookup() {
    let dir = tempdir("keycache");
    let e = open(&dir, 864000);
    write_rows(&e, TABLE, 0..50, 1);
    e.flush(None).unwrap();
    let before = e.table_stats(TABLE);
    assert_eq!(before.key_cache_requests, 0);
    for _ in 0..3 {
        let r = e.read(TABLE, &point(b"pk7", now())).unwrap();
        assert_eq!(r.partitions.len(), 1);
    }
    let st = e.table_stats(TABLE);
    assert_eq!(st.key_cache_requests, 3);
    assert_eq!(st.key_cache_hits, 2);
    let cs = e.cache_stats();
    assert_eq!((cs.key.hits, cs.key.requests), (2, 3));
    assert!(cs.key.size_bytes > 0);
    // Compaction replaces the SSTable: its cached positions go with it.
    write_rows(&e, TABLE, 0..50, 2);
    e.flush(None).unwrap();
    e.compact(TABLE).unwrap();
    let r = e.read(TABLE, &point(b"pk7", now())).unwrap();
    let v = format!("value 7 0 2 {}", "x".repeat(40));
    assert_eq!(
        r.partitions[0].rows[0].cells[0].value.as_ref(),
        v.as_bytes()
    );
    e.shutdown().unwrap();
}

#[test]
fn row_cache_serves_repeat_reads_and_is_invalidated_by_writes() {
    let dir = tempdir("rowcache");
    let mut cfg = config(&dir, CommitlogSync::Batch);
    cfg.row_cache_bytes = 4 << 20;
    let e = Engine::open(cfg).unwrap();
    let mut d = table_def(864000);
    d.options.rows_per_partition_to_cache = 10;
    e.create_table(d).unwrap();
    write_rows(&e, TABLE, 0..5, 1);
    e.flush(None).unwrap();
    let read = |pk: &[u8]| {
        let r = e.read(TABLE, &point(pk, now())).unwrap();
        r.partitions[0].rows[0].cells[0].value.clone()
    };
    let v1 = read(b"pk1");
    assert_eq!(read(b"pk1"), v1);
    let st = e.table_stats(TABLE);
    assert_eq!((st.row_cache_hits, st.row_cache_requests), (1, 2));
    // A write to the partition invalidates the cached copy.
    let mut m = mutation(b"pk1");
    m.rows.push(row(&[0], vec![set(1, 5, b"fresh")]));
    e.apply_blocking(&[m]).unwrap();
    assert_eq!(read(b"pk1").as_ref(), b"fresh");
    assert_eq!(read(b"pk1").as_ref(), b"fresh");
    let st = e.table_stats(TABLE);
    assert_eq!((st.row_cache_hits, st.row_cache_requests), (2, 4));
    // A slice is answered from the cached whole partition.
    let q = ReadQuery {
        columns: None,
        slices: vec![(
            ClusteringBound {
                prefix: vec![b(&[2])],
                kind: BoundKind::Inclusive,
            },
            ClusteringBound {
                prefix: vec![b(&[3])],
                kind: BoundKind::Inclusive,
            },
        )],
        ..point(b"pk1", now())
    };
    let r = e.read(TABLE, &q).unwrap();
    assert_eq!(r.partitions[0].rows.len(), 2);
    assert_eq!(e.table_stats(TABLE).row_cache_hits, 3);
    // Partitions over rows_per_partition are not cached.
    let mut m = mutation(b"wide");
    for c in 0..20u8 {
        m.rows.push(row(&[c], vec![set(1, 1, b"v")]));
    }
    e.apply_blocking(&[m]).unwrap();
    read(b"wide");
    read(b"wide");
    let st = e.table_stats(TABLE);
    assert_eq!((st.row_cache_hits, st.row_cache_requests), (3, 7));
    e.shutdown().unwrap();
}
