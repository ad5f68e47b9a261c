//! SELECT: restrictions analysed at prepare time (partition keys, clustering slices, filters) with
//! Cassandra's rules for when ALLOW FILTERING is required; execution over the storage engine or the
//! system tables, with paging.

use super::error::{invalid, ExecError, ExecResult};
use super::paging::PagingState;
use super::rows::Row;
use super::selectors::{self, Compiled, Sel};
use super::values::{self, Binds, Bound};
use super::BindSpec;
use crate::node::NodeState;
use bytes::Bytes;
use helenus_cql::ast::{
    self, Operator, OrderDirection, Relation, RelationValue, SelectStatement, Term,
};
use helenus_schema::{ColumnKind, TableKind, TableMeta};
use helenus_storage as st;
use helenus_types::CqlType;
use std::cmp::Ordering;
use std::sync::Arc;

/// The values one column is restricted to: `=` gives one term, `IN (...)` several, `IN ?` a list.
#[derive(Debug, Clone)]
pub enum ValuesOf {
    Terms(Vec<Term>),
    BindList(Term),
}

#[derive(Debug, Clone)]
pub struct Filter {
    pub column: usize,
    pub op: Operator,
    pub value: RelationValue,
    pub key: Option<Term>,
}

#[derive(Debug, Clone)]
pub enum PartitionSelection {
    /// Every partition key column restricted by = or IN.
    Keys(Vec<ValuesOf>),
    /// `token(pk) > x AND token(pk) <= y` (either side optional), or a full scan.
    TokenRange {
        lower: Option<(Term, bool)>,
        upper: Option<(Term, bool)>,
    },
}

/// One side of a clustering slice: the bound's values and whether it is inclusive.
pub type SliceBound = Option<(Vec<Term>, bool)>;
/// One side of a token range: the token term and whether it is inclusive.
pub type TokenBound = Option<(Term, bool)>;

#[derive(Debug, Clone)]
pub struct SelectPlan {
    pub table: Arc<TableMeta>,
    pub compiled: Arc<Compiled>,
    pub partitions: PartitionSelection,
    /// = / IN restrictions on a clustering prefix.
    pub clustering_eq: Vec<ValuesOf>,
    /// A slice on the column after the prefix: (lower, upper) with inclusivity; multi-column
    /// slices carry several terms.
    pub clustering_slice: Option<(SliceBound, SliceBound)>,
    pub filters: Vec<Filter>,
    pub limit: Option<Term>,
    pub per_partition_limit: Option<Term>,
    pub reversed: bool,
    pub distinct: bool,
    pub json: bool,
    pub group_by: usize,
    /// With `IN` on the partition key and ORDER BY, rows of the partitions are merged by these
    /// (column index, descending) keys, as Cassandra sorts them in memory.
    pub merge_order: Vec<(usize, bool)>,
    /// `ORDER BY v ANN OF [...]`: the vector column, the query vector and the similarity
    /// function of its storage-attached index.
    pub ann: Option<(usize, Term, &'static str)>,
    /// A token range given together with partition key values: checked on each partition.
    pub token_filter: (TokenBound, TokenBound),
    /// Multi-column relations evaluated on each row (tuple order is the types' natural order).
    pub multi_filters: Vec<MultiFilter>,
}

/// `(c1, c2) op (v1, v2)` / `(c1, c2) IN (...)` checked row by row.
#[derive(Debug, Clone)]
pub struct MultiFilter {
    pub columns: Vec<usize>,
    pub op: Operator,
    pub value: RelationValue,
}

/// Records the receiver type of every bind marker in `term`.
pub fn note_binds(term: &Term, spec: BindSpec, specs: &mut Vec<Option<BindSpec>>) {
    match term {
        Term::Bind(m) => {
            if specs.len() <= m.index {
                specs.resize(m.index + 1, None);
            }
            specs[m.index] = Some(spec);
        }
        Term::List(items) | Term::Set(items) | Term::Tuple(items) => {
            let elem_ty = match &spec.ty {
                CqlType::List { element, .. } | CqlType::Set { element, .. } => {
                    Some((**element).clone())
                }
                CqlType::Vector { element, .. } => Some((**element).clone()),
                _ => None,
            };
            for (i, item) in items.iter().enumerate() {
                let ty = match (&spec.ty, &elem_ty) {
                    (CqlType::Tuple(ts), _) => ts.get(i).cloned(),
                    (_, Some(e)) => Some(e.clone()),
                    _ => None,
                };
                if let Some(ty) = ty {
                    note_binds(item, BindSpec { ty, ..spec.clone() }, specs);
                }
            }
        }
        Term::TypeHint { term, ty } => {
            if let Ok(t) = values::resolve_type(ty, None) {
                note_binds(
                    term,
                    BindSpec {
                        ty: t,
                        ..spec.clone()
                    },
                    specs,
                );
            }
        }
        Term::FunctionCall { args, .. } => {
            for a in args {
                if let Some(t) = values::infer_type(a) {
                    note_binds(
                        a,
                        BindSpec {
                            ty: t,
                            ..spec.clone()
                        },
                        specs,
                    );
                }
            }
        }
        _ => {}
    }
}

fn list_of(t: &CqlType) -> CqlType {
    CqlType::List {
        element: Box::new(t.clone()),
        frozen: false,
    }
}

fn values_of(
    t: &TableMeta,
    col: &str,
    ty: &CqlType,
    op: Operator,
    v: &RelationValue,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<ValuesOf> {
    match (op, v) {
        (Operator::Eq, RelationValue::Single(term)) => {
            note_binds(term, BindSpec::new(t, col, ty.clone()), specs);
            Ok(ValuesOf::Terms(vec![term.clone()]))
        }
        (Operator::In, RelationValue::List(terms)) => {
            for term in terms {
                note_binds(term, BindSpec::new(t, col, ty.clone()), specs);
            }
            Ok(ValuesOf::Terms(terms.clone()))
        }
        (Operator::In, RelationValue::Single(term)) => {
            note_binds(
                term,
                BindSpec::new(t, &format!("in({col})"), list_of(ty)),
                specs,
            );
            Ok(ValuesOf::BindList(term.clone()))
        }
        _ => invalid(format!("Unsupported restriction on {col}")),
    }
}

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
            // A partial partition key: filtering on the given components.
            need_filtering = true;
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
        r.as_ref()
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
        let mut gap = false;
        for (p, r) in ck_restr.into_iter().enumerate() {
            let c = &t.columns[ck_cols[p]];
            match r {
                None => gap = true,
                Some((op, value)) => {
                    if gap || clustering_slice.is_some() {
                        if !s.allow_filtering && !system {
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

/// What a SELECT execution returns: result columns, rows, and where the next page starts.
pub struct SelectOutput {
    pub columns: Vec<(String, CqlType)>,
    pub rows: Vec<Vec<Option<Bytes>>>,
    pub paging_state: Option<Bytes>,
}

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
        lists.push(super::scan::expand_values(v, &c.cql_type, &c.name, binds)?);
    }
    let prefixes = super::scan::cartesian(&lists);
    let mut out = Vec::new();
    let bound_values = |terms: &[Term], from: usize| -> ExecResult<Vec<Bytes>> {
        let mut vals = Vec::new();
        for (k, term) in terms.iter().enumerate() {
            let c = ck
                .get(from + k)
                .ok_or_else(|| ExecError::Invalid("too many values in slice".into()))?;
            match values::eval(term, &c.cql_type, &c.name, binds)? {
                Bound::Value(b) => vals.push(b),
                _ => {
                    return invalid(format!(
                        "Invalid null value in condition for column {}",
                        c.name
                    ))
                }
            }
        }
        Ok(vals)
    };
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
            Some((lower, upper)) => {
                let mk = |b: &SliceBound| -> ExecResult<st::ClusteringBound> {
                    match b {
                        None => Ok(st::ClusteringBound {
                            prefix: prefix.clone(),
                            kind: st::BoundKind::Inclusive,
                        }),
                        Some((terms, inclusive)) => {
                            let mut p = prefix.clone();
                            p.extend(bound_values(terms, n)?);
                            Ok(st::ClusteringBound {
                                prefix: p,
                                kind: if *inclusive {
                                    st::BoundKind::Inclusive
                                } else {
                                    st::BoundKind::Exclusive
                                },
                            })
                        }
                    }
                };
                (mk(lower)?, mk(upper)?)
            }
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

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn passes_filters(plan: &SelectPlan, row: &Row, binds: &Binds<'_>) -> ExecResult<bool> {
    if let Some((term, inclusive)) = &plan.token_filter.0 {
        let v = super::scan::token_value(&plan.table, term, binds)?;
        if row.token < v || (!inclusive && row.token == v) {
            return Ok(false);
        }
    }
    if let Some((term, inclusive)) = &plan.token_filter.1 {
        let v = super::scan::token_value(&plan.table, term, binds)?;
        if row.token > v || (!inclusive && row.token == v) {
            return Ok(false);
        }
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
pub fn execute(
    node: &NodeState,
    plan: &SelectPlan,
    binds: &Binds<'_>,
    page_size: Option<usize>,
    paging_state: Option<&[u8]>,
) -> ExecResult<SelectOutput> {
    let now = now_s();
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
    let mut source = super::scan::RowSource::new(node, plan, binds, resume.as_ref(), now)?;
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
        return Ok(super::json::json_rows(&columns, rows, paging));
    }
    Ok(SelectOutput {
        columns,
        rows,
        paging_state: paging,
    })
}

/// Checks an `ORDER BY v ANN OF [...]` as Cassandra 5.0 does: the column must have a
/// storage-attached index (whose `similarity_function` ranks rows) and the query a LIMIT.
fn plan_ann(
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
    let quoted = super::describe::maybe_quote(&c.name);
    let index = t.indexes.iter().find(|idx| {
        idx.options.get("target") == Some(&quoted)
            && idx
                .options
                .get("class_name")
                .is_some_and(|cl| super::ddl::is_sai_class(cl))
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
    note_binds(vector, BindSpec::new(t, &c.name, c.cql_type.clone()), specs);
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
fn rank_by_similarity(plan: &SelectPlan, rows: &mut Vec<Row>, binds: &Binds<'_>) -> ExecResult<()> {
    let Some((col, term, function)) = &plan.ann else {
        return Ok(());
    };
    let c = &plan.table.columns[*col];
    let query = values::to_value(term, &c.cql_type, &c.name, binds)?;
    let mut scored = Vec::with_capacity(rows.len());
    for row in rows.drain(..) {
        let v = match row.cells.get(*col).cloned().flatten() {
            Some(b) => helenus_types::deserialize(&c.cql_type, &b).ok(),
            None => None,
        };
        let score = match v {
            Some(v) => match super::functions::call(function, &[Some(v), query.clone()])? {
                Some(helenus_types::CqlValue::Float(f)) => f as f64,
                _ => f64::NEG_INFINITY,
            },
            None => f64::NEG_INFINITY,
        };
        scored.push((score, row));
    }
    scored.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap_or(Ordering::Equal));
    rows.extend(scored.into_iter().map(|(_, r)| r));
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

/// Cassandra sorts the rows of an `IN` query with ORDER BY in memory by the ordering columns
/// only, keeping the partitions' order among equal keys (a stable sort).
fn merge_partitions(plan: &SelectPlan, rows: &mut [Row]) {
    let t = &plan.table;
    rows.sort_by(|a, b| {
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
    });
}

fn group_key(plan: &SelectPlan, r: &Row) -> Vec<Option<Bytes>> {
    let t = &plan.table;
    t.columns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.kind.is_primary_key())
        .take(plan.group_by)
        .map(|(i, _)| r.cells.get(i).cloned().flatten())
        .collect()
}

/// One output row per group, with the partition key of the group (for PER PARTITION LIMIT).
type Groups = Vec<(Bytes, Vec<Option<Bytes>>)>;

fn aggregate_rows(plan: &SelectPlan, rows: &[Row], now: i64) -> ExecResult<Groups> {
    let cols = &plan.compiled.columns;
    let mut out = Vec::new();
    let mut i = 0;
    if rows.is_empty() {
        if plan.group_by > 0 {
            return Ok(out);
        }
        let states: Vec<_> = cols.iter().map(|c| selectors::agg_init(&c.sel)).collect();
        return Ok(vec![(
            Bytes::new(),
            cols.iter()
                .zip(&states)
                .map(|(c, s)| {
                    if matches!(c.sel, Sel::CountStar | Sel::Agg { .. }) {
                        selectors::agg_finish(s, &c.sel)
                    } else {
                        None
                    }
                })
                .collect(),
        )]);
    }
    while i < rows.len() {
        let key = group_key(plan, &rows[i]);
        let mut states: Vec<_> = cols.iter().map(|c| selectors::agg_init(&c.sel)).collect();
        let mut j = i;
        while j < rows.len() && (plan.group_by == 0 || group_key(plan, &rows[j]) == key) {
            for (c, s) in cols.iter().zip(states.iter_mut()) {
                selectors::agg_update(s, &c.sel, &c.ty, &rows[j], now)?;
            }
            j += 1;
        }
        out.push((
            rows[i].partition_key.clone(),
            cols.iter()
                .zip(&states)
                .map(|(c, s)| selectors::agg_finish(s, &c.sel))
                .collect(),
        ));
        i = j;
    }
    Ok(out)
}

/// Compares two clustering prefixes with the table's comparators (for paging in a partition).
pub fn compare_clustering(t: &TableMeta, a: &[Bytes], b: &[Bytes]) -> Ordering {
    for (c, (x, y)) in t.clustering().zip(a.iter().zip(b.iter())) {
        let o = helenus_types::compare_serialized(&c.cql_type, x, y);
        let o = if c.order == helenus_schema::ClusteringOrder::Desc {
            o.reverse()
        } else {
            o
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// Whether a secondary index on column `col` answers `op`: `Some(true)` for a storage-attached
/// index (several of which combine in one query), `Some(false)` for a legacy index (one per query).
fn index_serves(t: &TableMeta, col: usize, op: Operator) -> Option<bool> {
    use helenus_types::NativeType as N;
    let c = &t.columns[col];
    let quoted = super::describe::maybe_quote(&c.name);
    // SAI indexes literal types by term: equality only.
    let literal = matches!(
        c.cql_type,
        CqlType::Native(N::Ascii | N::Varchar | N::Boolean | N::Uuid)
    );
    t.indexes.iter().find_map(|i| {
        let target = i
            .options
            .get("target")
            .map(String::as_str)
            .unwrap_or_default();
        let sai = i
            .options
            .get("class_name")
            .is_some_and(|cl| super::ddl::is_sai_class(cl));
        let served = match op {
            Operator::Eq => target == quoted || target == format!("full({quoted})"),
            Operator::Contains => target == format!("values({quoted})"),
            Operator::ContainsKey => target == format!("keys({quoted})"),
            Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte => {
                sai && !literal && target == quoted
            }
            _ => false,
        };
        served.then_some(sai)
    })
}

/// Whether an `entries(m)` index answers `m[key] = value`.
fn entries_indexed(t: &TableMeta, col: usize) -> bool {
    let quoted = super::describe::maybe_quote(&t.columns[col].name);
    let want = format!("entries({quoted})");
    t.indexes
        .iter()
        .any(|i| i.options.get("target").is_some_and(|x| *x == want))
}
