//! The executor takes time from the node's injected clock, not from the operating system.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::{run_query, ExecState, Outcome, Session};
use crate::config::NodeConfig;
use crate::node::NodeState;
use helenus_protocol as proto;
use helenus_types::ManualClock;
use std::sync::Arc;

/// 2021-01-01T00:00:00Z, far from any real "now" the system clock could give.
const MANUAL_NOW_US: i64 = 1_609_459_200_000_000;

fn params() -> proto::QueryParameters {
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

fn node_with(clock: Arc<ManualClock>) -> (Arc<NodeState>, std::path::PathBuf) {
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
    let mut node = crate::open_node(config).unwrap();
    Arc::get_mut(&mut node).unwrap().exec = ExecState::new(clock);
    (node, dir)
}

async fn query(node: &NodeState, cql: &str) -> Outcome {
    let session = parking_lot::Mutex::new(Session { keyspace: None });
    match run_query(node, &session, cql, &params()).await {
        Ok((_, out)) => out,
        Err(e) => panic!("{cql}: {e}"),
    }
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
        let cell = out.rows[0][0].clone().unwrap();
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
