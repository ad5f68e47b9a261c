//! Planning INSERT, UPDATE and DELETE: resolving columns, key restrictions, operations, USING
//! and conditions against the table, with Cassandra's prepare-time checks, into a `WritePlan`.

use super::{op_value_type, Op, WriteKind, WritePlan};
use crate::exec::error::{invalid, ExecError, ExecResult};
use crate::exec::key_values::{note_binds, ValuesOf};
use crate::exec::BindSpec;
use helenus_cql::ast::{
    Assignment, DeleteStatement, Ident, InsertStatement, InsertValues, JsonDefault, Operator,
    Relation, RelationValue, SubPath, Term, UpdateStatement, UsingClause, WriteCondition,
};
use helenus_schema::{ColumnKind, ColumnMeta, TableMeta};
use helenus_types::{CqlType, NativeType};
use std::sync::Arc;

/// Partition key values, clustering prefix values, and a clustering slice (for range deletes).
type KeyRestrictions = (Vec<ValuesOf>, Vec<ValuesOf>, Vec<(Operator, Term)>);

fn column_index_of(t: &TableMeta, name: &str) -> ExecResult<usize> {
    t.column_index(name)
        .ok_or_else(|| ExecError::Invalid(format!("Undefined column name {name}")))
}

fn note_using(
    t: &TableMeta,
    using: &UsingClause,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<()> {
    if let Some(ttl) = &using.ttl {
        note_binds(
            ttl,
            BindSpec::new(t, "[ttl]", CqlType::Native(NativeType::Int)),
            specs,
        )?;
    }
    if let Some(ts) = &using.timestamp {
        note_binds(
            ts,
            BindSpec::new(t, "[timestamp]", CqlType::Native(NativeType::Bigint)),
            specs,
        )?;
    }
    Ok(())
}

fn where_keys(
    t: &TableMeta,
    where_clause: &[Relation],
    specs: &mut Vec<Option<BindSpec>>,
    allow_slice: bool,
) -> ExecResult<KeyRestrictions> {
    let pk: Vec<usize> = (0..t.columns.len())
        .filter(|&i| t.columns[i].kind == ColumnKind::PartitionKey)
        .collect();
    let ck: Vec<usize> = (0..t.columns.len())
        .filter(|&i| t.columns[i].kind == ColumnKind::Clustering)
        .collect();
    let mut pk_vals: Vec<Option<ValuesOf>> = vec![None; pk.len()];
    let mut ck_vals: Vec<Option<ValuesOf>> = vec![None; ck.len()];
    let mut slice = Vec::new();
    for r in &crate::exec::write_checks::single_column_relations(where_clause) {
        let Relation::Column {
            column: id,
            op,
            value,
        } = r
        else {
            return invalid("Only EQ and IN relation are supported on the partition key (unless you use the token() function)");
        };
        let i = column_index_of(t, &id.name)?;
        let c = &t.columns[i];
        let vals = match (op, value) {
            (
                Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte,
                RelationValue::Single(term),
            ) if allow_slice && c.kind == ColumnKind::Clustering => {
                note_binds(term, BindSpec::new(t, &c.name, c.cql_type.clone()), specs)?;
                slice.push((*op, term.clone()));
                None
            }
            _ => Some(key_values(t, c, *op, value, specs)?),
        };
        match c.kind {
            ColumnKind::PartitionKey => {
                if let Some(p) = pk.iter().position(|&x| x == i) {
                    pk_vals[p] = vals;
                }
            }
            ColumnKind::Clustering => {
                if let (Some(p), Some(v)) = (ck.iter().position(|&x| x == i), vals) {
                    ck_vals[p] = Some(v);
                }
            }
            _ => {
                return invalid(format!(
                    "Non PRIMARY KEY columns found in where clause: {}",
                    c.name
                ))
            }
        }
    }
    let missing: Vec<&str> = pk
        .iter()
        .zip(&pk_vals)
        .filter(|(_, v)| v.is_none())
        .map(|(&i, _)| t.columns[i].name.as_str())
        .collect();
    if !missing.is_empty() {
        return invalid(format!(
            "Some partition key parts are missing: {}",
            missing.join(", ")
        ));
    }
    let ck_out = clustering_prefix(t, &ck, ck_vals)?;
    Ok((pk_vals.into_iter().flatten().collect(), ck_out, slice))
}

/// The values an `=` or `IN` relation gives a key column (its bind markers noted).
fn key_values(
    t: &TableMeta,
    c: &ColumnMeta,
    op: Operator,
    value: &RelationValue,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<ValuesOf> {
    match (op, value) {
        (Operator::Eq, RelationValue::Single(term)) => {
            note_binds(term, BindSpec::new(t, &c.name, c.cql_type.clone()), specs)?;
            Ok(ValuesOf::Terms(vec![term.clone()]))
        }
        (Operator::In, RelationValue::List(terms)) => {
            for term in terms {
                note_binds(term, BindSpec::new(t, &c.name, c.cql_type.clone()), specs)?;
            }
            Ok(ValuesOf::Terms(terms.clone()))
        }
        (Operator::In, RelationValue::Single(term)) => {
            let lt = CqlType::List {
                element: Box::new(c.cql_type.clone()),
                frozen: false,
            };
            note_binds(
                term,
                BindSpec::new(t, &format!("in({})", c.name), lt),
                specs,
            )?;
            Ok(ValuesOf::BindList(term.clone()))
        }
        _ => invalid(match c.kind {
            ColumnKind::PartitionKey => "Only EQ and IN relation are supported on the partition key (unless you use the token() function)".to_string(),
            ColumnKind::Clustering => format!("Invalid operator {op:?} for PRIMARY KEY part {}", c.name),
            _ => format!("Non PRIMARY KEY columns found in where clause: {}", c.name),
        }),
    }
}

/// The restricted clustering columns, which must be a prefix of the clustering key.
fn clustering_prefix(
    t: &TableMeta,
    ck: &[usize],
    ck_vals: Vec<Option<ValuesOf>>,
) -> ExecResult<Vec<ValuesOf>> {
    let mut ck_out = Vec::new();
    let mut gap: Option<&str> = None;
    for (p, v) in ck_vals.into_iter().enumerate() {
        match (v, gap) {
            (Some(v), None) => ck_out.push(v),
            (Some(_), Some(prev)) => {
                return invalid(format!(
                    "PRIMARY KEY column \"{}\" cannot be restricted as preceding column \"{prev}\" is not restricted",
                    t.columns[ck[p]].name
                ))
            }
            (None, _) => gap = gap.or(Some(t.columns[ck[p]].name.as_str())),
        }
    }
    Ok(ck_out)
}

pub fn plan_insert(
    t: Arc<TableMeta>,
    s: &InsertStatement,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<WritePlan> {
    if t.is_counter_table() {
        return invalid("INSERT statements are not allowed on counter tables, use UPDATE instead");
    }
    note_using(&t, &s.using, specs)?;
    let (kind, mut pk, mut ck, ops) = match &s.values {
        InsertValues::Values { columns, values } => {
            let (pk, ck, ops) = insert_values(&t, columns, values, specs)?;
            (WriteKind::Insert, pk, ck, ops)
        }
        InsertValues::Json { value, default } => {
            note_binds(
                value,
                BindSpec::new(&t, "[json]", CqlType::Native(NativeType::Varchar)),
                specs,
            )?;
            let kind = WriteKind::InsertJson {
                json: value.clone(),
                default_unset: *default == JsonDefault::Unset,
            };
            (kind, Vec::new(), Vec::new(), Vec::new())
        }
    };
    pk.sort_by_key(|(p, _)| *p);
    ck.sort_by_key(|(p, _)| *p);
    let plan = WritePlan {
        table: t,
        kind,
        ops,
        pk: pk.into_iter().map(|(_, v)| v).collect(),
        ck: ck.into_iter().map(|(_, v)| v).collect(),
        ck_slice: Vec::new(),
        using: s.using.clone(),
        condition: if s.if_not_exists {
            Some(WriteCondition::NotExists)
        } else {
            None
        },
    };
    super::lwt_cond::validate_plan(&plan)?;
    Ok(plan)
}

/// Key values by key position.
type PositionedValues = Vec<(i32, ValuesOf)>;

/// Partition key values, clustering values and column operations of an INSERT.
type InsertParts = (PositionedValues, PositionedValues, Vec<(usize, Op)>);

/// `INSERT (columns) VALUES (values)`: partition key and clustering values by position, and a
/// set operation per other column; every key part must be given (clustering ones may be left
/// out when only static columns are written).
fn insert_values(
    t: &TableMeta,
    columns: &[Ident],
    values: &[Term],
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<InsertParts> {
    if columns.len() != values.len() {
        return invalid(format!(
            "Unmatched column names/values: {} column names but {} values",
            columns.len(),
            values.len()
        ));
    }
    let (mut pk, mut ck, mut ops) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen = std::collections::HashSet::new();
    for (id, term) in columns.iter().zip(values) {
        let i = column_index_of(t, &id.name)?;
        if !seen.insert(i) {
            return invalid(format!("Multiple definitions found for column {}", id.name));
        }
        let c = &t.columns[i];
        note_binds(term, BindSpec::new(t, &c.name, c.cql_type.clone()), specs)?;
        match c.kind {
            ColumnKind::PartitionKey => pk.push((c.position, ValuesOf::Terms(vec![term.clone()]))),
            ColumnKind::Clustering => ck.push((c.position, ValuesOf::Terms(vec![term.clone()]))),
            _ => ops.push((i, Op::Set(term.clone()))),
        }
    }
    let missing_pk: Vec<&str> = t
        .partition_key()
        .filter(|c| !pk.iter().any(|(p, _)| *p == c.position))
        .map(|c| c.name.as_str())
        .collect();
    if !missing_pk.is_empty() {
        return invalid(format!(
            "Some partition key parts are missing: {}",
            missing_pk.join(", ")
        ));
    }
    let missing_ck: Vec<&str> = t
        .clustering()
        .filter(|c| !ck.iter().any(|(p, _)| *p == c.position))
        .map(|c| c.name.as_str())
        .collect();
    let only_static = !ops.is_empty()
        && ops
            .iter()
            .all(|(i, _)| t.columns[*i].kind == ColumnKind::Static);
    if !missing_ck.is_empty() && (!only_static || !ck.is_empty()) {
        if clustering_prefix_allowed(t, ck.len()) {
            insert_prefix_gap(t, &ck)?;
        } else {
            return invalid(format!(
                "Some clustering keys are missing: {}",
                missing_ck.join(", ")
            ));
        }
    }
    if let Some(value) = missing_compact_value(t, &ops) {
        return invalid(format!(
            "Column {value} is mandatory for this COMPACT STORAGE table"
        ));
    }
    Ok((pk, ck, ops))
}

/// Whether a write may name only some clustering columns: Cassandra accepts it for COMPACT
/// STORAGE tables as soon as one clustering column is restricted, and stores the row under that
/// clustering prefix (the missing components read back as null and sort before any value).
fn clustering_prefix_allowed(t: &TableMeta, restricted: usize) -> bool {
    t.is_compact() && restricted > 0
}

/// An INSERT into a COMPACT STORAGE table giving a clustering column without the ones before
/// it: the same refusal as a WHERE clause skipping them.
fn insert_prefix_gap(t: &TableMeta, ck: &PositionedValues) -> ExecResult<()> {
    let mut prev: Option<&str> = None;
    for c in t.clustering() {
        let given = ck.iter().any(|(p, _)| *p == c.position);
        match (given, prev) {
            (true, Some(prev)) => {
                return invalid(format!(
                    "PRIMARY KEY column \"{}\" cannot be restricted as preceding column \"{prev}\" is not restricted",
                    c.name
                ))
            }
            (false, None) => prev = Some(c.name.as_str()),
            _ => {}
        }
    }
    Ok(())
}

/// The declared value column of a dense COMPACT STORAGE table when an INSERT leaves it out:
/// with no row marker, the row would not exist without it.
fn missing_compact_value<'t>(t: &'t TableMeta, ops: &[(usize, Op)]) -> Option<&'t str> {
    if !t.is_compact() || !t.is_dense() {
        return None;
    }
    let (i, value) = t
        .visible_columns()
        .find(|(_, c)| c.kind == ColumnKind::Regular)?;
    (!ops.iter().any(|(j, _)| *j == i)).then_some(value.name.as_str())
}

pub fn plan_update(
    t: Arc<TableMeta>,
    s: &UpdateStatement,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<WritePlan> {
    note_using(&t, &s.using, specs)?;
    let mut ops = Vec::new();
    for a in &s.assignments {
        let (name, op) = assignment_op(&t, a)?;
        let i = column_index_of(&t, &name.name)?;
        let c = &t.columns[i];
        check_assignment(c, a, &op)?;
        note_op_binds(&t, c, &op, specs)?;
        ops.push((i, op));
    }
    if ops.iter().any(|(i, _)| t.columns[*i].cql_type.is_counter()) {
        if s.using.ttl.is_some() {
            return invalid("Cannot provide custom TTL for counter updates");
        }
        if s.using.timestamp.is_some() {
            return invalid("Cannot provide custom timestamp for counter updates");
        }
    }
    let (pk, ck, _) = where_keys(&t, &s.where_clause, specs, false)?;
    if ck.len() < t.clustering_len()
        && !clustering_prefix_allowed(&t, ck.len())
        && ops
            .iter()
            .any(|(i, _)| t.columns[*i].kind != ColumnKind::Static)
    {
        let missing: Vec<&str> = t
            .clustering()
            .skip(ck.len())
            .map(|c| c.name.as_str())
            .collect();
        return invalid(format!(
            "Some clustering keys are missing: {}",
            missing.join(", ")
        ));
    }
    super::lwt_cond::note_condition(&t, &s.condition, specs)?;
    let plan = WritePlan {
        table: t,
        kind: WriteKind::Update,
        ops,
        pk,
        ck,
        ck_slice: Vec::new(),
        using: s.using.clone(),
        condition: s.condition.clone(),
    };
    super::lwt_cond::validate_plan(&plan)?;
    Ok(plan)
}

/// The column an assignment writes and the operation it makes.
fn assignment_op<'s>(t: &TableMeta, a: &'s Assignment) -> ExecResult<(&'s Ident, Op)> {
    Ok(match a {
        Assignment::Set { column, value } => (column, Op::Set(value.clone())),
        Assignment::Add { column, value } => (column, Op::Add(value.clone())),
        Assignment::Prepend { column, value } => (column, Op::Prepend(value.clone())),
        Assignment::Subtract { column, value } => (column, Op::Subtract(value.clone())),
        Assignment::SetElement { column, key, value } => {
            (column, Op::SetElement(key.clone(), value.clone()))
        }
        Assignment::SetField {
            column,
            field,
            value,
        } => {
            let i = column_index_of(t, &column.name)?;
            if let CqlType::Udt { frozen: true, .. } = &t.columns[i].cql_type {
                return invalid(format!(
                    "Invalid operation ({}.{} = {value}) for frozen UDT column {}",
                    column.name, field.name, column.name
                ));
            }
            let CqlType::Udt { def, .. } = &t.columns[i].cql_type else {
                return invalid(format!(
                    "Invalid operation ({}.{} = ...) for non-UDT column {}",
                    column.name, field.name, column.name
                ));
            };
            let f = def
                .fields
                .iter()
                .position(|(n, _)| n == &field.name)
                .ok_or_else(|| {
                    ExecError::Invalid(format!(
                        "UDT column {} does not have a field named {}",
                        column.name, field.name
                    ))
                })?;
            (column, Op::SetField(f, value.clone()))
        }
    })
}

/// Refuses operations the column's kind does not allow: key columns, element operations on
/// frozen collections, setting counters, adding to non-counters.
fn check_assignment(c: &ColumnMeta, a: &Assignment, op: &Op) -> ExecResult<()> {
    if c.kind.is_primary_key() {
        return invalid(format!("PRIMARY KEY part {} found in SET part", c.name));
    }
    let frozen_collection = matches!(
        &c.cql_type,
        CqlType::List { frozen: true, .. }
            | CqlType::Set { frozen: true, .. }
            | CqlType::Map { frozen: true, .. }
    );
    if frozen_collection && !matches!(op, Op::Set(_)) {
        let shown = match a {
            Assignment::Add { value, .. } => format!("{0} = {0} + {value}", c.name),
            Assignment::Subtract { value, .. } => format!("{0} = {0} - {value}", c.name),
            Assignment::Prepend { value, .. } => format!("{0} = {value} + {0}", c.name),
            Assignment::SetElement { key, value, .. } => format!("{}[{key}] = {value}", c.name),
            _ => c.name.clone(),
        };
        return invalid(format!(
            "Invalid operation ({shown}) for frozen collection column {}",
            c.name
        ));
    }
    match (op, c.cql_type.is_counter()) {
        // Cassandra's own wording, minus sign included.
        (Op::Prepend(v), true) => invalid(format!("Invalid operation ({0} = {v} - {0}) for non list column {0}", c.name)),
        (Op::Set(_), true) => invalid(format!("Cannot set the value of counter column {} (counters can only be incremented/decremented, not set)", c.name)),
        (Op::Add(_) | Op::Subtract(_), false) if !matches!(c.cql_type, CqlType::List { .. } | CqlType::Set { .. } | CqlType::Map { .. }) => {
            invalid(format!("Invalid operation ({0} = {0} + ?) for non counter column {0}", c.name))
        }
        _ => Ok(()),
    }
}

/// What Cassandra names a marker for an element's key or index: `idx(l)` for a list, `key(m)`
/// for a map, `value(s)` for a set.
pub fn index_name(c: &ColumnMeta) -> String {
    match &c.cql_type {
        CqlType::List { .. } => format!("idx({})", c.name),
        CqlType::Set { .. } => format!("value({})", c.name),
        _ => format!("key({})", c.name),
    }
}

/// Records the bind markers of one operation with the types they receive.
fn note_op_binds(
    t: &TableMeta,
    c: &ColumnMeta,
    op: &Op,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<()> {
    match op {
        // A counter delta is read as a bigint but announced as the counter it updates.
        Op::Set(v) | Op::Add(v) | Op::Prepend(v) | Op::Subtract(v) => {
            let ty = match op_value_type(&c.cql_type, op) {
                CqlType::Native(NativeType::Bigint) if c.cql_type.is_counter() => {
                    c.cql_type.clone()
                }
                ty => ty,
            };
            note_binds(v, BindSpec::new(t, &c.name, ty), specs)?
        }
        Op::SetElement(k, v) => {
            let (kt, vt) = match &c.cql_type {
                CqlType::Map { key, value, .. } => ((**key).clone(), (**value).clone()),
                CqlType::List { element, .. } => {
                    (CqlType::Native(NativeType::Int), (**element).clone())
                }
                _ => {
                    return invalid(format!(
                        "Invalid operation ({0}[?] = ?) for non collection column {0}",
                        c.name
                    ))
                }
            };
            note_binds(k, BindSpec::new(t, &index_name(c), kt), specs)?;
            note_binds(
                v,
                BindSpec::new(t, &format!("value({})", c.name), vt),
                specs,
            )?;
        }
        Op::SetField(f, v) => {
            if let CqlType::Udt { def, .. } = &c.cql_type {
                if let Some((n, ft)) = def.fields.get(*f) {
                    let name = format!("{}.{n}", c.name);
                    note_binds(v, BindSpec::new(t, &name, ft.clone()), specs)?;
                }
            }
        }
        Op::Delete(_) => {}
    }
    Ok(())
}

pub fn plan_delete(
    t: Arc<TableMeta>,
    s: &DeleteStatement,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<WritePlan> {
    if s.using.ttl.is_some() {
        return invalid("Cannot specify TTL on DELETE");
    }
    note_using(&t, &s.using, specs)?;
    let mut ops = Vec::new();
    for item in &s.columns {
        let i = column_index_of(&t, &item.column.name)?;
        let c = &t.columns[i];
        if c.kind.is_primary_key() {
            return invalid(format!(
                "Invalid identifier {} for deletion (should not be a PRIMARY KEY part)",
                c.name
            ));
        }
        check_delete_path(c, item.path.as_ref())?;
        if let Some(SubPath::Element(k)) = &item.path {
            let kt = match &c.cql_type {
                CqlType::Map { key, .. } => (**key).clone(),
                CqlType::Set { element, .. } => (**element).clone(),
                CqlType::List { .. } => CqlType::Native(NativeType::Int),
                _ => {
                    return invalid(format!(
                        "Invalid element deletion on non collection column {}",
                        c.name
                    ))
                }
            };
            note_binds(k, BindSpec::new(&t, &index_name(c), kt), specs)?;
        }
        ops.push((i, Op::Delete(item.path.clone())));
    }
    let (pk, ck, slice) = where_keys(&t, &s.where_clause, specs, true)?;
    super::lwt_cond::note_condition(&t, &s.condition, specs)?;
    let plan = WritePlan {
        table: t,
        kind: WriteKind::Delete,
        ops,
        pk,
        ck,
        ck_slice: slice,
        using: s.using.clone(),
        condition: s.condition.clone(),
    };
    super::lwt_cond::validate_plan(&plan)?;
    Ok(plan)
}

/// Parts of a value only multi-cell columns have: an element of a frozen collection or a field
/// of a frozen UDT cannot be deleted alone, and a field must exist.
fn check_delete_path(c: &helenus_schema::ColumnMeta, path: Option<&SubPath>) -> ExecResult<()> {
    match (path, &c.cql_type) {
        (
            Some(SubPath::Element(_)),
            ty @ (CqlType::List { .. } | CqlType::Set { .. } | CqlType::Map { .. }),
        ) if !ty.is_multi_cell() => invalid(format!(
            "Invalid deletion operation for frozen collection column {}",
            c.name
        )),
        (Some(SubPath::Field(_)), CqlType::Udt { frozen: true, .. }) => invalid(format!(
            "Frozen UDT column {} does not support field deletions",
            c.name
        )),
        (Some(SubPath::Field(_)), ty) if !matches!(ty, CqlType::Udt { .. }) => invalid(format!(
            "Invalid field deletion operation for non-UDT column {}",
            c.name
        )),
        (Some(SubPath::Field(f)), CqlType::Udt { def, .. })
            if !def.fields.iter().any(|(n, _)| *n == f.name) =>
        {
            invalid(format!(
                "UDT column {} does not have a field named {}",
                c.name, f.name
            ))
        }
        _ => Ok(()),
    }
}
