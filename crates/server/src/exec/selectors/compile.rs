//! Compiling a SELECT's projection into [`Sel`] trees, once per prepared statement: column
//! lookups, type checks and constant folding happen here, not per row.

use super::super::arith;
use super::super::cast;
use super::super::error::{ExecError, ExecResult};
use super::super::functions;
use super::super::values::{self, Binds, Bound};
use super::cell_meta::MetaFn;
use super::{AggKind, Compiled, OutColumn, Sel};
use bytes::Bytes;
use helenus_cql::ast::{ArithOp, CqlTypeExpr, Projection, Selector, Term};
use helenus_schema::{ColumnKind, TableMeta};
use helenus_types::{CqlType, NativeType};

pub(super) fn col_index(t: &TableMeta, name: &str) -> ExecResult<usize> {
    t.column_index(name).ok_or_else(|| {
        ExecError::Invalid(format!(
            "Undefined column name {name} in table {}.{}",
            t.keyspace, t.name
        ))
    })
}

pub(super) fn selector_name(s: &Selector) -> String {
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
pub(super) fn as_term(s: &Selector) -> Option<helenus_cql::ast::Term> {
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
                            | T::Bind(_)
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
    let has_aggregate = columns.iter().any(|c| {
        matches!(c.sel, Sel::Agg { .. } | Sel::CountStar) || super::has_nested_agg(&c.sel)
    });
    let result_columns: std::sync::Arc<[(String, CqlType)]> = columns
        .iter()
        .map(|c| (c.name.clone(), c.ty.clone()))
        .collect();
    let specs = helenus_protocol::ColumnSpec::of_table(&t.keyspace, &t.name, &result_columns);
    Ok(Compiled {
        columns,
        has_aggregate,
        result_columns,
        wire_columns: helenus_protocol::EncodedColumnSpecs::new(&specs).ok(),
    })
}

/// One selector outside the projection (a GROUP BY function).
pub fn compile_selector(t: &TableMeta, s: &Selector) -> ExecResult<(Sel, CqlType)> {
    compile_one(t, s, &Binds::none())
}

pub(super) fn compile_one(
    t: &TableMeta,
    s: &Selector,
    binds: &Binds<'_>,
) -> ExecResult<(Sel, CqlType)> {
    Ok(match s {
        Selector::Column(id) => {
            let i = col_index(t, &id.name)?;
            (Sel::Column(i), t.columns[i].cql_type.clone())
        }
        Selector::CountStar => (Sel::CountStar, bigint()),
        Selector::WriteTime(inner) | Selector::MaxWriteTime(inner) | Selector::Ttl(inner) => {
            compile_cell_meta(t, s, inner, binds)?
        }
        Selector::FunctionCall { name, args } => compile_call(t, &name.name.name, args, binds)?,
        Selector::Cast {
            selector,
            ty,
            written,
        } => compile_cast(t, selector, ty, written, binds)?,
        Selector::Term(term) => {
            let ty = values::infer_type(term).unwrap_or(CqlType::Native(NativeType::Varchar));
            (Sel::Constant(constant(term, &ty, "selector", binds)?), ty)
        }
        Selector::TypeHint { ty, selector } => compile_type_hint(t, ty, selector, binds)?,
        Selector::Field { selector, field } => compile_field(t, selector, &field.name, binds)?,
        Selector::Binary { op, left, right } => compile_arith(t, *op, left, right, binds)?,
        Selector::Slice { selector, from, to } => compile_slice(t, selector, from, to, binds)?,
        Selector::Element { selector, key } => compile_element(t, selector, key, binds)?,
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

pub(super) fn bigint() -> CqlType {
    CqlType::Native(NativeType::Bigint)
}

/// A literal evaluated once, at compile time; null and unset both select null.
pub(super) fn constant(
    term: &Term,
    ty: &CqlType,
    receiver: &str,
    binds: &Binds<'_>,
) -> ExecResult<Option<Bytes>> {
    if binds.planning && crate::exec::key_values::has_bind(term) {
        // Bound at execution, when the selection is compiled again with the values.
        return Ok(None);
    }
    Ok(match values::eval(term, ty, receiver, binds)? {
        Bound::Value(b) => Some(b),
        _ => None,
    })
}

/// `writetime(x)`, `maxwritetime(x)` and `ttl(x)` of a column or part of one (cell_meta.rs).
fn compile_cell_meta(
    t: &TableMeta,
    s: &Selector,
    inner: &Selector,
    binds: &Binds<'_>,
) -> ExecResult<(Sel, CqlType)> {
    let func = match s {
        Selector::Ttl(_) => MetaFn::Ttl,
        Selector::MaxWriteTime(_) => MetaFn::MaxWriteTime,
        _ => MetaFn::WriteTime,
    };
    let (compiled, _) = compile_one(t, inner, binds)?;
    super::cell_meta::compile(t, func, compiled, &selector_name(inner))
}

/// A function call: `token`, an aggregate, `toJson` or a scalar function.
fn compile_call(
    t: &TableMeta,
    name: &str,
    args: &[Selector],
    binds: &Binds<'_>,
) -> ExecResult<(Sel, CqlType)> {
    let fname = functions::canonical_name(name);
    if fname == "token" {
        if let Some(terms) = args.iter().map(as_term).collect::<Option<Vec<_>>>() {
            return super::token::literal_token(t, &terms, binds);
        }
        return super::token::compile_token(t, fname, args);
    }
    if let Some(kind) = aggregate_kind(&fname) {
        return compile_aggregate(t, &fname, kind, args, binds);
    }
    if fname == "tojson" {
        let [arg] = args else {
            return Err(ExecError::Invalid(format!(
                "toJson() only accepts one argument ({} given)",
                args.len()
            )));
        };
        if matches!(arg, Selector::Term(term) if crate::exec::key_values::has_bind(term)) {
            return Err(ExecError::Invalid(
                "Cannot infer type of argument ? in call to function system.tojson(any): use type casts to disambiguate".into(),
            ));
        }
        let (inner, ty) = compile_one(t, arg, binds)?;
        return Ok((
            Sel::ToJson {
                inner: Box::new(inner),
                ty,
            },
            CqlType::Native(NativeType::Varchar),
        ));
    }
    compile_scalar_call(t, fname, args, binds)
}

fn aggregate_kind(fname: &str) -> Option<AggKind> {
    match fname {
        "count" => Some(AggKind::Count),
        "min" => Some(AggKind::Min),
        "max" => Some(AggKind::Max),
        "sum" => Some(AggKind::Sum),
        "avg" => Some(AggKind::Avg),
        _ => None,
    }
}

fn compile_aggregate(
    t: &TableMeta,
    fname: &str,
    kind: AggKind,
    args: &[Selector],
    binds: &Binds<'_>,
) -> ExecResult<(Sel, CqlType)> {
    let [arg] = args else {
        return Err(ExecError::Invalid(format!("Invalid number of arguments in call to function system.{fname}: 1 required but {} provided", args.len())));
    };
    if kind == AggKind::Count {
        if let Selector::Term(_) = arg {
            return Ok((Sel::CountStar, bigint()));
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
        (AggKind::Count, _) => bigint(),
        (AggKind::Min | AggKind::Max, CqlType::Native(NativeType::Timeuuid)) if !descending => {
            CqlType::Custom(functions::LEGACY_TIMEUUID.into())
        }
        _ => ty.clone(),
    };
    if matches!(inner, Sel::Agg { .. } | Sel::CountStar) {
        return Err(ExecError::Invalid(
            "aggregate functions cannot be used as arguments of aggregate functions".into(),
        ));
    }
    Ok((
        Sel::Agg {
            kind,
            arg: Box::new(inner),
            ty,
        },
        out_ty,
    ))
}

fn compile_scalar_call(
    t: &TableMeta,
    fname: String,
    args: &[Selector],
    binds: &Binds<'_>,
) -> ExecResult<(Sel, CqlType)> {
    // A vector literal passed to a similarity function takes the other argument's type.
    let vector_ty = if fname.starts_with("similarity_") {
        args.iter()
            .filter(|a| as_term(a).is_none())
            .map(|a| compile_one(t, a, binds).map(|(_, ty)| ty))
            .collect::<ExecResult<Vec<_>>>()?
            .into_iter()
            .find(|ty| matches!(ty, CqlType::Vector { .. }))
    } else {
        None
    };
    // A bind marker takes the type the function declares for it.
    let mut own = Vec::with_capacity(args.len());
    for a in args {
        own.push(match as_term(a) {
            Some(term) => values::infer_type(&term),
            None => Some(compile_one(t, a, binds)?.1),
        });
    }
    let markers: Vec<bool> = args
        .iter()
        .map(|a| matches!(a, Selector::Term(Term::Bind(_))))
        .collect();
    let declared = functions::declared_types(&fname, &own, &markers)?;
    let mut sels = Vec::new();
    let mut types: Vec<CqlType> = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let literal_ty = match (&vector_ty, fname.as_str(), i) {
            (Some(vt), _, _) => Some(vt.clone()),
            _ if markers[i] => declared[i].clone(),
            // floor(t, 1h, '2016-09-01'): the duration and the start are typed by the call.
            (None, "floor", 1) => Some(CqlType::Native(NativeType::Duration)),
            (None, "floor", 2) => types.first().map(functions::floor_start_type),
            _ => None,
        };
        let (s, ty) = match (as_term(a), literal_ty) {
            (Some(term), Some(lt)) => (Sel::Constant(constant(&term, &lt, "selector", binds)?), lt),
            _ => compile_one(t, a, binds)?,
        };
        sels.push(s);
        // `max(timeuuid)` reports the legacy class; functions take it as the timeuuid it is.
        types.push(match ty {
            CqlType::Custom(c) if c == functions::LEGACY_TIMEUUID => {
                CqlType::Native(NativeType::Timeuuid)
            }
            ty => ty,
        });
    }
    let rt = functions::resolve(&fname, &types)?;
    Ok((
        Sel::Func {
            name: fname,
            args: sels,
            arg_types: types,
        },
        rt,
    ))
}

fn compile_cast(
    t: &TableMeta,
    selector: &Selector,
    ty: &CqlTypeExpr,
    written: &str,
    binds: &Binds<'_>,
) -> ExecResult<(Sel, CqlType)> {
    let (inner, from) = compile_one(t, selector, binds)?;
    let CqlType::Native(to) = values::resolve_type(ty, None)? else {
        return Err(ExecError::Invalid(format!("Cannot cast to {written}")));
    };
    Ok(
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
        },
    )
}

/// `(type)selector`: a hinted literal takes the hinted type (`(bigint)3` is a bigint); any other
/// selector must already be assignable to it.
fn compile_type_hint(
    t: &TableMeta,
    ty_expr: &CqlTypeExpr,
    selector: &Selector,
    binds: &Binds<'_>,
) -> ExecResult<(Sel, CqlType)> {
    let hinted = values::resolve_type(ty_expr, None)?;
    if let Selector::Term(term) = selector {
        return Ok((
            Sel::Constant(constant(term, &hinted, "selector", binds)?),
            hinted,
        ));
    }
    let (sel, ty) = compile_one(t, selector, binds)?;
    let assignable =
        ty == hinted || matches!(&hinted, CqlType::Native(n) if cast::value_compatible(*n, &ty));
    if !assignable {
        let shown = format!("({}){}", ty_text(ty_expr), selector_name(selector));
        return Err(ExecError::Invalid(format!(
            "Cannot assign value {shown} to {shown} of type {hinted}"
        )));
    }
    Ok((sel, ty))
}

fn compile_field(
    t: &TableMeta,
    selector: &Selector,
    field: &str,
    binds: &Binds<'_>,
) -> ExecResult<(Sel, CqlType)> {
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
        .position(|(n, _)| n == field)
        .ok_or_else(|| {
            ExecError::Invalid(format!(
                "{} of type {} has no field {}",
                selector_name(selector),
                def.name,
                field
            ))
        })?;
    let fty = def.fields[index].1.clone();
    Ok((
        Sel::Field {
            inner: Box::new(inner),
            index,
            udt: ty.clone(),
        },
        fty,
    ))
}

fn compile_arith(
    t: &TableMeta,
    op: ArithOp,
    left: &Selector,
    right: &Selector,
    binds: &Binds<'_>,
) -> ExecResult<(Sel, CqlType)> {
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
    Ok((
        Sel::Arith {
            op,
            left: Box::new(l),
            right: Box::new(r),
            lt,
            rt,
        },
        out,
    ))
}

fn compile_slice(
    t: &TableMeta,
    selector: &Selector,
    from: &Option<Term>,
    to: &Option<Term>,
    binds: &Binds<'_>,
) -> ExecResult<(Sel, CqlType)> {
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
    let bound = |term: &Option<Term>| -> ExecResult<Option<Bytes>> {
        match term {
            Some(term) => constant(term, &key_ty, &selector_name(selector), binds),
            None => Ok(None),
        }
    };
    let (from, to) = (bound(from)?, bound(to)?);
    Ok((
        Sel::Slice {
            inner: Box::new(inner),
            coll: coll.clone(),
            from,
            to,
        },
        coll,
    ))
}

fn compile_element(
    t: &TableMeta,
    selector: &Selector,
    key: &Term,
    binds: &Binds<'_>,
) -> ExecResult<(Sel, CqlType)> {
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
    let key = constant(key, &key_ty, &selector_name(selector), binds)?;
    Ok((
        Sel::Element {
            inner: Box::new(inner),
            coll,
            key,
        },
        out,
    ))
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use helenus_cql::ast::Statement;
    use helenus_schema::{KeyspaceKind, KeyspaceMeta};

    fn table() -> TableMeta {
        let ks = KeyspaceMeta::new("ks", KeyspaceKind::User, Default::default(), true);
        let ddl = "CREATE TABLE t (k int, c int, i int, b bigint, s text, m map<int, text>, PRIMARY KEY (k, c))";
        let Statement::CreateTable(c) = helenus_cql::parse(ddl).unwrap().statement else {
            panic!("not a CREATE TABLE")
        };
        crate::exec::ddl::build_table(&ks, &c).unwrap()
    }

    /// Compiles the projection of `SELECT <projection> FROM t`.
    fn compile_select(projection: &str) -> ExecResult<Compiled> {
        let Statement::Select(s) = helenus_cql::parse(&format!("SELECT {projection} FROM t"))
            .unwrap()
            .statement
        else {
            panic!("not a SELECT")
        };
        compile(&table(), &s.projection, &Binds::none())
    }

    fn only(projection: &str) -> OutColumn {
        let mut c = compile_select(projection).unwrap();
        assert_eq!(c.columns.len(), 1);
        c.columns.remove(0)
    }

    fn invalid_message(projection: &str) -> String {
        match compile_select(projection) {
            Err(ExecError::Invalid(m)) => m,
            other => panic!("{projection}: expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn arithmetic_widens_to_the_larger_operand_type() {
        let c = only("i + b");
        assert_eq!(c.ty, CqlType::Native(NativeType::Bigint));
        assert!(matches!(
            c.sel,
            Sel::Arith {
                op: ArithOp::Add,
                ..
            }
        ));
        assert_eq!(c.name, "i + b");
    }

    #[test]
    fn a_cast_to_the_arguments_own_type_is_dropped_name_included() {
        let c = only("cast(i as int)");
        assert!(matches!(c.sel, Sel::Column(_)));
        assert_eq!(c.name, "i");
        let c = only("cast(i as text)");
        assert!(matches!(
            c.sel,
            Sel::Cast {
                to: NativeType::Varchar,
                ..
            }
        ));
        assert_eq!(c.ty, CqlType::Native(NativeType::Varchar));
    }

    #[test]
    fn token_of_the_partition_key_reads_the_rows_token() {
        let c = only("token(k)");
        assert!(matches!(c.sel, Sel::Token(ref idx) if idx == &[0]));
        assert!(invalid_message("token(s)").contains("token() arguments"));
    }

    #[test]
    fn scalar_function_calls_resolve_their_return_type() {
        let c = only("blobasbigint(bigintasblob(b))");
        assert_eq!(c.ty, CqlType::Native(NativeType::Bigint));
        assert!(matches!(c.sel, Sel::Func { ref name, .. } if name == "blobasbigint"));
    }

    #[test]
    fn aggregates_check_their_argument() {
        let c = compile_select("sum(i), count(1)").unwrap();
        assert!(c.has_aggregate);
        assert!(matches!(c.columns[1].sel, Sel::CountStar));
        assert!(invalid_message("sum(s)").starts_with("Invalid call to function sum"));
        assert!(invalid_message("max(min(i))").contains("cannot be used as arguments"));
    }

    #[test]
    fn writetime_refuses_primary_key_columns() {
        assert_eq!(
            invalid_message("writetime(c)"),
            "Cannot use selection function writetime on PRIMARY KEY part c"
        );
        assert!(matches!(only("ttl(s)").sel, Sel::CellMeta(_)));
    }

    #[test]
    fn element_selection_takes_the_map_value_type() {
        let c = only("m[1]");
        assert_eq!(c.ty, CqlType::Native(NativeType::Varchar));
        assert!(matches!(c.sel, Sel::Element { key: Some(_), .. }));
        assert!(invalid_message("s[1]").starts_with("Element selection is only allowed"));
    }
}
