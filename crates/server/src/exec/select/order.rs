//! Row ordering and grouping done in memory: `ORDER BY ... ANN OF` (planning and similarity
//! ranking), merging the partitions of an `IN` query with ORDER BY, and GROUP BY aggregation.

use super::SelectPlan;
use crate::exec::aggregates;
use crate::exec::error::{invalid, ExecError, ExecResult};
use crate::exec::key_values::note_binds;
use crate::exec::rows::Row;
use crate::exec::selectors::{eval, Sel};
use crate::exec::values::{self, Binds};
use crate::exec::BindSpec;
use bytes::Bytes;
use helenus_cql::ast::{self, Term};
use helenus_schema::TableMeta;
use helenus_types::CqlType;
use std::cmp::Ordering;

/// Checks an `ORDER BY v ANN OF [...]` as Cassandra 5.0 does: the column must have a
/// storage-attached index (whose `similarity_function` ranks rows) and the query a LIMIT.
pub(super) fn plan_ann(
    t: &TableMeta,
    column: &ast::Ident,
    vector: &Term,
    has_limit: bool,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<(usize, Term, &'static str)> {
    let i = t
        .column_index(&column.name)
        .ok_or_else(|| ExecError::Invalid(format!("Undefined column name {}", column.name)))?;
    let c = &t.columns[i];
    if !matches!(c.cql_type, CqlType::Vector { .. }) {
        return invalid("ANN ordering is only supported on float vector indexes");
    }
    let quoted = crate::exec::cql_text::maybe_quote(&c.name);
    let index = t.indexes.iter().find(|idx| {
        idx.options.get("target") == Some(&quoted)
            && idx
                .options
                .get("class_name")
                .is_some_and(|cl| crate::exec::ddl::is_sai_class(cl))
    });
    let Some(index) = index else {
        return invalid(format!(
            "Order By clause for column {} requires a storage-attached index on it",
            c.name
        ));
    };
    if !has_limit {
        return invalid(
            "SAI based ORDER BY clause requires a LIMIT that is not greater than 1000. LIMIT was NO LIMIT",
        );
    }
    note_binds(vector, BindSpec::new(t, &c.name, c.cql_type.clone()), specs)?;
    let function = match index
        .options
        .get("similarity_function")
        .map(|f| f.to_ascii_lowercase())
        .as_deref()
    {
        Some("euclidean") => "similarity_euclidean",
        Some("dot_product") => "similarity_dot_product",
        _ => "similarity_cosine",
    };
    Ok((i, vector.clone(), function))
}

/// Ranks rows by the similarity of their vector to the query's, most similar first (rows
/// without a vector last), as an ANN query over a storage-attached index returns them.
pub(super) fn rank_by_similarity(
    plan: &SelectPlan,
    rows: &mut Vec<Row>,
    binds: &Binds<'_>,
) -> ExecResult<()> {
    let Some((col, term, function)) = &plan.ann else {
        return Ok(());
    };
    let c = &plan.table.columns[*col];
    let query = values::to_value(term, &c.cql_type, &c.name, binds)?;
    let mut scored = Vec::with_capacity(rows.len());
    for row in rows.drain(..) {
        crate::exec::cancel::check()?;
        let v = match row.cells.get(*col).cloned().flatten() {
            Some(b) => helenus_types::deserialize(&c.cql_type, &b).ok(),
            None => None,
        };
        let score = match v {
            Some(v) => {
                match crate::exec::functions::call(function, &[Some(v), query.clone()], &binds.now)?
                {
                    Some(helenus_types::CqlValue::Float(f)) => f as f64,
                    _ => f64::NEG_INFINITY,
                }
            }
            None => f64::NEG_INFINITY,
        };
        scored.push((score, row));
    }
    scored.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap_or(Ordering::Equal));
    rows.extend(scored.into_iter().map(|(_, r)| r));
    Ok(())
}

/// Cassandra sorts the rows of an `IN` query with ORDER BY in memory by the ordering columns
/// only, keeping the partitions' order among equal keys (a stable sort).
pub(super) fn merge_partitions(plan: &SelectPlan, rows: &mut [Row]) {
    rows.sort_by(|a, b| merge_order(plan, a, b));
}

/// With GROUP BY, Cassandra groups each partition's rows first and sorts the groups, each by its
/// first row: the rows of a group stay together.
pub(super) fn merge_groups(
    plan: &SelectPlan,
    rows: Vec<Row>,
    now: crate::exec_state::Now<'_>,
    node: std::net::IpAddr,
) -> ExecResult<Vec<Row>> {
    let mut groups: Vec<Vec<Row>> = Vec::new();
    let mut last_key = None;
    for row in rows {
        crate::exec::cancel::check()?;
        let key = group_key(plan, &row, now, node)?;
        match groups.last_mut() {
            Some(g) if last_key.as_ref() == Some(&key) => g.push(row),
            _ => groups.push(vec![row]),
        }
        last_key = Some(key);
    }
    groups.sort_by(|a, b| match (a.first(), b.first()) {
        (Some(x), Some(y)) => merge_order(plan, x, y),
        _ => Ordering::Equal,
    });
    Ok(groups.into_iter().flatten().collect())
}

/// The ORDER BY of an IN query, on the ordering columns only.
fn merge_order(plan: &SelectPlan, a: &Row, b: &Row) -> Ordering {
    let t = &plan.table;
    for &(i, desc) in &plan.merge_order {
        let ty = &t.columns[i].cql_type;
        let o = match (
            a.cells.get(i).cloned().flatten(),
            b.cells.get(i).cloned().flatten(),
        ) {
            (Some(x), Some(y)) => helenus_types::compare_serialized(ty, &x, &y),
            (x, y) => x.is_some().cmp(&y.is_some()),
        };
        let o = if desc { o.reverse() } else { o };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

fn group_key(
    plan: &SelectPlan,
    r: &Row,
    now: crate::exec_state::Now<'_>,
    node: std::net::IpAddr,
) -> ExecResult<Vec<Option<Bytes>>> {
    let t = &plan.table;
    let mut key: Vec<Option<Bytes>> = t
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.kind.is_primary_key())
        .take(plan.group_by)
        .map(|(i, _)| r.cells.get(i).cloned().flatten())
        .collect();
    if let (Some(f), Some(last)) = (&plan.group_fn, key.last_mut()) {
        // Cassandra groups on the replica, so a failing function there is a failed read.
        *last = eval(&f.sel, &f.ty, r, now).map_err(|_| ExecError::ReadFailure {
            consistency: helenus_protocol::Consistency::One,
            node,
            reason: 0,
            reason_name: "UNKNOWN",
        })?;
    }
    Ok(key)
}

/// One output row per group, with the partition key of the group (for PER PARTITION LIMIT).
pub(super) type Groups = Vec<(Bytes, Vec<Option<Bytes>>)>;

pub(super) fn aggregate_rows(
    plan: &SelectPlan,
    rows: &[Row],
    now: crate::exec_state::Now<'_>,
    node: std::net::IpAddr,
) -> ExecResult<Groups> {
    let cols = &plan.compiled.columns;
    let mut out = Vec::new();
    let mut i = 0;
    if rows.is_empty() {
        if plan.group_by > 0 {
            return Ok(out);
        }
        let states: Vec<_> = cols.iter().map(|c| aggregates::agg_init(&c.sel)).collect();
        let mut values = Vec::with_capacity(cols.len());
        for (c, s) in cols.iter().zip(&states) {
            values.push(if crate::exec::selectors::has_nested_agg(&c.sel) {
                of_aggregates(c, &[], now)?
            } else if matches!(c.sel, Sel::CountStar | Sel::Agg { .. }) {
                aggregates::agg_finish(s, &c.sel)
            } else {
                None
            });
        }
        return Ok(vec![(Bytes::new(), values)]);
    }
    while i < rows.len() {
        let key = group_key(plan, &rows[i], now, node)?;
        let mut states: Vec<_> = cols.iter().map(|c| aggregates::agg_init(&c.sel)).collect();
        let mut j = i;
        while j < rows.len() && (plan.group_by == 0 || group_key(plan, &rows[j], now, node)? == key)
        {
            crate::exec::cancel::check()?;
            for (c, s) in cols.iter().zip(states.iter_mut()) {
                aggregates::agg_update(s, &c.sel, &c.ty, &rows[j], now)?;
            }
            j += 1;
        }
        let mut values = Vec::with_capacity(cols.len());
        for (c, s) in cols.iter().zip(&states) {
            values.push(if crate::exec::selectors::has_nested_agg(&c.sel) {
                of_aggregates(c, &rows[i..j], now)?
            } else {
                aggregates::agg_finish(s, &c.sel)
            });
        }
        out.push((rows[i].partition_key.clone(), values));
        i = j;
    }
    Ok(out)
}

/// A column computed from aggregates (`min(b).x`): their values over the group, then the rest of
/// the selector on the group's first row (an empty row when there is none).
fn of_aggregates(
    c: &crate::exec::selectors::OutColumn,
    rows: &[Row],
    now: crate::exec_state::Now<'_>,
) -> ExecResult<Option<Bytes>> {
    let folded = aggregates::fold_aggs(&c.sel, rows, now)?;
    let empty = Row::default();
    crate::exec::selectors::eval(&folded, &c.ty, rows.first().unwrap_or(&empty), now)
}
