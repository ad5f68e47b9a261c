//! Checks Cassandra makes on a SELECT before planning it: relations that can never be served
//! (CONTAINS on a non-collection, a literal null), clauses that do not combine (PER PARTITION
//! LIMIT with an aggregate, DISTINCT with a filter on a row column) and clustering relations that
//! skip a column. Running them first keeps the planner free of error paths that only exist for
//! compatibility, and gives the error Cassandra gives even when a later check would also fail.

use super::restrictions::index_serves;
use crate::exec::error::{invalid, ExecError, ExecResult};
use crate::exec::selectors::Compiled;
use helenus_cql::ast::{Operator, Relation, RelationValue, SelectStatement, Term};
use helenus_schema::{ColumnKind, TableKind, TableMeta};
use helenus_types::CqlType;

/// Validates `s` against `t` with Cassandra's wording; only user tables are checked, as system
/// tables are read by drivers with queries Cassandra plans differently.
pub(super) fn check(t: &TableMeta, s: &SelectStatement, compiled: &Compiled) -> ExecResult<()> {
    if t.kind != TableKind::User {
        return Ok(());
    }
    if s.per_partition_limit.is_some() && compiled.has_aggregate && s.group_by.is_empty() {
        return invalid("PER PARTITION LIMIT is not allowed with aggregate queries.");
    }
    for r in &s.where_clause {
        match r {
            Relation::Column { column, op, value } => {
                let i = t.column_index(&column.name).ok_or_else(|| {
                    ExecError::Invalid(format!("Undefined column name {}", column.name))
                })?;
                check_column(t, s, i, *op, value)?;
            }
            Relation::Element {
                column, key, value, ..
            } => {
                if matches!(key, Term::Null) {
                    return invalid(format!("Unsupported null map key for column {}", column.name));
                }
                if matches!(value, Term::Null) {
                    return invalid(format!(
                        "Unsupported null map value for column {}",
                        column.name
                    ));
                }
                if s.distinct {
                    return invalid(DISTINCT_WHERE);
                }
            }
            Relation::MultiColumn { columns, op, .. } => {
                if s.distinct {
                    return invalid(DISTINCT_WHERE);
                }
                let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
                check_multi_prefix(t, s, &names, *op)?;
            }
            _ => {}
        }
    }
    Ok(())
}

const DISTINCT_WHERE: &str = "SELECT DISTINCT with WHERE clause only supports restriction by partition key and/or static columns.";

fn check_column(
    t: &TableMeta,
    s: &SelectStatement,
    i: usize,
    op: Operator,
    value: &RelationValue,
) -> ExecResult<()> {
    let c = &t.columns[i];
    match op {
        Operator::ContainsKey if !matches!(c.cql_type, CqlType::Map { .. }) => {
            return invalid(format!(
                "Cannot use CONTAINS KEY on non-map column {}",
                c.name
            ));
        }
        Operator::Contains
            if !matches!(
                c.cql_type,
                CqlType::Map { .. } | CqlType::List { .. } | CqlType::Set { .. }
            ) =>
        {
            return invalid(format!(
                "Cannot use CONTAINS on non-collection column {}",
                c.name
            ));
        }
        _ => {}
    }
    if matches!(value, RelationValue::Single(Term::Null)) && op != Operator::In {
        return invalid(format!("Unsupported null value for column {}", c.name));
    }
    if c.kind == ColumnKind::Clustering
        && matches!(op, Operator::Contains | Operator::ContainsKey)
        && !s.allow_filtering
        && index_serves(t, i, op).is_none()
    {
        let what = if op == Operator::Contains {
            "CONTAINS"
        } else {
            "CONTAINS KEY"
        };
        return invalid(format!(
            "Clustering columns can only be restricted with {what} with a secondary index or filtering"
        ));
    }
    if s.distinct && !matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Static) {
        return invalid(DISTINCT_WHERE);
    }
    Ok(())
}

/// A multi-column relation is a clustering restriction: the clustering columns before its first
/// one must be restricted by single-column relations, and as a filter it can only be `=`.
fn check_multi_prefix(
    t: &TableMeta,
    s: &SelectStatement,
    names: &[&str],
    op: Operator,
) -> ExecResult<()> {
    let ck: Vec<&str> = t
        .columns
        .iter()
        .filter(|c| c.kind == ColumnKind::Clustering)
        .map(|c| c.name.as_str())
        .collect();
    let Some(first) = names.first().and_then(|n| ck.iter().position(|c| c == n)) else {
        return Ok(());
    };
    let restricted = |name: &str| {
        s.where_clause.iter().any(|r| match r {
            Relation::Column {
                column,
                op: Operator::Eq | Operator::In,
                ..
            } => column.name == name,
            Relation::MultiColumn {
                columns,
                op: Operator::Eq | Operator::In,
                ..
            } => columns.iter().any(|c| c.name == name),
            _ => false,
        })
    };
    let Some(gap) = (0..first).find(|&p| !restricted(ck[p])) else {
        return Ok(());
    };
    if !s.allow_filtering {
        return invalid(format!(
            "PRIMARY KEY column \"{}\" cannot be restricted as preceding column \"{}\" is not restricted",
            names[0], ck[gap]
        ));
    }
    match op {
        Operator::In if names.len() > 1 => invalid("Multicolumn IN filters are not supported"),
        Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte => {
            invalid("Multi-column slice restrictions cannot be used for filtering.")
        }
        _ => Ok(()),
    }
}
