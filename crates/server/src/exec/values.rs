//! Terms to values: literals converted by the type of what receives them (as Cassandra types a
//! literal by its receiver), bind markers validated against their receiver's type, function calls
//! and type hints evaluated.

use super::error::{ExecError, ExecResult};
use super::functions;
use super::sorted::{sort_dedup, sort_dedup_map};
use bytes::{Bytes, BytesMut};
use helenus_cql::ast::{CqlTypeExpr, Term};
use helenus_protocol as proto;
use helenus_types::{CqlType, CqlValue, NativeType};

/// A value ready to be written or compared.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    Null,
    /// Protocol v4+ "unset": leave the column as it is.
    Unset,
    Value(Bytes),
}

/// The bound values of one execution, positional (named values are mapped to positions first).
pub struct Binds<'a> {
    pub values: &'a [proto::Value],
    /// The statement's time, for `now()`, `currentTimestamp()` and the like in its terms.
    pub now: crate::exec_state::Now<'a>,
    /// Planning a prepared statement: its markers have no values yet and read as unset.
    pub planning: bool,
}

impl Binds<'static> {
    /// No bound values, on the system clock: terms planned outside any statement's run.
    pub fn none() -> Binds<'static> {
        Binds {
            values: &[],
            now: crate::exec_state::Now::system(),
            planning: false,
        }
    }

    /// No values yet: a statement planned before it is bound, whose markers read as unset.
    pub fn planning() -> Binds<'static> {
        Binds {
            planning: true,
            ..Binds::none()
        }
    }
}

static UNSET: proto::Value = proto::Value::Unset;

impl Binds<'_> {
    fn get(&self, index: usize) -> ExecResult<&proto::Value> {
        if self.planning && index >= self.values.len() {
            return Ok(&UNSET);
        }
        self.values.get(index).ok_or_else(|| {
            ExecError::Invalid(format!(
                "There were {} markers(?) in CQL but {} bound variables",
                index + 1,
                self.values.len()
            ))
        })
    }
}

pub fn serialize(v: &CqlValue) -> Bytes {
    let mut out = BytesMut::new();
    helenus_types::serialize(v, &mut out);
    out.freeze()
}

/// A literal's kind as Cassandra names it in "Invalid STRING constant" errors.
fn literal_kind(t: &Term) -> &'static str {
    match t {
        Term::String(_) => "STRING",
        Term::Integer(_) => "INTEGER",
        Term::Float(_) => "FLOAT",
        Term::Bool(_) => "BOOLEAN",
        Term::Uuid(_) => "UUID",
        Term::Blob(_) => "HEX",
        Term::Duration(_) => "DURATION",
        _ => "",
    }
}

/// Which literal kinds a native type accepts (Cassandra's `Constants.Type.testAssignment`).
fn literal_accepted(kind: &str, t: NativeType) -> bool {
    use NativeType::*;
    match kind {
        "STRING" => {
            matches!(
                t,
                Ascii | Varchar | Timestamp | Date | Time | Inet | Uuid | Timeuuid | Duration
            )
        }
        "INTEGER" => matches!(
            t,
            Bigint
                | Counter
                | Decimal
                | Double
                | Float
                | Int
                | Smallint
                | Tinyint
                | Varint
                | Timestamp
                | Date
                | Time
        ),
        "FLOAT" => matches!(t, Decimal | Double | Float),
        "BOOLEAN" => t == Boolean,
        "UUID" => matches!(t, Uuid | Timeuuid),
        // Cassandra's preferred type for a HEX constant is `ByteType` (not `BytesType`), so a
        // tinyint receiver is an exact match for any hex constant, `0x` included.
        "HEX" => matches!(t, Blob | Tinyint),
        "DURATION" => t == Duration,
        _ => false,
    }
}

/// The default type of a literal with no receiver (function arguments, selectors).
pub fn literal_default_type(t: &Term) -> Option<CqlType> {
    Some(CqlType::Native(match t {
        Term::String(_) => NativeType::Varchar,
        // Cassandra prefers the smallest of int, bigint and varint that holds the literal.
        Term::Integer(text) if text.parse::<i32>().is_ok() => NativeType::Int,
        Term::Integer(text) if text.parse::<i64>().is_ok() => NativeType::Bigint,
        Term::Integer(_) => NativeType::Varint,
        Term::Float(_) => NativeType::Double,
        Term::Bool(_) => NativeType::Boolean,
        Term::Uuid(_) => NativeType::Uuid,
        Term::Blob(_) => NativeType::Blob,
        Term::Duration(_) => NativeType::Duration,
        _ => return None,
    }))
}

pub(crate) fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect()
}

/// Converts a CQL type expression from the AST to a type, resolving user types in `keyspace`.
/// Refuses a type nested past `MAX_TYPE_NESTING` as stored (freezing and user types' fields
/// add levels the written type does not show): the schema loader could not read it back.
pub fn resolve_type(
    expr: &CqlTypeExpr,
    ks: Option<&helenus_schema::KeyspaceMeta>,
) -> ExecResult<CqlType> {
    let ty = resolve_type_unchecked(expr, ks)?;
    let depth = ty.nesting_depth();
    if depth > helenus_types::MAX_TYPE_NESTING {
        return Err(ExecError::Invalid(format!(
            "type {expr} is nested {depth} levels deep; at most {} are supported",
            helenus_types::MAX_TYPE_NESTING
        )));
    }
    Ok(ty)
}

fn resolve_type_unchecked(
    expr: &CqlTypeExpr,
    ks: Option<&helenus_schema::KeyspaceMeta>,
) -> ExecResult<CqlType> {
    Ok(match expr {
        CqlTypeExpr::Native(n) => CqlType::Native(*n),
        CqlTypeExpr::List(e) => CqlType::List {
            element: Box::new(resolve_type_unchecked(e, ks)?),
            frozen: false,
        },
        CqlTypeExpr::Set(e) => CqlType::Set {
            element: Box::new(resolve_type_unchecked(e, ks)?),
            frozen: false,
        },
        CqlTypeExpr::Map(k, v) => CqlType::Map {
            key: Box::new(resolve_type_unchecked(k, ks)?),
            value: Box::new(resolve_type_unchecked(v, ks)?),
            frozen: false,
        },
        CqlTypeExpr::Tuple(items) => CqlType::Tuple(
            items
                .iter()
                .map(|i| resolve_type_unchecked(i, ks).map(|t| t.frozen()))
                .collect::<ExecResult<_>>()?,
        ),
        CqlTypeExpr::Vector(e, n) => {
            if *n == 0 {
                return Err(ExecError::Invalid(
                    "vectors may only have positive dimensions; given 0".into(),
                ));
            }
            // The element keeps its type as written: Cassandra reports `vector<list<int>, 2>`
            // and `vector<frozen<list<int>>, 2>` differently (the value is frozen either way).
            CqlType::Vector {
                element: Box::new(resolve_type_unchecked(e, ks)?),
                dimension: *n,
            }
        }
        CqlTypeExpr::Frozen(inner) => freeze_deep(resolve_type_unchecked(inner, ks)?),
        CqlTypeExpr::UserDefined(q) => {
            let ks_meta =
                ks.ok_or_else(|| ExecError::Invalid(format!("Unknown type {}", q.name.name)))?;
            if let Some(k) = &q.keyspace {
                if k.name != ks_meta.name {
                    return Err(ExecError::Invalid(format!(
                        "Statement on keyspace {} cannot refer to a user type in keyspace {}; user types can only be used in the keyspace they are defined in",
                        ks_meta.name, k.name
                    )));
                }
            }
            let def = ks_meta.types.get(&q.name.name).ok_or_else(|| {
                ExecError::Invalid(format!("Unknown type {}.{}", ks_meta.name, q.name.name))
            })?;
            CqlType::Udt {
                def: Box::new((**def).clone()),
                frozen: false,
            }
        }
        CqlTypeExpr::Custom(c) => {
            native_of_marshal(c).map_or_else(|| CqlType::Custom(c.clone()), CqlType::Native)
        }
    })
}

/// The native type a custom type's Java class stands for (`'org.apache.cassandra.db.marshal.BytesType'`
/// is a blob), as Cassandra resolves them.
fn native_of_marshal(class: &str) -> Option<NativeType> {
    let short = class.strip_prefix("org.apache.cassandra.db.marshal.")?;
    Some(match short {
        "AsciiType" => NativeType::Ascii,
        "LongType" => NativeType::Bigint,
        "BytesType" => NativeType::Blob,
        "BooleanType" => NativeType::Boolean,
        "CounterColumnType" => NativeType::Counter,
        "SimpleDateType" => NativeType::Date,
        "DecimalType" => NativeType::Decimal,
        "DoubleType" => NativeType::Double,
        "DurationType" => NativeType::Duration,
        "FloatType" => NativeType::Float,
        "InetAddressType" => NativeType::Inet,
        "Int32Type" => NativeType::Int,
        "ShortType" => NativeType::Smallint,
        "UTF8Type" => NativeType::Varchar,
        "TimeType" => NativeType::Time,
        "TimestampType" => NativeType::Timestamp,
        "TimeUUIDType" => NativeType::Timeuuid,
        "ByteType" => NativeType::Tinyint,
        "UUIDType" => NativeType::Uuid,
        "IntegerType" => NativeType::Varint,
        _ => return None,
    })
}

/// `frozen<...>` freezes the whole subtree, as Cassandra's `freeze()` does.
pub fn freeze_deep(t: CqlType) -> CqlType {
    match t {
        CqlType::List { element, .. } => CqlType::List {
            element: Box::new(freeze_deep(*element)),
            frozen: true,
        },
        CqlType::Set { element, .. } => CqlType::Set {
            element: Box::new(freeze_deep(*element)),
            frozen: true,
        },
        CqlType::Map { key, value, .. } => CqlType::Map {
            key: Box::new(freeze_deep(*key)),
            value: Box::new(freeze_deep(*value)),
            frozen: true,
        },
        CqlType::Udt { def, .. } => CqlType::Udt { def, frozen: true },
        other => other,
    }
}

/// Evaluates `term` for a receiver of type `ty` named `receiver` (for error messages).
pub fn eval(term: &Term, ty: &CqlType, receiver: &str, binds: &Binds<'_>) -> ExecResult<Bound> {
    match term {
        Term::Null => Ok(Bound::Null),
        Term::Bind(m) => match binds.get(m.index)? {
            proto::Value::Null => Ok(Bound::Null),
            proto::Value::Unset => Ok(Bound::Unset),
            proto::Value::Bytes(b) => {
                helenus_types::validate(ty, b).map_err(|e| {
                    ExecError::Invalid(format!("Exception while binding column {receiver}: {e}"))
                })?;
                Ok(Bound::Value(b.clone()))
            }
        },
        _ => Ok(match to_value(term, ty, receiver, binds)? {
            Some(v) => Bound::Value(serialize(&v)),
            None => Bound::Null,
        }),
    }
}

fn invalid_literal(term: &Term, receiver: &str, ty: &CqlType) -> ExecError {
    let text = match term {
        Term::String(s) => s.clone(),
        Term::Integer(s) | Term::Float(s) | Term::Uuid(s) | Term::Duration(s) => s.clone(),
        Term::Blob(s) => format!("0x{s}"),
        Term::Bool(b) => b.to_string(),
        _ => String::new(),
    };
    ExecError::Invalid(format!(
        "Invalid {} constant ({text}) for \"{receiver}\" of type {ty}",
        literal_kind(term)
    ))
}

/// Evaluates `term` to a decoded value (None = null) for a receiver of type `ty`.
pub fn to_value(
    term: &Term,
    ty: &CqlType,
    receiver: &str,
    binds: &Binds<'_>,
) -> ExecResult<Option<CqlValue>> {
    match term {
        Term::Null => Ok(None),
        Term::Bind(_) => match eval(term, ty, receiver, binds)? {
            Bound::Value(b) => helenus_types::deserialize(ty, &b)
                .map(Some)
                .map_err(|e| bad(e.to_string())),
            _ => Ok(None),
        },
        Term::String(_)
        | Term::Integer(_)
        | Term::Float(_)
        | Term::Bool(_)
        | Term::Uuid(_)
        | Term::Blob(_)
        | Term::Duration(_) => literal_value(term, ty, receiver),
        Term::List(items) => list_literal(items, ty, receiver, binds),
        Term::Set(items) => match ty {
            CqlType::Set { element, .. } => {
                let mut vals = elements(items, element, receiver, binds)?;
                sort_dedup(&mut vals, element);
                Ok(Some(CqlValue::Set(vals)))
            }
            _ => Err(bad(format!(
                "Invalid set literal for {receiver} of type {ty}"
            ))),
        },
        Term::Map(entries) => map_literal(entries, ty, receiver, binds),
        Term::EmptyBrace => match ty {
            CqlType::Set { .. } => Ok(Some(CqlValue::Set(Vec::new()))),
            CqlType::Map { .. } => Ok(Some(CqlValue::Map(Vec::new()))),
            CqlType::Udt { def, .. } => Ok(Some(CqlValue::Udt(
                def.fields.iter().map(|(n, _)| (n.clone(), None)).collect(),
            ))),
            _ => Err(bad(format!(
                "Invalid map literal for {receiver} of type {ty}"
            ))),
        },
        Term::Tuple(items) => tuple_literal(items, ty, receiver, binds),
        Term::Udt(fields) => udt_literal(fields, ty, receiver, binds),
        Term::TypeHint { ty: hint, term } => {
            let hinted = resolve_type(hint, None)?;
            if !hint_assignable(&hinted, ty) {
                return Err(bad(format!(
                    "Cannot assign value ({hint}){term} to {receiver} of type {ty}"
                )));
            }
            to_value(term, &hinted, receiver, binds)
        }
        Term::FunctionCall { name, args } => match &name.keyspace {
            // Native functions live in `system`; user-defined ones are disabled, as in
            // Cassandra's default configuration, so the call fails before its arguments run.
            Some(ks) if !ks.name.eq_ignore_ascii_case("system") => Err(bad(format!(
                "Unknown function {}.{} called",
                ks.name, name.name.name
            ))),
            _ => function_value(&name.name.name, args, ty, receiver, binds),
        },
        Term::Negate(inner) => match to_value(inner, ty, receiver, binds)? {
            Some(CqlValue::Int(x)) => Ok(Some(CqlValue::Int(x.wrapping_neg()))),
            Some(CqlValue::Bigint(x)) => Ok(Some(CqlValue::Bigint(x.wrapping_neg()))),
            Some(CqlValue::Double(x)) => Ok(Some(CqlValue::Double(-x))),
            Some(CqlValue::Float(x)) => Ok(Some(CqlValue::Float(-x))),
            Some(CqlValue::Smallint(x)) => Ok(Some(CqlValue::Smallint(x.wrapping_neg()))),
            Some(CqlValue::Tinyint(x)) => Ok(Some(CqlValue::Tinyint(x.wrapping_neg()))),
            None => Ok(None),
            Some(_) => Err(bad(format!("Cannot negate a value of type {ty}"))),
        },
        Term::Binary { op, left, right } => {
            let l = to_value(left, ty, receiver, binds)?;
            let r = to_value(right, ty, receiver, binds)?;
            arithmetic(*op, l, r)
        }
    }
}

fn bad(msg: String) -> ExecError {
    ExecError::Invalid(msg)
}

/// A string, number, boolean, UUID, blob or duration constant, checked against the receiver's
/// native type the way Cassandra's constant kinds are.
fn literal_value(term: &Term, ty: &CqlType, receiver: &str) -> ExecResult<Option<CqlValue>> {
    // Any constant is weakly assignable to a tuple in Cassandra: its text is parsed.
    if let (
        CqlType::Tuple(types),
        Term::String(text)
        | Term::Integer(text)
        | Term::Float(text)
        | Term::Uuid(text)
        | Term::Duration(text),
    ) = (ty, term)
    {
        return super::tuple_text::tuple_from_string(types, text).map(Some);
    }
    let CqlType::Native(native) = ty else {
        return Err(invalid_literal(term, receiver, ty));
    };
    if !literal_accepted(literal_kind(term), *native) {
        return Err(invalid_literal(term, receiver, ty));
    }
    let text = match term {
        Term::Blob(hex) => {
            let bytes =
                Bytes::from(decode_hex(hex).ok_or_else(|| invalid_literal(term, receiver, ty))?);
            if *native == NativeType::Blob {
                return Ok(Some(CqlValue::Blob(bytes)));
            }
            // Cassandra parses every hex constant with `BytesType` whatever the receiver and does
            // not validate the result: a tinyint gets the bytes as they are (`0x` is an empty
            // value, which a bound empty tinyint would not be).
            return Ok(Some(
                helenus_types::deserialize(ty, &bytes).unwrap_or(CqlValue::Blob(bytes)),
            ));
        }
        Term::Bool(b) => return Ok(Some(CqlValue::Boolean(*b))),
        Term::String(s) | Term::Integer(s) | Term::Float(s) | Term::Uuid(s) | Term::Duration(s) => {
            s
        }
        _ => return Err(invalid_literal(term, receiver, ty)),
    };
    helenus_types::from_string(ty, text).map(Some).map_err(|e| {
        if matches!(term, Term::String(_)) {
            bad(format!("Unable to coerce '{text}' to {}: {e}", ty_name(ty)))
        } else {
            bad(e.to_string())
        }
    })
}

/// `[..]`: a list, or a vector of exactly its dimension.
fn list_literal(
    items: &[Term],
    ty: &CqlType,
    receiver: &str,
    binds: &Binds<'_>,
) -> ExecResult<Option<CqlValue>> {
    match ty {
        CqlType::List { element, .. } => Ok(Some(CqlValue::List(elements(
            items, element, receiver, binds,
        )?))),
        CqlType::Vector { element, dimension } => {
            for item in items {
                if let Term::TypeHint { ty: hint, term } = item {
                    if !hint_assignable(&resolve_type(hint, None)?, element) {
                        return Err(bad(format!(
                            "Invalid vector literal for {receiver}: value ({hint}){term} is not of type {element}"
                        )));
                    }
                }
            }
            let vals = elements(items, element, receiver, binds)?;
            if vals.len() != *dimension as usize {
                return Err(bad(format!(
                    "Invalid vector literal for {receiver} of type {ty}; expected {dimension} elements, but given {}",
                    vals.len()
                )));
            }
            Ok(Some(CqlValue::Vector(vals)))
        }
        // `[..]` is not a set literal in CQL either; Cassandra reports it by receiver type.
        _ => Err(bad(format!(
            "Invalid list literal for {receiver} of type {ty}"
        ))),
    }
}

/// Whether a value hinted as `hinted` may be assigned to a receiver of type `receiver`: the same
/// native type or one whose bytes it reads (Cassandra's `isValueCompatibleWith`); `(text)'a'`
/// is not an ascii value.
fn hint_assignable(hinted: &CqlType, receiver: &CqlType) -> bool {
    match (hinted, receiver) {
        (CqlType::Native(h), CqlType::Native(r)) => {
            h == r || super::cast::value_compatible(*r, hinted)
        }
        _ => true,
    }
}

/// `{k: v, ..}`: a map, or a user type when the keys are field names.
fn map_literal(
    entries: &[(Term, Term)],
    ty: &CqlType,
    receiver: &str,
    binds: &Binds<'_>,
) -> ExecResult<Option<CqlValue>> {
    match ty {
        CqlType::Map { key, value, .. } => {
            let mut out = Vec::with_capacity(entries.len());
            for (k, v) in entries {
                let kv = to_value(k, key, receiver, binds)?
                    .ok_or_else(|| bad("null is not supported inside collections".into()))?;
                let vv = to_value(v, value, receiver, binds)?
                    .ok_or_else(|| bad("null is not supported inside collections".into()))?;
                out.push((kv, vv));
            }
            sort_dedup_map(&mut out, key);
            Ok(Some(CqlValue::Map(out)))
        }
        CqlType::Udt { def, .. } => {
            // `{a: 1}` parses as a map when the keys could be terms; treat identifiers as fields.
            let mut fields = Vec::new();
            for (k, v) in entries {
                let Term::String(name) = k else {
                    return Err(bad(format!(
                        "Invalid user type literal for {receiver} of type {}",
                        def.name
                    )));
                };
                fields.push((helenus_cql::ast::Ident::unquoted(name), v.clone()));
            }
            to_value(&Term::Udt(fields), ty, receiver, binds)
        }
        _ => Err(bad(format!(
            "Invalid map literal for {receiver} of type {ty}"
        ))),
    }
}

/// `(a, b, ..)`: missing trailing elements are null, extra ones an error.
fn tuple_literal(
    items: &[Term],
    ty: &CqlType,
    receiver: &str,
    binds: &Binds<'_>,
) -> ExecResult<Option<CqlValue>> {
    let CqlType::Tuple(types) = ty else {
        return Err(bad(format!(
            "Invalid tuple literal for {receiver} of type {ty}"
        )));
    };
    if items.len() > types.len() {
        return Err(bad(format!(
            "Invalid tuple literal for {receiver}: too many elements. Type {ty} expects {} but got {}",
            types.len(),
            items.len()
        )));
    }
    let mut out = Vec::new();
    for (i, t) in types.iter().enumerate() {
        out.push(match items.get(i) {
            Some(item) => to_value(item, t, receiver, binds)?,
            None => None,
        });
    }
    Ok(Some(CqlValue::Tuple(out)))
}

/// `{field: value, ..}` of a user type: unknown fields are an error, missing ones null.
fn udt_literal(
    fields: &[(helenus_cql::ast::Ident, Term)],
    ty: &CqlType,
    receiver: &str,
    binds: &Binds<'_>,
) -> ExecResult<Option<CqlValue>> {
    let CqlType::Udt { def, .. } = ty else {
        return Err(bad(format!(
            "Invalid user type literal for {receiver} of type {ty}"
        )));
    };
    for (f, _) in fields {
        if !def.fields.iter().any(|(n, _)| n == &f.name) {
            return Err(bad(format!(
                "Unknown field '{}' in value of user defined type {}",
                f.name, def.name
            )));
        }
    }
    let mut out = Vec::new();
    for (name, fty) in &def.fields {
        let v = match fields.iter().find(|(f, _)| &f.name == name) {
            Some((_, t)) => to_value(t, fty, receiver, binds)?,
            None => None,
        };
        out.push((name.clone(), v));
    }
    Ok(Some(CqlValue::Udt(out)))
}

/// A function call in a term, evaluated now: `fromJson`, `toJson` or a native function.
fn function_value(
    name: &str,
    args: &[Term],
    ty: &CqlType,
    receiver: &str,
    binds: &Binds<'_>,
) -> ExecResult<Option<CqlValue>> {
    match super::functions::canonical_name(name).as_str() {
        "fromjson" => from_json_call(&name.to_ascii_lowercase(), args, ty, receiver, binds),
        "tojson" => to_json_call(args, receiver, binds),
        _ => native_call(name, args, ty, receiver, binds),
    }
}

fn from_json_call(
    fname: &str,
    args: &[Term],
    ty: &CqlType,
    receiver: &str,
    binds: &Binds<'_>,
) -> ExecResult<Option<CqlValue>> {
    let [arg] = args else {
        return Err(bad(format!(
            "fromJson() only accepts one argument ({} given)",
            args.len()
        )));
    };
    let text = match to_value(arg, &CqlType::Native(NativeType::Varchar), receiver, binds)? {
        Some(CqlValue::Text(s)) | Some(CqlValue::Ascii(s)) => s,
        _ => return Ok(None),
    };
    // Text that is not JSON, or a value the type rejects, fails inside the function (0x1400).
    let failure = |message: String| ExecError::FunctionFailure {
        keyspace: "system".into(),
        function: fname.into(),
        arg_types: vec!["text".into()],
        message,
    };
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| failure(format!("Could not decode JSON string '{text}': {e}")))?;
    // Cassandra parses a duration outside the function's marshalling: a bad one is an invalid
    // request, not a function failure.
    if let (CqlType::Native(NativeType::Duration), serde_json::Value::String(s)) = (ty, &json) {
        return helenus_types::from_string(ty, s)
            .map(Some)
            .map_err(|_| bad(format!("Unable to convert '{s}' to a duration")));
    }
    super::json::from_json(ty, &json).map_err(|e| match e {
        ExecError::Invalid(m) => failure(format!(
            "org.apache.cassandra.serializers.MarshalException: {m}"
        )),
        other => other,
    })
}

fn to_json_call(args: &[Term], receiver: &str, binds: &Binds<'_>) -> ExecResult<Option<CqlValue>> {
    let [arg] = args else {
        return Err(bad(format!(
            "toJson() only accepts one argument ({} given)",
            args.len()
        )));
    };
    if matches!(arg, Term::Blob(h) if h.trim_start_matches("0x").is_empty()) {
        // Cassandra types an empty blob literal as tinyint here and fails on it.
        return Err(ExecError::Server("java.lang.NullPointerException: Cannot invoke \"java.lang.Byte.toString()\" because the return value of \"org.apache.cassandra.serializers.TypeSerializer.deserialize(java.nio.ByteBuffer)\" is null".into()));
    }
    let at = infer_type(arg).unwrap_or(CqlType::Native(NativeType::Varchar));
    let text = match to_value(arg, &at, receiver, binds)? {
        Some(v) => helenus_types::to_json(&v),
        None => "null".to_string(),
    };
    Ok(Some(CqlValue::Text(text)))
}

/// A native function over constant arguments; its result must be assignable to the receiver.
fn native_call(
    fname: &str,
    args: &[Term],
    ty: &CqlType,
    receiver: &str,
    binds: &Binds<'_>,
) -> ExecResult<Option<CqlValue>> {
    let mut vals = Vec::new();
    let mut types = Vec::new();
    let declared = param_types(fname, args)?;
    for (a, t) in args.iter().zip(declared) {
        let t = t.unwrap_or(CqlType::Native(NativeType::Varchar));
        vals.push(to_value(a, &t, receiver, binds)?);
        types.push(t);
    }
    let out = functions::call(fname, &vals, &binds.now)?;
    match (&out, functions::return_type(fname, &types)) {
        (Some(_), Some(rt)) if &rt != ty && !compatible(&rt, ty) => Err(bad(format!(
            "Type error: cannot assign result of function system.{fname} (type {rt}) to {receiver} (type {ty})"
        ))),
        // Bigints and timestamps are value compatible both ways (LongType / TimestampType):
        // the milliseconds carry over.
        (Some(CqlValue::Bigint(ms)), _) if *ty == CqlType::Native(NativeType::Timestamp) => {
            Ok(Some(CqlValue::Timestamp(*ms)))
        }
        (Some(CqlValue::Timestamp(ms)), _) if *ty == CqlType::Native(NativeType::Bigint) => {
            Ok(Some(CqlValue::Bigint(*ms)))
        }
        (Some(CqlValue::Timestamp(ms)), _) if *ty == CqlType::Native(NativeType::Varint) => Ok(
            Some(CqlValue::Varint(helenus_types::numeric::BigInt::from(*ms))),
        ),
        _ => Ok(out),
    }
}

fn compatible(a: &CqlType, b: &CqlType) -> bool {
    use NativeType::*;
    matches!(
        (a, b),
        (CqlType::Native(Bigint), CqlType::Native(Timestamp))
            | (CqlType::Native(Timestamp), CqlType::Native(Bigint | Varint))
            | (CqlType::Native(Timeuuid), CqlType::Native(Uuid))
            | (CqlType::Native(Varchar), CqlType::Native(Ascii))
            | (CqlType::Native(Ascii), CqlType::Native(Varchar))
    )
}

fn ty_name(t: &CqlType) -> String {
    t.to_string()
}

fn arithmetic(
    op: helenus_cql::ast::ArithOp,
    l: Option<CqlValue>,
    r: Option<CqlValue>,
) -> ExecResult<Option<CqlValue>> {
    use helenus_cql::ast::ArithOp::*;
    let (Some(l), Some(r)) = (l, r) else {
        return Ok(None);
    };
    let div0 = || ExecError::Invalid("the operation 'int / int' failed: / by zero".into());
    macro_rules! int_op {
        ($a:expr, $b:expr, $ctor:path) => {
            match op {
                Add => $ctor($a.wrapping_add($b)),
                Sub => $ctor($a.wrapping_sub($b)),
                Mul => $ctor($a.wrapping_mul($b)),
                Div => $ctor($a.checked_div($b).ok_or_else(div0)?),
                Rem => $ctor($a.checked_rem($b).ok_or_else(div0)?),
            }
        };
    }
    Ok(Some(match (l, r) {
        (CqlValue::Int(a), CqlValue::Int(b)) => int_op!(a, b, CqlValue::Int),
        (CqlValue::Bigint(a), CqlValue::Bigint(b)) => int_op!(a, b, CqlValue::Bigint),
        (CqlValue::Double(a), CqlValue::Double(b)) => CqlValue::Double(match op {
            Add => a + b,
            Sub => a - b,
            Mul => a * b,
            Div => a / b,
            Rem => a % b,
        }),
        _ => {
            return Err(ExecError::Invalid(
                "Unsupported operand types for arithmetic".into(),
            ))
        }
    }))
}

/// The type each argument of a native function call is read as: its own type when it carries one
/// (a hint, a nested call), else the parameter type the function fixes (`blobAsInt` takes a blob,
/// `fromJson` text), which is what a bind marker there is announced and decoded as. A marker
/// where overloads differ (`toDate(?)`) is ambiguous, as in Cassandra.
pub fn param_types(name: &str, args: &[Term]) -> ExecResult<Vec<Option<CqlType>>> {
    let own: Vec<Option<CqlType>> = args.iter().map(infer_type).collect();
    let markers: Vec<bool> = args.iter().map(|a| matches!(a, Term::Bind(_))).collect();
    functions::declared_types(name, &own, &markers)
}

/// The type of a term that carries its own (a hint, a function result), if any.
pub fn infer_type(t: &Term) -> Option<CqlType> {
    match t {
        Term::TypeHint { ty, .. } => resolve_type(ty, None).ok(),
        Term::FunctionCall { name, args } => {
            let arg_types: Vec<CqlType> = args.iter().filter_map(infer_type).collect();
            functions::return_type(&name.name.name, &arg_types)
        }
        other => literal_default_type(other),
    }
}

fn elements(
    items: &[Term],
    element: &CqlType,
    receiver: &str,
    binds: &Binds<'_>,
) -> ExecResult<Vec<CqlValue>> {
    items
        .iter()
        .map(|i| {
            to_value(i, element, receiver, binds)?.ok_or_else(|| {
                ExecError::Invalid("null is not supported inside collections".into())
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn no_binds() -> Binds<'static> {
        Binds::none()
    }

    fn native(n: NativeType) -> CqlType {
        CqlType::Native(n)
    }

    fn int(v: &str) -> Term {
        Term::Integer(v.into())
    }

    fn invalid_message(term: &Term, ty: &CqlType) -> String {
        match to_value(term, ty, "v", &no_binds()) {
            Err(ExecError::Invalid(m)) => m,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn a_string_constant_is_not_an_int() {
        assert_eq!(
            invalid_message(&Term::String("x".into()), &native(NativeType::Int)),
            "Invalid STRING constant (x) for \"v\" of type int"
        );
    }

    #[test]
    fn short_tuples_are_padded_with_nulls_and_long_ones_refused() {
        let ty = CqlType::Tuple(vec![native(NativeType::Int), native(NativeType::Int)]);
        let v = to_value(&Term::Tuple(vec![int("1")]), &ty, "v", &no_binds()).unwrap();
        assert_eq!(v, Some(CqlValue::Tuple(vec![Some(CqlValue::Int(1)), None])));
        let m = invalid_message(&Term::Tuple(vec![int("1"), int("2"), int("3")]), &ty);
        assert!(m.contains("too many elements"), "{m}");
    }

    #[test]
    fn a_vector_literal_must_have_the_dimension() {
        let ty = CqlType::Vector {
            element: Box::new(native(NativeType::Float)),
            dimension: 3,
        };
        let m = invalid_message(&Term::List(vec![int("1"), int("2")]), &ty);
        assert!(m.ends_with("expected 3 elements, but given 2"), "{m}");
    }

    #[test]
    fn set_literals_are_sorted_and_deduplicated() {
        let ty = CqlType::Set {
            element: Box::new(native(NativeType::Int)),
            frozen: false,
        };
        let v = to_value(
            &Term::Set(vec![int("3"), int("1"), int("3")]),
            &ty,
            "v",
            &no_binds(),
        );
        assert_eq!(
            v.unwrap(),
            Some(CqlValue::Set(vec![CqlValue::Int(1), CqlValue::Int(3)]))
        );
    }

    #[test]
    fn negation_and_blob_constants() {
        let v = to_value(
            &Term::Negate(Box::new(int("5"))),
            &native(NativeType::Bigint),
            "v",
            &no_binds(),
        );
        assert_eq!(v.unwrap(), Some(CqlValue::Bigint(-5)));
        let v = to_value(
            &Term::Blob("0a0b".into()),
            &native(NativeType::Blob),
            "v",
            &no_binds(),
        );
        assert_eq!(
            v.unwrap(),
            Some(CqlValue::Blob(Bytes::from_static(&[10, 11])))
        );
    }

    #[test]
    fn hex_constants_go_to_blobs_and_tinyints_only() {
        let tinyint = native(NativeType::Tinyint);
        let hex = |h: &str| Term::Blob(h.into());
        let value = |h: &str| eval(&hex(h), &tinyint, "v", &no_binds()).unwrap();
        // Cassandra prefers ByteType for hex constants and stores their bytes unvalidated.
        assert_eq!(value(""), Bound::Value(Bytes::new()));
        assert_eq!(value("7f"), Bound::Value(Bytes::from_static(&[0x7f])));
        assert_eq!(
            to_value(&hex("7f"), &tinyint, "v", &no_binds()).unwrap(),
            Some(CqlValue::Tinyint(127))
        );
        assert_eq!(
            invalid_message(&hex(""), &native(NativeType::Smallint)),
            "Invalid HEX constant (0x) for \"v\" of type smallint"
        );
        assert_eq!(
            invalid_message(&hex("01"), &native(NativeType::Int)),
            "Invalid HEX constant (0x01) for \"v\" of type int"
        );
    }

    #[test]
    fn an_unknown_function_result_type_is_checked_against_the_receiver() {
        let call = Term::FunctionCall {
            name: helenus_cql::ast::QualifiedName {
                keyspace: None,
                name: helenus_cql::ast::Ident::unquoted("bigintasblob"),
            },
            args: vec![int("1")],
        };
        let m = invalid_message(&call, &native(NativeType::Int));
        assert!(
            m.starts_with("Type error: cannot assign result of function system.bigintasblob"),
            "{m}"
        );
    }
}
