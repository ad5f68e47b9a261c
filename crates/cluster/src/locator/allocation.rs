//! Token allocation for a joining node that balances *replicated* ownership for a replication
//! factor, the goal of Cassandra 4.0's `allocate_tokens_for_local_replication_factor`: random
//! tokens leave some nodes owning half as much again as others once RF > 1.
//!
//! The first RF nodes of a data center get evenly spaced tokens, interleaved with each other.
//! After that, each token of the new node is chosen greedily: every range of the data center is a
//! candidate, split at its midpoint, and the split that brings every node's effective ownership
//! closest to an equal share (the new node's share growing with the tokens it has so far) wins.
//! That is not Cassandra's algorithm step for step, but it reaches the same kind of balance (the
//! tests bound the spread), is deterministic, and is cheap at the ring sizes a test cluster has.

use std::sync::Arc;

use super::replication_map::ReplicationMap;
use super::ring::{Ring, RingError, Token, TokenRange, RING_SIZE};
use super::strategy::ReplicationStrategy;
use super::topology::Member;

/// Tokens for `joining`, which must not own tokens in `ring` yet.
pub fn allocate_tokens(
    ring: &Ring,
    joining: &Member,
    num_tokens: usize,
    strategy: &ReplicationStrategy,
) -> Result<Vec<Token>, RingError> {
    let num_tokens = num_tokens.max(1);
    let dc = joining.location.datacenter.as_str();
    let nodes_in_dc = ring.datacenters().get(dc).map(|s| s.nodes).unwrap_or(0);
    let rf = strategy.replication_factor_in(ring, dc).max(1);
    if nodes_in_dc < rf {
        return Ok(evenly_spaced(ring, num_tokens, nodes_in_dc, rf));
    }
    let mut tokens: Vec<Token> = Vec::with_capacity(num_tokens);
    let mut current = ring.with_member(joining.clone(), Vec::new())?;
    let final_share = rf as f64 / (nodes_in_dc + 1) as f64;
    for step in 0..num_tokens {
        let new_share = final_share * (step + 1) as f64 / num_tokens as f64;
        let mut best: Option<(f64, Token)> = None;
        for candidate in candidates(&current, dc) {
            let mut trial_tokens = tokens.clone();
            trial_tokens.push(candidate);
            let trial = current.with_member(joining.clone(), trial_tokens)?;
            let score = imbalance(&trial, joining, strategy, dc, final_share, new_share);
            if best.is_none_or(|(s, _)| score < s) {
                best = Some((score, candidate));
            }
        }
        let Some((_, token)) = best else {
            break;
        };
        tokens.push(token);
        current = current.with_member(joining.clone(), tokens.clone())?;
    }
    Ok(tokens)
}

/// Where a new token may go: inside each range of the data center's own ring (its tokens alone,
/// as NetworkTopologyStrategy places within a DC), at a few split points, not only the middle, so
/// shares other than halves are reachable.
fn candidates(ring: &Ring, dc: &str) -> Vec<Token> {
    const SPLITS: [u128; 5] = [2, 3, 4, 5, 6]; // eighths of the range
    let dc_tokens: Vec<Token> = ring
        .tokens()
        .iter()
        .filter(|(_, owner)| {
            ring.member(*owner)
                .is_some_and(|m| m.location.datacenter == dc)
        })
        .map(|(t, _)| *t)
        .collect();
    let taken: std::collections::BTreeSet<Token> = ring.tokens().iter().map(|(t, _)| *t).collect();
    let n = dc_tokens.len();
    let mut out = Vec::new();
    for i in 0..n {
        let (Some(start), Some(end)) = (dc_tokens.get((i + n - 1) % n), dc_tokens.get(i)) else {
            continue;
        };
        let range = TokenRange::new(*start, *end);
        for eighths in SPLITS {
            let token = range.at_fraction(eighths, 8);
            if token != i64::MIN
                && !taken.contains(&token)
                && range.contains(token)
                && token != *end
            {
                out.push(token);
            }
        }
    }
    out
}

/// Squared distance of every node of the data center from its target share.
fn imbalance(
    ring: &Ring,
    joining: &Member,
    strategy: &ReplicationStrategy,
    dc: &str,
    final_share: f64,
    new_share: f64,
) -> f64 {
    let map = ReplicationMap::new(Arc::new(ring.clone()), strategy.clone(), joining.id);
    map.effective_ownership()
        .iter()
        .filter(|(id, _)| {
            ring.member(**id)
                .is_some_and(|m| m.location.datacenter == dc)
        })
        .map(|(id, owns)| {
            let target = if *id == joining.id {
                new_share
            } else {
                final_share
            };
            (owns - target).powi(2)
        })
        .sum()
}

/// `num_tokens` tokens a ring-width apart; the `index`-th of `of` such nodes is offset by
/// index/of of the spacing so their tokens interleave. A token already taken moves up by one.
fn evenly_spaced(ring: &Ring, num_tokens: usize, index: usize, of: usize) -> Vec<Token> {
    let spacing = RING_SIZE / num_tokens as u128;
    let offset = spacing * index as u128 / of as u128;
    let taken: std::collections::BTreeSet<Token> = ring.tokens().iter().map(|(t, _)| *t).collect();
    (0..num_tokens as u128)
        .map(|j| {
            let position = (offset + spacing * j + spacing / 2) % RING_SIZE;
            let mut token = (position as u64 ^ (1 << 63)) as i64;
            while token == i64::MIN || taken.contains(&token) {
                token = token.wrapping_add(1);
            }
            token
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locator::testing::member;

    fn grow(nodes: u8, num_tokens: usize, strategy: &ReplicationStrategy, dcs: &[&str]) -> Ring {
        let mut ring = Ring::default();
        for n in 0..nodes {
            let dc = dcs[usize::from(n) % dcs.len()];
            let m = member(n, dc, "rack1");
            let tokens = allocate_tokens(&ring, &m, num_tokens, strategy).unwrap();
            assert_eq!(tokens.len(), num_tokens, "node {n}");
            ring = ring.with_member(m, tokens).unwrap();
        }
        ring
    }

    fn spread(ring: &Ring, strategy: &ReplicationStrategy) -> (f64, f64) {
        let map = ReplicationMap::new(
            Arc::new(ring.clone()),
            strategy.clone(),
            member(0, "dc1", "r").id,
        );
        let owns = map.effective_ownership();
        let max = owns.values().cloned().fold(f64::MIN, f64::max);
        let min = owns.values().cloned().fold(f64::MAX, f64::min);
        (min, max)
    }

    #[test]
    fn the_first_replication_factor_nodes_interleave_evenly() {
        let s = ReplicationStrategy::Simple {
            replication_factor: 3,
        };
        let ring = grow(3, 16, &s, &["dc1"]);
        assert_eq!(ring.len(), 48);
        let widths: Vec<u128> = ring.ranges().iter().map(|(r, _)| r.width()).collect();
        let (lo, hi) = (widths.iter().min().unwrap(), widths.iter().max().unwrap());
        assert!(hi - lo <= 2, "ranges {lo}..{hi}");
    }

    #[test]
    fn growing_to_six_nodes_keeps_replicated_ownership_balanced_at_rf3() {
        let s = ReplicationStrategy::Simple {
            replication_factor: 3,
        };
        for nodes in 4..=6u8 {
            let ring = grow(nodes, 16, &s, &["dc1"]);
            let (min, max) = spread(&ring, &s);
            let mean = 3.0 / f64::from(nodes);
            assert!(
                max / mean < 1.05 && min / mean > 0.95,
                "{nodes} nodes: {min}..{max}, mean {mean}"
            );
        }
    }

    #[test]
    fn rf1_allocation_is_balanced_too() {
        let s = ReplicationStrategy::Simple {
            replication_factor: 1,
        };
        let ring = grow(5, 16, &s, &["dc1"]);
        let (min, max) = spread(&ring, &s);
        // 16 random tokens a node spread ownership by tens of percent; the allocator stays within a few.
        assert!(max / min < 1.1, "{min}..{max}");
    }

    #[test]
    fn network_topology_balances_each_datacenter() {
        let s = ReplicationStrategy::NetworkTopology {
            datacenters: [("dc1".to_string(), 2), ("dc2".to_string(), 2)].into(),
        };
        let ring = grow(6, 8, &s, &["dc1", "dc2"]);
        let map = ReplicationMap::new(Arc::new(ring.clone()), s.clone(), member(0, "dc1", "r").id);
        for (_, owns) in map.effective_ownership() {
            // Three nodes per DC, RF 2 in each: two thirds of the ring each.
            assert!((owns - 2.0 / 3.0).abs() < 0.12, "{owns}");
        }
    }
}
