//! Column scans of a columnar table (issue 15): the batches `Engine::scan_columns` gives hold
//! exactly the live rows a row read returns, whatever mix of memtables, overlapping SSTables,
//! deletions and TTLs the table has; and once compacted they come from the chunks, with row
//! groups skipped by their statistics.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

mod common;
use common::*;
use helenus_storage::columnar::{ColumnSpec, ColumnValues, CompareOp, ValueType};
use helenus_storage::*;
use std::collections::BTreeMap;

const T: TableId = [21; 16];
/// int, double, text.
const MONTH: ColumnId = 1;
const TONE: ColumnId = 2;
const CODE: ColumnId = 3;

fn spec(id: ColumnId) -> ColumnSpec {
    let value_type = match id {
        MONTH => ValueType::Int,
        TONE => ValueType::Double,
        _ => ValueType::Text,
    };
    ColumnSpec { id, value_type }
}

fn def() -> TableDef {
    TableDef {
        id: T,
        keyspace: "ks".into(),
        name: "events".into(),
        clustering: Vec::new(),
        columns: [MONTH, TONE, CODE]
            .into_iter()
            .map(|id| ColumnDef {
                id,
                is_static: false,
                multi_cell: None,
                is_counter: false,
            })
            .collect(),
        options: TableOptions {
            layout: DataLayout::Columnar(ColumnarTypes {
                // Keys are 8-byte big-endian numbers: a bigint key stream, stored as integers.
                partition_key: ValueType::BigInt,
                clustering: Vec::new(),
                columns: [MONTH, TONE, CODE].into_iter().map(spec).collect(),
            }),
            ..TableOptions::default()
        },
    }
}

fn key(i: u64) -> Vec<u8> {
    i.to_be_bytes().to_vec()
}

const CODES: [&str; 4] = ["USA", "FRA", "ALB", "CHN"];

fn insert(i: u64, ts: i64, ttl_s: u32, month: i32, tone: f64, code: &str) -> Mutation {
    let k = key(i);
    let cell = |column, value: Vec<u8>| CellUpdate {
        column,
        path: None,
        timestamp_us: ts,
        op: CellOp::Set {
            value: value.into(),
            ttl_s,
        },
    };
    Mutation {
        table: T,
        key: b(&k),
        token: token(&k),
        partition_deletion: None,
        range_tombstones: Vec::new(),
        static_row: None,
        rows: vec![RowUpdate {
            clustering: Vec::new(),
            liveness: Some(Liveness {
                timestamp_us: ts,
                ttl_s,
                expires_at_s: if ttl_s > 0 {
                    now() + i64::from(ttl_s)
                } else {
                    0
                },
            }),
            deletion: None,
            cells: vec![
                cell(MONTH, month.to_be_bytes().to_vec()),
                cell(TONE, tone.to_be_bytes().to_vec()),
                cell(CODE, code.as_bytes().to_vec()),
            ],
        }],
    }
}

fn delete(i: u64, ts: i64) -> Mutation {
    let k = key(i);
    Mutation {
        table: T,
        key: b(&k),
        token: token(&k),
        partition_deletion: Some(DeletionTime {
            marked_for_delete_at_us: ts,
            local_deletion_time_s: 0,
        }),
        range_tombstones: Vec::new(),
        static_row: None,
        rows: Vec::new(),
    }
}

/// What a query reads: (rows, sum of MONTH, sum of TONE, rows with CODE = 'ALB'), over rows
/// with MONTH >= `min_month`, in tokens `range`.
type Totals = (u64, i64, f64, u64);

/// A scan of `columns` over rows with MONTH >= `min_month` in tokens `range`.
fn month_scan(
    columns: Vec<ColumnSpec>,
    min_month: i32,
    range: (PartitionBound, PartitionBound),
    now_s: i64,
) -> ColumnScan {
    ColumnScan {
        start: range.0,
        end: range.1,
        columns,
        restrictions: vec![ColumnRestriction {
            column: spec(MONTH),
            op: CompareOp::Ge,
            value: min_month.to_be_bytes().to_vec(),
        }],
        now_s,
        tombstone_failure_threshold: u64::MAX,
        group_runs: None,
        wire: None,
    }
}

fn scan(
    e: &Engine,
    min_month: i32,
    range: (PartitionBound, PartitionBound),
    now_s: i64,
) -> (Totals, ColumnScanStats) {
    let s = month_scan(
        vec![spec(MONTH), spec(TONE), spec(CODE)],
        min_month,
        range,
        now_s,
    );
    let mut t: Totals = (0, 0, 0.0, 0);
    let stats = e
        .scan_columns(T, &s, &mut |batch| {
            for i in 0..batch.rows {
                if !batch.is_selected(i) {
                    continue;
                }
                t.0 += 1;
                let (m, tone, code) = (&batch.columns[0], &batch.columns[1], &batch.columns[2]);
                t.1 += m.int(i).unwrap_or(0);
                if let ColumnValues::Float64(v) = &tone.values {
                    if tone.is_valid(i) {
                        t.2 += v[i];
                    }
                }
                if let ColumnValues::Bytes(v) = &code.values {
                    if code.is_valid(i) && v.get(i) == b"ALB" {
                        t.3 += 1;
                    }
                }
            }
            Ok(())
        })
        .unwrap();
    (t, stats)
}

/// The same totals from a row read.
fn expected(
    e: &Engine,
    min_month: i32,
    range: (PartitionBound, PartitionBound),
    now_s: i64,
) -> Totals {
    let q = ReadQuery {
        partitions: PartitionRange::Range {
            start: range.0,
            end: range.1,
        },
        ..scan_all(now_s)
    };
    let r = e.read(T, &q).unwrap();
    let mut t: Totals = (0, 0, 0.0, 0);
    for row in r.partitions.iter().flat_map(|p| p.rows.iter()) {
        let cell = |c| {
            row.cells
                .iter()
                .find(|x| x.column == c)
                .map(|x| x.value.clone())
        };
        let Some(m) = cell(MONTH).map(|v| i32::from_be_bytes(v[..].try_into().unwrap())) else {
            continue;
        };
        if m < min_month {
            continue;
        }
        t.0 += 1;
        t.1 += i64::from(m);
        t.2 += cell(TONE).map_or(0.0, |v| f64::from_be_bytes(v[..].try_into().unwrap()));
        t.3 += u64::from(cell(CODE).is_some_and(|v| v[..] == *b"ALB"));
    }
    t
}

/// Rows with MONTH >= `min_month` per partition key, from a column scan's partition runs
/// (which must tile each batch) and from a row read.
fn rows_per_partition(
    e: &Engine,
    min_month: i32,
    range: (PartitionBound, PartitionBound),
    now_s: i64,
) -> (BTreeMap<Vec<u8>, u64>, BTreeMap<Vec<u8>, u64>) {
    let s = ColumnScan {
        group_runs: Some(0),
        wire: None,
        ..month_scan(vec![spec(MONTH)], min_month, range.clone(), now_s)
    };
    let mut got = BTreeMap::new();
    e.scan_columns(T, &s, &mut |batch| {
        let mut next = 0;
        for run in &batch.partitions {
            assert_eq!(run.start, next, "runs tile the batch");
            assert!(run.end > run.start);
            assert_eq!(run.token, token(&run.key));
            next = run.end;
            let n = (run.start..run.end)
                .filter(|i| batch.is_selected(*i))
                .count() as u64;
            if n > 0 {
                *got.entry(run.key.to_vec()).or_insert(0) += n;
            }
        }
        assert_eq!(next, batch.rows, "runs cover the batch");
        Ok(())
    })
    .unwrap();
    let q = ReadQuery {
        partitions: PartitionRange::Range {
            start: range.0,
            end: range.1,
        },
        ..scan_all(now_s)
    };
    let mut want = BTreeMap::new();
    for p in e.read(T, &q).unwrap().partitions {
        let n = p
            .rows
            .iter()
            .filter(|row| {
                row.cells.iter().any(|c| {
                    c.column == MONTH
                        && i32::from_be_bytes(c.value[..].try_into().unwrap()) >= min_month
                })
            })
            .count() as u64;
        if n > 0 {
            want.insert(p.key.to_vec(), n);
        }
    }
    (got, want)
}

fn close(a: Totals, b: Totals) -> bool {
    a.0 == b.0 && a.1 == b.1 && a.3 == b.3 && (a.2 - b.2).abs() <= 1e-6 * a.2.abs().max(1.0)
}

fn all() -> (PartitionBound, PartitionBound) {
    (PartitionBound::Unbounded, PartitionBound::Unbounded)
}

fn tokens(lo: i64, hi: i64) -> (PartitionBound, PartitionBound) {
    (
        PartitionBound::Token {
            token: lo,
            inclusive: false,
        },
        PartitionBound::Token {
            token: hi,
            inclusive: true,
        },
    )
}

#[test]
fn column_scans_match_row_reads_under_random_writes_deletes_ttls_and_compactions() {
    for seed in 1..=4u64 {
        let dir = tempdir("colscan");
        let e = open_with(&dir, def());
        let mut r = Rng(seed.wrapping_mul(0x9E37_79B9) | 1);
        let mut ts = 1_000_000i64;
        for step in 0..12 {
            for _ in 0..(200 + r.below(400)) {
                ts += 1;
                let i = r.below(1500);
                let m = match r.below(10) {
                    0 => delete(i, ts),
                    1 => insert(i, ts, 1, 0, 0.0, "TTL"),
                    _ => {
                        let month = 197_901 + r.below(72) as i32;
                        // Seeds 3 and 4 fix the code by the month, so compacted row groups
                        // store it as a mapping from the month (derived columns).
                        let code = match seed > 2 {
                            true => CODES[(month % 4) as usize],
                            false => CODES[r.below(4) as usize],
                        };
                        insert(i, ts, 0, month, r.below(2000) as f64 / 100.0 - 10.0, code)
                    }
                };
                e.apply_blocking(&[m]).unwrap();
            }
            match r.below(4) {
                0 => {}
                1 => e.flush(None).unwrap(),
                _ => {
                    e.flush(None).unwrap();
                    if step % 3 == 2 {
                        e.compact(T).unwrap();
                    }
                }
            }
            // TTL 1 s: some expire while the test runs, in memtables and SSTables alike.
            let lo = r.next() as i64;
            let hi = lo.saturating_add((r.next() >> 2) as i64);
            let now_s = now();
            assert_eq!(
                paged(&e, 1 + r.below(300) as usize, now_s),
                row_scan(&e, now_s),
                "seed {seed} step {step}: pages"
            );
            for (min_month, range) in [(0, all()), (198_012, all()), (0, tokens(lo, hi))] {
                // One "now" for both: rows with a TTL of 1 s expire while the test runs.
                let now_s = now();
                let (got, stats) = scan(&e, min_month, range.clone(), now_s);
                let want = expected(&e, min_month, range.clone(), now_s);
                assert!(
                    close(got, want),
                    "seed {seed} step {step}: {got:?} != {want:?} ({stats:?})"
                );
                let (runs, rows) = rows_per_partition(&e, min_month, range, now_s);
                assert_eq!(runs, rows, "seed {seed} step {step}: rows per partition");
            }
        }
        e.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_compacted_table_is_scanned_from_its_chunks_with_groups_skipped() {
    let dir = tempdir("colscan-compacted");
    let e = open_with(&dir, def());
    let mut batch = Vec::new();
    for i in 0..60_000u64 {
        // Months rise with the key's position in token order, so groups hold few months.
        batch.push(insert(
            i,
            10 + i as i64,
            0,
            0,
            (i % 7) as f64,
            CODES[(i % 4) as usize],
        ));
        if batch.len() == 1000 {
            e.apply_blocking(&batch).unwrap();
            batch.clear();
        }
    }
    compact_to_one(&e);
    // Rewrite the months in token order so that a restriction can skip groups.
    let q = scan_all(now());
    let rows = e.read(T, &q).unwrap();
    for (n, p) in rows.partitions.iter().enumerate() {
        let i = u64::from_be_bytes(p.key[..].try_into().unwrap());
        batch.push(insert(
            i,
            100_000 + i as i64,
            0,
            197_901 + (n / 1000) as i32,
            1.0,
            "USA",
        ));
        if batch.len() == 1000 {
            e.apply_blocking(&batch).unwrap();
            batch.clear();
        }
    }
    compact_to_one(&e);
    let (got, stats) = scan(&e, 0, all(), now());
    assert!(close(got, expected(&e, 0, all(), now())), "{got:?}");
    assert_eq!(paged(&e, 4999, now()), row_scan(&e, now()));
    assert_eq!(got.0, 60_000);
    // Point reads find partitions through the sampled index, whose keys are the segment's.
    for i in (0..60_000u64).step_by(997) {
        let read = e.read(T, &point(&key(i), now())).unwrap();
        assert_eq!(read.partitions.len(), 1, "key {i}");
        assert_eq!(read.partitions[0].key[..], key(i)[..]);
    }
    assert!(e
        .read(T, &point(&key(60_001), now()))
        .unwrap()
        .partitions
        .is_empty());
    // Index.db: a length a partition and a key every 128, not every key again.
    let index_bytes = files_ending(&dir, "Index.db");
    assert!(index_bytes > 0 && index_bytes < 2 * 60_000, "{index_bytes}");
    // The size `system.size_estimates` reports (partitions x mean size, which the Spark
    // connector divides into tasks) is the segment's, not a row encoding's estimate.
    let st = e.table_stats(T);
    let estimated = st.estimated_partitions * st.mean_partition_size_bytes;
    let segment = files_ending(&dir, "Columns.db");
    assert!(
        estimated <= segment && estimated + st.estimated_partitions >= segment,
        "{estimated} {segment}"
    );
    assert_eq!(stats.rows_from_row_path, 0, "{stats:?}");
    // Nothing lies between the row groups: no span of the range goes to the row path.
    assert_eq!(stats.spans_from_row_path, 0, "{stats:?}");
    assert!(stats.groups_read >= 2, "{stats:?}");
    let (got, stats) = scan(&e, 197_958, all(), now());
    assert_eq!(got, expected(&e, 197_958, all(), now()));
    assert_eq!(got.0, 3000);
    assert!(stats.groups_skipped >= 2, "{stats:?}");
    let (runs, rows) = rows_per_partition(&e, 197_958, all(), now());
    assert_eq!(runs.len(), 3000);
    assert_eq!(runs, rows);
    // A write after the compaction is read through the row path, the rest from chunks.
    e.apply_blocking(&[delete(7, 1_000_000)]).unwrap();
    let (got, stats) = scan(&e, 0, all(), now());
    assert_eq!(got.0, 59_999);
    assert!(
        stats.rows_from_row_path > 0 && stats.groups_read >= 1,
        "{stats:?}"
    );
    assert_eq!(stats.spans_from_row_path, 1, "{stats:?}");
    e.shutdown().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bytes of the files under `dir` whose names end with `suffix`.
fn files_ending(dir: &std::path::Path, suffix: &str) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            total += files_ending(&path, suffix);
        } else if path.to_string_lossy().ends_with(suffix) {
            total += std::fs::metadata(&path).unwrap().len();
        }
    }
    total
}

/// Flushes and compacts until one SSTable is left: a background compaction of the flush's
/// output may hold some SSTables while the major compaction runs.
fn compact_to_one(e: &Engine) {
    e.flush(None).unwrap();
    for _ in 0..200 {
        e.compact(T).unwrap();
        if e.table_stats(T).sstable_count == 1 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("the table did not compact to one SSTable");
}

/// (token, key, MONTH, CODE) of every row, in order.
type Listed = Vec<(i64, Vec<u8>, Option<Vec<u8>>, Option<Vec<u8>>)>;

/// Every row through pages of `limit` rows of `Engine::scan_column_page`.
fn paged(e: &Engine, limit: usize, now_s: i64) -> Listed {
    let s = ColumnScan {
        start: PartitionBound::Unbounded,
        end: PartitionBound::Unbounded,
        columns: vec![spec(MONTH), spec(CODE)],
        restrictions: Vec::new(),
        now_s,
        tombstone_failure_threshold: u64::MAX,
        group_runs: None,
        wire: None,
    };
    let mut out = Listed::new();
    let mut after = None;
    for _ in 0..100_000 {
        let page = e.scan_column_page(T, &s, after.clone(), limit).unwrap();
        assert!(page.keys.len() <= limit);
        for (i, (token, key)) in page.keys.iter().enumerate() {
            let cell = |c: usize| page.cells[c][i].as_ref().map(|v| v.to_vec());
            out.push((*token, key.to_vec(), cell(0), cell(1)));
        }
        if !page.more {
            return out;
        }
        after = page.keys.last().map(|(token, key)| ResumeAt {
            token: *token,
            key: key.clone(),
            clustering: page.clustering.last().cloned().unwrap_or_default(),
        });
    }
    panic!("pages did not end");
}

/// The same through a row scan.
fn row_scan(e: &Engine, now_s: i64) -> Listed {
    let r = e.read(T, &scan_all(now_s)).unwrap();
    let mut out = Listed::new();
    for p in &r.partitions {
        for row in &p.rows {
            let cell = |c| {
                row.cells
                    .iter()
                    .find(|x| x.column == c)
                    .map(|x| x.value.to_vec())
            };
            out.push((p.token, p.key.to_vec(), cell(MONTH), cell(CODE)));
        }
    }
    out
}

#[test]
fn a_scan_over_too_many_tombstones_fails_as_a_row_scan_does() {
    let dir = tempdir("colscan-tombstones");
    let e = open_with(&dir, def());
    // Rows whose one cell is deleted: a cell tombstone each (partition deletions are not
    // counted, as in Cassandra).
    let deletes: Vec<Mutation> = (0..50)
        .map(|i| {
            let mut m = insert(i, 10, 0, 1, 1.0, "X");
            m.rows[0].liveness = None;
            m.rows[0].cells = vec![CellUpdate {
                column: MONTH,
                path: None,
                timestamp_us: 10,
                op: CellOp::Delete,
            }];
            m
        })
        .collect();
    e.apply_blocking(&deletes).unwrap();
    let s = |threshold| ColumnScan {
        start: PartitionBound::Unbounded,
        end: PartitionBound::Unbounded,
        columns: vec![spec(MONTH)],
        restrictions: Vec::new(),
        now_s: now(),
        tombstone_failure_threshold: threshold,
        group_runs: None,
        wire: None,
    };
    let err = e.scan_columns(T, &s(10), &mut |_| Ok(())).unwrap_err();
    assert!(
        matches!(err, StorageError::TombstoneOverwhelming { .. }),
        "{err:?}"
    );
    let err = e.scan_column_page(T, &s(10), None, 100).unwrap_err();
    assert!(
        matches!(err, StorageError::TombstoneOverwhelming { .. }),
        "{err:?}"
    );
    let stats = e.scan_columns(T, &s(1000), &mut |_| Ok(())).unwrap();
    assert_eq!(stats.tombstones_scanned, 50);
    e.shutdown().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
