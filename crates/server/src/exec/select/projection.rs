//! The regular and static columns a SELECT reads, so storage copies only their cells into the
//! result (`ReadQuery::columns`). A scan of one column of a 57-column table then pays for one
//! column per row, not 57.

use super::SelectPlan;
use crate::exec::selectors::Sel;
use helenus_schema::ColumnKind;
use std::sync::Arc;

/// The storage ids of the non-key columns `plan` reads, sorted, or None when it needs them all
/// (every column selected, JSON, or a projection compiled per execution).
pub(super) fn read_columns(plan: &SelectPlan) -> Option<Arc<[u32]>> {
    if plan.json || plan.bound_projection.is_some() {
        return None;
    }
    let mut used: Vec<usize> = Vec::new();
    for c in &plan.compiled.columns {
        collect(&c.sel, &mut used);
    }
    if let Some(g) = &plan.group_fn {
        collect(&g.sel, &mut used);
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
    matches!(sel, Sel::CellMeta(_)) || inner_selectors(sel).into_iter().any(has_cell_meta)
}

/// Adds the columns `sel` reads to `used`.
fn collect(sel: &Sel, used: &mut Vec<usize>) {
    match sel {
        Sel::Column(i) => used.push(*i),
        Sel::CellMeta(m) => used.push(m.column),
        Sel::Token(cols) => used.extend(cols.iter().copied()),
        _ => inner_selectors(sel)
            .into_iter()
            .for_each(|inner| collect(inner, used)),
    }
}

/// The selectors `sel` is computed from. Exhaustive, so a new kind of selector must say what
/// it reads.
fn inner_selectors(sel: &Sel) -> Vec<&Sel> {
    match sel {
        Sel::Column(_) | Sel::CellMeta(_) | Sel::Token(_) | Sel::Constant(_) | Sel::CountStar => {
            Vec::new()
        }
        Sel::Field { inner, .. }
        | Sel::Negate(inner)
        | Sel::ToJson { inner, .. }
        | Sel::Slice { inner, .. }
        | Sel::Element { inner, .. }
        | Sel::Cast { inner, .. }
        | Sel::Agg { arg: inner, .. } => vec![inner],
        Sel::Arith { left, right, .. } => vec![left, right],
        Sel::Func { args, .. } => args.iter().collect(),
    }
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
        collect(&sel, &mut used);
        assert_eq!(used, vec![3, 5]);
        let mut used = Vec::new();
        collect(&Sel::CountStar, &mut used);
        assert!(used.is_empty());
        assert!(!has_cell_meta(&sel));
    }
}
