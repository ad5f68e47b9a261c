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
