//! What the node-level tests share: start the real `helenus` binary on a loopback address of the
//! test's own, and talk CQL to it with the protocol crate's client codec.
// Each test crate uses a different part of this module.
#![allow(dead_code)]

use bytes::{Bytes, BytesMut};
use helenus_protocol as proto;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

const START_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Node {
    pub child: Child,
    pub addr: String,
    pub port: u16,
    /// Where the node's stdout and stderr go, when the test started it with [`start`].
    pub log: Option<PathBuf>,
}

impl Node {
    /// Why a connection to this node may have failed: whether the process is still alive and
    /// the end of its output, so a flaky failure in CI says what the node said.
    pub fn diagnosis(&mut self) -> String {
        let status = match self.child.try_wait() {
            Ok(Some(status)) => format!("node exited: {status}"),
            Ok(None) => "node still running".to_string(),
            Err(e) => format!("node status unknown: {e}"),
        };
        let tail = self
            .log
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map(|text| {
                let lines: Vec<&str> = text.lines().collect();
                lines[lines.len().saturating_sub(30)..].join("\n")
            })
            .unwrap_or_default();
        format!("{status}; its output ends with:\n{tail}")
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Tests run in parallel: each uses its own loopback address, so two nodes never meet even if the
/// OS hands out the same free port twice.
pub fn free_port(addr: &str) -> u16 {
    std::net::TcpListener::bind((addr, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A free port on `addr` other than `taken` (the OS may hand out the same free port twice).
pub fn free_port_besides(addr: &str, taken: u16) -> u16 {
    loop {
        let p = free_port(addr);
        if p != taken {
            return p;
        }
    }
}

/// `helenus server` arguments for a node at `addr:port` keeping its data in `dir`, with each of
/// `settings` passed as `--set NAME=VALUE`.
pub fn server_args(addr: &str, dir: &Path, port: u16, settings: &[&str]) -> Vec<String> {
    // The OS may hand out the CQL port again: the admin API would then take it first.
    let admin_port = free_port_besides(addr, port);
    let mut args = vec![
        "server".to_string(),
        "--listen-address".into(),
        addr.into(),
        "--native-transport-port".into(),
        port.to_string(),
        "--data-dir".into(),
        dir.display().to_string(),
        "--set".into(),
        format!("api_port={admin_port}"),
    ];
    for s in settings {
        args.push("--set".into());
        args.push(s.to_string());
    }
    args
}

/// Waits until `child` serves CQL at `addr:port`; panics if it exits or takes too long.
pub fn serving(mut child: Child, addr: &str, port: u16) -> Node {
    let deadline = Instant::now() + START_TIMEOUT;
    while Instant::now() < deadline {
        if TcpStream::connect((addr, port)).is_ok() {
            return Node {
                child,
                addr: addr.to_string(),
                port,
                log: None,
            };
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("node exited at start: {status}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("node did not start");
}

pub fn start(addr: &str, dir: &Path, port: u16, settings: &[&str]) -> Node {
    std::fs::create_dir_all(dir).expect("node directory");
    let log_path = dir.join("node.log");
    let log = std::fs::File::create(&log_path).expect("node log");
    let child = Command::new(env!("CARGO_BIN_EXE_helenus"))
        .args(server_args(addr, dir, port, settings))
        .stdout(log.try_clone().expect("node log"))
        .stderr(log)
        .spawn()
        .expect("spawn helenus");
    let mut node = serving(child, addr, port);
    node.log = Some(log_path);
    node
}

/// A connection to `addr:port`, tried for a few seconds: on a loaded machine a node that accepted
/// one connection has refused the next (CI, stop 37), and one failure should not end a test.
fn connect_retrying(addr: &str, port: u16) -> std::io::Result<TcpStream> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match TcpStream::connect((addr, port)) {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

pub struct Client {
    s: TcpStream,
    codec: proto::ClientConnectionCodec,
    buf: BytesMut,
    version: u8,
}

impl Client {
    pub fn connect(node: &mut Node, version: u8) -> Client {
        match connect_retrying(&node.addr, node.port) {
            Ok(s) => Client::handshake(s, version, &[]),
            Err(e) => {
                let diagnosis = node.diagnosis();
                panic!(
                    "cannot connect to {}:{}: {e}; {diagnosis}",
                    node.addr, node.port
                )
            }
        }
    }

    pub fn connect_to(addr: &str, port: u16, version: u8) -> Client {
        Client::connect_with(addr, port, version, &[])
    }

    /// Connects with extra STARTUP options (e.g. `THROW_ON_OVERLOAD`).
    pub fn connect_with(addr: &str, port: u16, version: u8, startup: &[(&str, &str)]) -> Client {
        let s = connect_retrying(addr, port)
            .unwrap_or_else(|e| panic!("cannot connect to {addr}:{port}: {e}"));
        Client::handshake(s, version, startup)
    }

    fn handshake(s: TcpStream, version: u8, startup: &[(&str, &str)]) -> Client {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut c = Client {
            s,
            codec: proto::ClientConnectionCodec::new(64 << 20),
            buf: BytesMut::new(),
            version,
        };
        let mut opts = proto::StringMap::new();
        opts.insert("CQL_VERSION".into(), "3.0.0".into());
        for (k, v) in startup {
            opts.insert(k.to_string(), v.to_string());
        }
        let r = c.call(proto::Request::Startup(opts));
        assert!(matches!(r, proto::Response::Ready), "{r:?}");
        if version >= 5 {
            c.codec.enable_segments();
        }
        c
    }

    pub fn call(&mut self, req: proto::Request) -> proto::Response {
        let mut out = BytesMut::new();
        self.codec
            .encode(&proto::RequestFrame::new(self.version, 1, req), &mut out)
            .unwrap();
        self.s.write_all(&out).unwrap();
        self.next_frame().response
    }

    /// The next response frame, reading from the socket until a whole one is buffered.
    fn next_frame(&mut self) -> proto::ResponseFrame {
        loop {
            if let Some(f) = self.codec.decode(&mut self.buf).unwrap() {
                return f;
            }
            let mut chunk = [0u8; 65536];
            let n = self.s.read(&mut chunk).unwrap();
            assert!(n > 0, "connection closed");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Sends all `queries` with one write (stream ids 1..), as a driver with many requests in
    /// flight does, and returns their responses in stream order.
    pub fn pipelined(&mut self, queries: &[String]) -> Vec<proto::Response> {
        let mut out = BytesMut::new();
        for (i, q) in queries.iter().enumerate() {
            let req = proto::Request::Query {
                query: q.clone(),
                params: proto::QueryParameters::default(),
            };
            let stream = i16::try_from(i + 1).unwrap();
            self.codec
                .encode(
                    &proto::RequestFrame::new(self.version, stream, req),
                    &mut out,
                )
                .unwrap();
        }
        self.s.write_all(&out).unwrap();
        let mut answers: Vec<Option<proto::Response>> = queries.iter().map(|_| None).collect();
        for _ in 0..queries.len() {
            let f = self.next_frame();
            let slot = usize::try_from(f.stream - 1).unwrap();
            answers[slot] = Some(f.response);
        }
        answers.into_iter().map(Option::unwrap).collect()
    }

    pub fn query(&mut self, q: &str) -> proto::Response {
        self.call(proto::Request::Query {
            query: q.to_string(),
            params: proto::QueryParameters::default(),
        })
    }

    pub fn ok(&mut self, q: &str) {
        let r = self.query(q);
        assert!(matches!(r, proto::Response::Result(_)), "{q}: {r:?}");
    }

    pub fn rows(&mut self, q: &str) -> Vec<Vec<Option<Bytes>>> {
        match self.query(q) {
            proto::Response::Result(proto::ResultBody::Rows(r)) => r.rows,
            other => panic!("{q}: {other:?}"),
        }
    }
}

/// A fresh directory `helenus-<prefix>-<name>-<pid>` under the system temp dir.
pub fn tempdir(prefix: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("helenus-{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
