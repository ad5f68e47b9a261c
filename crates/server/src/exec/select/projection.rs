//! The regular and static columns a SELECT reads, so storage copies only their cells into the
//! result (`ReadQuery::columns`). A scan of one column of a 57-column table then pays for one
//! column per row, not 57.

use super::SelectPlan;
use crate::exec::selectors::Sel;
use helenus_schema::ColumnKind;
use std::sync::Arc;

/// The storage ids of the non-key columns `plan` reads, sorted, or None when it needs them all
/// (every column selected, or a selection this walk does not follow).
pub(super) fn read_columns(plan: &SelectPlan) -> Option<Arc<[u32]>> {
    if plan.json || plan.bound_projection.is_some() {
        return None;
    }
    let mut used: Vec<usize> = Vec::new();
    for c in &plan.compiled.columns {
        if !collect(&c.sel, &mut used) {
            return None;
        }
    }
    if let Some(g) = &plan.group_fn {
        if !collect(&g.sel, &mut used) {
            return None;
        }
    }
    used.extend(plan.filters.iter().map(|f| f.column));
    used.extend(
        plan.multi_filters
            .iter()
            .flat_map(|f| f.columns.iter().copied()),
    );
    used.extend(plan.merge_order.iter().map(|(i, _)| *i));
    used.extend(plan.ann.as_ref().map(|(i, _, _)| *i));
    let t = &plan.table;
    let mut ids = Vec::new();
    let mut stored = 0;
    for (i, c) in t.columns.iter().enumerate() {
        if matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Clustering) {
            continue;
        }
        stored += 1;
        if used.contains(&i) {
            ids.push(c.id);
        }
    }
    if ids.len() == stored {
        return None;
    }
    ids.sort_unstable();
    Some(ids.into())
}

/// Whether rows for `plan` need their cells' write times and TTLs (`writetime()`, `ttl()`,
/// `maxwritetime()`), which cost three allocations per row to carry.
pub(super) fn reads_cell_meta(plan: &SelectPlan) -> bool {
    plan.json
        || plan.bound_projection.is_some()
        || plan.compiled.columns.iter().any(|c| has_cell_meta(&c.sel))
        || plan
            .group_fn
            .as_ref()
            .is_some_and(|g| has_cell_meta(&g.sel))
}

fn has_cell_meta(sel: &Sel) -> bool {
    match sel {
        Sel::CellMeta(_) => true,
        Sel::Column(_) | Sel::Token(_) | Sel::Constant(_) | Sel::CountStar => false,
        Sel::Field { inner, .. }
        | Sel::Negate(inner)
        | Sel::ToJson { inner, .. }
        | Sel::Slice { inner, .. }
        | Sel::Element { inner, .. }
        | Sel::Cast { inner, .. }
        | Sel::Agg { arg: inner, .. } => has_cell_meta(inner),
        Sel::Arith { left, right, .. } => has_cell_meta(left) || has_cell_meta(right),
        Sel::Func { args, .. } => args.iter().any(has_cell_meta),
    }
}

/// Adds the columns `sel` reads to `used`; false when it cannot tell.
fn collect(sel: &Sel, used: &mut Vec<usize>) -> bool {
    match sel {
        Sel::Column(i) => used.push(*i),
        Sel::CellMeta(m) => used.push(m.column),
        Sel::Token(cols) => used.extend(cols.iter().copied()),
        Sel::Constant(_) | Sel::CountStar => {}
        Sel::Field { inner, .. }
        | Sel::Negate(inner)
        | Sel::ToJson { inner, .. }
        | Sel::Slice { inner, .. }
        | Sel::Element { inner, .. }
        | Sel::Cast { inner, .. }
        | Sel::Agg { arg: inner, .. } => return collect(inner, used),
        Sel::Arith { left, right, .. } => return collect(left, used) && collect(right, used),
        Sel::Func { args, .. } => return args.iter().all(|a| collect(a, used)),
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_selectors_name_every_column_they_read() {
        let sel = Sel::Func {
            name: "f".into(),
            args: vec![
                Sel::Column(3),
                Sel::Negate(Box::new(Sel::Column(5))),
                Sel::Constant(None),
            ],
            arg_types: vec![],
        };
        let mut used = Vec::new();
        assert!(collect(&sel, &mut used));
        assert_eq!(used, vec![3, 5]);
        let mut used = Vec::new();
        assert!(collect(&Sel::CountStar, &mut used));
        assert!(used.is_empty());
    }
}
