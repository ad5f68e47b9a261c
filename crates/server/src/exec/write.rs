//! INSERT, UPDATE and DELETE: validated against the schema at prepare time, turned into storage
//! mutations at execution (one per partition), with Cassandra's timestamp, TTL and collection rules.

use super::error::{invalid, ExecError, ExecResult};
use super::select::{note_binds, ValuesOf};
use super::values::{self, Binds, Bound};
use super::BindSpec;
use bytes::Bytes;
use helenus_cql::ast::{
    Assignment, DeleteStatement, InsertStatement, InsertValues, JsonDefault, Operator, Relation,
    RelationValue, SubPath, Term, UpdateStatement, UsingClause, WriteCondition,
};
use helenus_schema::{ColumnKind, TableMeta};
use helenus_storage as st;
use helenus_types::{CqlType, CqlValue, NativeType};
use std::sync::Arc;

#[derive(Debug, Clone)]
pub enum Op {
    /// `c = t` (also INSERT values).
    Set(Term),
    Add(Term),
    Prepend(Term),
    Subtract(Term),
    SetElement(Term, Term),
    SetField(usize, Term),
    /// DELETE c / DELETE c[k] / DELETE c.f
    Delete(Option<SubPath>),
}

#[derive(Debug, Clone)]
pub enum WriteKind {
    Insert,
    InsertJson { json: Term, default_unset: bool },
    Update,
    Delete,
}

#[derive(Debug, Clone)]
pub struct WritePlan {
    pub table: Arc<TableMeta>,
    pub kind: WriteKind,
    pub ops: Vec<(usize, Op)>,
    pub pk: Vec<ValuesOf>,
    /// = / IN on a clustering prefix.
    pub ck: Vec<ValuesOf>,
    /// DELETE ... WHERE c > x: a range of rows.
    pub ck_slice: Vec<(Operator, Term)>,
    pub using: UsingClause,
    pub condition: Option<WriteCondition>,
}

/// Partition key values, clustering prefix values, and a clustering slice (for range deletes).
type KeyRestrictions = (Vec<ValuesOf>, Vec<ValuesOf>, Vec<(Operator, Term)>);
/// INSERT JSON decoded: regular columns, partition key components, clustering values.
type JsonRow = (Vec<(usize, Bound)>, Vec<Bytes>, Vec<Bytes>);

fn column_index_of(t: &TableMeta, name: &str) -> ExecResult<usize> {
    t.column_index(name)
        .ok_or_else(|| ExecError::Invalid(format!("Undefined column name {name}")))
}

fn note_using(t: &TableMeta, using: &UsingClause, specs: &mut Vec<Option<BindSpec>>) {
    if let Some(ttl) = &using.ttl {
        note_binds(
            ttl,
            BindSpec::new(t, "[ttl]", CqlType::Native(NativeType::Int)),
            specs,
        );
    }
    if let Some(ts) = &using.timestamp {
        note_binds(
            ts,
            BindSpec::new(t, "[timestamp]", CqlType::Native(NativeType::Bigint)),
            specs,
        );
    }
}

/// The element type an operation's value has for a collection column.
fn op_value_type(ty: &CqlType, op: &Op) -> CqlType {
    match (ty, op) {
        (CqlType::Map { key, .. }, Op::Subtract(_)) => CqlType::Set {
            element: key.clone(),
            frozen: false,
        },
        (CqlType::Native(NativeType::Counter), _) => CqlType::Native(NativeType::Bigint),
        _ => ty.clone(),
    }
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
    for r in &super::write_checks::single_column_relations(where_clause) {
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
            (Operator::Eq, RelationValue::Single(term)) => {
                note_binds(term, BindSpec::new(t, &c.name, c.cql_type.clone()), specs);
                Some(ValuesOf::Terms(vec![term.clone()]))
            }
            (Operator::In, RelationValue::List(terms)) => {
                for term in terms {
                    note_binds(term, BindSpec::new(t, &c.name, c.cql_type.clone()), specs);
                }
                Some(ValuesOf::Terms(terms.clone()))
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
                );
                Some(ValuesOf::BindList(term.clone()))
            }
            (
                Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte,
                RelationValue::Single(term),
            ) if allow_slice && c.kind == ColumnKind::Clustering => {
                note_binds(term, BindSpec::new(t, &c.name, c.cql_type.clone()), specs);
                slice.push((*op, term.clone()));
                None
            }
            _ => {
                return invalid(match c.kind {
                    ColumnKind::PartitionKey => "Only EQ and IN relation are supported on the partition key (unless you use the token() function)".to_string(),
                    ColumnKind::Clustering => format!("Invalid operator {op:?} for PRIMARY KEY part {}", c.name),
                    _ => format!("Non PRIMARY KEY columns found in where clause: {}", c.name),
                });
            }
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
    Ok((pk_vals.into_iter().flatten().collect(), ck_out, slice))
}

pub fn plan_insert(
    t: Arc<TableMeta>,
    s: &InsertStatement,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<WritePlan> {
    if t.is_counter_table() {
        return invalid("INSERT statements are not allowed on counter tables, use UPDATE instead");
    }
    note_using(&t, &s.using, specs);
    let mut pk = Vec::new();
    let mut ck = Vec::new();
    let mut ops = Vec::new();
    let kind = match &s.values {
        InsertValues::Values { columns, values } => {
            if columns.len() != values.len() {
                return invalid(format!(
                    "Unmatched column names/values: {} column names but {} values",
                    columns.len(),
                    values.len()
                ));
            }
            let mut seen = std::collections::HashSet::new();
            for (id, term) in columns.iter().zip(values) {
                let i = column_index_of(&t, &id.name)?;
                if !seen.insert(i) {
                    return invalid(format!("Multiple definitions found for column {}", id.name));
                }
                let c = &t.columns[i];
                note_binds(term, BindSpec::new(&t, &c.name, c.cql_type.clone()), specs);
                match c.kind {
                    ColumnKind::PartitionKey => {
                        pk.push((c.position, ValuesOf::Terms(vec![term.clone()])))
                    }
                    ColumnKind::Clustering => {
                        ck.push((c.position, ValuesOf::Terms(vec![term.clone()])))
                    }
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
                return invalid(format!(
                    "Some clustering keys are missing: {}",
                    missing_ck.join(", ")
                ));
            }
            WriteKind::Insert
        }
        InsertValues::Json { value, default } => {
            note_binds(
                value,
                BindSpec::new(&t, "[json]", CqlType::Native(NativeType::Varchar)),
                specs,
            );
            WriteKind::InsertJson {
                json: value.clone(),
                default_unset: *default == JsonDefault::Unset,
            }
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

pub fn plan_update(
    t: Arc<TableMeta>,
    s: &UpdateStatement,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<WritePlan> {
    note_using(&t, &s.using, specs);
    let mut ops = Vec::new();
    for a in &s.assignments {
        let (name, op) = match a {
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
                let i = column_index_of(&t, &column.name)?;
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
        };
        let i = column_index_of(&t, &name.name)?;
        let c = &t.columns[i];
        if c.kind.is_primary_key() {
            return invalid(format!("PRIMARY KEY part {} found in SET part", c.name));
        }
        let counter = c.cql_type.is_counter();
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
        match (&op, counter) {
            // Cassandra's own wording, minus sign included.
            (Op::Prepend(v), true) => return invalid(format!("Invalid operation ({0} = {v} - {0}) for non list column {0}", c.name)),
            (Op::Set(_), true) => return invalid(format!("Cannot set the value of counter column {} (counters can only be incremented/decremented, not set)", c.name)),
            (Op::Add(_) | Op::Subtract(_), false) if !matches!(c.cql_type, CqlType::List { .. } | CqlType::Set { .. } | CqlType::Map { .. }) => {
                return invalid(format!("Invalid operation ({0} = {0} + ?) for non counter column {0}", c.name))
            }
            _ => {}
        }
        match &op {
            Op::Set(v) | Op::Add(v) | Op::Prepend(v) | Op::Subtract(v) => note_binds(
                v,
                BindSpec::new(&t, &c.name, op_value_type(&c.cql_type, &op)),
                specs,
            ),
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
                note_binds(k, BindSpec::new(&t, &format!("key({})", c.name), kt), specs);
                note_binds(
                    v,
                    BindSpec::new(&t, &format!("value({})", c.name), vt),
                    specs,
                );
            }
            Op::SetField(f, v) => {
                if let CqlType::Udt { def, .. } = &c.cql_type {
                    if let Some((n, ft)) = def.fields.get(*f) {
                        note_binds(v, BindSpec::new(&t, n, ft.clone()), specs);
                    }
                }
            }
            Op::Delete(_) => {}
        }
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

pub fn plan_delete(
    t: Arc<TableMeta>,
    s: &DeleteStatement,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<WritePlan> {
    if s.using.ttl.is_some() {
        return invalid("Cannot specify TTL on DELETE");
    }
    note_using(&t, &s.using, specs);
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
            note_binds(k, BindSpec::new(&t, &format!("key({})", c.name), kt), specs);
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

/// Per-execution settings from the protocol.
/// Reads the current element paths of a list column of one row (partition key, token,
/// clustering, column id), for the list operations that address elements by position.
pub type ListLookup<'a> =
    dyn Fn(&Bytes, i64, &[Bytes], u32) -> ExecResult<Vec<(Bytes, Bytes)>> + Sync + 'a;

pub struct WriteContext<'a> {
    pub timestamp_us: i64,
    pub now_s: i64,
    pub lists: Option<&'a ListLookup<'a>>,
}

/// Where a row being written lives, for read-before-write list operations.
struct RowAt<'a> {
    key: &'a Bytes,
    token: i64,
    clustering: &'a [Bytes],
}

fn list_paths(
    ctx: &WriteContext<'_>,
    at: &Option<RowAt<'_>>,
    col: u32,
    name: &str,
) -> ExecResult<Vec<Bytes>> {
    Ok(list_cells(ctx, at, col, name)?
        .into_iter()
        .map(|(p, _)| p)
        .collect())
}

/// (path, value) of every element of a list column of the row being written.
fn list_cells(
    ctx: &WriteContext<'_>,
    at: &Option<RowAt<'_>>,
    col: u32,
    name: &str,
) -> ExecResult<Vec<(Bytes, Bytes)>> {
    match (ctx.lists, at) {
        (Some(lookup), Some(at)) => lookup(at.key, at.token, at.clustering, col),
        _ => invalid(format!(
            "List operations by index on {name} need a single row"
        )),
    }
}

fn list_index(k: &Term, name: &str, binds: &Binds<'_>) -> ExecResult<i64> {
    match values::eval(k, &CqlType::Native(NativeType::Int), name, binds)? {
        Bound::Value(b) if b.len() == 4 => Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]) as i64),
        _ => invalid(format!("Invalid null value for list index of {name}")),
    }
}

fn int_of(term: &Term, ty: NativeType, name: &str, binds: &Binds<'_>) -> ExecResult<Option<i64>> {
    match values::eval(term, &CqlType::Native(ty), name, binds)? {
        Bound::Value(b) => Ok(Some(match b.len() {
            4 => i32::from_be_bytes([b[0], b[1], b[2], b[3]]) as i64,
            8 => i64::from_be_bytes(b.as_ref().try_into().unwrap_or([0; 8])),
            _ => return invalid(format!("Invalid value for {name}")),
        })),
        Bound::Unset => Ok(None),
        Bound::Null => invalid(format!(
            "Invalid null value of {}",
            if name == "[ttl]" { "TTL" } else { "timestamp" }
        )),
    }
}

/// The maximum TTL Cassandra accepts (20 years).
const MAX_TTL_S: i64 = 20 * 365 * 24 * 60 * 60;

fn list_path() -> Bytes {
    Bytes::copy_from_slice(helenus_types::new_timeuuid().as_bytes())
}

fn field_path(i: usize) -> Bytes {
    Bytes::copy_from_slice(&(i as i16).to_be_bytes())
}

/// Cells for setting a whole multi-cell value (already decoded).
fn collection_cells(col: u32, v: &CqlValue, ts: i64, ttl: u32, out: &mut Vec<st::CellUpdate>) {
    let set = |path: Bytes, value: Bytes| st::CellUpdate {
        column: col,
        path: Some(path),
        timestamp_us: ts,
        op: st::CellOp::Set { value, ttl_s: ttl },
    };
    match v {
        CqlValue::List(items) => {
            for it in items {
                out.push(set(list_path(), values::serialize(it)));
            }
        }
        CqlValue::Set(items) => {
            for it in items {
                out.push(set(values::serialize(it), Bytes::new()));
            }
        }
        CqlValue::Map(entries) => {
            for (k, val) in entries {
                out.push(set(values::serialize(k), values::serialize(val)));
            }
        }
        CqlValue::Udt(fields) => {
            for (i, (_, fv)) in fields.iter().enumerate() {
                if let Some(fv) = fv {
                    out.push(set(field_path(i), values::serialize(fv)));
                }
            }
        }
        _ => {}
    }
}

/// Builds the cells of one row for the plan's operations.
#[allow(clippy::too_many_arguments)]
fn row_cells(
    plan: &WritePlan,
    binds: &Binds<'_>,
    ctx: &WriteContext<'_>,
    at: Option<RowAt<'_>>,
    ts: i64,
    ttl: u32,
    json_values: &Option<Vec<(usize, Bound)>>,
    out: &mut Vec<st::CellUpdate>,
) -> ExecResult<()> {
    let t = &plan.table;
    let mut ops: Vec<(usize, Op, Option<Bound>)> = plan
        .ops
        .iter()
        .map(|(i, o)| (*i, o.clone(), None))
        .collect();
    if let Some(jv) = json_values {
        for (i, b) in jv {
            ops.push((*i, Op::Set(Term::Null), Some(b.clone())));
        }
    }
    for (i, op, pre) in ops {
        let c = &t.columns[i];
        let id = c.id;
        let multi = c.cql_type.is_multi_cell();
        let is_prepend = matches!(op, Op::Prepend(_));
        match op {
            Op::Set(term) => {
                let bound = match pre {
                    Some(b) => b,
                    None => values::eval(&term, &c.cql_type, &c.name, binds)?,
                };
                match (bound, multi) {
                    (Bound::Unset, _) => {}
                    (Bound::Null, false) => out.push(st::CellUpdate {
                        column: id,
                        path: None,
                        timestamp_us: ts,
                        op: st::CellOp::Delete,
                    }),
                    (Bound::Null, true) => out.push(st::CellUpdate {
                        column: id,
                        path: None,
                        timestamp_us: ts,
                        op: st::CellOp::DeleteComplex,
                    }),
                    (Bound::Value(b), false) => out.push(st::CellUpdate {
                        column: id,
                        path: None,
                        timestamp_us: ts,
                        op: st::CellOp::Set {
                            value: b,
                            ttl_s: ttl,
                        },
                    }),
                    (Bound::Value(b), true) => {
                        // Overwrite: drop what was there just before this write's timestamp.
                        out.push(st::CellUpdate {
                            column: id,
                            path: None,
                            timestamp_us: ts - 1,
                            op: st::CellOp::DeleteComplex,
                        });
                        let v = helenus_types::deserialize(&c.cql_type, &b)
                            .map_err(|e| ExecError::Invalid(e.to_string()))?;
                        collection_cells(id, &v, ts, ttl, out);
                    }
                }
            }
            Op::Add(term) | Op::Prepend(term) => {
                if c.cql_type.is_counter() {
                    let ty = CqlType::Native(NativeType::Bigint);
                    let delta = values::eval(&term, &ty, &c.name, binds)?;
                    if matches!(delta, Bound::Null) {
                        return invalid("Invalid null value for counter increment/decrement");
                    }
                    if let Bound::Value(b) = delta {
                        let d = i64::from_be_bytes(b.as_ref().try_into().unwrap_or([0; 8]));
                        out.push(st::CellUpdate {
                            column: id,
                            path: None,
                            timestamp_us: ts,
                            op: st::CellOp::CounterAdd(d),
                        });
                    }
                    continue;
                }
                match values::to_value(&term, &c.cql_type, &c.name, binds)? {
                    // Prepended elements get paths that sort before every existing one.
                    Some(CqlValue::List(items)) if is_prepend => {
                        let paths = super::write_checks::prepend_paths(items.len());
                        for (path, it) in paths.into_iter().zip(&items) {
                            out.push(st::CellUpdate {
                                column: id,
                                path: Some(path),
                                timestamp_us: ts,
                                op: st::CellOp::Set {
                                    value: values::serialize(it),
                                    ttl_s: ttl,
                                },
                            });
                        }
                    }
                    Some(v) => collection_cells(id, &v, ts, ttl, out),
                    None => {}
                }
            }
            Op::Subtract(term) => {
                if c.cql_type.is_counter() {
                    let ty = CqlType::Native(NativeType::Bigint);
                    let delta = values::eval(&term, &ty, &c.name, binds)?;
                    if matches!(delta, Bound::Null) {
                        return invalid("Invalid null value for counter increment/decrement");
                    }
                    if let Bound::Value(b) = delta {
                        let d = i64::from_be_bytes(b.as_ref().try_into().unwrap_or([0; 8]));
                        out.push(st::CellUpdate {
                            column: id,
                            path: None,
                            timestamp_us: ts,
                            op: st::CellOp::CounterAdd(d.wrapping_neg()),
                        });
                    }
                    continue;
                }
                let vt = op_value_type(&c.cql_type, &Op::Subtract(Term::Null));
                match values::to_value(&term, &vt, &c.name, binds)? {
                    Some(CqlValue::Set(items)) => {
                        for it in items {
                            out.push(st::CellUpdate {
                                column: id,
                                path: Some(values::serialize(&it)),
                                timestamp_us: ts,
                                op: st::CellOp::Delete,
                            });
                        }
                    }
                    Some(CqlValue::List(items)) => {
                        let remove: Vec<Bytes> = items.iter().map(values::serialize).collect();
                        for (path, value) in list_cells(ctx, &at, id, &c.name)? {
                            if remove.contains(&value) {
                                out.push(st::CellUpdate {
                                    column: id,
                                    path: Some(path),
                                    timestamp_us: ts,
                                    op: st::CellOp::Delete,
                                });
                            }
                        }
                    }
                    _ => {}
                }
            }
            Op::SetElement(k, v) => match &c.cql_type {
                CqlType::Map { key, value, .. } => {
                    let kb = values::eval(&k, key, &c.name, binds)?;
                    let Bound::Value(kb) = kb else {
                        return invalid(format!("Invalid null map key for {}", c.name));
                    };
                    match values::eval(&v, value, &c.name, binds)? {
                        Bound::Value(vb) => out.push(st::CellUpdate {
                            column: id,
                            path: Some(kb),
                            timestamp_us: ts,
                            op: st::CellOp::Set {
                                value: vb,
                                ttl_s: ttl,
                            },
                        }),
                        Bound::Null => out.push(st::CellUpdate {
                            column: id,
                            path: Some(kb),
                            timestamp_us: ts,
                            op: st::CellOp::Delete,
                        }),
                        Bound::Unset => {}
                    }
                }
                CqlType::List { .. } => {
                    let idx = list_index(&k, &c.name, binds)?;
                    let paths = list_paths(ctx, &at, id, &c.name)?;
                    let Some(path) = usize::try_from(idx).ok().and_then(|i| paths.get(i)) else {
                        return invalid(format!(
                            "List index {idx} out of bound, list has size {}",
                            paths.len()
                        ));
                    };
                    let element_ty = match &c.cql_type {
                        CqlType::List { element, .. } => (**element).clone(),
                        other => other.clone(),
                    };
                    let op = match values::eval(&v, &element_ty, &c.name, binds)? {
                        Bound::Value(vb) => st::CellOp::Set {
                            value: vb,
                            ttl_s: ttl,
                        },
                        _ => st::CellOp::Delete,
                    };
                    out.push(st::CellUpdate {
                        column: id,
                        path: Some(path.clone()),
                        timestamp_us: ts,
                        op,
                    });
                }
                _ => {
                    return invalid(format!(
                        "Invalid operation ({}[?] = ?) for non collection column {}",
                        c.name, c.name
                    ))
                }
            },
            Op::SetField(f, v) => {
                if let CqlType::Udt { def, .. } = &c.cql_type {
                    if let Some((_, ft)) = def.fields.get(f) {
                        match values::eval(&v, ft, &c.name, binds)? {
                            Bound::Value(vb) => out.push(st::CellUpdate {
                                column: id,
                                path: Some(field_path(f)),
                                timestamp_us: ts,
                                op: st::CellOp::Set {
                                    value: vb,
                                    ttl_s: ttl,
                                },
                            }),
                            Bound::Null => out.push(st::CellUpdate {
                                column: id,
                                path: Some(field_path(f)),
                                timestamp_us: ts,
                                op: st::CellOp::Delete,
                            }),
                            Bound::Unset => {}
                        }
                    }
                }
            }
            Op::Delete(path) => match path {
                None => out.push(st::CellUpdate {
                    column: id,
                    path: None,
                    timestamp_us: ts,
                    op: if multi {
                        st::CellOp::DeleteComplex
                    } else {
                        st::CellOp::Delete
                    },
                }),
                Some(SubPath::Element(k)) => {
                    let kt = match &c.cql_type {
                        CqlType::Map { key, .. } => (**key).clone(),
                        CqlType::Set { element, .. } => (**element).clone(),
                        CqlType::List { .. } => {
                            let idx = list_index(&k, &c.name, binds)?;
                            let paths = list_paths(ctx, &at, id, &c.name)?;
                            let Some(path) = usize::try_from(idx).ok().and_then(|i| paths.get(i))
                            else {
                                return invalid(format!(
                                    "List index {idx} out of bound, list has size {}",
                                    paths.len()
                                ));
                            };
                            out.push(st::CellUpdate {
                                column: id,
                                path: Some(path.clone()),
                                timestamp_us: ts,
                                op: st::CellOp::Delete,
                            });
                            continue;
                        }
                        _ => {
                            return invalid(format!(
                                "Invalid deletion of element of non collection column {}",
                                c.name
                            ))
                        }
                    };
                    if let Bound::Value(kb) = values::eval(&k, &kt, &c.name, binds)? {
                        out.push(st::CellUpdate {
                            column: id,
                            path: Some(kb),
                            timestamp_us: ts,
                            op: st::CellOp::Delete,
                        });
                    }
                }
                Some(SubPath::Field(f)) => {
                    if let CqlType::Udt { def, .. } = &c.cql_type {
                        if let Some(i) = def.fields.iter().position(|(n, _)| n == &f.name) {
                            out.push(st::CellUpdate {
                                column: id,
                                path: Some(field_path(i)),
                                timestamp_us: ts,
                                op: st::CellOp::Delete,
                            });
                        }
                    }
                }
            },
        }
    }
    Ok(())
}

/// Decodes `INSERT ... JSON` into (column, value) pairs; key columns come back separately.
fn json_values(plan: &WritePlan, binds: &Binds<'_>) -> ExecResult<Option<JsonRow>> {
    let WriteKind::InsertJson {
        json,
        default_unset,
    } = &plan.kind
    else {
        return Ok(None);
    };
    let t = &plan.table;
    let text = match values::to_value(json, &CqlType::Native(NativeType::Varchar), "[json]", binds)?
    {
        Some(CqlValue::Text(s)) => s,
        _ => return invalid("Got null for INSERT JSON values"),
    };
    let parsed = super::json::parse_object(&text)?;
    let mut cols = Vec::new();
    let mut pk = vec![Bytes::new(); t.partition_key_len()];
    let mut ck = vec![Bytes::new(); t.clustering_len()];
    for (name, _) in &parsed {
        if t.column(name).is_none() {
            return invalid(format!(
                "JSON values map contains unrecognized column: {name}"
            ));
        }
    }
    for (i, c) in t.columns.iter().enumerate() {
        let v = parsed.iter().find(|(n, _)| n == &c.name).map(|(_, v)| v);
        let bound = match v {
            None => {
                if *default_unset {
                    Bound::Unset
                } else {
                    Bound::Null
                }
            }
            Some(j) => match super::json::from_json(&c.cql_type, j)? {
                Some(v) => Bound::Value(values::serialize(&v)),
                None => Bound::Null,
            },
        };
        match c.kind {
            ColumnKind::PartitionKey | ColumnKind::Clustering => {
                let Bound::Value(b) = bound else {
                    return invalid(format!(
                        "Invalid null value in condition for column {}",
                        c.name
                    ));
                };
                let p = c.position.max(0) as usize;
                if c.kind == ColumnKind::PartitionKey {
                    if let Some(slot) = pk.get_mut(p) {
                        *slot = b;
                    }
                } else if let Some(slot) = ck.get_mut(p) {
                    *slot = b;
                }
            }
            _ => cols.push((i, bound)),
        }
    }
    Ok(Some((cols, pk, ck)))
}

/// The mutations of one statement of an unconditional BATCH (conditional ones go through `lwt`).
pub fn batch_child_mutations(
    plan: &WritePlan,
    binds: &Binds<'_>,
    ctx: &WriteContext<'_>,
) -> ExecResult<Vec<st::Mutation>> {
    mutations(plan, binds, ctx)
}

/// The mutations a planned write makes (one per partition), for a given execution.
pub fn mutations(
    plan: &WritePlan,
    binds: &Binds<'_>,
    ctx: &WriteContext,
) -> ExecResult<Vec<st::Mutation>> {
    let t = &plan.table;
    let ts = match &plan.using.timestamp {
        Some(term) => match int_of(term, NativeType::Bigint, "[timestamp]", binds)? {
            // Long.MIN_VALUE is Cassandra's "no timestamp" marker.
            Some(i64::MIN) => {
                return invalid(format!(
                    "Out of bound timestamp, must be in [{}, {}]",
                    i64::MIN + 1,
                    i64::MAX
                ))
            }
            Some(v) => v,
            None => ctx.timestamp_us,
        },
        None => ctx.timestamp_us,
    };
    let ttl = match &plan.using.ttl {
        Some(term) => match int_of(term, NativeType::Int, "[ttl]", binds)? {
            Some(v) if v < 0 => {
                return invalid(format!("A TTL must be greater or equal to 0, but was {v}"))
            }
            Some(v) if v > MAX_TTL_S => {
                return invalid(format!(
                    "ttl is too large. requested ({v}) maximum ({MAX_TTL_S})"
                ))
            }
            Some(v) => v as u32,
            None => t.params.default_time_to_live.max(0) as u32,
        },
        None => t.params.default_time_to_live.max(0) as u32,
    };
    super::write_checks::check_expiration(t, ttl, ctx.now_s)?;
    let json = json_values(plan, binds)?;
    let (pk_lists, ck_lists): (Vec<Vec<Bytes>>, Vec<Vec<Bytes>>) = match &json {
        Some((_, pk, ck)) => (
            pk.iter().map(|b| vec![b.clone()]).collect(),
            ck.iter().map(|b| vec![b.clone()]).collect(),
        ),
        None => {
            let pkc: Vec<&helenus_schema::ColumnMeta> = t.partition_key().collect();
            let ckc: Vec<&helenus_schema::ColumnMeta> = t.clustering().collect();
            let mut p = Vec::new();
            for (c, v) in pkc.iter().zip(&plan.pk) {
                p.push(super::scan::expand_values(v, &c.cql_type, &c.name, binds)?);
            }
            let mut k = Vec::new();
            for (c, v) in ckc.iter().zip(&plan.ck) {
                k.push(super::scan::expand_values(v, &c.cql_type, &c.name, binds)?);
            }
            (p, k)
        }
    };
    super::scan::check_key_components(&pk_lists)?;
    let json_cols = json.map(|(c, _, _)| c);
    let keys = super::scan::cartesian(&pk_lists);
    let clusterings = super::scan::cartesian(&ck_lists);
    let full_clustering = ck_lists.len() == t.clustering_len();
    let expires = if ttl > 0 { ctx.now_s + ttl as i64 } else { 0 };
    let mut out = Vec::with_capacity(keys.len());
    for comps in keys {
        let refs: Vec<&[u8]> = comps.iter().map(|b| b.as_ref()).collect();
        let key = crate::keys::partition_key(&refs);
        let token = helenus_types::murmur3_token(&key);
        let mut m = st::Mutation {
            table: *t.id.as_bytes(),
            key,
            token,
            partition_deletion: None,
            range_tombstones: Vec::new(),
            static_row: None,
            rows: Vec::new(),
        };
        let deletion = st::DeletionTime {
            marked_for_delete_at_us: ts,
            local_deletion_time_s: ctx.now_s,
        };
        match plan.kind {
            WriteKind::Delete if plan.ops.is_empty() => {
                if !plan.ck_slice.is_empty() {
                    for prefix in &clusterings {
                        let (start, end) = slice_bounds(prefix, &plan.ck_slice, t, binds)?;
                        m.range_tombstones.push((start, end, deletion));
                    }
                } else if ck_lists.is_empty() {
                    m.partition_deletion = Some(deletion);
                } else if full_clustering {
                    for c in &clusterings {
                        m.rows.push(st::RowUpdate {
                            clustering: c.clone(),
                            liveness: None,
                            deletion: Some(deletion),
                            cells: Vec::new(),
                        });
                    }
                } else {
                    for prefix in &clusterings {
                        let b = |kind| st::ClusteringBound {
                            prefix: prefix.clone(),
                            kind,
                        };
                        m.range_tombstones.push((
                            b(st::BoundKind::Inclusive),
                            b(st::BoundKind::Inclusive),
                            deletion,
                        ));
                    }
                }
            }
            _ => {
                let mut static_cells = Vec::new();
                let mut regular_cells = Vec::new();
                let mut all = Vec::new();
                let single =
                    if clusterings.len() == 1 && (full_clustering || t.clustering_len() == 0) {
                        clusterings.first().map(|c| RowAt {
                            key: &m.key,
                            token: m.token,
                            clustering: c,
                        })
                    } else {
                        None
                    };
                row_cells(plan, binds, ctx, single, ts, ttl, &json_cols, &mut all)?;
                for cell in all {
                    let is_static = t
                        .columns
                        .iter()
                        .any(|c| c.id == cell.column && c.kind == ColumnKind::Static);
                    if is_static {
                        static_cells.push(cell);
                    } else {
                        regular_cells.push(cell);
                    }
                }
                if !static_cells.is_empty() {
                    m.static_row = Some(st::RowUpdate {
                        clustering: Vec::new(),
                        liveness: None,
                        deletion: None,
                        cells: static_cells,
                    });
                }
                let insert = matches!(plan.kind, WriteKind::Insert | WriteKind::InsertJson { .. });
                let needs_row = insert || !regular_cells.is_empty();
                if needs_row && (t.clustering_len() == 0 || full_clustering) {
                    let liveness = insert.then_some(st::Liveness {
                        timestamp_us: ts,
                        ttl_s: ttl,
                        expires_at_s: expires,
                    });
                    let cl = if t.clustering_len() == 0 {
                        vec![Vec::new()]
                    } else {
                        clusterings.clone()
                    };
                    for c in cl {
                        m.rows.push(st::RowUpdate {
                            clustering: c,
                            liveness,
                            deletion: None,
                            cells: regular_cells.clone(),
                        });
                    }
                }
            }
        }
        out.push(m);
    }
    Ok(out)
}

fn slice_bounds(
    prefix: &[Bytes],
    slice: &[(Operator, Term)],
    t: &TableMeta,
    binds: &Binds<'_>,
) -> ExecResult<(st::ClusteringBound, st::ClusteringBound)> {
    let c = t
        .clustering()
        .nth(prefix.len())
        .ok_or_else(|| ExecError::Invalid("bad range deletion".into()))?;
    let mut start = st::ClusteringBound {
        prefix: prefix.to_vec(),
        kind: st::BoundKind::Inclusive,
    };
    let mut end = st::ClusteringBound {
        prefix: prefix.to_vec(),
        kind: st::BoundKind::Inclusive,
    };
    for (op, term) in slice {
        let Bound::Value(v) = values::eval(term, &c.cql_type, &c.name, binds)? else {
            return invalid(format!(
                "Invalid null value in condition for column {}",
                c.name
            ));
        };
        let mut p = prefix.to_vec();
        p.push(v);
        let kind = if matches!(op, Operator::Gte | Operator::Lte) {
            st::BoundKind::Inclusive
        } else {
            st::BoundKind::Exclusive
        };
        if matches!(op, Operator::Gt | Operator::Gte) {
            start = st::ClusteringBound { prefix: p, kind };
        } else {
            end = st::ClusteringBound { prefix: p, kind };
        }
    }
    if c.order == helenus_schema::ClusteringOrder::Desc {
        return Ok((end, start));
    }
    Ok((start, end))
}
