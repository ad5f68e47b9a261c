//! Three cluster members in one process over real TCP on 127.0.0.1: gossip forms the ring, a
//! coordinator writes at QUORUM through the replicated write path, one member crashes (its
//! services stop without a word), writes go on at QUORUM with hints for it, ALL is refused as
//! Unavailable once it is seen down, and when it comes back (same host id, new generation, its
//! data kept) its hints are delivered and it holds every acknowledged write.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use helenus_cluster::gossip::{FailureDetectorConfig, GossipConfig, GossipEvent};
use helenus_cluster::locator::{Location, NodeId, ReplicationMap, ReplicationStrategy};
use helenus_cluster::messaging::{Envelope, Messenger, Verb};
use helenus_cluster::service::{ClusterService, ServiceSettings};
use helenus_coordinator::hint_delivery::deliver_hints;
use helenus_coordinator::hints::HintStore;
use helenus_coordinator::write::serve_mutation;
use helenus_coordinator::{
    plan_write, write, ApplyFuture, ConsistencyLevel, LiveReplicas, LocalWriter, ReplicaWriteError,
    WriteType,
};
use helenus_types::SystemClock;
use tokio::sync::mpsc;
use uuid::Uuid;

#[derive(Default)]
struct Table(Mutex<HashMap<String, String>>);

impl LocalWriter for Table {
    fn apply<'a>(&'a self, m: &'a Bytes) -> ApplyFuture<'a> {
        let s = String::from_utf8_lossy(m);
        let result = match s.split_once('=') {
            Some((k, v)) => {
                self.0.lock().unwrap().insert(k.to_string(), v.to_string());
                Ok(())
            }
            None => Err(ReplicaWriteError::Failed("bad mutation".into())),
        };
        Box::pin(async move { result })
    }
}

struct Node {
    service: ClusterService,
    messenger: Messenger,
    table: Arc<Table>,
}

fn settings(n: u8, listen: SocketAddr, seeds: Vec<SocketAddr>, generation: i64) -> ServiceSettings {
    ServiceSettings {
        host_id: NodeId(Uuid::from_u128(u128::from(n) + 1)),
        listen,
        native: "127.0.0.1:9042".parse().unwrap(),
        location: Location::default(),
        tokens: (0..4)
            .map(|t| {
                (i64::from(n) - 1) * 3_000_000_000_000_000_000 + t * 700_000_000_000_000_000 + 1
            })
            .collect(),
        seeds,
        gossip: GossipConfig {
            interval: Duration::from_millis(50),
            failure_detector: FailureDetectorConfig {
                phi_convict_threshold: 8.0,
                initial_interval: Duration::from_millis(100),
            },
            ..GossipConfig::default()
        },
        schema_version: "00000000-0000-0000-0000-000000000000".into(),
        release_version: "5.0.9".into(),
        generation,
    }
}

async fn start(
    n: u8,
    listen: SocketAddr,
    seeds: Vec<SocketAddr>,
    generation: i64,
    table: Arc<Table>,
) -> Node {
    let (service, inbox) = loop {
        match ClusterService::start(
            settings(n, listen, seeds.clone(), generation),
            SystemClock::shared(),
        )
        .await
        {
            Ok(s) => break s,
            // A restart may find the port still held for a moment.
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    let messenger = Messenger::new(Arc::new(service.transport().clone()));
    tokio::spawn(dispatch(inbox, messenger.clone(), table.clone()));
    Node {
        service,
        messenger,
        table,
    }
}

async fn dispatch(mut inbox: mpsc::Receiver<Envelope>, messenger: Messenger, table: Arc<Table>) {
    while let Some(e) = inbox.recv().await {
        if e.is_response() {
            messenger.complete(e);
        } else if e.verb == Verb::MutationRequest {
            serve_mutation(&e, table.as_ref(), &messenger).await;
        }
    }
}

async fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn put(
    coordinator: &Node,
    hints: &Arc<HintStore>,
    cl: ConsistencyLevel,
    key: &str,
) -> Result<(), String> {
    let ring = coordinator.service.ring();
    let map = ReplicationMap::new(
        ring.clone(),
        ReplicationStrategy::Simple {
            replication_factor: 3,
        },
        coordinator.service.host_id(),
    );
    let service = coordinator.service.clone();
    let alive = move |n: NodeId| service.is_alive(n);
    let live = LiveReplicas {
        ring: &ring,
        local: coordinator.service.host_id(),
        is_alive: &alive,
    };
    let token = helenus_types::murmur3_token(key.as_bytes());
    let plan = plan_write(&map, token, &[], cl, &live).map_err(|e| e.to_string())?;
    let sink: Arc<dyn helenus_coordinator::HintSink> = hints.clone();
    write(
        &plan,
        Bytes::from(format!("{key}=v")),
        WriteType::Simple,
        &coordinator.messenger,
        coordinator.table.as_ref(),
        sink,
        Duration::from_secs(2),
    )
    .await
    .map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_replica_gets_its_hints_when_it_returns() {
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let tables: Vec<Arc<Table>> = (0..3).map(|_| Arc::new(Table::default())).collect();
    let n1 = start(1, any, vec![], 1, tables[0].clone()).await;
    let seed = n1.service.listen_address();
    let n2 = start(2, any, vec![seed], 1, tables[1].clone()).await;
    let n3 = start(3, any, vec![seed], 1, tables[2].clone()).await;
    let n3_address = n3.service.listen_address();
    let n3_id = n3.service.host_id();
    wait_for("the ring", || {
        [&n1, &n2, &n3].iter().all(|n| n.service.ring().len() == 12)
    })
    .await;

    let hint_dir =
        std::env::temp_dir().join(format!("helenus-in-process-hints-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&hint_dir);
    let hints = HintStore::open(&hint_dir, SystemClock::shared()).unwrap();
    for i in 0..50 {
        put(&n1, &hints, ConsistencyLevel::All, &format!("before{i}"))
            .await
            .unwrap();
    }
    assert!(
        tables.iter().all(|t| t.0.lock().unwrap().len() == 50),
        "ALL reached every replica"
    );

    n3.service.stop();
    drop(n3);
    wait_for("node 3 seen down", || !n1.service.is_alive(n3_id)).await;
    let err = put(&n1, &hints, ConsistencyLevel::All, "refused")
        .await
        .unwrap_err();
    assert_eq!(err, "Cannot achieve consistency level ALL");
    for i in 0..50 {
        put(&n1, &hints, ConsistencyLevel::Quorum, &format!("during{i}"))
            .await
            .unwrap();
    }
    assert_eq!(
        hints.read(n3_id).unwrap().len(),
        50,
        "one hint per write it missed"
    );
    assert_eq!(
        tables[2].0.lock().unwrap().len(),
        50,
        "the dead node got nothing"
    );

    // Back on the same address with the same host id and its data, one generation later.
    let mut events = n1.service.subscribe();
    let _n3 = start(3, n3_address, vec![seed], 2, tables[2].clone()).await;
    let up = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Ok(GossipEvent::Up(n)) = events.recv().await {
                if n == n3_id {
                    return;
                }
            }
        }
    })
    .await;
    assert!(up.is_ok(), "node 3 seen up again");
    let delivered = deliver_hints(&hints, n3_id, &n1.messenger, Duration::from_secs(2))
        .await
        .unwrap();
    assert_eq!(delivered.sent, 50);
    assert_eq!(delivered.remaining, 0);
    assert_eq!(
        tables[2].0.lock().unwrap().len(),
        100,
        "every acknowledged write is on the returned node"
    );
    let _ = std::fs::remove_dir_all(&hint_dir);
}
