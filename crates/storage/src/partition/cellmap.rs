//! The cells of one row, keyed by (column, cell path), in one sorted vector.
//!
//! A `BTreeMap` here cost about 13 KB for a 57-column row: cells arrive in column order, so
//! every leaf split left half-empty leaves of ~1.1 KB each. A row's cells are few and mostly
//! appended in order, so a sorted vector gives the same ordered-map behaviour in one allocation
//! of `len * size_of::<(CellKey, Cell)>()` bytes (about 100 bytes a cell), with appends in O(1)
//! and lookups by binary search.

use crate::reconcile::Cell;
use crate::types::ColumnId;
use bytes::Bytes;

/// (column, cell path); the path is set only for elements of multi-cell columns.
pub type CellKey = (ColumnId, Option<Bytes>);

/// Cells of a row in (column, path) order, each key at most once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CellMap {
    entries: Vec<(CellKey, Cell)>,
}

impl CellMap {
    pub fn new() -> Self {
        CellMap::default()
    }

    pub fn with_capacity(n: usize) -> Self {
        CellMap {
            entries: Vec::with_capacity(n),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries the vector can hold without growing (memory accounting).
    pub fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// Gives back capacity a finished row will not use (memtable rows live until flushed).
    pub fn shrink_to_fit(&mut self) {
        self.entries.shrink_to_fit();
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    fn find(&self, k: &CellKey) -> Result<usize, usize> {
        // Most lookups come from merging rows written in column order: check the end first.
        match self.entries.last() {
            None => Err(0),
            Some((last, _)) if last < k => Err(self.entries.len()),
            _ => self.entries.binary_search_by(|(e, _)| e.cmp(k)),
        }
    }

    pub fn get(&self, k: &CellKey) -> Option<&Cell> {
        let i = self.find(k).ok()?;
        self.entries.get(i).map(|(_, c)| c)
    }

    pub fn get_mut(&mut self, k: &CellKey) -> Option<&mut Cell> {
        let i = self.find(k).ok()?;
        self.entries.get_mut(i).map(|(_, c)| c)
    }

    /// Inserts or replaces; returns the replaced cell.
    pub fn insert(&mut self, k: CellKey, c: Cell) -> Option<Cell> {
        match self.find(&k) {
            Ok(i) => self
                .entries
                .get_mut(i)
                .map(|(_, cur)| std::mem::replace(cur, c)),
            Err(i) => {
                self.entries.insert(i, (k, c));
                None
            }
        }
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&CellKey, &Cell)> + '_ {
        self.entries.iter().map(|(k, c)| (k, c))
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &CellKey> + '_ {
        self.entries.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Cell> + '_ {
        self.entries.iter().map(|(_, c)| c)
    }

    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut Cell> + '_ {
        self.entries.iter_mut().map(|(_, c)| c)
    }

    /// Mutable keys too, for replacing a path with an equal copy (memtable arenas); a caller
    /// that changed a key's order would break every lookup.
    pub(crate) fn iter_mut_for_copy(
        &mut self,
    ) -> impl Iterator<Item = (&mut CellKey, &mut Cell)> + '_ {
        self.entries.iter_mut().map(|(k, c)| (k, c))
    }

    /// Merges `other`'s cells in: `resolve(new, current)` settles a key both hold, in place;
    /// returns how many keys were new here. One walk over both sorted vectors, where looking
    /// each cell up cost a binary search (an overwrite of a whole row finds every key equal).
    pub fn merge_with(&mut self, other: CellMap, mut resolve: impl FnMut(Cell, &mut Cell)) -> u64 {
        let mut added = Vec::new();
        let mut mine = 0;
        for (k, c) in other.entries {
            while self.entries.get(mine).is_some_and(|(e, _)| *e < k) {
                mine += 1;
            }
            match self.entries.get_mut(mine) {
                Some((e, cur)) if *e == k => {
                    resolve(c, cur);
                    mine += 1;
                }
                _ => added.push((k, c)),
            }
        }
        let n = added.len() as u64;
        if n > 0 {
            self.entries.extend(added);
            // Stable: each key appears once, so order among equals never matters.
            self.entries.sort_by(|(a, _), (b, _)| a.cmp(b));
        }
        n
    }

    /// Keeps the cells for which `f` returns true, in order.
    pub fn retain(&mut self, mut f: impl FnMut(&CellKey, &mut Cell) -> bool) {
        self.entries.retain_mut(|(k, c)| f(k, c));
    }
}

impl IntoIterator for CellMap {
    type Item = (CellKey, Cell);
    type IntoIter = std::vec::IntoIter<(CellKey, Cell)>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<'a> IntoIterator for &'a CellMap {
    type Item = (&'a CellKey, &'a Cell);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (CellKey, Cell)>,
        fn(&'a (CellKey, Cell)) -> (&'a CellKey, &'a Cell),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(k, c)| (k, c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::CellKind;

    fn cell(ts: i64) -> Cell {
        Cell {
            timestamp_us: ts,
            kind: CellKind::Tombstone {
                local_deletion_time_s: 0,
            },
        }
    }

    #[test]
    fn a_merge_settles_shared_keys_in_place_and_adds_the_others_in_order() {
        let mut m = CellMap::new();
        for col in [2, 4, 6] {
            m.insert((col, None), cell(1));
        }
        let mut other = CellMap::new();
        for col in [1, 4, 5, 9] {
            other.insert((col, None), cell(2));
        }
        let mut settled = Vec::new();
        let added = m.merge_with(other, |new, cur| {
            settled.push(cur.timestamp_us);
            *cur = new;
        });
        assert_eq!((added, settled), (3, vec![1]));
        let got: Vec<_> = m.iter().map(|((c, _), v)| (*c, v.timestamp_us)).collect();
        assert_eq!(got, vec![(1, 2), (2, 1), (4, 2), (5, 2), (6, 1), (9, 2)]);
    }

    #[test]
    fn out_of_order_inserts_iterate_sorted_and_replace_in_place() {
        let mut m = CellMap::new();
        for (col, ts) in [(5, 1), (1, 2), (3, 3), (5, 4), (9, 5)] {
            m.insert((col, None), cell(ts));
        }
        m.insert((3, Some(Bytes::from_static(b"p"))), cell(6));
        let keys: Vec<_> = m.keys().cloned().collect();
        assert_eq!(
            keys,
            vec![
                (1, None),
                (3, None),
                (3, Some(Bytes::from_static(b"p"))),
                (5, None),
                (9, None)
            ]
        );
        assert_eq!(m.get(&(5, None)).map(|c| c.timestamp_us), Some(4));
        assert!(m.get(&(4, None)).is_none());
        m.retain(|(col, _), _| *col != 3);
        assert_eq!(m.len(), 3);
    }
}
