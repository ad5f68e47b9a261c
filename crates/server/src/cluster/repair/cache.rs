//! The digests a replica hashed for its latest trees, kept for a while: a repair lists the
//! digests of the ranges where the trees differ right after they are built, and reading and
//! hashing those partitions again would cost as much as the tree did. The lists answer for the
//! moment the tree was built, as the tree does; the partitions that differ are read afresh.

use super::compare::DigestEntry;
use super::View;
use helenus_cluster::locator::TokenRange;
use helenus_storage as st;
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Entries kept over all cached trees (tens of MB at most); a tree with more is not cached.
pub(super) const MAX_ENTRIES: usize = 256 * 1024;
/// A repair lists a range's digests right after its trees, so a few trees suffice.
const MAX_TREES: usize = 16;
/// After this a list is too old to stand for the tree that the requester compared.
const KEEP: Duration = Duration::from_secs(300);

struct Cached {
    table: st::TableId,
    range: TokenRange,
    view: View,
    built: Instant,
    /// Sorted by (token, key).
    entries: Arc<Vec<DigestEntry>>,
}

#[derive(Default)]
pub struct DigestCache {
    trees: Mutex<Vec<Cached>>,
}

impl DigestCache {
    /// Keeps the digests of the tree just built for `table` over `range`, dropping the oldest
    /// lists past the limits.
    pub(super) fn keep(
        &self,
        table: st::TableId,
        range: TokenRange,
        view: View,
        mut entries: Vec<DigestEntry>,
    ) {
        if entries.len() > MAX_ENTRIES {
            return;
        }
        entries.sort_unstable_by(|a, b| (a.token, &a.key).cmp(&(b.token, &b.key)));
        let mut trees = self.trees.lock();
        trees.retain(|c| {
            !(c.table == table && c.range == range && c.view == view) && c.built.elapsed() < KEEP
        });
        trees.push(Cached {
            table,
            range,
            view,
            built: Instant::now(),
            entries: Arc::new(entries),
        });
        while trees.len() > MAX_TREES
            || trees.iter().map(|c| c.entries.len()).sum::<usize>() > MAX_ENTRIES
        {
            trees.remove(0);
        }
    }

    /// Up to `limit` entries from `start` to `end` of the list kept for `table`'s tree over
    /// `range`; None when there is none (never built here, too big, or too old).
    pub(super) fn page(
        &self,
        table: st::TableId,
        range: TokenRange,
        view: View,
        start: &st::PartitionBound,
        end: &st::PartitionBound,
        limit: usize,
    ) -> Option<Vec<DigestEntry>> {
        let entries = {
            let trees = self.trees.lock();
            let cached = trees.iter().find(|c| {
                c.table == table && c.range == range && c.view == view && c.built.elapsed() < KEEP
            })?;
            cached.entries.clone()
        };
        let from = entries.partition_point(|e| !start.admits_as_start(e.token, &e.key));
        Some(
            entries
                .get(from..)
                .unwrap_or(&[])
                .iter()
                .take_while(|e| end.admits_as_end(e.token, &e.key))
                .take(limit)
                .cloned()
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use bytes::Bytes;

    fn entry(token: i64, key: &'static [u8]) -> DigestEntry {
        DigestEntry {
            token,
            key: Bytes::from_static(key),
            digest: [token as u8; 16],
        }
    }

    fn tokens(page: Option<Vec<DigestEntry>>) -> Vec<i64> {
        page.unwrap().iter().map(|e| e.token).collect()
    }

    #[test]
    fn a_page_is_cut_by_its_bounds_and_limit() {
        let cache = DigestCache::default();
        let range = TokenRange::new(0, 100);
        cache.keep(
            [1; 16],
            range,
            View::Live,
            (1..=9).rev().map(|t| entry(t * 10, b"k")).collect(),
        );
        let after = |token| st::PartitionBound::Token {
            token,
            inclusive: false,
        };
        let through = |token| st::PartitionBound::Token {
            token,
            inclusive: true,
        };
        assert_eq!(
            tokens(cache.page([1; 16], range, View::Live, &after(20), &through(50), 10)),
            vec![30, 40, 50]
        );
        assert_eq!(
            tokens(cache.page([1; 16], range, View::Live, &after(0), &through(100), 2)),
            vec![10, 20]
        );
        let resume = st::PartitionBound::Key {
            token: 20,
            key: Bytes::from_static(b"k"),
            inclusive: false,
        };
        assert_eq!(
            tokens(cache.page(
                [1; 16],
                range,
                View::Live,
                &resume,
                &st::PartitionBound::Unbounded,
                2
            )),
            vec![30, 40]
        );
        assert!(cache
            .page([2; 16], range, View::Live, &after(0), &through(100), 2)
            .is_none());
        assert!(cache
            .page(
                [1; 16],
                TokenRange::new(0, 99),
                View::Live,
                &after(0),
                &through(100),
                2
            )
            .is_none());
    }

    #[test]
    fn the_newest_tree_replaces_the_list_and_the_oldest_go_first() {
        let cache = DigestCache::default();
        let range = |i: i64| TokenRange::new(i * 10, i * 10 + 10);
        for i in 0..=MAX_TREES as i64 {
            cache.keep([0; 16], range(i), View::Live, vec![entry(i * 10 + 1, b"a")]);
        }
        let all = (st::PartitionBound::Unbounded, st::PartitionBound::Unbounded);
        assert!(cache
            .page([0; 16], range(0), View::Live, &all.0, &all.1, 9)
            .is_none());
        assert_eq!(
            tokens(cache.page([0; 16], range(1), View::Live, &all.0, &all.1, 9)),
            vec![11]
        );
        cache.keep(
            [0; 16],
            range(1),
            View::Live,
            vec![entry(12, b"a"), entry(13, b"a")],
        );
        assert_eq!(
            tokens(cache.page([0; 16], range(1), View::Live, &all.0, &all.1, 9)),
            vec![12, 13]
        );
    }
}
