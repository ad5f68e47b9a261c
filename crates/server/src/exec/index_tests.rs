//! Secondary-index queries against a real node: served by the index table (base rows read
//! only where entries point), paged inside the index, never returning a row whose current
//! value no longer matches, and answering after a restart. Each query is also run over an
//! unindexed copy of the column with ALLOW FILTERING, the scan path, which must agree.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::node_tests::{
    node_with, params, query, rows, with_configured_node, with_node, MANUAL_NOW_US,
};
use super::{run_query, Outcome, Session};
use crate::node::NodeState;
use helenus_types::ManualClock;
use std::sync::Arc;
use std::time::Duration;

fn table_id(node: &NodeState, table: &str) -> helenus_storage::TableId {
    *node.schema().keyspaces["k"].tables[table].id.as_bytes()
}

fn index_id(node: &NodeState, table: &str, index: &str) -> helenus_storage::TableId {
    let schema = node.schema();
    crate::index_storage::index_table_id(&schema.keyspaces["k"].tables[table], index)
}

/// Waits (bounded) until the build of `index` on `table` completes.
async fn wait_built(node: &NodeState, table: &str, index: &str) {
    let id = index_id(node, table, index);
    for _ in 0..3_000 {
        if node.engine.index_built(id) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("index {index} not built after 30 s");
}

/// Live entries of int `value` in index `index` of `table`.
fn entries(node: &NodeState, table: &str, index: &str, value: i32) -> usize {
    let value = bytes::Bytes::copy_from_slice(&value.to_be_bytes());
    let r = read_index(node, table, index, &value).unwrap();
    r.partitions.iter().map(|p| p.rows.len()).sum()
}

/// The entries of `value` in the table of index `index` of `table` (an error when it has none).
fn read_index(
    node: &NodeState,
    table: &str,
    index: &str,
    value: &bytes::Bytes,
) -> Result<helenus_storage::ReadResult, helenus_storage::StorageError> {
    let q = helenus_storage::ReadQuery {
        columns: None,
        partitions: helenus_storage::value_partition(value),
        slices: Vec::new(),
        reversed: false,
        row_limit: None,
        per_partition_limit: None,
        partition_limit: None,
        now_s: MANUAL_NOW_US / 1_000_000,
        resume_after: None,
    };
    node.engine.read(index_id(node, table, index), &q)
}

/// Rows the reads of `table` merged so far (live or not): what they cost.
fn rows_merged(node: &NodeState, table: &str) -> u64 {
    node.engine
        .table_stats(table_id(node, table))
        .rows_merged_by_reads
}

/// Inserts `rows` (each a VALUES list) into `table` in unlogged batches.
async fn insert_all(node: &NodeState, table: &str, columns: &str, rows: &[String]) {
    for chunk in rows.chunks(250) {
        let mut cql = String::from("BEGIN UNLOGGED BATCH ");
        for r in chunk {
            cql.push_str(&format!("INSERT INTO k.{table} ({columns}) VALUES ({r}); "));
        }
        cql.push_str("APPLY BATCH");
        query(node, &cql).await;
    }
}

/// Every page of `cql` at `page_size` rows, each row its columns joined by spaces.
async fn pages(node: &NodeState, cql: &str, page_size: i32) -> Vec<Vec<String>> {
    let session = parking_lot::Mutex::new(Session::default());
    let mut params = params();
    params.page_size = Some(page_size);
    let mut out = Vec::new();
    loop {
        let Ok((_, Outcome::Rows { out: page, .. })) =
            run_query(node, &session, cql, &params).await
        else {
            panic!("{cql}: no rows");
        };
        out.push(
            page.cell_rows()
                .iter()
                .map(|r| {
                    r.iter()
                        .map(|b| {
                            let b = b.clone().unwrap();
                            i32::from_be_bytes(b.as_ref().try_into().unwrap()).to_string()
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect(),
        );
        match page.paging_state {
            Some(state) => params.paging_state = Some(state),
            None => return out,
        }
    }
}

#[test]
fn an_indexed_equality_reads_only_the_rows_its_entries_name() {
    with_node(|node, _| async move {
        query(
            &node,
            "CREATE TABLE k.big (k int PRIMARY KEY, v int, v2 int)",
        )
        .await;
        let all: Vec<String> = (0..200_000)
            .map(|i| format!("{i}, {}, {}", i % 20_000, i % 20_000))
            .collect();
        insert_all(&node, "big", "k, v, v2", &all[..100_000]).await;
        node.engine.flush(None).unwrap();
        // Part of the rows in SSTables, part in the memtable; the index built over both.
        insert_all(&node, "big", "k, v, v2", &all[100_000..]).await;
        query(&node, "CREATE INDEX big_v_idx ON k.big (v)").await;
        wait_built(&node, "big", "big_v_idx").await;
        let listed = rows(
            &node,
            "SELECT index_name FROM system.\"IndexInfo\" WHERE table_name = 'k'",
        )
        .await;
        assert_eq!(listed, ["'big_v_idx'"]);
        let before = rows_merged(&node, "big");
        let t0 = std::time::Instant::now();
        let got = rows(&node, "SELECT k FROM k.big WHERE v = 777").await;
        let took = t0.elapsed();
        let merged = rows_merged(&node, "big") - before;
        assert_eq!(got.len(), 10);
        // The base rows of 10 entries, not 200,000.
        assert!(merged <= 20, "read {merged} base rows for 10 matches");
        assert!(took < Duration::from_secs(5), "took {took:?}");
        let scanned = rows(&node, "SELECT k FROM k.big WHERE v2 = 777 ALLOW FILTERING").await;
        assert_eq!(got, scanned, "same rows, same order as the scan");
        let limited = rows(&node, "SELECT k FROM k.big WHERE v = 777 LIMIT 3").await;
        assert_eq!(limited, got[..3]);
    });
}

#[test]
fn paging_through_index_matches_returns_each_row_once_in_scan_order() {
    with_node(|node, _| async move {
        query(
            &node,
            "CREATE TABLE k.wide (k int, c int, v int, v2 int, PRIMARY KEY (k, c))",
        )
        .await;
        query(&node, "CREATE INDEX wide_v_idx ON k.wide (v)").await;
        wait_built(&node, "wide", "wide_v_idx").await;
        let all: Vec<String> = (0..5_000)
            .map(|i| format!("{}, {}, {}, {}", i / 10, i % 10, i % 2, i % 2))
            .collect();
        insert_all(&node, "wide", "k, c, v, v2", &all[..2_500]).await;
        node.engine.flush(None).unwrap();
        insert_all(&node, "wide", "k, c, v, v2", &all[2_500..]).await;
        let scan = "SELECT k, c FROM k.wide WHERE v2 = 1 ALLOW FILTERING";
        let expected: Vec<String> = rows(&node, scan).await;
        assert_eq!(expected.len(), 2_500);
        let check = |got: Vec<Vec<String>>| {
            assert!(got.iter().all(|p| p.len() <= 100));
            let flat: Vec<String> = got.concat();
            assert_eq!(flat, expected, "each match once, in the scan's order");
        };
        let before = rows_merged(&node, "wide");
        check(pages(&node, "SELECT k, c FROM k.wide WHERE v = 1", 100).await);
        // The 2,500 rows the entries name, not the table's 5,000.
        let merged = rows_merged(&node, "wide") - before;
        assert!(merged <= 2_600, "read {merged} base rows for 2,500 matches");
        node.engine.flush(None).unwrap();
        node.engine.compact(table_id(&node, "wide")).unwrap();
        node.engine
            .compact(index_id(&node, "wide", "wide_v_idx"))
            .unwrap();
        check(pages(&node, "SELECT k, c FROM k.wide WHERE v = 1", 100).await);
        // Restricted clustering and LIMIT go on across pages too.
        let got = pages(
            &node,
            "SELECT k, c FROM k.wide WHERE v = 1 AND c = 3 LIMIT 120 ALLOW FILTERING",
            50,
        )
        .await;
        let want = rows(
            &node,
            "SELECT k, c FROM k.wide WHERE v2 = 1 AND c = 3 LIMIT 120 ALLOW FILTERING",
        )
        .await;
        assert_eq!(got.concat(), want);
        assert_eq!(want.len(), 120);
    });
}

#[test]
fn rows_moved_deleted_or_expired_are_not_returned() {
    with_node(|node, clock| async move {
        query(
            &node,
            "CREATE TABLE k.t (k int, c int, v int, PRIMARY KEY (k, c))",
        )
        .await;
        query(&node, "CREATE INDEX t_v_idx ON k.t (v)").await;
        wait_built(&node, "t", "t_v_idx").await;
        for k in 0..8 {
            query(
                &node,
                &format!("INSERT INTO k.t (k, c, v) VALUES ({k}, 0, 5)"),
            )
            .await;
        }
        query(&node, "UPDATE k.t SET v = 6 WHERE k = 1 AND c = 0").await;
        query(&node, "DELETE FROM k.t WHERE k = 2 AND c = 0").await;
        query(&node, "DELETE FROM k.t WHERE k = 3").await;
        query(&node, "DELETE v FROM k.t WHERE k = 4 AND c = 0").await;
        query(&node, "UPDATE k.t SET v = null WHERE k = 5 AND c = 0").await;
        query(
            &node,
            "UPDATE k.t USING TTL 10 SET v = 5 WHERE k = 6 AND c = 0",
        )
        .await;
        // Moved away and back: one entry, one row.
        query(&node, "UPDATE k.t SET v = 6 WHERE k = 7 AND c = 0").await;
        query(&node, "UPDATE k.t SET v = 5 WHERE k = 7 AND c = 0").await;
        assert_eq!(entries(&node, "t", "t_v_idx", 5), 8);
        let mut got = rows(&node, "SELECT k, v FROM k.t WHERE v = 5").await;
        got.sort();
        assert_eq!(got, ["0 5", "6 5", "7 5"]);
        // The stale entries the query met are deleted: the next query does not read them.
        assert_eq!(entries(&node, "t", "t_v_idx", 5), 3);
        clock.advance(Duration::from_secs(11));
        node.engine.flush(None).unwrap();
        let mut got = rows(&node, "SELECT k, v FROM k.t WHERE v = 5").await;
        got.sort();
        assert_eq!(got, ["0 5", "7 5"]);
        assert_eq!(
            rows(&node, "SELECT k, v FROM k.t WHERE v = 6").await,
            ["1 6"]
        );
        query(&node, "TRUNCATE k.t").await;
        assert!(rows(&node, "SELECT k FROM k.t WHERE v = 5")
            .await
            .is_empty());
    });
}

#[test]
fn the_index_answers_after_a_restart_from_its_persisted_table() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let clock = Arc::new(ManualClock::new(MANUAL_NOW_US));
    let (node, dir) = node_with(clock.clone());
    rt.block_on(async {
        query(&node, "CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").await;
        query(&node, "CREATE TABLE k.r (k int PRIMARY KEY, v int)").await;
        let all: Vec<String> = (0..20_000).map(|i| format!("{i}, {}", i % 1_000)).collect();
        insert_all(&node, "r", "k, v", &all).await;
        query(&node, "CREATE INDEX r_v_idx ON k.r (v)").await;
        wait_built(&node, "r", "r_v_idx").await;
        // Only in the commitlog at the restart: replayed into base and index alike.
        query(&node, "INSERT INTO k.r (k, v) VALUES (99999, 7)").await;
    });
    node.engine.shutdown_without_flush().unwrap();
    drop(node);
    let mut config = crate::config::NodeConfig::default();
    config.set_data_dir(&dir);
    let node = crate::open_node_with_clock(config, clock).unwrap();
    rt.block_on(async {
        assert!(node.engine.index_built(index_id(&node, "r", "r_v_idx")));
        let before = rows_merged(&node, "r");
        let mut got = rows(&node, "SELECT k FROM k.r WHERE v = 7").await;
        got.sort();
        let mut want: Vec<String> = (0..20).map(|i| (i * 1_000 + 7).to_string()).collect();
        want.push("99999".into());
        want.sort();
        assert_eq!(got, want);
        assert!(rows_merged(&node, "r") - before <= 42);
        query(&node, "DROP INDEX k.r_v_idx").await;
        assert!(
            node.engine
                .table_stats(index_id(&node, "r", "r_v_idx"))
                .sstable_count
                == 0
        );
    });
    node.engine.shutdown().unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

/// A storage-attached index of a columnar table is its column: no index table, nothing built,
/// listed as built at once; `=`, ranges and counts on it answer without ALLOW FILTERING, paged,
/// the same rows as the scan of an unindexed copy of the column, writes after it included.
#[test]
fn sai_on_a_columnar_table_is_answered_from_the_column() {
    with_node(|node, _| async move {
        query(
            &node,
            "CREATE TABLE k.col (k int PRIMARY KEY, v int, v2 int, c text, c2 text) \
             WITH extensions = {'helenus.layout': 'columnar'}",
        )
        .await;
        let all: Vec<String> = (0..30_000)
            .map(|i| {
                let c = ["USA", "ALB", "FRA"][(i % 3) as usize];
                format!("{i}, {0}, {0}, '{c}', '{c}'", i % 1_000)
            })
            .collect();
        insert_all(&node, "col", "k, v, v2, c, c2", &all[..20_000]).await;
        node.engine.flush(None).unwrap();
        insert_all(&node, "col", "k, v, v2, c, c2", &all[20_000..]).await;
        query(&node, "CREATE CUSTOM INDEX col_v ON k.col (v) USING 'sai'").await;
        query(
            &node,
            "CREATE CUSTOM INDEX col_c ON k.col (c) USING 'StorageAttachedIndex'",
        )
        .await;
        for index in ["col_v", "col_c"] {
            let read = read_index(&node, "col", index, &bytes::Bytes::from_static(b"x"));
            assert!(read.is_err(), "{index} has an index table");
        }
        let listed = rows(
            &node,
            "SELECT index_name FROM system.\"IndexInfo\" WHERE table_name = 'k'",
        )
        .await;
        assert_eq!(listed, ["'col_c'", "'col_v'"]);
        // An update after the index moves a row from one value to another.
        query(&node, "UPDATE k.col SET v = 778, c = 'FRA' WHERE k = 777").await;
        query(&node, "UPDATE k.col SET v2 = 778, c2 = 'FRA' WHERE k = 777").await;
        let pairs = [
            (
                "SELECT k FROM k.col WHERE v = 777",
                "SELECT k FROM k.col WHERE v2 = 777 ALLOW FILTERING",
            ),
            (
                "SELECT k FROM k.col WHERE v = 778",
                "SELECT k FROM k.col WHERE v2 = 778 ALLOW FILTERING",
            ),
            (
                "SELECT k FROM k.col WHERE v >= 990",
                "SELECT k FROM k.col WHERE v2 >= 990 ALLOW FILTERING",
            ),
            (
                "SELECT count(*) FROM k.col WHERE c = 'ALB'",
                "SELECT count(*) FROM k.col WHERE c2 = 'ALB' ALLOW FILTERING",
            ),
            (
                "SELECT k, v FROM k.col WHERE c = 'USA' AND v = 3",
                "SELECT k, v FROM k.col WHERE c2 = 'USA' AND v2 = 3 ALLOW FILTERING",
            ),
        ];
        for (indexed, scanned) in pairs {
            let got = rows(&node, indexed).await;
            assert!(!got.is_empty(), "{indexed}");
            assert_eq!(got, rows(&node, scanned).await, "{indexed}");
        }
        assert_eq!(
            rows(&node, "SELECT k FROM k.col WHERE v = 777").await.len(),
            29
        );
        assert_eq!(
            rows(&node, "SELECT count(*) FROM k.col WHERE c = 'ALB'").await,
            ["10000"]
        );
        let every = rows(&node, "SELECT k FROM k.col WHERE v >= 990").await;
        assert_eq!(every.len(), 300);
        let paged = pages(&node, "SELECT k FROM k.col WHERE v >= 990", 7).await;
        // Only the last page may be empty (the one before it ended where the matches did).
        let (_, before_last) = paged.split_last().unwrap();
        assert!(before_last.iter().all(|p| !p.is_empty()), "an empty page");
        assert_eq!(paged.concat(), every);
        // Pages and limits smaller than the runs of partitions a restriction leaves out: a
        // read that found no match still tells where the next one goes on.
        let limited = rows(&node, "SELECT k FROM k.col WHERE v >= 990 LIMIT 5").await;
        assert_eq!(limited, every[..5]);
        let paged = pages(
            &node,
            "SELECT k FROM k.col WHERE v2 >= 990 LIMIT 20 ALLOW FILTERING",
            3,
        )
        .await;
        assert_eq!(paged.concat(), every[..20]);
        // A column without an index still needs ALLOW FILTERING.
        let session = parking_lot::Mutex::new(Session::default());
        let refused = run_query(
            &node,
            &session,
            "SELECT k FROM k.col WHERE v2 = 3",
            &params(),
        )
        .await;
        assert!(refused.is_err());
    });
}

#[test]
fn a_filtered_column_scan_counts_tombstones_over_all_the_reads_of_a_page() {
    // Each storage read of a page of 10 meets a tombstone or so; the page, filled by read after
    // read because the restriction matches nothing, meets 100: over the threshold of 50.
    with_configured_node(
        |config| config.tombstone_failure_threshold = 50,
        |node, _| async move {
            query(
                &node,
                "CREATE TABLE k.tomb (k int PRIMARY KEY, c text) \
                 WITH extensions = {'helenus.layout': 'columnar'}",
            )
            .await;
            let all: Vec<String> = (0..2_000).map(|i| format!("{i}, 'n'")).collect();
            insert_all(&node, "tomb", "k, c", &all).await;
            node.engine.flush(None).unwrap();
            let scan = "SELECT k FROM k.tomb WHERE c = 'z' ALLOW FILTERING";
            assert!(pages(&node, scan, 10).await.concat().is_empty());
            for k in (0..2_000).step_by(20) {
                query(&node, &format!("DELETE c FROM k.tomb WHERE k = {k}")).await;
            }
            let session = parking_lot::Mutex::new(Session::default());
            let mut paged = params();
            paged.page_size = Some(10);
            match run_query(&node, &session, scan, &paged).await {
                Err(super::ExecError::ReadFailure { reason_name, .. }) => {
                    assert_eq!(reason_name, "READ_TOO_MANY_TOMBSTONES")
                }
                Err(e) => panic!("{e}"),
                Ok(_) => panic!("a page over 100 tombstones was served"),
            }
        },
    );
}
