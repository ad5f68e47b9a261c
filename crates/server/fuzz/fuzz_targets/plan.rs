//! Arbitrary statement text planned against a schema with every kind of column (issue 11's
//! type-checker target): PREPARE parses, resolves tables and columns, types every term and bind
//! marker and checks every restriction, which is where the checks of values, nesting and
//! combinations live. Every input must be prepared or refused with an error that renders; a
//! panic, a stack overflow, a hang (libFuzzer's -timeout) or an allocation over the bound
//! (-malloc_limit_mb) is a finding. run.sh sets the bounds.
#![no_main]

use helenus_protocol as proto;
use helenus_server::exec;
use helenus_server::NodeState;
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, LazyLock};

/// The schema statements are planned against: native, collection, frozen, UDT, tuple, vector,
/// counter, static and compound-key columns, an index, a view-like wide table.
const SCHEMA: &[&str] = &[
    "CREATE KEYSPACE fz WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    "CREATE TYPE fz.addr (street text, zip int, tags frozen<set<text>>)",
    "CREATE TABLE fz.t (k int, c text, d timeuuid, v bigint, s text static, m map<text, int>, l list<frozen<map<int, text>>>, st set<date>, u fz.addr, fu frozen<fz.addr>, tu tuple<int, text, blob>, vec vector<float, 3>, dec decimal, vi varint, du duration, ts timestamp, ip inet, b blob, PRIMARY KEY ((k, c), d)) WITH CLUSTERING ORDER BY (d DESC)",
    "CREATE TABLE fz.cnt (k text PRIMARY KEY, n counter)",
    "CREATE TABLE fz.kv (k int PRIMARY KEY, v text, n int)",
    "CREATE INDEX ON fz.kv (n)",
];

static NODE: LazyLock<Option<Arc<NodeState>>> = LazyLock::new(|| {
    let dir = std::env::temp_dir().join(format!("helenus-fuzz-plan-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut config = helenus_server::config::NodeConfig::default();
    config.set_data_dir(&dir);
    let node = helenus_server::open_node(config).ok()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    let session = parking_lot::Mutex::new(exec::Session::default());
    let params = proto::QueryParameters::default();
    for ddl in SCHEMA {
        runtime
            .block_on(exec::run_query(&node, &session, ddl, &params))
            .ok()?;
    }
    Some(node)
});

fuzz_target!(|data: &[u8]| {
    let Some(node) = NODE.as_ref() else {
        return;
    };
    let text = String::from_utf8_lossy(data);
    if let Err(e) = exec::prepare(node, Some("fz"), &text) {
        let _ = e.to_string();
    }
});
