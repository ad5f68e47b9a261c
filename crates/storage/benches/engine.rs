//! Storage engine benchmark (std::time, JSON on stdout). Default run is short (~100k rows);
//! `HELENUS_BENCH_ROWS=1000000 cargo bench -p helenus-storage --bench engine` gives the 1M-row
//! on-disk figure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

use bytes::Bytes;
use helenus_storage::*;
use std::sync::Arc;
use std::time::Instant;

struct Bytewise;
impl ValueComparator for Bytewise {
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        a.cmp(b)
    }
}

fn token(k: u64) -> i64 {
    k.wrapping_mul(0x9E37_79B9_7F4A_7C15) as i64
}

fn standard1(k: u64) -> Mutation {
    let key = Bytes::from(format!("{k:010}").into_bytes());
    let cells = (1..=5u32)
        .map(|c| CellUpdate {
            column: c,
            path: None,
            timestamp_us: 1,
            op: CellOp::Set {
                value: Bytes::from(vec![(k as u8).wrapping_add(c as u8); 34]),
                ttl_s: 0,
            },
        })
        .collect();
    Mutation {
        table: [1; 16],
        key,
        token: token(k),
        partition_deletion: None,
        range_tombstones: Vec::new(),
        static_row: None,
        rows: vec![RowUpdate {
            clustering: Vec::new(),
            liveness: Some(Liveness {
                timestamp_us: 1,
                ttl_s: 0,
                expires_at_s: 0,
            }),
            deletion: None,
            cells,
        }],
    }
}

fn config(dir: &std::path::Path) -> StorageConfig {
    StorageConfig {
        data_dir: dir.join("data"),
        commitlog_dir: dir.join("commitlog"),
        commitlog_sync: CommitlogSync::Periodic { period_ms: 1000 },
        commitlog_segment_size_bytes: 32 << 20,
        memtable_space_bytes: 1 << 30,
        memtable_cleanup_threshold: 1.0,
        key_cache_bytes: 16 << 20,
        chunk_cache_bytes: 64 << 20,
        row_cache_bytes: 0,
        concurrent_compactors: 1,
        compaction_throughput_mib_per_s: 0,
        flush_throughput_mib_per_s: 0,
        parallel_major_compaction_min_bytes:
            helenus_storage::DEFAULT_PARALLEL_MAJOR_COMPACTION_MIN_BYTES,
        clock: helenus_types::SystemClock::shared(),
    }
}

fn tables(e: &Engine) {
    let cols = (1..=5)
        .map(|id| ColumnDef {
            id,
            is_static: false,
            multi_cell: None,
            is_counter: false,
        })
        .collect();
    let opts = TableOptions {
        compaction: CompactionOptions::SizeTiered {
            min_threshold: 1000,
            max_threshold: 1000,
        },
        ..TableOptions::default()
    };
    e.create_table(TableDef {
        id: [1; 16],
        keyspace: "b".into(),
        name: "standard1".into(),
        clustering: vec![],
        columns: cols,
        options: opts.clone(),
    })
    .unwrap();
    e.create_table(TableDef {
        id: [2; 16],
        keyspace: "b".into(),
        name: "wide".into(),
        clustering: vec![ClusteringColumn {
            cmp: Arc::new(Bytewise),
            descending: false,
        }],
        columns: vec![ColumnDef {
            id: 1,
            is_static: false,
            multi_cell: None,
            is_counter: false,
        }],
        options: opts,
    })
    .unwrap();
}

fn dir_bytes(d: &std::path::Path) -> u64 {
    let mut n = 0;
    if let Ok(rd) = std::fs::read_dir(d) {
        for e in rd.flatten() {
            let p = e.path();
            n += if p.is_dir() {
                dir_bytes(&p)
            } else {
                std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0)
            };
        }
    }
    n
}

/// Rows of a paged read of all of `table` (or of partition `single`), 5,000 rows a page,
/// resuming after the last partition (and row) of the page before, as the server pages.
fn paged_scan(e: &Engine, table: [u8; 16], single: Option<&'static [u8]>) -> u64 {
    const PAGE: usize = 5000;
    let mut total = 0u64;
    let mut after: Option<(i64, Bytes, Vec<Bytes>)> = None;
    loop {
        let partitions = match (single, &after) {
            (Some(k), _) => PartitionRange::Single {
                key: Bytes::from_static(k),
                token: 0,
            },
            (None, None) => PartitionRange::Range {
                start: PartitionBound::Unbounded,
                end: PartitionBound::Unbounded,
            },
            (None, Some((token, key, _))) => PartitionRange::Range {
                start: PartitionBound::Key {
                    token: *token,
                    key: key.clone(),
                    inclusive: false,
                },
                end: PartitionBound::Unbounded,
            },
        };
        let q = ReadQuery {
            columns: Some(vec![1].into()),
            partitions,
            row_limit: Some(PAGE),
            resume_after: single.and(after.as_ref().map(|(_, _, ck)| ck.clone())),
            ..point(0)
        };
        let r = e.read(table, &q).unwrap();
        let n: usize = r.partitions.iter().map(|p| p.rows.len().max(1)).sum();
        total += n as u64;
        let last = r.partitions.last().map(|p| {
            (
                p.token,
                p.key.clone(),
                p.rows.last().map(|r| r.clustering.clone()),
            )
        });
        match last {
            Some((token, key, ck)) if n >= PAGE => {
                after = Some((token, key, ck.unwrap_or_default()))
            }
            _ => return total,
        }
    }
}

fn point(k: u64) -> ReadQuery {
    ReadQuery {
        columns: None,
        partitions: PartitionRange::Single {
            key: Bytes::from(format!("{k:010}").into_bytes()),
            token: token(k),
        },
        slices: vec![],
        reversed: false,
        row_limit: None,
        per_partition_limit: None,
        partition_limit: None,
        now_s: 0,
        resume_after: None,
    }
}

fn main() {
    let rows: u64 = std::env::var("HELENUS_BENCH_ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let dir = std::env::temp_dir().join(format!("helenus-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let e = Engine::open(config(&dir)).unwrap();
    tables(&e);

    let t = Instant::now();
    let batch = 100u64;
    for start in (0..rows).step_by(batch as usize) {
        let ms: Vec<Mutation> = (start..(start + batch).min(rows)).map(standard1).collect();
        e.apply_blocking(&ms).unwrap();
    }
    let write_s = t.elapsed().as_secs_f64();

    let mem_bytes = e.table_stats([1; 16]).memtable_data_size_bytes;
    let t = Instant::now();
    e.flush(None).unwrap();
    let flush_s = t.elapsed().as_secs_f64();

    // In-memory overwrites one write at a time, as a server applies an in-memory workload's
    // requests: every write lands on a partition the memtable already holds.
    let hot = rows.min(50_000);
    for k in 0..hot {
        e.apply_blocking(&[standard1(k)]).unwrap();
    }
    let overwrites = hot * 4;
    let t = Instant::now();
    for i in 0..overwrites {
        e.apply_blocking(&[standard1((i * 7919) % hot)]).unwrap();
    }
    let overwrite_s = t.elapsed().as_secs_f64();
    e.flush(None).unwrap();

    // Three more overlapping generations (overwrites), then a major compaction.
    for round in 0..3u64 {
        for start in (0..rows / 4).step_by(batch as usize) {
            let ms: Vec<Mutation> = (start..(start + batch).min(rows / 4))
                .map(|k| standard1(k * 4 + round))
                .collect();
            e.apply_blocking(&ms).unwrap();
        }
        e.flush(None).unwrap();
    }
    let t = Instant::now();
    let cs = e.compact([1; 16]).unwrap();
    let compact_s = t.elapsed().as_secs_f64();
    let disk = e.table_stats([1; 16]).live_disk_space_bytes;
    e.shutdown().unwrap();
    drop(e);

    let e = Engine::open(config(&dir)).unwrap();
    tables(&e);
    e.replay_commitlog().unwrap();
    let reads = 20_000u64.min(rows);
    let t = Instant::now();
    for i in 0..reads {
        let r = e.read([1; 16], &point((i * 7919) % rows)).unwrap();
        assert_eq!(r.partitions.len(), 1);
    }
    let cold_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for i in 0..reads {
        e.read([1; 16], &point((i * 7919) % rows)).unwrap();
    }
    let warm_s = t.elapsed().as_secs_f64();

    // Wide partition: 200k rows of 100 bytes, read 100-row slices.
    let wide_rows = 200_000u32;
    for start in (0..wide_rows).step_by(1000) {
        let rows_v = (start..start + 1000)
            .map(|i| RowUpdate {
                clustering: vec![Bytes::copy_from_slice(&i.to_be_bytes())],
                liveness: None,
                deletion: None,
                cells: vec![CellUpdate {
                    column: 1,
                    path: None,
                    timestamp_us: 1,
                    op: CellOp::Set {
                        value: Bytes::from(vec![1u8; 100]),
                        ttl_s: 0,
                    },
                }],
            })
            .collect();
        let m = Mutation {
            table: [2; 16],
            key: Bytes::from_static(b"wide"),
            token: 0,
            partition_deletion: None,
            range_tombstones: vec![],
            static_row: None,
            rows: rows_v,
        };
        e.apply_blocking(&[m]).unwrap();
    }
    e.flush(None).unwrap();
    let slices = 200u32;
    let t = Instant::now();
    for i in 0..slices {
        let lo = (i * 997) % (wide_rows - 100);
        let b = |v: u32| ClusteringBound {
            prefix: vec![Bytes::copy_from_slice(&v.to_be_bytes())],
            kind: BoundKind::Inclusive,
        };
        let q = ReadQuery {
            partitions: PartitionRange::Single {
                key: Bytes::from_static(b"wide"),
                token: 0,
            },
            slices: vec![(b(lo), b(lo + 99))],
            ..point(0)
        };
        let r = e.read([2; 16], &q).unwrap();
        assert_eq!(r.partitions[0].rows.len(), 100);
    }
    let wide_s = t.elapsed().as_secs_f64();

    // Paged full scans as the server pages them (5,000 rows a read, one column asked for):
    // the one-row partitions of standard1, then the 200k-row wide partition.
    let t = Instant::now();
    let scanned = paged_scan(&e, [1; 16], None);
    let scan_s = t.elapsed().as_secs_f64();
    assert_eq!(scanned, rows);
    let t = Instant::now();
    let wide_scanned = paged_scan(&e, [2; 16], Some(b"wide"));
    let wide_scan_s = t.elapsed().as_secs_f64();
    assert_eq!(wide_scanned, u64::from(wide_rows));
    e.shutdown().unwrap();

    let row_bytes = (10 + 5 * 34) as f64;
    println!(
        "{{\"rows\":{rows},\"write_rows_per_s\":{:.0},\"write_mb_per_s\":{:.1},\"overwrite_ns\":{:.0},\"flush_mb_per_s\":{:.1},\"compaction_mb_per_s\":{:.1},\"compaction_input_sstables\":{},\"point_read_cold_per_s\":{:.0},\"point_read_warm_per_s\":{:.0},\"wide_slice_reads_per_s\":{:.1},\"wide_partition_rows\":{wide_rows},\"scan_rows_per_s\":{:.0},\"wide_scan_rows_per_s\":{:.0},\"on_disk_bytes\":{disk},\"on_disk_bytes_per_row\":{:.1},\"data_dir_bytes\":{}}}",
        rows as f64 / write_s,
        rows as f64 * row_bytes / write_s / 1e6,
        overwrite_s * 1e9 / overwrites as f64,
        mem_bytes as f64 / flush_s / 1e6,
        cs.bytes_read as f64 / compact_s / 1e6,
        cs.input_sstables,
        reads as f64 / cold_s,
        reads as f64 / warm_s,
        slices as f64 / wide_s,
        scanned as f64 / scan_s,
        wide_scanned as f64 / wide_scan_s,
        disk as f64 / rows as f64,
        dir_bytes(&dir.join("data")),
    );
    let _ = std::fs::remove_dir_all(&dir);
}
