//! Reads on three replicas over the simulated network, with a register model: data is
//! `timestamp:value`, the newest timestamp wins.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use helenus_cluster::locator::NodeId;
use helenus_cluster::messaging::{Messenger, SimulatedNetwork, Verb};
use uuid::Uuid;

use super::*;
use crate::write::{serve_mutation, ApplyFuture};

fn node(n: u128) -> NodeId {
    NodeId(Uuid::from_u128(n))
}

#[derive(Default)]
struct Register {
    cell: Mutex<(u64, String)>,
    repairs: AtomicUsize,
}

impl Register {
    fn holding(ts: u64, value: &str) -> Arc<Register> {
        Arc::new(Register {
            cell: Mutex::new((ts, value.into())),
            repairs: AtomicUsize::new(0),
        })
    }

    fn get(&self) -> String {
        let c = self.cell.lock().unwrap();
        format!("{}:{}", c.0, c.1)
    }
}

fn parse(b: &Bytes) -> (u64, String) {
    let s = String::from_utf8_lossy(b);
    let (ts, v) = s.split_once(':').unwrap_or(("0", ""));
    (ts.parse().unwrap_or(0), v.to_string())
}

impl LocalReader for Register {
    fn read(&self, _: &Bytes) -> Result<Bytes, crate::read::ReadFailureReason> {
        Ok(Bytes::from(self.get()))
    }
}

impl LocalWriter for Register {
    fn apply<'a>(&'a self, mutation: &'a Bytes) -> ApplyFuture<'a> {
        self.repairs.fetch_add(1, Ordering::Relaxed);
        let (ts, v) = parse(mutation);
        let mut c = self.cell.lock().unwrap();
        if ts > c.0 {
            *c = (ts, v);
        }
        Box::pin(async { Ok(()) })
    }
}

struct Newest;

impl ReadResolver for Newest {
    fn digest(&self, data: &Bytes) -> Bytes {
        Bytes::copy_from_slice(&crc32c::crc32c(data).to_be_bytes())
    }
    fn merge(&self, answers: &[Bytes]) -> Bytes {
        answers
            .iter()
            .max_by_key(|a| parse(a).0)
            .cloned()
            .unwrap_or_default()
    }
    fn repair(&self, theirs: &Bytes, merged: &Bytes) -> Option<Bytes> {
        (theirs != merged).then(|| merged.clone())
    }
}

/// Node 1 coordinates (with its own register); nodes 2 and 3 serve reads and repairs unless silent.
fn cluster(registers: [Arc<Register>; 3], silent: &[u128]) -> Messenger {
    let net = SimulatedNetwork::new(1);
    let mut coordinator = None;
    for (i, register) in registers.into_iter().enumerate() {
        let id = node(i as u128 + 1);
        let (t, mut inbox) = net.join(id, 64);
        let messenger = Messenger::new(Arc::new(t));
        if i == 0 {
            coordinator = Some(messenger.clone());
        }
        let silent = silent.contains(&(i as u128 + 1));
        tokio::spawn(async move {
            while let Some(e) = inbox.recv().await {
                if e.is_response() {
                    messenger.complete(e);
                } else if silent {
                    continue;
                } else if e.verb == Verb::ReadRequest {
                    serve_read(&e, register.as_ref(), &Newest, &messenger);
                } else if e.verb == Verb::MutationRequest {
                    serve_mutation(&e, register.as_ref(), &messenger).await;
                }
            }
        });
    }
    coordinator.unwrap()
}

fn plan(contacts: &[u128], spare: &[u128], block_for: usize) -> ReadPlan {
    ReadPlan {
        consistency: ConsistencyLevel::Quorum,
        contacts: contacts.iter().map(|n| node(*n)).collect(),
        spare: spare.iter().map(|n| node(*n)).collect(),
        block_for,
    }
}

const OPTIONS: ReadOptions = ReadOptions {
    timeout: Duration::from_millis(400),
    speculate_after: None,
    answer_times: None,
};

#[tokio::test]
async fn a_stale_replica_is_repaired_before_the_quorum_read_answers() {
    let regs = [
        Register::holding(2, "b"),
        Register::holding(1, "a"),
        Register::holding(2, "b"),
    ];
    let local = regs[0].clone();
    let stale = regs[1].clone();
    let m = cluster(regs, &[]);
    let answer = read(
        &plan(&[2, 1], &[3], 2),
        Bytes::new(),
        &m,
        local.as_ref(),
        local.as_ref(),
        &Newest,
        OPTIONS,
    )
    .await
    .unwrap();
    assert_eq!(
        answer,
        Bytes::from("2:b"),
        "the newest value, though the data came from the stale replica"
    );
    assert_eq!(stale.get(), "2:b", "repaired before the answer");
    assert_eq!(
        local.repairs.load(Ordering::Relaxed),
        0,
        "the up-to-date replica is left alone"
    );
}

#[tokio::test]
async fn matching_digests_answer_without_repair() {
    let regs = [
        Register::holding(5, "x"),
        Register::holding(5, "x"),
        Register::holding(1, "old"),
    ];
    let local = regs[0].clone();
    let other = regs[1].clone();
    let m = cluster(regs, &[]);
    let answer = read(
        &plan(&[2, 1], &[3], 2),
        Bytes::new(),
        &m,
        local.as_ref(),
        local.as_ref(),
        &Newest,
        OPTIONS,
    )
    .await
    .unwrap();
    assert_eq!(answer, Bytes::from("5:x"));
    assert_eq!(
        other.repairs.load(Ordering::Relaxed) + local.repairs.load(Ordering::Relaxed),
        0
    );
}

#[tokio::test]
async fn a_slow_replica_is_covered_by_a_speculative_request_to_a_spare() {
    let regs = [
        Register::holding(3, "c"),
        Register::holding(3, "c"),
        Register::holding(3, "c"),
    ];
    let local = regs[0].clone();
    let m = cluster(regs, &[2]);
    let options = ReadOptions {
        timeout: Duration::from_millis(2000),
        speculate_after: Some(Duration::from_millis(20)),
        answer_times: None,
    };
    let started = tokio::time::Instant::now();
    let answer = read(
        &plan(&[2, 1], &[3], 2),
        Bytes::new(),
        &m,
        local.as_ref(),
        local.as_ref(),
        &Newest,
        options,
    )
    .await
    .unwrap();
    assert_eq!(answer, Bytes::from("3:c"));
    assert!(
        started.elapsed() < Duration::from_millis(1000),
        "did not wait for the timeout"
    );
}

#[tokio::test]
async fn a_silent_replica_without_spares_times_out_with_the_protocols_counts() {
    let regs = [
        Register::holding(1, "a"),
        Register::holding(1, "a"),
        Register::holding(1, "a"),
    ];
    let local = regs[0].clone();
    let m = cluster(regs, &[2]);
    let err = read(
        &plan(&[1, 2], &[], 2),
        Bytes::new(),
        &m,
        local.as_ref(),
        local.as_ref(),
        &Newest,
        OPTIONS,
    )
    .await
    .unwrap_err();
    assert_eq!(
        err,
        ReadError::Timeout {
            consistency: ConsistencyLevel::Quorum,
            received: 1,
            block_for: 2,
            data_present: true
        }
    );
}
