//! Where data lives: the ring of tokens, the members' data centers and racks, replication
//! strategies, per-keyspace replica maps and token allocation for joining nodes. Everything here
//! is a pure function of an immutable ring snapshot, so placement is tested without a cluster.

mod allocation;
mod movement;
mod replication_map;
mod ring;
mod strategy;
#[cfg(test)]
mod testing;
mod topology;

pub use allocation::allocate_tokens;
pub use movement::{pending_replicas, range_moves, restore_moves, RangeMove, Restore};
pub use replication_map::ReplicationMap;
pub use ring::{DatacenterShape, Ring, RingError, Token, TokenRange, RING_SIZE};
pub use strategy::ReplicationStrategy;
pub use topology::{Location, Member, NodeId};
