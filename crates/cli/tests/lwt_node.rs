//! Lightweight transactions against the real binary: concurrent compare-and-set on one partition
//! must be linearizable (no lost update), and conditional batches must stay in one partition.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

use helenus_protocol as proto;

/// Its own loopback address, so it never meets the nodes of other tests run in parallel.
const ADDR: &str = "127.0.0.31";

mod common;
use common::{free_port, start, Client, Node};

fn start_node(dir: &std::path::Path) -> Node {
    start(ADDR, dir, free_port(ADDR), &[])
}

fn int(cell: &Option<bytes::Bytes>) -> i32 {
    i32::from_be_bytes(cell.as_deref().unwrap().try_into().unwrap())
}

#[test]
fn concurrent_compare_and_set_loses_no_update() {
    let dir = std::env::temp_dir().join(format!("helenus-it-lwt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut node = start_node(&dir);
    let mut c = Client::connect(&mut node, 4);
    c.ok("CREATE KEYSPACE lwt WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    c.ok("CREATE TABLE lwt.t (k int, c int, v int, PRIMARY KEY (k, c))");
    c.ok("INSERT INTO lwt.t (k, c, v) VALUES (1, 1, 0)");
    let (threads, each) = (4, 25);
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let port = node.port;
            std::thread::spawn(move || {
                let mut c = Client::connect_to(ADDR, port, 4);
                let mut done = 0;
                let mut seen = c.rows("SELECT v FROM lwt.t WHERE k = 1 AND c = 1");
                while done < each {
                    let v = int(&seen[0][0]);
                    let r = c.rows(&format!(
                        "UPDATE lwt.t SET v = {} WHERE k = 1 AND c = 1 IF v = {v}",
                        v + 1
                    ));
                    if r[0][0].as_deref() == Some(&[1u8][..]) {
                        done += 1;
                        seen = vec![vec![Some(bytes::Bytes::from(
                            (v + 1).to_be_bytes().to_vec(),
                        ))]];
                    } else {
                        // A failed condition returns the current value of the conditioned column.
                        seen = vec![vec![r[0][1].clone()]];
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let v = c.rows("SELECT v FROM lwt.t WHERE k = 1 AND c = 1");
    assert_eq!(int(&v[0][0]), threads * each);

    // A conditional batch is all or nothing, and limited to one partition.
    let r = c.rows("BEGIN BATCH UPDATE lwt.t SET v = 0 WHERE k = 1 AND c = 1 IF v = 0; INSERT INTO lwt.t (k, c, v) VALUES (1, 2, 2); APPLY BATCH");
    assert_eq!(r[0][0].as_deref(), Some(&[0u8][..]));
    assert!(c
        .rows("SELECT * FROM lwt.t WHERE k = 1 AND c = 2")
        .is_empty());
    match c.query("BEGIN BATCH UPDATE lwt.t SET v = 0 WHERE k = 1 AND c = 1 IF v = 100; INSERT INTO lwt.t (k, c, v) VALUES (2, 2, 2); APPLY BATCH") {
        proto::Response::Error(e) => assert_eq!(e.code, proto::ErrorCode::INVALID),
        other => panic!("{other:?}"),
    }
    drop(node);
    let _ = std::fs::remove_dir_all(&dir);
}
