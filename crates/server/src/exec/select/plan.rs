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

use super::order::plan_ann;
use super::restrictions::{entries_indexed, index_serves, list_of, values_of};
use super::{
    Filter, MultiFilter, PartitionSelection, SelectPlan, SliceBound, TokenBound, ValuesOf,
};
use crate::exec::error::{invalid, ExecError, ExecResult};
use crate::exec::key_values::note_binds;
use crate::exec::selectors::{self, Compiled, Sel};
use crate::exec::values::Binds;
use crate::exec::BindSpec;
use helenus_cql::ast::{
    self, Ident, Operator, OrderDirection, Relation, RelationValue, SelectStatement, Term,
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
    check_filtering(
        &shape,
        s.allow_filtering,
        keyed,
        ck_indexed,
        &clustering,
        r.need_filtering,
    )?;
    let mut order = plan_order(&shape, s, keyed, specs)?;
    note_limit_binds(t, s, specs);
    if !multi_partition(&partitions) {
        order.merge_order.clear();
    }
    let group_by = plan_group_by(&shape, s, &partitions, &clustering.eq)?;
    Ok(SelectPlan {
        table,
        compiled: Arc::new(compiled),
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

/// Sorts the WHERE clause by what each relation restricts, noting bind markers' receivers.
fn collect_restrictions(
    shape: &Shape<'_>,
    s: &SelectStatement,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<Restrictions> {
    let mut r = Restrictions {
        pk_vals: vec![None; shape.pk_cols.len()],
        ck_restr: vec![None; shape.ck_cols.len()],
        multis: Vec::new(),
        from_tuple: vec![false; shape.ck_cols.len()],
        token: (None, None),
        filters: Vec::new(),
        need_filtering: false,
        used_index: false,
    };
    for relation in &s.where_clause {
        match relation {
            Relation::Column { column, op, value } => {
                column_relation(shape, &mut r, &column.name, *op, value, specs)?
            }
            Relation::Token { columns, op, value } => {
                token_relation(shape, &mut r, columns, *op, value, specs)?
            }
            Relation::MultiColumn { columns, op, value } => {
                multi_column_relation(shape, &mut r, columns, *op, value, specs)?
            }
            Relation::CustomIndexExpression { .. } => {
                return invalid("Custom index expressions are not supported by Helenus yet");
            }
            Relation::Element {
                column,
                key,
                op,
                value,
            } => element_relation(shape, &mut r, &column.name, key, *op, value, specs)?,
        }
    }
    Ok(r)
}

/// `col op value`: partition key values, a clustering relation, or a filter.
fn column_relation(
    shape: &Shape<'_>,
    r: &mut Restrictions,
    column: &str,
    op: Operator,
    value: &RelationValue,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<()> {
    let t = shape.t;
    let i = column_index(t, column)?;
    let c = &t.columns[i];
    let partition_pos = shape.pk_cols.iter().position(|&x| x == i);
    let clustering_pos = shape.ck_cols.iter().position(|&x| x == i);
    match (partition_pos, clustering_pos, op) {
        (Some(p), _, Operator::Eq | Operator::In) if !shape.system => {
            if r.pk_vals[p].is_some() {
                return invalid(format!(
                    "{} cannot be restricted by more than one relation if it includes an Equal",
                    c.name
                ));
            }
            r.pk_vals[p] = Some(values_of(t, &c.name, &c.cql_type, op, value, specs)?);
            Ok(())
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
        ) if !shape.system => clustering_relation(shape, r, i, p, op, value, specs),
        _ => filter_relation(shape, r, i, op, value, specs),
    }
}

/// A relation on the clustering column at position `p`.
fn clustering_relation(
    shape: &Shape<'_>,
    r: &mut Restrictions,
    i: usize,
    p: usize,
    op: Operator,
    value: &RelationValue,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<()> {
    let t = shape.t;
    let c = &t.columns[i];
    if let RelationValue::Single(term) = value {
        let (name, ty) = if op == Operator::In {
            (format!("in({})", c.name), list_of(&c.cql_type))
        } else {
            (c.name.clone(), c.cql_type.clone())
        };
        note_binds(term, BindSpec::new(t, &name, ty), specs);
    }
    if let RelationValue::List(terms) = value {
        for term in terms {
            note_binds(term, BindSpec::new(t, &c.name, c.cql_type.clone()), specs);
        }
    }
    match &mut r.ck_restr[p] {
        slot @ None => *slot = Some((op, value.clone())),
        Some((prev, _)) => {
            // Two one-sided slices on the same column make a range.
            let lower = |o: &Operator| matches!(o, Operator::Gt | Operator::Gte);
            let upper = |o: &Operator| matches!(o, Operator::Lt | Operator::Lte);
            if (lower(prev) && upper(&op)) || (upper(prev) && lower(&op)) {
                r.filters.push(Filter {
                    column: i,
                    op,
                    value: value.clone(),
                    key: None,
                });
            } else {
                return invalid(format!(
                    "More than one restriction was found for the start bound on {}",
                    c.name
                ));
            }
        }
    }
    Ok(())
}

/// The receiver type of a bind marker compared with column `c` by `op`.
fn filter_bind_type(c: &helenus_schema::ColumnMeta, op: Operator) -> CqlType {
    match op {
        Operator::In => list_of(&c.cql_type),
        Operator::Contains => match &c.cql_type {
            CqlType::List { element, .. } | CqlType::Set { element, .. } => (**element).clone(),
            CqlType::Map { value, .. } => (**value).clone(),
            other => other.clone(),
        },
        Operator::ContainsKey => match &c.cql_type {
            CqlType::Map { key, .. } => (**key).clone(),
            other => other.clone(),
        },
        _ => c.cql_type.clone(),
    }
}

/// A relation checked row by row: on a regular or static column, a partition key column with
/// another operator, or any column of a system table. Needs ALLOW FILTERING unless an index
/// serves it.
fn filter_relation(
    shape: &Shape<'_>,
    r: &mut Restrictions,
    i: usize,
    op: Operator,
    value: &RelationValue,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<()> {
    let t = shape.t;
    let c = &t.columns[i];
    if let RelationValue::Single(term) = value {
        note_binds(
            term,
            BindSpec::new(t, &c.name, filter_bind_type(c, op)),
            specs,
        );
    }
    if let RelationValue::List(terms) = value {
        for term in terms {
            note_binds(term, BindSpec::new(t, &c.name, c.cql_type.clone()), specs);
        }
    }
    if !shape.system && op == Operator::Neq {
        let shown = match value {
            RelationValue::Single(term) => term.to_string(),
            _ => String::new(),
        };
        return invalid(format!(
            "Unsupported \"!=\" relation: {} != {shown}",
            c.name
        ));
    }
    let indexed = match index_serves(t, i, op) {
        Some(true) => true,
        Some(false) if !r.used_index => {
            r.used_index = true;
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
        return invalid("Slice restrictions are not supported on duration columns");
    }
    if !shape.system && op == Operator::Eq && c.cql_type.is_multi_cell() {
        return invalid(format!(
            "Collection column '{}' ({}) cannot be restricted by a '=' relation",
            c.name, c.cql_type
        ));
    }
    if !indexed
        && !shape.system
        && matches!(
            c.kind,
            ColumnKind::Regular | ColumnKind::Static | ColumnKind::PartitionKey
        )
    {
        r.need_filtering = true;
    }
    r.filters.push(Filter {
        column: i,
        op,
        value: value.clone(),
        key: None,
    });
    Ok(())
}

/// `token(pk) op term`: a bound of the token range.
fn token_relation(
    shape: &Shape<'_>,
    r: &mut Restrictions,
    columns: &[Ident],
    op: Operator,
    value: &RelationValue,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<()> {
    let t = shape.t;
    let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    let expected: Vec<&str> = shape
        .pk_cols
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
        Operator::Gt => r.token.0 = Some((term.clone(), false)),
        Operator::Gte => r.token.0 = Some((term.clone(), true)),
        Operator::Lt => r.token.1 = Some((term.clone(), false)),
        Operator::Lte => r.token.1 = Some((term.clone(), true)),
        Operator::Eq => {
            r.token.0 = Some((term.clone(), true));
            r.token.1 = Some((term.clone(), true));
        }
        _ => return invalid("Unsupported token restriction"),
    }
    Ok(())
}

/// `(c1, c2) op value`: the columns must be consecutive clustering columns in key order.
fn multi_column_relation(
    shape: &Shape<'_>,
    r: &mut Restrictions,
    columns: &[Ident],
    op: Operator,
    value: &RelationValue,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<()> {
    let idx = multi_column_indexes(shape, columns)?;
    note_multi_column_binds(shape.t, &idx, columns, op, value, specs)?;
    // `(b, c) = (1, 2)` is `b = 1 AND c = 2`: planned as such, it combines with the
    // single-column relations around it into one clustering prefix.
    if let (Operator::Eq, RelationValue::Single(Term::Tuple(items))) = (op, value) {
        let slots: Vec<usize> = idx
            .iter()
            .filter_map(|i| shape.ck_cols.iter().position(|x| x == i))
            .collect();
        if slots.len() == items.len() && slots.iter().all(|&p| r.ck_restr[p].is_none()) {
            for (&p, item) in slots.iter().zip(items) {
                r.ck_restr[p] = Some((Operator::Eq, RelationValue::Single(item.clone())));
                // An index serves a multi-column relation only on its own column.
                r.from_tuple[p] = slots.len() > 1;
            }
            return Ok(());
        }
    }
    r.multis.push((idx, op, value.clone()));
    Ok(())
}

/// The column indexes of a multi-column relation, which must name consecutive clustering
/// columns in PRIMARY KEY order.
fn multi_column_indexes(shape: &Shape<'_>, columns: &[Ident]) -> ExecResult<Vec<usize>> {
    let mut idx = Vec::new();
    let mut start = None;
    for (n, c) in columns.iter().enumerate() {
        let i = column_index(shape.t, &c.name)?;
        let pos = shape.ck_cols.iter().position(|&x| x == i);
        let first = *start.get_or_insert(pos.unwrap_or(usize::MAX));
        if pos.is_none() || pos != first.checked_add(n) {
            return invalid(format!(
                "Clustering columns must appear in the PRIMARY KEY order in multi-column relations: {}",
                columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>().join(", ")
            ));
        }
        idx.push(i);
    }
    Ok(idx)
}

/// Checks the arity of a multi-column relation's tuples and notes its bind markers' receivers.
fn note_multi_column_binds(
    t: &TableMeta,
    idx: &[usize],
    columns: &[Ident],
    op: Operator,
    value: &RelationValue,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<()> {
    let tuple_ty = CqlType::Tuple(idx.iter().map(|&i| t.columns[i].cql_type.clone()).collect());
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
        RelationValue::Single(term) if op != Operator::In => arity_check(term)?,
        RelationValue::List(terms) => terms.iter().try_for_each(arity_check)?,
        _ => {}
    }
    match value {
        RelationValue::Single(term) => {
            let ty = if op == Operator::In {
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
    Ok(())
}

/// `m[key] op value`: a filter, served by an index on the map's entries when it is an `=`.
fn element_relation(
    shape: &Shape<'_>,
    r: &mut Restrictions,
    column: &str,
    key: &Term,
    op: Operator,
    value: &Term,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<()> {
    let t = shape.t;
    let i = column_index(t, column)?;
    if let CqlType::Map {
        key: kt, value: vt, ..
    } = &t.columns[i].cql_type
    {
        note_binds(
            key,
            BindSpec::new(t, &format!("key({column})"), (**kt).clone()),
            specs,
        );
        note_binds(
            value,
            BindSpec::new(t, &format!("value({column})"), (**vt).clone()),
            specs,
        );
    }
    if op != Operator::Eq || r.used_index || !entries_indexed(t, i) {
        r.need_filtering = true;
    } else {
        r.used_index = true;
    }
    r.filters.push(Filter {
        column: i,
        op,
        value: RelationValue::Single(value.clone()),
        key: Some(key.clone()),
    });
    Ok(())
}

/// Partition keys when every partition key column has `=`/`IN` values (a token range given as
/// well is returned apart, to check on each partition); otherwise a token range, a partial key
/// becoming filters.
fn select_partitions(
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
fn selects_only_statics(t: &TableMeta, compiled: &Compiled) -> bool {
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
fn clustering_indexed(shape: &Shape<'_>, r: &Restrictions) -> bool {
    r.ck_restr.iter().enumerate().any(|(p, restriction)| {
        !r.from_tuple[p]
            && restriction
                .as_ref()
                .is_some_and(|(op, _)| index_serves(shape.t, shape.ck_cols[p], *op).is_some())
    })
}

/// Clustering: an `=` / `IN` prefix, then at most one slice; anything after a gap becomes a
/// filter (which needs ALLOW FILTERING unless an index serves it).
fn plan_clustering(
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
            filters.push(Filter {
                column: ck_cols[p],
                op,
                value,
                key: None,
            });
            continue;
        }
        if gap || clustering.slice.is_some() {
            // An index on the column answers it without its preceding columns.
            let indexed = index_serves(t, ck_cols[p], op).is_some();
            if !allow_filtering && !shape.system && !indexed {
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

fn check_filtering(
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

/// ORDER BY: `ANN OF` a vector, or clustering columns in key order, all in the declared order or
/// all reversed; only with the partition key restricted.
fn plan_order(
    shape: &Shape<'_>,
    s: &SelectStatement,
    keyed: bool,
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
    for (n, o) in s.order_by.iter().enumerate() {
        let i = column_index(t, &o.column.name)?;
        if shape.ck_cols.get(n) != Some(&i) {
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

fn note_limit_binds(t: &TableMeta, s: &SelectStatement, specs: &mut Vec<Option<BindSpec>>) {
    let int = CqlType::Native(helenus_types::NativeType::Int);
    for term in s.limit.iter() {
        note_binds(term, BindSpec::new(t, "[limit]", int.clone()), specs);
    }
    for term in s.per_partition_limit.iter() {
        note_binds(
            term,
            BindSpec::new(t, "[per_partition_limit]", int.clone()),
            specs,
        );
    }
}

/// Whether the partition keys name several partitions (an IN), whose rows ORDER BY merges.
fn multi_partition(partitions: &PartitionSelection) -> bool {
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
fn plan_group_by(
    shape: &Shape<'_>,
    s: &SelectStatement,
    partitions: &PartitionSelection,
    clustering_eq: &[ValuesOf],
) -> ExecResult<usize> {
    let pk_len = shape.pk_cols.len();
    let key_cols: Vec<usize> = shape
        .pk_cols
        .iter()
        .chain(&shape.ck_cols)
        .copied()
        .collect();
    let fixed = |pos: usize| eq_restricted(pos, pk_len, partitions, clustering_eq);
    let mut group_by = 0;
    for g in s.group_by.iter() {
        let ast::Selector::Column(id) = g else {
            return invalid("Only column names are supported in GROUP BY");
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
    Ok(group_by)
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
