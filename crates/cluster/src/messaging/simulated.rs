//! An in-memory network for testing cluster logic in one process (TiKV's `transport_simulate`):
//! links can be cut (partitions), messages dropped at a seeded rate and delayed by a random amount
//! (which also reorders them). The same seed gives the same drops, so a failing run replays.

use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::envelope::Envelope;
use super::{SendError, Transport};
use crate::locator::NodeId;

#[derive(Debug)]
struct Faults {
    cut: HashSet<(NodeId, NodeId)>,
    drop_per_million: u64,
    delay_min: Duration,
    delay_max: Duration,
    rng: u64,
}

#[derive(Debug, Default)]
struct Counters {
    delivered: AtomicU64,
    dropped: AtomicU64,
}

#[derive(Debug)]
struct Shared {
    inboxes: Mutex<HashMap<NodeId, mpsc::Sender<Envelope>>>,
    faults: Mutex<Faults>,
    counters: Counters,
}

/// The simulated network all nodes of a test share.
#[derive(Clone, Debug)]
pub struct SimulatedNetwork {
    shared: Arc<Shared>,
}

impl SimulatedNetwork {
    /// A network with no faults; `seed` drives drops and delays.
    pub fn new(seed: u64) -> Self {
        SimulatedNetwork {
            shared: Arc::new(Shared {
                inboxes: Mutex::new(HashMap::new()),
                faults: Mutex::new(Faults {
                    cut: HashSet::new(),
                    drop_per_million: 0,
                    delay_min: Duration::ZERO,
                    delay_max: Duration::ZERO,
                    rng: seed | 1,
                }),
                counters: Counters::default(),
            }),
        }
    }

    /// Connects a node; it receives its messages from the returned inbox (at most `capacity`
    /// queued: a full inbox is backpressure to the sender).
    pub fn join(
        &self,
        node: NodeId,
        capacity: usize,
    ) -> (SimulatedTransport, mpsc::Receiver<Envelope>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        self.shared.inboxes.lock().insert(node, tx);
        (
            SimulatedTransport {
                local: node,
                network: self.clone(),
            },
            rx,
        )
    }

    /// Removes a node as if its process died: messages to it vanish.
    pub fn leave(&self, node: NodeId) {
        self.shared.inboxes.lock().remove(&node);
    }

    /// Cuts every link between a node of `a` and a node of `b`, both directions.
    pub fn partition(&self, a: &[NodeId], b: &[NodeId]) {
        let mut faults = self.shared.faults.lock();
        for x in a {
            for y in b {
                faults.cut.insert((*x, *y));
                faults.cut.insert((*y, *x));
            }
        }
    }

    /// Restores every cut link.
    pub fn heal(&self) {
        self.shared.faults.lock().cut.clear();
    }

    /// Drops each message with this probability (0.0-1.0).
    pub fn set_drop_rate(&self, probability: f64) {
        self.shared.faults.lock().drop_per_million = (probability.clamp(0.0, 1.0) * 1e6) as u64;
    }

    /// Delays each message by a random time in `[min, max]`.
    pub fn set_delay(&self, min: Duration, max: Duration) {
        let mut faults = self.shared.faults.lock();
        faults.delay_min = min;
        faults.delay_max = max.max(min);
    }

    /// Messages handed to an inbox so far.
    pub fn delivered(&self) -> u64 {
        self.shared.counters.delivered.load(Ordering::Relaxed)
    }

    /// Messages lost to cuts, drops or departed nodes so far.
    pub fn dropped(&self) -> u64 {
        self.shared.counters.dropped.load(Ordering::Relaxed)
    }

    /// What happens to a message from `from` to `to`: `None` if it is lost, else its delay.
    fn fate(&self, from: NodeId, to: NodeId) -> Option<Duration> {
        let mut faults = self.shared.faults.lock();
        if faults.cut.contains(&(from, to)) {
            return None;
        }
        let roll = crate::seeded::next_u64(&mut faults.rng);
        if roll % 1_000_000 < faults.drop_per_million {
            return None;
        }
        let spread = faults
            .delay_max
            .saturating_sub(faults.delay_min)
            .as_micros() as u64;
        let extra = if spread == 0 {
            0
        } else {
            crate::seeded::next_u64(&mut faults.rng) % (spread + 1)
        };
        Some(faults.delay_min + Duration::from_micros(extra))
    }

    fn deliver(&self, to: NodeId, envelope: Envelope) -> Result<(), SendError> {
        let inbox = self.shared.inboxes.lock().get(&to).cloned();
        let Some(inbox) = inbox else {
            self.shared.counters.dropped.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        };
        match inbox.try_send(envelope) {
            Ok(()) => {
                self.shared
                    .counters
                    .delivered
                    .fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(mpsc::error::TrySendError::Full(_)) => Err(SendError::Backpressure(to)),
            Err(mpsc::error::TrySendError::Closed(_)) => {
                self.shared.counters.dropped.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
        }
    }
}

/// One node's handle on the simulated network.
#[derive(Clone, Debug)]
pub struct SimulatedTransport {
    local: NodeId,
    network: SimulatedNetwork,
}

impl Transport for SimulatedTransport {
    fn local(&self) -> NodeId {
        self.local
    }

    fn send(&self, to: NodeId, envelope: Envelope) -> Result<(), SendError> {
        let Some(delay) = self.network.fate(self.local, to) else {
            // Loss is silent on a real network too: the sender learns of it by timing out.
            self.network
                .shared
                .counters
                .dropped
                .fetch_add(1, Ordering::Relaxed);
            return Ok(());
        };
        if delay.is_zero() {
            return self.network.deliver(to, envelope);
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return self.network.deliver(to, envelope);
        };
        let network = self.network.clone();
        runtime.spawn(async move {
            tokio::time::sleep(delay).await;
            // A full inbox after the delay is a lost message, as a congested link would lose it.
            if network.deliver(to, envelope).is_err() {
                network
                    .shared
                    .counters
                    .dropped
                    .fetch_add(1, Ordering::Relaxed);
            }
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messaging::Verb;
    use bytes::Bytes;
    use uuid::Uuid;

    fn node(n: u128) -> NodeId {
        NodeId(Uuid::from_u128(n))
    }

    fn message(from: NodeId, id: u64) -> Envelope {
        Envelope {
            verb: Verb::MutationRequest,
            flags: 0,
            id,
            from,
            payload: Bytes::new(),
        }
    }

    #[tokio::test]
    async fn a_partition_stops_messages_across_it_until_healed() {
        let net = SimulatedNetwork::new(1);
        let (a, _ra) = net.join(node(1), 16);
        let (_b, mut rb) = net.join(node(2), 16);
        let (_c, mut rc) = net.join(node(3), 16);
        net.partition(&[node(1)], &[node(2)]);
        a.send(node(2), message(node(1), 1)).unwrap();
        a.send(node(3), message(node(1), 2)).unwrap();
        assert_eq!(rc.recv().await.map(|e| e.id), Some(2));
        assert!(rb.try_recv().is_err(), "the cut link lost it");
        assert_eq!(net.dropped(), 1);
        net.heal();
        a.send(node(2), message(node(1), 3)).unwrap();
        assert_eq!(rb.recv().await.map(|e| e.id), Some(3));
    }

    #[tokio::test]
    async fn drops_follow_the_seed() {
        let count = |seed| {
            let net = SimulatedNetwork::new(seed);
            let (a, _ra) = net.join(node(1), 4096);
            let (_b, _rb) = net.join(node(2), 4096);
            net.set_drop_rate(0.3);
            for i in 0..1000 {
                a.send(node(2), message(node(1), i)).unwrap();
            }
            (net.delivered(), net.dropped())
        };
        let (delivered, dropped) = count(7);
        assert_eq!(delivered + dropped, 1000);
        assert!((200..400).contains(&dropped), "{dropped}");
        assert_eq!(count(7), (delivered, dropped), "same seed, same losses");
    }

    #[tokio::test]
    async fn delays_reorder_messages() {
        let net = SimulatedNetwork::new(3);
        let (a, _ra) = net.join(node(1), 64);
        let (_b, mut rb) = net.join(node(2), 64);
        net.set_delay(Duration::from_millis(1), Duration::from_millis(50));
        for i in 0..20 {
            a.send(node(2), message(node(1), i)).unwrap();
        }
        let mut order = Vec::new();
        for _ in 0..20 {
            if let Some(e) = rb.recv().await {
                order.push(e.id);
            }
        }
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..20).collect::<Vec<_>>(), "nothing lost");
        assert_ne!(order, sorted, "random delays reorder");
    }

    #[tokio::test]
    async fn a_full_inbox_is_backpressure_and_a_departed_node_loses_messages() {
        let net = SimulatedNetwork::new(5);
        let (a, _ra) = net.join(node(1), 1);
        let (_b, _rb) = net.join(node(2), 1);
        a.send(node(2), message(node(1), 1)).unwrap();
        assert_eq!(
            a.send(node(2), message(node(1), 2)),
            Err(SendError::Backpressure(node(2)))
        );
        net.leave(node(2));
        a.send(node(2), message(node(1), 3)).unwrap();
        assert_eq!(net.dropped(), 1);
    }
}
