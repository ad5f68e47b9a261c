//! Secondary indexes kept by the engine (src/index.rs): entries added on every write, in the
//! same commitlog entry, built over earlier data, paged in base-scan order, and kept across
//! flush, compaction, commitlog replay and restart.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

mod common;
use bytes::Bytes;
use common::*;
use helenus_storage::*;

const INDEX: TableId = [8; 16];

fn index_def() -> IndexDef {
    IndexDef {
        index_table: INDEX,
        column: 1,
    }
}

/// Registers the index of column 1 on `e`'s test table.
fn add_index(e: &Engine) {
    e.create_table(index_table_def(&table_def(864000), INDEX, "t_v_idx"))
        .unwrap();
    e.set_indexes(TABLE, vec![index_def()]).unwrap();
}

fn write(e: &Engine, pk: u32, ck: &[u8], v: &[u8], ts: i64) {
    let mut m = mutation(&pk.to_be_bytes());
    m.rows.push(row(ck, vec![set(1, ts, v)]));
    e.apply_blocking(&[m]).unwrap();
}

/// Every entry of `value`, read `page` at a time, resuming after the last one.
fn entries(e: &Engine, value: &[u8], page: usize) -> Vec<(i64, Bytes, Vec<Bytes>)> {
    let mut out = Vec::new();
    let mut after: Option<Vec<Bytes>> = None;
    loop {
        let q = ReadQuery {
            partitions: value_partition(&b(value)),
            row_limit: Some(page),
            resume_after: after.clone(),
            ..point(b"", now())
        };
        let r = e.read(INDEX, &q).unwrap();
        let rows: Vec<Vec<Bytes>> = r
            .partitions
            .iter()
            .flat_map(|p| p.rows.iter().map(|r| r.clustering.clone()))
            .collect();
        for c in &rows {
            out.push(entry_target(c).unwrap());
        }
        if rows.len() < page {
            return out;
        }
        after = rows.last().cloned();
    }
}

#[test]
fn entries_page_in_token_order_across_memtable_sstables_and_compaction() {
    let dir = tempdir("index-paging");
    let e = open(&dir, 864000);
    add_index(&e);
    for pk in 0..2_500u32 {
        write(&e, pk, b"c", if pk % 2 == 0 { b"hit" } else { b"miss" }, 1);
        if pk == 1_000 || pk == 2_000 {
            e.flush(None).unwrap();
        }
    }
    for pk in 2_500..5_000u32 {
        write(&e, pk, b"c", b"hit", 1);
    }
    let check = |e: &Engine| {
        let got = entries(e, b"hit", 100);
        assert_eq!(got.len(), 3_750);
        let mut sorted = got.clone();
        sorted.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        sorted.dedup();
        assert_eq!(got, sorted, "entries once each, in (token, key) order");
        assert!(got.iter().all(|(t, k, _)| *t == token(k)));
    };
    check(&e);
    e.flush(None).unwrap();
    e.compact(INDEX).unwrap();
    check(&e);
}

#[test]
fn build_covers_earlier_rows_and_entries_survive_restart() {
    let dir = tempdir("index-build");
    {
        let e = open(&dir, 864000);
        for pk in 0..600u32 {
            write(&e, pk, b"c", if pk % 60 == 0 { b"x" } else { b"y" }, 1);
        }
        add_index(&e);
        assert!(!e.index_built(INDEX));
        // Written after registration, before the build: indexed by the write path.
        write(&e, 9_999, b"c", b"x", 2);
        assert_eq!(e.build_index(TABLE, &index_def()).unwrap(), 601);
        assert!(e.index_built(INDEX));
        assert_eq!(entries(&e, b"x", 7).len(), 11);
        // Left in the commitlog: the replay restores base rows and entries alike.
        write(&e, 10_000, b"c", b"x", 3);
        e.shutdown_without_flush().unwrap();
    }
    let e = Engine::open(config(&dir, CommitlogSync::Batch)).unwrap();
    e.create_table(table_def(864000)).unwrap();
    e.create_table(counter_def()).unwrap();
    add_index(&e);
    e.replay_commitlog().unwrap();
    assert!(e.index_built(INDEX));
    assert_eq!(entries(&e, b"x", 5).len(), 12);
}

#[test]
fn overwritten_and_deleted_rows_leave_entries_for_the_reader_to_check() {
    let dir = tempdir("index-stale");
    let e = open(&dir, 864000);
    add_index(&e);
    write(&e, 1, b"c", b"old", 1);
    write(&e, 1, b"c", b"new", 2);
    // Entries are only added: the stale one stays, the reader checks the base row.
    assert_eq!(entries(&e, b"old", 10).len(), 1);
    assert_eq!(entries(&e, b"new", 10).len(), 1);
    // An expiring cell gives an expiring entry.
    let mut m = mutation(&2u32.to_be_bytes());
    m.rows.push(row(
        b"c",
        vec![CellUpdate {
            column: 1,
            path: None,
            timestamp_us: 3,
            op: CellOp::SetExpiring {
                value: b(b"ttl"),
                ttl_s: 1,
                expires_at_s: now() - 1,
            },
        }],
    ));
    e.apply_blocking(&[m]).unwrap();
    assert!(entries(&e, b"ttl", 10).is_empty());
    // Dropping the table drops its index; truncating empties both.
    e.truncate(TABLE).unwrap();
    assert!(entries(&e, b"new", 10).is_empty());
    e.drop_table(TABLE).unwrap();
    assert!(e.read(INDEX, &scan_all(now())).is_err());
}
