//! Small write-side rules kept apart from `write.rs`: the multi-column relations a write accepts,
//! Cassandra's limit on expiration dates, and the cell paths of prepended list elements.

use super::error::{invalid, ExecError, ExecResult};
use helenus_cql::ast::{Operator, Relation, RelationValue, Term};
use helenus_schema::TableMeta;

/// Rewrites the multi-column relations a write accepts as single-column ones: `(c) op (v)` and
/// `(a, b) = (x, y)`; any other multi-column relation is left for `where_keys` to reject.
pub fn single_column_relations(where_clause: &[Relation]) -> Vec<Relation> {
    let mut out = Vec::with_capacity(where_clause.len());
    for r in where_clause {
        match r {
            Relation::MultiColumn {
                columns,
                op,
                value: RelationValue::Single(Term::Tuple(vals)),
            } if vals.len() == columns.len() && (columns.len() == 1 || *op == Operator::Eq) => {
                for (c, v) in columns.iter().zip(vals) {
                    out.push(Relation::Column {
                        column: c.clone(),
                        op: *op,
                        value: RelationValue::Single(v.clone()),
                    });
                }
            }
            Relation::MultiColumn {
                columns,
                op: Operator::In,
                value: RelationValue::List(tuples),
            } if columns.len() == 1 => {
                let mut vals = Vec::new();
                for t in tuples {
                    match t {
                        Term::Tuple(v) if v.len() == 1 => vals.extend(v.iter().cloned()),
                        _ => {
                            out.push(r.clone());
                            vals.clear();
                            break;
                        }
                    }
                }
                if !vals.is_empty() {
                    out.push(Relation::Column {
                        column: columns[0].clone(),
                        op: Operator::In,
                        value: RelationValue::List(vals),
                    });
                }
            }
            other => out.push(other.clone()),
        }
    }
    out
}

/// Cassandra (in its 4.x-compatible storage format) stores expiration times as signed 32-bit
/// seconds, one below Integer.MAX_VALUE at most, and rejects writes expiring after that.
pub fn check_expiration(t: &TableMeta, ttl: u32, now_s: i64) -> ExecResult<()> {
    const MAX_DELETION_TIME_S: i64 = i32::MAX as i64 - 1;
    if ttl == 0 || now_s + i64::from(ttl) <= MAX_DELETION_TIME_S {
        return Ok(());
    }
    invalid(format!(
        "Request on table {}.{} with ttl of {ttl} seconds exceeds maximum supported expiration date of 2038-01-19T03:14:06+00:00. In order to avoid this use a lower TTL, change the expiration date overflow policy or upgrade to a version where this limitation is fixed. See CASSANDRA-14092 and CASSANDRA-14227 for more details.",
        t.keyspace, t.name
    ))
}

/// Bytes one cell adds to a mutation's serialized size besides its path and value: flags and
/// the two lengths (Cassandra writes a cell at the row's timestamp without one of its own).
pub const CELL_OVERHEAD_BYTES: u64 = 4;

/// About the size Cassandra serializes `m` to, as `max_mutation_size` measures it.
pub fn mutation_size(m: &helenus_storage::Mutation) -> u64 {
    use helenus_storage::CellOp;
    let row = |r: &helenus_storage::RowUpdate| -> u64 {
        let clustering: u64 = r.clustering.iter().map(|c| 2 + c.len() as u64).sum();
        let cells: u64 = r
            .cells
            .iter()
            .map(|c| {
                let value = match &c.op {
                    CellOp::Set { value, .. } | CellOp::SetExpiring { value, .. } => value.len(),
                    CellOp::CounterAdd(_) | CellOp::CounterState { .. } => 16,
                    _ => 0,
                };
                let path = c.path.as_ref().map_or(0, |p| p.len());
                CELL_OVERHEAD_BYTES + (value + path) as u64
            })
            .sum();
        16 + clustering + cells
    };
    let rows: u64 = m.rows.iter().chain(m.static_row.iter()).map(row).sum();
    16 + m.key.len() as u64 + 24 * m.range_tombstones.len() as u64 + rows
}

/// Cassandra's `MutationExceededMaxSizeException`, an InvalidRequest. A write's mutations are
/// checked before any is applied, and a collection value before it is expanded into cells, so
/// one request cannot make the node hold more than `max` bytes of cells per partition.
pub fn oversized_mutation(size: u64, max: u64, t: &TableMeta, key: Option<&[u8]>) -> ExecError {
    let top = match key {
        Some(k) => format!("{}.{}", t.name, key_text(t, k)),
        None => t.name.clone(),
    };
    ExecError::Invalid(format!(
        "Rejected an oversized mutation ({size}/{max}) for keyspace: {}. Top keys are: {top}",
        t.keyspace
    ))
}

/// A partition key as Cassandra's `AbstractType.getString` shows it (components joined by ':').
fn key_text(t: &TableMeta, key: &[u8]) -> String {
    let Ok(parts) = helenus_types::split_composite_key(key, t.partition_key_len()) else {
        return String::new();
    };
    t.partition_key()
        .zip(parts)
        .map(|(c, b)| match helenus_types::deserialize(&c.cql_type, &b) {
            Ok(v) => helenus_types::to_plain_string(&v),
            Err(_) => String::new(),
        })
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;
    use helenus_cql::ast::Ident;

    fn id(n: &str) -> Ident {
        Ident {
            name: n.into(),
            quoted: false,
        }
    }

    fn int(v: &str) -> Term {
        Term::Integer(v.into())
    }

    #[test]
    fn one_column_tuples_and_tuple_equalities_become_column_relations() {
        let rels = vec![
            Relation::MultiColumn {
                columns: vec![id("c")],
                op: Operator::Gt,
                value: RelationValue::Single(Term::Tuple(vec![int("1")])),
            },
            Relation::MultiColumn {
                columns: vec![id("a"), id("b")],
                op: Operator::Eq,
                value: RelationValue::Single(Term::Tuple(vec![int("1"), int("2")])),
            },
        ];
        let out = single_column_relations(&rels);
        assert_eq!(out.len(), 3);
        assert!(
            matches!(&out[0], Relation::Column { column, op: Operator::Gt, .. } if column.name == "c")
        );
        assert!(
            matches!(&out[2], Relation::Column { column, op: Operator::Eq, .. } if column.name == "b")
        );
        // A two-column slice stays multi-column (and is rejected later).
        let slice = vec![Relation::MultiColumn {
            columns: vec![id("a"), id("b")],
            op: Operator::Gt,
            value: RelationValue::Single(Term::Tuple(vec![int("1"), int("2")])),
        }];
        assert!(matches!(
            single_column_relations(&slice)[0],
            Relation::MultiColumn { .. }
        ));
    }
}
