//! Logged batches (Cassandra's batchlog): before a multi-partition logged batch is applied, it is
//! stored on up to two other nodes of the coordinator's data center; after it is applied it is
//! removed from them. If the coordinator dies in between, a batchlog node finds the batch older
//! than the replay delay and applies it itself, so the batch is all-or-nothing.
//!
//! A stored batch is one file `<id>.batch` in the store's directory:
//! `[crc32c u32][created wall ms i64][count u32]([length u32][mutation])*`, written to a temporary
//! name, synced, then renamed, so a crash never leaves half a batch.

use std::fs;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use helenus_cluster::locator::{NodeId, Ring};
use helenus_cluster::messaging::{Envelope, Messenger, Verb};
use helenus_types::SharedClock;
use uuid::Uuid;

use crate::consistency::ConsistencyLevel;
use crate::write::{WriteError, WriteType};

/// One logged batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub id: Uuid,
    pub created_ms: i64,
    pub mutations: Vec<Bytes>,
}

impl Batch {
    fn encode(&self) -> Bytes {
        let mut body = BytesMut::new();
        body.put_i64(self.created_ms);
        body.put_u32(self.mutations.len() as u32);
        for m in &self.mutations {
            body.put_u32(m.len() as u32);
            body.put_slice(m);
        }
        let mut out = BytesMut::with_capacity(4 + 16 + body.len());
        out.put_u32(crc32c::crc32c(&body));
        out.put_slice(self.id.as_bytes());
        out.put_slice(&body);
        out.freeze()
    }

    fn decode(mut raw: Bytes) -> Option<Batch> {
        if raw.remaining() < 4 + 16 + 12 {
            return None;
        }
        let crc = raw.get_u32();
        let mut id = [0u8; 16];
        raw.copy_to_slice(&mut id);
        if crc32c::crc32c(&raw) != crc {
            return None;
        }
        let created_ms = raw.get_i64();
        let count = raw.get_u32() as usize;
        let mut mutations = Vec::with_capacity(count.min(raw.remaining() / 4));
        for _ in 0..count {
            if raw.remaining() < 4 {
                return None;
            }
            let len = raw.get_u32() as usize;
            if raw.remaining() < len {
                return None;
            }
            mutations.push(raw.split_to(len));
        }
        Some(Batch {
            id: Uuid::from_bytes(id),
            created_ms,
            mutations,
        })
    }
}

/// The batches this node holds for other coordinators.
pub struct BatchlogStore {
    dir: PathBuf,
}

impl BatchlogStore {
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<BatchlogStore> {
        let dir = dir.into();
        fs::create_dir_all(&dir)?;
        Ok(BatchlogStore { dir })
    }

    fn path(&self, id: Uuid) -> PathBuf {
        self.dir.join(format!("{id}.batch"))
    }

    /// Stores a batch durably.
    pub fn store(&self, batch: &Batch) -> io::Result<()> {
        let tmp = self.dir.join(format!("{}.tmp", batch.id));
        {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(&batch.encode())?;
            f.sync_data()?;
        }
        fs::rename(tmp, self.path(batch.id))
    }

    pub fn remove(&self, id: Uuid) -> io::Result<()> {
        match fs::remove_file(self.path(id)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Batches created before `before_ms` (their coordinators should have removed them by now).
    pub fn due(&self, before_ms: i64) -> io::Result<Vec<Batch>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let path = entry?.path();
            if path.extension().and_then(|e| e.to_str()) != Some("batch") {
                continue;
            }
            let Some(batch) = Batch::decode(Bytes::from(fs::read(&path)?)) else {
                // A damaged file cannot be replayed; keep it for inspection, out of the way.
                let _ = fs::rename(&path, path.with_extension("corrupt"));
                continue;
            };
            if batch.created_ms < before_ms {
                out.push(batch);
            }
        }
        out.sort_by_key(|b| b.created_ms);
        Ok(out)
    }
}

/// Up to two live nodes of the local data center other than this one, on other racks where
/// possible; this node alone when it is the only one (Cassandra's `filterBatchlogEndpoints`).
pub fn batchlog_endpoints(
    ring: &Ring,
    local: NodeId,
    is_alive: &dyn Fn(NodeId) -> bool,
) -> Vec<NodeId> {
    let Some(me) = ring.member(local) else {
        return vec![local];
    };
    let mut candidates: Vec<(bool, NodeId)> = ring
        .members()
        .filter(|m| {
            m.id != local && m.location.datacenter == me.location.datacenter && is_alive(m.id)
        })
        .map(|m| (m.location.rack == me.location.rack, m.id))
        .collect();
    candidates.sort(); // other racks (false) first
    let mut chosen: Vec<NodeId> = candidates.iter().take(2).map(|(_, id)| *id).collect();
    if chosen.is_empty() {
        chosen.push(local);
    }
    chosen
}

/// Stores `batch` on `endpoints` and waits for all of them (the batchlog write of a logged batch).
pub async fn store_batch(
    batch: &Batch,
    endpoints: &[NodeId],
    messenger: &Messenger,
    local: &BatchlogStore,
    consistency: ConsistencyLevel,
    timeout: Duration,
) -> Result<(), WriteError> {
    let payload = batch.encode();
    let mut acks = 0;
    let mut waiting = Vec::new();
    for node in endpoints {
        if *node == messenger.local() {
            if local.store(batch).is_ok() {
                acks += 1;
            }
            continue;
        }
        if let Ok(w) = messenger.request(*node, Verb::BatchStore, payload.clone()) {
            waiting.push(w);
        }
    }
    for (id, ack) in waiting {
        match tokio::time::timeout(timeout, ack).await {
            Ok(Ok(reply)) if reply.verb == Verb::BatchStore => acks += 1,
            Ok(_) => {}
            Err(_) => messenger.forget(id),
        }
    }
    if acks < endpoints.len() {
        return Err(WriteError::Timeout {
            consistency,
            received: acks,
            block_for: endpoints.len(),
            write_type: WriteType::BatchLog,
        });
    }
    Ok(())
}

/// Tells the batchlog nodes the batch was applied (no answer is awaited: a missed removal only
/// means a harmless replay of mutations that are idempotent).
pub fn remove_batch(id: Uuid, endpoints: &[NodeId], messenger: &Messenger, local: &BatchlogStore) {
    for node in endpoints {
        if *node == messenger.local() {
            let _ = local.remove(id);
        } else {
            let _ = messenger.send_one_way(
                *node,
                Verb::BatchRemove,
                Bytes::copy_from_slice(id.as_bytes()),
            );
        }
    }
}

/// The batchlog node's side of BatchStore and BatchRemove.
pub fn serve_batchlog(request: &Envelope, store: &BatchlogStore, messenger: &Messenger) {
    match request.verb {
        Verb::BatchStore => {
            let stored =
                Batch::decode(request.payload.clone()).is_some_and(|b| store.store(&b).is_ok());
            let verb = if stored {
                Verb::BatchStore
            } else {
                Verb::Failure
            };
            let _ = messenger.respond(request, verb, Bytes::new());
        }
        Verb::BatchRemove => {
            if let Ok(bytes) = <[u8; 16]>::try_from(request.payload.as_ref()) {
                let _ = store.remove(Uuid::from_bytes(bytes));
            }
        }
        _ => {}
    }
}

/// Replays batches whose coordinator did not remove them within `delay` (Cassandra: twice the
/// write timeout): each mutation goes through `apply`, then the batch is removed. Returns how
/// many batches were replayed.
pub fn replay_due(
    store: &BatchlogStore,
    clock: &SharedClock,
    delay: Duration,
    mut apply: impl FnMut(&Bytes) -> bool,
) -> io::Result<usize> {
    let before = clock.wall_ms() - i64::try_from(delay.as_millis()).unwrap_or(i64::MAX);
    let mut replayed = 0;
    for batch in store.due(before)? {
        if batch.mutations.iter().all(&mut apply) {
            store.remove(batch.id)?;
            replayed += 1;
        }
    }
    Ok(replayed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use helenus_cluster::locator::{Location, Member};
    use helenus_cluster::messaging::SimulatedNetwork;
    use helenus_types::ManualClock;
    use std::net::{IpAddr, Ipv4Addr};
    use std::sync::Arc;

    fn node(n: u128) -> NodeId {
        NodeId(Uuid::from_u128(n))
    }

    fn temp(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("helenus-batchlog-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    fn batch(created_ms: i64) -> Batch {
        Batch {
            id: Uuid::from_u128(created_ms as u128 + 100),
            created_ms,
            mutations: vec![Bytes::from_static(b"a"), Bytes::from_static(b"b")],
        }
    }

    #[test]
    fn a_batch_round_trips_and_damage_is_detected() {
        let b = batch(7);
        assert_eq!(Batch::decode(b.encode()), Some(b.clone()));
        let mut raw = b.encode().to_vec();
        let last = raw.len() - 1;
        raw[last] ^= 1;
        assert_eq!(Batch::decode(Bytes::from(raw)), None);
    }

    #[test]
    fn batchlog_endpoints_prefer_other_racks_and_fall_back_to_self() {
        let m = |n: u8, rack: &str| Member {
            id: node(u128::from(n)),
            address: IpAddr::V4(Ipv4Addr::new(127, 0, 0, n)),
            location: Location::new("dc1", rack),
        };
        let ring = Ring::new([
            (m(1, "r1"), vec![1]),
            (m(2, "r1"), vec![2]),
            (m(3, "r2"), vec![3]),
            (m(4, "r3"), vec![4]),
        ])
        .unwrap();
        let all = |_: NodeId| true;
        let chosen = batchlog_endpoints(&ring, node(1), &all);
        assert_eq!(chosen.len(), 2);
        assert!(
            !chosen.contains(&node(2)),
            "same rack as the coordinator: last choice"
        );
        let alone = Ring::new([(m(1, "r1"), vec![1])]).unwrap();
        assert_eq!(batchlog_endpoints(&alone, node(1), &all), vec![node(1)]);
    }

    #[tokio::test]
    async fn a_batch_stored_by_a_coordinator_that_died_is_replayed_by_the_batchlog_node() {
        let net = SimulatedNetwork::new(3);
        let (t1, mut inbox1) = net.join(node(1), 64);
        let coordinator = Messenger::new(Arc::new(t1));
        let pump = coordinator.clone();
        tokio::spawn(async move {
            while let Some(e) = inbox1.recv().await {
                pump.complete(e);
            }
        });
        let dir = temp("replay");
        let remote_store = Arc::new(BatchlogStore::open(dir.join("node2")).unwrap());
        let (t2, mut inbox2) = net.join(node(2), 64);
        let node2 = Messenger::new(Arc::new(t2));
        let served = remote_store.clone();
        tokio::spawn(async move {
            while let Some(e) = inbox2.recv().await {
                serve_batchlog(&e, &served, &node2);
            }
        });
        let local_store = BatchlogStore::open(dir.join("node1")).unwrap();
        let clock: SharedClock = Arc::new(ManualClock::new(1_000_000_000));
        let b = Batch {
            id: Uuid::from_u128(42),
            created_ms: clock.wall_ms(),
            mutations: vec![Bytes::from_static(b"m1"), Bytes::from_static(b"m2")],
        };
        store_batch(
            &b,
            &[node(2)],
            &coordinator,
            &local_store,
            ConsistencyLevel::Quorum,
            Duration::from_secs(2),
        )
        .await
        .unwrap();
        // The coordinator dies here: its mutations were never applied, nor the batch removed.
        let mut applied = Vec::new();
        let too_early = replay_due(&remote_store, &clock, Duration::from_secs(4), |m| {
            applied.push(m.clone());
            true
        })
        .unwrap();
        assert_eq!(too_early, 0, "not before the replay delay");
        let later: SharedClock = Arc::new(ManualClock::new(1_000_000_000 + 5_000_000));
        let replayed = replay_due(&remote_store, &later, Duration::from_secs(4), |m| {
            applied.push(m.clone());
            true
        })
        .unwrap();
        assert_eq!(replayed, 1);
        assert_eq!(applied, b.mutations);
        assert!(
            remote_store.due(i64::MAX).unwrap().is_empty(),
            "removed after replay"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn an_applied_batch_is_removed_and_not_replayed() {
        let net = SimulatedNetwork::new(4);
        let (t1, _inbox1) = net.join(node(1), 64);
        let coordinator = Messenger::new(Arc::new(t1));
        let dir = temp("remove");
        let local_store = BatchlogStore::open(&dir).unwrap();
        let b = batch(10);
        store_batch(
            &b,
            &[node(1)],
            &coordinator,
            &local_store,
            ConsistencyLevel::One,
            Duration::from_secs(1),
        )
        .await
        .unwrap();
        assert_eq!(local_store.due(i64::MAX).unwrap().len(), 1);
        remove_batch(b.id, &[node(1)], &coordinator, &local_store);
        assert!(local_store.due(i64::MAX).unwrap().is_empty());
        let _ = fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn an_unreachable_batchlog_node_fails_the_batch_as_a_batch_log_timeout() {
        let net = SimulatedNetwork::new(5);
        let (t1, _inbox1) = net.join(node(1), 64);
        let (_t2, _silent) = net.join(node(2), 64);
        let coordinator = Messenger::new(Arc::new(t1));
        let dir = temp("timeout");
        let local_store = BatchlogStore::open(&dir).unwrap();
        let err = store_batch(
            &batch(1),
            &[node(2)],
            &coordinator,
            &local_store,
            ConsistencyLevel::Quorum,
            Duration::from_millis(50),
        )
        .await
        .unwrap_err();
        assert!(matches!(
            err,
            WriteError::Timeout {
                write_type: WriteType::BatchLog,
                received: 0,
                block_for: 1,
                ..
            }
        ));
        let _ = fs::remove_dir_all(&dir);
    }
}
