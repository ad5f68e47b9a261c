//! Consistency levels and how many replicas each needs (Cassandra's `ConsistencyLevel`).

use std::fmt;

use helenus_cluster::locator::{ReplicationStrategy, Ring};

/// A request's consistency level; the discriminants are the native protocol's codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConsistencyLevel {
    Any = 0x0000,
    One = 0x0001,
    Two = 0x0002,
    Three = 0x0003,
    Quorum = 0x0004,
    All = 0x0005,
    LocalQuorum = 0x0006,
    EachQuorum = 0x0007,
    Serial = 0x0008,
    LocalSerial = 0x0009,
    LocalOne = 0x000A,
}

/// A level that cannot be used for this kind of request; the message is Cassandra's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidConsistency(pub String);

impl ConsistencyLevel {
    pub fn from_code(code: u16) -> Option<ConsistencyLevel> {
        use ConsistencyLevel::*;
        Some(match code {
            0x0000 => Any,
            0x0001 => One,
            0x0002 => Two,
            0x0003 => Three,
            0x0004 => Quorum,
            0x0005 => All,
            0x0006 => LocalQuorum,
            0x0007 => EachQuorum,
            0x0008 => Serial,
            0x0009 => LocalSerial,
            0x000A => LocalOne,
            _ => return None,
        })
    }

    pub fn code(self) -> u16 {
        self as u16
    }

    /// The name Cassandra prints in messages (`LOCAL_QUORUM`).
    pub fn name(self) -> &'static str {
        use ConsistencyLevel::*;
        match self {
            Any => "ANY",
            One => "ONE",
            Two => "TWO",
            Three => "THREE",
            Quorum => "QUORUM",
            All => "ALL",
            LocalQuorum => "LOCAL_QUORUM",
            EachQuorum => "EACH_QUORUM",
            Serial => "SERIAL",
            LocalSerial => "LOCAL_SERIAL",
            LocalOne => "LOCAL_ONE",
        }
    }

    /// Counts only replicas in the coordinator's data center.
    pub fn is_datacenter_local(self) -> bool {
        matches!(
            self,
            ConsistencyLevel::LocalQuorum
                | ConsistencyLevel::LocalSerial
                | ConsistencyLevel::LocalOne
        )
    }

    pub fn is_serial(self) -> bool {
        matches!(
            self,
            ConsistencyLevel::Serial | ConsistencyLevel::LocalSerial
        )
    }

    /// Replies needed, before pending replicas are counted (Cassandra's `blockFor`).
    pub fn block_for(self, strategy: &ReplicationStrategy, ring: &Ring, local_dc: &str) -> usize {
        use ConsistencyLevel::*;
        match self {
            One | LocalOne | Any => 1,
            Two => 2,
            Three => 3,
            Quorum | Serial => quorum_for(strategy, ring),
            All => strategy.total_replication_factor(ring),
            LocalQuorum | LocalSerial => local_quorum_for(strategy, ring, local_dc),
            EachQuorum => match strategy {
                ReplicationStrategy::NetworkTopology { datacenters } => datacenters
                    .keys()
                    .map(|dc| local_quorum_for(strategy, ring, dc))
                    .sum(),
                _ => quorum_for(strategy, ring),
            },
        }
    }

    /// Acknowledgements a write needs: `block_for` plus the pending replicas that count toward
    /// this level (`pending_local` of them in the coordinator's DC), so a node joining the ring
    /// cannot make a level weaker while ranges move.
    pub fn block_for_write(
        self,
        strategy: &ReplicationStrategy,
        ring: &Ring,
        local_dc: &str,
        pending: usize,
        pending_local: usize,
    ) -> usize {
        let base = self.block_for(strategy, ring, local_dc);
        match self {
            ConsistencyLevel::Any => base,
            l if l.is_datacenter_local() => base + pending_local,
            _ => base + pending,
        }
    }

    pub fn validate_for_read(self) -> Result<(), InvalidConsistency> {
        if self == ConsistencyLevel::Any {
            return Err(InvalidConsistency(
                "ANY ConsistencyLevel is only supported for writes".into(),
            ));
        }
        Ok(())
    }

    pub fn validate_for_write(self) -> Result<(), InvalidConsistency> {
        if self.is_serial() {
            return Err(InvalidConsistency(
                "You must use conditional updates for serializable writes".into(),
            ));
        }
        Ok(())
    }

    /// The serial level of a conditional update.
    pub fn validate_for_cas(self) -> Result<(), InvalidConsistency> {
        if !self.is_serial() {
            return Err(InvalidConsistency(
                "Invalid consistency for conditional update. Must be one of SERIAL or LOCAL_SERIAL"
                    .into(),
            ));
        }
        Ok(())
    }

    /// The commit level of a conditional update.
    pub fn validate_for_cas_commit(
        self,
        strategy: &ReplicationStrategy,
    ) -> Result<(), InvalidConsistency> {
        match self {
            ConsistencyLevel::EachQuorum => require_network_topology(self, strategy),
            l if l.is_serial() => Err(InvalidConsistency(format!(
                "{l} is not supported as conditional update commit consistency. Use ANY if you mean \"make sure it is accepted but I don't care how many replicas commit it for non-SERIAL reads\""
            ))),
            _ => Ok(()),
        }
    }

    pub fn validate_counter_for_write(self, table: &str) -> Result<(), InvalidConsistency> {
        if self == ConsistencyLevel::Any {
            return Err(InvalidConsistency(format!(
                "Consistency level ANY is not yet supported for counter table {table}"
            )));
        }
        if self.is_serial() {
            return Err(InvalidConsistency(
                "Counter operations are inherently non-serializable".into(),
            ));
        }
        Ok(())
    }
}

impl fmt::Display for ConsistencyLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn require_network_topology(
    level: ConsistencyLevel,
    strategy: &ReplicationStrategy,
) -> Result<(), InvalidConsistency> {
    if matches!(strategy, ReplicationStrategy::NetworkTopology { .. }) {
        return Ok(());
    }
    Err(InvalidConsistency(format!(
        "consistency level {level} not compatible with replication strategy ({})",
        strategy_class(strategy)
    )))
}

/// The Java class name Cassandra prints for a strategy.
pub fn strategy_class(strategy: &ReplicationStrategy) -> &'static str {
    match strategy {
        ReplicationStrategy::Local => "org.apache.cassandra.locator.LocalStrategy",
        ReplicationStrategy::Simple { .. } => "org.apache.cassandra.locator.SimpleStrategy",
        ReplicationStrategy::NetworkTopology { .. } => {
            "org.apache.cassandra.locator.NetworkTopologyStrategy"
        }
        ReplicationStrategy::Everywhere => "org.apache.cassandra.locator.EverywhereStrategy",
    }
}

/// A majority of all replicas.
pub fn quorum_for(strategy: &ReplicationStrategy, ring: &Ring) -> usize {
    strategy.total_replication_factor(ring) / 2 + 1
}

/// A majority of one data center's replicas (of all of them unless the strategy is per-DC).
pub fn local_quorum_for(strategy: &ReplicationStrategy, ring: &Ring, dc: &str) -> usize {
    match strategy {
        ReplicationStrategy::NetworkTopology { .. } => {
            strategy.replication_factor_in(ring, dc) / 2 + 1
        }
        _ => quorum_for(strategy, ring),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ConsistencyLevel::*;

    fn nts() -> ReplicationStrategy {
        ReplicationStrategy::NetworkTopology {
            datacenters: [("dc1".to_string(), 3), ("dc2".to_string(), 2)].into(),
        }
    }

    #[test]
    fn block_for_matches_cassandra() {
        let ring = Ring::default();
        let rf3 = ReplicationStrategy::Simple {
            replication_factor: 3,
        };
        let cases = [
            (One, 1),
            (Two, 2),
            (Three, 3),
            (Quorum, 2),
            (All, 3),
            (LocalQuorum, 2),
            (EachQuorum, 2),
            (Serial, 2),
            (LocalOne, 1),
            (Any, 1),
        ];
        for (cl, want) in cases {
            assert_eq!(
                cl.block_for(&rf3, &ring, "dc1"),
                want,
                "{cl} at SimpleStrategy RF 3"
            );
        }
        // dc1: 3, dc2: 2 -> 5 replicas.
        let s = nts();
        assert_eq!(Quorum.block_for(&s, &ring, "dc1"), 3);
        assert_eq!(All.block_for(&s, &ring, "dc1"), 5);
        assert_eq!(LocalQuorum.block_for(&s, &ring, "dc1"), 2);
        assert_eq!(LocalQuorum.block_for(&s, &ring, "dc2"), 2);
        assert_eq!(EachQuorum.block_for(&s, &ring, "dc2"), 4);
        assert_eq!(
            LocalSerial.block_for(&s, &ring, "dc3"),
            1,
            "a DC with no replicas"
        );
    }

    #[test]
    fn pending_replicas_raise_the_write_requirement() {
        let ring = Ring::default();
        let s = nts();
        assert_eq!(Quorum.block_for_write(&s, &ring, "dc1", 1, 1), 4);
        assert_eq!(LocalQuorum.block_for_write(&s, &ring, "dc1", 2, 1), 3);
        assert_eq!(Any.block_for_write(&s, &ring, "dc1", 2, 1), 1);
    }

    #[test]
    fn levels_are_refused_where_cassandra_refuses_them() {
        assert_eq!(
            Any.validate_for_read().unwrap_err().0,
            "ANY ConsistencyLevel is only supported for writes"
        );
        assert!(Serial.validate_for_write().is_err());
        assert!(Quorum.validate_for_cas().is_err());
        assert!(LocalSerial.validate_for_cas().is_ok());
        let simple = ReplicationStrategy::Simple {
            replication_factor: 1,
        };
        assert_eq!(
            EachQuorum.validate_for_cas_commit(&simple).unwrap_err().0,
            "consistency level EACH_QUORUM not compatible with replication strategy (org.apache.cassandra.locator.SimpleStrategy)"
        );
        assert!(Serial
            .validate_for_cas_commit(&simple)
            .unwrap_err()
            .0
            .starts_with("SERIAL is not supported"));
        assert!(Any
            .validate_counter_for_write("c")
            .unwrap_err()
            .0
            .ends_with("counter table c"));
    }

    #[test]
    fn codes_round_trip() {
        for code in 0..=0x0Bu16 {
            if let Some(cl) = ConsistencyLevel::from_code(code) {
                assert_eq!(cl.code(), code);
            }
        }
        assert_eq!(ConsistencyLevel::from_code(0x0B), None);
    }
}
