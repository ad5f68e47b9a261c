//! What `nodetool garbagecollect` drops from one SSTable's partition: the data that the same
//! partition elsewhere (other SSTables) shadows. As Cassandra's granularities: ROW drops what
//! the other copies' partition, range and row deletions cover; CELL also drops cells and row
//! markers that the other copies overwrite, and cells their collection deletions cover.
//! What is dropped is dead in a read of the whole table whichever copies it merges, and a
//! dropped deletion is one the other copies' deletions cover, so reads never change.

use super::{Partition, Row};
use crate::reconcile;

impl Partition {
    /// Drops from `self` what `other` (the same partition, from other SSTables) shadows.
    pub(crate) fn drop_shadowed_by(&mut self, other: &Partition, cells: bool) {
        let pd = other.deletion;
        if matches!((self.deletion, pd), (Some(mine), Some(o)) if !reconcile::deletion_supersedes(&mine, &o))
        {
            self.deletion = None;
        }
        self.range_tombstones
            .retain(|rt| !reconcile::deletes(pd, rt.2.marked_for_delete_at_us));
        self.static_row.drop_shadowed(pd);
        if cells {
            drop_overwritten(&mut self.static_row, &other.static_row);
        }
        for (k, row) in self.rows.iter_mut() {
            let theirs = other.rows.get(k);
            let covering = reconcile::max_deletion(
                other.covering_deletion(k),
                theirs.and_then(|r| r.deletion),
            );
            row.drop_shadowed(covering);
            if let (true, Some(theirs)) = (cells, theirs) {
                drop_overwritten(row, theirs);
            }
        }
        self.rows.retain(|_, r| !r.is_empty());
    }
}

/// Drops from `mine` the row marker, cells and collection deletions that `theirs` (the same row
/// elsewhere) supersedes.
fn drop_overwritten(mine: &mut Row, theirs: &Row) {
    if let (Some(m), Some(t)) = (mine.liveness, theirs.liveness) {
        if reconcile::liveness_supersedes(&t, &m) || t == m {
            mine.liveness = None;
        }
    }
    mine.complex_deletions.retain(|col, d| {
        !theirs
            .complex_deletions
            .get(col)
            .is_some_and(|t| reconcile::deletion_supersedes(t, d) || t == d)
    });
    let their_cds = &theirs.complex_deletions;
    mine.cells.retain(|key, c| {
        let collection_deleted =
            key.1.is_some() && reconcile::deletes(their_cds.get(&key.0).copied(), c.timestamp_us);
        let overwritten = theirs
            .cells
            .get(key)
            .is_some_and(|t| reconcile::cell_wins(t, c));
        !collection_deleted && !overwritten
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::clustering::{CKey, ClusteringComparator};
    use crate::codec::compact::tests::live;
    use crate::types::*;
    use bytes::Bytes;
    use std::sync::Arc;

    fn del(ts: i64) -> DeletionTime {
        DeletionTime {
            marked_for_delete_at_us: ts,
            local_deletion_time_s: 1,
        }
    }

    fn ck(v: &'static [u8]) -> CKey {
        let cmp = Arc::new(ClusteringComparator::new(
            crate::test_support::table_def(0).clustering,
        ));
        CKey::row(vec![Bytes::from_static(v)], &cmp)
    }

    /// Rows "a" and "b", each with column 1 written at `ts`.
    fn two_rows(ts: i64) -> Partition {
        let mut p = Partition::new(Bytes::from_static(b"k"), 1);
        for r in [b"a" as &'static [u8], b"b"] {
            let mut row = Row::default();
            row.cells.insert((1, None), live(ts, b"v"));
            p.insert_row(ck(r), row);
        }
        p
    }

    #[test]
    fn a_row_deletion_elsewhere_drops_the_older_row_and_nothing_newer() {
        let mut other = Partition::new(Bytes::from_static(b"k"), 1);
        other.insert_row(
            ck(b"a"),
            Row {
                deletion: Some(del(10)),
                ..Row::default()
            },
        );
        let mut older = two_rows(5);
        older.drop_shadowed_by(&other, false);
        assert_eq!(older.rows.len(), 1);
        assert!(older.rows.contains_key(&ck(b"b")));
        let mut newer = two_rows(20);
        newer.drop_shadowed_by(&other, false);
        assert_eq!(newer.rows.len(), 2);
    }

    #[test]
    fn a_partition_deletion_elsewhere_drops_everything_older_and_the_weaker_deletion() {
        let mut other = Partition::new(Bytes::from_static(b"k"), 1);
        other.deletion = Some(del(10));
        let mut p = two_rows(5);
        p.deletion = Some(del(3));
        p.drop_shadowed_by(&other, false);
        assert!(p.rows.is_empty() && p.deletion.is_none());
    }

    #[test]
    fn overwritten_cells_go_only_at_cell_granularity() {
        let other = two_rows(9);
        let mut row_level = two_rows(5);
        row_level.drop_shadowed_by(&other, false);
        assert_eq!(row_level.rows.len(), 2);
        let mut cell_level = two_rows(5);
        cell_level.drop_shadowed_by(&other, true);
        assert!(cell_level.rows.is_empty());
        // The newer copy keeps its cells.
        let mut newer = two_rows(12);
        newer.drop_shadowed_by(&other, true);
        assert_eq!(newer.rows.len(), 2);
    }
}
