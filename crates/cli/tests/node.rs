//! Node-level tests: start the real `helenus` binary, talk CQL to it with the protocol crate's client
//! codec, and kill it with SIGKILL to check that acknowledged writes survive (commitlog batch mode).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

use helenus_protocol as proto;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

mod common;
use common::{free_port, start, Client};

fn tempdir(name: &str) -> std::path::PathBuf {
    common::tempdir("it", name)
}

#[test]
fn system_local_and_basic_crud_over_v4_and_v5() {
    let dir = tempdir("crud");
    let addr = "127.0.0.21";
    let mut node = start(addr, &dir, free_port(addr), &[]);
    for version in [4u8, 5] {
        let mut c = Client::connect(&mut node, version);
        let local =
            c.rows("SELECT release_version, cluster_name FROM system.local WHERE key='local'");
        assert_eq!(local.len(), 1);
        assert_eq!(local[0][0].as_deref(), Some(&b"5.0.9"[..]));
        let ks = format!("it_v{version}");
        c.ok(&format!("CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"));
        c.ok(&format!(
            "CREATE TABLE {ks}.t (k int, c int, v text, PRIMARY KEY (k, c))"
        ));
        for i in 0..10 {
            c.ok(&format!(
                "INSERT INTO {ks}.t (k, c, v) VALUES (1, {i}, 'v{i}')"
            ));
        }
        let rows = c.rows(&format!(
            "SELECT c, v FROM {ks}.t WHERE k = 1 AND c >= 3 AND c < 6"
        ));
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0][0].as_deref(), Some(&3i32.to_be_bytes()[..]));
        c.ok(&format!("DELETE FROM {ks}.t WHERE k = 1 AND c = 4"));
        assert_eq!(
            c.rows(&format!("SELECT * FROM {ks}.t WHERE k = 1")).len(),
            9
        );
        match c.query("SELECT * FROM nosuch.t") {
            proto::Response::Error(e) => assert_eq!(e.code, proto::ErrorCode::INVALID),
            other => panic!("{other:?}"),
        }
        match c.query("SELEKT 1") {
            proto::Response::Error(e) => assert_eq!(e.code, proto::ErrorCode::SYNTAX),
            other => panic!("{other:?}"),
        }
    }
    drop(node);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn acknowledged_writes_survive_kill_9_in_batch_mode() {
    let dir = tempdir("kill9");
    let addr = "127.0.0.22";
    let port = free_port(addr);
    let cycles = 5;
    let mut acknowledged = 0;
    for cycle in 0..cycles {
        let mut node = start(addr, &dir, port, &["commitlog_sync=batch"]);
        let mut c = Client::connect(&mut node, 4);
        if cycle == 0 {
            c.ok("CREATE KEYSPACE crash WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
            c.ok("CREATE TABLE crash.t (k int PRIMARY KEY, v int)");
        }
        let count = c.rows("SELECT count(*) FROM crash.t");
        let n = i64::from_be_bytes(count[0][0].as_deref().unwrap().try_into().unwrap());
        assert_eq!(
            n, acknowledged as i64,
            "cycle {cycle}: acknowledged writes lost"
        );
        for i in 0..200 {
            c.ok(&format!(
                "INSERT INTO crash.t (k, v) VALUES ({}, {i})",
                acknowledged + i
            ));
        }
        acknowledged += 200;
        // SIGKILL: no shutdown hook runs.
        node.child.kill().unwrap();
        node.child.wait().unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Periodic mode (the default), requests pipelined on one connection: their commitlog entries
/// wait in the log's buffer and reach the file with one write before the first answer leaves
/// (storage's commitlog/deferred.rs). The node is killed the moment the last answers arrive, so
/// an answer sent before its entry was written would show here as a lost row.
#[test]
fn acknowledged_pipelined_writes_survive_kill_9_in_periodic_mode() {
    let dir = tempdir("kill9-pipelined");
    let addr = "127.0.0.25";
    let port = free_port(addr);
    let mut acknowledged = 0usize;
    for cycle in 0..4 {
        let mut node = start(addr, &dir, port, &[]);
        // A connection reset seen once in CI left no trace in the node's log: a failure here
        // says whether the node was still running and how its output ends.
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            write_and_check_cycle(&mut node, cycle, &mut acknowledged)
        }));
        if let Err(failure) = run {
            eprintln!("cycle {cycle} failed; {}", node.diagnosis());
            std::panic::resume_unwind(failure);
        }
        node.child.kill().unwrap();
        node.child.wait().unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// One kill -9 cycle's work: everything acknowledged before is there, then 1,000 more
/// pipelined writes are acknowledged.
fn write_and_check_cycle(node: &mut common::Node, cycle: usize, acknowledged: &mut usize) {
    let mut c = Client::connect(node, 4);
    if cycle == 0 {
        c.ok("CREATE KEYSPACE crashp WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
        c.ok("CREATE TABLE crashp.t (k int PRIMARY KEY, v text)");
    }
    let count = c.rows("SELECT count(*) FROM crashp.t");
    let n = i64::from_be_bytes(count[0][0].as_deref().unwrap().try_into().unwrap());
    assert_eq!(
        n, *acknowledged as i64,
        "cycle {cycle}: acknowledged writes lost"
    );
    for _ in 0..5 {
        let inserts: Vec<String> = (*acknowledged..*acknowledged + 200)
            .map(|k| {
                format!(
                    "INSERT INTO crashp.t (k, v) VALUES ({k}, '{}')",
                    "x".repeat(k % 300)
                )
            })
            .collect();
        for (q, r) in inserts.iter().zip(c.pipelined(&inserts)) {
            assert!(matches!(r, proto::Response::Result(_)), "{q}: {r:?}");
        }
        *acknowledged += inserts.len();
    }
}

#[test]
fn malformed_frames_get_protocol_errors_and_the_node_keeps_serving() {
    let dir = tempdir("bad");
    let addr = "127.0.0.23";
    let mut node = start(addr, &dir, free_port(addr), &[]);
    let mut good = Client::connect(&mut node, 4);
    // An unsupported version probe is answered with PROTOCOL_ERROR.
    let mut s = TcpStream::connect((node.addr.as_str(), node.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(&[0x42, 0, 0, 0, 0x05, 0, 0, 0, 0]).unwrap();
    let mut resp = [0u8; 256];
    let n = s.read(&mut resp).unwrap();
    assert!(n > 9 && resp[4] == 0x00, "expected an ERROR frame");
    // Random bytes, an oversized length, a truncated frame.
    for junk in [
        vec![0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05],
        vec![0x04, 0, 0, 1, 0x07, 0x7f, 0xff, 0xff, 0xff],
        vec![0x04, 0, 0, 1, 0x07, 0, 0, 0, 100, 1, 2, 3],
    ] {
        let mut s = TcpStream::connect((node.addr.as_str(), node.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let _ = s.write_all(&junk);
        let _ = s.read(&mut resp);
    }
    let rows = good.rows("SELECT release_version FROM system.local");
    assert_eq!(rows.len(), 1);
    drop(node);
    let _ = std::fs::remove_dir_all(&dir);
}
