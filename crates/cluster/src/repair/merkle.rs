//! Merkle trees over a token range, as repair builds them (Cassandra's `MerkleTree`): the range is
//! cut into 2^depth equal leaves, each partition's digest is folded into the leaf holding its
//! token, and inner nodes combine their children, so two replicas compare their trees top-down
//! and descend only where hashes differ. Folding is XOR (as Cassandra does), which makes the tree
//! independent of the order partitions are added in.

use crate::locator::{Token, TokenRange};

/// A partition digest (any 16-byte hash of its content: cells, timestamps, tombstones).
pub type Digest = [u8; 16];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MerkleTree {
    range: TokenRange,
    depth: u32,
    /// Leaves then inner nodes in heap order: `nodes[1]` is the root, children of i are 2i, 2i+1.
    nodes: Vec<Digest>,
    partitions: u64,
}

/// The deepest tree allowed (Cassandra: 20); 2^20 leaves of 16 bytes is 16 MiB per side.
pub const MAX_DEPTH: u32 = 20;

fn xor(a: &mut Digest, b: &Digest) {
    for (x, y) in a.iter_mut().zip(b) {
        *x ^= y;
    }
}

impl MerkleTree {
    pub fn new(range: TokenRange, depth: u32) -> Self {
        let depth = depth.min(MAX_DEPTH);
        MerkleTree {
            range,
            depth,
            nodes: vec![[0; 16]; 2usize << depth],
            partitions: 0,
        }
    }

    fn leaves(&self) -> usize {
        1usize << self.depth
    }

    /// The leaf holding `token`, if the token is in the tree's range.
    fn leaf_of(&self, token: Token) -> Option<usize> {
        if !self.range.contains(token) {
            return None;
        }
        // Leaf k covers offsets (floor(k W / L), floor((k+1) W / L)] from the exclusive start,
        // so the leaf of an offset is ceil(offset L / W) - 1.
        let offset = TokenRange::new(self.range.start, token).width();
        let (width, leaves) = (self.range.width(), self.leaves() as u128);
        let leaf = (offset * leaves).div_ceil(width).saturating_sub(1);
        Some(leaf as usize)
    }

    /// Adds one partition; returns false (and ignores it) if its token is outside the range.
    pub fn add(&mut self, token: Token, digest: &Digest) -> bool {
        let Some(leaf) = self.leaf_of(token) else {
            return false;
        };
        // Fold into the leaf and every ancestor.
        let mut i = self.leaves() + leaf;
        while i >= 1 {
            if let Some(node) = self.nodes.get_mut(i) {
                xor(node, digest);
            }
            i /= 2;
        }
        self.partitions += 1;
        true
    }

    pub fn root(&self) -> Digest {
        self.nodes.get(1).copied().unwrap_or_default()
    }

    pub fn partitions(&self) -> u64 {
        self.partitions
    }

    /// The wire form: range start and end, depth, partition count, then every node's digest.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + 8 + 4 + 8 + self.nodes.len() * 16);
        out.extend_from_slice(&self.range.start.to_be_bytes());
        out.extend_from_slice(&self.range.end.to_be_bytes());
        out.extend_from_slice(&self.depth.to_be_bytes());
        out.extend_from_slice(&self.partitions.to_be_bytes());
        for node in &self.nodes {
            out.extend_from_slice(node);
        }
        out
    }

    /// A tree `encode` wrote; `None` for anything else (a peer's bytes are not trusted: the
    /// depth is bounded and the length must match it exactly).
    pub fn decode(bytes: &[u8]) -> Option<MerkleTree> {
        let start = i64::from_be_bytes(bytes.get(0..8)?.try_into().ok()?);
        let end = i64::from_be_bytes(bytes.get(8..16)?.try_into().ok()?);
        let depth = u32::from_be_bytes(bytes.get(16..20)?.try_into().ok()?);
        let partitions = u64::from_be_bytes(bytes.get(20..28)?.try_into().ok()?);
        if depth > MAX_DEPTH {
            return None;
        }
        let digests = bytes.get(28..)?;
        if digests.len() != (2usize << depth) * 16 {
            return None;
        }
        let nodes = digests
            .chunks_exact(16)
            .map(|c| c.try_into().unwrap_or([0; 16]))
            .collect();
        Some(MerkleTree {
            range: TokenRange::new(start, end),
            depth,
            nodes,
            partitions,
        })
    }

    /// The token range of heap node `i` at `level` (0 = root).
    fn node_range(&self, i: usize) -> TokenRange {
        let level = usize::BITS - 1 - i.leading_zeros();
        let first = i - (1usize << level);
        let per = 1usize << (self.depth - level);
        let leaf_start = first * per;
        let (width, leaves) = (self.range.width(), self.leaves() as u128);
        let bound = |leaf: usize| -> Token {
            let offset = (leaf as u128 * width / leaves) as i128;
            let position = (i128::from(self.range.start) + offset).rem_euclid(1i128 << 64);
            (position as u128 as u64) as i64
        };
        TokenRange::new(bound(leaf_start), bound(leaf_start + per))
    }

    /// The ranges where `self` and `other` (built over the same range and depth) differ, adjacent
    /// ones merged: what repair must stream.
    pub fn difference(&self, other: &MerkleTree) -> Vec<TokenRange> {
        if self.range != other.range || self.depth != other.depth {
            return vec![self.range];
        }
        let mut out: Vec<TokenRange> = Vec::new();
        let mut stack = vec![1usize];
        while let Some(i) = stack.pop() {
            if self.nodes.get(i) == other.nodes.get(i) {
                continue;
            }
            if i >= self.leaves() {
                let r = self.node_range(i);
                match out.last_mut() {
                    Some(last) if last.end == r.start => last.end = r.end,
                    _ => out.push(r),
                }
                continue;
            }
            // Right first, so leaves come off the stack in token order.
            stack.push(2 * i + 1);
            stack.push(2 * i);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(n: u64) -> Digest {
        let mut d = [0u8; 16];
        d[..8].copy_from_slice(&n.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
        d[8..].copy_from_slice(&(n ^ 0xdead_beef).to_be_bytes());
        d
    }

    fn tree_with(keys: impl Iterator<Item = (Token, u64)>) -> MerkleTree {
        let mut t = MerkleTree::new(TokenRange::new(i64::MIN, i64::MAX), 8);
        for (token, content) in keys {
            t.add(token, &digest(content));
        }
        t
    }

    fn tokens() -> impl Iterator<Item = Token> {
        (0..1000i64).map(|i| i.wrapping_mul(0x5851_F42D_4C95_7F2D))
    }

    #[test]
    fn a_tree_survives_its_wire_form_and_bad_bytes_are_refused() {
        let a = tree_with(tokens().map(|t| (t, t as u64)));
        let bytes = a.encode();
        assert_eq!(MerkleTree::decode(&bytes), Some(a));
        assert_eq!(MerkleTree::decode(&bytes[..bytes.len() - 1]), None);
        let mut deep = bytes.clone();
        deep[16..20].copy_from_slice(&(MAX_DEPTH + 1).to_be_bytes());
        assert_eq!(MerkleTree::decode(&deep), None);
    }

    #[test]
    fn identical_replicas_have_equal_trees_in_any_insertion_order() {
        let a = tree_with(tokens().map(|t| (t, t as u64)));
        let mut reversed: Vec<_> = tokens().collect();
        reversed.reverse();
        let b = tree_with(reversed.into_iter().map(|t| (t, t as u64)));
        assert_eq!(a.root(), b.root());
        assert!(a.difference(&b).is_empty());
        assert_eq!(a.partitions(), 1000);
    }

    #[test]
    fn one_differing_partition_is_found_in_one_leaf_range() {
        let odd = tokens().nth(123).unwrap();
        let a = tree_with(tokens().map(|t| (t, t as u64)));
        let b = tree_with(tokens().map(|t| (t, if t == odd { 7 } else { t as u64 })));
        let diff = a.difference(&b);
        assert_eq!(diff.len(), 1);
        assert!(diff[0].contains(odd));
        // One leaf of 256: about 1/256 of the ring.
        assert!(diff[0].fraction() < 0.01, "{}", diff[0].fraction());
    }

    #[test]
    fn a_missing_partition_differs_and_tokens_outside_are_refused() {
        let a = tree_with(tokens().map(|t| (t, 1)));
        let b = tree_with(tokens().skip(1).map(|t| (t, 1)));
        let missing = tokens().next().unwrap();
        assert!(a.difference(&b).iter().any(|r| r.contains(missing)));
        let mut small = MerkleTree::new(TokenRange::new(0, 100), 4);
        assert!(!small.add(500, &digest(1)));
        assert!(small.add(100, &digest(1)), "the end is inside (start, end]");
        assert!(!small.add(0, &digest(1)), "the start is not");
    }

    #[test]
    fn leaf_ranges_tile_the_tree_range() {
        let t = MerkleTree::new(TokenRange::new(-1000, 1000), 3);
        let leaves: Vec<TokenRange> = (8..16).map(|i| t.node_range(i)).collect();
        assert_eq!(leaves[0].start, -1000);
        assert_eq!(leaves[7].end, 1000);
        for w in leaves.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
        for (i, r) in leaves.iter().enumerate() {
            assert_eq!(t.leaf_of(r.end), Some(i), "a leaf's end token lands in it");
        }
    }
}
