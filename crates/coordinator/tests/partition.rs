//! A network partition between replicas (issue 12), on the in-memory transport: three replicas
//! of every key, each node a coordinator, QUORUM writes and reads from all three while node 3 is
//! cut off from nodes 1 and 2, with message delays. Checked: every acknowledged write is seen by
//! every later QUORUM read (during the partition on the majority side, and through every
//! coordinator after the heal, including the one that was cut off and holds stale data), the
//! minority side acknowledges nothing, and read repair brings node 3 up to date.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use helenus_cluster::locator::NodeId;
use helenus_cluster::messaging::{Messenger, SimulatedNetwork, Verb};
use helenus_coordinator::read::{
    read, serve_read, LocalReader, ReadError, ReadFailureReason, ReadOptions, ReadResolver,
};
use helenus_coordinator::write::serve_mutation;
use helenus_coordinator::{
    write, ApplyFuture, ConsistencyLevel, HintSink, LocalWriter, ReadPlan, WriteError, WritePlan,
    WriteType,
};
use uuid::Uuid;

const KEYS: usize = 6;
const WRITE_TIMEOUT: Duration = Duration::from_millis(150);
const READ_OPTIONS: ReadOptions = ReadOptions {
    timeout: Duration::from_millis(300),
    speculate_after: None,
    answer_times: None,
};

fn node(n: usize) -> NodeId {
    NodeId(Uuid::from_u128(n as u128))
}

/// A write and a read answer share one form, `key|timestamp|value`, so a merged answer is also
/// the mutation that repairs a replica.
fn cell(key: &str, ts: u64, value: &str) -> Bytes {
    Bytes::from(format!("{key}|{ts}|{value}"))
}

fn parse(b: &Bytes) -> (String, u64, String) {
    let s = String::from_utf8_lossy(b);
    let mut parts = s.splitn(3, '|');
    let key = parts.next().unwrap_or_default().to_string();
    let ts = parts.next().and_then(|t| t.parse().ok()).unwrap_or(0);
    (key, ts, parts.next().unwrap_or_default().to_string())
}

/// One replica's data: the newest (timestamp, value) per key.
#[derive(Default)]
struct Replica {
    cells: Mutex<HashMap<String, (u64, String)>>,
}

impl Replica {
    fn timestamp_of(&self, key: &str) -> u64 {
        self.cells.lock().unwrap().get(key).map_or(0, |c| c.0)
    }
}

impl LocalReader for Replica {
    fn read(&self, command: &Bytes) -> Result<Bytes, ReadFailureReason> {
        let key = String::from_utf8_lossy(command).to_string();
        let (ts, value) = self
            .cells
            .lock()
            .unwrap()
            .get(&key)
            .cloned()
            .unwrap_or_default();
        Ok(cell(&key, ts, &value))
    }
}

impl LocalWriter for Replica {
    fn apply<'a>(&'a self, mutation: &'a Bytes) -> ApplyFuture<'a> {
        let (key, ts, value) = parse(mutation);
        let mut cells = self.cells.lock().unwrap();
        let current = cells.entry(key).or_default();
        if ts > current.0 {
            *current = (ts, value);
        }
        Box::pin(async { Ok(()) })
    }
}

/// Last write wins, as Cassandra reconciles cells.
struct Newest;

impl ReadResolver for Newest {
    fn digest(&self, data: &Bytes) -> Bytes {
        Bytes::copy_from_slice(&crc32c::crc32c(data).to_be_bytes())
    }
    fn merge(&self, answers: &[Bytes]) -> Bytes {
        answers
            .iter()
            .max_by_key(|a| parse(a).1)
            .cloned()
            .unwrap_or_default()
    }
    fn repair(&self, theirs: &Bytes, merged: &Bytes) -> Option<Bytes> {
        (theirs != merged).then(|| merged.clone())
    }
}

/// Hints are counted, never delivered: after the heal only read repair may fix node 3.
#[derive(Default)]
struct CountedHints(Mutex<usize>);

impl HintSink for CountedHints {
    fn store(&self, _: NodeId, _: &Bytes) {
        *self.0.lock().unwrap() += 1;
    }
}

struct Member {
    replica: Arc<Replica>,
    messenger: Messenger,
}

fn ring(net: &SimulatedNetwork) -> Vec<Member> {
    (1..=3)
        .map(|n| {
            let id = node(n);
            let (transport, mut inbox) = net.join(id, 1024);
            let messenger = Messenger::new(Arc::new(transport));
            let replica = Arc::new(Replica::default());
            let (served, m) = (replica.clone(), messenger.clone());
            tokio::spawn(async move {
                while let Some(e) = inbox.recv().await {
                    if e.is_response() {
                        m.complete(e);
                    } else if e.verb == Verb::ReadRequest {
                        serve_read(&e, served.as_ref(), &Newest, &m);
                    } else if e.verb == Verb::MutationRequest {
                        serve_mutation(&e, served.as_ref(), &m).await;
                    }
                }
            });
            Member { replica, messenger }
        })
        .collect()
}

/// Every replica is believed alive: a partition shorter than conviction looks exactly so.
fn write_plan() -> WritePlan {
    WritePlan {
        consistency: ConsistencyLevel::Quorum,
        live: (1..=3).map(node).collect(),
        down: vec![],
        block_for: 2,
    }
}

/// Data from the coordinator itself (stale, if it was cut off), a digest from `partner`.
fn read_plan(coordinator: usize, partner: usize) -> ReadPlan {
    ReadPlan {
        consistency: ConsistencyLevel::Quorum,
        contacts: vec![node(coordinator), node(partner)],
        spare: vec![node(6 - coordinator - partner)],
        block_for: 2,
    }
}

struct History {
    /// The newest acknowledged timestamp per key.
    acked: Vec<u64>,
    acks: usize,
    timeouts: usize,
    next_ts: u64,
}

impl History {
    fn new() -> Self {
        History {
            acked: vec![0; KEYS],
            acks: 0,
            timeouts: 0,
            next_ts: 1,
        }
    }
}

async fn quorum_write(
    member: &Member,
    key: usize,
    history: &mut History,
    hints: &Arc<CountedHints>,
) -> Result<(), WriteError> {
    let ts = history.next_ts;
    history.next_ts += 1;
    let outcome = write(
        &write_plan(),
        cell(&format!("k{key}"), ts, &format!("v{ts}")),
        WriteType::Simple,
        &member.messenger,
        member.replica.as_ref(),
        hints.clone(),
        WRITE_TIMEOUT,
    )
    .await;
    match &outcome {
        Ok(()) => {
            history.acks += 1;
            history.acked[key] = history.acked[key].max(ts);
        }
        Err(_) => history.timeouts += 1,
    }
    outcome
}

async fn quorum_read(
    members: &[Member],
    (coordinator, partner): (usize, usize),
    key: usize,
) -> Result<u64, ReadError> {
    let member = &members[coordinator - 1];
    let answer = read(
        &read_plan(coordinator, partner),
        Bytes::from(format!("k{key}")),
        &member.messenger,
        member.replica.as_ref(),
        member.replica.as_ref(),
        &Newest,
        READ_OPTIONS,
    )
    .await?;
    Ok(parse(&answer).1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_loses_no_acknowledged_quorum_write_and_leaves_no_stale_quorum_read() {
    let net = SimulatedNetwork::new(7);
    net.set_delay(Duration::from_micros(100), Duration::from_millis(3));
    let members = ring(&net);
    let hints = Arc::new(CountedHints::default());
    let mut history = History::new();

    // Healthy: every coordinator's writes are acknowledged.
    for i in 0..30 {
        quorum_write(&members[i % 3], i % KEYS, &mut history, &hints)
            .await
            .unwrap();
    }

    // Node 3 cut off from nodes 1 and 2 (clients still reach all three).
    net.partition(&[node(3)], &[node(1), node(2)]);
    // Each key is written by node 3 first, then by nodes 1 and 2, so node 3 ends up stale on
    // every key (its own later writes would otherwise hide the partition from the reads).
    for i in 0..90 {
        let coordinator = (i + 2) % 3;
        let key = (i / 3) % KEYS;
        let outcome = quorum_write(&members[coordinator], key, &mut history, &hints).await;
        match (coordinator + 1, outcome) {
            (
                3,
                Err(WriteError::Timeout {
                    received,
                    block_for,
                    ..
                }),
            ) => assert_eq!(
                (received, block_for),
                (1, 2),
                "only its own replica answered"
            ),
            (3, other) => panic!("the cut-off coordinator acknowledged a QUORUM write: {other:?}"),
            (_, outcome) => outcome.unwrap(),
        }
    }
    assert_eq!(history.timeouts, 30, "every write through node 3 timed out");
    // A hint is stored once its replica's answer is overdue, after the write has returned.
    tokio::time::sleep(WRITE_TIMEOUT * 2).await;
    assert_eq!(
        *hints.0.lock().unwrap(),
        60 + 30 * 2,
        "a hint for node 3 per majority write, for nodes 1 and 2 per node-3 write"
    );
    for key in 0..KEYS {
        for pair in [(1, 2), (2, 1)] {
            let seen = quorum_read(&members, pair, key).await.unwrap();
            assert!(
                seen >= history.acked[key],
                "stale QUORUM read on the majority side: k{key} at {seen} < {}",
                history.acked[key]
            );
        }
        assert!(
            matches!(
                quorum_read(&members, (3, 1), key).await,
                Err(ReadError::Timeout { received: 1, .. })
            ),
            "the cut-off side cannot answer at QUORUM"
        );
    }
    let stale_keys = (0..KEYS)
        .filter(|k| members[2].replica.timestamp_of(&format!("k{k}")) < history.acked[*k])
        .count();
    assert_eq!(stale_keys, KEYS, "node 3 missed the majority's writes");

    // Heal; no hint is delivered, so only reads may repair node 3.
    net.heal();
    for key in 0..KEYS {
        // Node 3 first, with its own stale copy as the data and a digest from node 1.
        for pair in [(3, 1), (1, 3), (2, 3)] {
            let seen = quorum_read(&members, pair, key).await.unwrap();
            assert!(
                seen >= history.acked[key],
                "stale QUORUM read after the heal through {pair:?}: k{key} at {seen} < {}",
                history.acked[key]
            );
        }
        assert!(
            members[2].replica.timestamp_of(&format!("k{key}")) >= history.acked[key],
            "read repair brought node 3's k{key} up to date"
        );
    }
    assert_eq!(history.acks, 90, "30 healthy + 60 majority-side writes");
    assert!(net.dropped() > 0, "the partition did drop messages");
}
