//! Tests of the compact data format (compact.rs) on its own; SSTables written in it and in the
//! fixed-width format 1 are tested in sstable/tests.rs.

use super::*;
use crate::clustering::tests::cmp2;
use crate::codec;

pub(crate) fn ck(vals: &[&'static [u8]], cmp: &Arc<ClusteringComparator>) -> CKey {
    CKey::row(vals.iter().map(|v| Bytes::from_static(v)).collect(), cmp)
}

pub(crate) fn live(ts: i64, v: &'static [u8]) -> Cell {
    Cell {
        timestamp_us: ts,
        kind: CellKind::Live {
            value: Bytes::from_static(v),
            ttl_s: 0,
            expires_at_s: 0,
        },
    }
}

pub(crate) fn dt(ts: i64, ldt: i64) -> DeletionTime {
    DeletionTime {
        marked_for_delete_at_us: ts,
        local_deletion_time_s: ldt,
    }
}

/// A partition with every kind of content the format has a flag for.
pub(crate) fn everything(
    cmp: &Arc<ClusteringComparator>,
    key: &'static [u8],
    token: i64,
) -> Partition {
    let t = 1_700_000_000_000_000i64;
    let mut p = Partition::new(Bytes::from_static(key), token);
    p.deletion = Some(dt(t - 5, 1_700_000_000));
    let mut s = ck(&[b"a"], cmp);
    s.weight = -1;
    let mut e = ck(&[b"c"], cmp);
    e.weight = 1;
    p.range_tombstones.push((s, e, dt(t + 9, 1_700_000_001)));
    p.static_row.cells.insert((7, None), live(t, b"static"));
    // A simple row: marker and consecutive live cells at the marker's timestamp.
    let mut simple = Row {
        liveness: Some(Liveness {
            timestamp_us: t,
            ttl_s: 0,
            expires_at_s: 0,
        }),
        ..Row::default()
    };
    for c in 3..6 {
        simple.cells.insert((c, None), live(t, b"v"));
    }
    p.insert_row(ck(&[b"a", b"1"], cmp), simple.clone());
    // A sparse simple row: some columns null, the rest live at the marker's timestamp.
    let mut sparse = simple;
    sparse.cells.clear();
    for c in [2, 3, 9, 40, 65] {
        sparse.cells.insert((c, None), live(t, b"s"));
    }
    p.insert_row(ck(&[b"a", b"2"], cmp), sparse);
    p.insert_row(ck(&[b"b", b""], cmp), mixed_row(t));
    // A row with only a deletion, and one with cells but no marker.
    p.insert_row(
        ck(&[b"c", b"2"], cmp),
        Row {
            deletion: Some(dt(t, 1_700_000_000)),
            ..Row::default()
        },
    );
    let mut no_marker = Row::default();
    no_marker.cells.insert((1, None), live(t, b"z"));
    p.insert_row(ck(&[b"d", b"3"], cmp), no_marker.clone());
    // A clustering prefix shorter than the table's, and one of 3+ values (counted apart).
    p.insert_row(ck(&[b"e"], cmp), no_marker.clone());
    p.insert_row(ck(&[b"f", b"1", b"x"], cmp), no_marker);
    p
}

/// A row with every cell kind, collections, an expiring marker and deletions.
fn mixed_row(t: i64) -> Row {
    let mut mixed = Row {
        liveness: Some(Liveness {
            timestamp_us: t + 1,
            ttl_s: 60,
            expires_at_s: 1_700_000_060,
        }),
        deletion: Some(dt(t - 1, 1_699_999_999)),
        ..Row::default()
    };
    mixed.complex_deletions.insert(4, dt(t - 2, 1_700_000_002));
    mixed.cells.insert((0, None), live(t + 1, b""));
    mixed.cells.insert((2, None), live(i64::MIN, b"min"));
    mixed
        .cells
        .insert((4, Some(Bytes::from_static(b"k1"))), live(t + 1, b"x"));
    mixed
        .cells
        .insert((4, Some(Bytes::from_static(b"k2"))), live(i64::MAX, b"y"));
    let expiring = Cell {
        timestamp_us: t + 3,
        kind: CellKind::Live {
            value: Bytes::from_static(b"ttl"),
            ttl_s: 3600,
            expires_at_s: 1_700_003_600,
        },
    };
    mixed.cells.insert((5, None), expiring);
    let tomb = Cell {
        timestamp_us: t + 4,
        kind: CellKind::Tombstone {
            local_deletion_time_s: 1_700_000_004,
        },
    };
    mixed.cells.insert((u32::MAX, None), tomb);
    let counter = Cell {
        timestamp_us: t + 1,
        kind: CellKind::Counter {
            clock: 42,
            total: -7,
        },
    };
    mixed.cells.insert((9, None), counter);
    mixed
}

pub(crate) fn same(a: &Partition, b: &Partition) {
    assert_eq!((&a.key, a.token, a.deletion), (&b.key, b.token, b.deletion));
    let rts = |p: &Partition| {
        p.range_tombstones
            .iter()
            .map(|(s, e, d)| (s.weight, s.values.clone(), e.weight, e.values.clone(), *d))
            .collect::<Vec<_>>()
    };
    assert_eq!(rts(a), rts(b));
    assert_eq!(a.static_row, b.static_row);
    let rows = |p: &Partition| {
        p.rows
            .iter()
            .map(|(k, r)| (k.values.clone(), r.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(rows(a), rows(b));
}

pub(crate) fn encode(p: &Partition, base_us: i64) -> Vec<u8> {
    let mut out = Vec::new();
    Enc {
        out: &mut out,
        base_us,
    }
    .partition_indexed(p, &mut Vec::new());
    out
}

pub(crate) fn decode(buf: &[u8], p: &Partition, base_us: i64) -> Result<Partition, StorageError> {
    let cmp = cmp2(false);
    let mut r = Reader::new(buf, "t");
    let mut d = Dec::new(&mut r, base_us);
    let (mut back, n) = d.partition_header(&cmp, p.key.clone(), p.token)?;
    d.rows(&cmp, n, &mut back)?;
    if r.remaining() != 0 {
        return Err(err("trailing bytes"));
    }
    Ok(back)
}

#[test]
fn every_kind_of_content_round_trips_whatever_the_base() {
    let cmp = cmp2(false);
    let p = everything(&cmp, b"key", -3);
    for base in [0, 1_700_000_000_000_000, i64::MIN, i64::MAX, -1] {
        let buf = encode(&p, base);
        same(&decode(&buf, &p, base).unwrap(), &p);
    }
}

#[test]
fn truncated_or_garbled_input_is_an_error_not_a_panic() {
    let cmp = cmp2(false);
    let p = everything(&cmp, b"key", 1);
    let buf = encode(&p, 1_700_000_000_000_000);
    for cut in 0..buf.len() {
        assert!(decode(&buf[..cut], &p, 0).is_err(), "cut at {cut}");
    }
    // Flipping bytes may decode to something else, but must never panic.
    for i in 0..buf.len() {
        for x in [0x01u8, 0x80, 0xff] {
            let mut b = buf.clone();
            b[i] ^= x;
            let _ = decode(&b, &p, 0);
        }
    }
    // A varint that never ends.
    assert!(decode(&[0xff; 32], &p, 0).is_err());
}

/// A cassandra-stress `standard1` row: no clustering, a row marker and five 34-byte blobs.
pub(crate) fn standard1(ts: i64) -> (Partition, usize) {
    let cmp = Arc::new(ClusteringComparator::new(Vec::new()));
    let mut p = Partition::new(Bytes::from_static(b"0123456789"), 99);
    let mut r = Row {
        liveness: Some(Liveness {
            timestamp_us: ts,
            ttl_s: 0,
            expires_at_s: 0,
        }),
        ..Row::default()
    };
    for c in 0..5u32 {
        let value = Bytes::from((0..34).map(|i| (i * 37 + c * 11) as u8).collect::<Vec<_>>());
        let cell = Cell {
            timestamp_us: ts,
            kind: CellKind::Live {
                value,
                ttl_s: 0,
                expires_at_s: 0,
            },
        };
        r.cells.insert((c, None), cell);
    }
    p.insert_row(CKey::row(Vec::new(), &cmp), r);
    (p, 5 * 34)
}

#[test]
fn standard1_row_costs_less_than_12_bytes_over_its_values() {
    let base = 1_763_900_000_000_000i64;
    // Rows of one flush are written within seconds of the base; 1 s is a 3-byte delta.
    let (p, payload) = standard1(base + 1_000_000);
    let (k, r) = p.rows.iter().next().unwrap();
    let mut new = Vec::new();
    Enc {
        out: &mut new,
        base_us: base,
    }
    .keyed_row(k, r);
    let mut old = Vec::new();
    codec::encode_keyed_row(&mut old, k, r);
    let whole_new = encode(&p, base).len();
    let mut whole_old = Vec::new();
    codec::encode_partition(&mut whole_old, &p);
    eprintln!(
        "standard1 row: payload {payload} B, format 1 {} B, format 2 {} B; \
         partition: format 1 {} B, format 2 {} B (+ key and token in the index)",
        old.len(),
        new.len(),
        whole_old.len(),
        whole_new
    );
    assert!(new.len() < payload + 12, "{} bytes", new.len());
    let cmp = Arc::new(ClusteringComparator::new(Vec::new()));
    let mut rd = Reader::new(&new, "t");
    let mut back = VecDeque::new();
    Dec::new(&mut rd, base)
        .keyed_rows(&cmp, 1, &mut back)
        .unwrap();
    assert_eq!(back.pop_front().map(|(_, r)| r).as_ref(), Some(&**r));
}

/// A partition over the row-index threshold (64 KiB), so it gets row-index blocks.
pub(crate) fn wide(cmp: &Arc<ClusteringComparator>) -> Partition {
    let mut p = Partition::new(Bytes::from_static(b"k3"), 7);
    for i in 0..1500u32 {
        let mut r = Row::default();
        let cell = Cell {
            timestamp_us: 1_700_000_000_000_000 + i64::from(i),
            kind: CellKind::Live {
                value: Bytes::from(vec![i as u8; 100]),
                ttl_s: 0,
                expires_at_s: 0,
            },
        };
        r.cells.insert((1, None), cell);
        let k = vec![Bytes::from(i.to_be_bytes().to_vec()), Bytes::new()];
        p.insert_row(CKey::row(k, cmp), r);
    }
    p
}

/// Rows outside the slice are stepped over without being built, and the walk lands where a full
/// decode does: every kind of row, for slices that take none, some or all of them.
#[test]
fn rows_outside_a_slice_are_skipped_exactly() {
    let cmp = cmp2(false);
    for p in [everything(&cmp, b"k", 1), wide(&cmp)] {
        let t = 1_700_000_000_000_000i64;
        let buf = encode(&p, t);
        let keys: Vec<CKey> = p.rows.keys().cloned().collect();
        let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
            continue;
        };
        let mid = &keys[keys.len() / 2];
        let slices: Vec<(Vec<(CKey, CKey)>, usize)> = vec![
            (vec![(first.clone(), last.clone())], usize::MAX),
            (vec![(mid.clone(), last.clone())], usize::MAX),
            (vec![(first.clone(), mid.clone())], usize::MAX),
            (vec![(last.clone(), first.clone())], usize::MAX),
            (vec![(first.clone(), last.clone())], 3),
            (
                vec![(mid.clone(), mid.clone()), (last.clone(), last.clone())],
                usize::MAX,
            ),
        ];
        for (ranges, keep) in slices {
            let mut r = Reader::new(&buf, "t");
            let mut d = Dec::new(&mut r, t);
            let (mut back, n) = d.partition_header(&cmp, p.key.clone(), p.token).unwrap();
            let mut kept = Vec::new();
            let stopped = d.rows_in(&cmp, n, &mut kept, &ranges, keep).unwrap();
            back.rows
                .extend(kept.into_iter().map(|(k, r)| (k, Box::new(r))));
            let expected: Vec<&CKey> = keys
                .iter()
                .filter(|k| ranges.iter().any(|(s, e)| s <= *k && *k <= e))
                .take(keep)
                .collect();
            assert_eq!(back.rows.keys().collect::<Vec<_>>(), expected);
            assert_eq!(back.rows.len(), expected.len());
            for k in expected {
                assert_eq!(back.rows.get(k), p.rows.get(k));
            }
            if !stopped {
                assert_eq!(r.remaining(), 0, "the walk ends where the partition does");
            }
            assert_eq!(
                stopped,
                keep < n && back.rows.len() == keep && keep < keys.len()
            );
        }
    }
}

#[test]
fn shared_decoding_points_values_into_the_buffer_and_decodes_the_same() {
    let cmp = cmp2(false);
    let p = everything(&cmp, b"key", -3);
    let buf = Bytes::from(encode(&p, 0));
    let mut r = Reader::new(&buf, "t");
    let mut d = Dec::new(&mut r, 0).sharing(Some(&buf));
    let (mut back, n) = d.partition_header(&cmp, p.key.clone(), p.token).unwrap();
    d.rows(&cmp, n, &mut back).unwrap();
    same(&p, &back);
    let inside = |v: &Bytes| {
        let (start, end) = (buf.as_ptr() as usize, buf.as_ptr() as usize + buf.len());
        v.is_empty() || (start..end).contains(&(v.as_ptr() as usize))
    };
    let values: Vec<&Bytes> = back
        .rows
        .values()
        .flat_map(|r| r.cells.iter())
        .filter_map(|(_, c)| match &c.kind {
            CellKind::Live { value, .. } => Some(value),
            _ => None,
        })
        .collect();
    assert!(!values.is_empty());
    assert!(
        values.iter().all(|v| inside(v)),
        "every value shares the buffer"
    );

    // A reader over another buffer than the one named copies instead.
    let other = buf.to_vec();
    let mut r = Reader::new(&other, "t");
    let mut d = Dec::new(&mut r, 0).sharing(Some(&buf));
    let (mut copied, n) = d.partition_header(&cmp, p.key.clone(), p.token).unwrap();
    d.rows(&cmp, n, &mut copied).unwrap();
    same(&p, &copied);
    let shares = copied.rows.values().flat_map(|r| r.cells.iter()).any(|(_, c)| {
        matches!(&c.kind, CellKind::Live { value, .. } if !value.is_empty() && inside(value))
    });
    assert!(!shares);
}
