//! The cells of one written row: values for each operation (including collection elements, UDT
//! fields and read-before-write list operations) and decoding `INSERT ... JSON`.

use super::{op_value_type, Op, WriteContext, WriteKind, WritePlan};
use crate::exec::error::{invalid, ExecError, ExecResult};
use crate::exec::values::{self, Binds, Bound};
use bytes::Bytes;
use helenus_cql::ast::{SubPath, Term};
use helenus_schema::ColumnKind;
use helenus_storage as st;
use helenus_types::{CqlType, CqlValue, NativeType};

/// INSERT JSON decoded: regular columns, partition key components, clustering values.
pub(super) type JsonRow = (Vec<(usize, Bound)>, Vec<Bytes>, Vec<Bytes>);

/// Where a row being written lives, for read-before-write list operations.
pub(super) struct RowAt<'a> {
    pub(super) key: &'a Bytes,
    pub(super) token: i64,
    pub(super) clustering: &'a [Bytes],
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
pub(super) fn row_cells(
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
                    out.extend(counter_update(c, id, ts, &term, binds, false)?);
                    continue;
                }
                match values::to_value(&term, &c.cql_type, &c.name, binds)? {
                    // Prepended elements get paths that sort before every existing one.
                    Some(CqlValue::List(items)) if is_prepend => {
                        let paths = ctx.prepends.next(items.len());
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
                    out.extend(counter_update(c, id, ts, &term, binds, true)?);
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
pub(super) fn json_values(plan: &WritePlan, binds: &Binds<'_>) -> ExecResult<Option<JsonRow>> {
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
    let parsed = crate::exec::json::parse_object(&text)?;
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
            Some(j) => match crate::exec::json::from_json(&c.cql_type, j)? {
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

/// `n = n + d` / `n = n - d` on a counter: one delta cell (none for an unset value).
fn counter_update(
    c: &helenus_schema::ColumnMeta,
    id: u32,
    ts: i64,
    term: &Term,
    binds: &Binds<'_>,
    subtract: bool,
) -> ExecResult<Option<st::CellUpdate>> {
    let ty = CqlType::Native(NativeType::Bigint);
    match values::eval(term, &ty, &c.name, binds)? {
        Bound::Null => invalid("Invalid null value for counter increment/decrement"),
        Bound::Unset => Ok(None),
        Bound::Value(b) => {
            let d = i64::from_be_bytes(b.as_ref().try_into().unwrap_or([0; 8]));
            Ok(Some(st::CellUpdate {
                column: id,
                path: None,
                timestamp_us: ts,
                op: st::CellOp::CounterAdd(if subtract { d.wrapping_neg() } else { d }),
            }))
        }
    }
}
