//! The token ranges an export writes a file each for: this node's primary ranges, as Cassandra
//! names ranges, `(start, end]`, wrapping past the ring's end when `start >= end`.

use crate::node::NodeState;
use helenus_schema::KeyspaceMeta;
use helenus_storage::PartitionBound;

/// One range `(start, end]`; `start == end` is the whole ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportRange {
    pub start: i64,
    pub end: i64,
}

impl ExportRange {
    /// The storage scans that cover the range: one, or two for the range that wraps.
    pub fn scans(&self) -> Vec<(PartitionBound, PartitionBound)> {
        let after = |token| PartitionBound::Token {
            token,
            inclusive: false,
        };
        let upto = |token| PartitionBound::Token {
            token,
            inclusive: true,
        };
        if self.start < self.end {
            vec![(after(self.start), upto(self.end))]
        } else if self.start > self.end {
            vec![
                (after(self.start), PartitionBound::Unbounded),
                (PartitionBound::Unbounded, upto(self.end)),
            ]
        } else {
            vec![(PartitionBound::Unbounded, PartitionBound::Unbounded)]
        }
    }
}

/// The ranges that end at each of `tokens` (sorted), from the token before (the first from the
/// last): a ring whose every token is this node's.
pub fn ranges_of_tokens(tokens: &[i64]) -> Vec<ExportRange> {
    let mut sorted = tokens.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let Some(&last) = sorted.last() else {
        return vec![ExportRange {
            start: i64::MIN,
            end: i64::MIN,
        }];
    };
    let mut prev = last;
    sorted
        .into_iter()
        .map(|end| {
            let r = ExportRange { start: prev, end };
            prev = end;
            r
        })
        .collect()
}

/// This node's primary ranges of `keyspace`: those whose first replica it is; on a node alone,
/// the ranges ending at its own tokens.
pub fn primary_ranges(node: &NodeState, keyspace: &KeyspaceMeta) -> Vec<ExportRange> {
    let Some(cluster) = node.cluster() else {
        return ranges_of_tokens(&node.identity.tokens);
    };
    let ring = cluster.ring();
    if ring.is_empty() {
        // Not yet in the ring (joining): what it holds is its own tokens' ranges.
        return ranges_of_tokens(&node.identity.tokens);
    }
    let me = cluster.local();
    ring.ranges()
        .into_iter()
        .filter(|(range, _)| cluster.replicas(keyspace, range.end).first() == Some(&me))
        .map(|(range, _)| ExportRange {
            start: range.start,
            end: range.end,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_make_ranges_that_cover_the_ring_once() {
        let r = ranges_of_tokens(&[100, -50, 7]);
        assert_eq!(
            r,
            vec![
                ExportRange {
                    start: 100,
                    end: -50
                },
                ExportRange { start: -50, end: 7 },
                ExportRange { start: 7, end: 100 },
            ]
        );
        // Every token is in exactly one range.
        for t in [i64::MIN + 1, -51, -50, -49, 0, 7, 8, 100, 101, i64::MAX] {
            let n = r
                .iter()
                .filter(|x| {
                    if x.start < x.end {
                        t > x.start && t <= x.end
                    } else {
                        t > x.start || t <= x.end
                    }
                })
                .count();
            assert_eq!(n, 1, "token {t}");
        }
    }

    #[test]
    fn the_wrapping_range_is_scanned_in_two_pieces() {
        let scans = ExportRange {
            start: 100,
            end: -50,
        }
        .scans();
        assert_eq!(scans.len(), 2);
        assert_eq!(
            scans[0],
            (
                PartitionBound::Token {
                    token: 100,
                    inclusive: false
                },
                PartitionBound::Unbounded
            )
        );
        assert_eq!(
            scans[1],
            (
                PartitionBound::Unbounded,
                PartitionBound::Token {
                    token: -50,
                    inclusive: true
                }
            )
        );
    }

    #[test]
    fn one_token_or_none_is_the_whole_ring() {
        assert_eq!(
            ranges_of_tokens(&[5]),
            vec![ExportRange { start: 5, end: 5 }]
        );
        assert_eq!(ranges_of_tokens(&[])[0].scans().len(), 1);
        assert_eq!(
            ranges_of_tokens(&[5])[0].scans(),
            vec![(PartitionBound::Unbounded, PartitionBound::Unbounded)]
        );
    }
}
