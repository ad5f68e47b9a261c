//! Consistency levels with one node of three down, against what Cassandra 5.0.9 answered in the
//! same situation (`crates/cluster/tests/golden/cassandra_cl_errors.txt`, recorded by
//! `record_errors.py`): the same requests succeed, the same fail as Unavailable with the same
//! required/alive counts and message, and the same are refused as invalid.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use helenus_cluster::locator::{
    Location, Member, NodeId, ReplicationMap, ReplicationStrategy, Ring,
};
use helenus_coordinator::{plan_read, plan_write, ConsistencyLevel, LiveReplicas};

const PLACEMENT: &str = include_str!("../../cluster/tests/golden/cassandra_placement.txt");
const ERRORS: &str = include_str!("../../cluster/tests/golden/cassandra_cl_errors.txt");

fn level(name: &str) -> ConsistencyLevel {
    (0..=10u16)
        .filter_map(ConsistencyLevel::from_code)
        .find(|l| l.name() == name)
        .unwrap()
}

#[test]
fn one_node_down_answers_as_cassandra_did() {
    let mut nodes = Vec::new();
    let mut by_address: BTreeMap<IpAddr, NodeId> = BTreeMap::new();
    let mut strategies = BTreeMap::new();
    for line in PLACEMENT.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.first() {
            Some(&"node") => {
                let id = NodeId(f[1].parse().unwrap());
                let address: IpAddr = f[2].parse().unwrap();
                by_address.insert(address, id);
                let tokens: Vec<i64> = f[5].split(',').map(|t| t.parse().unwrap()).collect();
                nodes.push((
                    Member {
                        id,
                        address,
                        location: Location::new(f[3], f[4]),
                    },
                    tokens,
                ));
            }
            Some(&"keyspace") if f[2] == "simple" => {
                strategies.insert(
                    f[1].to_string(),
                    ReplicationStrategy::Simple {
                        replication_factor: f[3].parse().unwrap(),
                    },
                );
            }
            Some(&"keyspace") => {
                let dcs = f[3]
                    .split(',')
                    .map(|p| {
                        let (dc, rf) = p.split_once(':').unwrap();
                        (dc.to_string(), rf.parse().unwrap())
                    })
                    .collect();
                strategies.insert(
                    f[1].to_string(),
                    ReplicationStrategy::NetworkTopology { datacenters: dcs },
                );
            }
            _ => {}
        }
    }
    let ring = Arc::new(Ring::new(nodes).unwrap());
    let coordinator = by_address[&"127.0.0.1".parse::<IpAddr>().unwrap()];
    let dead = by_address[&"127.0.0.3".parse::<IpAddr>().unwrap()];
    let alive = move |n: NodeId| n != dead;
    let cluster = LiveReplicas {
        ring: &ring,
        local: coordinator,
        is_alive: &alive,
    };
    let token = helenus_types::murmur3_token(b"key1");
    let mut checked = 0;
    for line in ERRORS.lines().filter(|l| !l.is_empty()) {
        let (request, outcome) = line.split_once(" -> ").unwrap();
        let f: Vec<&str> = request.split_whitespace().collect();
        let (ks, kind, cl) = (f[0], f[1], level(f[2]));
        let map = ReplicationMap::new(ring.clone(), strategies[ks].clone(), coordinator);
        let ours = if kind == "write" {
            cl.validate_for_write()
                .map_err(|e| format!("InvalidRequest {}", e.0))
                .and_then(|_| {
                    plan_write(&map, token, &[], cl, &cluster)
                        .map(|_| ())
                        .map_err(|u| {
                            format!(
                                "Unavailable required={} alive={} {}",
                                u.required, u.alive, u.message
                            )
                        })
                })
        } else {
            cl.validate_for_read()
                .map_err(|e| format!("InvalidRequest {}", e.0))
                .and_then(|_| {
                    plan_read(&map, token, cl, &cluster)
                        .map(|_| ())
                        .map_err(|u| {
                            format!(
                                "Unavailable required={} alive={} {}",
                                u.required, u.alive, u.message
                            )
                        })
                })
        };
        match ours {
            Ok(()) => assert_eq!(
                outcome, "ok",
                "{request}: we accept, Cassandra said {outcome}"
            ),
            Err(ours) => {
                let kind = ours.split_whitespace().next().unwrap();
                assert!(
                    outcome.starts_with(kind),
                    "{request}: we say {ours}, Cassandra said {outcome}"
                );
                if kind == "Unavailable" {
                    let counts = ours
                        .split_whitespace()
                        .skip(1)
                        .take(2)
                        .collect::<Vec<_>>()
                        .join(" ");
                    assert!(outcome.contains(&counts), "{request}: {ours} vs {outcome}");
                }
                let message = ours.split_once(' ').unwrap().1;
                let message = message
                    .split_once(" Cannot")
                    .map(|(_, m)| format!("Cannot{m}"))
                    .unwrap_or(message.to_string());
                assert!(
                    outcome.contains(&format!("message=\"{message}\"")),
                    "{request}: message {message:?} vs {outcome}"
                );
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 44);
}
