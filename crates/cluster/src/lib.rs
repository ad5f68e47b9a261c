//! The cluster layer (see `../shared/design/CLUSTER.md`): ring and placement (`locator`), failure
//! detection and gossip (`gossip`), internode messaging (`messaging`), and a running member that
//! ties them together (`service`), and what a node remembers of itself across restarts
//! (`local_state`: host id, tokens, generation); Merkle trees for repair (`repair`); schema
//! versions compared through gossip and pulled on mismatch (`schema_sync`); stream sessions,
//! their progress and the outbound throttle (`streaming`).
//!
//! Rules: this crate never executes a client request and knows nothing of CQL or the protocol;
//! the coordinator asks it where replicas are and sends data-path messages through its transport.
//! Time comes from an injected `helenus_types::Clock`, so a simulated cluster controls it.

pub mod gossip;
pub mod local_state;
pub mod locator;
pub mod messaging;
pub mod repair;
pub mod schema_sync;
mod seeded;
pub mod service;
pub mod streaming;
