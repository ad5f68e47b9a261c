//! Running a planned SELECT for one page: clustering slices, reading rows from the storage engine
//! or system tables, filtering, and shaping the result rows.

use super::order::{aggregate_rows, merge_partitions, rank_by_similarity};
use super::{compare_clustering, SelectOutput, SelectPlan, SliceBound};
use crate::exec::error::{invalid, ExecError, ExecResult};
use crate::exec::paging::PagingState;
use crate::exec::rows::Row;
use crate::exec::selectors::{self};
use crate::exec::values::{self, Binds, Bound};
use crate::node::NodeState;
use bytes::Bytes;
use helenus_cql::ast::Term;
use helenus_storage as st;
use helenus_types::CqlType;

fn eval_int(term: &Term, binds: &Binds<'_>, what: &str) -> ExecResult<Option<usize>> {
    let ty = CqlType::Native(helenus_types::NativeType::Int);
    match values::eval(term, &ty, what, binds)? {
        Bound::Value(b) => {
            let v = i32::from_be_bytes(
                b.as_ref()
                    .try_into()
                    .map_err(|_| ExecError::Invalid(format!("Invalid {what}")))?,
            );
            if v <= 0 {
                return invalid(format!(
                    "{} must be strictly positive",
                    if what == "[limit]" {
                        "LIMIT"
                    } else {
                        "PER PARTITION LIMIT"
                    }
                ));
            }
            Ok(Some(v as usize))
        }
        Bound::Unset => Ok(None),
        Bound::Null => invalid(format!("Invalid null value of {what}")),
    }
}

/// Builds the storage slices for the clustering restrictions.
pub fn clustering_slices(
    plan: &SelectPlan,
    binds: &Binds<'_>,
) -> ExecResult<Vec<(st::ClusteringBound, st::ClusteringBound)>> {
    let t = &plan.table;
    let ck: Vec<&helenus_schema::ColumnMeta> = t.clustering().collect();
    if plan.clustering_eq.is_empty() && plan.clustering_slice.is_none() {
        return Ok(Vec::new());
    }
    let mut lists = Vec::new();
    for (n, v) in plan.clustering_eq.iter().enumerate() {
        let c = ck
            .get(n)
            .ok_or_else(|| ExecError::Invalid("too many clustering restrictions".into()))?;
        lists.push(crate::exec::scan::expand_values(
            v,
            &c.cql_type,
            &c.name,
            binds,
        )?);
    }
    let prefixes = crate::exec::scan::cartesian(&lists, "clustering columns")?;
    let mut out = Vec::new();
    for prefix in prefixes {
        let n = prefix.len();
        let (start, end) = match &plan.clustering_slice {
            None => (
                st::ClusteringBound {
                    prefix: prefix.clone(),
                    kind: st::BoundKind::Inclusive,
                },
                st::ClusteringBound {
                    prefix: prefix.clone(),
                    kind: st::BoundKind::Inclusive,
                },
            ),
            Some((lower, upper)) => (
                slice_bound(&ck, &prefix, lower, binds)?,
                slice_bound(&ck, &prefix, upper, binds)?,
            ),
        };
        // A descending first slice column flips which bound is the start in storage order.
        let desc = ck
            .get(n)
            .is_some_and(|c| c.order == helenus_schema::ClusteringOrder::Desc);
        if desc && plan.clustering_slice.is_some() {
            out.push((end, start));
        } else {
            out.push((start, end));
        }
    }
    // Storage wants slices in its own order, which is descending for DESC clustering columns.
    out.sort_by(|a, b| compare_clustering(t, &a.0.prefix, &b.0.prefix));
    Ok(out)
}

/// One end of a clustering slice after an equality prefix: the prefix alone (inclusive) when
/// the end is open, else the prefix followed by the bound's values.
fn slice_bound(
    ck: &[&helenus_schema::ColumnMeta],
    prefix: &[Bytes],
    b: &SliceBound,
    binds: &Binds<'_>,
) -> ExecResult<st::ClusteringBound> {
    let Some((terms, inclusive)) = b else {
        return Ok(st::ClusteringBound {
            prefix: prefix.to_vec(),
            kind: st::BoundKind::Inclusive,
        });
    };
    let mut p = prefix.to_vec();
    for (k, term) in terms.iter().enumerate() {
        let c = ck
            .get(prefix.len() + k)
            .ok_or_else(|| ExecError::Invalid("too many values in slice".into()))?;
        match values::eval(term, &c.cql_type, &c.name, binds)? {
            Bound::Value(b) => p.push(b),
            _ => {
                return invalid(format!(
                    "Invalid null value in condition for column {}",
                    c.name
                ))
            }
        }
    }
    Ok(st::ClusteringBound {
        prefix: p,
        kind: if *inclusive {
            st::BoundKind::Inclusive
        } else {
            st::BoundKind::Exclusive
        },
    })
}

fn passes_filters(plan: &SelectPlan, row: &Row, binds: &Binds<'_>) -> ExecResult<bool> {
    if let Some((term, inclusive)) = &plan.token_filter.0 {
        let v = crate::exec::scan::token_value(&plan.table, term, binds)?;
        if row.token < v || (!inclusive && row.token == v) {
            return Ok(false);
        }
    }
    if let Some((term, inclusive)) = &plan.token_filter.1 {
        let v = crate::exec::scan::token_value(&plan.table, term, binds)?;
        if row.token > v || (!inclusive && row.token == v) {
            return Ok(false);
        }
    }
    for f in &plan.multi_filters {
        if !crate::exec::filter::matches_multi(&plan.table, row, f, binds)? {
            return Ok(false);
        }
    }
    for f in &plan.filters {
        let c = &plan.table.columns[f.column];
        let cell = row.cells.get(f.column).cloned().flatten();
        if !crate::exec::filter::matches(c, &cell, f, binds)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Runs a planned SELECT for one page.
pub fn execute(
    node: &NodeState,
    plan: &SelectPlan,
    binds: &Binds<'_>,
    page_size: Option<usize>,
    paging_state: Option<&[u8]>,
) -> ExecResult<SelectOutput> {
    let now = node.exec.now_s();
    let limit = plan
        .limit
        .as_ref()
        .map(|l| eval_int(l, binds, "[limit]"))
        .transpose()?
        .flatten();
    let ppl = plan
        .per_partition_limit
        .as_ref()
        .map(|l| eval_int(l, binds, "[per_partition_limit]"))
        .transpose()?
        .flatten();
    let aggregate = plan.compiled.has_aggregate;
    let resume = match paging_state {
        Some(b) if !b.is_empty() => Some(PagingState::decode(b)?),
        _ => None,
    };
    let already = resume.as_ref().map(|r| r.rows_returned).unwrap_or(0);
    let mut want = match (limit, page_size) {
        (Some(l), Some(p)) => Some(l.saturating_sub(already).min(p)),
        (Some(l), None) => Some(l.saturating_sub(already)),
        (None, Some(p)) => Some(p),
        (None, None) => None,
    };
    let grouped = aggregate || plan.group_by > 0;
    let merging = !plan.merge_order.is_empty() || plan.ann.is_some();
    if grouped || merging {
        want = None;
    }
    let mut source = crate::exec::scan::RowSource::new(node, plan, binds, resume.as_ref(), now)?;
    // A resumed page starts after the last row returned (scan.rs), so every row read counts.
    let every_row_counts =
        plan.filters.is_empty() && plan.multi_filters.is_empty() && !plan.distinct && ppl.is_none();
    if let (Some(w), true) = (want, every_row_counts) {
        // One more than the page needs, to tell whether another page follows.
        source.limit_rows_per_partition_read(w.saturating_add(1));
    }
    let mut collected: Vec<Row> = Vec::new();
    let mut per_partition_count = 0usize;
    let mut last_partition: Option<Bytes> = resume.as_ref().map(|r| r.partition_key.clone());
    if let Some(r) = &resume {
        per_partition_count = r.partition_rows_returned;
    }
    let mut exhausted = true;
    while let Some(row) = source.next_row()? {
        if last_partition.as_ref() != Some(&row.partition_key) {
            last_partition = Some(row.partition_key.clone());
            per_partition_count = 0;
        }
        if plan.distinct && per_partition_count > 0 {
            continue;
        }
        // With GROUP BY the per-partition limit counts groups, applied after aggregation.
        if plan.group_by == 0 && ppl.is_some_and(|p| per_partition_count >= p) {
            continue;
        }
        if !passes_filters(plan, &row, binds)? {
            continue;
        }
        per_partition_count += 1;
        collected.push(row);
        if let Some(w) = want {
            if collected.len() >= w {
                exhausted = limit.is_some_and(|l| already + collected.len() >= l);
                if !exhausted {
                    exhausted = !source.has_more();
                }
                break;
            }
        }
    }
    let columns: Vec<(String, CqlType)> = plan
        .compiled
        .columns
        .iter()
        .map(|c| (c.name.clone(), c.ty.clone()))
        .collect();
    let paging = if !exhausted && !collected.is_empty() && want.is_some() {
        collected.last().map(|r| {
            PagingState {
                token: r.token,
                partition_key: r.partition_key.clone(),
                clustering: r.clustering.clone(),
                rows_returned: already + collected.len(),
                partition_rows_returned: per_partition_count,
            }
            .encode()
        })
    } else {
        None
    };
    if merging {
        if plan.ann.is_some() {
            rank_by_similarity(plan, &mut collected, binds)?;
        } else {
            merge_partitions(plan, &mut collected);
        }
        if let Some(l) = limit {
            collected.truncate(l);
        }
    }
    let rows = if grouped {
        let mut groups = aggregate_rows(plan, &collected, now)?;
        if plan.group_by > 0 {
            if let Some(p) = ppl {
                let mut seen = 0usize;
                let mut last: Option<Bytes> = None;
                groups.retain(|(pk, _)| {
                    if last.as_ref() != Some(pk) {
                        last = Some(pk.clone());
                        seen = 0;
                    }
                    seen += 1;
                    seen <= p
                });
            }
            if let Some(l) = limit {
                groups.truncate(l);
            }
        }
        groups.into_iter().map(|(_, r)| r).collect()
    } else {
        let mut out = Vec::with_capacity(collected.len());
        for r in &collected {
            let mut cells = Vec::with_capacity(plan.compiled.columns.len());
            for c in &plan.compiled.columns {
                cells.push(selectors::eval(&c.sel, &c.ty, r, now)?);
            }
            out.push(cells);
        }
        out
    };
    if plan.json {
        return Ok(crate::exec::json::json_rows(&columns, rows, paging));
    }
    Ok(SelectOutput {
        columns,
        rows,
        paging_state: paging,
    })
}
