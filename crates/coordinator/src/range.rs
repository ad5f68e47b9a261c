//! Range scans across the ring (Cassandra's `RangeCommands`/`ReplicaPlanIterator`): a token range
//! is cut at ring tokens into pieces that each live on one replica set, in token order, so a
//! coordinator can read them piece by piece (or a few at a time) and page across them. A paging
//! state names the last token returned, so any coordinator can resume with `split_after`.

use helenus_cluster::locator::{NodeId, ReplicationMap, Token, TokenRange};

/// One piece of a scan: a range and the replicas that hold all of it (primary first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangePiece {
    pub range: TokenRange,
    pub replicas: Vec<NodeId>,
}

/// The whole ring, from the minimum token, as scan pieces.
pub fn split_ring(map: &ReplicationMap) -> Vec<RangePiece> {
    split_after(map, i64::MIN)
}

/// The pieces covering `(after, MAX]`, in token order: where a scan resumes after the last token
/// it returned (`i64::MIN` for a scan from the start). Adjacent pieces on the same replicas are
/// merged, so a scan asks each replica set once per stretch of the ring it owns.
pub fn split_after(map: &ReplicationMap, after: Token) -> Vec<RangePiece> {
    let ring = map.ring();
    if ring.is_empty() {
        let replicas = map.replicas(0).to_vec();
        return vec![RangePiece {
            range: TokenRange::new(after, i64::MAX),
            replicas,
        }];
    }
    // Ring tokens strictly after `after`, then MAX if it is not a ring token.
    let mut bounds: Vec<Token> = ring
        .tokens()
        .iter()
        .map(|(t, _)| *t)
        .filter(|t| *t > after)
        .collect();
    if bounds.last() != Some(&i64::MAX) {
        bounds.push(i64::MAX);
    }
    let mut pieces: Vec<RangePiece> = Vec::with_capacity(bounds.len());
    let mut start = after;
    for end in bounds {
        let replicas = map.replicas(end).to_vec();
        match pieces.last_mut() {
            Some(last) if same_set(&last.replicas, &replicas) => last.range.end = end,
            _ => pieces.push(RangePiece {
                range: TokenRange::new(start, end),
                replicas,
            }),
        }
        start = end;
    }
    pieces
}

fn same_set(a: &[NodeId], b: &[NodeId]) -> bool {
    a.len() == b.len() && a.iter().all(|n| b.contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use helenus_cluster::locator::{Location, Member, ReplicationStrategy, Ring};
    use std::net::{IpAddr, Ipv4Addr};
    use std::sync::Arc;
    use uuid::Uuid;

    fn id(n: u8) -> NodeId {
        NodeId(Uuid::from_u128(u128::from(n) + 1))
    }

    fn map(rf: usize) -> ReplicationMap {
        // Node i owns tokens -300 + 100 i and 300 + 100 i.
        let ring = Ring::new((0..3u8).map(|i| {
            (
                Member {
                    id: id(i),
                    address: IpAddr::V4(Ipv4Addr::new(127, 0, 0, i + 1)),
                    location: Location::default(),
                },
                vec![-300 + 100 * i64::from(i), 300 + 100 * i64::from(i)],
            )
        }))
        .unwrap();
        ReplicationMap::new(
            Arc::new(ring),
            ReplicationStrategy::Simple {
                replication_factor: rf,
            },
            id(0),
        )
    }

    #[test]
    fn the_ring_is_covered_once_in_token_order() {
        let m = map(1);
        let pieces = split_ring(&m);
        assert_eq!(pieces.first().unwrap().range.start, i64::MIN);
        assert_eq!(pieces.last().unwrap().range.end, i64::MAX);
        for w in pieces.windows(2) {
            assert_eq!(w[0].range.end, w[1].range.start, "no gap, no overlap");
        }
        // (MIN, -300] belongs with the wrapping range: the owner of -300.
        assert_eq!(pieces[0].range, TokenRange::new(i64::MIN, -300));
        assert_eq!(pieces[0].replicas, vec![id(0)]);
        // The tail (500, MAX] wraps to the first token's owner too.
        assert_eq!(pieces.last().unwrap().replicas, vec![id(0)]);
        for p in &pieces {
            let inside = p.range.end;
            assert_eq!(p.replicas, m.replicas(inside).to_vec());
        }
    }

    #[test]
    fn resuming_after_a_token_starts_there() {
        let m = map(1);
        let pieces = split_after(&m, -150);
        assert_eq!(pieces[0].range, TokenRange::new(-150, -100));
        assert_eq!(pieces[0].replicas, vec![id(2)]);
    }

    #[test]
    fn with_every_node_a_replica_the_whole_ring_is_one_piece() {
        let pieces = split_ring(&map(3));
        assert_eq!(pieces.len(), 1);
        assert_eq!(pieces[0].range, TokenRange::new(i64::MIN, i64::MAX));
    }
}
