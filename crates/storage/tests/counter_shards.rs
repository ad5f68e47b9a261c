//! Counters in a ring: one shard per leader (the cell path), resolved by the leader, replayed
//! anywhere without changing the count, and read as the sum of the shards.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use bytes::Bytes;
use common::*;
use helenus_storage::*;

fn shard(n: u8) -> Bytes {
    Bytes::from(vec![n; 16])
}

fn total(e: &Engine) -> Option<i64> {
    let r = e.read(COUNTERS, &point(b"c", now())).unwrap();
    let cells = &r.partitions.first()?.rows.first()?.cells;
    assert_eq!(
        cells.len(),
        1,
        "one counter value, whatever the shards: {cells:?}"
    );
    Some(i64::from_be_bytes(
        cells[0].value.as_ref().try_into().unwrap(),
    ))
}

fn lead(e: &Engine, path: Bytes, ts: i64, delta: i64) -> Mutation {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut out = rt
        .block_on(e.apply_as_counter_leader(vec![counter_cell(
            Some(path),
            ts,
            CellOp::CounterAdd(delta),
        )]))
        .unwrap();
    out.pop().unwrap()
}

#[test]
fn a_leader_resolves_increments_to_its_shard_state() {
    let dir = tempdir("counter-leader");
    let e = open(&dir, 864000);
    let first = lead(&e, shard(1), 10, 5);
    assert_eq!(
        first.rows[0].cells[0].op,
        CellOp::CounterState { clock: 1, total: 5 }
    );
    let second = lead(&e, shard(1), 11, 2);
    assert_eq!(
        second.rows[0].cells[0].op,
        CellOp::CounterState { clock: 2, total: 7 }
    );
    assert_eq!(second.rows[0].cells[0].path, Some(shard(1)));
    assert_eq!(total(&e), Some(7));
}

#[test]
fn replicas_sum_shards_and_replays_change_nothing() {
    let dir = tempdir("counter-replica");
    let leader_a = open(&tempdir("counter-leader-a"), 864000);
    let leader_b = open(&tempdir("counter-leader-b"), 864000);
    let a1 = lead(&leader_a, shard(1), 10, 5);
    let a2 = lead(&leader_a, shard(1), 11, 1);
    let b1 = lead(&leader_b, shard(2), 12, 100);
    let replica = open(&dir, 864000);
    // Out of order, twice over (a queued message and its hint), across a flush and a restart.
    replica.apply_blocking(&[a2.clone(), b1.clone()]).unwrap();
    replica.apply_blocking(std::slice::from_ref(&a1)).unwrap();
    assert_eq!(total(&replica), Some(106));
    replica.flush(None).unwrap();
    replica
        .apply_blocking(&[a1.clone(), a2.clone(), b1.clone()])
        .unwrap();
    assert_eq!(total(&replica), Some(106));
    replica.shutdown().unwrap();
    let replica = open(&dir, 864000);
    assert_eq!(total(&replica), Some(106));
    replica.apply_blocking(&[a2, b1]).unwrap();
    assert_eq!(total(&replica), Some(106));
}

#[test]
fn a_counter_tombstone_beats_every_shard() {
    let dir = tempdir("counter-tombstone");
    let e = open(&dir, 864000);
    lead(&e, shard(1), 10, 5);
    lead(&e, shard(2), 10, 6);
    assert_eq!(total(&e), Some(11));
    e.apply_blocking(&[counter_cell(None, 5, CellOp::Delete)])
        .unwrap();
    assert_eq!(total(&e), None);
    // As on one node: increments after the deletion do not bring the counter back.
    lead(&e, shard(1), 20, 1);
    assert_eq!(total(&e), None);
}
