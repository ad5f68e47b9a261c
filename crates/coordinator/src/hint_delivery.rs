//! Delivers stored hints to a replica that is back (Cassandra's `HintsDispatchExecutor`): the
//! hints are sent in order as mutations, each waiting for the replica's acknowledgement; a hint
//! that is not acknowledged stops the delivery and it and the rest stay for the next attempt.

use std::time::Duration;

use helenus_cluster::locator::NodeId;
use helenus_cluster::messaging::{Messenger, Verb};

use crate::hints::HintStore;

/// What one delivery attempt did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivered {
    pub sent: usize,
    /// Hints left because the replica stopped answering.
    pub remaining: usize,
}

/// Sends `target` its hints, each acknowledged within `timeout`.
pub async fn deliver_hints(
    store: &HintStore,
    target: NodeId,
    messenger: &Messenger,
    timeout: Duration,
) -> std::io::Result<Delivered> {
    let hints = store.read(target)?;
    let mut acknowledged = 0;
    for hint in &hints {
        let Ok((id, ack)) = messenger.request(target, Verb::MutationRequest, hint.mutation.clone())
        else {
            break;
        };
        match tokio::time::timeout(timeout, ack).await {
            Ok(Ok(reply)) if reply.verb == Verb::MutationResponse => acknowledged += 1,
            Ok(_) => break,
            Err(_) => {
                messenger.forget(id);
                break;
            }
        }
    }
    // Drop exactly the acknowledged prefix; anything appended meanwhile stays.
    let mut left = acknowledged;
    store.replay(target, |_| {
        if left == 0 {
            return false;
        }
        left -= 1;
        true
    })?;
    Ok(Delivered {
        sent: acknowledged,
        remaining: hints.len() - acknowledged,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::{serve_mutation, ApplyFuture, LocalWriter};
    use bytes::Bytes;
    use helenus_cluster::messaging::SimulatedNetwork;
    use helenus_types::ManualClock;
    use std::sync::{Arc, Mutex};
    use uuid::Uuid;

    fn node(n: u128) -> NodeId {
        NodeId(Uuid::from_u128(n))
    }

    #[derive(Default)]
    struct Applied(Mutex<Vec<Bytes>>);

    impl LocalWriter for Applied {
        fn apply<'a>(&'a self, m: &'a Bytes) -> ApplyFuture<'a> {
            self.0.lock().unwrap().push(m.clone());
            Box::pin(async { Ok(()) })
        }
    }

    #[tokio::test]
    async fn a_returning_replica_receives_its_hints_in_order_and_they_are_removed() {
        let dir =
            std::env::temp_dir().join(format!("helenus-hint-delivery-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = HintStore::open(&dir, Arc::new(ManualClock::new(0))).unwrap();
        for i in 0..5u8 {
            store.append(node(2), &[i]).unwrap();
        }
        let net = SimulatedNetwork::new(1);
        let (t1, mut inbox1) = net.join(node(1), 64);
        let coordinator = Messenger::new(Arc::new(t1));
        let pump = coordinator.clone();
        tokio::spawn(async move {
            while let Some(e) = inbox1.recv().await {
                pump.complete(e);
            }
        });
        let (t2, mut inbox2) = net.join(node(2), 64);
        let replica = Messenger::new(Arc::new(t2));
        let applied = Arc::new(Applied::default());
        let sink = applied.clone();
        tokio::spawn(async move {
            while let Some(e) = inbox2.recv().await {
                serve_mutation(&e, sink.as_ref(), &replica).await;
            }
        });
        let d = deliver_hints(&store, node(2), &coordinator, Duration::from_secs(2))
            .await
            .unwrap();
        assert_eq!(
            d,
            Delivered {
                sent: 5,
                remaining: 0
            }
        );
        let got: Vec<u8> = applied.0.lock().unwrap().iter().map(|b| b[0]).collect();
        assert_eq!(got, vec![0, 1, 2, 3, 4]);
        assert!(store.targets().unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_replica_that_stops_answering_keeps_the_rest() {
        let dir = std::env::temp_dir().join(format!("helenus-hint-stall-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = HintStore::open(&dir, Arc::new(ManualClock::new(0))).unwrap();
        for i in 0..3u8 {
            store.append(node(2), &[i]).unwrap();
        }
        let net = SimulatedNetwork::new(1);
        let (t1, _inbox1) = net.join(node(1), 64);
        let (_t2, _inbox2) = net.join(node(2), 64);
        let coordinator = Messenger::new(Arc::new(t1));
        let d = deliver_hints(&store, node(2), &coordinator, Duration::from_millis(50))
            .await
            .unwrap();
        assert_eq!(
            d,
            Delivered {
                sent: 0,
                remaining: 3
            }
        );
        assert_eq!(store.read(node(2)).unwrap().len(), 3);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
