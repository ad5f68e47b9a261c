//! Lightweight transactions against the real binary: concurrent compare-and-set on one partition
//! must be linearizable (no lost update), and conditional batches must stay in one partition.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

use bytes::BytesMut;
use helenus_protocol as proto;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Its own loopback address, so it never meets the nodes of other tests run in parallel.
const ADDR: &str = "127.0.0.31";

struct Node {
    child: Child,
    port: u16,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind((ADDR, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start(dir: &std::path::Path) -> Node {
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_helenus"))
        .args([
            "server".to_string(),
            "--listen-address".into(),
            ADDR.into(),
            "--native-transport-port".into(),
            port.to_string(),
            "--data-dir".into(),
            dir.display().to_string(),
            "--set".into(),
            format!("api_port={}", free_port()),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn helenus");
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if TcpStream::connect((ADDR, port)).is_ok() {
            return Node { child, port };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("node did not start");
}

struct Client {
    s: TcpStream,
    codec: proto::ClientConnectionCodec,
    buf: BytesMut,
}

impl Client {
    fn connect(port: u16) -> Client {
        let s = TcpStream::connect((ADDR, port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut c = Client {
            s,
            codec: proto::ClientConnectionCodec::new(64 << 20),
            buf: BytesMut::new(),
        };
        let mut opts = proto::StringMap::new();
        opts.insert("CQL_VERSION".into(), "3.0.0".into());
        let r = c.call(proto::Request::Startup(opts));
        assert!(matches!(r, proto::Response::Ready), "{r:?}");
        c
    }

    fn call(&mut self, req: proto::Request) -> proto::Response {
        let mut out = BytesMut::new();
        self.codec
            .encode(&proto::RequestFrame::new(4, 1, req), &mut out)
            .unwrap();
        self.s.write_all(&out).unwrap();
        loop {
            if let Some(f) = self.codec.decode(&mut self.buf).unwrap() {
                return f.response;
            }
            let mut chunk = [0u8; 65536];
            let n = self.s.read(&mut chunk).unwrap();
            assert!(n > 0, "connection closed");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn query(&mut self, q: &str) -> proto::Response {
        self.call(proto::Request::Query {
            query: q.to_string(),
            params: proto::QueryParameters::default(),
        })
    }

    fn rows(&mut self, q: &str) -> Vec<Vec<Option<bytes::Bytes>>> {
        match self.query(q) {
            proto::Response::Result(proto::ResultBody::Rows(r)) => r.rows,
            proto::Response::Result(_) => Vec::new(),
            other => panic!("{q}: {other:?}"),
        }
    }
}

fn int(cell: &Option<bytes::Bytes>) -> i32 {
    i32::from_be_bytes(cell.as_deref().unwrap().try_into().unwrap())
}

#[test]
fn concurrent_compare_and_set_loses_no_update() {
    let dir = std::env::temp_dir().join(format!("helenus-it-lwt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let node = start(&dir);
    let mut c = Client::connect(node.port);
    c.rows("CREATE KEYSPACE lwt WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    c.rows("CREATE TABLE lwt.t (k int, c int, v int, PRIMARY KEY (k, c))");
    c.rows("INSERT INTO lwt.t (k, c, v) VALUES (1, 1, 0)");
    let (threads, each) = (4, 25);
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let port = node.port;
            std::thread::spawn(move || {
                let mut c = Client::connect(port);
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
