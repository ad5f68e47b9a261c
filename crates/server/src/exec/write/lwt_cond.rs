//! The IF clause of a conditional write: validated at prepare time (Cassandra's rules and
//! messages), evaluated against the current row at execution.

use super::{WriteKind, WritePlan};
use crate::exec::error::{invalid, ExecError, ExecResult};
use crate::exec::key_values::{note_binds, ValuesOf};
use crate::exec::values::{self, Binds, Bound};
use crate::exec::BindSpec;
use bytes::Bytes;
use helenus_cql::ast::{ColumnCondition, Operator, RelationValue, SubPath, Term, WriteCondition};
use helenus_schema::{ColumnKind, ColumnMeta, TableMeta};
use helenus_types::{CqlType, CqlValue, NativeType};
use std::cmp::Ordering;

fn int_type() -> CqlType {
    CqlType::Native(NativeType::Int)
}

fn list_of(t: &CqlType) -> CqlType {
    CqlType::List {
        element: Box::new(t.clone()),
        frozen: false,
    }
}

fn op_symbol(op: Operator) -> &'static str {
    match op {
        Operator::Eq => "=",
        Operator::Lt => "<",
        Operator::Lte => "<=",
        Operator::Gt => ">",
        Operator::Gte => ">=",
        Operator::Neq => "!=",
        Operator::In => "IN",
        Operator::Contains => "CONTAINS",
        Operator::ContainsKey => "CONTAINS KEY",
        _ => "?",
    }
}

/// The type of the key of `c[key]` and the type of the value it designates.
fn element_types(col: &ColumnMeta) -> ExecResult<(CqlType, CqlType)> {
    match &col.cql_type {
        CqlType::List { element, .. } => Ok((int_type(), (**element).clone())),
        CqlType::Map { key, value, .. } => Ok(((**key).clone(), (**value).clone())),
        _ => invalid(format!(
            "Invalid element access syntax for non-collection column {}",
            col.name
        )),
    }
}

/// The type a condition compares against: the column's, or that of the element or field named.
fn target_type(col: &ColumnMeta, path: &Option<SubPath>) -> ExecResult<CqlType> {
    match path {
        None => Ok(col.cql_type.clone()),
        Some(SubPath::Element(_)) => Ok(element_types(col)?.1),
        Some(SubPath::Field(f)) => match &col.cql_type {
            CqlType::Udt { def, .. } => def
                .fields
                .iter()
                .find(|(n, _)| n == &f.name)
                .map(|(_, t)| t.clone())
                .ok_or_else(|| {
                    ExecError::Invalid(format!(
                        "UDT column {} does not have a field named {}",
                        col.name, f.name
                    ))
                }),
            _ => invalid(format!(
                "Invalid field selection: {} of type {} is not a user type",
                col.name, col.cql_type
            )),
        },
    }
}

/// The type of the right-hand side of `col op value` once the target type is known.
fn value_type(col: &ColumnMeta, target: &CqlType, op: Operator) -> ExecResult<CqlType> {
    match op {
        Operator::Contains => match target {
            CqlType::List { element, .. } | CqlType::Set { element, .. } => Ok((**element).clone()),
            CqlType::Map { value, .. } => Ok((**value).clone()),
            _ => invalid(format!(
                "Cannot use CONTAINS on non-collection column {}",
                col.name
            )),
        },
        Operator::ContainsKey => match target {
            CqlType::Map { key, .. } => Ok((**key).clone()),
            _ => invalid(format!(
                "Cannot use CONTAINS KEY on non-map column {}",
                col.name
            )),
        },
        Operator::Eq
        | Operator::Neq
        | Operator::Lt
        | Operator::Lte
        | Operator::Gt
        | Operator::Gte
        | Operator::In => Ok(target.clone()),
        other => invalid(format!(
            "Unsupported operator {} in condition on {}",
            op_symbol(other),
            col.name
        )),
    }
}

/// Checks one statement's IF clause against the table and records the types of its bind markers
/// (in text order: element key, then value).
pub fn note_condition(
    t: &TableMeta,
    c: &Option<WriteCondition>,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<()> {
    let Some(WriteCondition::Columns(conds)) = c else {
        return Ok(());
    };
    for cond in conds {
        let col = t.column(&cond.column.name).ok_or_else(|| {
            ExecError::Invalid(format!("Undefined column name {}", cond.column.name))
        })?;
        if col.kind.is_primary_key() {
            return invalid(format!(
                "PRIMARY KEY column '{}' cannot have IF conditions",
                col.name
            ));
        }
        if col.cql_type.is_counter() {
            return invalid("Conditions on counters are not supported");
        }
        if let Some(SubPath::Element(k)) = &cond.path {
            let (kt, _) = element_types(col)?;
            note_binds(
                k,
                BindSpec::new(t, &super::plan::index_name(col), kt),
                specs,
            )?;
        }
        let target = target_type(col, &cond.path)?;
        let is_slice = matches!(
            cond.op,
            Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte
        );
        if is_slice && matches!(target, CqlType::Native(NativeType::Duration)) {
            return invalid(format!(
                "Slice conditions ( {} ) are not supported on durations",
                op_symbol(cond.op)
            ));
        }
        let vt = value_type(col, &target, cond.op)?;
        // Cassandra names the receiver after the part compared: `value(m)`, `u.f`, `key(m)`.
        let name = match (&cond.path, cond.op) {
            (_, Operator::Contains) | (Some(SubPath::Element(_)), _) => {
                format!("value({})", col.name)
            }
            (_, Operator::ContainsKey) => format!("key({})", col.name),
            (Some(SubPath::Field(f)), _) => format!("{}.{}", col.name, f.name),
            (None, _) => col.name.clone(),
        };
        match &cond.value {
            RelationValue::Single(term) if cond.op == Operator::In => note_binds(
                term,
                BindSpec::new(t, &format!("in({name})"), list_of(&vt)),
                specs,
            )?,
            RelationValue::Single(term) => note_binds(term, BindSpec::new(t, &name, vt), specs)?,
            RelationValue::List(terms) => {
                for term in terms {
                    note_binds(term, BindSpec::new(t, &name, vt.clone()), specs)?;
                }
            }
            RelationValue::Between(..) => {
                return invalid(format!(
                    "Unsupported operator BETWEEN in condition on {}",
                    col.name
                ))
            }
        }
    }
    Ok(())
}

/// Whether a key restriction names more than one value (IN).
fn multi_valued(v: &ValuesOf) -> bool {
    match v {
        ValuesOf::Terms(ts) => ts.len() != 1,
        ValuesOf::BindList(_) => true,
    }
}

/// Whether an UPDATE or DELETE only touches static columns (operations and conditions), as
/// Cassandra's `appliesOnlyToStaticColumns` decides it: IF (NOT) EXISTS is about the row.
fn only_static(plan: &WritePlan) -> bool {
    let t = &plan.table;
    let is_static = |i: usize| t.columns[i].kind == ColumnKind::Static;
    let ops_regular = plan.ops.iter().any(|(i, _)| !is_static(*i));
    let ops_static = plan.ops.iter().any(|(i, _)| is_static(*i));
    let (cond_regular, cond_static) = match &plan.condition {
        None => (false, false),
        Some(WriteCondition::Exists | WriteCondition::NotExists) => (true, false),
        Some(WriteCondition::Columns(conds)) => {
            let idx: Vec<usize> = conds
                .iter()
                .filter_map(|c| t.column_index(&c.column.name))
                .collect();
            (
                idx.iter().any(|&i| !is_static(i)),
                idx.iter().any(|&i| is_static(i)),
            )
        }
    };
    !ops_regular && !cond_regular && (ops_static || cond_static)
}

/// Cassandra's statement-level rules for UPDATE and DELETE restrictions and for conditional
/// writes, checked at prepare time.
pub fn validate_plan(plan: &WritePlan) -> ExecResult<()> {
    let t = &plan.table;
    let name = match plan.kind {
        WriteKind::Update => Some("UPDATE"),
        WriteKind::Delete => Some("DELETE"),
        _ => None,
    };
    if let Some(name) = name {
        if only_static(plan) && (!plan.ck.is_empty() || !plan.ck_slice.is_empty()) {
            return invalid(format!("Invalid restrictions on clustering columns since the {name} statement modifies only static columns"));
        }
    }
    if matches!(plan.kind, WriteKind::Delete)
        && plan
            .ops
            .iter()
            .any(|(i, _)| t.columns[*i].kind != ColumnKind::Static)
        && (plan.ck.len() < t.clustering_len() || !plan.ck_slice.is_empty())
    {
        return invalid("Range deletions are not supported for specific columns");
    }
    if plan.condition.is_none() {
        return Ok(());
    }
    let what = if matches!(plan.kind, WriteKind::Delete) {
        "deletions"
    } else {
        "updates"
    };
    if t.is_counter_table() && !matches!(plan.condition, Some(WriteCondition::Columns(_))) {
        return invalid("Conditional updates are not supported on counter tables");
    }
    if plan.using.timestamp.is_some() {
        return invalid(format!(
            "Cannot provide custom timestamp for conditional {what}"
        ));
    }
    if plan.pk.iter().any(multi_valued) {
        return invalid(format!(
            "IN on the partition key is not supported with conditional {what}"
        ));
    }
    if plan.ck.iter().any(multi_valued) {
        return invalid(format!(
            "IN on the clustering key columns is not supported with conditional {what}"
        ));
    }
    if matches!(plan.kind, WriteKind::Delete) {
        let only_static = !plan.ops.is_empty()
            && plan
                .ops
                .iter()
                .all(|(i, _)| t.columns[*i].kind == ColumnKind::Static);
        let full_key = plan.ck.len() == t.clustering_len() && plan.ck_slice.is_empty();
        if !full_key && !only_static {
            return invalid("DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to delete non static columns");
        }
    }
    // A condition on a regular column needs the row it is about.
    let conditions_regular = match &plan.condition {
        Some(WriteCondition::Columns(conds)) => conds.iter().any(|c| {
            t.column(&c.column.name)
                .is_some_and(|col| col.kind != ColumnKind::Static)
        }),
        _ => false,
    };
    if conditions_regular && (plan.ck.len() < t.clustering_len() || !plan.ck_slice.is_empty()) {
        if matches!(plan.kind, WriteKind::Delete) {
            return invalid("DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to use IF condition on non static columns");
        }
        let missing: Vec<&str> = t
            .clustering()
            .skip(plan.ck.len())
            .map(|c| c.name.as_str())
            .collect();
        return invalid(format!(
            "Some clustering keys are missing: {}",
            missing.join(", ")
        ));
    }
    Ok(())
}

/// The current value a condition looks at: the column's cell, or one element or field of it.
fn current_target(
    col: &ColumnMeta,
    path: &Option<SubPath>,
    cell: Option<&Bytes>,
    binds: &Binds<'_>,
) -> ExecResult<(CqlType, Option<Bytes>)> {
    let target = target_type(col, path)?;
    let decoded = || -> ExecResult<Option<CqlValue>> {
        cell.map(|b| helenus_types::deserialize(&col.cql_type, b))
            .transpose()
            .map_err(|e| ExecError::Invalid(e.to_string()))
    };
    let value = match path {
        None => cell.cloned(),
        Some(SubPath::Element(k)) => {
            let (kt, _) = element_types(col)?;
            let key = match values::eval(k, &kt, &format!("key({})", col.name), binds)? {
                Bound::Value(b) => b,
                _ => {
                    return invalid(format!(
                        "Invalid null value for {} element access",
                        col.name
                    ))
                }
            };
            let idx = <[u8; 4]>::try_from(key.as_ref())
                .map(i32::from_be_bytes)
                .unwrap_or(-1);
            if matches!(col.cql_type, CqlType::List { .. }) && idx < 0 {
                return invalid(format!("Invalid negative list index {idx}"));
            }
            match decoded()? {
                Some(CqlValue::List(items)) => usize::try_from(idx)
                    .ok()
                    .and_then(|i| items.get(i))
                    .map(values::serialize),
                Some(CqlValue::Map(entries)) => entries
                    .iter()
                    .find(|(ek, _)| values::serialize(ek) == key)
                    .map(|(_, v)| values::serialize(v)),
                _ => None,
            }
        }
        Some(SubPath::Field(f)) => match decoded()? {
            Some(CqlValue::Udt(fields)) => fields
                .iter()
                .find(|(n, _)| n == &f.name)
                .and_then(|(_, v)| v.as_ref())
                .map(values::serialize),
            _ => None,
        },
    };
    Ok((target, value))
}

/// An empty non-frozen collection does not exist in Cassandra: it compares as null.
fn normalize(ty: &CqlType, b: Bound) -> Bound {
    if let Bound::Value(v) = &b {
        if ty.is_multi_cell()
            && matches!(
                helenus_types::deserialize(ty, v),
                Ok(CqlValue::List(ref x) | CqlValue::Set(ref x)) if x.is_empty()
            )
        {
            return Bound::Null;
        }
        if ty.is_multi_cell()
            && matches!(helenus_types::deserialize(ty, v), Ok(CqlValue::Map(ref m)) if m.is_empty())
        {
            return Bound::Null;
        }
    }
    b
}

fn equal(ty: &CqlType, a: Option<&Bytes>, b: &Bound) -> bool {
    match (a, b) {
        (None, Bound::Null) => true,
        (Some(x), Bound::Value(y)) => helenus_types::compare_serialized(ty, x, y).is_eq(),
        _ => false,
    }
}

/// Whether one condition holds for the current cell of its column (`None`: null or no row).
pub fn holds(
    col: &ColumnMeta,
    cond: &ColumnCondition,
    cell: Option<&Bytes>,
    binds: &Binds<'_>,
) -> ExecResult<bool> {
    let (target, current) = current_target(col, &cond.path, cell, binds)?;
    let vt = value_type(col, &target, cond.op)?;
    let single = |term: &Term| -> ExecResult<Bound> {
        match values::eval(term, &vt, &col.name, binds)? {
            Bound::Unset => invalid(format!(
                "Invalid 'unset' value in condition on {}",
                col.name
            )),
            b => Ok(normalize(&vt, b)),
        }
    };
    let current = current.as_ref();
    match (cond.op, &cond.value) {
        (Operator::In, RelationValue::List(terms)) => {
            for term in terms {
                if equal(&vt, current, &single(term)?) {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        (Operator::In, RelationValue::Single(term)) => {
            let items = match values::to_value(term, &list_of(&vt), &col.name, binds)? {
                Some(CqlValue::List(items)) => items,
                _ => return invalid(format!("Invalid null list in IN condition on {}", col.name)),
            };
            Ok(items
                .iter()
                .any(|v| equal(&vt, current, &Bound::Value(values::serialize(v)))))
        }
        (Operator::Contains | Operator::ContainsKey, RelationValue::Single(term)) => {
            let Bound::Value(want) = single(term)? else {
                return invalid(format!(
                    "Invalid null value for {} condition on {}",
                    op_symbol(cond.op),
                    col.name
                ));
            };
            let Some(cur) = current else {
                return Ok(false);
            };
            let items: Vec<CqlValue> = match helenus_types::deserialize(&target, cur)
                .map_err(|e| ExecError::Invalid(e.to_string()))?
            {
                CqlValue::List(x) | CqlValue::Set(x) => x,
                CqlValue::Map(m) if cond.op == Operator::ContainsKey => {
                    m.into_iter().map(|(k, _)| k).collect()
                }
                CqlValue::Map(m) => m.into_iter().map(|(_, v)| v).collect(),
                _ => Vec::new(),
            };
            Ok(items.iter().any(|v| {
                helenus_types::compare_serialized(&vt, &values::serialize(v), &want).is_eq()
            }))
        }
        (op, RelationValue::Single(term)) => {
            let want = single(term)?;
            let order = match (current, &want) {
                (_, Bound::Null) if !matches!(op, Operator::Eq | Operator::Neq) => {
                    return invalid(format!(
                        "Invalid comparison with null for operator \"{}\"",
                        op_symbol(op)
                    ))
                }
                (Some(x), Bound::Value(y)) => Some(helenus_types::compare_serialized(&vt, x, y)),
                _ => None,
            };
            Ok(match op {
                Operator::Eq => equal(&vt, current, &want),
                Operator::Neq => !equal(&vt, current, &want),
                Operator::Lt => order == Some(Ordering::Less),
                Operator::Lte => order.is_some_and(|o| o != Ordering::Greater),
                Operator::Gt => order == Some(Ordering::Greater),
                Operator::Gte => order.is_some_and(|o| o != Ordering::Less),
                _ => false,
            })
        }
        _ => invalid(format!(
            "Unsupported condition on {} with operator {}",
            col.name,
            op_symbol(cond.op)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use helenus_cql::ast::Ident;

    fn col(name: &str, ty: CqlType) -> ColumnMeta {
        ColumnMeta {
            name: name.into(),
            cql_type: ty,
            kind: ColumnKind::Regular,
            position: -1,
            order: helenus_schema::ClusteringOrder::None,
            id: 1,
        }
    }

    fn cond(
        name: &str,
        path: Option<SubPath>,
        op: Operator,
        value: RelationValue,
    ) -> ColumnCondition {
        ColumnCondition {
            column: Ident {
                name: name.into(),
                quoted: false,
            },
            path,
            op,
            value,
        }
    }

    fn int(v: i64) -> Term {
        Term::Integer(v.to_string())
    }

    fn ser(v: CqlValue) -> Bytes {
        values::serialize(&v)
    }

    #[test]
    fn list_element_contains_and_in() {
        let binds = Binds::none();
        let l = col("l", list_of(&int_type()));
        let cell = ser(CqlValue::List(vec![CqlValue::Int(1), CqlValue::Int(2)]));
        let c = cond(
            "l",
            Some(SubPath::Element(int(0))),
            Operator::Eq,
            RelationValue::Single(int(1)),
        );
        assert!(holds(&l, &c, Some(&cell), &binds).unwrap());
        let c = cond(
            "l",
            Some(SubPath::Element(int(5))),
            Operator::Eq,
            RelationValue::Single(Term::Null),
        );
        assert!(holds(&l, &c, Some(&cell), &binds).unwrap());
        let c = cond("l", None, Operator::Contains, RelationValue::Single(int(2)));
        assert!(holds(&l, &c, Some(&cell), &binds).unwrap());
        let c = cond("l", None, Operator::Contains, RelationValue::Single(int(3)));
        assert!(!holds(&l, &c, Some(&cell), &binds).unwrap());
        let v = col("v", int_type());
        let c = cond(
            "v",
            None,
            Operator::In,
            RelationValue::List(vec![int(1), int(10)]),
        );
        assert!(holds(&v, &c, Some(&ser(CqlValue::Int(10))), &binds).unwrap());
        assert!(!holds(&v, &c, None, &binds).unwrap());
        let c = cond("v", None, Operator::Neq, RelationValue::Single(int(1)));
        assert!(holds(&v, &c, None, &binds).unwrap());
        let c = cond("v", None, Operator::Lt, RelationValue::Single(Term::Null));
        assert!(holds(&v, &c, None, &binds).is_err());
    }
}
