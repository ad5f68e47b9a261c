//! End-to-end behaviour of the engine: writes, deletes, TTL, flush, compaction, replay, counters,
//! corruption.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

mod common;
use common::*;
use helenus_storage::*;

/// (partition key, clustering, cells as (column, value)).
type Flat = Vec<(Vec<u8>, Vec<u8>, Vec<(u32, Vec<u8>)>)>;

fn values(r: &ReadResult) -> Flat {
    r.partitions
        .iter()
        .flat_map(|p| {
            p.rows.iter().map(move |row| {
                (
                    p.key.to_vec(),
                    row.clustering
                        .first()
                        .map(|c| c.to_vec())
                        .unwrap_or_default(),
                    row.cells
                        .iter()
                        .map(|c| (c.column, c.value.to_vec()))
                        .collect(),
                )
            })
        })
        .collect()
}

#[test]
fn last_write_wins_across_memtable_and_sstables() {
    let dir = tempdir("lww");
    let e = open(&dir, 864000);
    let mut m = mutation(b"p");
    m.rows.push(row(b"a", vec![set(1, 10, b"new")]));
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    let mut m = mutation(b"p");
    m.rows.push(row(b"a", vec![set(1, 5, b"old")]));
    e.apply_blocking(&[m]).unwrap();
    let r = e.read(TABLE, &point(b"p", now())).unwrap();
    assert_eq!(
        values(&r),
        vec![(b"p".to_vec(), b"a".to_vec(), vec![(1, b"new".to_vec())])]
    );
    e.flush(None).unwrap();
    e.compact(TABLE).unwrap();
    let r = e.read(TABLE, &point(b"p", now())).unwrap();
    assert_eq!(
        values(&r),
        vec![(b"p".to_vec(), b"a".to_vec(), vec![(1, b"new".to_vec())])]
    );
    e.shutdown().unwrap();
}

#[test]
fn updated_row_with_all_cells_deleted_is_absent_but_inserted_row_stays() {
    let dir = tempdir("liveness");
    let e = open(&dir, 864000);
    let mut m = mutation(b"p");
    m.rows.push(row(b"upd", vec![set(1, 1, b"x")]));
    let mut ins = row(b"ins", vec![set(1, 1, b"y")]);
    ins.liveness = Some(Liveness {
        timestamp_us: 1,
        ttl_s: 0,
        expires_at_s: 0,
    });
    m.rows.push(ins);
    e.apply_blocking(&[m]).unwrap();
    let mut m = mutation(b"p");
    let del = |ts| CellUpdate {
        column: 1,
        path: None,
        timestamp_us: ts,
        op: CellOp::Delete,
    };
    m.rows.push(row(b"upd", vec![del(2)]));
    m.rows.push(row(b"ins", vec![del(2)]));
    e.apply_blocking(&[m]).unwrap();
    let r = e.read(TABLE, &point(b"p", now())).unwrap();
    let rows = &r.partitions[0].rows;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].clustering[0].as_ref(), b"ins");
    assert!(rows[0].cells.is_empty());
    assert_eq!(rows[0].row_timestamp_us, Some(1));
}

#[test]
fn range_tombstone_and_partition_deletion_shadow_older_rows_only() {
    let dir = tempdir("rt");
    let e = open(&dir, 864000);
    let mut m = mutation(b"p");
    for ck in [b"a", b"b", b"c", b"d"] {
        m.rows.push(row(ck, vec![set(1, 10, b"v")]));
    }
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    let mut m = mutation(b"p");
    let bound = |v: &[u8], kind| ClusteringBound {
        prefix: vec![b(v)],
        kind,
    };
    m.range_tombstones.push((
        bound(b"b", BoundKind::Inclusive),
        bound(b"c", BoundKind::Inclusive),
        DeletionTime {
            marked_for_delete_at_us: 10,
            local_deletion_time_s: now(),
        },
    ));
    m.rows.push(row(b"c", vec![set(2, 11, b"newer")]));
    e.apply_blocking(&[m]).unwrap();
    let r = e.read(TABLE, &point(b"p", now())).unwrap();
    let cks: Vec<_> = values(&r)
        .into_iter()
        .map(|(_, c, cells)| (c, cells))
        .collect();
    assert_eq!(
        cks,
        vec![
            (b"a".to_vec(), vec![(1, b"v".to_vec())]),
            (b"c".to_vec(), vec![(2, b"newer".to_vec())]),
            (b"d".to_vec(), vec![(1, b"v".to_vec())])
        ]
    );
    let mut m = mutation(b"p");
    m.partition_deletion = Some(DeletionTime {
        marked_for_delete_at_us: 10,
        local_deletion_time_s: now(),
    });
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    e.compact(TABLE).unwrap();
    let r = e.read(TABLE, &point(b"p", now())).unwrap();
    assert_eq!(
        values(&r),
        vec![(b"p".to_vec(), b"c".to_vec(), vec![(2, b"newer".to_vec())])]
    );
}

#[test]
fn ttl_cells_expire_at_read_time() {
    let dir = tempdir("ttl");
    let e = open(&dir, 864000);
    let mut m = mutation(b"p");
    m.rows.push(row(
        b"a",
        vec![CellUpdate {
            column: 1,
            path: None,
            timestamp_us: 1,
            op: CellOp::Set {
                value: b(b"v"),
                ttl_s: 100,
            },
        }],
    ));
    e.apply_blocking(&[m]).unwrap();
    let r = e.read(TABLE, &point(b"p", now())).unwrap();
    let c = &r.partitions[0].rows[0].cells[0];
    assert_eq!(c.ttl_s, 100);
    assert!(c.expires_at_s >= now() + 99);
    e.flush(None).unwrap();
    assert!(e
        .read(TABLE, &point(b"p", now() + 101))
        .unwrap()
        .partitions
        .is_empty());
}

#[test]
fn gc_grace_zero_compaction_purges_tombstones_without_resurrecting() {
    let dir = tempdir("purge");
    let e = open(&dir, 0);
    let mut m = mutation(b"p");
    m.rows.push(row(b"a", vec![set(1, 1, b"v")]));
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    let mut m = mutation(b"p");
    m.partition_deletion = Some(DeletionTime {
        marked_for_delete_at_us: 2,
        local_deletion_time_s: now() - 10,
    });
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    let st = e.compact(TABLE).unwrap();
    assert_eq!(st.input_sstables, 2);
    assert_eq!(
        e.table_stats(TABLE).sstable_count,
        0,
        "everything was purged"
    );
    assert!(e
        .read(TABLE, &point(b"p", now()))
        .unwrap()
        .partitions
        .is_empty());
}

#[test]
fn tombstone_is_kept_while_older_data_lives_in_another_sstable() {
    let dir = tempdir("purge-safe");
    let e = open(&dir, 0);
    let mut m = mutation(b"p");
    m.rows.push(row(b"a", vec![set(1, 1, b"v")]));
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    let mut m = mutation(b"p");
    m.partition_deletion = Some(DeletionTime {
        marked_for_delete_at_us: 2,
        local_deletion_time_s: now() - 10,
    });
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    // garbagecollect compacts each SSTable alone: the deletion must survive because the older
    // row lives in the other SSTable.
    e.garbage_collect(TABLE, false).unwrap();
    assert!(e
        .read(TABLE, &point(b"p", now()))
        .unwrap()
        .partitions
        .is_empty());
}

#[test]
fn commitlog_replay_restores_unflushed_writes() {
    let dir = tempdir("replay");
    {
        let e = open(&dir, 864000);
        let mut m = mutation(b"p");
        m.rows.push(row(b"a", vec![set(1, 1, b"v")]));
        e.apply_blocking(&[m]).unwrap();
        e.shutdown_without_flush().unwrap();
    }
    let e = Engine::open(config(&dir, CommitlogSync::Batch)).unwrap();
    e.create_table(table_def(864000)).unwrap();
    let st = e.replay_commitlog().unwrap();
    assert_eq!(st.mutations_replayed, 1);
    assert_eq!(
        values(&e.read(TABLE, &point(b"p", now())).unwrap()).len(),
        1
    );
}

#[test]
fn replay_skips_what_a_flush_stored_and_a_stale_record_is_ignored() {
    let dir = tempdir("replay-flushed");
    let write = |e: &Engine, key: &[u8]| {
        let mut m = mutation(key);
        m.rows.push(row(b"a", vec![set(1, 1, b"v")]));
        e.apply_blocking(&[m]).unwrap();
    };
    {
        let e = open(&dir, 864000);
        write(&e, b"p1");
        e.flush(Some(TABLE)).unwrap();
        write(&e, b"p2");
        e.shutdown_without_flush().unwrap();
    }
    let reopen = || {
        let e = Engine::open(config(&dir, CommitlogSync::Batch)).unwrap();
        e.create_table(table_def(864000)).unwrap();
        e
    };
    let e = reopen();
    let st = e.replay_commitlog().unwrap();
    assert_eq!(
        (st.mutations_replayed, st.mutations_already_flushed),
        (1, 1)
    );
    assert_eq!(e.read(TABLE, &scan_all(now())).unwrap().partitions.len(), 2);
    e.shutdown().unwrap();
    drop(e);
    // A record from an earlier run whose segments are gone (ids start again at 1) must not
    // hide entries of the new ones.
    let log = dir.join("commitlog");
    for seg in std::fs::read_dir(&log).unwrap().flatten() {
        std::fs::remove_file(seg.path()).unwrap();
    }
    let table_hex: String = TABLE.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::write(
        log.join("CommitLog-flushed.txt"),
        format!("{table_hex} 99 99\n"),
    )
    .unwrap();
    {
        let e = reopen();
        write(&e, b"p3");
        e.shutdown_without_flush().unwrap();
    }
    let st = reopen().replay_commitlog().unwrap();
    assert_eq!(
        (st.mutations_replayed, st.mutations_already_flushed),
        (1, 0)
    );
}

/// Writes three one-row partitions and stops without a flush; returns the segment holding them.
fn three_logged_writes(dir: &std::path::Path) -> std::path::PathBuf {
    {
        let e = open(dir, 864000);
        for i in 0..3u8 {
            let mut m = mutation(&[i]);
            m.rows.push(row(b"a", vec![set(1, 1, b"v")]));
            e.apply_blocking(&[m]).unwrap();
        }
        e.shutdown_without_flush().unwrap();
    }
    std::fs::read_dir(dir.join("commitlog"))
        .unwrap()
        .flatten()
        .map(|d| d.path())
        // The segment written to (the one the next open made holds nothing).
        .find(|p| std::fs::read(p).unwrap()[..8].iter().any(|b| *b != 0))
        .unwrap()
}

#[test]
fn torn_commitlog_tail_is_skipped_not_half_applied() {
    let dir = tempdir("torn");
    let seg = three_logged_writes(&dir);
    // Segments are allocated whole and written through a mapping: the written entries are
    // followed by zeros. Tear the last entry as a kill during its copy would (its last bytes
    // never written), then, separately, as a file cut short.
    let mut data = std::fs::read(&seg).unwrap();
    let (mut last, mut end) = (0usize, 0usize);
    loop {
        let len = u32::from_be_bytes(data[end..end + 4].try_into().unwrap()) as usize;
        if len == 0 {
            break;
        }
        (last, end) = (end, end + 8 + len);
    }
    // The entry's second half, which holds the row's value (its last bytes may be zeros already).
    let torn = (last + end) / 2..end;
    assert!(data[torn.clone()].iter().any(|b| *b != 0));
    data[torn].fill(0);
    std::fs::write(&seg, &data).unwrap();
    let e = Engine::open(config(&dir, CommitlogSync::Batch)).unwrap();
    e.create_table(table_def(864000)).unwrap();
    let st = e.replay_commitlog().unwrap();
    assert_eq!(st.mutations_replayed, 2);
    assert_eq!(st.corrupt_tails, 1);
    assert_eq!(e.read(TABLE, &scan_all(now())).unwrap().partitions.len(), 2);
}

#[test]
fn commitlog_cut_short_keeps_the_entries_before_the_cut() {
    let dir = tempdir("cut");
    let seg = three_logged_writes(&dir);
    let data = std::fs::read(&seg).unwrap();
    let first = 8 + u32::from_be_bytes(data[0..4].try_into().unwrap()) as u64;
    // A file that ends inside the second entry (a copy from an older format, a filesystem that
    // lost the allocation): the first entry replays, the rest is a torn tail.
    let f = std::fs::OpenOptions::new().write(true).open(&seg).unwrap();
    f.set_len(first + 5).unwrap();
    let e = Engine::open(config(&dir, CommitlogSync::Batch)).unwrap();
    e.create_table(table_def(864000)).unwrap();
    let st = e.replay_commitlog().unwrap();
    assert_eq!(st.mutations_replayed, 1);
    assert_eq!(st.corrupt_tails, 1);
}

#[test]
fn corrupted_sstable_chunk_is_reported_not_misread() {
    let dir = tempdir("corrupt");
    let e = open(&dir, 864000);
    let mut m = mutation(b"p");
    m.rows.push(row(b"a", vec![set(1, 1, &[42u8; 200])]));
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    let data = walk(&dir.join("data"))
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with("-Data.db"))
        .unwrap();
    let mut bytes = std::fs::read(&data).unwrap();
    let n = bytes.len();
    bytes[n - 3] ^= 0xff;
    std::fs::write(&data, &bytes).unwrap();
    // Reopen so no cached chunk hides the damage.
    e.shutdown().unwrap();
    drop(e);
    let e = open(&dir, 864000);
    match e.read(TABLE, &point(b"p", now())) {
        Err(StorageError::CorruptChunk { file, .. }) => assert_eq!(file, data),
        other => panic!("expected CorruptChunk, got {other:?}"),
    }
    let rep = verify_sstable(&data).unwrap();
    assert!(!rep.errors.is_empty());
}

fn walk(d: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn counters_accumulate_across_flush_and_replay() {
    let dir = tempdir("counters");
    let add = |e: &Engine, d: i64, ts: i64| {
        e.apply_blocking(&[counter_cell(None, ts, CellOp::CounterAdd(d))])
            .unwrap();
    };
    let total = |e: &Engine| {
        let q = ReadQuery {
            columns: None,
            partitions: PartitionRange::Single {
                key: b(b"c"),
                token: token(b"c"),
            },
            ..point(b"c", now())
        };
        let r = e.read(COUNTERS, &q).unwrap();
        i64::from_be_bytes(
            r.partitions[0].rows[0].cells[0]
                .value
                .as_ref()
                .try_into()
                .unwrap(),
        )
    };
    {
        let e = open(&dir, 864000);
        add(&e, 5, 10);
        add(&e, -2, 5); // an older timestamp still counts: counters merge by logical clock
        assert_eq!(total(&e), 3);
        e.flush(None).unwrap();
        add(&e, 10, 20);
        assert_eq!(total(&e), 13);
        e.shutdown().unwrap();
    }
    let e = open(&dir, 864000);
    assert_eq!(total(&e), 13);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let e = e.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    add(&e, 1, 100 + i);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(total(&e), 213);
}

#[test]
fn range_scan_pages_with_exclusive_start_key() {
    let dir = tempdir("paging");
    let e = open(&dir, 864000);
    for i in 0..50u8 {
        let mut m = mutation(&[i]);
        m.rows.push(row(b"a", vec![set(1, 1, b"v")]));
        e.apply_blocking(&[m]).unwrap();
        if i == 20 {
            e.flush(None).unwrap();
        }
    }
    let mut seen = Vec::new();
    let mut start = PartitionBound::Unbounded;
    loop {
        let q = ReadQuery {
            columns: None,
            partitions: PartitionRange::Range {
                start: start.clone(),
                end: PartitionBound::Unbounded,
            },
            partition_limit: Some(7),
            ..point(b"", now())
        };
        let r = e.read(TABLE, &q).unwrap();
        let Some(last) = r.partitions.last() else {
            break;
        };
        start = PartitionBound::Key {
            token: last.token,
            key: last.key.clone(),
            inclusive: false,
        };
        seen.extend(r.partitions.iter().map(|p| (p.token, p.key.clone())));
    }
    assert_eq!(seen.len(), 50);
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn slices_reversed_and_limits() {
    let dir = tempdir("slices");
    let e = open(&dir, 864000);
    let mut m = mutation(b"p");
    for ck in b'a'..=b'j' {
        m.rows.push(row(&[ck], vec![set(1, 1, b"v")]));
    }
    e.apply_blocking(&[m]).unwrap();
    let bound = |v: u8, kind| ClusteringBound {
        prefix: vec![b(&[v])],
        kind,
    };
    let q = ReadQuery {
        slices: vec![(
            bound(b'b', BoundKind::Exclusive),
            bound(b'f', BoundKind::Inclusive),
        )],
        reversed: true,
        row_limit: Some(3),
        ..point(b"p", now())
    };
    let r = e.read(TABLE, &q).unwrap();
    let cks: Vec<u8> = r.partitions[0]
        .rows
        .iter()
        .map(|r| r.clustering[0][0])
        .collect();
    assert_eq!(cks, vec![b'f', b'e', b'd']);
}

#[test]
fn apply_is_usable_from_async_code() {
    let dir = tempdir("async");
    let e = open(&dir, 864000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut m = mutation(b"p");
        m.rows.push(row(b"a", vec![set(1, 1, b"v")]));
        e.apply(m).await.unwrap();
    });
    assert_eq!(
        e.read(TABLE, &point(b"p", now())).unwrap().partitions.len(),
        1
    );
}

#[test]
fn snapshot_truncate_and_drop() {
    let dir = tempdir("snap");
    let e = open(&dir, 864000);
    let mut m = mutation(b"p");
    m.rows.push(row(b"a", vec![set(1, 1, b"v")]));
    e.apply_blocking(&[m]).unwrap();
    e.snapshot(Some(TABLE), "s1").unwrap();
    e.truncate(TABLE).unwrap();
    assert!(e
        .read(TABLE, &point(b"p", now()))
        .unwrap()
        .partitions
        .is_empty());
    let snaps: Vec<_> = walk(&dir.join("data"))
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("/snapshots/s1/"))
        .collect();
    assert!(snaps
        .iter()
        .any(|p| p.to_string_lossy().ends_with("-Data.db")));
    e.clear_snapshot(Some("s1")).unwrap();
    assert!(walk(&dir.join("data"))
        .iter()
        .all(|p| !p.to_string_lossy().contains("/snapshots/s1/")));
    e.drop_table(TABLE).unwrap();
    assert!(matches!(
        e.read(TABLE, &point(b"p", now())),
        Err(StorageError::UnknownTable(_))
    ));
}

/// Issue 11: `DELETE snapshots?tag=/abs/dir` deleted any directory and `tag=..` a table's
/// SSTables; tags are now validated before anything is removed.
#[test]
fn clear_snapshot_refuses_tags_that_leave_the_snapshot_directory() {
    let dir = tempdir("snaptag");
    let e = open(&dir, 864000);
    let mut m = mutation(b"p");
    m.rows.push(row(b"a", vec![set(1, 1, b"v")]));
    e.apply_blocking(&[m]).unwrap();
    e.flush(None).unwrap();
    let victim = dir.join("victim");
    std::fs::create_dir_all(victim.join("inner")).unwrap();
    let abs = victim.to_string_lossy().into_owned();
    for tag in [abs.as_str(), "..", "../..", "../../data", "a/../.."] {
        assert!(
            matches!(
                e.clear_snapshot(Some(tag)),
                Err(StorageError::InvalidRequest(_))
            ),
            "{tag}"
        );
        assert!(e.snapshot(Some(TABLE), tag).is_err(), "{tag}");
    }
    assert!(victim.join("inner").is_dir());
    assert_eq!(
        e.read(TABLE, &point(b"p", now())).unwrap().partitions.len(),
        1
    );
    assert!(walk(&dir.join("data"))
        .iter()
        .any(|p| p.to_string_lossy().ends_with("-Data.db")));
}

/// A counter increment of `delta` to `cell` of partition `pk`.
fn counter_add(pk: &[u8], ts: i64, deltas: &[i64]) -> Mutation {
    Mutation {
        table: COUNTERS,
        key: b(pk),
        token: token(pk),
        partition_deletion: None,
        range_tombstones: Vec::new(),
        static_row: None,
        rows: vec![RowUpdate {
            clustering: Vec::new(),
            liveness: None,
            deletion: None,
            cells: deltas
                .iter()
                .map(|d| CellUpdate {
                    column: 1,
                    path: None,
                    timestamp_us: ts,
                    op: CellOp::CounterAdd(*d),
                })
                .collect(),
        }],
    }
}

fn counter_total(e: &Engine, pk: &[u8]) -> i64 {
    let r = e.read(COUNTERS, &point(pk, now())).unwrap();
    i64::from_be_bytes(
        r.partitions[0].rows[0].cells[0]
            .value
            .as_ref()
            .try_into()
            .unwrap(),
    )
}

#[test]
fn increments_of_one_counter_in_one_batch_all_count() {
    let dir = tempdir("counter-batch");
    {
        let e = open(&dir, 864000);
        e.apply_blocking(&[counter_add(b"c", 1, &[1])]).unwrap();
        // Two mutations of the same cell in one entry, and two increments inside one mutation.
        e.apply_blocking(&[
            counter_add(b"c", 2, &[10]),
            counter_add(b"c", 3, &[100]),
            counter_add(b"d", 3, &[5]),
        ])
        .unwrap();
        e.apply_blocking(&[counter_add(b"c", 4, &[1000, 10000])])
            .unwrap();
        assert_eq!(counter_total(&e, b"c"), 11111);
        assert_eq!(counter_total(&e, b"d"), 5);
        e.flush(None).unwrap();
        e.apply_blocking(&[counter_add(b"c", 5, &[-1]), counter_add(b"c", 5, &[-10])])
            .unwrap();
        assert_eq!(counter_total(&e, b"c"), 11100);
        e.shutdown().unwrap();
    }
    // Replay of the same entries gives the same totals.
    let e = open(&dir, 864000);
    assert_eq!(counter_total(&e, b"c"), 11100);
    assert_eq!(counter_total(&e, b"d"), 5);
    e.shutdown().unwrap();
}

/// nodetool cleanup keeps exactly the partitions whose tokens lie in the owned ranges, drops
/// an SSTable holding none, and leaves one wholly owned untouched.
#[test]
fn cleanup_keeps_only_the_owned_token_ranges() {
    let dir = tempdir("cleanup");
    let e = open(&dir, 864000);
    for i in 0..60u8 {
        let mut m = mutation(&[i]);
        m.rows.push(row(b"a", vec![set(1, 1, b"v")]));
        e.apply_blocking(&[m]).unwrap();
    }
    e.flush(None).unwrap();
    let everything = ReadQuery {
        columns: None,
        partitions: PartitionRange::Range {
            start: PartitionBound::Unbounded,
            end: PartitionBound::Unbounded,
        },
        ..point(b"", now())
    };
    let tokens: Vec<i64> = e
        .read(TABLE, &everything)
        .unwrap()
        .partitions
        .iter()
        .map(|p| p.token)
        .collect();
    assert_eq!(tokens.len(), 60);
    // Two owned ranges: everything below the 10th token, and [20th, 40th).
    let owned = [
        (None, Some(tokens[10])),
        (Some(tokens[20]), Some(tokens[40])),
    ];
    let stats = e.cleanup(TABLE, &owned).unwrap();
    assert_eq!(stats.input_sstables, 1);
    let kept: Vec<i64> = e
        .read(TABLE, &everything)
        .unwrap()
        .partitions
        .iter()
        .map(|p| p.token)
        .collect();
    let want: Vec<i64> = tokens[..10]
        .iter()
        .chain(&tokens[20..40])
        .copied()
        .collect();
    assert_eq!(kept, want);
    // Now every SSTable lies within the owned ranges: nothing to rewrite.
    let again = e.cleanup(TABLE, &[(None, None)]).unwrap();
    assert_eq!(again.input_sstables, 0);
    // Nothing owned: the SSTables go.
    e.cleanup(TABLE, &[]).unwrap();
    assert!(e.read(TABLE, &everything).unwrap().partitions.is_empty());
    e.shutdown().unwrap();
}
