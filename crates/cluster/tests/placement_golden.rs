//! Replica placement against what a real Cassandra 5.0 cluster answered for the same tokens
//! (`golden/cassandra_placement.txt`, recorded by `golden/record_placement.py` from a 3-node
//! cluster with 16 tokens a node): every range of `nodetool describering` and every key of
//! `nodetool getendpoints` must get the same replicas, in the same order.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::net::IpAddr;

use helenus_cluster::locator::{
    Location, Member, NodeId, ReplicationMap, ReplicationStrategy, Ring,
};
use std::sync::Arc;

const GOLDEN: &str = include_str!("golden/cassandra_placement.txt");

struct Golden {
    ring: Arc<Ring>,
    addresses: BTreeMap<NodeId, IpAddr>,
    keyspaces: BTreeMap<String, ReplicationStrategy>,
    ranges: Vec<(String, i64, i64, Vec<IpAddr>)>,
    keys: Vec<(String, String, Vec<IpAddr>)>,
}

fn parse_ips(s: &str) -> Vec<IpAddr> {
    s.split(',').map(|e| e.trim().parse().unwrap()).collect()
}

fn golden() -> Golden {
    let mut nodes = Vec::new();
    let mut addresses = BTreeMap::new();
    let mut keyspaces = BTreeMap::new();
    let mut ranges = Vec::new();
    let mut keys = Vec::new();
    for line in GOLDEN.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f[0] {
            "node" => {
                let id = NodeId(f[1].parse().unwrap());
                let address: IpAddr = f[2].parse().unwrap();
                let tokens = f[5].split(',').map(|t| t.parse().unwrap()).collect();
                addresses.insert(id, address);
                nodes.push((
                    Member {
                        id,
                        address,
                        location: Location::new(f[3], f[4]),
                    },
                    tokens,
                ));
            }
            "keyspace" => {
                let strategy = match f[2] {
                    "simple" => ReplicationStrategy::Simple {
                        replication_factor: f[3].parse().unwrap(),
                    },
                    _ => ReplicationStrategy::NetworkTopology {
                        datacenters: f[3]
                            .split(',')
                            .map(|p| {
                                let (dc, rf) = p.split_once(':').unwrap();
                                (dc.to_string(), rf.parse().unwrap())
                            })
                            .collect(),
                    },
                };
                keyspaces.insert(f[1].to_string(), strategy);
            }
            "range" => ranges.push((
                f[1].to_string(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
                parse_ips(f[4]),
            )),
            "key" => keys.push((f[1].to_string(), f[2].to_string(), parse_ips(f[3]))),
            other => panic!("unknown golden line kind {other}"),
        }
    }
    Golden {
        ring: Arc::new(Ring::new(nodes).unwrap()),
        addresses,
        keyspaces,
        ranges,
        keys,
    }
}

fn map_for(g: &Golden, ks: &str) -> ReplicationMap {
    let local = *g.addresses.keys().next().unwrap();
    ReplicationMap::new(g.ring.clone(), g.keyspaces[ks].clone(), local)
}

#[test]
fn every_range_has_cassandras_replicas_in_cassandras_order() {
    let g = golden();
    assert_eq!(g.ring.len(), 48, "3 nodes x 16 tokens");
    assert!(g.ranges.len() >= 4 * 48);
    for (ks, start, end, want) in &g.ranges {
        let map = map_for(&g, ks);
        let got: Vec<IpAddr> = map.replicas(*end).iter().map(|n| g.addresses[n]).collect();
        assert_eq!(&got, want, "{ks} range ({start}, {end}]");
        // Any token inside the range has the same replicas.
        if end.wrapping_sub(*start) > 2 {
            let inside: Vec<IpAddr> = map
                .replicas(start.wrapping_add(1))
                .iter()
                .map(|n| g.addresses[n])
                .collect();
            assert_eq!(&inside, want, "{ks} just after {start}");
        }
    }
}

#[test]
fn keys_land_where_cassandra_puts_them() {
    let g = golden();
    assert!(!g.keys.is_empty());
    for (ks, key, want) in &g.keys {
        let token = helenus_types::murmur3_token(key.as_bytes());
        let got: Vec<IpAddr> = map_for(&g, ks)
            .replicas(token)
            .iter()
            .map(|n| g.addresses[n])
            .collect();
        // getendpoints lists replicas in no particular order.
        let (mut got_sorted, mut want_sorted) = (got.clone(), want.clone());
        got_sorted.sort();
        want_sorted.sort();
        assert_eq!(got_sorted, want_sorted, "{ks} key {key} (token {token})");
    }
}
