//! Phases 3 to 5 of planning: which partitions are read, the clustering prefix and slice, and
//! whether what is left to check row by row needs ALLOW FILTERING.

use super::{Clustering, Restrictions, Shape, FILTERING_MSG};
use crate::exec::error::{invalid, ExecResult};
use crate::exec::select::restrictions::{index_serves, values_of};
use crate::exec::select::{Filter, MultiFilter, PartitionSelection, TokenBound, ValuesOf};
use crate::exec::selectors::{Compiled, Sel};
use helenus_cql::ast::{Operator, RelationValue, Term};
use helenus_schema::{ColumnKind, TableMeta};

/// Partition keys when every partition key column has `=`/`IN` values (a token range given as
/// well is returned apart, to check on each partition); otherwise a token range, a partial key
/// becoming filters.
pub(super) fn select_partitions(
    shape: &Shape<'_>,
    r: &mut Restrictions,
) -> (PartitionSelection, (TokenBound, TokenBound)) {
    let pk_vals = std::mem::take(&mut r.pk_vals);
    let token = std::mem::take(&mut r.token);
    if !shape.system && pk_vals.iter().all(Option::is_some) && !pk_vals.is_empty() {
        // Both kinds of restriction: the keys select, the token range filters.
        return (
            PartitionSelection::Keys(pk_vals.into_iter().flatten().collect()),
            token,
        );
    }
    if pk_vals.iter().any(Option::is_some) {
        partial_partition_key(shape, r, pk_vals);
    }
    let range = PartitionSelection::TokenRange {
        lower: token.0,
        upper: token.1,
    };
    (range, (None, None))
}

/// A partial partition key: filtering on the given components, unless an index on one of them
/// answers the query (Cassandra then reads the index, not every row).
fn partial_partition_key(shape: &Shape<'_>, r: &mut Restrictions, pk_vals: Vec<Option<ValuesOf>>) {
    let served = pk_vals.iter().enumerate().any(|(p, v)| {
        matches!(v, Some(ValuesOf::Terms(ts)) if ts.len() == 1)
            && match index_serves(shape.t, shape.pk_cols[p], Operator::Eq) {
                Some(true) => true,
                Some(false) if !r.used_index => {
                    r.used_index = true;
                    true
                }
                _ => false,
            }
    });
    r.need_filtering |= !served;
    for (p, v) in pk_vals.into_iter().enumerate() {
        if let Some(ValuesOf::Terms(terms)) = v {
            let value = if terms.len() == 1 {
                RelationValue::Single(terms[0].clone())
            } else {
                RelationValue::List(terms)
            };
            let op = if matches!(value, RelationValue::Single(_)) {
                Operator::Eq
            } else {
                Operator::In
            };
            r.filters.push(Filter {
                column: shape.pk_cols[p],
                op,
                value,
                key: None,
            });
        }
    }
}

/// Whether the selection is only static (and partition key) columns, with at least one static.
pub(super) fn selects_only_statics(t: &TableMeta, compiled: &Compiled) -> bool {
    let cols: Vec<usize> = compiled
        .columns
        .iter()
        .filter_map(|c| match c.sel {
            Sel::Column(i) => Some(i),
            _ => None,
        })
        .collect();
    cols.len() == compiled.columns.len()
        && cols
            .iter()
            .any(|&i| t.columns[i].kind == ColumnKind::Static)
        && cols.iter().all(|&i| {
            matches!(
                t.columns[i].kind,
                ColumnKind::Static | ColumnKind::PartitionKey
            )
        })
}

/// Whether an index serves one of the single-column clustering relations.
pub(super) fn clustering_indexed(shape: &Shape<'_>, r: &Restrictions) -> bool {
    r.ck_restr.iter().enumerate().any(|(p, restriction)| {
        !r.from_tuple[p]
            && restriction
                .as_ref()
                .is_some_and(|(op, _)| index_serves(shape.t, shape.ck_cols[p], *op).is_some())
    })
}

/// Clustering: an `=` / `IN` prefix, then at most one slice; anything after a gap becomes a
/// filter (which needs ALLOW FILTERING unless an index serves it).
pub(super) fn plan_clustering(
    shape: &Shape<'_>,
    allow_filtering: bool,
    r: &mut Restrictions,
) -> ExecResult<Clustering> {
    let t = shape.t;
    let mut multis = std::mem::take(&mut r.multis);
    let ck_restr = std::mem::take(&mut r.ck_restr);
    let mut clustering = Clustering {
        eq: Vec::new(),
        slice: None,
        multi_filters: Vec::new(),
    };
    // One multi-column `=` or slice from the first clustering column, all ascending, maps onto
    // storage bounds; anything else is checked row by row (after the single-column prefix).
    let fast_multi = multis.len() == 1
        && ck_restr.iter().all(Option::is_none)
        && multis.iter().all(|(idx, op, value)| {
            idx.first() == shape.ck_cols.first()
                && matches!(
                    op,
                    Operator::Eq | Operator::Gt | Operator::Gte | Operator::Lt | Operator::Lte
                )
                && matches!(value, RelationValue::Single(Term::Tuple(_)))
                && idx
                    .iter()
                    .all(|&i| t.columns[i].order != helenus_schema::ClusteringOrder::Desc)
        });
    let multi = if fast_multi { multis.pop() } else { None };
    for (columns, op, value) in multis {
        clustering
            .multi_filters
            .push(MultiFilter { columns, op, value });
    }
    match multi {
        Some((_, op, value)) => multi_column_bounds(op, &value, &mut clustering)?,
        None => clustering_prefix(
            shape,
            allow_filtering,
            ck_restr,
            &mut clustering,
            &mut r.filters,
        )?,
    }
    merge_second_bound(shape, &mut clustering, &mut r.filters);
    Ok(clustering)
}

/// A multi-column `=` or slice from the first clustering column, as storage bounds.
fn multi_column_bounds(
    op: Operator,
    value: &RelationValue,
    clustering: &mut Clustering,
) -> ExecResult<()> {
    let terms = match value {
        RelationValue::Single(Term::Tuple(items)) => items.clone(),
        _ => Vec::new(),
    };
    match op {
        Operator::Eq => {
            for term in terms {
                clustering.eq.push(ValuesOf::Terms(vec![term]));
            }
        }
        Operator::Gt | Operator::Gte => {
            clustering.slice = Some((Some((terms, op == Operator::Gte)), None))
        }
        Operator::Lt | Operator::Lte => {
            clustering.slice = Some((None, Some((terms, op == Operator::Lte))))
        }
        _ => return invalid("Unsupported multi-column relation"),
    }
    Ok(())
}

/// The single-column clustering relations in key order: `=` / `IN` extend the prefix, a slice
/// ends it; after a gap or a slice, relations become filters. Columns under a multi-column
/// relation checked row by row end the prefix too.
fn clustering_prefix(
    shape: &Shape<'_>,
    allow_filtering: bool,
    ck_restr: Vec<Option<(Operator, RelationValue)>>,
    clustering: &mut Clustering,
    filters: &mut Vec<Filter>,
) -> ExecResult<()> {
    let t = shape.t;
    let ck_cols = &shape.ck_cols;
    let covered = |p: usize| {
        clustering
            .multi_filters
            .iter()
            .any(|m| m.columns.contains(&ck_cols[p]))
    };
    let covered: Vec<bool> = (0..ck_restr.len()).map(covered).collect();
    let mut gap = false;
    let mut after_multi = false;
    for (p, r) in ck_restr.into_iter().enumerate() {
        let c = &t.columns[ck_cols[p]];
        let (op, value) = match r {
            None if covered[p] => {
                after_multi = true;
                continue;
            }
            None => {
                gap = true;
                continue;
            }
            Some(r) => r,
        };
        if after_multi && !gap {
            check_after_multi_slice(shape, allow_filtering, clustering, p, op)?;
            filters.push(Filter {
                column: ck_cols[p],
                op,
                value,
                key: None,
            });
            continue;
        }
        if gap || clustering.slice.is_some() {
            check_preceding_restricted(shape, allow_filtering, p, op)?;
            filters.push(Filter {
                column: ck_cols[p],
                op,
                value,
                key: None,
            });
            continue;
        }
        match op {
            Operator::Eq | Operator::In => clustering.eq.push(values_of(
                t,
                &c.name,
                &c.cql_type,
                op,
                &value,
                &mut Vec::new(),
            )?),
            _ => {
                let RelationValue::Single(term) = value else {
                    return invalid("bad slice");
                };
                let bound = (vec![term], matches!(op, Operator::Gte | Operator::Lte));
                clustering.slice = Some(if matches!(op, Operator::Gt | Operator::Gte) {
                    (Some(bound), None)
                } else {
                    (None, Some(bound))
                });
            }
        }
    }
    Ok(())
}

/// A clustering column restricted after a multi-column slice is checked row by row: that needs
/// ALLOW FILTERING or an index on the column.
fn check_after_multi_slice(
    shape: &Shape<'_>,
    allow_filtering: bool,
    clustering: &Clustering,
    p: usize,
    op: Operator,
) -> ExecResult<()> {
    let t = shape.t;
    if allow_filtering || shape.system || index_serves(t, shape.ck_cols[p], op).is_some() {
        return Ok(());
    }
    let slice = clustering
        .multi_filters
        .iter()
        .find(|m| !matches!(m.op, Operator::Eq | Operator::In));
    match slice.and_then(|m| m.columns.first()) {
        Some(&first) => invalid(format!(
            "Clustering column \"{}\" cannot be restricted (preceding column \"{}\" is restricted by a non-EQ relation)",
            t.columns[shape.ck_cols[p]].name, t.columns[first].name
        )),
        None => Ok(()),
    }
}

/// A clustering column restricted after an unrestricted one (or after the slice) is checked row
/// by row: that needs ALLOW FILTERING, or an index on the column, which answers it without its
/// preceding columns.
fn check_preceding_restricted(
    shape: &Shape<'_>,
    allow_filtering: bool,
    p: usize,
    op: Operator,
) -> ExecResult<()> {
    let t = shape.t;
    let indexed = index_serves(t, shape.ck_cols[p], op).is_some();
    if allow_filtering || shape.system || indexed {
        return Ok(());
    }
    let prev = match p.checked_sub(1) {
        Some(q) => t.columns[shape.ck_cols[q]].name.clone(),
        None => String::new(),
    };
    invalid(format!(
        "PRIMARY KEY column \"{}\" cannot be restricted as preceding column \"{prev}\" is not restricted",
        t.columns[shape.ck_cols[p]].name
    ))
}

/// A second bound on the slice column was put in filters by `clustering_relation`; it becomes
/// the other side of the slice.
fn merge_second_bound(shape: &Shape<'_>, clustering: &mut Clustering, filters: &mut Vec<Filter>) {
    let Some((lower, upper)) = &mut clustering.slice else {
        return;
    };
    let slice_col = shape.ck_cols.get(clustering.eq.len()).copied();
    filters.retain(|f| {
        if Some(f.column) != slice_col {
            return true;
        }
        let RelationValue::Single(term) = &f.value else {
            return true;
        };
        match f.op {
            Operator::Gt | Operator::Gte if lower.is_none() => {
                *lower = Some((vec![term.clone()], f.op == Operator::Gte));
                false
            }
            Operator::Lt | Operator::Lte if upper.is_none() => {
                *upper = Some((vec![term.clone()], f.op == Operator::Lte));
                false
            }
            _ => true,
        }
    });
}

/// Whether the plan reads more than the restrictions select: filters that no index serves, or
/// clustering restrictions without the partition key. Either needs ALLOW FILTERING.
fn needs_filtering(
    shape: &Shape<'_>,
    keyed: bool,
    ck_indexed: bool,
    clustering: &Clustering,
    need_filtering: bool,
) -> bool {
    need_filtering
        || (!shape.system
            && !keyed
            && !ck_indexed
            && (!clustering.eq.is_empty() || clustering.slice.is_some()))
}

pub(super) fn check_filtering(
    shape: &Shape<'_>,
    allow_filtering: bool,
    keyed: bool,
    ck_indexed: bool,
    clustering: &Clustering,
    need_filtering: bool,
) -> ExecResult<()> {
    if needs_filtering(shape, keyed, ck_indexed, clustering, need_filtering)
        && !allow_filtering
        && !shape.system
    {
        return invalid(FILTERING_MSG);
    }
    Ok(())
}

/// A legacy (non-SAI) index answers one restriction; Cassandra filters every other restricted
/// column (regular columns, and the clustering columns unless they are a plain prefix of a read
/// by partition key), which needs ALLOW FILTERING.
pub(super) fn legacy_index_needs_filtering(
    shape: &Shape<'_>,
    r: &Restrictions,
    clustering: &Clustering,
    keyed: bool,
) -> bool {
    let t = shape.t;
    let is_ck = |c: usize| shape.ck_cols.contains(&c);
    let legacy_ck_filter = r
        .filters
        .iter()
        .any(|f| is_ck(f.column) && index_serves(t, f.column, f.op) == Some(false));
    let legacy_ck_prefix = !keyed
        && (0..clustering.eq.len())
            .any(|p| index_serves(t, shape.ck_cols[p], Operator::Eq) == Some(false));
    if !(r.used_index || legacy_ck_filter || legacy_ck_prefix) {
        return false;
    }
    let mut ck: Vec<usize> = shape.ck_cols[..clustering.eq.len()].to_vec();
    if clustering.slice.is_some() {
        ck.extend(shape.ck_cols.get(clustering.eq.len()));
    }
    ck.extend(r.filters.iter().map(|f| f.column).filter(|&c| is_ck(c)));
    ck.extend(
        clustering
            .multi_filters
            .iter()
            .flat_map(|m| m.columns.iter().copied()),
    );
    ck.sort_unstable();
    ck.dedup();
    let ck_filtered = !keyed || r.filters.iter().any(|f| is_ck(f.column));
    let mut regular: Vec<usize> = r
        .filters
        .iter()
        .map(|f| f.column)
        .filter(|&c| !is_ck(c) && !shape.pk_cols.contains(&c))
        .collect();
    regular.sort_unstable();
    regular.dedup();
    regular.len() + if ck_filtered { ck.len() } else { 0 } > 1
}
