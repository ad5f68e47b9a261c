//! THROW_ON_OVERLOAD (issue 11): with the node-wide request rate limited, a connection that
//! asked for it in STARTUP gets OVERLOADED errors with Cassandra's message when it goes over the
//! rate, while a connection that did not is slowed down and every request answered.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{start, tempdir, Client};
use helenus_protocol as proto;
use std::time::Instant;

#[test]
fn over_the_rate_a_throw_on_overload_client_is_refused_and_others_are_slowed() {
    let addr = "127.0.0.24";
    let dir = tempdir("overload", "rate");
    let port = common::free_port(addr);
    let mut node = start(
        addr,
        &dir,
        port,
        &[
            "native_transport_rate_limiting_enabled=true",
            "native_transport_max_requests_per_second=10",
        ],
    );
    let mut throwing = Client::connect_with(addr, port, 5, &[("THROW_ON_OVERLOAD", "1")]);
    let mut refused = 0;
    let mut answered = 0;
    for _ in 0..40 {
        match throwing.query("SELECT release_version FROM system.local") {
            proto::Response::Result(_) => answered += 1,
            proto::Response::Error(e) => {
                assert_eq!(e.code, proto::ErrorCode::OVERLOADED, "{e:?}");
                assert_eq!(
                    e.message,
                    "Request breached global limit of 10 requests/second. Server is currently in an overloaded state and cannot accept more requests."
                );
                refused += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(
        refused > 0,
        "40 requests at once over a rate of 10/s: some are refused"
    );
    assert!(answered > 0, "the bucket's first requests go through");

    let mut patient = Client::connect(&mut node, 5);
    let started = Instant::now();
    for _ in 0..15 {
        assert!(matches!(
            patient.query("SELECT release_version FROM system.local"),
            proto::Response::Result(_)
        ));
    }
    assert!(
        started.elapsed().as_millis() >= 400,
        "slowed to the rate, not refused ({:?})",
        started.elapsed()
    );
    drop(node);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A QUERY for nothing whose frame is about `bytes` long (a long string literal).
fn big_query(bytes: usize) -> String {
    format!(
        "SELECT release_version FROM system.local WHERE key = '{}'",
        "x".repeat(bytes)
    )
}

/// A v4 connection past STARTUP that has sent all but the last `held_back` bytes of a
/// `frame_bytes` QUERY: the node holds what arrived against its bytes-in-flight budget.
fn half_sent_query(
    addr: &str,
    port: u16,
    frame_bytes: usize,
    held_back: usize,
) -> (std::net::TcpStream, Vec<u8>) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect((addr, port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut codec = proto::ClientConnectionCodec::new(64 << 20);
    let mut out = bytes::BytesMut::new();
    let mut opts = proto::StringMap::new();
    opts.insert("CQL_VERSION".into(), "3.0.0".into());
    codec
        .encode(
            &proto::RequestFrame::new(4, 0, proto::Request::Startup(opts)),
            &mut out,
        )
        .unwrap();
    s.write_all(&out).unwrap();
    let mut ready = [0u8; 9];
    s.read_exact(&mut ready).unwrap();
    assert_eq!(ready[4], 0x02, "READY");
    let mut frame = bytes::BytesMut::new();
    let query = proto::Request::Query {
        query: big_query(frame_bytes),
        params: proto::QueryParameters::default(),
    };
    codec
        .encode(&proto::RequestFrame::new(4, 7, query), &mut frame)
        .unwrap();
    let rest = frame.split_off(frame.len() - held_back);
    s.write_all(&frame).unwrap();
    (s, rest.to_vec())
}

#[test]
fn over_the_bytes_in_flight_a_throw_on_overload_client_is_refused_and_others_wait() {
    let addr = "127.0.0.73";
    let dir = tempdir("overload", "bytes");
    let port = common::free_port(addr);
    let node = start(
        addr,
        &dir,
        port,
        &["native_transport_max_request_data_in_flight=1MiB"],
    );
    // 900 KiB of a 1 MiB budget held by a frame still arriving.
    let (mut holder, rest) = half_sent_query(addr, port, 950 * 1024, 50 * 1024);
    std::thread::sleep(std::time::Duration::from_millis(300));

    for version in [4, 5] {
        let mut throwing = Client::connect_with(addr, port, version, &[("THROW_ON_OVERLOAD", "1")]);
        let started = Instant::now();
        match throwing.query(&big_query(300 * 1024)) {
            proto::Response::Error(e) => {
                assert_eq!(e.code, proto::ErrorCode::OVERLOADED, "{e:?}");
                assert!(
                    e.message.starts_with("Request breached limit on bytes in flight. (Endpoint: ")
                        && e.message.contains("/1048576 bytes, Global: ")
                        && e.message.ends_with(" bytes.)Server is currently in an overloaded state and cannot accept more requests."),
                    "{}",
                    e.message
                );
            }
            other => panic!("v{version}: a throwing client over the budget is refused: {other:?}"),
        }
        assert!(started.elapsed().as_secs() < 5, "refused at once");
        // The refused frame was dropped whole: the connection goes on.
        throwing.ok("SELECT release_version FROM system.local");
    }

    // A patient client waits for the budget instead, and is served once it frees.
    let patient = std::thread::spawn(move || {
        let mut patient = Client::connect_to(addr, port, 5);
        matches!(
            patient.query(&big_query(300 * 1024)),
            proto::Response::Result(_)
        )
    });
    std::thread::sleep(std::time::Duration::from_millis(700));
    assert!(
        !patient.is_finished(),
        "the patient client waits while the budget is spent"
    );
    {
        use std::io::Write;
        holder.write_all(&rest).unwrap();
    }
    assert!(patient.join().unwrap(), "the patient client is served");
    drop(holder);
    drop(node);
    let _ = std::fs::remove_dir_all(&dir);
}

/// CPU seconds (user and system) process `pid` has used so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and
    // 13th, in clock ticks (100 a second on Linux).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

#[test]
fn a_read_past_its_timeout_stops_its_cpu_work() {
    let addr = "127.0.0.75";
    let dir = tempdir("overload", "cancel");
    let port = common::free_port(addr);
    let mut node = start(
        addr,
        &dir,
        port,
        // Short: a filtering scan of a memtable partition runs at millions of rows a second.
        &["read_request_timeout=10ms", "range_request_timeout=10ms"],
    );
    let mut c = Client::connect(&mut node, 4);
    c.ok(
        "CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    );
    c.ok("CREATE TABLE k.w (pk int, ck int, v int, PRIMARY KEY (pk, ck))");
    // 400k rows in one partition, 10k a statement: filtering them takes far over 10 ms.
    for i in 0..40 {
        let cks: Vec<String> = (i * 10_000..(i + 1) * 10_000)
            .map(|j| j.to_string())
            .collect();
        c.ok(&format!(
            "UPDATE k.w SET v = {i} WHERE pk = 0 AND ck IN ({})",
            cks.join(", ")
        ));
    }
    let pid = node.child.id();
    let started = Instant::now();
    match c.query("SELECT count(*) FROM k.w WHERE v = -1 ALLOW FILTERING") {
        proto::Response::Error(e) => assert_eq!(e.code, proto::ErrorCode::READ_TIMEOUT, "{e:?}"),
        other => panic!("a scan of 400k rows under a 10 ms timeout times out: {other:?}"),
    }
    assert!(
        started.elapsed().as_secs_f64() < 2.0,
        "{:?}",
        started.elapsed()
    );
    // Answered; within about a second the work behind it has stopped too.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let before = cpu_seconds(pid);
    std::thread::sleep(std::time::Duration::from_secs(1));
    let busy = cpu_seconds(pid) - before;
    assert!(
        busy < 0.3,
        "the node burned {busy:.2} s of CPU in the second after the timeout"
    );
    c.ok("SELECT release_version FROM system.local");
    drop(node);
    let _ = std::fs::remove_dir_all(&dir);
}
