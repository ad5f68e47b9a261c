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
    let node = start(
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

    let mut patient = Client::connect(&node, 5);
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
