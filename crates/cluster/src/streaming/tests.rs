#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use super::*;
use std::net::IpAddr;
use std::sync::Arc;

fn peer(last: u8) -> IpAddr {
    IpAddr::from([127, 0, 0, last])
}

#[tokio::test]
async fn a_finished_plan_leaves_netstats_and_a_dropped_one_is_reported_failed() {
    let manager = Arc::new(StreamManager::new(0, 0));
    let plan = manager.start_plan(StreamOperation::Bootstrap);
    plan.expect(peer(2), Direction::Receiving, 3);
    plan.file_started(peer(2), Direction::Receiving, "ks.t (0,10]".into());
    plan.transferred(peer(2), Direction::Receiving, 500);
    plan.file_done(peer(2), Direction::Receiving);
    let shown = manager.snapshot();
    assert_eq!(shown.len(), 1);
    let session = &shown[0].sessions[0];
    assert_eq!(
        session.receiving,
        Some(StreamSummary {
            files_total: 3,
            files_done: 1,
            bytes_done: 500
        })
    );
    assert_eq!(session.receiving.unwrap().bytes_total_estimate(), 1500);
    plan.finish();
    assert!(manager.snapshot().is_empty());

    // A plan whose driver gave up without finishing is never shown as complete.
    let plan = manager.start_plan(StreamOperation::Unbootstrap);
    plan.expect(peer(3), Direction::Sending, 2);
    drop(plan);
    let shown = manager.snapshot();
    assert_eq!(shown.len(), 1);
    assert!(shown[0].failure.is_some());
    let plan = manager.start_plan(StreamOperation::Repair);
    assert_eq!(
        manager.snapshot().len(),
        1,
        "a plan without sessions is not shown"
    );
    plan.expect(peer(3), Direction::Sending, 1);
    plan.fail("peer died");
    assert_eq!(manager.snapshot()[1].failure.as_deref(), Some("peer died"));
}

#[tokio::test]
async fn a_source_shows_the_plan_it_serves_until_every_file_is_read() {
    let manager = Arc::new(StreamManager::new(0, 0));
    let mut tag = StreamTag {
        plan_id: uuid::Uuid::from_u128(7),
        operation: StreamOperation::Bootstrap,
        files_total: 2,
        file_index: 0,
    };
    let mut encoded = Vec::new();
    tag.encode(&mut encoded);
    assert_eq!(encoded.len(), StreamTag::ENCODED_LEN);
    assert_eq!(StreamTag::decode(&encoded), Some(tag));
    assert_eq!(StreamTag::decode(&encoded[1..]), None);

    manager.served(&tag, peer(4), 1000);
    manager.served(&tag, peer(4), 0); // the empty page ends file 0
    tag.file_index = 1;
    manager.served(&tag, peer(4), 300);
    let shown = manager.snapshot();
    assert_eq!(shown[0].operation, StreamOperation::Bootstrap);
    assert_eq!(
        shown[0].sessions[0].sending,
        Some(StreamSummary {
            files_total: 2,
            files_done: 1,
            bytes_done: 1300
        })
    );
    manager.served(&tag, peer(4), 0);
    assert!(manager.snapshot().is_empty());
}

#[tokio::test]
async fn a_source_counts_the_files_of_a_requester_that_does_not() {
    let manager = Arc::new(StreamManager::new(0, 0));
    let tag = StreamTag {
        plan_id: uuid::Uuid::from_u128(8),
        operation: StreamOperation::Repair,
        files_total: 0,
        file_index: 0,
    };
    manager.served(&tag, peer(5), 700);
    manager.served(&tag, peer(5), 0);
    manager.served(&tag, peer(5), 200);
    let shown = manager.snapshot();
    assert_eq!(
        shown[0].sessions[0].sending,
        Some(StreamSummary {
            files_total: 2,
            files_done: 1,
            bytes_done: 900
        })
    );
}
