//! Compiled SELECT selectors: what each result column is and how it is computed from a row.

use super::arith;
use super::cast;
use super::error::{ExecError, ExecResult};
use super::functions;
use super::rows::Row;
use super::values::serialize;
use crate::exec_state::Now;
use bytes::Bytes;
use helenus_types::{CqlType, CqlValue, NativeType};

mod binds;
mod cell_meta;
mod compile;
mod token;
pub use binds::{note_selector_binds, projection_has_bind};
pub use compile::{compile, compile_selector};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AggKind {
    Count,
    Min,
    Max,
    Sum,
    Avg,
}

#[derive(Debug, Clone)]
pub enum Sel {
    Column(usize),
    /// `writetime()`, `maxwritetime()` or `ttl()` of a column or part of one.
    CellMeta(Box<cell_meta::CellMetaSel>),
    Token(Vec<usize>),
    Field {
        inner: Box<Sel>,
        index: usize,
        udt: CqlType,
    },
    Arith {
        op: helenus_cql::ast::ArithOp,
        left: Box<Sel>,
        right: Box<Sel>,
        lt: CqlType,
        rt: CqlType,
    },
    Negate(Box<Sel>),
    ToJson {
        inner: Box<Sel>,
        ty: CqlType,
    },
    /// `s[a..b]` / `m[a..b]`: the elements or entries with keys in the inclusive range.
    Slice {
        inner: Box<Sel>,
        coll: CqlType,
        from: Option<Bytes>,
        to: Option<Bytes>,
    },
    /// `s[e]` / `m[k]`: the element (set) or value (map) for a key, null if absent.
    Element {
        inner: Box<Sel>,
        coll: CqlType,
        key: Option<Bytes>,
    },
    Func {
        name: String,
        args: Vec<Sel>,
        arg_types: Vec<CqlType>,
    },
    /// A resolved `cast_as_<to>` call; the argument is read as `input` (see [`cast::CastPlan`]).
    Cast {
        inner: Box<Sel>,
        from: CqlType,
        input: CqlType,
        to: NativeType,
    },
    Constant(Option<Bytes>),
    CountStar,
    Agg {
        kind: AggKind,
        arg: Box<Sel>,
        ty: CqlType,
    },
}

#[derive(Debug, Clone)]
pub struct OutColumn {
    pub name: String,
    pub ty: CqlType,
    pub sel: Sel,
}

#[derive(Debug)]
pub struct Compiled {
    pub columns: Vec<OutColumn>,
    pub has_aggregate: bool,
    /// (name, type) of each result column, shared by every result of the plan.
    pub result_columns: std::sync::Arc<[(String, CqlType)]>,
    /// The same as a ROWS result's column specs, encoded once (None if a name is too long).
    pub wire_columns: Option<std::sync::Arc<helenus_protocol::EncodedColumnSpecs>>,
}

/// Whether an aggregate sits inside another selector (`to_unix_timestamp(max(b))`, `min(b).x`):
/// the column is then computed from the group's aggregated values, not aggregated itself.
pub fn has_nested_agg(sel: &Sel) -> bool {
    !matches!(sel, Sel::Agg { .. } | Sel::CountStar) && contains_agg(sel)
}

fn contains_agg(sel: &Sel) -> bool {
    match sel {
        Sel::Agg { .. } | Sel::CountStar => true,
        Sel::Func { args, .. } => args.iter().any(contains_agg),
        Sel::Field { inner, .. }
        | Sel::Negate(inner)
        | Sel::ToJson { inner, .. }
        | Sel::Cast { inner, .. }
        | Sel::Slice { inner, .. }
        | Sel::Element { inner, .. } => contains_agg(inner),
        Sel::Arith { left, right, .. } => contains_agg(left) || contains_agg(right),
        _ => false,
    }
}

pub(super) fn decode(ty: &CqlType, b: &Option<Bytes>) -> ExecResult<Option<CqlValue>> {
    if matches!(ty, CqlType::Custom(c) if c == functions::LEGACY_TIMEUUID) {
        return decode(&CqlType::Native(NativeType::Timeuuid), b);
    }
    match b {
        None => Ok(None),
        Some(b) => helenus_types::deserialize(ty, b)
            .map(Some)
            .map_err(|e| ExecError::Server(e.to_string())),
    }
}

/// Evaluates a non-aggregate selector on one row.
pub fn eval(sel: &Sel, ty: &CqlType, row: &Row, now: Now<'_>) -> ExecResult<Option<Bytes>> {
    Ok(match sel {
        Sel::Column(i) => row.cells.get(*i).cloned().flatten(),
        Sel::CellMeta(meta) => cell_meta::eval(meta, row, now)?,
        Sel::Token(_) => Some(serialize(&CqlValue::Bigint(row.token))),
        Sel::Field { inner, index, udt } => {
            let b = eval(inner, udt, row, now)?;
            match decode(udt, &b)? {
                Some(CqlValue::Udt(fields)) => fields
                    .get(*index)
                    .and_then(|(_, v)| v.as_ref())
                    .map(serialize),
                _ => None,
            }
        }
        Sel::Arith { .. } | Sel::Negate(_) => eval_arith(sel, ty, row, now)?,
        // Without a key there is nothing to look up (the collection is not read).
        Sel::Element { key: None, .. } => None,
        Sel::Slice { coll, inner, .. } | Sel::Element { coll, inner, .. } => {
            let value = decode(coll, &eval(inner, coll, row, now)?)?;
            pick_elements(sel, coll, value)
        }
        Sel::ToJson { inner, ty: ity } => {
            let b = eval(inner, ity, row, now)?;
            let text = match decode(ity, &b)? {
                Some(v) => helenus_types::to_json(&v),
                None => "null".to_string(),
            };
            Some(serialize(&CqlValue::Text(text)))
        }
        Sel::Constant(b) => b.clone(),
        Sel::Func {
            name,
            args,
            arg_types,
        } => {
            let mut vals = Vec::new();
            for (a, t) in args.iter().zip(arg_types) {
                let b = eval(a, t, row, now)?;
                vals.push(decode(t, &b)?);
            }
            functions::call(name, &vals, &now)?.map(|v| serialize(&v))
        }
        Sel::Cast {
            inner,
            from,
            input,
            to,
        } => {
            // The argument's bytes are handed to the matched signature as they are.
            let b = eval(inner, from, row, now)?;
            match decode(input, &b)? {
                None => None,
                Some(v) => Some(serialize(&cast::apply(&v, *to)?)),
            }
        }
        Sel::CountStar | Sel::Agg { .. } => None,
    })
}

/// `a + b` and the like, and `-a` (computed as `0 - a`); null when an operand is null.
fn eval_arith(sel: &Sel, ty: &CqlType, row: &Row, now: Now<'_>) -> ExecResult<Option<Bytes>> {
    let (op, l, r, types) = match sel {
        Sel::Arith {
            op,
            left,
            right,
            lt,
            rt,
        } => (
            *op,
            decode(lt, &eval(left, lt, row, now)?)?,
            decode(rt, &eval(right, rt, row, now)?)?,
            (lt, rt),
        ),
        Sel::Negate(inner) => (
            helenus_cql::ast::ArithOp::Sub,
            Some(CqlValue::Tinyint(0)),
            decode(ty, &eval(inner, ty, row, now)?)?,
            (ty, ty),
        ),
        _ => return Ok(None),
    };
    match (l, r) {
        (Some(l), Some(r)) => Ok(arith::apply(op, &l, &r, types, ty)?.map(|v| serialize(&v))),
        _ => Ok(None),
    }
}

/// `s[a..b]` / `m[a..b]` (the elements or entries with keys in the inclusive range; when none,
/// null for a multi-cell collection, which has no empty value, and empty for a frozen one) and `s[e]` / `m[k]` (the element or value for a key) of a decoded set or map.
fn pick_elements(sel: &Sel, coll: &CqlType, value: Option<CqlValue>) -> Option<Bytes> {
    match sel {
        Sel::Slice { from, to, .. } => {
            let key_ty = match coll {
                CqlType::Set { element, .. } => (**element).clone(),
                CqlType::Map { key, .. } => (**key).clone(),
                other => other.clone(),
            };
            let inside = |k: &CqlValue| {
                let b = serialize(k);
                from.as_ref()
                    .is_none_or(|f| helenus_types::compare_serialized(&key_ty, &b, f).is_ge())
                    && to
                        .as_ref()
                        .is_none_or(|t| helenus_types::compare_serialized(&key_ty, &b, t).is_le())
            };
            let frozen = !coll.is_multi_cell();
            match value? {
                CqlValue::Set(items) => {
                    let kept: Vec<CqlValue> = items.into_iter().filter(|v| inside(v)).collect();
                    (frozen || !kept.is_empty()).then(|| serialize(&CqlValue::Set(kept)))
                }
                CqlValue::Map(entries) => {
                    let kept: Vec<(CqlValue, CqlValue)> =
                        entries.into_iter().filter(|(k, _)| inside(k)).collect();
                    (frozen || !kept.is_empty()).then(|| serialize(&CqlValue::Map(kept)))
                }
                _ => None,
            }
        }
        Sel::Element { key, .. } => {
            let key = key.as_ref()?;
            match value? {
                CqlValue::Set(items) => items.into_iter().map(|v| serialize(&v)).find(|b| b == key),
                CqlValue::Map(entries) => entries
                    .into_iter()
                    .find(|(k, _)| serialize(k) == *key)
                    .map(|(_, v)| serialize(&v)),
                _ => None,
            }
        }
        _ => None,
    }
}
