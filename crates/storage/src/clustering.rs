//! Clustering order: full clusterings and bounds over prefixes share one total order, as in
//! Cassandra's `ClusteringComparator` (a bound sorts just before or just after every clustering
//! that starts with its prefix).

use crate::types::{BoundKind, ClusteringBound, ClusteringColumn, ValueOrder};
use bytes::Bytes;
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

/// Orders clusterings of one table.
pub struct ClusteringComparator {
    columns: Vec<ClusteringColumn>,
    /// Each column's `ValueComparator::order`, asked once.
    orders: Vec<ValueOrder>,
}

impl ClusteringComparator {
    pub fn new(columns: Vec<ClusteringColumn>) -> Self {
        let orders = columns.iter().map(|c| c.cmp.order()).collect();
        ClusteringComparator { columns, orders }
    }

    /// The clustering columns, in order.
    pub fn columns(&self) -> &[ClusteringColumn] {
        &self.columns
    }

    /// Number of clustering columns.
    pub fn len(&self) -> usize {
        self.columns.len()
    }

    fn compare_component(&self, i: usize, a: &[u8], b: &[u8]) -> Ordering {
        match self.columns.get(i) {
            Some(c) => {
                let inline = self.orders.get(i).and_then(|o| o.compare(a, b));
                let o = inline.unwrap_or_else(|| c.cmp.compare(a, b));
                if c.descending {
                    o.reverse()
                } else {
                    o
                }
            }
            // Extra components beyond the schema cannot come from a valid caller; order them bytewise.
            None => a.cmp(b),
        }
    }

    /// Compares two prefixes with their bound weights (-1 before, 0 exact, +1 after the prefix,
    /// `AFTER_ROW` just after the row with exactly this prefix).
    pub fn compare(&self, a: &[Bytes], a_weight: i8, b: &[Bytes], b_weight: i8) -> Ordering {
        for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
            let o = self.compare_component(i, x, y);
            if o != Ordering::Equal {
                return o;
            }
        }
        match a.len().cmp(&b.len()) {
            Ordering::Equal => rank(a_weight).cmp(&rank(b_weight)),
            Ordering::Less => {
                if rank(a_weight) == RANK_AFTER_ALL {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            Ordering::Greater => {
                if rank(b_weight) == RANK_AFTER_ALL {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
        }
    }
}

/// A position just after the row whose clustering is exactly the prefix, before the longer
/// clusterings starting with it. Rows of a dense COMPACT STORAGE table may have a clustering
/// prefix (Cassandra's null trailing components, which sort first): paging resumes there. Never
/// stored: range tombstone bounds keep -1 and +1.
pub const AFTER_ROW: i8 = 2;

/// The rank of a +1 weight (after every clustering with the prefix).
const RANK_AFTER_ALL: i8 = 2;

/// Orders the weights of positions over one prefix: before all, the row, just after the row,
/// after all.
fn rank(weight: i8) -> i8 {
    match weight {
        AFTER_ROW => 1,
        w if w < 0 => -2,
        0 => 0,
        _ => RANK_AFTER_ALL,
    }
}

/// A clustering (weight 0) or a bound position, ordered by its table's comparator.
#[derive(Clone)]
pub struct CKey {
    pub values: Vec<Bytes>,
    /// -1: just before all clusterings with this prefix; 0: a row; +1: just after.
    pub weight: i8,
    pub cmp: Arc<ClusteringComparator>,
}

impl CKey {
    /// A row's clustering.
    pub fn row(values: Vec<Bytes>, cmp: &Arc<ClusteringComparator>) -> Self {
        CKey {
            values,
            weight: 0,
            cmp: cmp.clone(),
        }
    }

    /// The position of a slice/range-tombstone start bound.
    pub fn start(b: &ClusteringBound, cmp: &Arc<ClusteringComparator>) -> Self {
        let weight = if b.prefix.is_empty() || b.kind == BoundKind::Inclusive {
            -1
        } else {
            1
        };
        CKey {
            values: b.prefix.clone(),
            weight,
            cmp: cmp.clone(),
        }
    }

    /// The position of a slice/range-tombstone end bound.
    pub fn end(b: &ClusteringBound, cmp: &Arc<ClusteringComparator>) -> Self {
        let weight = if b.prefix.is_empty() || b.kind == BoundKind::Inclusive {
            1
        } else {
            -1
        };
        CKey {
            values: b.prefix.clone(),
            weight,
            cmp: cmp.clone(),
        }
    }
}

impl CKey {
    /// Whether this start position precedes every clustering (an unbounded slice start).
    pub(crate) fn is_table_start(&self) -> bool {
        self.values.is_empty() && self.weight < 0
    }

    /// Whether this end position follows every clustering (an unbounded slice end).
    pub(crate) fn is_table_end(&self) -> bool {
        self.values.is_empty() && self.weight > 0
    }
}

/// Whether `k` lies in one of `ranges` (start and end inclusive). A side that is the table's
/// edge is not compared: a full scan's rows are each checked without a comparison.
pub(crate) fn in_ranges(ranges: &[(CKey, CKey)], k: &CKey) -> bool {
    ranges
        .iter()
        .any(|(s, e)| (s.is_table_start() || s <= k) && (e.is_table_end() || k <= e))
}

/// `[start, end]` as map bounds, a side that is the table's edge left open: a map's range
/// then needs no comparison on that side, and nothing is cloned.
pub(crate) fn map_bounds<'k>(
    start: &'k CKey,
    end: &'k CKey,
) -> (std::ops::Bound<&'k CKey>, std::ops::Bound<&'k CKey>) {
    use std::ops::Bound;
    let lo = if start.is_table_start() {
        Bound::Unbounded
    } else {
        Bound::Included(start)
    };
    let hi = if end.is_table_end() {
        Bound::Unbounded
    } else {
        Bound::Included(end)
    };
    (lo, hi)
}

/// Whether `ranges` hold every clustering.
pub(crate) fn covers_all(ranges: &[(CKey, CKey)]) -> bool {
    ranges
        .iter()
        .any(|(s, e)| s.is_table_start() && e.is_table_end())
}

impl PartialEq for CKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for CKey {}
impl PartialOrd for CKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for CKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.cmp
            .compare(&self.values, self.weight, &other.values, other.weight)
    }
}

impl fmt::Debug for CKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CKey({:?}, {})", self.values, self.weight)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::types::ValueComparator;

    pub struct Bytewise;
    impl ValueComparator for Bytewise {
        fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
            a.cmp(b)
        }
    }

    pub fn cmp2(desc_second: bool) -> Arc<ClusteringComparator> {
        Arc::new(ClusteringComparator::new(vec![
            ClusteringColumn {
                cmp: Arc::new(Bytewise),
                descending: false,
            },
            ClusteringColumn {
                cmp: Arc::new(Bytewise),
                descending: desc_second,
            },
        ]))
    }

    fn b(v: &[u8]) -> Bytes {
        Bytes::copy_from_slice(v)
    }

    #[test]
    fn inclusive_start_bound_sorts_before_rows_with_its_prefix() {
        let c = cmp2(false);
        let start = CKey::start(
            &ClusteringBound {
                prefix: vec![b(b"a")],
                kind: BoundKind::Inclusive,
            },
            &c,
        );
        let row = CKey::row(vec![b(b"a"), b(b"x")], &c);
        assert!(start < row);
        let excl = CKey::start(
            &ClusteringBound {
                prefix: vec![b(b"a")],
                kind: BoundKind::Exclusive,
            },
            &c,
        );
        assert!(excl > row);
        assert!(excl < CKey::row(vec![b(b"b"), b(b"a")], &c));
    }

    #[test]
    fn descending_column_reverses_order() {
        let c = cmp2(true);
        assert!(CKey::row(vec![b(b"a"), b(b"2")], &c) < CKey::row(vec![b(b"a"), b(b"1")], &c));
    }

    #[test]
    fn empty_bounds_are_bottom_and_top() {
        let c = cmp2(false);
        let bottom = CKey::start(&ClusteringBound::unbounded(), &c);
        let top = CKey::end(&ClusteringBound::unbounded(), &c);
        let row = CKey::row(vec![b(b""), b(b"")], &c);
        assert!(bottom < row && row < top);
    }

    #[test]
    fn prefix_rows_sort_first_and_after_row_sits_between_them_and_longer_rows() {
        // Descending second column: a missing component still sorts before every value.
        let c = cmp2(true);
        let prefix = CKey::row(vec![b(b"a")], &c);
        let full = CKey::row(vec![b(b"a"), b(b"z")], &c);
        assert!(prefix < full);
        let after_row = CKey {
            values: vec![b(b"a")],
            weight: AFTER_ROW,
            cmp: c.clone(),
        };
        assert!(prefix < after_row && after_row < full);
        let after_all = CKey::end(
            &ClusteringBound {
                prefix: vec![b(b"a")],
                kind: BoundKind::Inclusive,
            },
            &c,
        );
        assert!(after_row < after_all && full < after_all);
        assert!(after_row < CKey::row(vec![b(b"b")], &c));
    }
}
