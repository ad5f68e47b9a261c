//! Lightweight transactions across replicas: single-decree Paxos per partition, as Cassandra runs
//! it for `IF` conditions (prepare/promise, propose/accept, commit), with Paxos v2's shortcut of
//! reading the partition in the prepare round so the condition is checked against a quorum's
//! newest value without a separate read.
//!
//! - `ballot`: ordered, unique ballots from the injected clock.
//! - `acceptor`: the replica side, over a `PaxosStore` that makes its promises durable.
//! - `proposer`: the coordinator side, `cas`.
//! - `messages`: the payloads and their binary form.
//! - `checker`: a linearizability checker for compare-and-set histories (tests use it on real and
//!   simulated runs).

mod acceptor;
mod ballot;
pub mod checker;
mod messages;
mod proposer;
#[cfg(test)]
mod tests;

pub use acceptor::{Acceptor, AcceptorState, MemoryPaxosStore, PaxosStore};
pub use ballot::{Ballot, BallotGenerator};
pub use messages::{Commit, PaxosDecodeError, PaxosReply, PaxosRequest, Promise, ReadValue};
pub use proposer::{
    cas, cas_with, serve_paxos, CasOutcome, CasRequest, CurrentValue, PaxosError, PaxosVerbs,
    SharedAcceptor,
};
