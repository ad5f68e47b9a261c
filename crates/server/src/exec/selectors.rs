//! Compiled SELECT selectors: what each result column is and how it is computed from a row.

use super::arith;
use super::cast;
use super::error::{ExecError, ExecResult};
use super::functions;
use super::rows::Row;
use super::values::{self, serialize, Binds, Bound};
use bytes::{BufMut, Bytes};
use helenus_cql::ast::{Projection, Selector};
use helenus_schema::{ColumnKind, TableMeta};
use helenus_types::{CqlType, CqlValue, NativeType};

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
    WriteTime(usize),
    Ttl(usize),
    /// `writetime(c)` of a multi-cell column: one write time per element.
    WriteTimes(usize),
    /// `ttl(c)` of a multi-cell column: one remaining TTL (or null) per element.
    Ttls(usize),
    /// `maxwritetime(c)` of a multi-cell column.
    MaxWriteTimeOf(usize),
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
}

fn col_index(t: &TableMeta, name: &str) -> ExecResult<usize> {
    t.column_index(name).ok_or_else(|| {
        ExecError::Invalid(format!(
            "Undefined column name {name} in table {}.{}",
            t.keyspace, t.name
        ))
    })
}

fn selector_name(s: &Selector) -> String {
    match s {
        Selector::Column(i) => i.name.clone(),
        Selector::CountStar => "count".into(),
        Selector::WriteTime(inner) => format!("writetime({})", selector_name(inner)),
        Selector::MaxWriteTime(inner) => format!("maxwritetime({})", selector_name(inner)),
        Selector::Ttl(inner) => format!("ttl({})", selector_name(inner)),
        Selector::FunctionCall { name, args } => {
            let a: Vec<String> = args.iter().map(selector_name).collect();
            let n = name.name.name.to_ascii_lowercase();
            if n == "count" && a.len() == 1 && a[0] == "1" {
                return "count".into();
            }
            let ks = name
                .keyspace
                .as_ref()
                .map(|k| k.name.clone())
                .unwrap_or_else(|| "system".into());
            format!("{ks}.{n}({})", a.join(", "))
        }
        Selector::Cast { selector, ty, .. } => {
            format!("cast({} as {})", selector_name(selector), ty_text(ty))
        }
        Selector::Term(t) => t.to_string(),
        Selector::Binary { op, left, right } => {
            let sym = match op {
                helenus_cql::ast::ArithOp::Add => "+",
                helenus_cql::ast::ArithOp::Sub => "-",
                helenus_cql::ast::ArithOp::Mul => "*",
                helenus_cql::ast::ArithOp::Div => "/",
                helenus_cql::ast::ArithOp::Rem => "%",
            };
            format!("{} {sym} {}", selector_name(left), selector_name(right))
        }
        Selector::Negate(inner) => format!("-{}", selector_name(inner)),
        Selector::List(items) => format!(
            "[{}]",
            items
                .iter()
                .map(selector_name)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Selector::Element { selector, key } => format!("{}[{key}]", selector_name(selector)),
        Selector::Slice { selector, from, to } => format!(
            "{}[{}..{}]",
            selector_name(selector),
            from.as_ref().map(|t| t.to_string()).unwrap_or_default(),
            to.as_ref().map(|t| t.to_string()).unwrap_or_default()
        ),
        Selector::TypeHint { ty, selector } => {
            format!("({}){}", ty_text(ty), selector_name(selector))
        }
        Selector::Field { selector, field } => {
            format!("{}.{}", selector_name(selector), field.name)
        }
        _ => "expr".into(),
    }
}

/// A literal selector as a term (`[1.0, 2.0]` parses as a selector list of terms).
fn as_term(s: &Selector) -> Option<helenus_cql::ast::Term> {
    use helenus_cql::ast::Term;
    Some(match s {
        Selector::Term(t) => t.clone(),
        Selector::List(items) => Term::List(items.iter().map(as_term).collect::<Option<_>>()?),
        _ => return None,
    })
}

/// The first column a selector reads (what Cassandra names in "cannot be cast" errors).
fn first_column(s: &Selector) -> String {
    match s {
        Selector::Column(i) => i.name.clone(),
        Selector::FunctionCall { args, .. } => args
            .iter()
            .map(first_column)
            .find(|n| !n.is_empty())
            .unwrap_or_default(),
        Selector::Cast { selector, .. }
        | Selector::WriteTime(selector)
        | Selector::MaxWriteTime(selector)
        | Selector::Ttl(selector)
        | Selector::Field { selector, .. }
        | Selector::Element { selector, .. }
        | Selector::Slice { selector, .. }
        | Selector::TypeHint { selector, .. }
        | Selector::Negate(selector) => first_column(selector),
        Selector::Binary { left, right, .. } => {
            let l = first_column(left);
            if l.is_empty() {
                first_column(right)
            } else {
                l
            }
        }
        _ => String::new(),
    }
}

fn ty_text(t: &helenus_cql::ast::CqlTypeExpr) -> String {
    values::resolve_type(t, None)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// Compiles the projection of a SELECT against `table`.
pub fn compile(
    t: &TableMeta,
    projection: &Projection,
    binds_none: &Binds<'_>,
) -> ExecResult<Compiled> {
    let mut columns = Vec::new();
    match projection {
        Projection::Star => {
            for (i, c) in t.visible_columns() {
                columns.push(OutColumn {
                    name: c.name.clone(),
                    ty: c.cql_type.clone(),
                    sel: Sel::Column(i),
                });
            }
        }
        Projection::Items(items) => {
            for item in items {
                if let Selector::Term(term) = &item.selector {
                    use helenus_cql::ast::Term as T;
                    // A bare literal has no receiver to take a type from.
                    if matches!(
                        term,
                        T::Integer(_)
                            | T::Float(_)
                            | T::String(_)
                            | T::Bool(_)
                            | T::Uuid(_)
                            | T::Blob(_)
                            | T::Duration(_)
                    ) {
                        return Err(ExecError::Invalid(format!(
                            "Cannot infer type for term {term} in selection clause (try using a cast to force a type)"
                        )));
                    }
                }
                let (sel, ty) = compile_one(t, &item.selector, binds_none)?;
                let name =
                    item.alias
                        .as_ref()
                        .map(|a| a.name.clone())
                        .unwrap_or_else(|| match &item.selector {
                            // A cast to the argument's own type is dropped, name included.
                            Selector::Cast { selector, .. } if !matches!(sel, Sel::Cast { .. }) => {
                                selector_name(selector)
                            }
                            other => selector_name(other),
                        });
                columns.push(OutColumn { name, ty, sel });
            }
        }
    }
    let has_aggregate = columns
        .iter()
        .any(|c| matches!(c.sel, Sel::Agg { .. } | Sel::CountStar));
    Ok(Compiled {
        columns,
        has_aggregate,
    })
}

fn compile_one(t: &TableMeta, s: &Selector, binds: &Binds<'_>) -> ExecResult<(Sel, CqlType)> {
    let bigint = CqlType::Native(NativeType::Bigint);
    Ok(match s {
        Selector::Column(id) => {
            let i = col_index(t, &id.name)?;
            (Sel::Column(i), t.columns[i].cql_type.clone())
        }
        Selector::CountStar => (Sel::CountStar, bigint),
        Selector::WriteTime(inner) | Selector::MaxWriteTime(inner) | Selector::Ttl(inner) => {
            let Selector::Column(id) = &**inner else {
                return Err(ExecError::Invalid(
                    "writetime() and ttl() take a column".into(),
                ));
            };
            let i = col_index(t, &id.name)?;
            let c = &t.columns[i];
            let fname = if matches!(s, Selector::Ttl(_)) {
                "ttl"
            } else {
                "writetime"
            };
            if c.kind.is_primary_key() {
                return Err(ExecError::Invalid(format!(
                    "Cannot use selection function {fname} on PRIMARY KEY part {}",
                    c.name
                )));
            }
            if c.cql_type.is_multi_cell() {
                // Cassandra 5.0: one value per element of a non-frozen collection or UDT.
                let list_of = |e: NativeType| CqlType::List {
                    element: Box::new(CqlType::Native(e)),
                    frozen: false,
                };
                return Ok(match s {
                    Selector::Ttl(_) => (Sel::Ttls(i), list_of(NativeType::Int)),
                    Selector::MaxWriteTime(_) => (Sel::MaxWriteTimeOf(i), bigint),
                    _ => (Sel::WriteTimes(i), list_of(NativeType::Bigint)),
                });
            }
            if matches!(s, Selector::Ttl(_)) {
                (Sel::Ttl(i), CqlType::Native(NativeType::Int))
            } else {
                (Sel::WriteTime(i), bigint)
            }
        }
        Selector::FunctionCall { name, args } => {
            let fname = super::functions::canonical_name(&name.name.name);
            if fname == "token" {
                let mut idx = Vec::new();
                for a in args {
                    let Selector::Column(id) = a else {
                        return Err(ExecError::Invalid(
                            "token() takes the partition key columns".into(),
                        ));
                    };
                    idx.push(col_index(t, &id.name)?);
                }
                let pk: Vec<usize> = t
                    .columns
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.kind == ColumnKind::PartitionKey)
                    .map(|(i, _)| i)
                    .collect();
                if idx == pk {
                    return Ok((Sel::Token(idx), bigint));
                }
                // Other columns of the partition key's types are hashed as a key would be.
                let same_types = idx.len() == pk.len()
                    && idx
                        .iter()
                        .zip(&pk)
                        .all(|(a, b)| t.columns[*a].cql_type == t.columns[*b].cql_type);
                if !same_types {
                    return Err(ExecError::Invalid(format!(
                        "Type error: token() arguments must be the partition key columns of {}",
                        t.name
                    )));
                }
                return Ok((
                    Sel::Func {
                        name: fname,
                        args: idx.iter().map(|i| Sel::Column(*i)).collect(),
                        arg_types: idx.iter().map(|i| t.columns[*i].cql_type.clone()).collect(),
                    },
                    bigint,
                ));
            }
            let agg = match fname.as_str() {
                "count" => Some(AggKind::Count),
                "min" => Some(AggKind::Min),
                "max" => Some(AggKind::Max),
                "sum" => Some(AggKind::Sum),
                "avg" => Some(AggKind::Avg),
                _ => None,
            };
            if let Some(kind) = agg {
                let [arg] = args.as_slice() else {
                    return Err(ExecError::Invalid(format!("Invalid number of arguments in call to function system.{fname}: 1 required but {} provided", args.len())));
                };
                if kind == AggKind::Count {
                    if let Selector::Term(_) = arg {
                        return Ok((Sel::CountStar, bigint));
                    }
                }
                let (inner, ty) = compile_one(t, arg, binds)?;
                if matches!(kind, AggKind::Sum | AggKind::Avg)
                    && numeric_rank(&ty).is_none()
                    && !matches!(
                        ty,
                        CqlType::Native(NativeType::Varint | NativeType::Decimal)
                    )
                {
                    return Err(ExecError::Invalid(format!(
                        "Invalid call to function {fname}, none of its type signatures match (known type signatures: system.{fname} : (tinyint) -> tinyint, system.{fname} : (smallint) -> smallint, system.{fname} : (int) -> int, system.{fname} : (bigint) -> bigint, system.{fname} : (float) -> float, system.{fname} : (double) -> double, system.{fname} : (decimal) -> decimal, system.{fname} : (varint) -> varint, system.{fname} : (counter) -> counter)"
                    )));
                }
                // min/max over a timeuuid report the legacy class, except over a descending
                // clustering column (Cassandra resolves those on the reversed type).
                let descending = matches!(arg, Selector::Column(id)
                    if t.column(&id.name).is_some_and(|c| c.kind == ColumnKind::Clustering
                        && c.order == helenus_schema::ClusteringOrder::Desc));
                let out_ty = match (kind, &ty) {
                    (AggKind::Count, _) => bigint,
                    (AggKind::Min | AggKind::Max, CqlType::Native(NativeType::Timeuuid))
                        if !descending =>
                    {
                        CqlType::Custom(functions::LEGACY_TIMEUUID.into())
                    }
                    _ => ty.clone(),
                };
                if matches!(inner, Sel::Agg { .. } | Sel::CountStar) {
                    return Err(ExecError::Invalid(
                        "aggregate functions cannot be used as arguments of aggregate functions"
                            .into(),
                    ));
                }
                return Ok((
                    Sel::Agg {
                        kind,
                        arg: Box::new(inner),
                        ty,
                    },
                    out_ty,
                ));
            }
            if fname == "tojson" {
                let [arg] = args.as_slice() else {
                    return Err(ExecError::Invalid(format!(
                        "toJson() only accepts one argument ({} given)",
                        args.len()
                    )));
                };
                let (inner, ty) = compile_one(t, arg, binds)?;
                return Ok((
                    Sel::ToJson {
                        inner: Box::new(inner),
                        ty,
                    },
                    CqlType::Native(NativeType::Varchar),
                ));
            }
            let mut sels = Vec::new();
            let mut types = Vec::new();
            let similarity = fname.starts_with("similarity_");
            // A vector literal passed to a similarity function takes the other argument's type.
            let vector_ty = if similarity {
                args.iter()
                    .filter(|a| as_term(a).is_none())
                    .map(|a| compile_one(t, a, binds).map(|(_, ty)| ty))
                    .collect::<ExecResult<Vec<_>>>()?
                    .into_iter()
                    .find(|ty| matches!(ty, CqlType::Vector { .. }))
            } else {
                None
            };
            for a in args {
                let (s, ty) = match (as_term(a), &vector_ty) {
                    (Some(term), Some(vt)) => {
                        let b = match values::eval(&term, vt, "selector", binds)? {
                            Bound::Value(b) => Some(b),
                            _ => None,
                        };
                        (Sel::Constant(b), vt.clone())
                    }
                    _ => compile_one(t, a, binds)?,
                };
                sels.push(s);
                types.push(ty);
            }
            let rt = functions::resolve(&fname, &types)?;
            (
                Sel::Func {
                    name: fname,
                    args: sels,
                    arg_types: types,
                },
                rt,
            )
        }
        Selector::Cast {
            selector,
            ty,
            written,
        } => {
            let (inner, from) = compile_one(t, selector, binds)?;
            let CqlType::Native(to) = values::resolve_type(ty, None)? else {
                return Err(ExecError::Invalid(format!("Cannot cast to {written}")));
            };
            match cast::plan(&from, to, written, &first_column(selector))? {
                cast::CastPlan::Identity => (inner, from),
                cast::CastPlan::Convert { input, to } => (
                    Sel::Cast {
                        inner: Box::new(inner),
                        from,
                        input: CqlType::Native(input),
                        to,
                    },
                    CqlType::Native(to),
                ),
            }
        }
        Selector::Term(term) => {
            let ty = values::infer_type(term).unwrap_or(CqlType::Native(NativeType::Varchar));
            let b = match values::eval(term, &ty, "selector", binds)? {
                Bound::Value(b) => Some(b),
                _ => None,
            };
            (Sel::Constant(b), ty)
        }
        Selector::TypeHint { ty, selector } => {
            let ty_expr = ty;
            let hinted = values::resolve_type(ty, None)?;
            match &**selector {
                // A hinted literal takes the hinted type: `(bigint)3` is a bigint.
                Selector::Term(term) => {
                    let b = match values::eval(term, &hinted, "selector", binds)? {
                        Bound::Value(b) => Some(b),
                        _ => None,
                    };
                    (Sel::Constant(b), hinted)
                }
                other => {
                    let (sel, ty) = compile_one(t, other, binds)?;
                    let assignable = ty == hinted
                        || matches!(&hinted, CqlType::Native(n) if cast::value_compatible(*n, &ty));
                    if !assignable {
                        let shown = format!("({}){}", ty_text(ty_expr), selector_name(other));
                        return Err(ExecError::Invalid(format!(
                            "Cannot assign value {shown} to {shown} of type {hinted}"
                        )));
                    }
                    (sel, ty)
                }
            }
        }
        Selector::Field { selector, field } => {
            let (inner, ty) = compile_one(t, selector, binds)?;
            let CqlType::Udt { def, .. } = &ty else {
                return Err(ExecError::Invalid(format!(
                    "Invalid field selection: {} of type {ty} is not a user type",
                    selector_name(selector)
                )));
            };
            let index = def
                .fields
                .iter()
                .position(|(n, _)| n == &field.name)
                .ok_or_else(|| {
                    ExecError::Invalid(format!(
                        "{} of type {} has no field {}",
                        selector_name(selector),
                        def.name,
                        field.name
                    ))
                })?;
            let fty = def.fields[index].1.clone();
            (
                Sel::Field {
                    inner: Box::new(inner),
                    index,
                    udt: ty.clone(),
                },
                fty,
            )
        }
        Selector::Binary { op, left, right } => {
            let (l, lt) = compile_one(t, left, binds)?;
            let (r, rt) = compile_one(t, right, binds)?;
            let out = arith::result_type(&lt, &rt).ok_or_else(|| {
                ExecError::Invalid(format!(
                    "the '{} {} {}' operation is not supported between {} and {}",
                    lt,
                    "op",
                    rt,
                    selector_name(left),
                    selector_name(right)
                ))
            })?;
            (
                Sel::Arith {
                    op: *op,
                    left: Box::new(l),
                    right: Box::new(r),
                    lt,
                    rt,
                },
                out,
            )
        }
        Selector::Slice { selector, from, to } => {
            let (inner, coll) = compile_one(t, selector, binds)?;
            let key_ty = match &coll {
                CqlType::Set { element, .. } => (**element).clone(),
                CqlType::Map { key, .. } => (**key).clone(),
                other => {
                    return Err(ExecError::Invalid(format!(
                        "Slice selection is only allowed on sets and maps, but {} is a {other}",
                        selector_name(selector)
                    )))
                }
            };
            let bound = |term: &Option<helenus_cql::ast::Term>| -> ExecResult<Option<Bytes>> {
                Ok(match term {
                    Some(term) => {
                        match values::eval(term, &key_ty, &selector_name(selector), binds)? {
                            Bound::Value(b) => Some(b),
                            _ => None,
                        }
                    }
                    None => None,
                })
            };
            let (from, to) = (bound(from)?, bound(to)?);
            (
                Sel::Slice {
                    inner: Box::new(inner),
                    coll: coll.clone(),
                    from,
                    to,
                },
                coll,
            )
        }
        Selector::Element { selector, key } => {
            let (inner, coll) = compile_one(t, selector, binds)?;
            let (key_ty, out) = match &coll {
                CqlType::Set { element, .. } => ((**element).clone(), (**element).clone()),
                CqlType::Map { key, value, .. } => ((**key).clone(), (**value).clone()),
                other => {
                    return Err(ExecError::Invalid(format!(
                        "Element selection is only allowed on sets and maps, but {} is a {other}",
                        selector_name(selector)
                    )))
                }
            };
            let key = match values::eval(key, &key_ty, &selector_name(selector), binds)? {
                Bound::Value(b) => Some(b),
                _ => None,
            };
            (
                Sel::Element {
                    inner: Box::new(inner),
                    coll,
                    key,
                },
                out,
            )
        }
        Selector::Negate(inner) => {
            let (s, ty) = compile_one(t, inner, binds)?;
            (Sel::Negate(Box::new(s)), ty)
        }
        other => {
            return Err(ExecError::Invalid(format!(
                "Unsupported selector {}",
                selector_name(other)
            )));
        }
    })
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
pub fn eval(sel: &Sel, ty: &CqlType, row: &Row, now_s: i64) -> ExecResult<Option<Bytes>> {
    Ok(match sel {
        Sel::Column(i) => row.cells.get(*i).cloned().flatten(),
        Sel::WriteTime(i) => row
            .meta
            .get(*i)
            .copied()
            .flatten()
            .map(|m| serialize(&CqlValue::Bigint(m.timestamp_us))),
        Sel::Ttl(i) => row.meta.get(*i).copied().flatten().and_then(|m| {
            if m.ttl_s == 0 {
                None
            } else {
                Some(serialize(&CqlValue::Int(
                    (m.expires_at_s - now_s).max(0) as i32
                )))
            }
        }),
        Sel::WriteTimes(i) | Sel::Ttls(i) => {
            row.element_meta.get(*i).cloned().flatten().map(|metas| {
                let mut out = bytes::BytesMut::new();
                out.put_i32(metas.len() as i32);
                for m in metas {
                    if matches!(sel, Sel::WriteTimes(_)) {
                        out.put_i32(8);
                        out.put_i64(m.timestamp_us);
                    } else if m.ttl_s == 0 {
                        out.put_i32(-1);
                    } else {
                        out.put_i32(4);
                        out.put_i32((m.expires_at_s - now_s).max(0) as i32);
                    }
                }
                out.freeze()
            })
        }
        Sel::MaxWriteTimeOf(i) => row
            .element_meta
            .get(*i)
            .cloned()
            .flatten()
            .and_then(|metas| metas.iter().map(|m| m.timestamp_us).max())
            .map(|ts| serialize(&CqlValue::Bigint(ts))),
        Sel::Token(_) => Some(serialize(&CqlValue::Bigint(row.token))),
        Sel::Field { inner, index, udt } => {
            let b = eval(inner, udt, row, now_s)?;
            match decode(udt, &b)? {
                Some(CqlValue::Udt(fields)) => fields
                    .get(*index)
                    .and_then(|(_, v)| v.as_ref())
                    .map(serialize),
                _ => None,
            }
        }
        Sel::Arith {
            op,
            left,
            right,
            lt,
            rt,
        } => {
            let l = decode(lt, &eval(left, lt, row, now_s)?)?;
            let r = decode(rt, &eval(right, rt, row, now_s)?)?;
            match (l, r) {
                (Some(l), Some(r)) => {
                    arith::apply(*op, &l, &r, (lt, rt), ty)?.map(|v| serialize(&v))
                }
                _ => None,
            }
        }
        Sel::Negate(inner) => match decode(ty, &eval(inner, ty, row, now_s)?)? {
            Some(v) => arith::apply(
                helenus_cql::ast::ArithOp::Sub,
                &CqlValue::Tinyint(0),
                &v,
                (ty, ty),
                ty,
            )?
            .map(|v| serialize(&v)),
            None => None,
        },
        Sel::Slice {
            inner,
            coll,
            from,
            to,
        } => {
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
            match decode(coll, &eval(inner, coll, row, now_s)?)? {
                Some(CqlValue::Set(items)) => {
                    let kept: Vec<CqlValue> = items.into_iter().filter(|v| inside(v)).collect();
                    (!kept.is_empty()).then(|| serialize(&CqlValue::Set(kept)))
                }
                Some(CqlValue::Map(entries)) => {
                    let kept: Vec<(CqlValue, CqlValue)> =
                        entries.into_iter().filter(|(k, _)| inside(k)).collect();
                    (!kept.is_empty()).then(|| serialize(&CqlValue::Map(kept)))
                }
                _ => None,
            }
        }
        Sel::Element { inner, coll, key } => {
            let Some(key) = key else { return Ok(None) };
            match decode(coll, &eval(inner, coll, row, now_s)?)? {
                Some(CqlValue::Set(items)) => {
                    items.into_iter().map(|v| serialize(&v)).find(|b| b == key)
                }
                Some(CqlValue::Map(entries)) => entries
                    .into_iter()
                    .find(|(k, _)| serialize(k) == *key)
                    .map(|(_, v)| serialize(&v)),
                _ => None,
            }
        }
        Sel::ToJson { inner, ty: ity } => {
            let b = eval(inner, ity, row, now_s)?;
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
                let b = eval(a, t, row, now_s)?;
                vals.push(decode(t, &b)?);
            }
            functions::call(name, &vals)?.map(|v| serialize(&v))
        }
        Sel::Cast {
            inner,
            from,
            input,
            to,
        } => {
            // The argument's bytes are handed to the matched signature as they are.
            let b = eval(inner, from, row, now_s)?;
            match decode(input, &b)? {
                None => None,
                Some(v) => Some(serialize(&cast::apply(&v, *to)?)),
            }
        }
        Sel::CountStar | Sel::Agg { .. } => {
            let _ = ty;
            None
        }
    })
}

fn numeric_rank(t: &CqlType) -> Option<u8> {
    Some(match t {
        CqlType::Native(NativeType::Tinyint) => 0,
        CqlType::Native(NativeType::Smallint) => 1,
        CqlType::Native(NativeType::Int) => 2,
        CqlType::Native(NativeType::Bigint) | CqlType::Native(NativeType::Counter) => 3,
        CqlType::Native(NativeType::Float) => 4,
        CqlType::Native(NativeType::Double) => 5,
        _ => return None,
    })
}
