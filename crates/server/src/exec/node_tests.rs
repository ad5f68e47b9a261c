//! Statements run against a real node state (storage in a temporary directory, a manual clock):
//! time comes from the injected clock, and each write operation leaves the row it should.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::{run_query, ExecState, Outcome, Session};
use crate::config::NodeConfig;
use crate::node::NodeState;
use helenus_protocol as proto;
use helenus_types::ManualClock;
use std::sync::Arc;

/// 2021-01-01T00:00:00Z, far from any real "now" the system clock could give.
pub(super) const MANUAL_NOW_US: i64 = 1_609_459_200_000_000;

pub(super) fn params() -> proto::QueryParameters {
    proto::QueryParameters {
        consistency: proto::Consistency::One,
        values: proto::QueryValues::default(),
        skip_metadata: false,
        page_size: None,
        paging_state: None,
        serial_consistency: None,
        default_timestamp: None,
        keyspace: None,
        now_in_seconds: None,
    }
}

pub(super) fn node_with(clock: Arc<ManualClock>) -> (Arc<NodeState>, std::path::PathBuf) {
    node_configured(clock, |_| {})
}

fn node_configured(
    clock: Arc<ManualClock>,
    configure: impl FnOnce(&mut NodeConfig),
) -> (Arc<NodeState>, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "helenus-clock-test-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let mut config = NodeConfig::default();
    config.set_data_dir(&dir);
    configure(&mut config);
    let node = crate::open_node_with_clock(config, clock).unwrap();
    (node, dir)
}

pub(super) async fn query(node: &NodeState, cql: &str) -> Outcome {
    let session = parking_lot::Mutex::new(Session::default());
    match run_query(node, &session, cql, &params()).await {
        Ok((_, out)) => out,
        Err(e) => panic!("{cql}: {e}"),
    }
}

/// The rows of a SELECT as CQL literals, one string per row.
pub(super) async fn rows(node: &NodeState, cql: &str) -> Vec<String> {
    let Outcome::Rows { out, .. } = query(node, cql).await else {
        panic!("{cql}: no rows");
    };
    out.cell_rows()
        .iter()
        .map(|r| {
            r.iter()
                .zip(out.columns.iter())
                .map(|(cell, (_, ty))| match cell {
                    Some(b) => {
                        helenus_types::to_cql_literal(&helenus_types::deserialize(ty, b).unwrap())
                    }
                    None => "null".into(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// Runs `body` against a fresh node whose clock stands at `MANUAL_NOW_US`, with keyspace `k`.
pub(super) fn with_node<F>(body: impl FnOnce(Arc<NodeState>, Arc<ManualClock>) -> F)
where
    F: std::future::Future<Output = ()>,
{
    with_configured_node(|_| {}, body)
}

/// [`with_node`] with `configure` applied to the node's settings first.
pub(super) fn with_configured_node<F>(
    configure: impl FnOnce(&mut NodeConfig),
    body: impl FnOnce(Arc<NodeState>, Arc<ManualClock>) -> F,
) where
    F: std::future::Future<Output = ()>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let clock = Arc::new(ManualClock::new(MANUAL_NOW_US));
    let (node, dir) = node_configured(clock.clone(), configure);
    rt.block_on(async {
        query(&node, "CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").await;
        body(node.clone(), clock).await;
    });
    node.engine.shutdown().unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn list_operations_append_prepend_set_and_remove_elements() {
    with_node(|node, _| async move {
        query(&node, "CREATE TABLE k.l (p int PRIMARY KEY, l list<int>)").await;
        query(&node, "INSERT INTO k.l (p, l) VALUES (1, [1, 2])").await;
        query(&node, "UPDATE k.l SET l = l + [3] WHERE p = 1").await;
        query(&node, "UPDATE k.l SET l = [0] + l WHERE p = 1").await;
        query(&node, "UPDATE k.l SET l[1] = 9 WHERE p = 1").await;
        assert_eq!(
            rows(&node, "SELECT l FROM k.l WHERE p = 1").await,
            ["[0, 9, 2, 3]"]
        );
        query(&node, "DELETE l[0] FROM k.l WHERE p = 1").await;
        query(&node, "UPDATE k.l SET l = l - [3] WHERE p = 1").await;
        assert_eq!(
            rows(&node, "SELECT l FROM k.l WHERE p = 1").await,
            ["[9, 2]"]
        );
    });
}

#[test]
fn map_set_and_counter_operations() {
    with_node(|node, _| async move {
        query(
            &node,
            "CREATE TABLE k.m (p int PRIMARY KEY, m map<int, text>, s set<int>)",
        )
        .await;
        query(
            &node,
            "UPDATE k.m SET m[1] = 'a', s = s + {3, 1} WHERE p = 1",
        )
        .await;
        query(
            &node,
            "UPDATE k.m SET m = m + {2: 'b'}, s = s - {3} WHERE p = 1",
        )
        .await;
        query(&node, "DELETE m[1] FROM k.m WHERE p = 1").await;
        assert_eq!(
            rows(&node, "SELECT m, s FROM k.m WHERE p = 1").await,
            ["{2: 'b'} {1}"]
        );
        query(&node, "CREATE TABLE k.c (p int PRIMARY KEY, n counter)").await;
        query(&node, "UPDATE k.c SET n = n + 5 WHERE p = 1").await;
        query(&node, "UPDATE k.c SET n = n - 2 WHERE p = 1").await;
        assert_eq!(rows(&node, "SELECT n FROM k.c WHERE p = 1").await, ["3"]);
    });
}

#[test]
fn static_cells_and_range_deletions() {
    with_node(|node, _| async move {
        query(
            &node,
            "CREATE TABLE k.r (p int, c int, s int static, v int, PRIMARY KEY (p, c))",
        )
        .await;
        for c in 1..=4 {
            query(
                &node,
                &format!("INSERT INTO k.r (p, c, v) VALUES (1, {c}, {c})"),
            )
            .await;
        }
        query(&node, "UPDATE k.r SET s = 7 WHERE p = 1").await;
        query(&node, "DELETE FROM k.r WHERE p = 1 AND c >= 2 AND c < 4").await;
        assert_eq!(
            rows(&node, "SELECT c, s, v FROM k.r WHERE p = 1").await,
            ["1 7 1", "4 7 4"]
        );
        query(&node, "DELETE FROM k.r WHERE p = 1 AND c = 4").await;
        query(&node, "DELETE v FROM k.r WHERE p = 1 AND c = 1").await;
        assert_eq!(
            rows(&node, "SELECT c, s, v FROM k.r WHERE p = 1").await,
            ["1 7 null"]
        );
    });
}

/// Every page of `cql` at `page_size` rows, following the paging state to the end.
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
                    let b = r[0].clone().unwrap();
                    i32::from_be_bytes(b.as_ref().try_into().unwrap()).to_string()
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
fn pages_limits_and_aggregates() {
    with_node(|node, _| async move {
        query(
            &node,
            "CREATE TABLE k.p (p int, c int, v int, PRIMARY KEY (p, c))",
        )
        .await;
        for c in 1..=5 {
            query(
                &node,
                &format!("INSERT INTO k.p (p, c, v) VALUES (1, {c}, {c})"),
            )
            .await;
        }
        query(&node, "INSERT INTO k.p (p, c, v) VALUES (2, 1, 10)").await;
        let all = pages(&node, "SELECT c FROM k.p WHERE p = 1", 2).await;
        assert_eq!(all, [vec!["1", "2"], vec!["3", "4"], vec!["5"]]);
        let limited = pages(&node, "SELECT c FROM k.p WHERE p = 1 LIMIT 3", 2).await;
        assert_eq!(limited, [vec!["1", "2"], vec!["3"]]);
        let filtered = pages(
            &node,
            "SELECT c FROM k.p WHERE p = 1 AND v > 2 ALLOW FILTERING",
            2,
        )
        .await;
        assert_eq!(filtered, [vec!["3", "4"], vec!["5"]]);
        let sliced = pages(
            &node,
            "SELECT c FROM k.p WHERE p = 1 AND c > 1 AND c <= 4",
            10,
        )
        .await;
        assert_eq!(sliced, [vec!["2", "3", "4"]]);
        query(
            &node,
            "CREATE TABLE k.d (p int, c int, PRIMARY KEY (p, c)) WITH CLUSTERING ORDER BY (c DESC)",
        )
        .await;
        for c in 1..=5 {
            query(&node, &format!("INSERT INTO k.d (p, c) VALUES (1, {c})")).await;
        }
        let desc = pages(
            &node,
            "SELECT c FROM k.d WHERE p = 1 AND c >= 2 AND c < 5",
            10,
        )
        .await;
        assert_eq!(desc, [vec!["4", "3", "2"]]);
        let listed = pages(
            &node,
            "SELECT c FROM k.d WHERE p = 1 AND c IN (1, 3, 9)",
            10,
        )
        .await;
        assert_eq!(listed, [vec!["3", "1"]]);
        assert_eq!(rows(&node, "SELECT count(*) FROM k.p").await, ["6"]);
        // Virtual system tables are read through the same page loop.
        let tables = rows(
            &node,
            "SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'k'",
        )
        .await;
        assert_eq!(tables, ["'d'", "'p'"]);
        assert_eq!(
            rows(&node, "SELECT p, max(v) FROM k.p GROUP BY p")
                .await
                .len(),
            2
        );
        let mut first = rows(&node, "SELECT p, c FROM k.p PER PARTITION LIMIT 1").await;
        first.sort();
        assert_eq!(first, ["1 1", "2 1"]);
        assert_eq!(rows(&node, "SELECT DISTINCT p FROM k.p").await.len(), 2);
    });
}

/// The message of the Invalid error `cql` fails with.
async fn refusal(node: &NodeState, cql: &str) -> String {
    let session = parking_lot::Mutex::new(Session::default());
    match run_query(node, &session, cql, &params()).await {
        Err(super::ExecError::Invalid(m)) => m,
        Err(e) => panic!("{cql}: not Invalid: {e:?}"),
        Ok(_) => panic!("{cql}: accepted"),
    }
}

#[test]
fn write_planning_refuses_incomplete_keys_and_wrong_operations() {
    with_node(|node, _| async move {
        query(&node, "CREATE TABLE k.w (p int, c1 int, c2 int, s int static, v int, n list<int>, PRIMARY KEY (p, c1, c2))").await;
        assert_eq!(
            refusal(&node, "INSERT INTO k.w (c1, c2, v) VALUES (1, 1, 1)").await,
            "Some partition key parts are missing: p"
        );
        assert_eq!(
            refusal(&node, "INSERT INTO k.w (p, c1, v) VALUES (1, 1, 1)").await,
            "Some clustering keys are missing: c2"
        );
        // Only static columns: the clustering key may be left out.
        query(&node, "INSERT INTO k.w (p, s) VALUES (1, 5)").await;
        assert_eq!(
            refusal(&node, "UPDATE k.w SET v = 1 WHERE p = 1 AND c2 = 1").await,
            "PRIMARY KEY column \"c2\" cannot be restricted as preceding column \"c1\" is not restricted"
        );
        assert_eq!(
            refusal(
                &node,
                "UPDATE k.w SET p = 1 WHERE p = 1 AND c1 = 1 AND c2 = 1"
            )
            .await,
            "PRIMARY KEY part p found in SET part"
        );
        assert_eq!(
            refusal(
                &node,
                "UPDATE k.w SET v = 1 WHERE p = 1 AND c1 = 1 AND c2 = 1 AND v = 2"
            )
            .await,
            "Non PRIMARY KEY columns found in where clause: v"
        );
        assert_eq!(
            refusal(
                &node,
                "UPDATE k.w SET v = v + 1 WHERE p = 1 AND c1 = 1 AND c2 = 1"
            )
            .await,
            "Invalid operation (v = v + ?) for non counter column v"
        );
        assert_eq!(
            refusal(
                &node,
                "INSERT INTO k.w (p, c1, c2, v, v) VALUES (1, 1, 1, 1, 1)"
            )
            .await,
            "Multiple definitions found for column v"
        );
        query(&node, "CREATE TABLE k.cnt (p int PRIMARY KEY, n counter)").await;
        assert!(refusal(&node, "INSERT INTO k.cnt (p, n) VALUES (1, 1)")
            .await
            .starts_with("INSERT statements are not allowed on counter tables"));
        assert!(
            refusal(&node, "UPDATE k.cnt USING TTL 5 SET n = n + 1 WHERE p = 1")
                .await
                .contains("custom TTL")
        );
    });
}

// TTLs are not checked against the manual clock: the storage engine stamps expiry times from
// the system clock (it takes no injected clock yet), so the two would disagree.
#[test]
fn using_timestamp_overrides_the_clock_and_older_writes_lose() {
    with_node(|node, _| async move {
        query(&node, "CREATE TABLE k.t (p int PRIMARY KEY, v int)").await;
        query(
            &node,
            "INSERT INTO k.t (p, v) VALUES (1, 1) USING TIMESTAMP 42",
        )
        .await;
        assert_eq!(
            rows(&node, "SELECT v, writetime(v) FROM k.t WHERE p = 1").await,
            ["1 42"]
        );
        query(&node, "UPDATE k.t SET v = 2 WHERE p = 1").await;
        query(&node, "UPDATE k.t USING TIMESTAMP 43 SET v = 3 WHERE p = 1").await;
        assert_eq!(rows(&node, "SELECT v FROM k.t WHERE p = 1").await, ["2"]);
    });
}

#[test]
fn write_timestamps_come_from_the_injected_clock() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let clock = Arc::new(ManualClock::new(MANUAL_NOW_US));
    let (node, dir) = node_with(clock.clone());
    rt.block_on(async {
        query(&node, "CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").await;
        query(&node, "CREATE TABLE k.t (p int PRIMARY KEY, v int)").await;
        query(&node, "INSERT INTO k.t (p, v) VALUES (1, 1)").await;
        let Outcome::Rows { out, .. } = query(&node, "SELECT writetime(v) FROM k.t WHERE p = 1").await else {
            panic!("SELECT returned no rows");
        };
        let cell = out.cell_rows()[0][0].clone().unwrap();
        let writetime = i64::from_be_bytes(cell.as_ref().try_into().unwrap());
        // Schema changes took earlier timestamps; the clock itself never moved.
        assert!(
            (MANUAL_NOW_US..MANUAL_NOW_US + 100).contains(&writetime),
            "writetime {writetime} is not from the manual clock"
        );
    });
    node.engine.shutdown().unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn exec_state_counts_from_its_clock_and_never_repeats() {
    let clock = Arc::new(ManualClock::new(MANUAL_NOW_US));
    let state = ExecState::new(clock.clone());
    assert_eq!(state.next_timestamp_us(), MANUAL_NOW_US);
    assert_eq!(state.next_timestamp_us(), MANUAL_NOW_US + 1);
    assert_eq!(state.now_s(), MANUAL_NOW_US / 1_000_000);
    clock.advance(std::time::Duration::from_secs(10));
    assert_eq!(state.now_s(), MANUAL_NOW_US / 1_000_000 + 10);
}

#[test]
fn time_functions_and_ttl_read_the_node_clock() {
    with_node(|node, clock| async move {
        query(
            &node,
            "CREATE TABLE k.t (p int PRIMARY KEY, u timeuuid, ts timestamp, v int)",
        )
        .await;
        query(
            &node,
            "INSERT INTO k.t (p, u, ts, v) VALUES (1, now(), currentTimestamp(), 1) USING TTL 100",
        )
        .await;
        let ms = MANUAL_NOW_US / 1000;
        assert_eq!(
            rows(
                &node,
                "SELECT toUnixTimestamp(u), toUnixTimestamp(ts) FROM k.t WHERE p = 1"
            )
            .await,
            [format!("{ms} {ms}")]
        );
        clock.advance(std::time::Duration::from_secs(40));
        // The TTL counts down on the same clock, in the executor and in storage alike.
        assert_eq!(
            rows(&node, "SELECT ttl(v) FROM k.t WHERE p = 1").await,
            ["60"]
        );
        assert_eq!(
            rows(
                &node,
                "SELECT toUnixTimestamp(currentTimestamp()) FROM k.t WHERE p = 1"
            )
            .await,
            [format!("{}", ms + 40_000)]
        );
        clock.advance(std::time::Duration::from_secs(61));
        assert!(
            rows(&node, "SELECT v FROM k.t WHERE p = 1")
                .await
                .is_empty(),
            "expired on the manual clock"
        );
    });
}

/// Runs `cql` at `consistency`; the error message if it fails.
async fn query_at(
    node: &NodeState,
    cql: &str,
    consistency: proto::Consistency,
) -> Result<(), String> {
    let session = parking_lot::Mutex::new(Session::default());
    let mut p = params();
    p.consistency = consistency;
    run_query(node, &session, cql, &p)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[test]
fn consistency_levels_reach_the_proxy_and_are_refused_where_cassandra_refuses_them() {
    with_node(|node, _| async move {
        query(&node, "CREATE TABLE k.c (p int PRIMARY KEY, v int)").await;
        // As recorded from Cassandra 5.0.9 (crates/cluster/tests/golden/cassandra_cl_errors.txt).
        assert_eq!(
            query_at(
                &node,
                "INSERT INTO k.c (p, v) VALUES (1, 1)",
                proto::Consistency::Serial
            )
            .await,
            Err("You must use conditional updates for serializable writes".to_string())
        );
        assert_eq!(
            query_at(
                &node,
                "SELECT * FROM k.c WHERE p = 1",
                proto::Consistency::Any
            )
            .await,
            Err("ANY ConsistencyLevel is only supported for writes".to_string())
        );
        // A single node holds every replica: every other level is met locally.
        for cl in [
            proto::Consistency::Any,
            proto::Consistency::Quorum,
            proto::Consistency::All,
        ] {
            assert_eq!(
                query_at(&node, "INSERT INTO k.c (p, v) VALUES (2, 2)", cl).await,
                Ok(())
            );
        }
        for cl in [
            proto::Consistency::One,
            proto::Consistency::LocalQuorum,
            proto::Consistency::Serial,
        ] {
            assert_eq!(
                query_at(&node, "SELECT * FROM k.c WHERE p = 2", cl).await,
                Ok(())
            );
        }
        assert_eq!(
            query_at(
                &node,
                "UPDATE k.c SET v = 3 WHERE p = 2 IF v = 2",
                proto::Consistency::Quorum
            )
            .await,
            Ok(()),
            "a conditional write at QUORUM commit"
        );
    });
}

#[test]
fn compact_storage_rows_may_leave_out_trailing_clustering_columns() {
    with_node(|node, _| async move {
        query(&node, "CREATE TABLE k.d (p int, c1 int, c2 int, v int, PRIMARY KEY (p, c1, c2)) WITH COMPACT STORAGE").await;
        query(&node, "INSERT INTO k.d (p, c1, c2, v) VALUES (1, 2, 0, 20)").await;
        query(&node, "INSERT INTO k.d (p, c1, v) VALUES (1, 2, 10)").await;
        query(&node, "UPDATE k.d SET v = 30 WHERE p = 1 AND c1 = 3").await;
        query(&node, "INSERT INTO k.d (p, c1, c2, v) VALUES (1, 1, 5, 15)").await;
        // The missing components read back as null and sort before every value.
        assert_eq!(
            rows(&node, "SELECT * FROM k.d WHERE p = 1").await,
            ["1 1 5 15", "1 2 null 10", "1 2 0 20", "1 3 null 30"]
        );
        assert_eq!(
            rows(&node, "SELECT c2, v FROM k.d WHERE p = 1 AND c1 = 2").await,
            ["null 10", "0 20"]
        );
        // The same from an SSTable.
        node.engine.flush(None).unwrap();
        assert_eq!(
            rows(&node, "SELECT * FROM k.d WHERE p = 1 AND c1 >= 2").await,
            ["1 2 null 10", "1 2 0 20", "1 3 null 30"]
        );
        assert_eq!(
            refusal(&node, "INSERT INTO k.d (p, c2, v) VALUES (1, 2, 10)").await,
            "PRIMARY KEY column \"c2\" cannot be restricted as preceding column \"c1\" is not restricted"
        );
        assert_eq!(
            refusal(&node, "INSERT INTO k.d (p, v) VALUES (1, 10)").await,
            "Some clustering keys are missing: c1, c2"
        );
        // A prefix deletion removes the prefix row with the others.
        query(&node, "DELETE FROM k.d WHERE p = 1 AND c1 = 2").await;
        assert_eq!(
            rows(&node, "SELECT * FROM k.d WHERE p = 1").await,
            ["1 1 5 15", "1 3 null 30"]
        );
        // Tables without COMPACT STORAGE still need every clustering column.
        query(
            &node,
            "CREATE TABLE k.n (p int, c1 int, c2 int, v int, PRIMARY KEY (p, c1, c2))",
        )
        .await;
        assert_eq!(
            refusal(&node, "INSERT INTO k.n (p, c1, v) VALUES (1, 2, 10)").await,
            "Some clustering keys are missing: c2"
        );
    });
}

/// A serialized list, set or map body from serialized components (`[int n][bytes]...`).
fn collection(count: usize, parts: &[Vec<u8>]) -> bytes::Bytes {
    let mut out = (count as i32).to_be_bytes().to_vec();
    for p in parts {
        out.extend_from_slice(&(p.len() as i32).to_be_bytes());
        out.extend_from_slice(p);
    }
    out.into()
}

async fn bound_query(node: &NodeState, cql: &str, values: Vec<bytes::Bytes>) -> Result<(), String> {
    let session = parking_lot::Mutex::new(Session::default());
    let mut p = params();
    p.values =
        proto::QueryValues::Positional(values.into_iter().map(proto::Value::Bytes).collect());
    run_query(node, &session, cql, &p)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[test]
fn bound_collections_become_cells_from_their_serialized_form() {
    with_node(|node, _| async move {
        query(&node, "CREATE TABLE k.c (p int PRIMARY KEY, l list<int>, s set<text>, m map<int, boolean>, b list<boolean>)").await;
        let int = |i: i32| i.to_be_bytes().to_vec();
        let l = collection(3, &[int(3), int(1), int(3)]);
        let s = collection(2, &[b"b".to_vec(), b"a".to_vec()]);
        // A boolean of 2 is true, stored as Cassandra normalizes it.
        let m = collection(1, &[int(7), vec![2]]);
        let b = collection(2, &[vec![0], vec![5]]);
        bound_query(
            &node,
            "INSERT INTO k.c (p, l, s, m, b) VALUES (1, ?, ?, ?, ?)",
            vec![l, s, m, b],
        )
        .await
        .unwrap();
        bound_query(
            &node,
            "UPDATE k.c SET l = l + ?, s = s + ? WHERE p = 1",
            vec![collection(1, &[int(9)]), collection(1, &[b"c".to_vec()])],
        )
        .await
        .unwrap();
        assert_eq!(
            rows(&node, "SELECT l, s, m, b FROM k.c WHERE p = 1").await,
            ["[3, 1, 3, 9] {'a', 'b', 'c'} {7: true} [false, true]"]
        );
        // Malformed elements are refused with Cassandra's messages, nothing written.
        let err = bound_query(
            &node,
            "INSERT INTO k.c (p, l) VALUES (2, ?)",
            vec![collection(1, &[vec![1, 2]])],
        )
        .await
        .unwrap_err();
        assert!(err.contains("Expected 4 or 0 byte int (2)"), "{err}");
        assert!(rows(&node, "SELECT l FROM k.c WHERE p = 2")
            .await
            .is_empty());
    });
}

#[test]
fn paging_resumes_after_a_compact_storage_prefix_row() {
    with_node(|node, _| async move {
        query(&node, "CREATE TABLE k.pg (p int, c1 int, c2 int, v int, PRIMARY KEY (p, c1, c2)) WITH COMPACT STORAGE").await;
        query(&node, "INSERT INTO k.pg (p, c1, v) VALUES (1, 1, 10)").await;
        query(
            &node,
            "INSERT INTO k.pg (p, c1, c2, v) VALUES (1, 1, 1, 11)",
        )
        .await;
        query(
            &node,
            "INSERT INTO k.pg (p, c1, c2, v) VALUES (1, 1, 2, 12)",
        )
        .await;
        let session = parking_lot::Mutex::new(Session::default());
        let mut p = params();
        p.page_size = Some(1);
        let mut seen = Vec::new();
        loop {
            let (_, out) = run_query(&node, &session, "SELECT v FROM k.pg WHERE p = 1", &p)
                .await
                .unwrap();
            let Outcome::Rows { out, .. } = out else {
                panic!("no rows");
            };
            for r in &out.cell_rows() {
                let v = r[0].as_ref().unwrap();
                seen.push(i32::from_be_bytes(v[..].try_into().unwrap()));
            }
            match out.paging_state {
                Some(s) => p.paging_state = Some(s),
                None => break,
            }
        }
        assert_eq!(seen, [10, 11, 12]);
    });
}

#[test]
fn a_collection_over_max_mutation_size_is_refused_before_it_is_expanded() {
    with_node(|node, _| async move {
        query(
            &node,
            "CREATE TABLE k.big (p int PRIMARY KEY, l list<blob>)",
        )
        .await;
        // 20 elements of 1 MiB: over the default bound of half a 32 MiB commitlog segment.
        let element = vec![7u8; 1 << 20];
        let parts = vec![element; 20];
        let err = bound_query(
            &node,
            "INSERT INTO k.big (p, l) VALUES (5, ?)",
            vec![collection(20, &parts)],
        )
        .await
        .unwrap_err();
        assert!(
            err.contains("Rejected an oversized mutation (")
                && err.contains("/16777216) for keyspace: k. Top keys are: big.5"),
            "{err}"
        );
        let err = bound_query(
            &node,
            "UPDATE k.big SET l = ? + l WHERE p = 5",
            vec![collection(20, &parts)],
        )
        .await
        .unwrap_err();
        assert!(err.contains("Rejected an oversized mutation ("), "{err}");
        // Under the bound it is written.
        bound_query(
            &node,
            "INSERT INTO k.big (p, l) VALUES (5, ?)",
            vec![collection(10, &parts[..10])],
        )
        .await
        .unwrap();
        assert_eq!(rows(&node, "SELECT p FROM k.big").await, ["5"]);
    });
}
