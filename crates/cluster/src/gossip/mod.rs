//! Membership: who is in the cluster, what each node announces (status, tokens, location,
//! addresses, schema version) and who is up. A scuttlebutt-style exchange (`gossiper`) spreads
//! versioned per-node state; heartbeats feed a phi-accrual failure detector.

mod failure_detector;
mod gossiper;
mod message;
mod state;
#[cfg(test)]
mod tests;

pub use failure_detector::{FailureDetector, FailureDetectorConfig};
pub use gossiper::{GossipConfig, GossipError, GossipEvent, Gossiper};
pub use message::{Ack, Ack2, Digest, GossipDecodeError, Syn};
pub use state::{status, AppKey, EndpointState, Generation, Version, VersionedValue};
