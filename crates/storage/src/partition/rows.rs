//! A partition's rows in clustering order: an ordered map that holds a single row inline.
//!
//! Most partitions of point-write workloads (every table without clustering columns) have one
//! row, and a `BTreeMap` gives even one entry a whole leaf with room for eleven: about 550 bytes
//! of a one-row partition's 1.6 KB in a memtable, so a memtable of such partitions flushed (and
//! the table compacted) about a third more often than its data needed. The map's API is kept
//! (the subset partitions use), so callers read as they would with a `BTreeMap`.

use super::Row;
use crate::clustering::CKey;
use std::collections::{btree_map, BTreeMap};
use std::ops::RangeBounds;

type Map = BTreeMap<CKey, Box<Row>>;

/// Rows by clustering, each key at most once.
#[derive(Clone, Default)]
pub struct Rows {
    repr: Repr,
}

#[derive(Clone, Default)]
enum Repr {
    #[default]
    Empty,
    One(CKey, Box<Row>),
    /// Two rows or more (or fewer after removals: a map is not turned back into `One` on every
    /// removal, only where whole parts of it go).
    Many(Map),
}

/// An iterator over either shape; both yield the same items in the same order.
pub enum Either<A, B> {
    One(A),
    Many(B),
}

impl<A: Iterator, B: Iterator<Item = A::Item>> Iterator for Either<A, B> {
    type Item = A::Item;
    fn next(&mut self) -> Option<A::Item> {
        match self {
            Either::One(a) => a.next(),
            Either::Many(b) => b.next(),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Either::One(a) => a.size_hint(),
            Either::Many(b) => b.size_hint(),
        }
    }
}

impl<A, B> DoubleEndedIterator for Either<A, B>
where
    A: DoubleEndedIterator,
    B: DoubleEndedIterator<Item = A::Item>,
{
    fn next_back(&mut self) -> Option<A::Item> {
        match self {
            Either::One(a) => a.next_back(),
            Either::Many(b) => b.next_back(),
        }
    }
}

impl<A: ExactSizeIterator, B: ExactSizeIterator<Item = A::Item>> ExactSizeIterator
    for Either<A, B>
{
}

pub type Iter<'a> =
    Either<std::option::IntoIter<(&'a CKey, &'a Box<Row>)>, btree_map::Iter<'a, CKey, Box<Row>>>;
pub type IterMut<'a> = Either<
    std::option::IntoIter<(&'a CKey, &'a mut Box<Row>)>,
    btree_map::IterMut<'a, CKey, Box<Row>>,
>;
pub type Range<'a> =
    Either<std::option::IntoIter<(&'a CKey, &'a Box<Row>)>, btree_map::Range<'a, CKey, Box<Row>>>;
pub type IntoIter =
    Either<std::option::IntoIter<(CKey, Box<Row>)>, btree_map::IntoIter<CKey, Box<Row>>>;

impl Rows {
    pub fn new() -> Self {
        Rows::default()
    }

    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Empty => 0,
            Repr::One(..) => 1,
            Repr::Many(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the rows live in a map of their own (memory accounting: one row is inline).
    pub(crate) fn is_map(&self) -> bool {
        matches!(self.repr, Repr::Many(_))
    }

    pub fn get(&self, k: &CKey) -> Option<&Row> {
        match &self.repr {
            Repr::Empty => None,
            Repr::One(key, row) => (key == k).then_some(&**row),
            Repr::Many(m) => m.get(k).map(|r| &**r),
        }
    }

    pub fn get_mut(&mut self, k: &CKey) -> Option<&mut Box<Row>> {
        match &mut self.repr {
            Repr::Empty => None,
            Repr::One(key, row) => (*key == *k).then_some(row),
            Repr::Many(m) => m.get_mut(k),
        }
    }

    pub fn contains_key(&self, k: &CKey) -> bool {
        self.get(k).is_some()
    }

    /// Inserts or replaces; returns the replaced row.
    pub fn insert(&mut self, k: CKey, row: Box<Row>) -> Option<Box<Row>> {
        match &mut self.repr {
            Repr::Empty => {
                self.repr = Repr::One(k, row);
                None
            }
            Repr::One(key, cur) if *key == k => Some(std::mem::replace(cur, row)),
            Repr::One(..) => {
                let mut m = Map::new();
                if let Repr::One(key, cur) = std::mem::take(&mut self.repr) {
                    m.insert(key, cur);
                }
                m.insert(k, row);
                self.repr = Repr::Many(m);
                None
            }
            Repr::Many(m) => m.insert(k, row),
        }
    }

    /// Runs `f` on the row at `k`, inserted empty first if there was none.
    pub fn with_row_or_default<R>(&mut self, k: CKey, f: impl FnOnce(&mut Row) -> R) -> R {
        if let Some(row) = self.get_mut(&k) {
            return f(row);
        }
        let mut row = Box::<Row>::default();
        let out = f(&mut row);
        self.insert(k, row);
        out
    }

    pub fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Empty => Either::One(None.into_iter()),
            Repr::One(k, r) => Either::One(Some((k, r)).into_iter()),
            Repr::Many(m) => Either::Many(m.iter()),
        }
    }

    pub fn iter_mut(&mut self) -> IterMut<'_> {
        match &mut self.repr {
            Repr::Empty => Either::One(None.into_iter()),
            Repr::One(k, r) => Either::One(Some((&*k, r)).into_iter()),
            Repr::Many(m) => Either::Many(m.iter_mut()),
        }
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &CKey> + ExactSizeIterator + '_ {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Box<Row>> + ExactSizeIterator + '_ {
        self.iter().map(|(_, r)| r)
    }

    pub fn values_mut(
        &mut self,
    ) -> impl DoubleEndedIterator<Item = &mut Box<Row>> + ExactSizeIterator + '_ {
        self.iter_mut().map(|(_, r)| r)
    }

    /// The rows within `bounds`, in order; none for bounds that cross (where
    /// `BTreeMap::range` would panic), in either shape.
    pub fn range<R: RangeBounds<CKey>>(&self, bounds: R) -> Range<'_> {
        if !bounds_admit_anything(&bounds) {
            return Either::One(None.into_iter());
        }
        match &self.repr {
            Repr::Empty => Either::One(None.into_iter()),
            Repr::One(k, r) => Either::One(bounds.contains(k).then_some((k, r)).into_iter()),
            Repr::Many(m) => Either::Many(m.range(bounds)),
        }
    }

    pub fn first_key_value(&self) -> Option<(&CKey, &Row)> {
        self.iter().next().map(|(k, r)| (k, &**r))
    }

    pub fn last_key_value(&self) -> Option<(&CKey, &Row)> {
        self.iter().next_back().map(|(k, r)| (k, &**r))
    }

    /// Keeps the rows for which `f` returns true.
    pub fn retain(&mut self, mut f: impl FnMut(&CKey, &mut Box<Row>) -> bool) {
        match &mut self.repr {
            Repr::Empty => {}
            Repr::One(k, r) => {
                if !f(k, r) {
                    self.repr = Repr::Empty;
                }
            }
            Repr::Many(m) => {
                m.retain(|k, r| f(k, r));
                self.compact();
            }
        }
    }

    /// Splits off the rows at and after `k`, which the returned `Rows` holds.
    pub fn split_off(&mut self, k: &CKey) -> Rows {
        let split = match &mut self.repr {
            Repr::Empty => return Rows::new(),
            Repr::One(key, _) if *key < *k => return Rows::new(),
            Repr::One(..) => return std::mem::take(self),
            Repr::Many(m) => m.split_off(k),
        };
        self.compact();
        Rows::from_map(split)
    }

    /// Moves every row of `other` into `self` (replacing equal keys), leaving `other` empty;
    /// two maps are joined as `BTreeMap::append` joins them, in bulk.
    pub fn append(&mut self, other: &mut Rows) {
        let mut other = std::mem::take(other);
        if self.is_empty() {
            *self = other;
            return;
        }
        if let (Repr::Many(mine), Repr::Many(theirs)) = (&mut self.repr, &mut other.repr) {
            mine.append(theirs);
            return;
        }
        for (k, r) in other {
            self.insert(k, r);
        }
    }

    fn from_map(m: Map) -> Rows {
        let mut rows = Rows {
            repr: Repr::Many(m),
        };
        rows.compact();
        rows
    }

    /// A map of at most one row becomes the inline shape.
    fn compact(&mut self) {
        if let Repr::Many(m) = &mut self.repr {
            if m.len() <= 1 {
                self.repr = match m.pop_first() {
                    Some((k, r)) => Repr::One(k, r),
                    None => Repr::Empty,
                };
            }
        }
    }
}

/// Whether `bounds` can hold a key: `BTreeMap::range` panics on a start after the end, and on
/// equal bounds both excluded.
fn bounds_admit_anything<R: RangeBounds<CKey>>(bounds: &R) -> bool {
    use std::ops::Bound::{Excluded, Included};
    match (bounds.start_bound(), bounds.end_bound()) {
        (Excluded(s), Excluded(e)) => s < e,
        (Included(s) | Excluded(s), Included(e) | Excluded(e)) => s <= e,
        _ => true,
    }
}

impl std::fmt::Debug for Rows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl FromIterator<(CKey, Box<Row>)> for Rows {
    fn from_iter<I: IntoIterator<Item = (CKey, Box<Row>)>>(iter: I) -> Self {
        Rows::from_map(iter.into_iter().collect())
    }
}

impl Extend<(CKey, Box<Row>)> for Rows {
    fn extend<I: IntoIterator<Item = (CKey, Box<Row>)>>(&mut self, iter: I) {
        for (k, r) in iter {
            self.insert(k, r);
        }
    }
}

impl IntoIterator for Rows {
    type Item = (CKey, Box<Row>);
    type IntoIter = IntoIter;
    fn into_iter(self) -> IntoIter {
        match self.repr {
            Repr::Empty => Either::One(None.into_iter()),
            Repr::One(k, r) => Either::One(Some((k, r)).into_iter()),
            Repr::Many(m) => Either::Many(m.into_iter()),
        }
    }
}

impl<'a> IntoIterator for &'a Rows {
    type Item = (&'a CKey, &'a Box<Row>);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut Rows {
    type Item = (&'a CKey, &'a mut Box<Row>);
    type IntoIter = IterMut<'a>;
    fn into_iter(self) -> IterMut<'a> {
        self.iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clustering::ClusteringComparator;
    use crate::reconcile::{Cell, CellKind};
    use crate::test_support::Bytewise;
    use crate::types::ClusteringColumn;
    use bytes::Bytes;
    use std::ops::Bound;
    use std::sync::Arc;

    fn cmp() -> Arc<ClusteringComparator> {
        Arc::new(ClusteringComparator::new(vec![ClusteringColumn {
            cmp: Arc::new(Bytewise),
            descending: false,
        }]))
    }

    fn key(cmp: &Arc<ClusteringComparator>, n: u8) -> CKey {
        CKey::row(vec![Bytes::copy_from_slice(&[n])], cmp)
    }

    /// A row told apart by the timestamp of its one cell.
    fn row(ts: i64) -> Box<Row> {
        let mut r = Row::default();
        let cell = Cell {
            timestamp_us: ts,
            kind: CellKind::Tombstone {
                local_deletion_time_s: 0,
            },
        };
        r.cells.insert((1, None), cell);
        Box::new(r)
    }

    fn stamp(r: &Row) -> i64 {
        r.cells.values().next().map_or(-1, |c| c.timestamp_us)
    }

    fn stamps<'a>(rows: impl Iterator<Item = (&'a CKey, &'a Box<Row>)>) -> Vec<i64> {
        rows.map(|(_, r)| stamp(r)).collect()
    }

    /// Every operation, on random keys, agrees with a `BTreeMap` doing the same.
    #[test]
    fn behaves_as_a_btree_map() {
        let c = cmp();
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..300 {
            let mut rows = Rows::new();
            let mut model = Map::new();
            for step in 0..12 {
                let k = key(&c, next(6) as u8);
                match next(6) {
                    0..=2 => {
                        assert_eq!(
                            rows.insert(k.clone(), row(step)).map(|r| stamp(&r)),
                            model.insert(k, row(step)).map(|r| stamp(&r))
                        );
                    }
                    3 => {
                        let keep = next(2) as i64;
                        rows.retain(|_, r| stamp(r) % 2 == keep);
                        model.retain(|_, r| stamp(r) % 2 == keep);
                    }
                    4 => {
                        let got = rows.split_off(&k);
                        let want = model.split_off(&k);
                        assert_eq!(stamps(got.iter()), stamps(want.iter()));
                    }
                    _ => {
                        let from = (Bound::Included(&k), Bound::Unbounded);
                        assert_eq!(
                            stamps(rows.range(from).rev()),
                            stamps(model.range(from).rev())
                        );
                        assert_eq!(rows.get(&k).map(stamp), model.get(&k).map(|r| stamp(r)));
                    }
                }
                assert_eq!(rows.len(), model.len());
                assert_eq!(stamps(rows.iter()), stamps(model.iter()));
                assert_eq!(
                    rows.last_key_value().map(|(k, _)| k.clone()),
                    model.last_key_value().map(|(k, _)| k.clone())
                );
            }
        }
    }

    #[test]
    fn crossing_bounds_give_no_rows_in_either_shape() {
        let c = cmp();
        let mut rows = Rows::new();
        rows.insert(key(&c, 1), row(1));
        for _ in 0..2 {
            let (lo, hi) = (key(&c, 3), key(&c, 1));
            assert_eq!(
                rows.range((Bound::Included(&lo), Bound::Included(&hi)))
                    .count(),
                0
            );
            let one = key(&c, 1);
            assert_eq!(
                rows.range((Bound::Excluded(&one), Bound::Excluded(&one)))
                    .count(),
                0
            );
            assert_eq!(
                rows.range((Bound::Included(&one), Bound::Included(&one)))
                    .count(),
                1
            );
            rows.insert(key(&c, 2), row(2));
        }
    }

    #[test]
    fn one_row_is_inline_and_a_second_makes_a_map() {
        let c = cmp();
        let mut rows = Rows::new();
        rows.insert(key(&c, 1), row(1));
        assert!(!rows.is_map());
        assert_eq!(rows.insert(key(&c, 1), row(2)).map(|r| stamp(&r)), Some(1));
        assert!(!rows.is_map());
        rows.insert(key(&c, 0), row(3));
        assert!(rows.is_map());
        assert_eq!(stamps(rows.iter()), vec![3, 2]);
        rows.retain(|k, _| *k == key(&c, 0));
        assert!(!rows.is_map());
        rows.with_row_or_default(key(&c, 5), |r| assert!(r.is_empty()));
        assert_eq!(stamps(rows.iter()), vec![3, -1]);
        let mut more: Rows = [(key(&c, 9), row(9))].into_iter().collect();
        rows.append(&mut more);
        assert!(more.is_empty());
        assert_eq!(stamps(rows.iter()), vec![3, -1, 9]);
    }
}
