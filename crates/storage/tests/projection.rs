//! `ReadQuery::columns`: a read copies only the cells of the columns asked for, yet a row kept
//! alive only by another column is still a row, and static rows come back whole; the same from
//! the memtable and from an SSTable.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

mod common;
use common::*;
use helenus_storage::*;

fn columns_of(r: &LiveRow) -> Vec<ColumnId> {
    r.cells.iter().map(|c| c.column).collect()
}

#[test]
fn a_projected_read_keeps_rows_alive_through_columns_it_does_not_return() {
    let dir = tempdir("projection");
    let e = open(&dir, 864_000);
    let mut m = mutation(b"p");
    m.static_row = Some(row(b"", vec![set(STATIC_COL, 1, b"s")]));
    m.static_row.as_mut().unwrap().clustering.clear();
    m.rows
        .push(row(b"a", vec![set(1, 1, b"a1"), set(2, 1, b"a2")]));
    // Only column 2 keeps row b alive (an UPDATE, no row marker).
    m.rows.push(row(b"b", vec![set(2, 1, b"b2")]));
    m.rows.push(row(b"c", vec![set(1, 1, b"c1")]));
    e.apply_blocking(&[m]).unwrap();
    let mut deleted = mutation(b"p");
    // Row d: its only cell is deleted, so it is not a row at all.
    deleted.rows.push(row(
        b"d",
        vec![CellUpdate {
            column: 2,
            path: None,
            timestamp_us: 2,
            op: CellOp::Delete,
        }],
    ));
    e.apply_blocking(&[deleted]).unwrap();

    for stage in ["memtable", "sstable"] {
        if stage == "sstable" {
            e.flush(None).unwrap();
        }
        let q = ReadQuery {
            columns: Some(vec![1].into()),
            ..point(b"p", now())
        };
        let r = e.read(TABLE, &q).unwrap();
        let p = &r.partitions[0];
        let rows: Vec<(&[u8], Vec<ColumnId>)> = p
            .rows
            .iter()
            .map(|r| (r.clustering[0].as_ref(), columns_of(r)))
            .collect();
        assert_eq!(
            rows,
            vec![
                (&b"a"[..], vec![1]),
                (&b"b"[..], vec![]),
                (&b"c"[..], vec![1])
            ],
            "{stage}"
        );
        let statics = p.static_row.as_ref().map(columns_of);
        assert_eq!(statics, Some(vec![STATIC_COL]), "{stage}");

        let all = e.read(TABLE, &point(b"p", now())).unwrap();
        let all_cols: Vec<Vec<ColumnId>> = all.partitions[0].rows.iter().map(columns_of).collect();
        assert_eq!(all_cols, vec![vec![1, 2], vec![2], vec![1]], "{stage}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An INSERT's row (row marker, every cell at its timestamp, no TTL) is stored as a simple row,
/// whose unreturned cells an SSTable read steps over: the marker alone decides whether the row
/// lives. Newer SSTables that delete the row or set an unreturned column must still count.
#[test]
fn a_projected_read_of_inserted_rows_in_sstables_matches_a_full_read() {
    let dir = tempdir("projection-simple");
    let e = open(&dir, 864_000);
    let inserted = |ck: &[u8], ts: i64| RowUpdate {
        liveness: Some(Liveness {
            timestamp_us: ts,
            ttl_s: 0,
            expires_at_s: 0,
        }),
        ..row(ck, vec![set(1, ts, b"one"), set(2, ts, b"two")])
    };
    let mut m = mutation(b"p");
    for ck in [&b"a"[..], b"b", b"c", b"d"] {
        m.rows.push(inserted(ck, 1));
    }
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    let deletion = DeletionTime {
        marked_for_delete_at_us: 2,
        local_deletion_time_s: now(),
    };
    let mut later = mutation(b"p");
    // b: deleted, then column 2 set again by an UPDATE: alive through column 2 only.
    later.rows.push(RowUpdate {
        deletion: Some(deletion),
        ..row(b"b", vec![set(2, 3, b"two again")])
    });
    // c: deleted.
    later.rows.push(RowUpdate {
        deletion: Some(deletion),
        ..row(b"c", vec![])
    });
    // d: column 1 deleted; the marker keeps the row.
    later.rows.push(row(
        b"d",
        vec![CellUpdate {
            column: 1,
            path: None,
            timestamp_us: 2,
            op: CellOp::Delete,
        }],
    ));
    e.apply_blocking(&[later]).unwrap();
    for stage in ["memtable", "sstable"] {
        if stage == "sstable" {
            e.flush(None).unwrap();
        }
        let projected = ReadQuery {
            columns: Some(vec![1].into()),
            ..point(b"p", now())
        };
        let r = e.read(TABLE, &projected).unwrap();
        let rows: Vec<(&[u8], Vec<ColumnId>)> = r.partitions[0]
            .rows
            .iter()
            .map(|r| (r.clustering[0].as_ref(), columns_of(r)))
            .collect();
        assert_eq!(
            rows,
            vec![
                (&b"a"[..], vec![1]),
                (&b"b"[..], vec![]),
                (&b"d"[..], vec![])
            ],
            "{stage}"
        );
        let values: Vec<&[u8]> = r.partitions[0]
            .rows
            .iter()
            .flat_map(|r| r.cells.iter().map(|c| c.value.as_ref()))
            .collect();
        assert_eq!(values, vec![&b"one"[..]], "{stage}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
