//! The coordinator (Cassandra's `StorageProxy`/`ReplicaPlans`, see `../shared/design/CLUSTER.md`):
//! how many replicas a consistency level needs (`consistency`) and which replicas a read or write
//! contacts, or why it cannot (`replica_plan`); the write and read paths across replicas (`write`,
//! `read`: digests, blocking read repair, speculative retry), range scans split by owner (`range`) and the
//! hints kept for replicas that missed a write (`hints`, `hint_delivery`); logged batches made
//! all-or-nothing by a batchlog on other nodes (`batchlog`); lightweight transactions across replicas
//! (`paxos`).
//!
//! Rules: the coordinator is the only crate that sends or receives data-path internode messages;
//! it asks `helenus-cluster` where replicas are and who is alive, and never parses CQL. Errors are
//! typed (`Unavailable` keeps the level, required and alive counts) so the server maps them to
//! protocol errors exactly as Cassandra reports them.

pub mod batchlog;
pub mod consistency;
pub mod hint_delivery;
pub mod hints;
pub mod paxos;
pub mod range;
pub mod read;
pub mod replica_plan;
pub mod speculation;
pub mod write;

pub use consistency::{ConsistencyLevel, InvalidConsistency};
pub use replica_plan::{plan_read, plan_write, LiveReplicas, ReadPlan, Unavailable, WritePlan};
pub use write::{
    write, ApplyFuture, HintSink, LocalWriter, ReplicaWriteError, WriteError, WriteType,
};
