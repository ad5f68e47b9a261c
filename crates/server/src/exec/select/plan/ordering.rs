//! Phases 6 and 7 of planning: ORDER BY, the receivers of LIMIT markers, and GROUP BY.

use super::{column_index, Clustering, Order, Shape};
use crate::exec::error::{invalid, ExecResult};
use crate::exec::key_values::note_binds;
use crate::exec::select::order::plan_ann;
use crate::exec::select::{GroupFn, PartitionSelection, ValuesOf};
use crate::exec::BindSpec;
use helenus_cql::ast::{self, OrderDirection, SelectStatement};
use helenus_schema::TableMeta;
use helenus_types::CqlType;

/// ORDER BY: `ANN OF` a vector, or clustering columns in key order, all in the declared order or
/// all reversed; only with the partition key restricted.
pub(super) fn plan_order(
    shape: &Shape<'_>,
    s: &SelectStatement,
    keyed: bool,
    clustering: &Clustering,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<Order> {
    let t = shape.t;
    let mut order = Order {
        reversed: false,
        merge_order: Vec::new(),
        ann: None,
    };
    if let [ast::Ordering {
        column,
        direction: OrderDirection::Ann(vector),
    }] = s.order_by.as_slice()
    {
        order.ann = Some(plan_ann(t, column, vector, s.limit.is_some(), specs)?);
        return Ok(order);
    }
    if s.order_by.is_empty() {
        return Ok(order);
    }
    if !keyed {
        return invalid(
            "ORDER BY is only supported when the partition key is restricted by an EQ or an IN.",
        );
    }
    // A clustering column restricted to a single value may be left out of ORDER BY.
    let single = |p: usize| single_valued(shape, clustering, p);
    let mut next = 0;
    for (n, o) in s.order_by.iter().enumerate() {
        let i = column_index(t, &o.column.name)?;
        while shape.ck_cols.get(next).is_some_and(|&c| c != i) && single(next) {
            next += 1;
        }
        let at = next;
        next += 1;
        if shape.ck_cols.get(at) != Some(&i) {
            return invalid("Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY".to_string());
        }
        let desc_declared = t.columns[i].order == helenus_schema::ClusteringOrder::Desc;
        let desc_wanted = matches!(o.direction, OrderDirection::Desc);
        let rev = desc_declared != desc_wanted;
        order.merge_order.push((i, desc_wanted));
        if n == 0 {
            order.reversed = rev;
        } else if rev != order.reversed {
            return invalid("Unsupported order by relation");
        }
    }
    Ok(order)
}

pub(super) fn note_limit_binds(
    t: &TableMeta,
    s: &SelectStatement,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<()> {
    let int = CqlType::Native(helenus_types::NativeType::Int);
    for term in s.limit.iter() {
        note_binds(term, BindSpec::new(t, "[limit]", int.clone()), specs)?;
    }
    for term in s.per_partition_limit.iter() {
        note_binds(
            term,
            BindSpec::new(t, "[per_partition_limit]", int.clone()),
            specs,
        )?;
    }
    Ok(())
}

/// Whether the clustering column at position `p` is restricted to one value: `= x`, `IN (x)`,
/// or a multi-column `=` / `IN` of one tuple.
fn single_valued(shape: &Shape<'_>, clustering: &Clustering, p: usize) -> bool {
    if let Some(v) = clustering.eq.get(p) {
        return matches!(v, ValuesOf::Terms(v) if v.len() == 1);
    }
    let Some(col) = shape.ck_cols.get(p) else {
        return false;
    };
    clustering.multi_filters.iter().any(|m| {
        m.columns.contains(col)
            && match (&m.op, &m.value) {
                (ast::Operator::Eq, ast::RelationValue::Single(ast::Term::Tuple(_))) => true,
                (ast::Operator::In, ast::RelationValue::List(items)) => items.len() == 1,
                _ => false,
            }
    })
}

/// Whether the partition keys name several partitions (an IN), whose rows ORDER BY merges.
pub(super) fn multi_partition(partitions: &PartitionSelection) -> bool {
    match partitions {
        PartitionSelection::Keys(vals) => vals.iter().any(|v| match v {
            ValuesOf::Terms(ts) => ts.len() > 1,
            ValuesOf::BindList(_) => true,
        }),
        _ => false,
    }
}

/// Whether the key column at `pos` (partition key, then clustering) is restricted to one value.
fn eq_restricted(
    pos: usize,
    pk_len: usize,
    partitions: &PartitionSelection,
    clustering_eq: &[ValuesOf],
) -> bool {
    let single = |v: Option<&ValuesOf>| matches!(v, Some(ValuesOf::Terms(ts)) if ts.len() == 1);
    if pos < pk_len {
        match partitions {
            PartitionSelection::Keys(vals) => single(vals.get(pos)),
            _ => false,
        }
    } else {
        single(clustering_eq.get(pos - pk_len))
    }
}

/// GROUP BY follows the primary key order; columns restricted by `=` may be skipped. Returns the
/// number of key columns grouped by.
pub(super) fn plan_group_by(
    shape: &Shape<'_>,
    s: &SelectStatement,
    partitions: &PartitionSelection,
    clustering_eq: &[ValuesOf],
) -> ExecResult<(usize, Option<GroupFn>)> {
    let pk_len = shape.pk_cols.len();
    let key_cols: Vec<usize> = shape
        .pk_cols
        .iter()
        .chain(&shape.ck_cols)
        .copied()
        .collect();
    let fixed = |pos: usize| eq_restricted(pos, pk_len, partitions, clustering_eq);
    let mut group_by = 0;
    let mut group_fn = None;
    for (n, g) in s.group_by.iter().enumerate() {
        let id = match g {
            ast::Selector::Column(id) => id,
            ast::Selector::FunctionCall { .. } if n + 1 < s.group_by.len() => {
                return invalid(
                    "Functions are only supported on the last element of the GROUP BY clause",
                );
            }
            ast::Selector::FunctionCall { name, args } => {
                let (id, f) = group_function(shape.t, g, &name.name.name, args)?;
                group_fn = Some(f);
                id
            }
            _ => return invalid("Only column names are supported in GROUP BY"),
        };
        let i = column_index(shape.t, &id.name)?;
        let mut pos = group_by;
        while pos < key_cols.len() && key_cols[pos] != i && fixed(pos) {
            pos += 1;
        }
        if key_cols.get(pos) != Some(&i) {
            return invalid("Group by currently only support groups of columns following their declared order in the PRIMARY KEY");
        }
        group_by = pos + 1;
    }
    if group_by > 0 && (group_by..pk_len).any(|p| !fixed(p)) {
        return invalid("Group by is not supported on only a part of the partition key");
    }
    Ok((group_by, group_fn))
}

/// `floor(c, duration[, start])` ending a GROUP BY: the only monotonic function Cassandra
/// groups by, applied to a column with constant other arguments.
fn group_function<'s>(
    t: &TableMeta,
    g: &ast::Selector,
    name: &str,
    args: &'s [ast::Selector],
) -> ExecResult<(&'s ast::Ident, GroupFn)> {
    let (sel, ty) = crate::exec::selectors::compile_selector(t, g)?;
    let monotonic = crate::exec::functions::canonical_name(name) == "floor"
        && args
            .iter()
            .skip(1)
            .all(|a| matches!(a, ast::Selector::Term(_)));
    match args.first() {
        Some(ast::Selector::Column(id)) if monotonic => Ok((id, GroupFn { sel, ty })),
        _ => invalid(format!(
            "Only monotonic functions are supported in the GROUP BY clause. Got: system.{}",
            name.to_ascii_lowercase()
        )),
    }
}
