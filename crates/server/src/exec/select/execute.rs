//! Running a planned SELECT for one page: clustering slices, reading rows from the storage engine
//! or system tables, filtering, and shaping the result rows.

use super::order::{aggregate_rows, merge_groups, merge_partitions, rank_by_similarity};
use super::{compare_clustering, SelectOutput, SelectPlan, SliceBound, TokenBound};
use crate::exec::error::{invalid, ExecError, ExecResult};
use crate::exec::paging::PagingState;
use crate::exec::rows::Row;
use crate::exec::selectors::{self};
use crate::exec::values::{self, Binds, Bound};
use crate::exec_state::Now;
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
        lists.push(crate::exec::key_values::expand_values(
            v,
            &c.cql_type,
            &c.name,
            binds,
        )?);
    }
    let prefixes = crate::exec::key_values::cartesian(&lists, "clustering columns")?;
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
    let bound = |b: &TokenBound| -> ExecResult<Option<(i64, bool)>> {
        b.as_ref()
            .map(|(term, inclusive)| {
                Ok((
                    super::scan::token_value(&plan.table, term, binds)?,
                    *inclusive,
                ))
            })
            .transpose()
    };
    let (lower, upper) = (bound(&plan.token_filter.0)?, bound(&plan.token_filter.1)?);
    let above = lower.is_none_or(|(v, inclusive)| row.token > v || (inclusive && row.token == v));
    let below = upper.is_none_or(|(v, inclusive)| row.token < v || (inclusive && row.token == v));
    // Keys filtered by a token range whose start is past its end: the range wraps around the
    // ring, as Cassandra's token ranges do.
    let wraps = matches!((lower, upper), (Some((lo, _)), Some((hi, _))) if lo > hi);
    if !(if wraps {
        above || below
    } else {
        above && below
    }) {
        return Ok(false);
    }
    for f in &plan.multi_filters {
        if !super::filter::matches_multi(&plan.table, row, f, binds)? {
            return Ok(false);
        }
    }
    for f in &plan.filters {
        let c = &plan.table.columns[f.column];
        let cell = row.cells.get(f.column).cloned().flatten();
        if !super::filter::matches(c, &cell, f, binds)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Runs a planned SELECT for one page.
pub async fn execute(
    node: &NodeState,
    plan: &SelectPlan,
    binds: &Binds<'_>,
    (page_size, paging_state): (Option<usize>, Option<&[u8]>),
    consistency: helenus_coordinator::ConsistencyLevel,
) -> ExecResult<SelectOutput> {
    let now = binds.now;
    // Boxed: a plan (1 KiB) kept across the awaits below would make every read's future that
    // much larger, and each move of it a copy of that much (see transport/statement.rs).
    let rebound: Box<SelectPlan>;
    let plan = match &plan.bound_projection {
        Some(projection) => {
            let compiled = crate::exec::selectors::compile(&plan.table, projection, binds)?;
            rebound = Box::new(SelectPlan {
                compiled: std::sync::Arc::new(compiled),
                ..plan.clone()
            });
            &*rebound
        }
        None => plan,
    };
    let (limit, ppl) = bound_limits(plan, binds)?;
    let resume = match paging_state {
        Some(b) if !b.is_empty() => Some(PagingState::decode(b)?),
        _ => None,
    };
    if let Some(out) =
        super::columnar::aggregate(node, plan, binds, resume.is_some(), (limit, consistency))
            .await?
    {
        return Ok(out);
    }
    let already = resume.as_ref().map(|r| r.rows_returned).unwrap_or(0);
    let grouped = plan.compiled.has_aggregate || plan.group_by > 0;
    let merging = !plan.merge_order.is_empty() || plan.ann.is_some();
    // Aggregates, groups and merged partitions need every row before the first one is returned.
    let want = if grouped || merging {
        None
    } else {
        rows_wanted(limit, page_size, already)
    };
    if !grouped && !merging {
        if let Some(out) = super::columnar::project(
            node,
            plan,
            binds,
            (want, page_size.is_some(), consistency),
            resume.as_ref(),
        )
        .await?
        {
            return Ok(out);
        }
    }
    let mut source =
        super::scan::RowSource::new(node, plan, binds, resume.as_ref(), (now.s, consistency))?;
    // A resumed page starts after the last row returned (scan.rs), so every row read counts.
    let every_row_counts =
        plan.filters.is_empty() && plan.multi_filters.is_empty() && !plan.distinct && ppl.is_none();
    match (want, every_row_counts) {
        // One more than the page needs, to tell whether another page follows.
        (Some(w), true) => source.limit_rows_per_partition_read(w.saturating_add(1)),
        // Otherwise storage is read in chunks, so no single read holds a whole wide partition
        // and a statement past its timeout stops between chunks (exec::cancel).
        _ => source.limit_rows_per_partition_read(READ_CHUNK_ROWS),
    }
    if let Some(w) = want {
        source.expect_rows(w);
    }
    let page = Page {
        limit,
        per_partition_limit: ppl,
        already,
        want,
    };
    let mut collected = collect_rows(&mut source, plan, binds, resume.as_ref(), &page).await?;
    let columns = plan.compiled.result_columns.clone();
    let paging = next_paging_state(&collected, &page);
    if merging {
        if plan.ann.is_some() {
            rank_by_similarity(plan, &mut collected.rows, binds)?;
        } else {
            if plan.group_by > 0 {
                let rows = std::mem::take(&mut collected.rows);
                collected.rows = merge_groups(plan, rows, now, node.config.listen_address)?;
            } else {
                merge_partitions(plan, &mut collected.rows);
            }
        }
        // With aggregates the limit counts result rows, not the rows read.
        if let (Some(l), false) = (limit, grouped) {
            collected.rows.truncate(l);
        }
    }
    let rows = if grouped {
        grouped_rows(
            plan,
            &collected.rows,
            &page,
            now,
            node.config.listen_address,
        )?
    } else {
        selected_rows(plan, &collected.rows, now)?
    };
    if plan.json {
        return Ok(super::json::json_rows(&columns, rows, paging));
    }
    Ok(SelectOutput {
        columns,
        wire_columns: plan.compiled.wire_columns.clone(),
        rows,
        paging_state: paging,
        encoded: None,
    })
}

/// LIMIT and PER PARTITION LIMIT with their bind markers bound.
fn bound_limits(
    plan: &SelectPlan,
    binds: &Binds<'_>,
) -> ExecResult<(Option<usize>, Option<usize>)> {
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
    Ok((limit, ppl))
}

/// Rows this page returns at most: the page size, and what the LIMIT leaves after earlier pages.
fn rows_wanted(limit: Option<usize>, page_size: Option<usize>, already: usize) -> Option<usize> {
    match (limit, page_size) {
        (Some(l), Some(p)) => Some(l.saturating_sub(already).min(p)),
        (Some(l), None) => Some(l.saturating_sub(already)),
        (None, Some(p)) => Some(p),
        (None, None) => None,
    }
}

/// The bounds of one page.
struct Page {
    limit: Option<usize>,
    per_partition_limit: Option<usize>,
    /// Rows returned by the earlier pages.
    already: usize,
    /// Rows to stop after; None reads to the end.
    want: Option<usize>,
}

/// The rows a page keeps and where it stopped.
struct Collected {
    rows: Vec<Row>,
    /// Rows kept from the last partition read (it may continue on the next page).
    per_partition_count: usize,
    /// Whether no row follows this page.
    exhausted: bool,
}

/// Rows between two deadline checks in a per-row loop.
const CANCEL_CHECK_ROWS: usize = 256;

/// Rows one storage read returns at most when the page does not say how many it needs.
const READ_CHUNK_ROWS: usize = 16_384;

/// Reads rows until the page is full, applying DISTINCT, PER PARTITION LIMIT and the filters.
async fn collect_rows(
    source: &mut super::scan::RowSource<'_>,
    plan: &SelectPlan,
    binds: &Binds<'_>,
    resume: Option<&PagingState>,
    page: &Page,
) -> ExecResult<Collected> {
    let mut out = Collected {
        // Sized for the page up front: growing a page of thousands of rows reallocates and
        // copies it, into fresh memory each time.
        rows: Vec::with_capacity(page.want.unwrap_or(0).min(READ_CHUNK_ROWS)),
        per_partition_count: resume.map(|r| r.partition_rows_returned).unwrap_or(0),
        exhausted: true,
    };
    let mut last_partition: Option<Bytes> = resume.map(|r| r.partition_key.clone());
    while let Some(row) = source.next_row().await? {
        if last_partition.as_ref() != Some(&row.partition_key) {
            last_partition = Some(row.partition_key.clone());
            out.per_partition_count = 0;
        }
        if plan.distinct && out.per_partition_count > 0 {
            continue;
        }
        // With GROUP BY the per-partition limit counts groups, applied after aggregation.
        if plan.group_by == 0
            && page
                .per_partition_limit
                .is_some_and(|p| out.per_partition_count >= p)
        {
            continue;
        }
        if !passes_filters(plan, &row, binds)? {
            continue;
        }
        out.per_partition_count += 1;
        out.rows.push(row);
        if let Some(w) = page.want {
            if out.rows.len() >= w {
                out.exhausted = page
                    .limit
                    .is_some_and(|l| page.already + out.rows.len() >= l);
                if !out.exhausted {
                    out.exhausted = !source.has_more();
                }
                break;
            }
        }
    }
    Ok(out)
}

/// Where the next page starts: after the last row kept, unless nothing follows.
fn next_paging_state(collected: &Collected, page: &Page) -> Option<Bytes> {
    if collected.exhausted || page.want.is_none() {
        return None;
    }
    collected.rows.last().map(|r| {
        PagingState {
            token: r.token,
            partition_key: r.partition_key.clone(),
            clustering: r.clustering.clone(),
            rows_returned: page.already + collected.rows.len(),
            partition_rows_returned: collected.per_partition_count,
        }
        .encode()
    })
}

/// Aggregated rows: one per group, PER PARTITION LIMIT counting groups and LIMIT applied to them.
fn grouped_rows(
    plan: &SelectPlan,
    rows: &[Row],
    page: &Page,
    now: Now<'_>,
    node: std::net::IpAddr,
) -> ExecResult<Vec<Vec<Option<Bytes>>>> {
    let mut groups = aggregate_rows(plan, rows, now, node)?;
    if plan.group_by > 0 {
        if let Some(p) = page.per_partition_limit {
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
        if let Some(l) = page.limit {
            groups.truncate(l);
        }
    }
    Ok(groups.into_iter().map(|(_, r)| r).collect())
}

/// The selection evaluated on each row.
fn selected_rows(
    plan: &SelectPlan,
    rows: &[Row],
    now: Now<'_>,
) -> ExecResult<Vec<Vec<Option<Bytes>>>> {
    let mut out = Vec::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        // A clock read per row is 2% of a scan; every few hundred rows ends the work as soon.
        if i % CANCEL_CHECK_ROWS == 0 {
            crate::exec::cancel::check()?;
        }
        let mut cells = Vec::with_capacity(plan.compiled.columns.len());
        for c in &plan.compiled.columns {
            cells.push(selectors::eval(&c.sel, &c.ty, r, now)?);
        }
        out.push(cells);
    }
    Ok(out)
}
