//! Exchanges with every live peer or one chosen peer that schema and roles share: push a change
//! and wait (bounded) for the acknowledgements, or pull a peer's copy.

use super::ClusterNode;
use helenus_cluster::locator::NodeId;
use helenus_cluster::messaging::Verb;
use std::time::Duration;

impl ClusterNode {
    /// Sends `payload` as `verb` to every live peer and waits until each answered or `wait`
    /// passed (a change pushed before a statement returns: schema, roles).
    pub(super) async fn request_live_peers(
        &self,
        verb: Verb,
        payload: bytes::Bytes,
        wait: Duration,
    ) {
        let mut waiting = Vec::new();
        // A node that left (decommissioned, removed, replaced) stays "alive" until the failure
        // detector convicts it, some 20 s after it stopped answering: waiting for it would hold
        // every DDL statement and topology claim for the whole `wait`.
        let live = self
            .service
            .peers()
            .into_iter()
            .filter(|p| p.alive && !helenus_cluster::gossip::status::is_gone(&p.status));
        for peer in live {
            if let Ok(pending) = self.messenger.request(peer.host_id, verb, payload.clone()) {
                waiting.push(pending);
            }
        }
        let deadline = tokio::time::Instant::now() + wait;
        for (id, answer) in waiting {
            if tokio::time::timeout_at(deadline, answer).await.is_err() {
                self.messenger.forget(id);
            }
        }
    }

    /// Asks `peer` with `verb` (an empty payload) and returns its answer's payload when it
    /// came as `expect` within `wait` (a pull of schema or roles).
    pub(super) async fn pull_from(
        &self,
        peer: NodeId,
        verb: Verb,
        expect: Verb,
        wait: Duration,
    ) -> Option<bytes::Bytes> {
        let (id, answer) = self
            .messenger
            .request(peer, verb, bytes::Bytes::new())
            .ok()?;
        match tokio::time::timeout(wait, answer).await {
            Ok(Ok(reply)) if reply.verb == expect => Some(reply.payload),
            Ok(_) => None,
            Err(_) => {
                self.messenger.forget(id);
                None
            }
        }
    }
}
