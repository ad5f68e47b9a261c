//! A stored partition as a mutation with every time fixed (the `CellOp` variants that carry
//! expiry and deletion times), so that applying it elsewhere, at any time, rebuilds the same
//! partition: `Partition::from_mutation(&to_mutation(p))` equals `p`.

use super::{Partition, Row};
use crate::clustering::CKey;
use crate::reconcile::CellKind;
use crate::types::*;

/// `p` as a mutation of `table`, in storage order: range tombstones as `p` lists them, rows in
/// clustering order, cells by column then path, a column's complex deletion before its cells.
pub(crate) fn to_mutation(p: &Partition, table: TableId) -> Mutation {
    Mutation {
        table,
        key: p.key.clone(),
        token: p.token,
        partition_deletion: p.deletion,
        range_tombstones: p
            .range_tombstones
            .iter()
            .map(|(s, e, d)| (start_bound(s), end_bound(e), *d))
            .collect(),
        static_row: (!p.static_row.is_empty()).then(|| row_update(Vec::new(), &p.static_row)),
        rows: p
            .rows
            .iter()
            .map(|(k, r)| row_update(k.values.clone(), r))
            .collect(),
    }
}

/// A range tombstone's start position as a bound (`CKey::start` inverted).
fn start_bound(k: &CKey) -> ClusteringBound {
    ClusteringBound {
        prefix: k.values.clone(),
        kind: if k.weight > 0 {
            BoundKind::Exclusive
        } else {
            BoundKind::Inclusive
        },
    }
}

/// A range tombstone's end position as a bound (`CKey::end` inverted).
fn end_bound(k: &CKey) -> ClusteringBound {
    ClusteringBound {
        prefix: k.values.clone(),
        kind: if k.weight < 0 {
            BoundKind::Exclusive
        } else {
            BoundKind::Inclusive
        },
    }
}

fn row_update(clustering: Vec<bytes::Bytes>, r: &Row) -> RowUpdate {
    let mut cells = Vec::with_capacity(r.cells.len() + r.complex_deletions.len());
    let mut complex = r.complex_deletions.iter().peekable();
    for ((col, path), c) in &r.cells {
        while let Some((ccol, d)) = complex.next_if(|(ccol, _)| *ccol <= col) {
            cells.push(complex_deletion(*ccol, d));
        }
        let op = match &c.kind {
            CellKind::Live {
                value, ttl_s: 0, ..
            } => CellOp::Set {
                value: value.clone(),
                ttl_s: 0,
            },
            CellKind::Live {
                value,
                ttl_s,
                expires_at_s,
            } => CellOp::SetExpiring {
                value: value.clone(),
                ttl_s: *ttl_s,
                expires_at_s: *expires_at_s,
            },
            CellKind::Tombstone {
                local_deletion_time_s,
            } => CellOp::Tombstone {
                local_deletion_time_s: *local_deletion_time_s,
            },
            CellKind::Counter { clock, total } => CellOp::CounterState {
                clock: *clock,
                total: *total,
            },
        };
        cells.push(CellUpdate {
            column: *col,
            path: path.clone(),
            timestamp_us: c.timestamp_us,
            op,
        });
    }
    cells.extend(complex.map(|(col, d)| complex_deletion(*col, d)));
    RowUpdate {
        clustering,
        liveness: r.liveness,
        deletion: r.deletion,
        cells,
    }
}

fn complex_deletion(column: ColumnId, d: &DeletionTime) -> CellUpdate {
    CellUpdate {
        column,
        path: None,
        timestamp_us: d.marked_for_delete_at_us,
        op: CellOp::ComplexDeletion {
            local_deletion_time_s: d.local_deletion_time_s,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{b, mutation, table_def, SET_COL, STATIC_COL, TABLE};

    fn cell(column: ColumnId, path: Option<&[u8]>, ts: i64, op: CellOp) -> CellUpdate {
        CellUpdate {
            column,
            path: path.map(b),
            timestamp_us: ts,
            op,
        }
    }

    /// Every stored shape survives the trip through a mutation: the times a client write leaves
    /// open are fixed in it, so a replica applying it stores the same partition.
    #[test]
    fn a_partition_rebuilds_from_its_mutation() {
        let layout = crate::partition::TableLayout::new(&table_def(10));
        let dt = |ts| DeletionTime {
            marked_for_delete_at_us: ts,
            local_deletion_time_s: 77,
        };
        let mut m = mutation(b"k");
        m.partition_deletion = Some(dt(1));
        let excl = |v: &[u8]| ClusteringBound {
            prefix: vec![b(v)],
            kind: BoundKind::Exclusive,
        };
        m.range_tombstones
            .push((ClusteringBound::unbounded(), excl(b"m"), dt(2)));
        m.static_row = Some(RowUpdate {
            clustering: Vec::new(),
            liveness: None,
            deletion: None,
            cells: vec![cell(STATIC_COL, None, 5, CellOp::Delete)],
        });
        m.rows.push(RowUpdate {
            clustering: vec![b(b"r")],
            liveness: Some(Liveness {
                timestamp_us: 6,
                ttl_s: 100,
                expires_at_s: 500,
            }),
            deletion: Some(dt(3)),
            cells: vec![
                cell(
                    1,
                    None,
                    7,
                    CellOp::Set {
                        value: b(b"x"),
                        ttl_s: 60,
                    },
                ),
                cell(
                    2,
                    None,
                    8,
                    CellOp::CounterState {
                        clock: 3,
                        total: -4,
                    },
                ),
                cell(SET_COL, None, 9, CellOp::DeleteComplex),
                cell(
                    SET_COL,
                    Some(b"e"),
                    9,
                    CellOp::Set {
                        value: b(b""),
                        ttl_s: 0,
                    },
                ),
            ],
        });
        let mut p = Partition::from_mutation(&m, &layout).unwrap();
        super::super::stamp_local_times(&mut p, 1000);
        let again = Partition::from_mutation(&to_mutation(&p, TABLE), &layout).unwrap();
        assert_eq!(again.deletion, p.deletion);
        assert_eq!(again.range_tombstones.len(), 1);
        assert!(again
            .range_tombstones
            .iter()
            .zip(&p.range_tombstones)
            .all(|(x, y)| x == y));
        assert_eq!(again.static_row, p.static_row);
        assert_eq!(again.rows.len(), 1);
        assert_eq!(again.rows.values().next(), p.rows.values().next());
        assert_eq!(to_mutation(&again, TABLE), to_mutation(&p, TABLE));
        let row = &to_mutation(&p, TABLE).rows[0];
        assert!(row.cells.iter().any(|c| c.op
            == CellOp::SetExpiring {
                value: b(b"x"),
                ttl_s: 60,
                expires_at_s: 1060
            }));
    }
}
