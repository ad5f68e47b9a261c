//! The max-timestamp short-circuit of single-partition reads (read_shortcut.rs) changes how
//! many SSTables a read visits, never what it returns: random histories of writes, deletions
//! and flushes with out-of-order timestamps, read with the short-circuit on and off.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

mod common;
use common::*;
use helenus_storage::*;
use std::sync::Arc;

/// Regular columns 1 and 2 only: the single-row test applies.
const PLAIN: TableId = [11; 16];
/// No clustering columns (as cassandra-stress `standard1`): every read is a single-row read.
const SKINNY: TableId = [12; 16];

fn plain_def(id: TableId, clustered: bool) -> TableDef {
    let col = |id| ColumnDef {
        id,
        is_static: false,
        multi_cell: None,
        is_counter: false,
    };
    let mut def = table_def(864_000);
    def.id = id;
    def.name = format!("t{}", id[0]);
    def.columns = vec![col(1), col(2)];
    if !clustered {
        def.clustering.clear();
    }
    def
}

fn dt(ts: i64) -> DeletionTime {
    DeletionTime {
        marked_for_delete_at_us: ts,
        local_deletion_time_s: now(),
    }
}

/// One random mutation of `table` (clustering value `ck` when the table has one).
fn random_mutation(
    rng: &mut Rng,
    table: TableId,
    pk: &[u8],
    ck: Option<&[u8]>,
    ts: i64,
) -> Mutation {
    let mut m = mutation(pk);
    m.table = table;
    let clustering = ck.map(|c| vec![b(c)]).unwrap_or_default();
    let cell = |rng: &mut Rng, col| {
        if rng.below(5) == 0 {
            CellUpdate {
                column: col,
                path: None,
                timestamp_us: ts,
                op: CellOp::Delete,
            }
        } else {
            set(col, ts, format!("v{}", rng.below(1000)).as_bytes())
        }
    };
    let mut r = RowUpdate {
        clustering,
        liveness: None,
        deletion: None,
        cells: Vec::new(),
    };
    match rng.below(10) {
        // INSERT: row marker and every column.
        0..=3 => {
            r.liveness = Some(Liveness {
                timestamp_us: ts,
                ttl_s: 0,
                expires_at_s: 0,
            });
            // Usually every column; sometimes a subset, as INSERT allows.
            for col in [1, 2] {
                if rng.below(4) != 0 {
                    r.cells.push(cell(rng, col));
                }
            }
        }
        // UPDATE of one column.
        4..=6 => {
            let col = 1 + rng.below(2) as ColumnId;
            r.cells = vec![cell(rng, col)];
        }
        7 => r.deletion = Some(dt(ts)),
        8 => {
            m.partition_deletion = Some(dt(ts));
            return m;
        }
        _ => {
            if ck.is_some() {
                let bound = |v: &[u8]| ClusteringBound {
                    prefix: vec![b(v)],
                    kind: BoundKind::Inclusive,
                };
                m.range_tombstones.push((bound(b"a"), bound(b"b"), dt(ts)));
                return m;
            }
            r.deletion = Some(dt(ts));
        }
    }
    if table == TABLE && rng.below(3) == 0 {
        // The shared table has a static and a set column: the row test must not apply.
        m.static_row = Some(RowUpdate {
            clustering: Vec::new(),
            liveness: None,
            deletion: None,
            cells: vec![set(STATIC_COL, ts, b"s")],
        });
    }
    m.rows.push(r);
    m
}

fn queries(pk: &[u8], clustered: bool) -> Vec<ReadQuery> {
    let mut out = vec![point(pk, now())];
    if clustered {
        let inc = |v: &[u8]| ClusteringBound {
            prefix: vec![b(v)],
            kind: BoundKind::Inclusive,
        };
        for ck in [b"a", b"b", b"c"] {
            let mut q = point(pk, now());
            q.slices = vec![(inc(ck), inc(ck))];
            out.push(q);
        }
        let mut q = point(pk, now());
        q.slices = vec![(inc(b"a"), inc(b"b"))];
        out.push(q);
    }
    out
}

fn check_all(e: &Arc<Engine>, tables: &[(TableId, bool)], keys: &[&[u8]]) {
    for &(table, clustered) in tables {
        for pk in keys {
            for q in queries(pk, clustered) {
                e.set_read_shortcut(true);
                let fast = e.read(table, &q).unwrap();
                e.set_read_shortcut(false);
                let full = e.read(table, &q).unwrap();
                e.set_read_shortcut(true);
                // Same rows; the shortcut may scan fewer tombstones (it skips SSTables).
                assert_eq!(
                    fast.partitions, full.partitions,
                    "table {} key {:?} slices {:?}",
                    table[0], pk, q.slices
                );
            }
        }
    }
}

#[test]
fn reads_with_and_without_the_shortcut_agree_over_random_histories() {
    let tables = [(TABLE, true), (PLAIN, true), (SKINNY, false)];
    let keys: [&[u8]; 3] = [b"p1", b"p2", b"p3"];
    let mut skipped = 0;
    for seed in 1..=12u64 {
        let dir = tempdir("shortcut");
        let e = open(&dir, 864_000);
        e.create_table(plain_def(PLAIN, true)).unwrap();
        e.create_table(plain_def(SKINNY, false)).unwrap();
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut clock = 1_000i64;
        for step in 0..300 {
            // Mostly rising timestamps (the short-circuit's good case), sometimes older ones.
            clock += 1 + rng.below(3) as i64;
            let ts = if rng.below(4) == 0 {
                clock - rng.below(200) as i64
            } else {
                clock
            };
            let (table, clustered) = tables[rng.below(3) as usize];
            let pk = keys[rng.below(3) as usize];
            let ck: Option<&[u8]> =
                clustered.then(|| [b"a", b"b", b"c"][rng.below(3) as usize].as_slice());
            let m = random_mutation(&mut rng, table, pk, ck, ts);
            e.apply_blocking(&[m]).unwrap();
            if rng.below(12) == 0 {
                e.flush(None).unwrap();
            }
            if step % 25 == 0 {
                check_all(&e, &tables, &keys);
            }
        }
        check_all(&e, &tables, &keys);
        e.flush(None).unwrap();
        check_all(&e, &tables, &keys);
        skipped += [PLAIN, SKINNY, TABLE]
            .iter()
            .map(|t| e.table_stats(*t).sstables_skipped_by_timestamp)
            .sum::<u64>();
        drop(e);
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(skipped > 0, "the short-circuit never fired");
}

#[test]
fn newest_full_row_skips_older_sstables() {
    let dir = tempdir("shortcut-skip");
    let e = open(&dir, 864_000);
    e.create_table(plain_def(SKINNY, false)).unwrap();
    for ts in [10, 20, 30] {
        let mut m = mutation(b"k");
        m.table = SKINNY;
        m.rows.push(RowUpdate {
            clustering: Vec::new(),
            liveness: Some(Liveness {
                timestamp_us: ts,
                ttl_s: 0,
                expires_at_s: 0,
            }),
            deletion: None,
            cells: vec![set(1, ts, b"x"), set(2, ts, b"y")],
        });
        e.apply_blocking(&[m]).unwrap();
        e.flush(None).unwrap();
    }
    let r = e.read(SKINNY, &point(b"k", now())).unwrap();
    assert_eq!(r.partitions.len(), 1);
    let st = e.table_stats(SKINNY);
    assert_eq!(st.sstables_skipped_by_timestamp, 2);
    // A column written only in an older SSTable keeps the older ones in play.
    let mut m = mutation(b"k");
    m.table = SKINNY;
    m.rows.push(RowUpdate {
        clustering: Vec::new(),
        liveness: None,
        deletion: None,
        cells: vec![set(1, 40, b"z")],
    });
    e.apply_blocking(&[m]).unwrap();
    let got = e.read(SKINNY, &point(b"k", now())).unwrap();
    let cells = &got.partitions[0].rows[0];
    assert_eq!(format!("{cells:?}").matches("b\"y\"").count(), 1);
    assert_eq!(e.table_stats(SKINNY).sstables_skipped_by_timestamp, 2 + 2);
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn partition_deletion_skips_only_sstables_at_or_below_it() {
    let dir = tempdir("shortcut-deletion");
    let e = open(&dir, 864_000);
    e.create_table(plain_def(PLAIN, true)).unwrap();
    let write = |ck: &[u8], ts: i64| {
        let mut m = mutation(b"k");
        m.table = PLAIN;
        m.rows.push(row(ck, vec![set(1, ts, b"v")]));
        e.apply_blocking(&[m]).unwrap();
        e.flush(None).unwrap();
    };
    write(b"a", 20);
    write(b"b", 21);
    let mut m = mutation(b"k");
    m.table = PLAIN;
    m.partition_deletion = Some(dt(20));
    e.apply_blocking(&[m]).unwrap();
    // The SSTable at 21 must be read (its row outlives the deletion); the one at 20 need not.
    let r = e.read(PLAIN, &point(b"k", now())).unwrap();
    let rows: Vec<_> = r.partitions[0]
        .rows
        .iter()
        .map(|r| r.clustering.clone())
        .collect();
    assert_eq!(rows, vec![vec![b(b"b")]]);
    assert_eq!(e.table_stats(PLAIN).sstables_skipped_by_timestamp, 1);
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}
