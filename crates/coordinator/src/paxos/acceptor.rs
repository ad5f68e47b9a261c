//! The replica side of Paxos: promise to ignore lower ballots, accept proposals at or above the
//! promise, and apply commits. Every change of state is saved before the answer leaves, since an
//! acceptor that forgets a promise in a crash can let two values be chosen.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;

use super::ballot::Ballot;
use super::messages::{Commit, PaxosReply, PaxosRequest, Promise, ReadValue};

/// What an acceptor remembers for one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcceptorState {
    pub promised: Ballot,
    pub accepted: Option<Commit>,
    pub committed: Option<Commit>,
}

impl Default for AcceptorState {
    fn default() -> Self {
        AcceptorState {
            promised: Ballot::ZERO,
            accepted: None,
            committed: None,
        }
    }
}

/// Where an acceptor keeps its state and the partition's data.
pub trait PaxosStore: Send + Sync {
    fn load(&self, key: &[u8]) -> AcceptorState;
    /// Must be durable when it returns.
    fn save(&self, key: &[u8], state: &AcceptorState);
    /// The partition's current value here.
    fn read(&self, key: &[u8]) -> ReadValue;
    /// Writes a decided update into the partition (idempotent; older ballots lose).
    fn apply(&self, key: &[u8], commit: &Commit);
}

/// An in-memory store whose data is a register per key (the update is the new value). It
/// survives a simulated restart by keeping the same `Arc`.
#[derive(Debug, Default)]
pub struct MemoryPaxosStore {
    states: Mutex<HashMap<Bytes, AcceptorState>>,
    data: Mutex<HashMap<Bytes, (Bytes, Ballot)>>,
}

impl PaxosStore for MemoryPaxosStore {
    fn load(&self, key: &[u8]) -> AcceptorState {
        self.states.lock().get(key).cloned().unwrap_or_default()
    }

    fn save(&self, key: &[u8], state: &AcceptorState) {
        self.states
            .lock()
            .insert(Bytes::copy_from_slice(key), state.clone());
    }

    fn read(&self, key: &[u8]) -> ReadValue {
        match self.data.lock().get(key) {
            Some((value, written)) => ReadValue {
                value: Some(value.clone()),
                written: *written,
            },
            None => ReadValue {
                value: None,
                written: Ballot::ZERO,
            },
        }
    }

    fn apply(&self, key: &[u8], commit: &Commit) {
        let mut data = self.data.lock();
        let newer = data
            .get(key)
            .is_none_or(|(_, written)| commit.ballot > *written);
        if newer {
            data.insert(
                Bytes::copy_from_slice(key),
                (commit.update.clone(), commit.ballot),
            );
        }
    }
}

/// One replica's acceptor.
pub struct Acceptor {
    store: Arc<dyn PaxosStore>,
    /// Serialises load-modify-save per acceptor (contention is per partition and LWTs are rare).
    serial: Mutex<()>,
}

impl Acceptor {
    pub fn new(store: Arc<dyn PaxosStore>) -> Self {
        Acceptor {
            store,
            serial: Mutex::new(()),
        }
    }

    pub fn handle(&self, request: &PaxosRequest) -> PaxosReply {
        let _one_at_a_time = self.serial.lock();
        match request {
            PaxosRequest::Prepare { key, ballot } => self.prepare(key, *ballot),
            PaxosRequest::Propose { key, proposal } => self.propose(key, proposal),
            PaxosRequest::Commit { key, commit } => self.commit(key, commit),
        }
    }

    fn prepare(&self, key: &[u8], ballot: Ballot) -> PaxosReply {
        let mut state = self.store.load(key);
        let promised = ballot > state.promised;
        if promised {
            state.promised = ballot;
            self.store.save(key, &state);
        }
        PaxosReply::Promise(Promise {
            promised,
            highest: state.promised,
            accepted: state.accepted,
            committed: state.committed,
            read: self.store.read(key),
        })
    }

    fn propose(&self, key: &[u8], proposal: &Commit) -> PaxosReply {
        let mut state = self.store.load(key);
        if proposal.ballot < state.promised {
            return PaxosReply::Accepted {
                ok: false,
                highest: state.promised,
            };
        }
        state.promised = proposal.ballot;
        state.accepted = Some(proposal.clone());
        self.store.save(key, &state);
        PaxosReply::Accepted {
            ok: true,
            highest: proposal.ballot,
        }
    }

    fn commit(&self, key: &[u8], commit: &Commit) -> PaxosReply {
        self.store.apply(key, commit);
        let mut state = self.store.load(key);
        if state
            .committed
            .as_ref()
            .is_none_or(|c| commit.ballot > c.ballot)
        {
            state.committed = Some(commit.clone());
        }
        if state
            .accepted
            .as_ref()
            .is_some_and(|a| a.ballot <= commit.ballot)
        {
            state.accepted = None;
        }
        self.store.save(key, &state);
        PaxosReply::Committed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use helenus_cluster::locator::NodeId;
    use uuid::Uuid;

    fn ballot(m: i64) -> Ballot {
        Ballot {
            micros: m,
            node: NodeId(Uuid::from_u128(1)),
        }
    }

    fn key() -> Bytes {
        Bytes::from_static(b"k")
    }

    #[test]
    fn a_promise_refuses_lower_ballots_for_prepare_and_propose() {
        let a = Acceptor::new(Arc::new(MemoryPaxosStore::default()));
        let PaxosReply::Promise(p) = a.handle(&PaxosRequest::Prepare {
            key: key(),
            ballot: ballot(5),
        }) else {
            panic!("not a promise")
        };
        assert!(p.promised);
        let PaxosReply::Promise(p) = a.handle(&PaxosRequest::Prepare {
            key: key(),
            ballot: ballot(4),
        }) else {
            panic!("not a promise")
        };
        assert!(!p.promised);
        assert_eq!(p.highest, ballot(5));
        let low = Commit {
            ballot: ballot(3),
            update: Bytes::from_static(b"x"),
        };
        assert_eq!(
            a.handle(&PaxosRequest::Propose {
                key: key(),
                proposal: low
            }),
            PaxosReply::Accepted {
                ok: false,
                highest: ballot(5)
            }
        );
    }

    #[test]
    fn an_accepted_proposal_is_reported_until_committed() {
        let a = Acceptor::new(Arc::new(MemoryPaxosStore::default()));
        let proposal = Commit {
            ballot: ballot(5),
            update: Bytes::from_static(b"v1"),
        };
        a.handle(&PaxosRequest::Prepare {
            key: key(),
            ballot: ballot(5),
        });
        a.handle(&PaxosRequest::Propose {
            key: key(),
            proposal: proposal.clone(),
        });
        let PaxosReply::Promise(p) = a.handle(&PaxosRequest::Prepare {
            key: key(),
            ballot: ballot(6),
        }) else {
            panic!("not a promise")
        };
        assert_eq!(p.accepted, Some(proposal.clone()), "in progress");
        a.handle(&PaxosRequest::Commit {
            key: key(),
            commit: proposal.clone(),
        });
        let PaxosReply::Promise(p) = a.handle(&PaxosRequest::Prepare {
            key: key(),
            ballot: ballot(7),
        }) else {
            panic!("not a promise")
        };
        assert_eq!(p.accepted, None);
        assert_eq!(p.committed, Some(proposal));
        assert_eq!(p.read.value, Some(Bytes::from_static(b"v1")));
    }
}
