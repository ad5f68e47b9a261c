//! Columnar segment benchmark (std::time, JSON on stdout): GDELT-shaped events (18 of the 57
//! columns, with the study's cardinalities) written as one columnar segment (LZ4 and zstd) and
//! as row SSTables through the engine, then scanned.
//!
//! `HELENUS_BENCH_ROWS=1000000 cargo bench -p helenus-storage --bench columnar` (default 1M;
//! `HELENUS_BENCH_ROW_SSTABLE=0` skips the row-SSTable comparison).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing bench may panic

use bytes::Bytes;
use helenus_storage::columnar::*;
use helenus_storage::*;
use std::time::{Duration, Instant};

const COLUMNS: [(u32, &str, ValueType); 18] = [
    (1, "SQLDATE", ValueType::Int),
    (2, "MonthYear", ValueType::Int),
    (3, "Year", ValueType::Int),
    (4, "FractionDate", ValueType::Double),
    (5, "Actor1Code", ValueType::Text),
    (6, "Actor1Name", ValueType::Text),
    (7, "Actor1CountryCode", ValueType::Text),
    (8, "EventCode", ValueType::Text),
    (9, "QuadClass", ValueType::Int),
    (10, "GoldsteinScale", ValueType::Double),
    (11, "NumMentions", ValueType::Int),
    (12, "NumSources", ValueType::Int),
    (13, "NumArticles", ValueType::Int),
    (14, "AvgTone", ValueType::Double),
    (15, "IsRootEvent", ValueType::Boolean),
    (16, "ActionGeo_Lat", ValueType::Double),
    (17, "ActionGeo_Long", ValueType::Double),
    (18, "DATEADDED", ValueType::Timestamp),
];
const AVG_TONE: u32 = 14;
const MONTH_YEAR: u32 = 2;
const TABLE: TableId = [15; 16];
/// Write timestamps: one microsecond apart in write (event id) order.
const WRITE_TS_US: i64 = 1_700_000_000_000_000;

/// splitmix64: a row's values depend on its id only, so rows can be made in any order.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = mix(self.0);
        self.0
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn token(id: u64) -> i64 {
    mix(id ^ 0x5555) as i64
}

/// ~200 country codes: USA ~9%, ALB ~0.1%, the rest falling off geometrically.
fn country(r: &mut Rng) -> String {
    let u = r.unit();
    if u < 0.09 {
        return "USA".into();
    }
    if u < 0.091 {
        return "ALB".into();
    }
    let k = ((-(r.unit().max(1e-12)).ln()) * 30.0) as u64 % 198;
    format!("C{:02}", k)
}

fn event(id: u64) -> Mutation {
    let mut r = Rng(id);
    let month = if r.unit() < 0.01 {
        198012
    } else {
        let m = r.below(71);
        let m = if m >= 23 { m + 1 } else { m }; // skip 198012 (month 23)
        197901 + (m / 12) * 100 + m % 12
    } as i32;
    let year = month / 100;
    let day = 1 + r.below(28) as i32;
    let actor = r.unit() >= 0.1;
    let name_rank = (r.unit().powi(3) * 5000.0) as u64;
    let tone = (r.unit() + r.unit() + r.unit() - 1.5) * 8.0;
    let int = |v: i32| Some(v.to_be_bytes().to_vec());
    let dbl = |v: f64| Some(v.to_be_bytes().to_vec());
    let text = |s: String| Some(s.into_bytes());
    let cc = country(&mut r);
    let values: [Option<Vec<u8>>; 18] = [
        int(year * 10000 + (month % 100) * 100 + day),
        int(month),
        int(year),
        dbl(f64::from(year) + ((month % 100 - 1) * 30 + day) as f64 / 365.0),
        if actor {
            text(format!("{cc}GOV"))
        } else {
            None
        },
        if actor {
            text(format!("ACTOR NAME {name_rank}"))
        } else {
            None
        },
        if actor { text(cc) } else { None },
        text(format!("{:03}", 10 + r.below(300))),
        int(1 + r.below(4) as i32),
        dbl((r.below(41) as f64 - 20.0) / 2.0),
        int(1 + (r.unit().powi(4) * 100.0) as i32),
        int(1 + r.below(10) as i32),
        int(1 + (r.unit().powi(4) * 100.0) as i32),
        dbl(tone),
        Some(vec![u8::from(r.below(2) == 0)]),
        dbl(((r.unit() * 180.0 - 90.0) * 1e4).round() / 1e4),
        dbl(((r.unit() * 360.0 - 180.0) * 1e4).round() / 1e4),
        Some(
            (315_532_800_000i64 + id as i64 * 60_000)
                .to_be_bytes()
                .to_vec(),
        ),
    ];
    let ts = WRITE_TS_US + id as i64;
    let cells = COLUMNS
        .iter()
        .zip(values)
        .filter_map(|((col, _, _), v)| {
            v.map(|v| CellUpdate {
                column: *col,
                path: None,
                timestamp_us: ts,
                op: CellOp::Set {
                    value: Bytes::from(v),
                    ttl_s: 0,
                },
            })
        })
        .collect();
    Mutation {
        table: TABLE,
        key: Bytes::copy_from_slice(&id.to_be_bytes()),
        token: token(id),
        partition_deletion: None,
        range_tombstones: Vec::new(),
        static_row: None,
        rows: vec![RowUpdate {
            clustering: Vec::new(),
            liveness: Some(Liveness {
                timestamp_us: ts,
                ttl_s: 0,
                expires_at_s: 0,
            }),
            deletion: None,
            cells,
        }],
    }
}

fn raw_bytes(m: &Mutation) -> u64 {
    let cells: usize = m
        .rows
        .iter()
        .flat_map(|r| &r.cells)
        .map(|c| match &c.op {
            CellOp::Set { value, .. } => value.len(),
            _ => 0,
        })
        .sum();
    (cells + m.key.len()) as u64
}

fn schema() -> ColumnarSchema {
    ColumnarSchema {
        partition_key: ValueType::BigInt,
        clustering: Vec::new(),
        columns: COLUMNS
            .iter()
            .map(|(id, _, t)| ColumnSpec {
                id: *id,
                value_type: *t,
            })
            .collect(),
    }
}

struct Written {
    summary: SegmentSummary,
    encode: Duration,
    raw: u64,
}

/// Rows per row group (HELENUS_BENCH_GROUP_ROWS), the unit of chunk skipping.
fn group_rows() -> usize {
    std::env::var("HELENUS_BENCH_GROUP_ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SegmentOptions::default().row_group_rows)
}

fn write_segment(path: &std::path::Path, order: &[u64], compression: BlockCompression) -> Written {
    let options = SegmentOptions {
        compression,
        row_group_rows: group_rows(),
        ..SegmentOptions::default()
    };
    let mut w = SegmentWriter::create(path, &schema(), options).unwrap();
    let (mut encode, mut raw) = (Duration::ZERO, 0u64);
    for id in order {
        let m = event(*id);
        raw += raw_bytes(&m);
        let t = Instant::now();
        w.append_mutation(&m, 1_700_000_000).unwrap();
        encode += t.elapsed();
    }
    let t = Instant::now();
    let summary = w.finish().unwrap();
    encode += t.elapsed();
    Written {
        summary,
        encode,
        raw,
    }
}

struct BigIntCmp;
impl ValueComparator for BigIntCmp {
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        let v = |x: &[u8]| x.try_into().map(i64::from_be_bytes).ok();
        v(a).cmp(&v(b))
    }
}

fn month_of(m: &Mutation) -> i32 {
    let cell = m.rows[0]
        .cells
        .iter()
        .find(|c| c.column == MONTH_YEAR)
        .unwrap();
    match &cell.op {
        CellOp::Set { value, .. } => i32::from_be_bytes(value[..4].try_into().unwrap()),
        _ => unreachable!(),
    }
}

/// The study's wide layout: partitioned by MonthYear, rows clustered by event id, so rows of
/// one month are contiguous and a restriction on a column that follows the month (SQLDATE)
/// skips most row groups.
fn write_wide(path: &std::path::Path, rows: u64) -> SegmentSummary {
    let mut by_month: Vec<(i64, i32, u64)> = (0..rows)
        .map(|id| {
            let m = month_of(&event(id));
            (token(m as u64), m, id)
        })
        .collect();
    by_month.sort_unstable();
    let schema = ColumnarSchema {
        partition_key: ValueType::Int,
        clustering: vec![ClusteringSpec {
            column: ClusteringColumn {
                cmp: std::sync::Arc::new(BigIntCmp),
                descending: false,
            },
            value_type: ValueType::BigInt,
        }],
        columns: COLUMNS
            .iter()
            .filter(|c| c.0 != MONTH_YEAR)
            .map(|(id, _, t)| ColumnSpec {
                id: *id,
                value_type: *t,
            })
            .collect(),
    };
    let options = SegmentOptions {
        row_group_rows: group_rows(),
        ..SegmentOptions::default()
    };
    let mut w = SegmentWriter::create(path, &schema, options).unwrap();
    for month in by_month.chunk_by(|a, b| a.1 == b.1) {
        let m = month[0].1;
        let mut rows = Vec::with_capacity(month.len());
        for (_, _, id) in month {
            let mut row = event(*id).rows.pop().unwrap();
            row.clustering = vec![Bytes::copy_from_slice(&(*id as i64).to_be_bytes())];
            row.cells.retain(|c| c.column != MONTH_YEAR);
            rows.push(row);
        }
        let mutation = Mutation {
            table: TABLE,
            key: Bytes::copy_from_slice(&m.to_be_bytes()),
            token: month[0].0,
            partition_deletion: None,
            range_tombstones: Vec::new(),
            static_row: None,
            rows,
        };
        w.append_mutation(&mutation, 1_700_000_000).unwrap();
    }
    w.finish().unwrap()
}

/// Rows per second of a scan of every column with keys and per-cell times (what a merge with
/// other sources reads), and of rebuilding every partition as a mutation (what compaction reads).
fn reconcile_paths(path: &std::path::Path) -> (f64, f64) {
    let reader = SegmentReader::open(path, &[]).unwrap();
    let req = ScanRequest {
        columns: COLUMNS.iter().map(|c| c.0).collect(),
        keys: true,
        metadata: true,
        ..ScanRequest::default()
    };
    let t = Instant::now();
    let rows: usize = reader.scan(&req).map(|b| b.unwrap().rows).sum();
    let with_meta = rows as f64 / t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut n = 0u64;
    reader
        .for_each_mutation(TABLE, |m| {
            n += m.rows.len() as u64;
            Ok(())
        })
        .unwrap();
    (with_meta, n as f64 / t.elapsed().as_secs_f64())
}

/// Rows per second of full scans of `columns` (values only), and the bytes they read.
fn scan(
    path: &std::path::Path,
    columns: Vec<u32>,
    restrictions: Vec<Restriction>,
) -> (f64, u64, usize, u64) {
    let reader = SegmentReader::open(path, &[]).unwrap();
    let before = reader.bytes_read();
    let req = ScanRequest {
        columns,
        restrictions,
        ..ScanRequest::default()
    };
    let t = Instant::now();
    let (mut rows, mut groups, mut checksum) = (0u64, 0usize, 0u64);
    for b in reader.scan(&req) {
        let b = b.unwrap();
        rows += b.rows as u64;
        groups += 1;
        for c in &b.columns {
            checksum = checksum.wrapping_add(c.values.len() as u64 - c.values.null_count() as u64);
        }
    }
    let s = t.elapsed().as_secs_f64();
    assert!(checksum > 0 || rows == 0);
    (rows as f64 / s, reader.bytes_read() - before, groups, rows)
}

fn row_sstable_bytes(dir: &std::path::Path, rows: u64) -> (u64, f64) {
    let config = StorageConfig {
        data_dir: dir.join("data"),
        commitlog_dir: dir.join("commitlog"),
        commitlog_sync: CommitlogSync::Periodic { period_ms: 1000 },
        commitlog_segment_size_bytes: 32 << 20,
        memtable_space_bytes: 512 << 20,
        memtable_cleanup_threshold: 1.0,
        key_cache_bytes: 16 << 20,
        chunk_cache_bytes: 64 << 20,
        row_cache_bytes: 0,
        concurrent_compactors: 1,
        compaction_throughput_mib_per_s: 0,
        flush_throughput_mib_per_s: 0,
        parallel_major_compaction_min_bytes: DEFAULT_PARALLEL_MAJOR_COMPACTION_MIN_BYTES,
        clock: helenus_types::SystemClock::shared(),
    };
    let e = Engine::open(config).unwrap();
    let mut def = helenus_storage::test_support::gdelt_def(TABLE, COLUMNS.len() as u32);
    def.options.compaction = CompactionOptions::SizeTiered {
        min_threshold: 1000,
        max_threshold: 1000,
    };
    e.create_table(def).unwrap();
    let t = Instant::now();
    for start in (0..rows).step_by(100) {
        let ms: Vec<Mutation> = (start..(start + 100).min(rows)).map(event).collect();
        e.apply_blocking(&ms).unwrap();
    }
    e.flush(None).unwrap();
    e.compact(TABLE).unwrap();
    let s = t.elapsed().as_secs_f64();
    let disk = e.table_stats(TABLE).live_disk_space_bytes;
    e.shutdown().unwrap();
    (disk, s)
}

fn json_columns(s: &SegmentSummary) -> String {
    let named: Vec<String> = s
        .column_bytes
        .iter()
        .map(|(id, n)| {
            let name = COLUMNS.iter().find(|c| c.0 == *id).map_or("?", |c| c.1);
            format!("\"{name}\": {n}")
        })
        .collect();
    let system: Vec<String> = s
        .stream_bytes
        .iter()
        .filter(|(name, n)| !name.starts_with("col ") && *n > 0)
        .map(|(name, n)| format!("\"{name}\": {n}"))
        .collect();
    format!(
        "{{{}}}, \"system_stream_bytes\": {{{}}}",
        named.join(", "),
        system.join(", ")
    )
}

fn main() {
    let rows: u64 = std::env::var("HELENUS_BENCH_ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let with_rows = std::env::var("HELENUS_BENCH_ROW_SSTABLE").map_or(true, |v| v != "0");
    let dir = std::env::temp_dir().join(format!("helenus-columnar-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut order: Vec<u64> = (0..rows).collect();
    order.sort_by_key(|id| (token(*id), id.to_be_bytes()));

    let lz4_path = dir.join("gdelt-lz4.col");
    let lz4 = write_segment(&lz4_path, &order, BlockCompression::Lz4);
    let zstd_path = dir.join("gdelt-zstd.col");
    let zstd = write_segment(&zstd_path, &order, BlockCompression::Zstd(3));
    let mb = |b: u64, d: Duration| b as f64 / 1e6 / d.as_secs_f64();

    let (one_rps, one_bytes, _, _) = scan(&lz4_path, vec![AVG_TONE], Vec::new());
    let all: Vec<u32> = COLUMNS.iter().map(|c| c.0).collect();
    let (all_rps, all_bytes, _, _) = scan(&lz4_path, all.clone(), Vec::new());
    let (zstd_all_rps, _, _, _) = scan(&zstd_path, all, Vec::new());
    let (meta_rps, rebuild_rps) = reconcile_paths(&lz4_path);
    let restriction = Restriction {
        target: Target::Column(MONTH_YEAR),
        op: CompareOp::Eq,
        value: 198012i32.to_be_bytes().to_vec(),
    };
    let (_, eq_bytes, eq_groups, _) =
        scan(&lz4_path, vec![AVG_TONE, MONTH_YEAR], vec![restriction]);
    let before_1979 = Restriction {
        target: Target::Column(MONTH_YEAR),
        op: CompareOp::Lt,
        value: 197901i32.to_be_bytes().to_vec(),
    };
    let (_, _, none_groups, _) = scan(&lz4_path, vec![AVG_TONE], vec![before_1979]);

    let wide_path = dir.join("gdelt-wide.col");
    let wide = write_wide(&wide_path, rows);
    let key_eq = Restriction {
        target: Target::PartitionKey,
        op: CompareOp::Eq,
        value: 198012i32.to_be_bytes().to_vec(),
    };
    let (_, wide_key_bytes, wide_key_groups, _) = scan(&wide_path, vec![AVG_TONE], vec![key_eq]);
    let date_range = vec![
        Restriction {
            target: Target::Column(1),
            op: CompareOp::Ge,
            value: 19801201i32.to_be_bytes().to_vec(),
        },
        Restriction {
            target: Target::Column(1),
            op: CompareOp::Lt,
            value: 19810101i32.to_be_bytes().to_vec(),
        },
    ];
    let (_, wide_date_bytes, wide_date_groups, _) = scan(&wide_path, vec![AVG_TONE], date_range);
    let (_, wide_full_bytes, _, _) = scan(&wide_path, vec![AVG_TONE], Vec::new());

    let (row_bytes, row_s) = if with_rows {
        row_sstable_bytes(&dir, rows)
    } else {
        (0, 0.0)
    };
    let ratio = |b: u64| {
        if b == 0 {
            0.0
        } else {
            row_bytes as f64 / b as f64
        }
    };
    println!("{{");
    println!("  \"rows\": {rows},");
    println!("  \"raw_value_bytes\": {},", lz4.raw);
    println!("  \"row_groups\": {},", lz4.summary.row_groups);
    println!("  \"lz4\": {{\"file_bytes\": {}, \"footer_bytes\": {}, \"encode_mb_per_s\": {:.1}, \"row_sstable_over_columnar\": {:.2}, \"column_bytes\": {}}},",
        lz4.summary.file_bytes, lz4.summary.footer_bytes, mb(lz4.raw, lz4.encode), ratio(lz4.summary.file_bytes), json_columns(&lz4.summary));
    println!("  \"zstd3\": {{\"file_bytes\": {}, \"encode_mb_per_s\": {:.1}, \"row_sstable_over_columnar\": {:.2}, \"column_bytes\": {}}},",
        zstd.summary.file_bytes, mb(zstd.raw, zstd.encode), ratio(zstd.summary.file_bytes), json_columns(&zstd.summary));
    println!("  \"row_sstable\": {{\"disk_bytes_after_major_compaction\": {row_bytes}, \"write_flush_compact_s\": {row_s:.1}}},");
    println!("  \"scan_one_column_AvgTone\": {{\"rows_per_s\": {one_rps:.0}, \"bytes_read\": {one_bytes}}},");
    println!("  \"scan_all_18_columns_lz4\": {{\"rows_per_s\": {all_rps:.0}, \"bytes_read\": {all_bytes}}},");
    println!("  \"scan_all_18_columns_zstd3\": {{\"rows_per_s\": {zstd_all_rps:.0}}},");
    println!("  \"scan_all_columns_with_keys_and_cell_times\": {{\"rows_per_s\": {meta_rps:.0}}},");
    println!("  \"rebuild_partitions_as_mutations\": {{\"rows_per_s\": {rebuild_rps:.0}}},");
    println!("  \"MonthYear_eq_198012\": {{\"row_groups_read\": {eq_groups}, \"of\": {}, \"bytes_read\": {eq_bytes}}},", lz4.summary.row_groups);
    println!("  \"MonthYear_lt_197901\": {{\"row_groups_read\": {none_groups}}},");
    println!("  \"wide_by_month\": {{\"file_bytes\": {}, \"row_groups\": {}, \"AvgTone_all_bytes_read\": {wide_full_bytes}, \"key_MonthYear_eq_198012\": {{\"row_groups_read\": {wide_key_groups}, \"bytes_read\": {wide_key_bytes}}}, \"SQLDATE_in_dec_1980\": {{\"row_groups_read\": {wide_date_groups}, \"bytes_read\": {wide_date_bytes}}}}}",
        wide.file_bytes, wide.row_groups);
    println!("}}");
    let _ = std::fs::remove_dir_all(&dir);
}
