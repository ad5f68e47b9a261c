//! Unfiltered reads and their resolution, against the live read: for random mutations (every
//! kind of deletion, TTLs, statics, collections, several partitions) and random queries
//! (slices, reversed, limits, ranges, resumed pages), resolving what replicas return gives what
//! one node holding all the data returns, and replicas with the same data agree on digests.
//! Timestamps are distinct, so reconcile ties (unit-tested in reconcile.rs) do not arise.
//! Seeds: HELENUS_UNFILTERED_SEEDS (default 12).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

mod common;
use bytes::Bytes;
use common::*;
use helenus_mutation::{decode_mutations, digest, encode_mutations};
use helenus_storage::*;
use std::sync::Arc;

const PKS: u64 = 4;
const CKS: u64 = 6;
const GC_GRACE_S: u32 = 864_000;

fn seeds() -> u64 {
    std::env::var("HELENUS_UNFILTERED_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12)
}

fn ck(v: u64) -> Bytes {
    b(&[v as u8])
}

/// One random write at `ts`, with server times fixed from `t0` (so that engines applying it at
/// different moments store the same thing), or in client form when `client_forms` allows.
fn gen_mutation(r: &mut Rng, ts: i64, t0: i64, client_forms: bool) -> Mutation {
    let pk = r.below(PKS) as u8;
    let mut m = mutation(&[b'p', pk]);
    let dt = DeletionTime {
        marked_for_delete_at_us: ts,
        local_deletion_time_s: t0,
    };
    let ttl = if r.below(4) == 0 {
        1 + r.below(100) as u32
    } else {
        0
    };
    let client = client_forms && r.below(2) == 0;
    let value_op = |v: Bytes| match (ttl, client) {
        (0, _) => CellOp::Set { value: v, ttl_s: 0 },
        (_, true) => CellOp::Set {
            value: v,
            ttl_s: ttl,
        },
        _ => CellOp::SetExpiring {
            value: v,
            ttl_s: ttl,
            expires_at_s: t0 + i64::from(ttl),
        },
    };
    let tombstone = if client {
        CellOp::Delete
    } else {
        CellOp::Tombstone {
            local_deletion_time_s: t0,
        }
    };
    let cell = |column, path, op| CellUpdate {
        column,
        path,
        timestamp_us: ts,
        op,
    };
    let c = ck(r.below(CKS));
    let mut rowu = RowUpdate {
        clustering: vec![c],
        liveness: None,
        deletion: None,
        cells: Vec::new(),
    };
    match r.below(14) {
        0..=2 => {
            rowu.liveness = Some(Liveness {
                timestamp_us: ts,
                ttl_s: ttl,
                expires_at_s: if ttl > 0 { t0 + i64::from(ttl) } else { 0 },
            });
            if r.below(3) != 0 {
                rowu.cells.push(cell(1, None, value_op(ck(r.below(250)))));
            }
        }
        3..=5 => {
            let col = 1 + r.below(2) as u32;
            rowu.cells.push(cell(col, None, value_op(ck(r.below(250)))));
        }
        6 => rowu
            .cells
            .push(cell(1 + r.below(2) as u32, None, tombstone)),
        7 => rowu.deletion = Some(dt),
        8 => m.partition_deletion = Some(dt),
        9 => {
            let (a, z) = (r.below(CKS + 1), r.below(CKS + 1));
            let (a, z) = (a.min(z), a.max(z));
            let bound = |v: u64, excl: bool| match v {
                // CKS stands for "unbounded" on either side.
                v if v == CKS => ClusteringBound::unbounded(),
                v => ClusteringBound {
                    prefix: vec![ck(v)],
                    kind: if excl && a != z {
                        BoundKind::Exclusive
                    } else {
                        BoundKind::Inclusive
                    },
                },
            };
            let start = if r.below(4) == 0 { CKS } else { a };
            m.range_tombstones
                .push((bound(start, r.below(2) == 0), bound(z, r.below(2) == 0), dt));
        }
        10 => {
            let op = if r.below(3) == 0 {
                tombstone
            } else {
                value_op(ck(r.below(250)))
            };
            m.static_row = Some(RowUpdate {
                clustering: Vec::new(),
                cells: vec![cell(STATIC_COL, None, op)],
                ..rowu.clone()
            });
        }
        11 | 12 => {
            let op = if r.below(3) == 0 {
                tombstone
            } else {
                value_op(Bytes::new())
            };
            rowu.cells.push(cell(SET_COL, Some(ck(r.below(4))), op));
        }
        _ => {
            let op = if client {
                CellOp::DeleteComplex
            } else {
                CellOp::ComplexDeletion {
                    local_deletion_time_s: t0,
                }
            };
            // Written a microsecond below the statement, as `DeleteComplex` is applied.
            rowu.cells.push(CellUpdate {
                timestamp_us: ts - 1,
                ..cell(SET_COL, None, op)
            });
            // As `SET s = {..}` writes: the deletion and new elements in one statement.
            if r.below(2) == 0 {
                rowu.cells
                    .push(cell(SET_COL, Some(ck(r.below(4))), value_op(Bytes::new())));
            }
        }
    }
    if !rowu.cells.is_empty() || rowu.liveness.is_some() || rowu.deletion.is_some() {
        m.rows.push(rowu);
    }
    m
}

fn gen_mutations(r: &mut Rng, n: usize, t0: i64, client_forms: bool) -> Vec<Mutation> {
    (0..n)
        .map(|i| {
            // Distinct but out-of-order timestamps.
            let ts = (r.below(1000) as i64) * 1000 + i as i64;
            gen_mutation(r, ts, t0, client_forms)
        })
        .collect()
}

fn gen_bound(r: &mut Rng, v: u64) -> ClusteringBound {
    ClusteringBound {
        prefix: vec![ck(v)],
        kind: if r.below(2) == 0 {
            BoundKind::Inclusive
        } else {
            BoundKind::Exclusive
        },
    }
}

/// A random query; `limits`: whether row and partition limits may be set.
fn gen_query(r: &mut Rng, now_s: i64, limits: bool) -> ReadQuery {
    let pk = |r: &mut Rng| vec![b'p', r.below(PKS) as u8];
    let mut q = scan_all(now_s + [0, 30, 1000][r.below(3) as usize]);
    if r.below(2) == 0 {
        let k = pk(r);
        q.partitions = PartitionRange::Single {
            token: token(&k),
            key: b(&k),
        };
        if r.below(4) == 0 {
            q.resume_after = Some(vec![ck(r.below(CKS))]);
        }
    } else if r.below(2) == 0 {
        let side = |r: &mut Rng| match r.below(3) {
            0 => PartitionBound::Unbounded,
            _ => PartitionBound::Token {
                token: token(&pk(r)),
                inclusive: r.below(2) == 0,
            },
        };
        q.partitions = PartitionRange::Range {
            start: side(r),
            end: side(r),
        };
    }
    // Slices in storage order, disjoint.
    let mut cuts: Vec<u64> = (0..2 * r.below(3)).map(|_| r.below(CKS)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    for pair in cuts.chunks_exact(2) {
        let (s, e) = (gen_bound(r, pair[0]), gen_bound(r, pair[1]));
        q.slices.push((s, e));
    }
    if q.slices.len() == 1 && r.below(3) == 0 {
        q.slices[0].0 = ClusteringBound::unbounded();
    }
    q.reversed = r.below(2) == 0;
    if limits {
        let limit = |r: &mut Rng| (r.below(3) == 0).then(|| 1 + r.below(5) as usize);
        q.row_limit = limit(r);
        q.per_partition_limit = limit(r);
        q.partition_limit = limit(r);
    }
    q
}

/// Applies `ms` one by one, flushing (and sometimes compacting) at random points.
fn apply_with_flushes(e: &Engine, ms: &[Mutation], r: &mut Rng, flush_one_in: u64) {
    for m in ms {
        e.apply_blocking(std::slice::from_ref(m)).unwrap();
        if flush_one_in > 0 && r.below(flush_one_in) == 0 {
            e.flush(Some(TABLE)).unwrap();
            if r.below(3) == 0 {
                e.compact(TABLE).unwrap();
            }
        }
    }
}

/// An engine whose table never compacts by itself: a background compaction finishing between
/// the two reads of a comparison purges tombstones from one and not the other (seen under
/// load). The tests compact explicitly instead.
fn engine(name: &str) -> (Arc<Engine>, std::path::PathBuf) {
    let dir = tempdir(name);
    let e = Engine::open(config(&dir, CommitlogSync::Batch)).unwrap();
    let mut def = table_def(GC_GRACE_S);
    def.options.compaction = CompactionOptions::SizeTiered {
        min_threshold: 1_000,
        max_threshold: 1_000,
    };
    e.create_table(def).unwrap();
    e.create_table(counter_def()).unwrap();
    e.replay_commitlog().unwrap();
    (e, dir)
}

fn unfiltered(e: &Engine, q: &ReadQuery) -> Vec<Mutation> {
    e.read_unfiltered(TABLE, q, u64::MAX).unwrap().partitions
}

#[test]
fn one_replica_resolves_to_the_live_read() {
    for seed in 1..=seeds() {
        let mut r = Rng(seed * 7919);
        let t0 = now();
        let (a, dir) = engine("unf-one");
        let ms = gen_mutations(&mut r, 120, t0, true);
        apply_with_flushes(&a, &ms, &mut r, 25);
        for round in 0..2 {
            for i in 0..150 {
                let q = gen_query(&mut r, now(), true);
                let want = a.read(TABLE, &q).unwrap();
                let got = a.read_unfiltered(TABLE, &q, u64::MAX).unwrap();
                assert_eq!(got.stats, want.stats, "seed {seed} round {round} query {i}");
                let enc = encode_mutations(&got.partitions);
                assert_eq!(decode_mutations(enc).unwrap(), got.partitions);
                let resolved = a
                    .resolve_unfiltered(TABLE, vec![got.partitions], &q)
                    .unwrap();
                assert_eq!(
                    resolved.partitions, want.partitions,
                    "seed {seed} round {round} query {i}: {q:?}"
                );
            }
            a.flush(Some(TABLE)).unwrap();
        }
        a.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn replicas_with_split_data_resolve_to_the_whole() {
    for seed in 1..=seeds() {
        let mut r = Rng(seed * 104_729);
        let t0 = now();
        let ms = gen_mutations(&mut r, 120, t0, false);
        let (a, da) = engine("unf-all");
        let (b, db) = engine("unf-b");
        let (c, dc) = engine("unf-c");
        apply_with_flushes(&a, &ms, &mut r, 30);
        for m in &ms {
            let to = r.below(3);
            if to != 1 {
                b.apply_blocking(std::slice::from_ref(m)).unwrap();
            }
            if to != 0 {
                c.apply_blocking(std::slice::from_ref(m)).unwrap();
            }
            if r.below(30) == 0 {
                b.flush(Some(TABLE)).unwrap();
            }
        }
        let (mut live_rows, mut disagreeing) = (0, 0);
        for i in 0..300 {
            let q = gen_query(&mut r, now(), false);
            let want = a.read(TABLE, &q).unwrap();
            live_rows += want.partitions.iter().map(|p| p.rows.len()).sum::<usize>();
            let (rb, rc) = (b.read(TABLE, &q).unwrap(), c.read(TABLE, &q).unwrap());
            disagreeing +=
                usize::from(rb.partitions != want.partitions && rc.partitions != want.partitions);
            let answers = vec![unfiltered(&b, &q), unfiltered(&c, &q)];
            let resolved = a.resolve_unfiltered(TABLE, answers, &q).unwrap();
            assert_eq!(
                resolved.partitions, want.partitions,
                "seed {seed} query {i}: {q:?}"
            );
        }
        // The reads return rows, and often neither replica alone has the answer.
        assert!(
            live_rows > 100 && disagreeing > 10,
            "{live_rows} {disagreeing}"
        );
        for (e, d) in [(a, da), (b, db), (c, dc)] {
            e.shutdown().unwrap();
            let _ = std::fs::remove_dir_all(&d);
        }
    }
}

#[test]
fn replicas_with_the_same_data_agree_on_digests() {
    for seed in 1..=seeds() {
        let mut r = Rng(seed * 15_485_863);
        let t0 = now();
        let ms = gen_mutations(&mut r, 120, t0, false);
        let mut shuffled = ms.clone();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, r.below(i as u64 + 1) as usize);
        }
        let (d1, dir1) = engine("unf-d1");
        let (d2, dir2) = engine("unf-d2");
        apply_with_flushes(&d1, &ms, &mut r, 0);
        apply_with_flushes(&d2, &shuffled, &mut r, 15);
        for i in 0..300 {
            let q = gen_query(&mut r, now(), true);
            let (u1, u2) = (unfiltered(&d1, &q), unfiltered(&d2, &q));
            assert_eq!(u1, u2, "seed {seed} query {i}: {q:?}");
            assert_eq!(digest(&u1), digest(&u2));
        }
        // A different write makes the digests of a read that covers it differ.
        let mut extra = mutation(b"p\x00");
        extra.rows.push(row(&[0], vec![set(1, 5_000_000, b"new")]));
        d2.apply_blocking(&[extra]).unwrap();
        let q = scan_all(now());
        assert_ne!(digest(&unfiltered(&d1, &q)), digest(&unfiltered(&d2, &q)));
        for (e, d) in [(d1, dir1), (d2, dir2)] {
            e.shutdown().unwrap();
            let _ = std::fs::remove_dir_all(&d);
        }
    }
}

/// The unfiltered read keeps what the live read drops: here a row deletion on one replica wins
/// over an older value on the other, which a live-only read could not show.
#[test]
fn a_deletion_on_one_replica_wins_over_an_older_value_on_another() {
    let (b1, d1) = engine("unf-del-b");
    let (c1, d2) = engine("unf-del-c");
    let mut m = mutation(b"k");
    m.rows.push(row(b"r", vec![set(1, 10, b"old")]));
    c1.apply_blocking(&[m]).unwrap();
    let mut del = mutation(b"k");
    del.rows.push(RowUpdate {
        deletion: Some(DeletionTime {
            marked_for_delete_at_us: 20,
            local_deletion_time_s: now(),
        }),
        ..row(b"r", Vec::new())
    });
    b1.apply_blocking(&[del]).unwrap();
    b1.flush(Some(TABLE)).unwrap();
    let q = point(b"k", now());
    assert!(b1.read(TABLE, &q).unwrap().partitions.is_empty());
    assert_eq!(c1.read(TABLE, &q).unwrap().partitions.len(), 1);
    let answers = vec![unfiltered(&b1, &q), unfiltered(&c1, &q)];
    assert_eq!(
        answers[0][0].rows[0]
            .deletion
            .map(|d| d.marked_for_delete_at_us),
        Some(20)
    );
    let resolved = c1.resolve_unfiltered(TABLE, answers, &q).unwrap();
    assert!(resolved.partitions.is_empty());
    for (e, d) in [(b1, d1), (c1, d2)] {
        e.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&d);
    }
}

/// Pins the known limit (no short-read protection yet): with a row limit, each replica stops
/// after its own live rows, so deletions on another replica can leave the resolved answer
/// short. B has rows a, b, d; C deleted a and b and has c. One node with all of it returns
/// c, d for LIMIT 2; B stops at b, so the resolved answer is c alone.
#[test]
fn limited_reads_across_replicas_can_come_up_short() {
    let (b1, d1) = engine("unf-short-b");
    let (c1, d2) = engine("unf-short-c");
    let (a1, d3) = engine("unf-short-a");
    let mut on_b = mutation(b"k");
    for ck in [b"a", b"b", b"d"] {
        on_b.rows.push(row(ck, vec![set(1, 10, b"v")]));
    }
    let mut on_c = mutation(b"k");
    for ck in [b"a", b"b"] {
        on_c.rows.push(RowUpdate {
            deletion: Some(DeletionTime {
                marked_for_delete_at_us: 20,
                local_deletion_time_s: now(),
            }),
            ..row(ck, Vec::new())
        });
    }
    on_c.rows.push(row(b"c", vec![set(1, 10, b"v")]));
    for (e, ms) in [(&b1, vec![on_b.clone()]), (&c1, vec![on_c.clone()])] {
        e.apply_blocking(&ms).unwrap();
    }
    a1.apply_blocking(&[on_b, on_c]).unwrap();
    let q = ReadQuery {
        row_limit: Some(2),
        ..point(b"k", now())
    };
    let clusterings = |r: &ReadResult| -> Vec<Vec<Bytes>> {
        r.partitions
            .iter()
            .flat_map(|p| p.rows.iter().map(|r| r.clustering.clone()))
            .collect()
    };
    let whole = a1.read(TABLE, &q).unwrap();
    assert_eq!(clusterings(&whole), vec![vec![b(b"c")], vec![b(b"d")]]);
    let answers = vec![unfiltered(&b1, &q), unfiltered(&c1, &q)];
    let resolved = a1.resolve_unfiltered(TABLE, answers, &q).unwrap();
    assert_eq!(clusterings(&resolved), vec![vec![b(b"c")]]);
    for (e, d) in [(a1, d3), (b1, d1), (c1, d2)] {
        e.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&d);
    }
}
