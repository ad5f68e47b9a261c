//! Tests of the compact data format (codec_compact.rs) and of reading SSTables written in the
//! fixed-width format 1 by the old writer.

use super::*;
use crate::clustering::tests::cmp2;
use crate::codec;
use crate::sstable::{SSTableReader, SSTableWriter};
use crate::types::TableOptions;

fn ck(vals: &[&'static [u8]], cmp: &Arc<ClusteringComparator>) -> CKey {
    CKey::row(vals.iter().map(|v| Bytes::from_static(v)).collect(), cmp)
}

fn live(ts: i64, v: &'static [u8]) -> Cell {
    Cell {
        timestamp_us: ts,
        kind: CellKind::Live {
            value: Bytes::from_static(v),
            ttl_s: 0,
            expires_at_s: 0,
        },
    }
}

fn dt(ts: i64, ldt: i64) -> DeletionTime {
    DeletionTime {
        marked_for_delete_at_us: ts,
        local_deletion_time_s: ldt,
    }
}

/// A partition with every kind of content the format has a flag for.
fn everything(cmp: &Arc<ClusteringComparator>, key: &'static [u8], token: i64) -> Partition {
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
    p.rows.insert(ck(&[b"a", b"1"], cmp), simple.clone());
    // A sparse simple row: some columns null, the rest live at the marker's timestamp.
    let mut sparse = simple;
    sparse.cells.clear();
    for c in [2, 3, 9, 40, 65] {
        sparse.cells.insert((c, None), live(t, b"s"));
    }
    p.rows.insert(ck(&[b"a", b"2"], cmp), sparse);
    // A row with every cell kind, collections, an expiring marker and deletions.
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
    p.rows.insert(ck(&[b"b", b""], cmp), mixed);
    // A row with only a deletion, and one with cells but no marker.
    p.rows.insert(
        ck(&[b"c", b"2"], cmp),
        Row {
            deletion: Some(dt(t, 1_700_000_000)),
            ..Row::default()
        },
    );
    let mut no_marker = Row::default();
    no_marker.cells.insert((1, None), live(t, b"z"));
    p.rows.insert(ck(&[b"d", b"3"], cmp), no_marker.clone());
    // A clustering prefix shorter than the table's, and one of 3+ values (counted apart).
    p.rows.insert(ck(&[b"e"], cmp), no_marker.clone());
    p.rows.insert(ck(&[b"f", b"1", b"x"], cmp), no_marker);
    p
}

fn same(a: &Partition, b: &Partition) {
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

fn encode(p: &Partition, base_us: i64) -> Vec<u8> {
    let mut out = Vec::new();
    Enc {
        out: &mut out,
        base_us,
    }
    .partition_indexed(p, &mut Vec::new());
    out
}

fn decode(buf: &[u8], p: &Partition, base_us: i64) -> Result<Partition, StorageError> {
    let cmp = cmp2(false);
    let mut r = Reader::new(buf, "t");
    let mut d = Dec { r: &mut r, base_us };
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
fn standard1(ts: i64) -> (Partition, usize) {
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
    p.rows.insert(CKey::row(Vec::new(), &cmp), r);
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
    Dec {
        r: &mut rd,
        base_us: base,
    }
    .keyed_rows(&cmp, 1, &mut back)
    .unwrap();
    assert_eq!(back.pop_front().map(|(_, r)| r).as_ref(), Some(r));
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("helenus-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A partition over the row-index threshold (64 KiB), so it gets row-index blocks.
fn wide(cmp: &Arc<ClusteringComparator>) -> Partition {
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
        p.rows.insert(CKey::row(k, cmp), r);
    }
    p
}

/// Writes three partitions in the given format (the old writer when `fixed`) and reads them
/// back; an old file also gets the version 2 statistics old writers wrote.
fn write_and_read(fixed: bool) -> Arc<SSTableReader> {
    let cmp = cmp2(false);
    let dir = temp_dir(if fixed { "fmt1" } else { "fmt2" });
    let mut w =
        SSTableWriter::create(&dir, 1, &TableOptions::default().compression, 2, 0.01, 0).unwrap();
    if fixed {
        w.use_fixed_format();
    }
    w.append(&everything(&cmp, b"k1", 5)).unwrap();
    w.append(&everything(&cmp, b"k2", 6)).unwrap();
    w.append(&wide(&cmp)).unwrap();
    let r = w.finish(&cmp).unwrap();
    if fixed {
        // Statistics as version 2 wrote them: version byte 2, no data format or base.
        let path = crate::sstable::component_path(&dir, 1, "Statistics.db");
        let mut st = std::fs::read(&path).unwrap();
        st[4 + 8 * 2 + 8 * 4 + 8 + 8 + 8 * 3 + 4] = 2;
        st.truncate(st.len() - 9);
        std::fs::write(&path, st).unwrap();
    }
    let reopened = SSTableReader::open(&dir, 1, &cmp).unwrap();
    for s in [&r, &reopened] {
        assert_eq!(s.stats.data_format, if fixed { 1 } else { 2 });
        assert_eq!(s.partition_count(), 3);
        same(
            &s.read_partition(0, None).unwrap(),
            &everything(&cmp, b"k1", 5),
        );
        same(
            &s.read_partition(1, None).unwrap(),
            &everything(&cmp, b"k2", 6),
        );
        let ranges = [(ck(&[b"b"], &cmp), ck(&[b"c"], &cmp))];
        let sliced = s
            .read_partition_sliced(&s.entry(1).unwrap(), &ranges, None)
            .unwrap();
        // A small partition has no row index: a slice reads all of it.
        assert_eq!(sliced.rows.len(), everything(&cmp, b"k2", 6).rows.len());
        same(&s.read_partition(2, None).unwrap(), &wide(&cmp));
        // Compaction's streaming path reads the wide partition block by block.
        let cache = crate::cache::ByteCache::new(1 << 20);
        let (_, mut cursor) = crate::sstable::wide::RowCursor::open(s, 2, &cache).unwrap();
        let mut streamed = 0;
        while cursor.peek().unwrap().is_some() {
            cursor.pop();
            streamed += 1;
        }
        assert_eq!(streamed, 1500);
        assert!(s.entry(2).unwrap().blocks.len() > 1);
        let k = |i: u32| CKey::row(vec![Bytes::from(i.to_be_bytes().to_vec())], &cmp);
        let sliced = s
            .read_partition_sliced(&s.entry(2).unwrap(), &[(k(10), k(11))], None)
            .unwrap();
        assert!(
            sliced.rows.len() < 1500
                && sliced.rows.contains_key(&CKey::row(
                    vec![Bytes::from(10u32.to_be_bytes().to_vec()), Bytes::new()],
                    &cmp
                ))
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
    reopened
}

#[test]
fn sstables_of_the_old_fixed_format_stay_readable() {
    let old = write_and_read(true);
    let new = write_and_read(false);
    assert!(new.stats.uncompressed_bytes < old.stats.uncompressed_bytes);
    assert_eq!(
        new.entry(1).unwrap().position,
        u64::from(new.entry(0).unwrap().length)
    );
}

/// `everything` without what compaction may purge or shadow: deletions, TTLs, tombstones.
fn plain(cmp: &Arc<ClusteringComparator>) -> Partition {
    let mut p = everything(cmp, b"plain", 11);
    p.deletion = None;
    p.range_tombstones.clear();
    for r in p.rows.values_mut() {
        r.deletion = None;
        r.complex_deletions.clear();
        if let Some(l) = &mut r.liveness {
            l.ttl_s = 0;
            l.expires_at_s = 0;
        }
        r.cells.retain(|_, c| {
            !matches!(
                c.kind,
                CellKind::Tombstone { .. } | CellKind::Live { ttl_s: 1.., .. }
            )
        });
    }
    p.rows.retain(|_, r| !r.is_empty());
    p
}

#[test]
fn raw_copy_rebases_timestamps_and_keeps_everything_else() {
    use crate::sstable::raw::rebase;
    let cmp = cmp2(false);
    for p in [plain(&cmp), wide(&cmp), standard1(1_700_000_000_000_000).0] {
        let t = 1_700_000_000_000_000i64;
        for (from, to) in [
            (t, t),
            (t, t + 5_000_000),
            (t, 0),
            (0, t),
            (i64::MIN, i64::MAX),
        ] {
            let src = encode(&p, from);
            let mut starts = Vec::new();
            let header_len = Enc {
                out: &mut Vec::new(),
                base_us: to,
            }
            .partition_indexed(&p, &mut starts);
            let r = rebase(p.token, p.key.clone(), &src, from, to)
                .unwrap()
                .expect("plain partitions are copied");
            assert_eq!(r.bytes, encode(&p, to), "{from} -> {to}");
            assert_eq!((r.header_len, &r.row_starts), (header_len, &starts));
            assert_eq!(r.timestamps, p.timestamp_range());
            assert_eq!(r.static_row, !p.static_row.is_empty());
            let cells: usize = std::iter::once(&p.static_row)
                .chain(p.rows.values())
                .map(|r| r.cells.len() + usize::from(r.liveness.is_some()))
                .sum();
            assert_eq!(r.cells, cells as u64);
        }
    }
}

#[test]
fn raw_copy_declines_what_compaction_must_decode_and_rejects_garbage() {
    use crate::sstable::raw::rebase;
    let cmp = cmp2(false);
    let t = 1_700_000_000_000_000i64;
    let full = encode(&everything(&cmp, b"k", 1), t);
    assert!(rebase(1, Bytes::new(), &full, t, 0).unwrap().is_none());
    // One expiring cell, one cell tombstone or one row deletion is enough to decline.
    let base = plain(&cmp);
    let first = base.rows.keys().next().unwrap().clone();
    let mut variants = Vec::new();
    let mut p = base.clone();
    p.rows.get_mut(&first).unwrap().cells.insert(
        (40, None),
        Cell {
            timestamp_us: t,
            kind: CellKind::Tombstone {
                local_deletion_time_s: 1,
            },
        },
    );
    variants.push(p);
    let mut p = base.clone();
    p.rows.get_mut(&first).unwrap().deletion = Some(dt(t, 1));
    variants.push(p);
    let mut p = base.clone();
    p.rows.get_mut(&first).unwrap().liveness = Some(Liveness {
        timestamp_us: t,
        ttl_s: 10,
        expires_at_s: 100,
    });
    variants.push(p);
    for p in variants {
        assert!(rebase(1, Bytes::new(), &encode(&p, t), t, 0)
            .unwrap()
            .is_none());
    }
    let src = encode(&base, t);
    for cut in 0..src.len() {
        assert!(
            rebase(1, Bytes::new(), &src[..cut], t, 0).is_err(),
            "cut {cut}"
        );
    }
    let mut long = src.clone();
    long.push(0);
    assert!(rebase(1, Bytes::new(), &long, t, 0).is_err());
    for i in 0..src.len() {
        for x in [0x01u8, 0x80, 0xff] {
            let mut b = src.clone();
            b[i] ^= x;
            let _ = rebase(1, Bytes::new(), &b, t, 0);
        }
    }
}

#[test]
fn raw_copy_joins_inputs_whose_rows_do_not_interleave() {
    use crate::sstable::raw::{concat, rebase};
    let cmp = cmp2(false);
    let whole = wide(&cmp);
    let t = 1_700_000_000_000_000i64;
    let mut pieces: Vec<Partition> = Vec::new();
    for (n, (k, r)) in whole.rows.iter().enumerate() {
        if n % 500 == 0 {
            pieces.push(Partition::new(whole.key.clone(), whole.token));
        }
        if let Some(p) = pieces.last_mut() {
            p.rows.insert(k.clone(), r.clone());
        }
    }
    let to = t + 7;
    // Inputs arrive in any order, each with its own timestamp base.
    let encoded = |order: &[usize]| -> Vec<_> {
        order
            .iter()
            .map(|&i| {
                let base = t - 1000 * i as i64;
                let src = encode(&pieces[i], base);
                rebase(whole.token, whole.key.clone(), &src, base, to)
                    .unwrap()
                    .unwrap()
            })
            .collect()
    };
    let (joined, bounds) = concat(encoded(&[2, 0, 1]), &cmp).unwrap().unwrap();
    assert_eq!(joined.bytes, encode(&whole, to));
    let mut starts = Vec::new();
    let header_len = Enc {
        out: &mut Vec::new(),
        base_us: to,
    }
    .partition_indexed(&whole, &mut starts);
    assert_eq!(
        (joined.header_len, &joined.row_starts),
        (header_len, &starts)
    );
    assert_eq!(joined.timestamps, whole.timestamp_range());
    let (lo, hi) = bounds.unwrap();
    assert_eq!(
        (&lo, &hi),
        (
            whole.rows.keys().next().unwrap(),
            whole.rows.keys().last().unwrap()
        )
    );
    // Overlapping rows, or a static row, need the decoding merge.
    let mut overlap = encoded(&[0, 1]);
    overlap.extend(encoded(&[1]));
    assert!(concat(overlap, &cmp).unwrap().is_none());
    let mut with_static = pieces[0].clone();
    with_static
        .static_row
        .cells
        .insert((7, None), live(t, b"s"));
    let src = encode(&with_static, t);
    let s = rebase(1, Bytes::new(), &src, t, to).unwrap().unwrap();
    let mut parts = encoded(&[1]);
    parts.push(s);
    assert!(concat(parts, &cmp).unwrap().is_none());
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
            let mut d = Dec {
                r: &mut r,
                base_us: t,
            };
            let (mut back, n) = d.partition_header(&cmp, p.key.clone(), p.token).unwrap();
            let stopped = d.rows_in(&cmp, n, &mut back, &ranges, keep).unwrap();
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
