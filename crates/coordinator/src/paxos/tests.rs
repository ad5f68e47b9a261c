//! Lightweight transactions on three replicas over the simulated network (delays, losses, a
//! replica killed and restarted), with every history checked for linearizability.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use helenus_cluster::locator::NodeId;
use helenus_cluster::messaging::{Envelope, Messenger, SimulatedNetwork, Verb};
use helenus_types::SystemClock;
use tokio::sync::mpsc;
use uuid::Uuid;

use super::checker::{check, Operation, RegisterOp, RegisterResult};
use super::*;

fn node(n: u128) -> NodeId {
    NodeId(Uuid::from_u128(n))
}

struct Replica {
    messenger: Messenger,
    acceptor: Arc<Acceptor>,
    ballots: Arc<BallotGenerator>,
}

/// Starts (or restarts) a node on the network with its durable store.
fn start(net: &SimulatedNetwork, id: NodeId, store: Arc<MemoryPaxosStore>) -> Replica {
    let (t, inbox) = net.join(id, 4096);
    let messenger = Messenger::new(Arc::new(t));
    let acceptor = Arc::new(Acceptor::new(store));
    tokio::spawn(serve(inbox, messenger.clone(), acceptor.clone()));
    Replica {
        messenger,
        acceptor,
        ballots: Arc::new(BallotGenerator::new(id, SystemClock::shared())),
    }
}

async fn serve(mut inbox: mpsc::Receiver<Envelope>, messenger: Messenger, acceptor: Arc<Acceptor>) {
    while let Some(e) = inbox.recv().await {
        if e.is_response() {
            messenger.complete(e);
        } else if e.verb != Verb::PaxosResponse {
            serve_paxos(&e, &acceptor, &messenger);
        }
    }
}

fn encode(v: u64) -> Bytes {
    Bytes::copy_from_slice(&v.to_be_bytes())
}

fn decode(b: Option<&Bytes>) -> Option<u64> {
    b.and_then(|b| b.as_ref().try_into().ok())
        .map(u64::from_be_bytes)
}

/// Runs `clients` concurrent clients of `ops` operations each on one key, through the given
/// coordinators; returns the history.
async fn run_clients(
    coordinators: Vec<Arc<Replica>>,
    replicas: Vec<NodeId>,
    clients: usize,
    ops: usize,
    started: Instant,
) -> Vec<Operation> {
    let history = Arc::new(Mutex::new(Vec::new()));
    let next_value = Arc::new(AtomicU64::new(1));
    let mut tasks = Vec::new();
    for c in 0..clients {
        let coordinator = coordinators[c % coordinators.len()].clone();
        let replicas = replicas.clone();
        let history = history.clone();
        let next_value = next_value.clone();
        tasks.push(tokio::spawn(async move {
            let mut last_seen: Option<u64> = None;
            for i in 0..ops {
                let new = next_value.fetch_add(1, Ordering::Relaxed);
                let op = if i % 4 == 3 {
                    RegisterOp::Read
                } else {
                    RegisterOp::Cas {
                        expect: last_seen,
                        new,
                    }
                };
                let request = CasRequest {
                    verbs: PaxosVerbs::LWT,
                    key: Bytes::from_static(b"register"),
                    replicas: &replicas,
                    quorum: 2,
                    timeout: Duration::from_millis(250),
                };
                let call = started.elapsed().as_micros() as u64;
                let result = cas(
                    &request,
                    &coordinator.messenger,
                    &coordinator.acceptor,
                    &coordinator.ballots,
                    |current| match op {
                        RegisterOp::Cas { expect, new } if decode(current) == expect => {
                            Some(encode(new))
                        }
                        _ => None,
                    },
                )
                .await;
                let ret = started.elapsed().as_micros() as u64;
                let (ret, result) = match (op, result) {
                    (RegisterOp::Read, Ok(o)) => {
                        last_seen = decode(o.current.as_ref());
                        (Some(ret), RegisterResult::Read(last_seen))
                    }
                    (RegisterOp::Cas { .. }, Ok(o)) => {
                        let current = decode(o.current.as_ref());
                        last_seen = if o.applied { Some(new) } else { current };
                        (
                            Some(ret),
                            RegisterResult::Cas {
                                applied: o.applied,
                                current,
                            },
                        )
                    }
                    (_, Err(_)) => (None, RegisterResult::Unknown),
                };
                history.lock().unwrap().push(Operation {
                    call,
                    ret,
                    op,
                    result,
                });
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let h = history.lock().unwrap().clone();
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_cas_through_three_coordinators_is_linearizable_under_delays_and_loss() {
    let net = SimulatedNetwork::new(42);
    net.set_delay(Duration::from_micros(100), Duration::from_millis(3));
    net.set_drop_rate(0.03);
    let ids = vec![node(1), node(2), node(3)];
    let replicas: Vec<Arc<Replica>> = ids
        .iter()
        .map(|id| Arc::new(start(&net, *id, Arc::new(MemoryPaxosStore::default()))))
        .collect();
    let history = run_clients(replicas, ids, 4, 30, Instant::now()).await;
    let completed = history.iter().filter(|o| o.ret.is_some()).count();
    let applied = history
        .iter()
        .filter(|o| matches!(o.result, RegisterResult::Cas { applied: true, .. }))
        .count();
    assert_eq!(history.len(), 120);
    assert!(completed >= 60, "most operations complete ({completed})");
    assert!(applied >= 10, "some CASes win ({applied})");
    check(&history, None).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cas_stays_linearizable_while_a_replica_is_killed_and_restarted() {
    let net = SimulatedNetwork::new(7);
    net.set_delay(Duration::from_micros(50), Duration::from_millis(2));
    let ids = vec![node(1), node(2), node(3)];
    let stores: Vec<Arc<MemoryPaxosStore>> = ids
        .iter()
        .map(|_| Arc::new(MemoryPaxosStore::default()))
        .collect();
    let replicas: Vec<Arc<Replica>> = ids
        .iter()
        .zip(&stores)
        .map(|(id, s)| Arc::new(start(&net, *id, s.clone())))
        .collect();
    let started = Instant::now();
    let killer = {
        let net = net.clone();
        let store = stores[2].clone();
        tokio::spawn(async move {
            for _ in 0..3 {
                tokio::time::sleep(Duration::from_millis(40)).await;
                net.leave(node(3));
                tokio::time::sleep(Duration::from_millis(40)).await;
                // Back with its promises and accepted values intact (they were durable).
                let _ = start(&net, node(3), store.clone());
            }
        })
    };
    // Clients go through the two nodes that stay up; node 3 is only a replica.
    let coordinators = vec![replicas[0].clone(), replicas[1].clone()];
    let history = run_clients(coordinators, ids, 4, 30, started).await;
    killer.await.unwrap();
    let completed = history.iter().filter(|o| o.ret.is_some()).count();
    assert!(
        completed >= 60,
        "a quorum stays available ({completed} of 120 completed)"
    );
    check(&history, None).unwrap();
}

#[tokio::test]
async fn too_few_replicas_is_unavailable_not_a_timeout() {
    let net = SimulatedNetwork::new(1);
    let r = start(&net, node(1), Arc::new(MemoryPaxosStore::default()));
    let replicas = [node(1)];
    let request = CasRequest {
        verbs: PaxosVerbs::LWT,
        key: Bytes::from_static(b"k"),
        replicas: &replicas,
        quorum: 2,
        timeout: Duration::from_millis(100),
    };
    let err = cas(&request, &r.messenger, &r.acceptor, &r.ballots, |_| {
        Some(Bytes::new())
    })
    .await
    .unwrap_err();
    assert_eq!(
        err,
        PaxosError::Unavailable {
            required: 2,
            alive: 1
        }
    );
}

/// An entry's value in a log of one instance per slot: its commit, once there is one.
fn committed_value(_granted: &[&Promise], latest: Option<&Commit>) -> Option<Bytes> {
    latest.map(|c| c.update.clone())
}

/// Appends `values` to a log of one Paxos instance per slot, as the server's metadata log does:
/// propose at the slot after the last one known; a slot another appender took is learned and the
/// next one tried; a round without an outcome is retried at the same slot with the same value.
/// Returns the (slot, value) pairs this appender learned, its own included.
async fn append_all(replica: Arc<Replica>, ids: Vec<NodeId>, values: Vec<u64>) -> Vec<(u64, u64)> {
    let mut learned = Vec::new();
    let mut slot = 1u64;
    let deadline = Instant::now() + Duration::from_secs(20);
    for value in values {
        loop {
            assert!(Instant::now() < deadline, "the log stopped making progress");
            let request = CasRequest {
                verbs: PaxosVerbs::METADATA,
                key: Bytes::copy_from_slice(&slot.to_be_bytes()),
                replicas: &ids,
                quorum: 2,
                timeout: Duration::from_millis(200),
            };
            let outcome = cas_with(
                &request,
                &replica.messenger,
                &replica.acceptor,
                &replica.ballots,
                committed_value,
                |taken| match taken {
                    Some(_) => None,
                    None => Some(encode(value)),
                },
            )
            .await;
            let chosen = match outcome {
                Ok(o) if o.applied => value,
                Ok(o) => match decode(o.current.as_ref()) {
                    Some(v) => v,
                    None => panic!("a free slot was not proposed to"),
                },
                Err(_) => continue,
            };
            learned.push((slot, chosen));
            slot += 1;
            if chosen == value {
                break;
            }
        }
    }
    learned
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_of_one_instance_per_slot_gives_each_slot_one_value_under_loss() {
    let net = SimulatedNetwork::new(11);
    net.set_delay(Duration::from_micros(100), Duration::from_millis(3));
    net.set_drop_rate(0.05);
    let ids = vec![node(1), node(2), node(3)];
    let replicas: Vec<Arc<Replica>> = ids
        .iter()
        .map(|id| Arc::new(start(&net, *id, Arc::new(MemoryPaxosStore::default()))))
        .collect();
    let tasks: Vec<_> = replicas
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let values = (0..8).map(|j| (i as u64 + 1) * 100 + j).collect();
            tokio::spawn(append_all(r.clone(), ids.clone(), values))
        })
        .collect();
    let mut log = std::collections::BTreeMap::new();
    for t in tasks {
        for (slot, value) in t.await.unwrap() {
            let first = *log.entry(slot).or_insert(value);
            assert_eq!(first, value, "slot {slot} was given two values");
        }
    }
    // Every value appended once, in slots 1..=24 with no gap.
    let mut values: Vec<u64> = log.values().copied().collect();
    values.sort_unstable();
    let want: Vec<u64> = (1..=3u64)
        .flat_map(|i| (0..8).map(move |j| i * 100 + j))
        .collect();
    assert_eq!(values, want);
    assert_eq!(
        log.keys().copied().collect::<Vec<_>>(),
        (1..=24).collect::<Vec<u64>>()
    );
}
