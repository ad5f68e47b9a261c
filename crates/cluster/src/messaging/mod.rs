//! Internode messaging: versioned envelopes (`envelope`) and the `Transport` that carries them.
//! Cluster logic is written against the trait and tested on `SimulatedNetwork` (drops, delays,
//! partitions) before it runs over TCP between processes.

mod envelope;
mod rpc;
mod simulated;
mod tcp;

pub use envelope::{flags, Envelope, EnvelopeError, Verb, MAX_PAYLOAD_BYTES, MESSAGING_VERSION};
pub use rpc::Messenger;
pub use simulated::{SimulatedNetwork, SimulatedTransport};
pub use tcp::{AddressBook, TcpConfig, TcpTransport};

use crate::locator::NodeId;

/// Why a message could not be queued. A message that is queued may still be lost; senders learn of
/// that by timing out, as on a real network.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    #[error("the queue to {0} is full")]
    Backpressure(NodeId),
    #[error("no route to {0}")]
    Unreachable(NodeId),
}

/// Carries envelopes from this node to its peers.
pub trait Transport: Send + Sync {
    /// This node.
    fn local(&self) -> NodeId;
    /// Queues `envelope` for `to` without waiting for the peer.
    fn send(&self, to: NodeId, envelope: Envelope) -> Result<(), SendError>;
}
