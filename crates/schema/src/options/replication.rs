//! Keyspace replication (`WITH replication = {...}`) as a type: the strategy with its replication
//! factors, which is what placement needs, next to the option map as `system_schema.keyspaces`
//! stores it.

use super::OptionsError;
use std::collections::BTreeMap;

const LOCATOR_PACKAGE: &str = "org.apache.cassandra.locator.";
pub const SIMPLE_STRATEGY_CLASS: &str = "org.apache.cassandra.locator.SimpleStrategy";
pub const NETWORK_TOPOLOGY_STRATEGY_CLASS: &str =
    "org.apache.cassandra.locator.NetworkTopologyStrategy";
pub const LOCAL_STRATEGY_CLASS: &str = "org.apache.cassandra.locator.LocalStrategy";
pub const EVERYWHERE_STRATEGY_CLASS: &str = "org.apache.cassandra.locator.EverywhereStrategy";

/// Cassandra's `default_keyspace_rf`: the factor a strategy gets when the statement names none.
pub const DEFAULT_KEYSPACE_RF: u32 = 1;

/// How a keyspace's data is placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplicationStrategy {
    /// `replication_factor` replicas on consecutive ring owners, ignoring datacenters.
    Simple { replication_factor: u32 },
    /// Replicas per datacenter.
    NetworkTopology { datacenters: BTreeMap<String, u32> },
    /// The node's own copy only (the local system keyspaces).
    Local,
    /// A copy on every node.
    Everywhere,
}

/// A keyspace's replication: the typed strategy and the option map it was read from, kept so that
/// `system_schema.keyspaces` and DESCRIBE show exactly what was stored (e.g. `'03'` stays `'03'`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicationParams {
    pub strategy: ReplicationStrategy,
    options: BTreeMap<String, String>,
}

impl ReplicationParams {
    /// The replication of the local system keyspaces and the virtual keyspaces.
    pub fn local() -> Self {
        ReplicationParams {
            strategy: ReplicationStrategy::Local,
            options: BTreeMap::from([("class".to_string(), LOCAL_STRATEGY_CLASS.to_string())]),
        }
    }

    /// Reads and validates the map a CQL statement gave, as Cassandra 5.0 does: short class
    /// names are expanded, `SimpleStrategy` gets [`DEFAULT_KEYSPACE_RF`] when it names no factor,
    /// and a bare `replication_factor` for `NetworkTopologyStrategy` applies to every datacenter in
    /// `datacenters` (the ones this cluster knows).
    pub fn from_cql(
        mut options: BTreeMap<String, String>,
        datacenters: &[&str],
    ) -> Result<Self, OptionsError> {
        let class = options
            .remove("class")
            .ok_or(OptionsError::MissingReplicationClass)?;
        let short = class.rsplit('.').next().unwrap_or(&class).to_string();
        let (strategy, full) = match short.as_str() {
            "SimpleStrategy" => (simple_from_cql(&mut options)?, SIMPLE_STRATEGY_CLASS),
            "NetworkTopologyStrategy" => (
                network_topology_from_cql(&mut options, datacenters)?,
                NETWORK_TOPOLOGY_STRATEGY_CLASS,
            ),
            "LocalStrategy" | "EverywhereStrategy" => return Err(OptionsError::ReservedStrategy),
            _ => return Err(OptionsError::UnknownReplicationClass(short)),
        };
        options.insert("class".into(), full.into());
        Ok(ReplicationParams { strategy, options })
    }

    /// Reads a stored map (validated when it was created, or recorded from Cassandra for the
    /// system keyspaces). A factor that does not parse counts as 0 and an unknown class as
    /// `LocalStrategy`, so a damaged entry keeps its data on this node rather than failing.
    pub fn from_stored(options: &BTreeMap<String, String>) -> Self {
        let class = options.get("class").map(String::as_str).unwrap_or_default();
        let factor = |v: &String| v.parse().unwrap_or(0);
        let strategy = match class.strip_prefix(LOCATOR_PACKAGE).unwrap_or(class) {
            "SimpleStrategy" => ReplicationStrategy::Simple {
                replication_factor: options.get("replication_factor").map_or(0, factor),
            },
            "NetworkTopologyStrategy" => ReplicationStrategy::NetworkTopology {
                datacenters: options
                    .iter()
                    .filter(|(k, _)| k.as_str() != "class")
                    .map(|(dc, rf)| (dc.clone(), factor(rf)))
                    .collect(),
            },
            "EverywhereStrategy" => ReplicationStrategy::Everywhere,
            _ => ReplicationStrategy::Local,
        };
        ReplicationParams {
            strategy,
            options: options.clone(),
        }
    }

    /// The option map as `system_schema.keyspaces.replication` stores it.
    pub fn options(&self) -> &BTreeMap<String, String> {
        &self.options
    }

    pub fn into_options(self) -> BTreeMap<String, String> {
        self.options
    }

    /// How many replicas `datacenter` holds (`None` for strategies that ignore datacenters).
    pub fn replication_factor_in(&self, datacenter: &str) -> Option<u32> {
        match &self.strategy {
            ReplicationStrategy::NetworkTopology { datacenters } => {
                Some(datacenters.get(datacenter).copied().unwrap_or(0))
            }
            _ => None,
        }
    }
}

/// The class name without Cassandra's package, as DESCRIBE prints it.
pub fn short_replication_class(class: &str) -> &str {
    class.strip_prefix(LOCATOR_PACKAGE).unwrap_or(class)
}

fn simple_from_cql(
    options: &mut BTreeMap<String, String>,
) -> Result<ReplicationStrategy, OptionsError> {
    let rf = options
        .entry("replication_factor".to_string())
        .or_insert_with(|| DEFAULT_KEYSPACE_RF.to_string());
    let replication_factor = rf
        .parse::<u32>()
        .map_err(|_| OptionsError::SimpleReplicationFactor(rf.clone()))?;
    if let Some(k) = options.keys().find(|k| *k != "replication_factor") {
        return Err(OptionsError::UnrecognizedStrategyOption {
            option: k.clone(),
            strategy: "SimpleStrategy",
        });
    }
    Ok(ReplicationStrategy::Simple { replication_factor })
}

fn network_topology_from_cql(
    options: &mut BTreeMap<String, String>,
    known: &[&str],
) -> Result<ReplicationStrategy, OptionsError> {
    if let Some(rf) = options.remove("replication_factor") {
        for dc in known {
            options.entry(dc.to_string()).or_insert_with(|| rf.clone());
        }
    }
    if options.is_empty() {
        for dc in known {
            options.insert(dc.to_string(), DEFAULT_KEYSPACE_RF.to_string());
        }
    }
    let mut datacenters = BTreeMap::new();
    for (dc, rf) in options.iter() {
        if !known.contains(&dc.as_str()) {
            return Err(OptionsError::UnrecognizedStrategyOption {
                option: dc.clone(),
                strategy: "NetworkTopologyStrategy",
            });
        }
        let n = rf
            .parse::<u32>()
            .map_err(|_| OptionsError::DatacenterReplicationFactor {
                datacenter: dc.clone(),
                rf: rf.clone(),
            })?;
        datacenters.insert(dc.clone(), n);
    }
    Ok(ReplicationStrategy::NetworkTopology { datacenters })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    const DCS: &[&str] = &["datacenter1"];

    fn m(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn simple_strategy_short_name_expands_and_keeps_factor_text() {
        let p = ReplicationParams::from_cql(
            m(&[("class", "SimpleStrategy"), ("replication_factor", "03")]),
            DCS,
        )
        .unwrap();
        assert_eq!(
            p.strategy,
            ReplicationStrategy::Simple {
                replication_factor: 3
            }
        );
        assert_eq!(
            p.options(),
            &m(&[
                ("class", SIMPLE_STRATEGY_CLASS),
                ("replication_factor", "03")
            ])
        );
        assert_eq!(ReplicationParams::from_stored(p.options()), p);
    }

    #[test]
    fn simple_strategy_without_factor_gets_the_default() {
        let p = ReplicationParams::from_cql(m(&[("class", "SimpleStrategy")]), DCS).unwrap();
        assert_eq!(p.options().get("replication_factor").unwrap(), "1");
    }

    #[test]
    fn simple_strategy_refuses_bad_factor_and_unknown_options() {
        let e = ReplicationParams::from_cql(
            m(&[("class", "SimpleStrategy"), ("replication_factor", "-1")]),
            DCS,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Replication factor must be non-negative; found -1"
        );
        let e = ReplicationParams::from_cql(m(&[("class", "SimpleStrategy"), ("dc9", "1")]), DCS)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Unrecognized strategy option {dc9} passed to SimpleStrategy for keyspace"
        );
    }

    #[test]
    fn network_topology_expands_replication_factor_to_known_datacenters() {
        let p = ReplicationParams::from_cql(
            m(&[
                (
                    "class",
                    "org.apache.cassandra.locator.NetworkTopologyStrategy",
                ),
                ("replication_factor", "3"),
            ]),
            DCS,
        )
        .unwrap();
        assert_eq!(p.replication_factor_in("datacenter1"), Some(3));
        assert_eq!(p.replication_factor_in("dc2"), Some(0));
        assert_eq!(
            p.options(),
            &m(&[
                ("class", NETWORK_TOPOLOGY_STRATEGY_CLASS),
                ("datacenter1", "3")
            ])
        );
        let empty =
            ReplicationParams::from_cql(m(&[("class", "NetworkTopologyStrategy")]), DCS).unwrap();
        assert_eq!(empty.replication_factor_in("datacenter1"), Some(1));
    }

    #[test]
    fn network_topology_refuses_unknown_datacenter_and_bad_factor() {
        let e = ReplicationParams::from_cql(
            m(&[("class", "NetworkTopologyStrategy"), ("dc9", "1")]),
            DCS,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Unrecognized strategy option {dc9} passed to NetworkTopologyStrategy for keyspace"
        );
        let e = ReplicationParams::from_cql(
            m(&[("class", "NetworkTopologyStrategy"), ("datacenter1", "x")]),
            DCS,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Replication factor must be non-negative integer; found x for datacenter1"
        );
    }

    #[test]
    fn reserved_unknown_and_missing_classes_are_refused() {
        let e = ReplicationParams::from_cql(m(&[("class", "LocalStrategy")]), DCS).unwrap_err();
        assert!(e.is_invalid_request());
        let e = ReplicationParams::from_cql(m(&[("class", "Nope")]), DCS).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Unable to find replication strategy class 'org.apache.cassandra.locator.Nope'"
        );
        assert!(!e.is_invalid_request());
        let e = ReplicationParams::from_cql(m(&[]), DCS).unwrap_err();
        assert_eq!(e.to_string(), "Missing replication strategy class");
    }

    #[test]
    fn stored_local_and_system_maps_read_back() {
        assert_eq!(
            ReplicationParams::from_stored(ReplicationParams::local().options()).strategy,
            ReplicationStrategy::Local
        );
        let p = ReplicationParams::from_stored(&m(&[
            ("class", NETWORK_TOPOLOGY_STRATEGY_CLASS),
            ("dc1", "3"),
            ("dc2", "2"),
        ]));
        assert_eq!(p.replication_factor_in("dc2"), Some(2));
        assert_eq!(
            short_replication_class(NETWORK_TOPOLOGY_STRATEGY_CLASS),
            "NetworkTopologyStrategy"
        );
    }
}
