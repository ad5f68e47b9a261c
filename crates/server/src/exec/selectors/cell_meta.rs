//! `writetime()`, `maxwritetime()` and `ttl()` as Cassandra 5.0 answers them (CASSANDRA-8877):
//! of a simple or frozen column, its cell; of a multi-cell collection or UDT, one value per
//! element (a UDT: per field of its type, null where the field is unset); and of part of a
//! column: an element `s[e]`/`m[k]` or slice `s[a..b]` of a set or map, or a field `u.f` (nested
//! through frozen UDTs, `u.f.g`). A part of a frozen value has the frozen cell's time when the
//! part holds a value, else null. `maxwritetime` is the latest of the values `writetime` lists.

use super::super::error::{ExecError, ExecResult};
use super::super::rows::{CellMeta, ElementMeta, Row};
use super::super::values::serialize;
use super::{decode, Sel};
use crate::exec_state::Now;
use bytes::{BufMut, Bytes, BytesMut};
use helenus_schema::TableMeta;
use helenus_types::{CqlType, CqlValue, NativeType};

/// Which of the three functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaFn {
    WriteTime,
    MaxWriteTime,
    Ttl,
}

/// What part of the column the function reads.
#[derive(Debug, Clone)]
pub enum MetaTarget {
    Column,
    /// Elements of a set or map with keys between the bounds (inclusive; None: open); one
    /// element when `single` (`s[e]`, both bounds the key).
    Keys {
        from: Option<Bytes>,
        to: Option<Bytes>,
        single: bool,
        key_ty: CqlType,
    },
    /// Field indexes from the column's UDT down, each with the UDT type it indexes.
    Fields(Vec<(usize, CqlType)>),
}

/// A compiled `writetime()`, `maxwritetime()` or `ttl()`.
#[derive(Debug, Clone)]
pub struct CellMetaSel {
    pub func: MetaFn,
    pub column: usize,
    pub column_ty: CqlType,
    pub target: MetaTarget,
}

/// Compiles the function over `inner`, already compiled (its errors are the selection's own:
/// element selection of a list, an unknown field...).
pub fn compile(
    t: &TableMeta,
    func: MetaFn,
    inner: Sel,
    inner_name: &str,
) -> ExecResult<(Sel, CqlType)> {
    let (column, target) = target_of(inner).ok_or_else(|| {
        ExecError::Invalid(format!(
            "Invalid selection {inner_name}: {} takes a column, an element or slice of a set or map, or a field of a user type",
            name(func)
        ))
    })?;
    let c = &t.columns[column];
    if c.kind.is_primary_key() {
        return Err(ExecError::Invalid(format!(
            "Cannot use selection function {} on PRIMARY KEY part {}",
            name(func),
            c.name
        )));
    }
    let multi_cell = c.cql_type.is_multi_cell();
    let listed = match &target {
        MetaTarget::Column => multi_cell,
        MetaTarget::Keys { single, .. } => multi_cell && !single,
        MetaTarget::Fields(_) => false,
    };
    let scalar = match func {
        MetaFn::Ttl => NativeType::Int,
        _ => NativeType::Bigint,
    };
    let ty = if listed && func != MetaFn::MaxWriteTime {
        CqlType::List {
            element: Box::new(CqlType::Native(scalar)),
            frozen: false,
        }
    } else {
        CqlType::Native(scalar)
    };
    let sel = CellMetaSel {
        func,
        column,
        column_ty: c.cql_type.clone(),
        target,
    };
    Ok((Sel::CellMeta(Box::new(sel)), ty))
}

fn name(func: MetaFn) -> &'static str {
    match func {
        MetaFn::WriteTime => "writetime",
        MetaFn::MaxWriteTime => "maxwritetime",
        MetaFn::Ttl => "ttl",
    }
}

/// The column and part a compiled selection reads, if it is one these functions take.
fn target_of(sel: Sel) -> Option<(usize, MetaTarget)> {
    match sel {
        Sel::Column(i) => Some((i, MetaTarget::Column)),
        Sel::Element { inner, coll, key } => {
            let Sel::Column(i) = *inner else { return None };
            Some((
                i,
                MetaTarget::Keys {
                    from: key.clone(),
                    to: key,
                    single: true,
                    key_ty: key_type(&coll)?,
                },
            ))
        }
        Sel::Slice {
            inner,
            coll,
            from,
            to,
        } => {
            let Sel::Column(i) = *inner else { return None };
            Some((
                i,
                MetaTarget::Keys {
                    from,
                    to,
                    single: false,
                    key_ty: key_type(&coll)?,
                },
            ))
        }
        Sel::Field { inner, index, udt } => {
            let (i, target) = target_of(*inner)?;
            let mut path = match target {
                MetaTarget::Column => Vec::new(),
                MetaTarget::Fields(path) => path,
                MetaTarget::Keys { .. } => return None,
            };
            path.push((index, udt));
            Some((i, MetaTarget::Fields(path)))
        }
        _ => None,
    }
}

fn key_type(coll: &CqlType) -> Option<CqlType> {
    match coll {
        CqlType::Set { element, .. } => Some((**element).clone()),
        CqlType::Map { key, .. } => Some((**key).clone()),
        _ => None,
    }
}

/// The function's value on one row.
pub fn eval(sel: &CellMetaSel, row: &Row, now: Now<'_>) -> ExecResult<Option<Bytes>> {
    let column = sel.column;
    if !sel.column_ty.is_multi_cell() {
        // One cell: its time, if the part read holds a value.
        let Some(meta) = row.meta.get(column).copied().flatten() else {
            return Ok(None);
        };
        let value = decode(&sel.column_ty, &row.cells.get(column).cloned().flatten())?;
        let present = match &sel.target {
            MetaTarget::Column => true,
            MetaTarget::Keys {
                from, to, key_ty, ..
            } => frozen_has_key_between(value, key_ty, from, to),
            MetaTarget::Fields(path) => field_at(value, path).is_some(),
        };
        return Ok(present.then(|| scalar(sel.func, &meta, now)).flatten());
    }
    let Some(elements) = row.element_meta.get(column).and_then(|e| e.as_ref()) else {
        return Ok(None);
    };
    Ok(match &sel.target {
        MetaTarget::Column => match &sel.column_ty {
            CqlType::Udt { def, .. } => {
                let by_field: Vec<Option<CellMeta>> = (0..def.fields.len())
                    .map(|i| field_meta(elements, i))
                    .collect();
                listed(sel.func, &by_field, now)
            }
            _ => {
                let all: Vec<Option<CellMeta>> = elements.iter().map(|e| Some(e.meta)).collect();
                listed(sel.func, &all, now)
            }
        },
        MetaTarget::Keys {
            from,
            to,
            single,
            key_ty,
        } => {
            let inside: Vec<Option<CellMeta>> = elements
                .iter()
                .filter(|e| key_between(key_ty, &e.path, from, to))
                .map(|e| Some(e.meta))
                .collect();
            if *single && from.is_none() {
                // An element selected by an unset bind marker: nothing is read.
                return Ok(None);
            }
            match (single, inside.first()) {
                (true, Some(Some(meta))) => scalar(sel.func, meta, now),
                (true, _) => None,
                (false, _) if inside.is_empty() => None,
                (false, _) => listed(sel.func, &inside, now),
            }
        }
        MetaTarget::Fields(path) => {
            let Some((first, _)) = path.first() else {
                return Ok(None);
            };
            let Some(meta) = field_meta(elements, *first) else {
                return Ok(None);
            };
            if path.len() > 1 {
                // Deeper fields live inside the frozen value of the first one.
                let value = decode(&sel.column_ty, &row.cells.get(column).cloned().flatten())?;
                if field_at(value, path).is_none() {
                    return Ok(None);
                }
            }
            scalar(sel.func, &meta, now)
        }
    })
}

/// The cell of a non-frozen UDT's field `index` (its path is the field number, two bytes).
fn field_meta(elements: &[ElementMeta], index: usize) -> Option<CellMeta> {
    elements
        .iter()
        .find(|e| field_index(&e.path) == Some(index))
        .map(|e| e.meta)
}

fn field_index(path: &Bytes) -> Option<usize> {
    (path.len() == 2).then(|| i16::from_be_bytes([path[0], path[1]]) as usize)
}

fn nth_field(value: CqlValue, index: usize) -> Option<CqlValue> {
    match value {
        CqlValue::Udt(fields) => fields.into_iter().nth(index).and_then(|(_, v)| v),
        _ => None,
    }
}

/// The value at `path` inside a UDT value; None when any field on the way is null.
fn field_at(value: Option<CqlValue>, path: &[(usize, CqlType)]) -> Option<CqlValue> {
    path.iter()
        .try_fold(value?, |v, (index, _)| nth_field(v, *index))
}

fn key_between(key_ty: &CqlType, key: &Bytes, from: &Option<Bytes>, to: &Option<Bytes>) -> bool {
    from.as_ref()
        .is_none_or(|f| helenus_types::compare_serialized(key_ty, key, f).is_ge())
        && to
            .as_ref()
            .is_none_or(|t| helenus_types::compare_serialized(key_ty, key, t).is_le())
}

fn frozen_has_key_between(
    value: Option<CqlValue>,
    key_ty: &CqlType,
    from: &Option<Bytes>,
    to: &Option<Bytes>,
) -> bool {
    let keys: Vec<CqlValue> = match value {
        Some(CqlValue::Set(items)) => items,
        Some(CqlValue::Map(entries)) => entries.into_iter().map(|(k, _)| k).collect(),
        _ => return false,
    };
    keys.iter()
        .any(|k| key_between(key_ty, &serialize(k), from, to))
}

fn remaining_ttl(meta: &CellMeta, now: Now<'_>) -> Option<i32> {
    (meta.ttl_s != 0).then(|| (meta.expires_at_s - now.s).max(0) as i32)
}

fn scalar(func: MetaFn, meta: &CellMeta, now: Now<'_>) -> Option<Bytes> {
    match func {
        MetaFn::WriteTime | MetaFn::MaxWriteTime => {
            Some(serialize(&CqlValue::Bigint(meta.timestamp_us)))
        }
        MetaFn::Ttl => remaining_ttl(meta, now).map(|s| serialize(&CqlValue::Int(s))),
    }
}

/// One value per element (null for a missing one), or their latest write time.
fn listed(func: MetaFn, metas: &[Option<CellMeta>], now: Now<'_>) -> Option<Bytes> {
    if func == MetaFn::MaxWriteTime {
        return metas
            .iter()
            .flatten()
            .map(|m| m.timestamp_us)
            .max()
            .map(|ts| serialize(&CqlValue::Bigint(ts)));
    }
    if metas.iter().all(Option::is_none) {
        return None;
    }
    let mut out = BytesMut::new();
    out.put_i32(metas.len() as i32);
    for m in metas {
        match (func, m) {
            (MetaFn::Ttl, Some(m)) => match remaining_ttl(m, now) {
                Some(s) => {
                    out.put_i32(4);
                    out.put_i32(s);
                }
                None => out.put_i32(-1),
            },
            (_, Some(m)) => {
                out.put_i32(8);
                out.put_i64(m.timestamp_us);
            }
            (_, None) => out.put_i32(-1),
        }
    }
    Some(out.freeze())
}
