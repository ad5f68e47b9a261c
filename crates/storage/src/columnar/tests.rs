//! Property tests of chunks and segments: random columns of every type round-trip through every
//! encoding and compression; random partitions (every kind of deletion, TTLs, collections,
//! counters, static rows, clustering prefixes) round-trip through segments cut into small row
//! groups; pruned scans read fewer bytes; chunk skipping never drops a matching row; a damaged
//! byte anywhere is an error, never a panic.

use super::chunk::{decode_chunk, encode_chunk, typed_column};
use super::*;
use crate::clustering::CKey;
use crate::partition::{Partition, Row};
use crate::reconcile::{Cell, CellKind};
use crate::test_support::{tempdir, Rng};
use crate::types::{ClusteringColumn, DeletionTime, Liveness, ValueComparator};
use bytes::Bytes;
use std::cmp::Ordering;
use std::sync::Arc;

const TYPES: [ValueType; 13] = [
    ValueType::Boolean,
    ValueType::TinyInt,
    ValueType::SmallInt,
    ValueType::Int,
    ValueType::BigInt,
    ValueType::Timestamp,
    ValueType::Date,
    ValueType::Time,
    ValueType::Float,
    ValueType::Double,
    ValueType::Text,
    ValueType::Blob,
    ValueType::Opaque,
];

const COMPRESSIONS: [BlockCompression; 3] = [
    BlockCompression::None,
    BlockCompression::Lz4,
    BlockCompression::Zstd(3),
];

/// A random serialized value of `t`; `mode` shapes the column (0 random, 1 few values,
/// 2 one value, 3 extremes and long values).
fn value(r: &mut Rng, t: ValueType, mode: u64) -> Vec<u8> {
    let x = match mode {
        1 => r.below(5),
        2 => 42,
        3 => [0, u64::MAX, 1 << 63, (1 << 63) - 1][r.below(4) as usize],
        _ => r.next(),
    };
    match t {
        ValueType::Boolean => vec![(x & 1) as u8],
        ValueType::TinyInt => vec![x as u8],
        ValueType::SmallInt => (x as u16).to_be_bytes().to_vec(),
        ValueType::Int | ValueType::Date => (x as u32).to_be_bytes().to_vec(),
        ValueType::Float => {
            let f =
                [f32::NAN, -0.0, 0.0, f32::INFINITY, f32::from_bits(x as u32)][r.below(5) as usize];
            f.to_be_bytes().to_vec()
        }
        ValueType::Double => {
            let f =
                [f64::NAN, -0.0, 0.5, f64::NEG_INFINITY, f64::from_bits(x)][r.below(5) as usize];
            f.to_be_bytes().to_vec()
        }
        ValueType::Text | ValueType::Blob | ValueType::Opaque => {
            let len = match mode {
                3 => {
                    [0usize, 1, STAT_PREFIX_BYTES, STAT_PREFIX_BYTES + 1, 5000][r.below(5) as usize]
                }
                _ => r.below(12) as usize,
            };
            let fill = if mode == 3 && r.below(2) == 0 {
                0xff
            } else {
                x as u8
            };
            vec![fill; len]
        }
        _ => x.to_be_bytes().to_vec(),
    }
}

/// Random column of `rows` values (None: null).
fn random_column(r: &mut Rng, t: ValueType, rows: usize) -> Vec<Option<Vec<u8>>> {
    let mode = r.below(4);
    let null_pct = [0, 0, 10, 50, 100][r.below(5) as usize];
    (0..rows)
        .map(|_| (r.below(100) >= null_pct).then(|| value(r, t, mode)))
        .collect()
}

fn build(values: &[Option<Vec<u8>>], t: ValueType) -> Column {
    let mut raw = BytesVec::default();
    let mut valid = Bitmap::default();
    for v in values {
        raw.push(v.as_deref().unwrap_or_default());
        valid.push(v.is_some());
    }
    let nulls = values.iter().any(|v| v.is_none());
    typed_column(raw, nulls.then_some(valid), t)
}

fn ops() -> [CompareOp; 5] {
    [
        CompareOp::Eq,
        CompareOp::Lt,
        CompareOp::Le,
        CompareOp::Gt,
        CompareOp::Ge,
    ]
}

fn satisfies(v: &Scalar, op: CompareOp, bound: &Scalar) -> bool {
    let Some(o) = v.compare(bound) else {
        return true;
    };
    match op {
        CompareOp::Eq => o == Ordering::Equal,
        CompareOp::Lt => o == Ordering::Less,
        CompareOp::Le => o != Ordering::Greater,
        CompareOp::Gt => o == Ordering::Greater,
        CompareOp::Ge => o != Ordering::Less,
    }
}

#[test]
fn random_chunks_of_every_type_round_trip_and_never_skip_a_match() {
    let mut r = Rng(0xC0FF_EE00_1234_5678);
    for round in 0..1500 {
        let t = TYPES[round % TYPES.len()];
        let rows = [0usize, 1, 2, 17, 300, 4096][r.below(6) as usize];
        let values = random_column(&mut r, t, rows);
        let col = build(&values, t);
        let compression = COMPRESSIONS[r.below(3) as usize];
        let (bytes, stats) = encode_chunk(&col, t, compression);
        let back = decode_chunk(&bytes, rows, col.values.physical()).unwrap();
        assert_eq!(back.len(), rows);
        for (i, v) in values.iter().enumerate() {
            assert_eq!(
                back.serialized(i, t).as_deref(),
                v.as_deref(),
                "{t:?} row {i}"
            );
        }
        assert_eq!(stats.rows as usize, rows);
        assert_eq!(
            stats.nulls as usize,
            values.iter().filter(|v| v.is_none()).count()
        );
        // Skipping is never wrong: a chunk holding a value that satisfies the restriction is
        // never skipped, whatever the bound (values of the chunk and random others).
        let present: Vec<Scalar> = values
            .iter()
            .flatten()
            .filter_map(|v| t.scalar(v))
            .collect();
        for _ in 0..8 {
            let bound_bytes = match (r.below(2), values.iter().flatten().next()) {
                (0, Some(v)) => v.clone(),
                _ => {
                    let mode = r.below(4);
                    value(&mut r, t, mode)
                }
            };
            let Some(bound) = t.scalar(&bound_bytes) else {
                continue;
            };
            for op in ops() {
                if present.iter().any(|v| satisfies(v, op, &bound)) {
                    assert!(
                        !stats.can_skip(op, &bound),
                        "{t:?} {op:?} {bound:?} {stats:?}"
                    );
                }
            }
        }
    }
}

/// What a restriction selects in a column, decided from the values themselves.
fn expected_rows(
    values: &[Option<Vec<u8>>],
    t: ValueType,
    op: CompareOp,
    bound: &[u8],
) -> Vec<bool> {
    let bound = t.scalar(bound);
    values
        .iter()
        .map(|v| {
            let (Some(v), Some(b)) = (v.as_deref().and_then(|v| t.scalar(v)), &bound) else {
                return false;
            };
            v.compare(b).is_some_and(|o| op.holds(o))
        })
        .collect()
}

#[test]
fn restrictions_on_encoded_chunks_select_what_the_decoded_values_satisfy() {
    let mut r = Rng(0x5E1E_C700_0000_0001);
    for round in 0..1500 {
        let t = TYPES[round % TYPES.len()];
        let rows = [0usize, 1, 2, 63, 64, 65, 300, 4096][r.below(8) as usize];
        let mut values = random_column(&mut r, t, rows);
        // Now and then a value that does not fit its type, so the chunk keeps bytes.
        if rows > 0 && r.below(8) == 0 && !matches!(t, ValueType::Text | ValueType::Blob) {
            let at = r.below(rows as u64) as usize;
            values[at] = Some(Vec::new());
        }
        let col = build(&values, t);
        let compression = COMPRESSIONS[r.below(3) as usize];
        let (bytes, _) = encode_chunk(&col, t, compression);
        for _ in 0..4 {
            let bound = match (r.below(3), values.iter().flatten().next()) {
                (0 | 1, Some(v)) => v.clone(),
                _ => {
                    let mode = r.below(4);
                    value(&mut r, t, mode)
                }
            };
            for op in ops() {
                let p = ValuePredicate::new(t, op, &bound);
                let got =
                    super::select::select_chunk(&bytes, rows, col.values.physical(), &p, None)
                        .unwrap();
                let want = expected_rows(&values, t, op, &bound);
                assert_eq!(got.len(), rows);
                let got: Vec<bool> = (0..rows).map(|i| got.get(i)).collect();
                assert_eq!(got, want, "{t:?} {op:?} {bound:?} {compression:?}");
            }
        }
    }
}

#[test]
fn bitmaps_built_from_bytes_spread_and_iterated_agree_with_bit_by_bit() {
    let mut r = Rng(7);
    for n in [0usize, 1, 63, 64, 65, 130, 1000] {
        let bits: Vec<bool> = (0..n).map(|_| r.below(3) == 0).collect();
        let mut bytes = vec![0u8; n.div_ceil(8)];
        for (i, b) in bits.iter().enumerate() {
            bytes[i / 8] |= u8::from(*b) << (i % 8);
        }
        let m = Bitmap::from_le_bytes(&bytes, n);
        assert_eq!((0..n).map(|i| m.get(i)).collect::<Vec<_>>(), bits);
        assert_eq!(m.count_ones(), bits.iter().filter(|b| **b).count());
        for (a, b) in [(0, n), (0, n / 2), (n / 3, n), (n / 3, n / 3), (5, 70)] {
            let want: Vec<usize> = (a..b.min(n)).filter(|i| bits[*i]).collect();
            assert_eq!(m.ones_in(a..b).collect::<Vec<_>>(), want, "{n} {a}..{b}");
        }
        // Dense values land on the valid rows, in order.
        let dense: Vec<bool> = (0..m.count_ones()).map(|_| r.below(2) == 0).collect();
        let spread = Bitmap::spread(dense.iter().copied(), Some(&m), n);
        let mut it = dense.iter();
        for (i, b) in bits.iter().enumerate() {
            let want = *b && it.next().copied().unwrap_or(false);
            assert_eq!(spread.get(i), want, "{n} row {i}");
        }
        let other = Bitmap::from_bools((0..n).map(|i| i % 3 == 0), n);
        let mut and = m.clone();
        and.and_with(&other);
        for (i, b) in bits.iter().enumerate() {
            assert_eq!(and.get(i), *b && i % 3 == 0);
        }
    }
}

#[test]
fn values_that_do_not_fit_their_type_are_kept_as_bytes() {
    let values = vec![Some(vec![0, 0, 0, 7]), Some(Vec::new()), None];
    let col = build(&values, ValueType::Int);
    assert_eq!(col.values.physical(), Physical::Bytes);
    let (bytes, stats) = encode_chunk(&col, ValueType::Int, BlockCompression::Lz4);
    assert_eq!(stats.max, None);
    let back = decode_chunk(&bytes, 3, Physical::Bytes).unwrap();
    for (i, v) in values.iter().enumerate() {
        assert_eq!(back.serialized(i, ValueType::Int).as_deref(), v.as_deref());
    }
}

#[test]
fn damaged_chunks_are_errors() {
    let mut r = Rng(99);
    for t in TYPES {
        let values = random_column(&mut r, t, 200);
        let col = build(&values, t);
        let (bytes, _) = encode_chunk(&col, t, BlockCompression::Lz4);
        for cut in 0..bytes.len() {
            let _ = decode_chunk(&bytes[..cut], 200, col.values.physical());
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x5a;
            let _ = decode_chunk(&b, 200, col.values.physical());
        }
        assert!(decode_chunk(&bytes, 199, col.values.physical()).is_err() || bytes.is_empty());
    }
}

struct IntCmp;
impl ValueComparator for IntCmp {
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        let v = |x: &[u8]| x.try_into().map(i32::from_be_bytes).ok();
        v(a).cmp(&v(b))
    }
}

struct Bytewise;
impl ValueComparator for Bytewise {
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        a.cmp(b)
    }
}

const COLS: [(u32, ValueType); 6] = [
    (1, ValueType::Int),
    (2, ValueType::BigInt),
    (3, ValueType::Double),
    (4, ValueType::Text),
    (5, ValueType::Boolean),
    (6, ValueType::Opaque),
];
/// Not in the schema: a collection, a counter and an unknown column go to extras.
const SET_COL: u32 = 10;
const COUNTER_COL: u32 = 11;
const UNKNOWN_COL: u32 = 12;

pub(super) fn schema() -> ColumnarSchema {
    ColumnarSchema {
        partition_key: ValueType::Blob,
        clustering: vec![
            ClusteringSpec {
                column: ClusteringColumn {
                    cmp: Arc::new(IntCmp),
                    descending: false,
                },
                value_type: ValueType::Int,
            },
            ClusteringSpec {
                column: ClusteringColumn {
                    cmp: Arc::new(Bytewise),
                    descending: true,
                },
                value_type: ValueType::Text,
            },
        ],
        columns: COLS
            .iter()
            .map(|(id, t)| ColumnSpec {
                id: *id,
                value_type: *t,
            })
            .collect(),
    }
}

pub(super) fn clustering_cols() -> Vec<ClusteringColumn> {
    schema().clustering.into_iter().map(|c| c.column).collect()
}

fn dt(r: &mut Rng) -> DeletionTime {
    DeletionTime {
        marked_for_delete_at_us: 1_000_000 + r.below(1000) as i64,
        local_deletion_time_s: 1_700_000_000 + r.below(100) as i64,
    }
}

fn random_cell(r: &mut Rng, t: ValueType, ts: i64) -> Cell {
    let kind = match r.below(10) {
        0 => CellKind::Tombstone {
            local_deletion_time_s: 1_700_000_000 + r.below(50) as i64,
        },
        1 => CellKind::Live {
            value: {
                let mode = r.below(4);
                Bytes::from(value(r, t, mode))
            },
            ttl_s: 1 + r.below(1000) as u32,
            expires_at_s: 1_700_000_000 + r.below(5000) as i64,
        },
        _ => CellKind::Live {
            value: Bytes::from(value(r, t, 1)),
            ttl_s: 0,
            expires_at_s: 0,
        },
    };
    let jitter = if r.below(4) == 0 {
        r.below(100) as i64
    } else {
        0
    };
    Cell {
        timestamp_us: ts + jitter,
        kind,
    }
}

fn random_row(r: &mut Rng, ts: i64, is_static: bool) -> Row {
    let mut row = Row::default();
    if !is_static && r.below(5) > 0 {
        let ttl = if r.below(6) == 0 { 60 } else { 0 };
        row.liveness = Some(Liveness {
            timestamp_us: ts,
            ttl_s: ttl,
            expires_at_s: if ttl > 0 { 1_700_000_060 } else { 0 },
        });
    }
    if r.below(12) == 0 {
        row.deletion = Some(dt(r));
    }
    for (id, t) in COLS {
        if r.below(4) > 0 {
            row.cells.insert((id, None), random_cell(r, t, ts));
        }
    }
    if r.below(5) == 0 {
        row.complex_deletions.insert(SET_COL, dt(r));
        for e in 0..r.below(3) {
            let path = Bytes::from(vec![e as u8]);
            row.cells
                .insert((SET_COL, Some(path)), random_cell(r, ValueType::Blob, ts));
        }
    }
    if r.below(8) == 0 {
        let c = Cell {
            timestamp_us: ts,
            kind: CellKind::Counter {
                clock: r.below(9) as i64,
                total: r.next() as i64,
            },
        };
        row.cells.insert((COUNTER_COL, None), c);
    }
    if r.below(10) == 0 {
        row.cells
            .insert((UNKNOWN_COL, None), random_cell(r, ValueType::Blob, ts));
    }
    row
}

fn random_partitions(r: &mut Rng, n: usize) -> Vec<Partition> {
    random_partitions_tokened(r, n, false)
}

/// `murmur3`: tokens as the server makes them (so a segment may derive them from the keys),
/// else made up (few, so that keys share tokens).
fn random_partitions_tokened(r: &mut Rng, n: usize, murmur3: bool) -> Vec<Partition> {
    let cmp = Arc::new(crate::clustering::ClusteringComparator::new(
        clustering_cols(),
    ));
    let mut keys: Vec<(i64, Bytes)> = (0..n)
        .map(|i| {
            let key = Bytes::from(format!("k{i}"));
            let token = if murmur3 {
                helenus_types::murmur3_token(&key)
            } else {
                (r.next() % 1000) as i64 - 500
            };
            (token, key)
        })
        .collect();
    keys.sort();
    keys.dedup();
    let mut out = Vec::new();
    for (token, key) in keys {
        let mut p = Partition::new(key, token);
        let ts = 1_000_000 + r.below(1_000_000) as i64;
        if r.below(8) == 0 {
            p.deletion = Some(dt(r));
        }
        if r.below(10) == 0 {
            let s = crate::types::ClusteringBound {
                prefix: vec![Bytes::from(5i32.to_be_bytes().to_vec())],
                kind: crate::types::BoundKind::Inclusive,
            };
            let e = crate::types::ClusteringBound {
                prefix: vec![Bytes::from(9i32.to_be_bytes().to_vec())],
                kind: crate::types::BoundKind::Exclusive,
            };
            p.range_tombstones
                .push((CKey::start(&s, &cmp), CKey::end(&e, &cmp), dt(r)));
        }
        if r.below(4) == 0 {
            p.static_row = random_row(r, ts, true);
        }
        let rows = [0, 1, 1, 3, 20][r.below(5) as usize];
        for _ in 0..rows {
            let a = Bytes::from(((r.below(40) as i32) - 20).to_be_bytes().to_vec());
            let ck = if r.below(10) == 0 {
                vec![a]
            } else {
                vec![a, Bytes::from(format!("c{}", r.below(5)))]
            };
            p.insert_row(CKey::row(ck, &cmp), random_row(r, ts, false));
        }
        out.push(p);
    }
    out
}

pub(super) fn write(
    dir: &std::path::Path,
    parts: &[Partition],
    options: SegmentOptions,
) -> SegmentSummary {
    let path = dir.join("seg.col");
    let mut w = SegmentWriter::create(&path, &schema(), options).unwrap();
    for p in parts {
        w.append(p).unwrap();
    }
    w.finish().unwrap()
}

/// `parts` in a segment of `group_rows`-row groups without block compression (sizes are the
/// encodings' own).
pub(super) fn write_uncompressed(
    dir: &std::path::Path,
    parts: &[Partition],
    group_rows: usize,
) -> SegmentSummary {
    write(
        dir,
        parts,
        SegmentOptions {
            row_group_rows: group_rows,
            compression: BlockCompression::None,
            ..SegmentOptions::default()
        },
    )
}

/// Every partition of `seg`, rebuilt, is the one written.
pub(super) fn assert_partitions_back(seg: &SegmentReader, parts: &[Partition]) {
    let back = seg.partitions().unwrap();
    assert_eq!(back.len(), parts.len());
    for (a, b) in parts.iter().zip(&back) {
        assert_same(a, b);
    }
}

/// The bytes the segment's stream `name` takes (0 if it has none).
pub(super) fn stream_bytes(summary: &SegmentSummary, name: &str) -> u64 {
    summary
        .stream_bytes
        .iter()
        .find(|(n, _)| n == name)
        .map_or(0, |(_, b)| *b)
}

fn meaningful(p: &Partition) -> bool {
    p.deletion.is_some()
        || !p.range_tombstones.is_empty()
        || !p.static_row.is_empty()
        || !p.rows.is_empty()
}

pub(super) fn assert_same(a: &Partition, b: &Partition) {
    assert_eq!((a.token, &a.key), (b.token, &b.key));
    assert_eq!(a.deletion, b.deletion, "{:?}", a.key);
    assert_eq!(a.range_tombstones, b.range_tombstones);
    assert_eq!(a.static_row, b.static_row, "{:?}", a.key);
    assert_eq!(a.rows.len(), b.rows.len());
    for ((ka, ra), (kb, rb)) in a.rows.iter().zip(&b.rows) {
        assert_eq!(ka.values, kb.values);
        assert_eq!(ra, rb, "{:?} {:?}", a.key, ka);
    }
}

#[test]
fn random_partitions_round_trip_through_segments() {
    let dir = tempdir("columnar-roundtrip");
    let mut r = Rng(0x5EED);
    for round in 0..40 {
        let n = 1 + r.below(60) as usize;
        let murmur3 = round % 2 == 1;
        let parts = random_partitions_tokened(&mut r, n, murmur3);
        let options = SegmentOptions {
            row_group_rows: [1, 3, 7, 64, 1 << 16][round % 5],
            row_group_bytes: [64 << 20, 100][round % 2],
            compression: COMPRESSIONS[round % 3],
        };
        let summary = write(&dir, &parts, options);
        let expected: Vec<&Partition> = parts.iter().filter(|p| meaningful(p)).collect();
        assert_eq!(summary.partitions as usize, expected.len());
        // Murmur3 tokens are not stored: readers hash the keys.
        let token_bytes = summary
            .stream_bytes
            .iter()
            .find(|(n, _)| n == "token")
            .map(|x| x.1);
        if !expected.is_empty() {
            assert_eq!(
                token_bytes == Some(0),
                murmur3,
                "round {round}: {token_bytes:?}"
            );
        }
        let reader = SegmentReader::open(&summary.path, &clustering_cols()).unwrap();
        let back = reader.partitions().unwrap();
        assert_eq!(back.len(), expected.len());
        for (a, b) in expected.iter().zip(&back) {
            assert_same(a, b);
        }
        let mut n = 0;
        reader
            .for_each_mutation([7; 16], |m| {
                assert_eq!(m.key, expected[n].key);
                n += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(n, expected.len());
    }
}

#[test]
fn out_of_order_partitions_are_refused() {
    let dir = tempdir("columnar-order");
    let path = dir.join("seg.col");
    let mut w = SegmentWriter::create(&path, &schema(), SegmentOptions::default()).unwrap();
    let mut p = Partition::new(Bytes::from_static(b"b"), 5);
    p.deletion = Some(DeletionTime {
        marked_for_delete_at_us: 1,
        local_deletion_time_s: 1,
    });
    w.append(&p).unwrap();
    assert!(w.append(&p).is_err());
    p.key = Bytes::from_static(b"a");
    assert!(w.append(&p).is_err());
}

/// A live cell without TTL.
pub(super) fn live_cell(value: Vec<u8>, timestamp_us: i64) -> Cell {
    Cell {
        timestamp_us,
        kind: CellKind::Live {
            value: Bytes::from(value),
            ttl_s: 0,
            expires_at_s: 0,
        },
    }
}

/// GDELT-like rows: a scan of one column reads its chunks only.
fn scan_rows(dir: &std::path::Path, n: usize) -> SegmentSummary {
    let mut r = Rng(7);
    let cmp = Arc::new(crate::clustering::ClusteringComparator::new(
        clustering_cols(),
    ));
    let mut parts = Vec::new();
    for i in 0..n {
        let mut p = Partition::new(Bytes::from(format!("{i:08}")), i as i64);
        let mut row = Row {
            liveness: Some(Liveness {
                timestamp_us: 1_000 + i as i64,
                ttl_s: 0,
                expires_at_s: 0,
            }),
            ..Row::default()
        };
        for (id, t) in COLS {
            let v = match t {
                ValueType::Int => ((i / 100) as i32).to_be_bytes().to_vec(),
                _ => value(&mut r, t, 0),
            };
            row.cells.insert((id, None), live_cell(v, 1_000 + i as i64));
        }
        let ck = vec![
            Bytes::from(0i32.to_be_bytes().to_vec()),
            Bytes::from_static(b"x"),
        ];
        p.insert_row(CKey::row(ck, &cmp), row);
        parts.push(p);
    }
    write(
        dir,
        &parts,
        SegmentOptions {
            row_group_rows: 1000,
            compression: BlockCompression::Lz4,
            ..SegmentOptions::default()
        },
    )
}

#[test]
fn pruned_scans_read_only_their_columns_and_skip_groups() {
    let dir = tempdir("columnar-scan");
    let summary = scan_rows(&dir, 10_000);
    let open = || SegmentReader::open(&summary.path, &clustering_cols()).unwrap();
    let one = open();
    let at_open = one.bytes_read();
    let req = ScanRequest {
        columns: vec![1],
        ..ScanRequest::default()
    };
    let mut rows = 0;
    for b in one.scan(&req) {
        let b = b.unwrap();
        for i in 0..b.rows {
            let expected = ((b.group * 1000 + i) / 100) as i64;
            assert_eq!(b.columns[0].values.int(i), Some(expected));
        }
        rows += b.rows;
    }
    assert_eq!(rows, 10_000);
    let col1 = summary
        .column_bytes
        .iter()
        .find(|(id, _)| *id == 1)
        .unwrap()
        .1;
    let value_bytes = summary
        .stream_bytes
        .iter()
        .find(|(n, _)| n == "col 1 value")
        .unwrap()
        .1;
    // The column's chunks, and nothing else (its segment dictionary, counted in its stream's
    // bytes, was read at open).
    let scanned = one.bytes_read() - at_open;
    assert!(
        scanned <= value_bytes && scanned * 2 > value_bytes,
        "{scanned} of {value_bytes}"
    );
    assert!(col1 >= value_bytes);
    let all = open();
    let req_all = ScanRequest {
        columns: COLS.iter().map(|c| c.0).collect(),
        keys: true,
        metadata: true,
        ..ScanRequest::default()
    };
    assert_eq!(all.scan(&req_all).count(), 10);
    // (Both read the footer and the segment dictionaries at open.)
    assert!(
        (one.bytes_read() - at_open) * 10 < all.bytes_read() - at_open,
        "{} vs {}",
        one.bytes_read(),
        all.bytes_read()
    );
    // Column 1 is i / 100: = 3456 / 100 = 34 lies in row group 3 only.
    let restricted = open();
    let req_eq = ScanRequest {
        columns: vec![1],
        restrictions: vec![Restriction {
            target: Target::Column(1),
            op: CompareOp::Eq,
            value: 34i32.to_be_bytes().to_vec(),
        }],
        ..ScanRequest::default()
    };
    let groups: Vec<usize> = restricted.scan(&req_eq).map(|b| b.unwrap().group).collect();
    assert_eq!(groups, vec![3]);
    assert!(restricted.bytes_read() - at_open < value_bytes / 5);
    // Keys are "{i:08}" text-ordered blobs: "00004500" lies in row group 4 only.
    let by_key = Restriction {
        target: Target::PartitionKey,
        op: CompareOp::Eq,
        value: b"00004500".to_vec(),
    };
    assert_eq!(restricted.matching_groups(&[by_key]), vec![4]);
    // Cell timestamps come back absolute.
    let b = all.read_group(2, &req_all).unwrap();
    let cells = b.columns[0].cells.as_ref().unwrap();
    assert_eq!(cells.timestamps.int(5), Some(1_000 + 2005));
    assert_eq!(b.row_meta.unwrap().liveness_ts.int(5), Some(1_000 + 2005));
    // ... though cells written with their row's timestamp store none.
    for (name, bytes) in &summary.stream_bytes {
        if name.ends_with(" ts") {
            assert_eq!(*bytes, 0, "{name}");
        }
    }
}

#[test]
fn skipping_on_random_segments_never_drops_a_matching_row() {
    let dir = tempdir("columnar-skip");
    let mut r = Rng(0xABCD);
    for _ in 0..10 {
        let parts = random_partitions(&mut r, 80);
        let summary = write(
            &dir,
            &parts,
            SegmentOptions {
                row_group_rows: 5,
                compression: BlockCompression::None,
                ..SegmentOptions::default()
            },
        );
        let reader = SegmentReader::open(&summary.path, &clustering_cols()).unwrap();
        for _ in 0..30 {
            let (id, t) = COLS[r.below(5) as usize];
            let (target, t) = match r.below(6) {
                0 => (Target::Clustering(0), ValueType::Int),
                1 => (Target::PartitionKey, ValueType::Blob),
                _ => (Target::Column(id), t),
            };
            let bound = match target {
                Target::PartitionKey => format!("k{}", r.below(80)).into_bytes(),
                _ => value(&mut r, t, 1),
            };
            let Some(bs) = t.scalar(&bound) else { continue };
            let op = ops()[r.below(5) as usize];
            let res = Restriction {
                target,
                op,
                value: bound,
            };
            let req = ScanRequest {
                columns: vec![id],
                keys: true,
                ..ScanRequest::default()
            };
            for g in 0..reader.row_groups() {
                if !reader.can_skip(g, &res) {
                    continue;
                }
                let b = reader.read_group(g, &req).unwrap();
                let col = match target {
                    Target::Clustering(_) => &b.keys.as_ref().unwrap().clustering[0],
                    Target::PartitionKey => &b.keys.as_ref().unwrap().keys,
                    Target::Column(_) => &b.columns[0].values,
                };
                for i in 0..b.rows {
                    if let Some(v) = col.serialized(i, t).and_then(|v| t.scalar(&v)) {
                        assert!(
                            !satisfies(&v, op, &bs),
                            "skipped group {g} holds {v:?} {op:?} {bs:?}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn a_damaged_byte_anywhere_is_an_error() {
    let dir = tempdir("columnar-corrupt");
    let mut r = Rng(0xBAD);
    let parts = random_partitions(&mut r, 12);
    let summary = write(
        &dir,
        &parts,
        SegmentOptions {
            row_group_rows: 4,
            compression: BlockCompression::Lz4,
            ..SegmentOptions::default()
        },
    );
    let good = std::fs::read(&summary.path).unwrap();
    let path = dir.join("bad.col");
    let read_all = |p: &std::path::Path| -> Result<usize, ColumnarError> {
        let reader = SegmentReader::open(p, &clustering_cols())?;
        Ok(reader.partitions()?.len())
    };
    assert!(read_all(&summary.path).is_ok());
    for i in 0..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 1 << (i % 8);
        std::fs::write(&path, &bad).unwrap();
        assert!(
            read_all(&path).is_err(),
            "flipped byte {i} of {} went unnoticed",
            good.len()
        );
    }
    for cut in [0, 1, 8, good.len() / 2, good.len() - 1] {
        std::fs::write(&path, &good[..cut]).unwrap();
        assert!(read_all(&path).is_err());
    }
    let e = SegmentReader::open(&dir.join("missing.col"), &clustering_cols());
    assert!(matches!(e, Err(ColumnarError::Io { .. })));
}

#[test]
fn floats_with_few_decimals_are_stored_as_scaled_integers() {
    let mut r = Rng(4);
    let coords: Vec<Option<Vec<u8>>> = (0..4096)
        .map(|_| {
            let v = ((r.below(3_600_000) as f64) - 1_800_000.0) / 1e4;
            Some(v.to_be_bytes().to_vec())
        })
        .collect();
    let col = build(&coords, ValueType::Double);
    let (bytes, _) = encode_chunk(&col, ValueType::Double, BlockCompression::None);
    // 22 bits a value instead of 64.
    assert!(bytes.len() < 4096 * 3, "{}", bytes.len());
    let back = decode_chunk(&bytes, 4096, Physical::Float64).unwrap();
    for (i, v) in coords.iter().enumerate() {
        assert_eq!(
            back.serialized(i, ValueType::Double).as_deref(),
            v.as_deref()
        );
    }
    // One value that is not a short decimal (or -0.0, or NaN) keeps the chunk in raw bits.
    for odd in [f64::NAN, -0.0, 0.1 + 0.2] {
        let mut vals = coords.clone();
        vals[7] = Some(odd.to_be_bytes().to_vec());
        let col = build(&vals, ValueType::Double);
        let (bytes, _) = encode_chunk(&col, ValueType::Double, BlockCompression::None);
        let back = decode_chunk(&bytes, 4096, Physical::Float64).unwrap();
        assert_eq!(back.serialized(7, ValueType::Double), vals[7]);
        assert!(bytes.len() > 4096 * 7);
    }
    let small: Vec<Option<Vec<u8>>> = (0..100)
        .map(|i| Some((i as f32 / 4.0).to_be_bytes().to_vec()))
        .collect();
    let col = build(&small, ValueType::Float);
    let (bytes, _) = encode_chunk(&col, ValueType::Float, BlockCompression::None);
    assert!(bytes.len() < 120, "{}", bytes.len());
    let back = decode_chunk(&bytes, 100, Physical::Float32).unwrap();
    for (i, v) in small.iter().enumerate() {
        assert_eq!(
            back.serialized(i, ValueType::Float).as_deref(),
            v.as_deref()
        );
    }
}

#[test]
fn declared_columns_must_be_simple_and_abandoned_writers_leave_nothing() {
    let dir = tempdir("columnar-declared");
    let path = dir.join("seg.col");
    let mut w = SegmentWriter::create(&path, &schema(), SegmentOptions::default()).unwrap();
    let mut p = Partition::new(Bytes::from_static(b"k"), 1);
    let mut row = Row::default();
    let counter = Cell {
        timestamp_us: 1,
        kind: CellKind::Counter { clock: 1, total: 5 },
    };
    row.cells.insert((COLS[0].0, None), counter);
    p.static_row = row;
    assert!(matches!(w.append(&p), Err(ColumnarError::Invalid(_))));
    drop(w);
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    // Abandoned with a row group still being encoded on the writer's encoding thread.
    let small_groups = SegmentOptions {
        row_group_rows: 2,
        ..SegmentOptions::default()
    };
    let mut w = SegmentWriter::create(&path, &schema(), small_groups).unwrap();
    for p in &random_partitions(&mut Rng(5), 40) {
        w.append(p).unwrap();
    }
    assert!(w.bytes_written() > 8, "groups were written as they filled");
    drop(w);
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    // Cells of a column the schema does not list are in extras: never skipped on.
    let parts = random_partitions(&mut Rng(3), 10);
    let summary = write(&dir, &parts, SegmentOptions::default());
    let reader = SegmentReader::open(&summary.path, &clustering_cols()).unwrap();
    let r = Restriction {
        target: Target::Column(UNKNOWN_COL),
        op: CompareOp::Eq,
        value: vec![1],
    };
    assert!(!reader.can_skip(0, &r));
}

/// The types of the columns the dictionary test scans (4, 6, 1, 3).
const TYPE_OF: [ValueType; 4] = [
    ValueType::Text,
    ValueType::Opaque,
    ValueType::Int,
    ValueType::Double,
];

fn p_name(name: &str) -> ValuePredicate {
    ValuePredicate::new(ValueType::Text, CompareOp::Eq, name.as_bytes())
}

#[test]
fn values_repeating_across_row_groups_are_coded_into_one_segment_dictionary() {
    let dir = tempdir("columnar-segment-dict");
    let names: Vec<String> = (0..300)
        .map(|i| format!("place {i:03}, somewhere"))
        .collect();
    let mut r = Rng(11);
    let rows = 20_000usize;
    let picks: Vec<usize> = (0..rows).map(|_| r.below(300) as usize).collect();
    let cmp = Arc::new(crate::clustering::ClusteringComparator::new(
        clustering_cols(),
    ));
    let parts: Vec<Partition> = (0..rows)
        .map(|i| {
            let mut p = Partition::new(Bytes::from(format!("{i:08}")), i as i64);
            let mut row = Row {
                liveness: Some(Liveness {
                    timestamp_us: 5,
                    ttl_s: 0,
                    expires_at_s: 0,
                }),
                ..Row::default()
            };
            // Column 4 repeats 300 names, column 1 (int) 300 numbers and column 3 (double)
            // 300 coordinates; column 6 (opaque bytes) never repeats.
            let lat = -60.0 + picks[i] as f64 * 0.4321;
            let number = 3_000_000 - 7919 * picks[i] as i32;
            let cells: [(u32, Vec<u8>); 4] = [
                (1, number.to_be_bytes().to_vec()),
                (3, lat.to_be_bytes().to_vec()),
                (4, names[picks[i]].clone().into_bytes()),
                (6, format!("{i:016}").into_bytes()),
            ];
            for (id, v) in cells {
                row.cells.insert((id, None), live_cell(v, 5));
            }
            let ck = vec![Bytes::from(0i32.to_be_bytes().to_vec()), Bytes::new()];
            p.insert_row(CKey::row(ck, &cmp), row);
            p
        })
        .collect();
    let summary = write_uncompressed(&dir, &parts, 1000);
    let bytes_of = |name: &str| stream_bytes(&summary, name);
    // 20 row groups of 9-bit codes and the 300 names once (7.2 kB): a dictionary per row
    // group would hold (nearly) all 300 names in each of the 20.
    let names_bytes: usize = names.iter().map(String::len).sum();
    assert!(
        bytes_of("col 4 value") < (rows * 9 / 8 + 2 * names_bytes) as u64,
        "{}",
        bytes_of("col 4 value")
    );
    assert!(bytes_of("col 6 value") >= (rows * 16) as u64);
    // The numbers: 9-bit codes, and the 300 values once (the first row group, which seeds the
    // dictionary, keeps its own encoding: 300 values and 1,000 codes).
    for numbers in ["col 1 value", "col 3 value"] {
        let most = rows * 9 / 8 + 2 * 300 * 8 + 1000;
        assert!(
            bytes_of(numbers) < most as u64,
            "{numbers}: {}",
            bytes_of(numbers)
        );
    }
    let seg = SegmentReader::open(&summary.path, &clustering_cols()).unwrap();
    let req = ScanRequest {
        columns: vec![4, 6, 1, 3],
        ..ScanRequest::default()
    };
    let mut at = 0;
    for b in seg.scan(&req) {
        let b = b.unwrap();
        for i in 0..b.rows {
            let want = names[picks[at + i]].as_bytes();
            assert_eq!(
                b.columns[0].values.serialized(i, ValueType::Text).unwrap(),
                want
            );
        }
        let p = ValuePredicate::new(ValueType::Text, CompareOp::Eq, names[7].as_bytes());
        let sel = seg.select_rows(b.group, 4, &p).unwrap();
        for i in 0..b.rows {
            assert_eq!(sel.get(i), picks[at + i] == 7, "group {} row {i}", b.group);
        }
        // Numbers fall as the pick grows; coordinates rise.
        let bound = (3_000_000 - 7919 * 100i32).to_be_bytes();
        let p = ValuePredicate::new(ValueType::Int, CompareOp::Lt, &bound);
        let sel = seg.select_rows(b.group, 1, &p).unwrap();
        let lat = (-60.0 + 100.0 * 0.4321f64).to_be_bytes();
        let q = ValuePredicate::new(ValueType::Double, CompareOp::Ge, &lat);
        let sel_lat = seg.select_rows(b.group, 3, &q).unwrap();
        for i in 0..b.rows {
            assert_eq!(sel.get(i), picks[at + i] > 100, "group {} row {i}", b.group);
            assert_eq!(
                sel_lat.get(i),
                picks[at + i] >= 100,
                "group {} row {i}",
                b.group
            );
        }
        // The dictionary-coded numbers decoded at the rows of one name only.
        let one_name = seg.select_rows(b.group, 4, &p_name(&names[7])).unwrap();
        for (j, id) in [(2, 1), (3, 3)] {
            let got = seg.read_selected(b.group, id, &one_name).unwrap();
            for i in 0..b.rows {
                let want = b.columns[j].values.serialized(i, TYPE_OF[j]);
                let mine = got.serialized(i, TYPE_OF[j]);
                assert_eq!(mine, want.filter(|_| one_name.get(i)), "col {id} row {i}");
            }
        }
        at += b.rows;
    }
    assert_eq!(at, rows);
    assert_partitions_back(&seg, &parts);
}

#[test]
fn a_selective_decode_gives_the_selected_rows_values_and_nothing_else() {
    let mut r = Rng(0x5E1E_C7ED_0000_0001);
    for round in 0..1300 {
        let t = TYPES[round % TYPES.len()];
        let rows = [1usize, 2, 63, 64, 65, 300, 4096][r.below(7) as usize];
        let values = random_column(&mut r, t, rows);
        let col = build(&values, t);
        let (bytes, _) = encode_chunk(&col, t, COMPRESSIONS[r.below(3) as usize]);
        let physical = col.values.physical();
        let whole = decode_chunk(&bytes, rows, physical).unwrap();
        let one_in = [1u64, 2, 10, 100][r.below(4) as usize];
        let selected = Bitmap::from_bools((0..rows).map(|_| r.below(one_in) == 0), rows);
        let got = super::select::decode_selected(&bytes, rows, physical, None, &selected).unwrap();
        assert_eq!(got.len(), rows);
        for i in 0..rows {
            let want = whole.serialized(i, t);
            let mine = got.serialized(i, t);
            if selected.get(i) {
                assert_eq!(mine, want, "{t:?} row {i} of {rows}");
            } else if physical != Physical::Bytes {
                assert!(!got.is_valid(i), "{t:?} row {i} not selected");
            }
        }
    }
}
