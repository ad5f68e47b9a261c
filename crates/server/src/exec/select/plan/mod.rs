//! Planning a SELECT: checks the selection, restrictions, ordering and limits against the table
//! with Cassandra's rules (including when ALLOW FILTERING is required) and builds a `SelectPlan`.
//!
//! `plan` runs one function per phase, in the order Cassandra reports errors, and passes plain
//! data between them:
//! 1. `check_distinct`: what SELECT DISTINCT may select;
//! 2. `collect_restrictions`: the WHERE clause sorted into partition key values, clustering
//!    relations, multi-column relations, token bounds and row filters ([`Restrictions`]);
//! 3. `select_partitions`: partition keys, or a token range (a partial key becomes filters);
//! 4. `plan_clustering`: an `=`/`IN` prefix and at most one slice ([`Clustering`]); the rest is
//!    checked row by row;
//! 5. `check_filtering`: whether what is left needs ALLOW FILTERING;
//! 6. `plan_order`: ORDER BY (clustering order, ANN, merging the partitions of an IN);
//! 7. `note_limit_binds` and `plan_group_by`.

use super::{
    Filter, MultiFilter, PartitionSelection, SelectPlan, SliceBound, TokenBound, ValuesOf,
};
use crate::exec::error::{invalid, ExecError, ExecResult};
use crate::exec::selectors::{self, Compiled, Sel};
use crate::exec::values::Binds;
use crate::exec::BindSpec;
use helenus_cql::ast::{self, Operator, RelationValue, SelectStatement, Term};
use helenus_schema::{ColumnKind, TableKind, TableMeta};
use std::sync::Arc;

mod clustering;
mod ordering;
mod relations;

use clustering::{
    check_filtering, clustering_indexed, legacy_index_needs_filtering, plan_clustering,
    select_partitions, selects_only_statics,
};
use ordering::{multi_partition, note_limit_binds, plan_group_by, plan_order};
use relations::collect_restrictions;

const FILTERING_MSG: &str = "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING";

/// Plans a SELECT; `specs` receives the bind markers' receivers.
pub fn plan(
    table: Arc<TableMeta>,
    s: &SelectStatement,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<SelectPlan> {
    let t = &*table;
    let compiled = selectors::compile(t, &s.projection, &Binds::planning())?;
    selectors::note_selector_binds(t, &s.projection, specs)?;
    super::validate::check(t, s, &compiled)?;
    if s.distinct {
        check_distinct(t, s, &compiled)?;
    }
    let shape = Shape::of(t);
    let mut r = collect_restrictions(&shape, s, specs)?;
    let (partitions, token_filter) = select_partitions(&shape, &mut r);
    let keyed = matches!(partitions, PartitionSelection::Keys(_));
    if !shape.system
        && selects_only_statics(t, &compiled)
        && (r.ck_restr.iter().any(Option::is_some) || !r.multis.is_empty())
    {
        return invalid("Cannot restrict clustering columns when selecting only static columns");
    }
    let ck_indexed = clustering_indexed(&shape, &r);
    let clustering = plan_clustering(&shape, s.allow_filtering, &mut r)?;
    if !shape.system && legacy_index_needs_filtering(&shape, &r, &clustering, keyed) {
        r.need_filtering = true;
    }
    check_filtering(
        &shape,
        s.allow_filtering,
        keyed,
        ck_indexed,
        &clustering,
        r.need_filtering,
    )?;
    let mut order = plan_order(&shape, s, keyed, &clustering, specs)?;
    note_limit_binds(t, s, specs)?;
    if !multi_partition(&partitions) {
        order.merge_order.clear();
    }
    let (group_by, group_fn) = plan_group_by(&shape, s, &partitions, &clustering.eq)?;
    Ok(SelectPlan {
        table,
        compiled: Arc::new(compiled),
        bound_projection: selectors::projection_has_bind(&s.projection)
            .then(|| s.projection.clone()),
        partitions,
        clustering_eq: clustering.eq,
        clustering_slice: clustering.slice,
        filters: r.filters,
        limit: s.limit.clone(),
        per_partition_limit: s.per_partition_limit.clone(),
        reversed: order.reversed,
        distinct: s.distinct,
        json: s.json,
        group_by,
        group_fn,
        merge_order: order.merge_order,
        multi_filters: clustering.multi_filters,
        token_filter,
        ann: order.ann,
    })
}

/// The table's key layout, looked up once for all phases.
struct Shape<'a> {
    t: &'a TableMeta,
    /// System tables are read whole and filtered: the key and ALLOW FILTERING rules do not apply.
    system: bool,
    pk_cols: Vec<usize>,
    ck_cols: Vec<usize>,
}

impl<'a> Shape<'a> {
    fn of(t: &'a TableMeta) -> Shape<'a> {
        let of_kind = |kind: ColumnKind| -> Vec<usize> {
            (0..t.columns.len())
                .filter(|&i| t.columns[i].kind == kind)
                .collect()
        };
        Shape {
            t,
            system: t.kind != TableKind::User,
            pk_cols: of_kind(ColumnKind::PartitionKey),
            ck_cols: of_kind(ColumnKind::Clustering),
        }
    }
}

/// The WHERE clause sorted by what each relation restricts.
struct Restrictions {
    /// `=` / `IN` values per partition key column.
    pk_vals: Vec<Option<ValuesOf>>,
    /// One relation per clustering column (a second, opposite bound goes to `filters`).
    ck_restr: Vec<Option<(Operator, RelationValue)>>,
    /// Multi-column relations that are not a plain `(a, b) = (x, y)`.
    multis: Vec<(Vec<usize>, Operator, RelationValue)>,
    /// Clustering relations that came from a multi-column `=`: an index does not serve them.
    from_tuple: Vec<bool>,
    token: (TokenBound, TokenBound),
    /// Relations checked row by row.
    filters: Vec<Filter>,
    need_filtering: bool,
    /// One restriction on an indexed column is served by the index (here: a scan that filters).
    used_index: bool,
}

/// The clustering part of a plan.
struct Clustering {
    /// `=` / `IN` restrictions on a clustering prefix.
    eq: Vec<ValuesOf>,
    /// A slice on the column after the prefix.
    slice: Option<(SliceBound, SliceBound)>,
    /// Multi-column relations checked row by row.
    multi_filters: Vec<MultiFilter>,
}

/// The ORDER BY part of a plan.
struct Order {
    reversed: bool,
    /// (column, descending) keys to merge the partitions of an IN by.
    merge_order: Vec<(usize, bool)>,
    ann: Option<(usize, Term, &'static str)>,
}

fn column_index(t: &TableMeta, name: &str) -> ExecResult<usize> {
    t.column_index(name)
        .ok_or_else(|| ExecError::Invalid(format!("Undefined column name {name}")))
}

/// SELECT DISTINCT reads partitions, not rows: only partition key and static columns, all of the
/// partition key unless the WHERE clause restricts it, and no PER PARTITION LIMIT.
fn check_distinct(t: &TableMeta, s: &SelectStatement, compiled: &Compiled) -> ExecResult<()> {
    for c in &compiled.columns {
        if let Sel::Column(i) = c.sel {
            let col = &t.columns[i];
            if !matches!(col.kind, ColumnKind::PartitionKey | ColumnKind::Static) {
                return invalid(format!(
                    "SELECT DISTINCT queries must only request partition key columns and/or static columns (not {})",
                    col.name
                ));
            }
        }
    }
    let mut names = Vec::new();
    if let ast::Projection::Items(items) = &s.projection {
        for it in items {
            referenced_columns(&it.selector, &mut names);
        }
    }
    let selected: Vec<usize> = names.iter().filter_map(|n| t.column_index(n)).collect();
    let missing: Vec<&str> = (0..t.columns.len())
        .filter(|&i| t.columns[i].kind == ColumnKind::PartitionKey && !selected.contains(&i))
        .map(|i| t.columns[i].name.as_str())
        .collect();
    if !missing.is_empty() && s.where_clause.is_empty() {
        return invalid(format!(
            "SELECT DISTINCT queries must request all the partition key columns (missing {})",
            missing.join(", ")
        ));
    }
    if s.per_partition_limit.is_some() {
        return invalid("PER PARTITION LIMIT is not allowed with SELECT DISTINCT queries");
    }
    Ok(())
}

/// Names of the columns a selector reads, however deeply nested in function calls.
fn referenced_columns(sel: &ast::Selector, out: &mut Vec<String>) {
    match sel {
        ast::Selector::Column(id) => out.push(id.name.clone()),
        ast::Selector::FunctionCall { args, .. } => {
            for a in args {
                referenced_columns(a, out);
            }
        }
        ast::Selector::Cast { selector, .. }
        | ast::Selector::WriteTime(selector)
        | ast::Selector::MaxWriteTime(selector)
        | ast::Selector::Ttl(selector)
        | ast::Selector::Field { selector, .. } => referenced_columns(selector, out),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
