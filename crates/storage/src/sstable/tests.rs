//! SSTables written in data format 2 and in the fixed-width format 1 of old writers read back
//! alike, and partitions copied in encoded form (raw.rs) keep everything but their timestamps'
//! base.

use super::{SSTableReader, SSTableWriter};
use crate::clustering::tests::cmp2;
use crate::clustering::{CKey, ClusteringComparator};
use crate::codec::compact::tests::*;
use crate::codec::compact::Enc;
use crate::partition::Partition;
use crate::reconcile::{Cell, CellKind};
use crate::types::{Liveness, TableOptions};
use bytes::Bytes;
use std::sync::Arc;

fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("helenus-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Writes three partitions in the given format (the old writer when `fixed`) and reads them
/// back; an old file also gets the version 2 statistics old writers wrote.
fn write_and_read(fixed: bool) -> Arc<SSTableReader> {
    let cmp = cmp2(false);
    let dir = temp_dir(if fixed { "fmt1" } else { "fmt2" });
    let mut w = SSTableWriter::create(
        &dir,
        1,
        &TableOptions::default().compression,
        2,
        0.01,
        0,
        helenus_types::SystemClock::shared(),
    )
    .unwrap();
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
        // A small partition has no row index: it is read whole, and only the slice's rows
        // are returned.
        let all = everything(&cmp, b"k2", 6);
        let inside: Vec<&CKey> = all
            .rows
            .keys()
            .filter(|k| crate::clustering::in_ranges(&ranges, k))
            .collect();
        assert!(!inside.is_empty() && inside.len() < all.rows.len());
        assert_eq!(sliced.rows.keys().collect::<Vec<_>>(), inside);
        same(&s.read_partition(2, None).unwrap(), &wide(&cmp));
        // Compaction's streaming path reads the wide partition block by block.
        let cache = crate::byte_cache::ByteCache::new(1 << 20);
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
                .chain(p.rows.values().map(|r| &**r))
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
            p.insert_row(k.clone(), (**r).clone());
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
