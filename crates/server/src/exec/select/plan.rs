//! Planning a SELECT: checks the selection, restrictions, ordering and limits against the table
//! with Cassandra's rules (including when ALLOW FILTERING is required) and builds a `SelectPlan`.

use super::order::plan_ann;
use super::restrictions::{entries_indexed, index_serves, list_of, values_of};
use super::{Filter, MultiFilter, PartitionSelection, SelectPlan, TokenBound, ValuesOf};
use crate::exec::error::{invalid, ExecError, ExecResult};
use crate::exec::key_values::note_binds;
use crate::exec::selectors::{self, Sel};
use crate::exec::values::Binds;
use crate::exec::BindSpec;
use helenus_cql::ast::{
    self, Operator, OrderDirection, Relation, RelationValue, SelectStatement, Term,
};
use helenus_schema::{ColumnKind, TableKind, TableMeta};
use helenus_types::CqlType;
use std::sync::Arc;

const FILTERING_MSG: &str = "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING";

/// Plans a SELECT; `specs` receives the bind markers' receivers.
pub fn plan(
    table: Arc<TableMeta>,
    s: &SelectStatement,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<SelectPlan> {
    let t = &*table;
    let no_binds = Binds { values: &[] };
    let compiled = selectors::compile(t, &s.projection, &no_binds)?;
    super::validate::check(t, s, &compiled)?;
    if s.distinct {
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
    }
    let system = t.kind != TableKind::User;
    let pk_cols: Vec<usize> = (0..t.columns.len())
        .filter(|&i| t.columns[i].kind == ColumnKind::PartitionKey)
        .collect();
    let ck_cols: Vec<usize> = (0..t.columns.len())
        .filter(|&i| t.columns[i].kind == ColumnKind::Clustering)
        .collect();

    let mut pk_vals: Vec<Option<ValuesOf>> = vec![None; pk_cols.len()];
    let mut ck_restr: Vec<Option<(Operator, RelationValue)>> = vec![None; ck_cols.len()];
    let mut multis: Vec<(Vec<usize>, Operator, RelationValue)> = Vec::new();
    let mut from_tuple = vec![false; ck_cols.len()];
    let mut token: (TokenBound, TokenBound) = (None, None);
    let mut filters = Vec::new();
    let mut need_filtering = false;
    // One restriction on an indexed column is served by the index (here: a scan that filters).
    let mut used_index = false;

    for r in &s.where_clause {
        match r {
            Relation::Column { column, op, value } => {
                let i = t.column_index(&column.name).ok_or_else(|| {
                    ExecError::Invalid(format!("Undefined column name {}", column.name))
                })?;
                let c = &t.columns[i];
                let partition_pos = pk_cols.iter().position(|&x| x == i);
                let clustering_pos = ck_cols.iter().position(|&x| x == i);
                match (partition_pos, clustering_pos, op) {
                    (Some(p), _, Operator::Eq | Operator::In) if !system => {
                        if pk_vals[p].is_some() {
                            return invalid(format!("{} cannot be restricted by more than one relation if it includes an Equal", c.name));
                        }
                        pk_vals[p] = Some(values_of(t, &c.name, &c.cql_type, *op, value, specs)?);
                    }
                    (
                        _,
                        Some(p),
                        Operator::Eq
                        | Operator::In
                        | Operator::Lt
                        | Operator::Lte
                        | Operator::Gt
                        | Operator::Gte,
                    ) if !system => {
                        if let RelationValue::Single(term) = value {
                            let ty = if *op == Operator::In {
                                list_of(&c.cql_type)
                            } else {
                                c.cql_type.clone()
                            };
                            let name = if *op == Operator::In {
                                format!("in({})", c.name)
                            } else {
                                c.name.clone()
                            };
                            note_binds(term, BindSpec::new(t, &name, ty), specs);
                        }
                        if let RelationValue::List(terms) = value {
                            for term in terms {
                                note_binds(
                                    term,
                                    BindSpec::new(t, &c.name, c.cql_type.clone()),
                                    specs,
                                );
                            }
                        }
                        match &mut ck_restr[p] {
                            slot @ None => *slot = Some((*op, value.clone())),
                            Some((prev, prev_v)) => {
                                // Two one-sided slices on the same column make a range.
                                let lower =
                                    |o: &Operator| matches!(o, Operator::Gt | Operator::Gte);
                                let upper =
                                    |o: &Operator| matches!(o, Operator::Lt | Operator::Lte);
                                if (lower(prev) && upper(op)) || (upper(prev) && lower(op)) {
                                    filters.push(Filter {
                                        column: i,
                                        op: *op,
                                        value: value.clone(),
                                        key: None,
                                    });
                                    let _ = prev_v;
                                } else {
                                    return invalid(format!("More than one restriction was found for the start bound on {}", c.name));
                                }
                            }
                        }
                    }
                    _ => {
                        if let RelationValue::Single(term) = value {
                            let ty = match op {
                                Operator::In => list_of(&c.cql_type),
                                Operator::Contains => match &c.cql_type {
                                    CqlType::List { element, .. }
                                    | CqlType::Set { element, .. } => (**element).clone(),
                                    CqlType::Map { value, .. } => (**value).clone(),
                                    other => other.clone(),
                                },
                                Operator::ContainsKey => match &c.cql_type {
                                    CqlType::Map { key, .. } => (**key).clone(),
                                    other => other.clone(),
                                },
                                _ => c.cql_type.clone(),
                            };
                            note_binds(term, BindSpec::new(t, &c.name, ty), specs);
                        }
                        if let RelationValue::List(terms) = value {
                            for term in terms {
                                note_binds(
                                    term,
                                    BindSpec::new(t, &c.name, c.cql_type.clone()),
                                    specs,
                                );
                            }
                        }
                        if !system && *op == Operator::Neq {
                            let shown = match value {
                                RelationValue::Single(term) => term.to_string(),
                                _ => String::new(),
                            };
                            return invalid(format!(
                                "Unsupported \"!=\" relation: {} != {shown}",
                                c.name
                            ));
                        }
                        let indexed = match index_serves(t, i, *op) {
                            Some(true) => true,
                            Some(false) if !used_index => {
                                used_index = true;
                                true
                            }
                            _ => false,
                        };
                        if matches!(
                            op,
                            Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte
                        ) && matches!(
                            c.cql_type,
                            CqlType::Native(helenus_types::NativeType::Duration)
                        ) {
                            return invalid(
                                "Slice restrictions are not supported on duration columns",
                            );
                        }
                        if !system && *op == Operator::Eq && c.cql_type.is_multi_cell() {
                            return invalid(format!(
                                "Collection column '{}' ({}) cannot be restricted by a '=' relation",
                                c.name, c.cql_type
                            ));
                        }
                        if !indexed
                            && !system
                            && matches!(
                                c.kind,
                                ColumnKind::Regular | ColumnKind::Static | ColumnKind::PartitionKey
                            )
                        {
                            need_filtering = true;
                        }
                        filters.push(Filter {
                            column: i,
                            op: *op,
                            value: value.clone(),
                            key: None,
                        });
                    }
                }
            }
            Relation::Token { columns, op, value } => {
                let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
                let expected: Vec<&str> = pk_cols
                    .iter()
                    .map(|&i| t.columns[i].name.as_str())
                    .collect();
                if names != expected {
                    return invalid(format!(
                        "The token function arguments must be in the partition key order: {}",
                        expected.join(", ")
                    ));
                }
                let RelationValue::Single(term) = value else {
                    return invalid("Unsupported token restriction");
                };
                note_binds(
                    term,
                    BindSpec::new(
                        t,
                        "partition key token",
                        CqlType::Native(helenus_types::NativeType::Bigint),
                    ),
                    specs,
                );
                match op {
                    Operator::Gt => token.0 = Some((term.clone(), false)),
                    Operator::Gte => token.0 = Some((term.clone(), true)),
                    Operator::Lt => token.1 = Some((term.clone(), false)),
                    Operator::Lte => token.1 = Some((term.clone(), true)),
                    Operator::Eq => {
                        token.0 = Some((term.clone(), true));
                        token.1 = Some((term.clone(), true));
                    }
                    _ => return invalid("Unsupported token restriction"),
                }
            }
            Relation::MultiColumn { columns, op, value } => {
                let mut idx = Vec::new();
                let mut start = None;
                for (n, c) in columns.iter().enumerate() {
                    let i = t.column_index(&c.name).ok_or_else(|| {
                        ExecError::Invalid(format!("Undefined column name {}", c.name))
                    })?;
                    let pos = ck_cols.iter().position(|&x| x == i);
                    let first = *start.get_or_insert(pos.unwrap_or(usize::MAX));
                    if pos.is_none() || pos != first.checked_add(n) {
                        return invalid(format!(
                            "Clustering columns must appear in the PRIMARY KEY order in multi-column relations: {}",
                            columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>().join(", ")
                        ));
                    }
                    idx.push(i);
                }
                let tuple_ty =
                    CqlType::Tuple(idx.iter().map(|&i| t.columns[i].cql_type.clone()).collect());
                let name = format!(
                    "({})",
                    columns
                        .iter()
                        .map(|c| c.name.clone())
                        .collect::<Vec<_>>()
                        .join(",")
                );
                let arity_check = |term: &Term| -> ExecResult<()> {
                    if let Term::Tuple(items) = term {
                        if items.len() != idx.len() {
                            return invalid(format!(
                                "Expected {} elements in value tuple, but got {}: {term}",
                                idx.len(),
                                items.len()
                            ));
                        }
                    }
                    Ok(())
                };
                match value {
                    RelationValue::Single(term) if *op != Operator::In => arity_check(term)?,
                    RelationValue::List(terms) => terms.iter().try_for_each(arity_check)?,
                    _ => {}
                }
                match value {
                    RelationValue::Single(term) => {
                        let ty = if *op == Operator::In {
                            list_of(&tuple_ty)
                        } else {
                            tuple_ty.clone()
                        };
                        note_binds(term, BindSpec::new(t, &name, ty), specs);
                    }
                    RelationValue::List(terms) => {
                        for term in terms {
                            note_binds(term, BindSpec::new(t, &name, tuple_ty.clone()), specs);
                        }
                    }
                    RelationValue::Between(..) => {
                        return invalid("BETWEEN is not supported on multi-column relations")
                    }
                }
                // `(b, c) = (1, 2)` is `b = 1 AND c = 2`: planned as such, it combines with the
                // single-column relations around it into one clustering prefix.
                if let (Operator::Eq, RelationValue::Single(Term::Tuple(items))) = (op, value) {
                    let slots: Vec<usize> = idx
                        .iter()
                        .filter_map(|i| ck_cols.iter().position(|x| x == i))
                        .collect();
                    if slots.len() == items.len() && slots.iter().all(|&p| ck_restr[p].is_none()) {
                        for (&p, item) in slots.iter().zip(items) {
                            ck_restr[p] = Some((Operator::Eq, RelationValue::Single(item.clone())));
                            // An index serves a multi-column relation only on its own column.
                            from_tuple[p] = slots.len() > 1;
                        }
                        continue;
                    }
                }
                multis.push((idx, *op, value.clone()));
            }
            Relation::CustomIndexExpression { .. } => {
                return invalid("Custom index expressions are not supported by Helenus yet");
            }
            Relation::Element {
                column,
                key,
                op,
                value,
            } => {
                let i = t.column_index(&column.name).ok_or_else(|| {
                    ExecError::Invalid(format!("Undefined column name {}", column.name))
                })?;
                if let CqlType::Map {
                    key: kt, value: vt, ..
                } = &t.columns[i].cql_type
                {
                    note_binds(
                        key,
                        BindSpec::new(t, &format!("key({})", column.name), (**kt).clone()),
                        specs,
                    );
                    note_binds(
                        value,
                        BindSpec::new(t, &format!("value({})", column.name), (**vt).clone()),
                        specs,
                    );
                }
                if *op != Operator::Eq || used_index || !entries_indexed(t, i) {
                    need_filtering = true;
                } else {
                    used_index = true;
                }
                filters.push(Filter {
                    column: i,
                    op: *op,
                    value: RelationValue::Single(value.clone()),
                    key: Some(key.clone()),
                });
            }
        }
    }

    // Partition selection.
    let mut token_filter = (None, None);
    let partitions = if !system && pk_vals.iter().all(Option::is_some) && !pk_vals.is_empty() {
        // Both kinds of restriction: the keys select, the token range filters.
        token_filter = std::mem::take(&mut token);
        PartitionSelection::Keys(pk_vals.into_iter().flatten().collect())
    } else {
        if pk_vals.iter().any(Option::is_some) {
            // A partial partition key: filtering on the given components, unless an index on
            // one of them answers the query (Cassandra then reads the index, not every row).
            let served = pk_vals.iter().enumerate().any(|(p, v)| {
                matches!(v, Some(ValuesOf::Terms(ts)) if ts.len() == 1)
                    && match index_serves(t, pk_cols[p], Operator::Eq) {
                        Some(true) => true,
                        Some(false) if !used_index => {
                            used_index = true;
                            true
                        }
                        _ => false,
                    }
            });
            need_filtering |= !served;
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
                    filters.push(Filter {
                        column: pk_cols[p],
                        op,
                        value,
                        key: None,
                    });
                }
            }
        }
        PartitionSelection::TokenRange {
            lower: token.0,
            upper: token.1,
        }
    };
    let keyed = matches!(partitions, PartitionSelection::Keys(_));

    // Clustering: an = / IN prefix, then at most one slice; anything after a gap becomes a filter.
    let selects_only_statics = {
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
    };
    if !system
        && selects_only_statics
        && (ck_restr.iter().any(Option::is_some) || !multis.is_empty())
    {
        return invalid("Cannot restrict clustering columns when selecting only static columns");
    }
    let ck_indexed = ck_restr.iter().enumerate().any(|(p, r)| {
        !from_tuple[p]
            && r.as_ref()
                .is_some_and(|(op, _)| index_serves(t, ck_cols[p], *op).is_some())
    });
    let mut clustering_eq = Vec::new();
    let mut clustering_slice = None;
    let mut multi_filters = Vec::new();
    // One multi-column `=` or slice from the first clustering column, all ascending, maps onto
    // storage bounds; anything else is checked row by row (after the single-column prefix).
    let fast_multi = multis.len() == 1
        && ck_restr.iter().all(Option::is_none)
        && multis.iter().all(|(idx, op, value)| {
            idx.first() == ck_cols.first()
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
        multi_filters.push(MultiFilter { columns, op, value });
    }
    if let Some((idx, op, value)) = multi {
        let single_terms = |v: &RelationValue| -> Vec<Term> {
            match v {
                RelationValue::Single(Term::Tuple(items)) => items.clone(),
                _ => Vec::new(),
            }
        };
        match op {
            Operator::Eq => {
                for term in single_terms(&value) {
                    clustering_eq.push(ValuesOf::Terms(vec![term]));
                }
                let _ = idx;
            }
            Operator::Gt | Operator::Gte => {
                clustering_slice = Some((Some((single_terms(&value), op == Operator::Gte)), None))
            }
            Operator::Lt | Operator::Lte => {
                clustering_slice = Some((None, Some((single_terms(&value), op == Operator::Lte))))
            }
            _ => return invalid("Unsupported multi-column relation"),
        }
    } else {
        // Columns under a multi-column relation checked row by row end the prefix; relations
        // on later columns are then checked row by row too.
        let covered = |p: usize| {
            multi_filters
                .iter()
                .any(|m| m.columns.contains(&ck_cols[p]))
        };
        let mut gap = false;
        let mut after_multi = false;
        for (p, r) in ck_restr.into_iter().enumerate() {
            let c = &t.columns[ck_cols[p]];
            match r {
                None if covered(p) => after_multi = true,
                None => gap = true,
                Some((op, value)) if after_multi && !gap => filters.push(Filter {
                    column: ck_cols[p],
                    op,
                    value,
                    key: None,
                }),
                Some((op, value)) => {
                    if gap || clustering_slice.is_some() {
                        // An index on the column answers it without its preceding columns.
                        let indexed = index_serves(t, ck_cols[p], op).is_some();
                        if !s.allow_filtering && !system && !indexed {
                            let prev = if p > 0 {
                                t.columns[ck_cols[p - 1]].name.clone()
                            } else {
                                String::new()
                            };
                            return invalid(format!(
                                "PRIMARY KEY column \"{}\" cannot be restricted as preceding column \"{prev}\" is not restricted",
                                c.name
                            ));
                        }
                        filters.push(Filter {
                            column: ck_cols[p],
                            op,
                            value,
                            key: None,
                        });
                        continue;
                    }
                    match op {
                        Operator::Eq | Operator::In => clustering_eq.push(values_of(
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
                            clustering_slice =
                                Some(if matches!(op, Operator::Gt | Operator::Gte) {
                                    (Some(bound), None)
                                } else {
                                    (None, Some(bound))
                                });
                        }
                    }
                }
            }
        }
    }
    // A second bound on the slice column was put in filters above; move it into the slice.
    if let Some((lower, upper)) = &mut clustering_slice {
        let slice_col = ck_cols.get(clustering_eq.len()).copied();
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
    if !system && !keyed && !ck_indexed && (!clustering_eq.is_empty() || clustering_slice.is_some())
    {
        need_filtering = true;
    }
    if need_filtering && !s.allow_filtering && !system {
        return invalid(FILTERING_MSG);
    }

    // ORDER BY
    let mut reversed = false;
    let mut merge_order = Vec::new();
    let mut ann = None;
    if let [ast::Ordering {
        column,
        direction: OrderDirection::Ann(vector),
    }] = s.order_by.as_slice()
    {
        ann = Some(plan_ann(t, column, vector, s.limit.is_some(), specs)?);
    } else if !s.order_by.is_empty() {
        if !keyed {
            return invalid("ORDER BY is only supported when the partition key is restricted by an EQ or an IN.");
        }
        for (n, o) in s.order_by.iter().enumerate() {
            let i = t.column_index(&o.column.name).ok_or_else(|| {
                ExecError::Invalid(format!("Undefined column name {}", o.column.name))
            })?;
            if ck_cols.get(n) != Some(&i) {
                return invalid("Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY".to_string());
            }
            let desc_declared = t.columns[i].order == helenus_schema::ClusteringOrder::Desc;
            let desc_wanted = matches!(o.direction, OrderDirection::Desc);
            let rev = desc_declared != desc_wanted;
            merge_order.push((i, desc_wanted));
            if n == 0 {
                reversed = rev;
            } else if rev != reversed {
                return invalid("Unsupported order by relation");
            }
        }
    }
    for term in s.limit.iter() {
        note_binds(
            term,
            BindSpec::new(
                t,
                "[limit]",
                CqlType::Native(helenus_types::NativeType::Int),
            ),
            specs,
        );
    }
    for term in s.per_partition_limit.iter() {
        note_binds(
            term,
            BindSpec::new(
                t,
                "[per_partition_limit]",
                CqlType::Native(helenus_types::NativeType::Int),
            ),
            specs,
        );
    }
    // IN on one partition key column means several partitions to merge.
    let multi_partition = match &partitions {
        PartitionSelection::Keys(vals) => vals.iter().any(|v| match v {
            ValuesOf::Terms(ts) => ts.len() > 1,
            ValuesOf::BindList(_) => true,
        }),
        _ => false,
    };
    if !multi_partition {
        merge_order.clear();
    }
    // GROUP BY follows the primary key order; columns restricted by `=` may be skipped.
    let key_cols: Vec<usize> = pk_cols.iter().chain(ck_cols.iter()).copied().collect();
    let eq_restricted = |pos: usize| -> bool {
        if pos < pk_cols.len() {
            match &partitions {
                PartitionSelection::Keys(vals) => {
                    matches!(vals.get(pos), Some(ValuesOf::Terms(ts)) if ts.len() == 1)
                }
                _ => false,
            }
        } else {
            matches!(clustering_eq.get(pos - pk_cols.len()), Some(ValuesOf::Terms(ts)) if ts.len() == 1)
        }
    };
    let mut group_by = 0;
    for g in s.group_by.iter() {
        let ast::Selector::Column(id) = g else {
            return invalid("Only column names are supported in GROUP BY");
        };
        let i = t
            .column_index(&id.name)
            .ok_or_else(|| ExecError::Invalid(format!("Undefined column name {}", id.name)))?;
        let mut pos = group_by;
        while pos < key_cols.len() && key_cols[pos] != i && eq_restricted(pos) {
            pos += 1;
        }
        if key_cols.get(pos) != Some(&i) {
            return invalid("Group by currently only support groups of columns following their declared order in the PRIMARY KEY");
        }
        group_by = pos + 1;
    }
    if group_by > 0 && (group_by..pk_cols.len()).any(|p| !eq_restricted(p)) {
        return invalid("Group by is not supported on only a part of the partition key");
    }
    Ok(SelectPlan {
        table,
        compiled: Arc::new(compiled),
        partitions,
        clustering_eq,
        clustering_slice,
        filters,
        limit: s.limit.clone(),
        per_partition_limit: s.per_partition_limit.clone(),
        reversed,
        distinct: s.distinct,
        json: s.json,
        group_by,
        merge_order,
        multi_filters,
        token_filter,
        ann,
    })
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
