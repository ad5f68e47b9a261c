//! Ballots: a microsecond timestamp and the proposing node, compared in that order, so two
//! coordinators never issue equal ballots and a later attempt always outranks an earlier one.

use helenus_cluster::locator::NodeId;
use helenus_types::{SharedClock, WriteTimestamps};
use uuid::Uuid;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ballot {
    pub micros: i64,
    pub node: NodeId,
}

impl Ballot {
    /// Below every real ballot.
    pub const ZERO: Ballot = Ballot {
        micros: i64::MIN,
        node: NodeId(Uuid::nil()),
    };
}

/// Issues increasing ballots for one node, always above any ballot it has seen rejected.
#[derive(Debug)]
pub struct BallotGenerator {
    node: NodeId,
    micros: WriteTimestamps,
}

impl BallotGenerator {
    pub fn new(node: NodeId, clock: SharedClock) -> Self {
        BallotGenerator {
            node,
            micros: WriteTimestamps::new(clock),
        }
    }

    /// A ballot above every one issued or observed before.
    pub fn next(&self) -> Ballot {
        Ballot {
            micros: self.micros.next(),
            node: self.node,
        }
    }

    /// Records a ballot that outranked ours, so the next one is above it.
    pub fn observe(&self, seen: Ballot) {
        self.micros.observe(seen.micros);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use helenus_types::ManualClock;
    use std::sync::Arc;

    #[test]
    fn ballots_increase_and_jump_past_observed_ones() {
        let clock = Arc::new(ManualClock::new(100));
        let node = NodeId(Uuid::from_u128(1));
        let g = BallotGenerator::new(node, clock);
        let a = g.next();
        let b = g.next();
        assert!(b > a, "same clock reading, still increasing");
        g.observe(Ballot {
            micros: 10_000,
            node: NodeId(Uuid::from_u128(2)),
        });
        assert!(g.next().micros > 10_000);
        assert!(Ballot::ZERO < a);
    }
}
