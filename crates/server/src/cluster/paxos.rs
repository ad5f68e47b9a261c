//! Lightweight transactions across replicas: the coordinator's Paxos (`helenus_coordinator::
//! paxos`) over this node's engine. A Paxos key is a table id and a partition key; an acceptor's
//! value is the partition as it stands here (its unfiltered data), and an update is the
//! statement's mutations in the frozen encoding, applied to the engine when committed.
//!
//! The condition is checked against the union of what the quorum holds and the newest commit
//! among its promises, resolved with the engine's reconcile rules: values are partitions, not
//! registers, so no one replica's read is "the" value.
//!
//! Promises must survive a crash (an acceptor that forgets one can let two values be chosen):
//! each state change is appended to `system/paxos.log`, synced before the answer leaves when
//! the commitlog is synced per write (batch/group), and the log is replayed at start. It is
//! never compacted yet: it grows with every LWT round.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use helenus_coordinator::paxos::{
    AcceptorState, Ballot, Commit, PaxosReply, PaxosStore, Promise, ReadValue,
};
use helenus_storage as st;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

/// The acceptor state of every partition this node has taken part in an LWT on.
pub struct EnginePaxosStore {
    engine: Arc<st::Engine>,
    clock: helenus_types::SharedClock,
    /// Sync each state change before answering: as durable as the commitlog, which Cassandra's
    /// `system.paxos` writes go through (periodic mode leaves a window there too).
    sync: bool,
    states: Mutex<HashMap<Bytes, AcceptorState>>,
    log: Mutex<std::fs::File>,
}

/// `table id (16) ++ partition key`.
pub fn paxos_key(table: &st::TableId, partition_key: &[u8]) -> Bytes {
    let mut k = BytesMut::with_capacity(16 + partition_key.len());
    k.put_slice(table);
    k.put_slice(partition_key);
    k.freeze()
}

fn split_key(key: &[u8]) -> Option<(st::TableId, &[u8])> {
    let (table, partition) = key.split_at_checked(16)?;
    Some((table.try_into().ok()?, partition))
}

pub(super) fn encode_state(state: &AcceptorState) -> Bytes {
    // The promise reply carries exactly an acceptor's state: its codec is reused.
    PaxosReply::Promise(Promise {
        promised: true,
        highest: state.promised,
        accepted: state.accepted.clone(),
        committed: state.committed.clone(),
        read: ReadValue {
            value: None,
            written: Ballot::ZERO,
        },
    })
    .encode()
}

pub(super) fn decode_state(bytes: Bytes) -> Option<AcceptorState> {
    match PaxosReply::decode(bytes).ok()? {
        PaxosReply::Promise(p) => Some(AcceptorState {
            promised: p.highest,
            accepted: p.accepted,
            committed: p.committed,
        }),
        _ => None,
    }
}

impl EnginePaxosStore {
    /// Opens the log under `dir`, replaying it; a torn last record (a crash mid-append) is
    /// ignored, since its answer never left.
    pub fn open(
        dir: &Path,
        engine: Arc<st::Engine>,
        clock: helenus_types::SharedClock,
        sync: bool,
    ) -> std::io::Result<EnginePaxosStore> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("paxos.log");
        let mut states = HashMap::new();
        if let Ok(mut f) = std::fs::File::open(&path) {
            let mut all = Vec::new();
            f.read_to_end(&mut all)?;
            let mut buf = Bytes::from(all);
            while buf.remaining() >= 8 {
                let key_len = buf.get_u32() as usize;
                let state_len = buf.get_u32() as usize;
                if buf.remaining() < key_len + state_len {
                    break;
                }
                let key = buf.split_to(key_len);
                if let Some(state) = decode_state(buf.split_to(state_len)) {
                    states.insert(key, state);
                }
            }
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        Ok(EnginePaxosStore {
            engine,
            clock,
            sync,
            states: Mutex::new(states),
            log: Mutex::new(log),
        })
    }

    fn partition_read(&self, key: &[u8]) -> Option<Bytes> {
        let (table, partition) = split_key(key)?;
        let q = whole_partition(partition, self.clock.wall_secs());
        let result = self.engine.read_unfiltered(table, &q, u64::MAX).ok()?;
        Some(helenus_mutation::encode_mutations(&result.partitions))
    }
}

/// A read of every row of one partition, TTLs expiring at `now_s`.
pub fn whole_partition(partition_key: &[u8], now_s: i64) -> st::ReadQuery {
    st::ReadQuery::whole_partition(
        Bytes::copy_from_slice(partition_key),
        helenus_types::murmur3_token(partition_key),
        now_s,
    )
}

impl PaxosStore for EnginePaxosStore {
    fn load(&self, key: &[u8]) -> AcceptorState {
        self.states.lock().get(key).cloned().unwrap_or_default()
    }

    fn save(&self, key: &[u8], state: &AcceptorState) {
        let encoded = encode_state(state);
        let mut record = BytesMut::with_capacity(8 + key.len() + encoded.len());
        record.put_u32(u32::try_from(key.len()).unwrap_or(u32::MAX));
        record.put_u32(u32::try_from(encoded.len()).unwrap_or(u32::MAX));
        record.put_slice(key);
        record.put_slice(&encoded);
        {
            let mut log = self.log.lock();
            let written =
                log.write_all(&record).and_then(
                    |()| {
                        if self.sync {
                            log.sync_data()
                        } else {
                            Ok(())
                        }
                    },
                );
            if let Err(e) = written {
                // The promise is kept in memory; a crash now could forget it.
                tracing::error!(error = %e, "paxos state not made durable");
            }
        }
        self.states
            .lock()
            .insert(Bytes::copy_from_slice(key), state.clone());
    }

    fn read(&self, key: &[u8]) -> ReadValue {
        let written = self.load(key).committed.map_or(Ballot::ZERO, |c| c.ballot);
        ReadValue {
            value: self.partition_read(key),
            written,
        }
    }

    fn apply(&self, _key: &[u8], commit: &Commit) {
        let Ok(mutations) = helenus_mutation::decode_mutations(commit.update.clone()) else {
            tracing::error!("committed paxos update not understood");
            return;
        };
        // Acceptors are synchronous; the engine's write waits for its commitlog.
        let applied = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current()
                .block_on(crate::proxy::apply_locally(&self.engine, mutations))
        });
        if let Err(e) = applied {
            tracing::error!(error = %e, "committed paxos update not applied");
        }
    }
}

/// The value a condition sees: every granted read and the newest commit, as one union of
/// mutations (the engine's reconcile rules pick the winners when it is resolved).
pub fn union_current(granted: &[&Promise], latest_commit: Option<&Commit>) -> Option<Bytes> {
    let mut all = Vec::new();
    for p in granted {
        if let Some(v) = &p.read.value {
            if let Ok(ms) = helenus_mutation::decode_mutations(v.clone()) {
                all.extend(ms);
            }
        }
    }
    if let Some(c) = latest_commit {
        if let Ok(ms) = helenus_mutation::decode_mutations(c.update.clone()) {
            all.extend(ms);
        }
    }
    Some(helenus_mutation::encode_mutations(&all))
}
