//! Point-in-time reads for `nodetool export`: a read through a pin sees the table as the pin's
//! flush left it — not the writes, deletions, flushes and compactions that follow — with the
//! same merge as every read (a deletion before the pin hides its rows).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

mod common;
use common::*;
use helenus_storage::*;

fn rows_of(r: &ReadResult) -> Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    for p in &r.partitions {
        for row in &p.rows {
            let v = row
                .cells
                .iter()
                .find(|c| c.column == 1)
                .map(|c| c.value.to_vec())
                .unwrap_or_default();
            out.push((p.key.to_vec(), row.clustering[0].to_vec(), v));
        }
    }
    out.sort();
    out
}

#[test]
fn a_pinned_read_sees_the_table_as_the_pin_left_it() {
    let dir = tempdir("pinned");
    let e = open(&dir, 0);
    // Before the pin: two partitions over an SSTable and the memtable, one row deleted.
    let mut m = mutation(b"a");
    m.rows.push(row(b"1", vec![set(1, 1, b"old")]));
    m.rows.push(row(b"2", vec![set(1, 1, b"gone")]));
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    let mut m = mutation(b"a");
    m.rows.push(RowUpdate {
        deletion: Some(DeletionTime {
            marked_for_delete_at_us: 2,
            local_deletion_time_s: now(),
        }),
        ..row(b"2", vec![])
    });
    e.apply_blocking(&[m]).unwrap();
    let mut m = mutation(b"b");
    m.rows.push(row(b"1", vec![set(1, 1, b"b1")]));
    e.apply_blocking(&[m]).unwrap();

    let pin = e.flush_and_pin(TABLE).unwrap();
    assert_eq!(pin.sstable_count(), 2);

    // After the pin: an overwrite, a new partition, a deletion, a flush and a compaction.
    let mut m = mutation(b"a");
    m.rows.push(row(b"1", vec![set(1, 5, b"new")]));
    e.apply_blocking(&[m]).unwrap();
    let mut m = mutation(b"c");
    m.rows.push(row(b"1", vec![set(1, 5, b"c1")]));
    e.apply_blocking(&[m]).unwrap();
    let mut m = mutation(b"b");
    m.partition_deletion = Some(DeletionTime {
        marked_for_delete_at_us: 6,
        local_deletion_time_s: now(),
    });
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    e.compact(TABLE).unwrap();

    let expected = vec![
        (b"a".to_vec(), b"1".to_vec(), b"old".to_vec()),
        (b"b".to_vec(), b"1".to_vec(), b"b1".to_vec()),
    ];
    assert_eq!(
        rows_of(&e.read_pinned(&pin, &scan_all(now())).unwrap()),
        expected
    );
    // A single-partition read through the pin is pinned too.
    assert_eq!(
        rows_of(&e.read_pinned(&pin, &point(b"a", now())).unwrap()),
        expected[..1].to_vec()
    );
    // "b" is in one pinned SSTable (read without a merge) and deleted in the live table.
    assert_eq!(
        rows_of(&e.read_pinned(&pin, &point(b"b", now())).unwrap()),
        expected[1..].to_vec()
    );
    // The live table moved on, and an ordinary read after a pinned one is not pinned.
    let live = rows_of(&e.read(TABLE, &scan_all(now())).unwrap());
    assert_eq!(
        live,
        vec![
            (b"a".to_vec(), b"1".to_vec(), b"new".to_vec()),
            (b"c".to_vec(), b"1".to_vec(), b"c1".to_vec()),
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
