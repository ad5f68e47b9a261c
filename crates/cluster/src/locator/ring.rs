//! The token ring as an immutable snapshot: every change builds a new `Ring`, so a request that
//! planned against one snapshot never sees half of a topology change.

use std::collections::{BTreeMap, BTreeSet};

use super::topology::{Member, NodeId};

/// A Murmur3 token. `i64::MIN` is the ring's minimum and never a key's token.
pub type Token = i64;

/// The number of distinct tokens, as a width for ownership arithmetic.
pub const RING_SIZE: u128 = 1 << 64;

/// The tokens a node owns: `(start, end]`, wrapping past the maximum token; `start == end` is the
/// whole ring (a ring of one token).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TokenRange {
    pub start: Token,
    pub end: Token,
}

impl TokenRange {
    pub fn new(start: Token, end: Token) -> Self {
        TokenRange { start, end }
    }

    /// How many tokens the range holds.
    pub fn width(&self) -> u128 {
        let span = (self.end as i128 - self.start as i128).rem_euclid(RING_SIZE as i128) as u128;
        if span == 0 {
            RING_SIZE
        } else {
            span
        }
    }

    /// The share of the ring the range covers, in [0, 1].
    pub fn fraction(&self) -> f64 {
        self.width() as f64 / RING_SIZE as f64
    }

    pub fn contains(&self, token: Token) -> bool {
        if self.start < self.end {
            token > self.start && token <= self.end
        } else if self.start > self.end {
            token > self.start || token <= self.end
        } else {
            true
        }
    }

    /// The token halfway through the range (where a new token splits it most evenly).
    pub fn midpoint(&self) -> Token {
        self.at_fraction(1, 2)
    }

    /// The token `numerator/denominator` of the way through the range.
    pub fn at_fraction(&self, numerator: u128, denominator: u128) -> Token {
        let offset = (self.width() / denominator.max(1)).saturating_mul(numerator) as i128;
        let position = self.start as i128 + offset;
        // Wrap back into i64's range: the ring is modulo 2^64.
        (position.rem_euclid(RING_SIZE as i128) as u128 as u64) as i64
    }
}

/// Why a ring cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RingError {
    #[error("token {token} is claimed by both {first} and {second}")]
    DuplicateToken {
        token: Token,
        first: NodeId,
        second: NodeId,
    },
    #[error("node {0} is listed twice")]
    DuplicateMember(NodeId),
    #[error("the minimum token {} cannot be owned", i64::MIN)]
    MinimumToken,
}

/// How many nodes and racks of a data center own tokens.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DatacenterShape {
    pub nodes: usize,
    pub racks: usize,
}

/// Members and their tokens, sorted by token.
#[derive(Clone, Debug, Default)]
pub struct Ring {
    tokens: Vec<(Token, NodeId)>,
    members: BTreeMap<NodeId, Member>,
}

impl Ring {
    /// A ring of these members, each with its tokens. Members without tokens are known (for
    /// addresses and locations) but own nothing.
    pub fn new(nodes: impl IntoIterator<Item = (Member, Vec<Token>)>) -> Result<Ring, RingError> {
        let mut members = BTreeMap::new();
        let mut owners: BTreeMap<Token, NodeId> = BTreeMap::new();
        for (member, tokens) in nodes {
            let id = member.id;
            if members.insert(id, member).is_some() {
                return Err(RingError::DuplicateMember(id));
            }
            for token in tokens {
                if token == i64::MIN {
                    return Err(RingError::MinimumToken);
                }
                if let Some(first) = owners.insert(token, id) {
                    if first != id {
                        return Err(RingError::DuplicateToken {
                            token,
                            first,
                            second: id,
                        });
                    }
                }
            }
        }
        Ok(Ring {
            tokens: owners.into_iter().collect(),
            members,
        })
    }

    /// This ring with one more member (or a member's tokens replaced).
    pub fn with_member(&self, member: Member, tokens: Vec<Token>) -> Result<Ring, RingError> {
        let id = member.id;
        let mut nodes: Vec<(Member, Vec<Token>)> = self
            .members
            .values()
            .filter(|m| m.id != id)
            .map(|m| (m.clone(), self.tokens_of(m.id)))
            .collect();
        nodes.push((member, tokens));
        Ring::new(nodes)
    }

    /// This ring after `id` has left it (its ranges fall to the next owners).
    pub fn without_member(&self, id: NodeId) -> Ring {
        let nodes: Vec<(Member, Vec<Token>)> = self
            .members
            .values()
            .filter(|m| m.id != id)
            .map(|m| (m.clone(), self.tokens_of(m.id)))
            .collect();
        // Removing a member cannot create a token clash.
        Ring::new(nodes).unwrap_or_default()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Number of tokens on the ring.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// `(token, owner)` in token order.
    pub fn tokens(&self) -> &[(Token, NodeId)] {
        &self.tokens
    }

    pub fn member(&self, id: NodeId) -> Option<&Member> {
        self.members.get(&id)
    }

    pub fn members(&self) -> impl Iterator<Item = &Member> {
        self.members.values()
    }

    /// The tokens one node owns, in order.
    pub fn tokens_of(&self, id: NodeId) -> Vec<Token> {
        self.tokens
            .iter()
            .filter(|(_, owner)| *owner == id)
            .map(|(t, _)| *t)
            .collect()
    }

    /// The index of the ring token that owns `token`: the first at or after it, wrapping to the
    /// first token of the ring. `None` on an empty ring.
    pub fn owner_index(&self, token: Token) -> Option<usize> {
        if self.tokens.is_empty() {
            return None;
        }
        let i = self.tokens.partition_point(|(t, _)| *t < token);
        Some(if i == self.tokens.len() { 0 } else { i })
    }

    /// Every ring token once, starting at the one that owns `token` (Cassandra's `ringIterator`).
    pub fn walk_from(&self, token: Token) -> impl Iterator<Item = (Token, NodeId)> + '_ {
        let start = self.owner_index(token).unwrap_or(0);
        let n = self.tokens.len();
        (0..n).filter_map(move |k| self.tokens.get((start + k) % n).copied())
    }

    /// The range ending at ring token `index`: from the previous ring token (exclusive).
    pub fn range_at(&self, index: usize) -> Option<TokenRange> {
        let n = self.tokens.len();
        let (end, _) = *self.tokens.get(index)?;
        let (start, _) = *self.tokens.get((index + n - 1) % n)?;
        Some(TokenRange::new(start, end))
    }

    /// Every range of the ring with the node whose token ends it (its primary owner).
    pub fn ranges(&self) -> Vec<(TokenRange, NodeId)> {
        (0..self.tokens.len())
            .filter_map(|i| Some((self.range_at(i)?, self.tokens.get(i)?.1)))
            .collect()
    }

    /// Nodes and racks per data center, counting only nodes that own tokens.
    pub fn datacenters(&self) -> BTreeMap<String, DatacenterShape> {
        let owning: BTreeSet<NodeId> = self.tokens.iter().map(|(_, id)| *id).collect();
        let mut racks: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        let mut shapes: BTreeMap<String, DatacenterShape> = BTreeMap::new();
        for id in owning {
            let Some(m) = self.members.get(&id) else {
                continue;
            };
            shapes
                .entry(m.location.datacenter.clone())
                .or_default()
                .nodes += 1;
            racks
                .entry(&m.location.datacenter)
                .or_default()
                .insert(&m.location.rack);
        }
        for (dc, set) in racks {
            if let Some(shape) = shapes.get_mut(dc) {
                shape.racks = set.len();
            }
        }
        shapes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locator::testing::member;

    #[test]
    fn a_range_wraps_past_the_maximum_token() {
        let r = TokenRange::new(i64::MAX - 10, i64::MIN + 10); // MAX-9..=MAX and MIN..=MIN+10
        assert!(r.contains(i64::MAX));
        assert!(r.contains(i64::MIN + 10));
        assert!(!r.contains(0));
        assert_eq!(r.width(), 21);
        let whole = TokenRange::new(5, 5);
        assert_eq!(whole.width(), RING_SIZE);
        assert!(whole.contains(-3));
    }

    #[test]
    fn midpoint_splits_a_wrapping_range() {
        assert_eq!(TokenRange::new(0, 100).midpoint(), 50);
        assert_eq!(
            TokenRange::new(i64::MAX - 9, i64::MIN + 10).midpoint(),
            i64::MIN
        );
        let whole = TokenRange::new(0, 0);
        assert_eq!(whole.midpoint(), i64::MIN);
    }

    #[test]
    fn the_owner_of_a_token_is_the_first_ring_token_at_or_after_it() {
        let ring = Ring::new([
            (member(1, "dc1", "r1"), vec![-100, 100]),
            (member(2, "dc1", "r1"), vec![0]),
        ])
        .unwrap();
        assert_eq!(ring.owner_index(-100), Some(0));
        assert_eq!(ring.owner_index(-99), Some(1));
        assert_eq!(ring.owner_index(100), Some(2));
        assert_eq!(ring.owner_index(101), Some(0), "wraps to the first token");
        let walk: Vec<Token> = ring.walk_from(50).map(|(t, _)| t).collect();
        assert_eq!(walk, vec![100, -100, 0]);
        assert_eq!(ring.range_at(0), Some(TokenRange::new(100, -100)));
    }

    #[test]
    fn a_token_claimed_twice_is_refused() {
        let err = Ring::new([
            (member(1, "dc1", "r1"), vec![7]),
            (member(2, "dc1", "r1"), vec![7]),
        ]);
        assert!(matches!(
            err,
            Err(RingError::DuplicateToken { token: 7, .. })
        ));
        assert!(Ring::new([(member(1, "dc1", "r1"), vec![i64::MIN])]).is_err());
    }

    #[test]
    fn datacenter_shape_counts_owning_nodes_and_racks() {
        let ring = Ring::new([
            (member(1, "dc1", "r1"), vec![1]),
            (member(2, "dc1", "r2"), vec![2]),
            (member(3, "dc1", "r2"), vec![3]),
            (member(4, "dc2", "r1"), vec![4]),
            (member(5, "dc2", "r1"), vec![]),
        ])
        .unwrap();
        let dcs = ring.datacenters();
        assert_eq!(dcs["dc1"], DatacenterShape { nodes: 3, racks: 2 });
        assert_eq!(dcs["dc2"], DatacenterShape { nodes: 1, racks: 1 });
    }
}
