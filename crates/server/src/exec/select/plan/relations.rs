//! Phase 2 of planning: the WHERE clause sorted by what each relation restricts (partition key
//! values, clustering relations, multi-column relations, token bounds, row filters), with the
//! receivers of their bind markers.

use super::{column_index, Restrictions, Shape};
use crate::exec::error::{invalid, ExecResult};
use crate::exec::key_values::note_binds;
use crate::exec::select::restrictions::{entries_indexed, index_serves, list_of, values_of};
use crate::exec::select::Filter;
use crate::exec::BindSpec;
use helenus_cql::ast::{Ident, Operator, Relation, RelationValue, SelectStatement, Term};
use helenus_schema::{ColumnKind, TableMeta};
use helenus_types::CqlType;

/// Sorts the WHERE clause by what each relation restricts, noting bind markers' receivers.
pub(super) fn collect_restrictions(
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
    if r.multis.iter().any(|(cols, _, _)| cols.contains(&i)) {
        check_multi_column_overlap(shape, r, &[i], op)?;
    }
    if let RelationValue::Single(term) = value {
        let (name, ty) = if op == Operator::In {
            (format!("in({})", c.name), list_of(&c.cql_type))
        } else {
            (c.name.clone(), c.cql_type.clone())
        };
        note_binds(term, BindSpec::new(t, &name, ty), specs)?;
    }
    if let RelationValue::List(terms) = value {
        for term in terms {
            note_binds(term, BindSpec::new(t, &c.name, c.cql_type.clone()), specs)?;
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
        let name = match op {
            Operator::In => format!("in({})", c.name),
            Operator::Contains => format!("value({})", c.name),
            Operator::ContainsKey => format!("key({})", c.name),
            _ => c.name.clone(),
        };
        note_binds(
            term,
            BindSpec::new(t, &name, filter_bind_type(c, op)),
            specs,
        )?;
    }
    if let RelationValue::List(terms) = value {
        for term in terms {
            note_binds(term, BindSpec::new(t, &c.name, c.cql_type.clone()), specs)?;
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
    note_token_binds(shape, term, specs)?;
    note_binds(
        term,
        BindSpec::new(
            t,
            "partition key token",
            CqlType::Native(helenus_types::NativeType::Bigint),
        ),
        specs,
    )?;
    if op == Operator::Eq && (r.token.0.is_some() || r.token.1.is_some()) {
        return invalid(format!(
            "Columns \"{}\" cannot be restricted by both an equality and an inequality relation",
            names.join(", ")
        ));
    }
    let bound_taken = match op {
        Operator::Gt | Operator::Gte => r.token.0.is_some().then_some("start"),
        Operator::Lt | Operator::Lte => r.token.1.is_some().then_some("end"),
        _ => None,
    };
    if let Some(side) = bound_taken {
        return invalid(format!(
            "More than one restriction was found for the {side} bound on {}",
            names.join(", ")
        ));
    }
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

/// `token(k) > token(?)`: the markers are the partition key's values, named as arguments of
/// `system.token`.
fn note_token_binds(
    shape: &Shape<'_>,
    term: &Term,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<()> {
    let Term::FunctionCall { name, args } = term else {
        return Ok(());
    };
    if !name.name.name.eq_ignore_ascii_case("token") {
        return Ok(());
    }
    for (n, (arg, &i)) in args.iter().zip(&shape.pk_cols).enumerate() {
        let c = &shape.t.columns[i];
        let spec = BindSpec::new(
            shape.t,
            &format!("arg{n}(system.token)"),
            c.cql_type.clone(),
        );
        note_binds(arg, spec, specs)?;
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
    check_multi_column_overlap(shape, r, &idx, op)?;
    if let (Operator::In, RelationValue::List(items)) = (op, value) {
        for item in items {
            let Term::Tuple(parts) = item else { continue };
            if let Some(n) = parts.iter().position(|p| *p == Term::Null) {
                let name = idx.get(n).map_or("", |&i| shape.t.columns[i].name.as_str());
                return invalid(format!("Invalid null value for column {name}"));
            }
        }
    }
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

/// A column under an equality may not be restricted again by a multi-column relation, nor a
/// column under a multi-column relation again by an equality.
fn check_multi_column_overlap(
    shape: &Shape<'_>,
    r: &Restrictions,
    idx: &[usize],
    op: Operator,
) -> ExecResult<()> {
    for &i in idx {
        let p = shape.ck_cols.iter().position(|&x| x == i);
        let single = p.and_then(|p| r.ck_restr[p].as_ref()).map(|(o, _)| *o);
        let multi = r.multis.iter().find(|(cols, _, _)| cols.contains(&i));
        let existing = single.or(multi.map(|(_, o, _)| *o));
        let side = |o: Operator| match o {
            Operator::Gt | Operator::Gte => Some("start"),
            Operator::Lt | Operator::Lte => Some("end"),
            _ => None,
        };
        if let Some(bound) = existing.and_then(side).filter(|s| side(op) == Some(*s)) {
            return invalid(format!(
                "More than one restriction was found for the {bound} bound on {}",
                shape.t.columns[i].name
            ));
        }
        let clash = existing.is_some_and(|o| o == Operator::Eq || op == Operator::Eq);
        if clash {
            return invalid(format!(
                "{} cannot be restricted by more than one relation if it includes an Equal",
                shape.t.columns[i].name
            ));
        }
    }
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
    // A tuple literal's markers are named after their columns; a marker for the whole tuple is
    // named `(a,b)`, or `in(a,b)` for the list of an `IN ?`.
    let note = |term: &Term, specs: &mut Vec<Option<BindSpec>>| -> ExecResult<()> {
        match term {
            Term::Tuple(items) => {
                for (item, &i) in items.iter().zip(idx) {
                    let c = &t.columns[i];
                    note_binds(item, BindSpec::new(t, &c.name, c.cql_type.clone()), specs)?;
                }
                Ok(())
            }
            _ => note_binds(term, BindSpec::new(t, &name, tuple_ty.clone()), specs),
        }
    };
    match value {
        RelationValue::Single(term) if op == Operator::In => {
            let in_name = format!("in{name}");
            note_binds(term, BindSpec::new(t, &in_name, list_of(&tuple_ty)), specs)?;
        }
        RelationValue::Single(term) => note(term, specs)?,
        RelationValue::List(terms) => {
            for term in terms {
                note(term, specs)?;
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
    if matches!(&t.columns[i].cql_type, CqlType::Map { frozen: true, .. }) {
        return invalid(format!(
            "Map-entry equality predicates on frozen map column {column} are not supported"
        ));
    }
    if let CqlType::Map {
        key: kt, value: vt, ..
    } = &t.columns[i].cql_type
    {
        note_binds(
            key,
            BindSpec::new(t, &format!("key({column})"), (**kt).clone()),
            specs,
        )?;
        note_binds(
            value,
            BindSpec::new(t, &format!("value({column})"), (**vt).clone()),
            specs,
        )?;
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
