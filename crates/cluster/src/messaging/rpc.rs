//! Requests and their responses over a `Transport`: each request gets an id, the response echoes
//! it, and the waiting side gets it back through a one-shot channel. Whoever reads the node's inbox
//! hands responses to `complete`; a request that is never answered is dropped by its waiter's
//! timeout (`forget`), so a lost message costs no memory.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::envelope::{flags, Envelope, Verb};
use super::{SendError, Transport};
use crate::locator::NodeId;

/// Sends requests and routes their responses back to the waiting caller.
#[derive(Clone)]
pub struct Messenger {
    transport: Arc<dyn Transport>,
    next_id: Arc<AtomicU64>,
    waiting: Arc<Mutex<HashMap<u64, oneshot::Sender<Envelope>>>>,
}

impl Messenger {
    pub fn new(transport: Arc<dyn Transport>) -> Self {
        Messenger {
            transport,
            next_id: Arc::new(AtomicU64::new(1)),
            waiting: Arc::default(),
        }
    }

    pub fn local(&self) -> NodeId {
        self.transport.local()
    }

    /// Sends a request; the receiver yields its response (or is dropped by `forget`).
    pub fn request(
        &self,
        to: NodeId,
        verb: Verb,
        payload: Bytes,
    ) -> Result<(u64, oneshot::Receiver<Envelope>), SendError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().insert(id, tx);
        let envelope = Envelope {
            verb,
            flags: 0,
            id,
            from: self.transport.local(),
            payload,
        };
        if let Err(e) = self.transport.send(to, envelope) {
            self.waiting.lock().remove(&id);
            return Err(e);
        }
        Ok((id, rx))
    }

    /// Answers `request` with `verb` and `payload`.
    pub fn respond(&self, request: &Envelope, verb: Verb, payload: Bytes) -> Result<(), SendError> {
        self.transport.send(
            request.from,
            Envelope {
                verb,
                flags: flags::RESPONSE,
                id: request.id,
                from: self.transport.local(),
                payload,
            },
        )
    }

    /// Sends a message that expects no answer.
    pub fn send_one_way(&self, to: NodeId, verb: Verb, payload: Bytes) -> Result<(), SendError> {
        self.transport.send(
            to,
            Envelope {
                verb,
                flags: 0,
                id: 0,
                from: self.transport.local(),
                payload,
            },
        )
    }

    /// Hands a response to its waiter. Returns it back if nobody waits (late or unknown).
    pub fn complete(&self, response: Envelope) -> Option<Envelope> {
        let waiter = self.waiting.lock().remove(&response.id);
        match waiter {
            Some(tx) => tx.send(response).err(),
            None => Some(response),
        }
    }

    /// Stops waiting for a request (its caller timed out).
    pub fn forget(&self, id: u64) {
        self.waiting.lock().remove(&id);
    }

    /// Requests still awaiting a response.
    pub fn outstanding(&self) -> usize {
        self.waiting.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messaging::SimulatedNetwork;
    use uuid::Uuid;

    fn node(n: u128) -> NodeId {
        NodeId(Uuid::from_u128(n))
    }

    #[tokio::test]
    async fn a_response_reaches_the_request_that_asked_for_it() {
        let net = SimulatedNetwork::new(1);
        let (ta, mut ra) = net.join(node(1), 16);
        let (tb, mut rb) = net.join(node(2), 16);
        let a = Messenger::new(Arc::new(ta));
        let b = Messenger::new(Arc::new(tb));
        let (_, first) = a
            .request(node(2), Verb::ReadRequest, Bytes::from_static(b"1"))
            .unwrap();
        let (_, second) = a
            .request(node(2), Verb::ReadRequest, Bytes::from_static(b"2"))
            .unwrap();
        // Answer in the opposite order.
        let r1 = rb.recv().await.unwrap();
        let r2 = rb.recv().await.unwrap();
        b.respond(&r2, Verb::ReadResponse, Bytes::from_static(b"two"))
            .unwrap();
        b.respond(&r1, Verb::ReadResponse, Bytes::from_static(b"one"))
            .unwrap();
        for _ in 0..2 {
            let resp = ra.recv().await.unwrap();
            assert!(resp.is_response());
            assert!(a.complete(resp).is_none());
        }
        assert_eq!(first.await.unwrap().payload, Bytes::from_static(b"one"));
        assert_eq!(second.await.unwrap().payload, Bytes::from_static(b"two"));
        assert_eq!(a.outstanding(), 0);
    }

    #[tokio::test]
    async fn a_forgotten_request_leaves_nothing_behind() {
        let net = SimulatedNetwork::new(1);
        let (ta, _ra) = net.join(node(1), 16);
        let (_tb, mut rb) = net.join(node(2), 16);
        let a = Messenger::new(Arc::new(ta));
        let (id, _rx) = a.request(node(2), Verb::ReadRequest, Bytes::new()).unwrap();
        assert_eq!(a.outstanding(), 1);
        a.forget(id);
        assert_eq!(a.outstanding(), 0);
        let late = rb.recv().await.unwrap();
        let response = Envelope {
            flags: flags::RESPONSE,
            ..late
        };
        assert!(
            a.complete(response).is_some(),
            "a late answer is handed back"
        );
    }
}
