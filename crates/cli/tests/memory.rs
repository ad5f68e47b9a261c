//! A node's memory after its writes, in a test binary of its own: its load (150k inserts and a
//! 150 MiB flush) would otherwise run beside node.rs's timing-sensitive kill -9 tests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

use helenus_protocol as proto;
use std::time::Duration;

mod common;
use common::{free_port, start, Client};

fn tempdir(name: &str) -> std::path::PathBuf {
    common::tempdir("mem", name)
}

/// Resident anonymous memory of process `pid`, in MiB (`RssAnon` of /proc/PID/status).
fn rss_anon_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kib / 1024
}

/// A flushed memtable's memory goes back to the kernel: a node idle after its writes holds its
/// caches and structures, not the memtables it flushed. (In this shape, one connection, it does
/// so without the purger of crates/cli's allocator.rs too; the purger's case, 64 connections of
/// helenus-stress, is measured in bench/results/ab-20261202-021933-75f97d6.md, not here.)
#[test]
fn freed_memory_goes_back_to_the_kernel_once_unused() {
    let dir = tempdir("purge");
    let addr = "127.0.0.26";
    let port = free_port(addr);
    // An admin port of the test's choosing, for nodetool (a later --set wins).
    let api_port = common::free_port_besides(addr, port);
    let mut node = start(addr, &dir, port, &[&format!("api_port={api_port}")]);
    let pid = node.child.id();
    let mut c = Client::connect(&mut node, 4);
    c.ok("CREATE KEYSPACE purge WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    c.ok("CREATE TABLE purge.t (k int PRIMARY KEY, a text, b text, c text)");
    // cassandra-stress-like rows, ~150 MiB of memtable, under the budget's flush threshold.
    for first in (0..150_000).step_by(500) {
        let inserts: Vec<String> = (first..first + 500)
            .map(|k| format!("INSERT INTO purge.t (k, a, b, c) VALUES ({k}, 'a{k:033}', 'b{k:033}', 'c{k:033}')"))
            .collect();
        for (q, r) in inserts.iter().zip(c.pipelined(&inserts)) {
            assert!(matches!(r, proto::Response::Result(_)), "{q}: {r:?}");
        }
    }
    let loaded = rss_anon_mib(pid);
    assert!(loaded >= 120, "only {loaded} MiB resident after the load");
    let flushed = std::process::Command::new(env!("CARGO_BIN_EXE_helenus"))
        .args([
            "nodetool",
            "-h",
            addr,
            "-p",
            &api_port.to_string(),
            "flush",
            "purge",
        ])
        .status()
        .unwrap();
    assert!(flushed.success(), "nodetool flush: {flushed}");
    // The purge delay is 10 s, checked once a second.
    let deadline = std::time::Instant::now() + Duration::from_secs(40);
    loop {
        let now = rss_anon_mib(pid);
        if now * 2 <= loaded {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{now} MiB still resident 40 s after the memtable was flushed ({loaded} MiB loaded)"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    drop(c);
    drop(node);
    let _ = std::fs::remove_dir_all(&dir);
}
