//! Small write-side rules kept apart from `write.rs`: the multi-column relations a write accepts,
//! Cassandra's limit on expiration dates, and the cell paths of prepended list elements.

use super::error::{invalid, ExecResult};
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
