//! Segments whose columns fix one another (derive.rs): every read path gives back what was
//! written, and a derived stream costs a mapping, not a value per row.

use super::footer::{ChunkEntry, Footer, GroupMeta};
use super::layout::StreamLayout;
use super::stats::ChunkStats;
use super::tests::{
    assert_partitions_back, clustering_cols, live_cell, schema, stream_bytes, write_uncompressed,
};
use super::vector::{Column, Physical};
use super::*;
use crate::clustering::{CKey, ClusteringComparator};
use crate::partition::{Partition, Row};
use crate::test_support::{tempdir, Rng};
use crate::types::Liveness;
use bytes::Bytes;
use std::sync::Arc;

const PLACES: usize = 300;

/// Column 1: the place's number; 3: its latitude; 4: its name (null for every seventh place);
/// 5: whether its number is even (too few values to be derived); 2: independent of it; 6:
/// unique per row.
fn place_cells(place: usize, i: usize) -> Vec<(u32, Option<Vec<u8>>)> {
    let number = 9_000 - 37 * place as i32;
    let lat = -60.0 + place as f64 * 0.0625;
    let name = (!place.is_multiple_of(7)).then(|| format!("place {place:02}").into_bytes());
    vec![
        (1, Some(number.to_be_bytes().to_vec())),
        (
            2,
            Some((i as i64 * 7919 % 1_000_003).to_be_bytes().to_vec()),
        ),
        (3, Some(lat.to_be_bytes().to_vec())),
        (4, name),
        (5, Some(vec![u8::from(number % 2 == 0)])),
        (6, Some(format!("{i:016}").into_bytes())),
    ]
}

fn partitions(picks: &[usize]) -> Vec<Partition> {
    let cmp = Arc::new(ClusteringComparator::new(clustering_cols()));
    picks
        .iter()
        .enumerate()
        .map(|(i, place)| {
            let mut p = Partition::new(Bytes::from(format!("{i:08}")), i as i64);
            let mut row = Row {
                liveness: Some(Liveness {
                    timestamp_us: 5,
                    ttl_s: 0,
                    expires_at_s: 0,
                }),
                ..Row::default()
            };
            for (id, v) in place_cells(*place, i) {
                if let Some(v) = v {
                    row.cells.insert((id, None), live_cell(v, 5));
                }
            }
            let ck = vec![Bytes::from(0i32.to_be_bytes().to_vec()), Bytes::new()];
            p.insert_row(CKey::row(ck, &cmp), row);
            p
        })
        .collect()
}

#[test]
fn columns_fixed_by_another_are_stored_as_mappings_and_read_back_on_every_path() {
    let dir = tempdir("columnar-derived");
    let mut r = Rng(23);
    let rows = 20_000usize;
    let picks: Vec<usize> = (0..rows).map(|_| r.below(PLACES as u64) as usize).collect();
    let parts = partitions(&picks);
    let summary = write_uncompressed(&dir, &parts, 4000);
    let bytes_of = |name: &str| stream_bytes(&summary, name);
    // Five groups of 300 entries each (a name is 9 bytes, a latitude a 10-bit scaled integer),
    // against 9-bit codes for 20,000 rows (22.5 kB) coded alone.
    assert!(
        bytes_of("col 4 value") < 17_000,
        "{}",
        bytes_of("col 4 value")
    );
    assert!(
        bytes_of("col 3 value") < 4_000,
        "{}",
        bytes_of("col 3 value")
    );
    assert!(bytes_of("col 2 value") > rows as u64, "independent column");
    let seg = SegmentReader::open(&summary.path, &clustering_cols()).unwrap();
    let types = [
        (1, ValueType::Int),
        (2, ValueType::BigInt),
        (3, ValueType::Double),
        (4, ValueType::Text),
        (5, ValueType::Boolean),
        (6, ValueType::Opaque),
    ];
    let req = ScanRequest {
        columns: types.iter().map(|(id, _)| *id).collect(),
        ..ScanRequest::default()
    };
    let mut at = 0;
    for b in seg.scan(&req) {
        let b = b.unwrap();
        for i in 0..b.rows {
            let want = place_cells(picks[at + i], at + i);
            for (j, (_, t)) in types.iter().enumerate() {
                let got = b.columns[j].values.serialized(i, *t);
                assert_eq!(got, want[j].1, "group {} row {i} col {j}", b.group);
            }
        }
        // Restrictions on derived columns: the mapping is tested, then looked up per row.
        let name = ValuePredicate::new(ValueType::Text, CompareOp::Eq, b"place 100");
        let lat = ValuePredicate::new(ValueType::Double, CompareOp::Ge, &(-50.0f64).to_be_bytes());
        let by_name = seg.select_rows(b.group, 4, &name).unwrap();
        let by_lat = seg.select_rows(b.group, 3, &lat).unwrap();
        for i in 0..b.rows {
            let place = picks[at + i];
            assert_eq!(by_name.get(i), place == 100, "row {i}");
            assert_eq!(
                by_lat.get(i),
                -60.0 + place as f64 * 0.0625 >= -50.0,
                "row {i}"
            );
        }
        // A selective read of a derived column has values at the selected rows only.
        let got = seg.read_selected(b.group, 3, &by_name).unwrap();
        for i in 0..b.rows {
            let want = b.columns[2].values.serialized(i, ValueType::Double);
            assert_eq!(
                got.serialized(i, ValueType::Double),
                want.filter(|_| by_name.get(i))
            );
        }
        at += b.rows;
    }
    assert_eq!(at, rows);
    assert_partitions_back(&seg, &parts);
}

#[test]
fn footers_with_impossible_derivations_are_refused() {
    let layout = StreamLayout::of(&schema());
    let value = |j: usize| layout.column_stream(j);
    let empty = Column::nulls(Physical::Int, 0);
    let chunk = ChunkEntry {
        offset: 8,
        len: 0,
        crc: 0,
        physical: Physical::Int,
        stats: ChunkStats::of(&empty, ValueType::Int),
    };
    let footer = |derived: Vec<(usize, usize)>| Footer {
        layout: layout.clone(),
        groups: vec![GroupMeta {
            rows: 0,
            flags: 0,
            chunks: vec![chunk.clone(); layout.streams()],
            derived,
        }],
        dicts: Vec::new(),
    };
    let fine = footer(vec![(value(1), value(0)), (value(2), value(0))]);
    assert_eq!(Footer::decode(&fine.encode(), 1 << 20).unwrap(), fine);
    for bad in [
        vec![(value(1), value(1))],
        vec![(value(1), value(0)), (value(0), value(2))],
        vec![(value(1), value(0)), (value(1), value(2))],
        vec![(0, value(0))],
        vec![(value(0), value(1) + 1)],
    ] {
        let f = footer(bad.clone());
        assert!(Footer::decode(&f.encode(), 1 << 20).is_err(), "{bad:?}");
    }
}
