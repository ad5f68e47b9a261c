//! Native scalar functions of CQL (Cassandra 5.0's set), evaluated on decoded values.

use super::cast;
use super::error::{ExecError, ExecResult};
use crate::exec_state::Now;
use helenus_types::numeric::{self, JavaNumber, Signed};
use helenus_types::{CqlType, CqlValue, NativeType};

fn native(t: NativeType) -> CqlType {
    CqlType::Native(t)
}

/// The class Cassandra 5.0 reports for the timeuuid results of `blobAsTimeuuid` and of
/// `min`/`max` over timeuuids (their result type is the legacy marshal class, which drivers
/// see as a custom type).
pub const LEGACY_TIMEUUID: &str = "org.apache.cassandra.db.marshal.LegacyTimeUUIDType";

fn is_numeric(t: &CqlType) -> bool {
    use NativeType::*;
    matches!(
        t,
        CqlType::Native(
            Tinyint | Smallint | Int | Bigint | Counter | Float | Double | Varint | Decimal
        )
    )
}

/// "none of its type signatures match", listing the signatures Cassandra knows.
fn no_signature(name: &str, inputs: &[&str], ret: &str) -> ExecError {
    let known: Vec<String> = inputs
        .iter()
        .map(|i| format!("system.{name} : ({i}) -> {ret}"))
        .collect();
    ExecError::Invalid(format!(
        "Invalid call to function {name}, none of its type signatures match (known type signatures: {})",
        known.join(", ")
    ))
}

/// One-argument functions over a fixed set of native input types.
fn unary(
    name: &str,
    args: &[CqlType],
    inputs: &[NativeType],
    ret: NativeType,
) -> ExecResult<CqlType> {
    match args {
        [CqlType::Native(n)] if inputs.contains(n) => Ok(native(ret)),
        _ => {
            let names: Vec<&str> = inputs.iter().map(|i| i.cql_name()).collect();
            Err(no_signature(name, &names, ret.cql_name()))
        }
    }
}

/// A function name lower-cased, with Cassandra 5.0's snake_case spellings (`to_json`,
/// `text_as_blob`, `blob_as_int`) mapped to the camelCase ones they alias, so that one name is
/// matched everywhere a function is dispatched.
pub fn canonical_name(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    match lower.as_str() {
        "to_json" => return "tojson".into(),
        "from_json" => return "fromjson".into(),
        _ => {}
    }
    if let Some(target) = lower.strip_prefix("blob_as_") {
        if NativeType::from_cql_name(target).is_some() {
            return format!("blobas{target}");
        }
    }
    if let Some(source) = lower.strip_suffix("_as_blob") {
        if NativeType::from_cql_name(source).is_some() {
            return format!("{source}asblob");
        }
    }
    lower
}

/// Resolves a native scalar function call: its return type given the argument types, or the
/// error Cassandra gives (unknown function, no matching signature).
pub fn resolve(name: &str, args: &[CqlType]) -> ExecResult<CqlType> {
    use NativeType::*;
    let lower = canonical_name(name);
    let unknown = || ExecError::Invalid(format!("Unknown function '{lower}'"));
    Ok(match lower.as_str() {
        "now" | "currenttimeuuid" | "current_timeuuid" => native(Timeuuid),
        // Literal arguments are typed by the call (a string or an integer is a timestamp).
        "mintimeuuid" | "maxtimeuuid" | "min_timeuuid" | "max_timeuuid" => native(Timeuuid),
        "uuid" => native(Uuid),
        "currenttimestamp" | "current_timestamp" => native(Timestamp),
        "currentdate" | "current_date" => native(Date),
        "currenttime" | "current_time" => native(Time),
        "totimestamp" | "to_timestamp" => unary(&lower, args, &[Timeuuid, Date], Timestamp)?,
        "todate" | "to_date" => unary(&lower, args, &[Timestamp, Timeuuid], Date)?,
        "tounixtimestamp" | "to_unix_timestamp" => {
            unary(&lower, args, &[Timeuuid, Timestamp, Date], Bigint)?
        }
        "abs" | "exp" | "log" | "log10" | "round" => match args {
            [t] if is_numeric(t) => t.clone(),
            _ => {
                let inputs = [
                    "varint", "counter", "decimal", "double", "float", "bigint", "int", "smallint",
                    "tinyint",
                ];
                return Err(ExecError::Invalid(format!(
                    "Invalid call to function {lower}, none of its type signatures match (known type signatures: {})",
                    inputs
                        .iter()
                        .map(|i| format!("system.{lower} : ({i}) -> {i}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        },
        "token" => native(Bigint),
        "floor" => super::floor::signature(args)?.0,
        "writetime" | "maxwritetime" | "minwritetime" => native(Bigint),
        "ttl" => native(Int),
        "count" => native(Bigint),
        "min" | "max" | "sum" | "avg" => args.first().cloned().ok_or_else(unknown)?,
        "similarity_cosine" | "similarity_euclidean" | "similarity_dot_product" => native(Float),
        _ => {
            if let Some(target) = lower.strip_prefix("blobas") {
                match NativeType::from_cql_name(target) {
                    // There is no blobAsBlob: blob is the identity.
                    Some(Blob) | None => return Err(unknown()),
                    Some(Timeuuid) => CqlType::Custom(LEGACY_TIMEUUID.into()),
                    Some(t) => native(t),
                }
            } else if let Some(source) = lower.strip_suffix("asblob") {
                match NativeType::from_cql_name(source) {
                    Some(Blob) | None => return Err(unknown()),
                    Some(_) => native(Blob),
                }
            } else {
                return Err(unknown());
            }
        }
    })
}

/// The type each argument of a native function call is read as (see `values::param_types`),
/// from the arguments' own types (None when they have none) and which of them are bind markers.
/// A marker where overloads differ (`toDate(?)`) is ambiguous, as in Cassandra.
pub fn declared_types(
    name: &str,
    own: &[Option<CqlType>],
    markers: &[bool],
) -> ExecResult<Vec<Option<CqlType>>> {
    use NativeType::*;
    let lower = canonical_name(name);
    let overloads: &[NativeType] = match lower.as_str() {
        "todate" | "to_date" => &[Timeuuid, Timestamp],
        "totimestamp" | "to_timestamp" => &[Timeuuid, Date],
        "tounixtimestamp" | "to_unix_timestamp" => &[Timeuuid, Timestamp, Date],
        "abs" | "exp" | "log" | "log10" | "round" => &[
            Tinyint, Smallint, Int, Bigint, Float, Double, Varint, Decimal, Counter,
        ],
        _ => &[],
    };
    let fixed = |i: usize| -> Option<CqlType> {
        if lower == "fromjson" {
            return Some(native(Varchar));
        }
        if matches!(
            lower.as_str(),
            "mintimeuuid" | "maxtimeuuid" | "min_timeuuid" | "max_timeuuid"
        ) {
            return Some(native(Timestamp));
        }
        if lower.starts_with("similarity_") {
            // The other argument's vector type.
            return own.get(1 - i.min(1)).cloned().flatten();
        }
        if let Some(target) = lower.strip_prefix("blobas") {
            return NativeType::from_cql_name(target).map(|_| native(Blob));
        }
        let source = lower.strip_suffix("asblob")?;
        NativeType::from_cql_name(source).map(native)
    };
    let mut out = Vec::with_capacity(own.len());
    for (i, (marker, t)) in markers.iter().zip(own).enumerate() {
        if t.is_some() || !marker {
            out.push(t.clone());
        } else if overloads.len() > 1 {
            let mut signatures = Vec::with_capacity(overloads.len());
            for o in overloads {
                let ret = resolve(&lower, &[native(*o)])?;
                signatures.push(format!("system.{lower} : ({}) -> {ret}", o.cql_name()));
            }
            return Err(ExecError::Invalid(format!(
                "Ambiguous call to function {lower} (can be matched by following signatures: {}): use type casts to disambiguate",
                signatures.join(", ")
            )));
        } else {
            out.push(fixed(i));
        }
    }
    Ok(out)
}

/// The type a literal start argument of `floor` takes after a first argument of type `first`.
pub fn floor_start_type(first: &CqlType) -> CqlType {
    match first {
        CqlType::Native(NativeType::Timeuuid) => native(NativeType::Timestamp),
        other => other.clone(),
    }
}

/// The return type of a native function given its argument types, or None if unknown.
/// (Values bound into statements see the legacy timeuuid class as plain `timeuuid`.)
pub fn return_type(name: &str, args: &[CqlType]) -> Option<CqlType> {
    match resolve(name, args).ok()? {
        CqlType::Custom(c) if c == LEGACY_TIMEUUID => Some(native(NativeType::Timeuuid)),
        t => Some(t),
    }
}

fn arg<'a>(args: &'a [Option<CqlValue>], i: usize, f: &str) -> ExecResult<Option<&'a CqlValue>> {
    match args.get(i) {
        Some(v) => Ok(v.as_ref()),
        None => Err(ExecError::Invalid(format!(
            "Invalid number of arguments in call to function system.{f}"
        ))),
    }
}

fn as_ms(v: &CqlValue) -> Option<i64> {
    match v {
        CqlValue::Timestamp(ms) => Some(*ms),
        CqlValue::Timeuuid(u) => Some(helenus_types::timeuuid_to_unix_ms(u)),
        CqlValue::Date(d) => Some(cast::raw_date_to_millis(*d)),
        _ => None,
    }
}

/// The timestamp argument of `minTimeuuid`/`maxTimeuuid`: literals arrive untyped, so a
/// string is parsed as a timestamp and an integer taken as milliseconds.
fn timestamp_arg(v: &CqlValue) -> ExecResult<Option<i64>> {
    Ok(match v {
        CqlValue::Text(s) | CqlValue::Ascii(s) => {
            match helenus_types::from_string(&native(NativeType::Timestamp), s) {
                Ok(CqlValue::Timestamp(ms)) => Some(ms),
                Ok(_) => None,
                Err(e) => return Err(ExecError::Invalid(e.to_string())),
            }
        }
        CqlValue::Int(x) => Some(i64::from(*x)),
        CqlValue::Bigint(x) => Some(*x),
        other => as_ms(other),
    })
}

fn arithmetic_error(msg: &str) -> ExecError {
    ExecError::Server(format!("java.lang.ArithmeticException: {msg}"))
}

/// exp/log/log10 of a varint or decimal, as Cassandra's big-number math: computed on the
/// double value, failing where the exact function fails (overflow, non-positive logarithm).
fn big_math(f: &str, v: &CqlValue) -> ExecResult<CqlValue> {
    let Some(n) = JavaNumber::of(v) else {
        return Ok(v.clone());
    };
    let x = n.double_value();
    let y = match f {
        "exp" => x.exp(),
        "log" if x <= 0.0 => return Err(arithmetic_error("Natural log of number zero or less")),
        "log" => x.ln(),
        _ if x <= 0.0 => return Err(arithmetic_error("Log10 of number zero or less")),
        _ => x.log10(),
    };
    if !y.is_finite() {
        return Err(arithmetic_error("Overflow"));
    }
    let d = JavaNumber::Double(y);
    Ok(match v {
        CqlValue::Varint(_) => {
            CqlValue::Varint(d.to_integer().ok_or_else(|| arithmetic_error("Overflow"))?)
        }
        _ => {
            let (unscaled, scale) = d.to_decimal().ok_or_else(|| arithmetic_error("Overflow"))?;
            CqlValue::Decimal { unscaled, scale }
        }
    })
}

/// `round`: Java's `Math.round` (half up, saturating) for floating point, half-up to scale 0
/// for decimals, the identity for integers.
fn round(v: &CqlValue) -> CqlValue {
    match v {
        CqlValue::Float(x) => {
            let r = if x.is_nan() {
                0
            } else {
                (x + 0.5).floor() as i32
            };
            CqlValue::Float(r as f32)
        }
        CqlValue::Double(x) => {
            let r = if x.is_nan() {
                0
            } else {
                (x + 0.5).floor() as i64
            };
            CqlValue::Double(r as f64)
        }
        CqlValue::Decimal { unscaled, scale } => {
            let (unscaled, scale) = numeric::decimal_round_half_up(&(unscaled.clone(), *scale));
            CqlValue::Decimal { unscaled, scale }
        }
        other => other.clone(),
    }
}

fn as_f64(v: &CqlValue) -> Option<f64> {
    Some(match v {
        CqlValue::Int(x) => *x as f64,
        CqlValue::Bigint(x) | CqlValue::Counter(x) => *x as f64,
        CqlValue::Smallint(x) => *x as f64,
        CqlValue::Tinyint(x) => *x as f64,
        CqlValue::Float(x) => *x as f64,
        CqlValue::Double(x) => *x,
        _ => return None,
    })
}

/// Applies a scalar function to decoded argument values (None = null).
pub fn call(name: &str, args: &[Option<CqlValue>], now: &Now<'_>) -> ExecResult<Option<CqlValue>> {
    use CqlValue as V;
    let lower = canonical_name(name);
    let unsupported = || ExecError::Invalid(format!("Unknown function '{name}'"));
    Ok(match lower.as_str() {
        "now" | "currenttimeuuid" | "current_timeuuid" => Some(V::Timeuuid(now.timeuuid())),
        "uuid" => Some(V::Uuid(uuid::Uuid::new_v4())),
        "currenttimestamp" | "current_timestamp" => Some(V::Timestamp(now.wall_ms())),
        "currentdate" | "current_date" => Some(V::Date(
            ((now.wall_ms().div_euclid(86_400_000)) + (1i64 << 31)) as u32,
        )),
        "currenttime" | "current_time" => {
            Some(V::Time(now.wall_ms().rem_euclid(86_400_000) * 1_000_000))
        }
        "totimestamp" | "to_timestamp" => arg(args, 0, &lower)?.and_then(as_ms).map(V::Timestamp),
        "todate" | "to_date" => arg(args, 0, &lower)?
            .and_then(as_ms)
            .map(|ms| V::Date(cast::millis_to_raw_date(ms))),
        "tounixtimestamp" | "to_unix_timestamp" => {
            arg(args, 0, &lower)?.and_then(as_ms).map(V::Bigint)
        }
        "mintimeuuid" | "min_timeuuid" => match arg(args, 0, &lower)? {
            Some(v) => timestamp_arg(v)?.map(|ms| V::Timeuuid(helenus_types::min_timeuuid(ms))),
            None => None,
        },
        "maxtimeuuid" | "max_timeuuid" => match arg(args, 0, &lower)? {
            Some(v) => timestamp_arg(v)?.map(|ms| V::Timeuuid(helenus_types::max_timeuuid(ms))),
            None => None,
        },
        "token" => Some(token_of(args)),
        "floor" => super::floor::call(args)?,
        "abs" => match arg(args, 0, &lower)? {
            None => None,
            Some(v) => Some(abs(v).ok_or_else(unsupported)?),
        },
        "round" => arg(args, 0, &lower)?.map(round),
        "exp" | "log" | "log10" => match arg(args, 0, &lower)? {
            None => None,
            Some(v) => Some(exp_or_log(&lower, v, unsupported)?),
        },
        "similarity_cosine" | "similarity_euclidean" | "similarity_dot_product" => {
            similarity(&lower, args)?
        }
        _ => return blob_conversion(&lower, args, unsupported),
    })
}

/// token() over values of the partition key's types: the token of that key.
fn token_of(args: &[Option<CqlValue>]) -> CqlValue {
    let parts: Vec<bytes::Bytes> = args
        .iter()
        .map(|a| {
            a.as_ref()
                .map(helenus_types::serialize_to_bytes)
                .unwrap_or_default()
        })
        .collect();
    let key = if let [single] = parts.as_slice() {
        single.clone()
    } else {
        let refs: Vec<&[u8]> = parts.iter().map(|p| p.as_ref()).collect();
        helenus_types::composite_partition_key(&refs)
    };
    CqlValue::Bigint(helenus_types::murmur3_token(&key))
}

/// `abs` of a number (integers wrap as Java's do); None for a non-number.
fn abs(v: &CqlValue) -> Option<CqlValue> {
    use CqlValue as V;
    Some(match v {
        V::Int(x) => V::Int(x.wrapping_abs()),
        V::Bigint(x) => V::Bigint(x.wrapping_abs()),
        V::Counter(x) => V::Counter(x.wrapping_abs()),
        V::Smallint(x) => V::Smallint(x.wrapping_abs()),
        V::Tinyint(x) => V::Tinyint(x.wrapping_abs()),
        V::Float(x) => V::Float(x.abs()),
        V::Double(x) => V::Double(x.abs()),
        V::Varint(x) => V::Varint(x.abs()),
        V::Decimal { unscaled, scale } => V::Decimal {
            unscaled: unscaled.abs(),
            scale: *scale,
        },
        _ => return None,
    })
}

/// `exp`, `log` and `log10`, computed in double and narrowed back to the argument's type.
fn exp_or_log(
    lower: &str,
    v: &CqlValue,
    unsupported: impl Fn() -> ExecError,
) -> ExecResult<CqlValue> {
    use CqlValue as V;
    if matches!(v, V::Varint(_) | V::Decimal { .. }) {
        return big_math(lower, v);
    }
    let x = as_f64(v).ok_or_else(unsupported)?;
    let y = match lower {
        "exp" => x.exp(),
        "log" => x.ln(),
        _ => x.log10(),
    };
    Ok(match v {
        V::Float(_) => V::Float(y as f32),
        V::Double(_) => V::Double(y),
        V::Int(_) => V::Int(y as i32),
        V::Bigint(_) => V::Bigint(y as i64),
        // Java narrows a double to short/byte through int (NaN and infinities included).
        V::Smallint(_) => V::Smallint((y as i32) as i16),
        V::Tinyint(_) => V::Tinyint((y as i32) as i8),
        _ => V::Double(y),
    })
}

/// The vector similarity functions, as Cassandra scores them (in [0, 1]).
fn similarity(lower: &str, args: &[Option<CqlValue>]) -> ExecResult<Option<CqlValue>> {
    let (Some(CqlValue::Vector(a)), Some(CqlValue::Vector(b))) =
        (arg(args, 0, lower)?, arg(args, 1, lower)?)
    else {
        return Ok(None);
    };
    if a.len() != b.len() {
        return Err(ExecError::Invalid(
            "All arguments must have the same vector dimensions".into(),
        ));
    }
    let xs: Vec<f64> = a.iter().filter_map(as_f64).collect();
    let ys: Vec<f64> = b.iter().filter_map(as_f64).collect();
    let dot: f64 = xs.iter().zip(&ys).map(|(x, y)| x * y).sum();
    let score = match lower {
        "similarity_cosine" => {
            let nx = xs.iter().map(|x| x * x).sum::<f64>().sqrt();
            let ny = ys.iter().map(|y| y * y).sum::<f64>().sqrt();
            if nx == 0.0 || ny == 0.0 {
                return Err(ExecError::Invalid(
                    "Function system.similarity_cosine doesn't support all-zero vectors".into(),
                ));
            }
            (1.0 + dot / (nx * ny)) / 2.0
        }
        "similarity_euclidean" => {
            let d2: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - y) * (x - y)).sum();
            1.0 / (1.0 + d2)
        }
        _ => (1.0 + dot) / 2.0,
    };
    Ok(Some(CqlValue::Float(score as f32)))
}

/// `blobAs<type>` and `<type>AsBlob`; any other name is an unknown function.
fn blob_conversion(
    lower: &str,
    args: &[Option<CqlValue>],
    unsupported: impl Fn() -> ExecError,
) -> ExecResult<Option<CqlValue>> {
    if let Some(target) = lower.strip_prefix("blobas") {
        let t = NativeType::from_cql_name(target).ok_or_else(&unsupported)?;
        return match arg(args, 0, lower)? {
            None => Ok(None),
            // An empty duration has no valid encoding (other types read it as empty).
            Some(CqlValue::Blob(b)) if b.is_empty() && t == NativeType::Duration => {
                Err(ExecError::Invalid(format!("In call to function system.{lower}, value 0x is not a valid binary representation for type duration")))
            }
            Some(CqlValue::Blob(b)) => helenus_types::deserialize(&native(t), b)
                .map(Some)
                .map_err(|e| ExecError::Invalid(format!("In call to function system.{lower}, value 0x{} is not a valid binary representation for type {}: {e}", hex(b), t.cql_name()))),
            Some(_) => Err(unsupported()),
        };
    }
    if lower.ends_with("asblob") {
        return Ok(arg(args, 0, lower)?.map(|v| {
            let mut out = bytes::BytesMut::new();
            helenus_types::serialize(v, &mut out);
            CqlValue::Blob(out.freeze())
        }));
    }
    Err(unsupported())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_is_java_math_round() {
        assert_eq!(round(&CqlValue::Float(-1.5)), CqlValue::Float(-1.0));
        assert_eq!(
            round(&CqlValue::Float(f32::MAX)),
            CqlValue::Float(2147483648.0)
        );
        assert_eq!(
            round(&CqlValue::Double(f64::MAX)),
            CqlValue::Double(9.223372036854776e18)
        );
    }

    #[test]
    fn big_math_fails_where_java_does() {
        let big = CqlValue::Decimal {
            unscaled: 1.into(),
            scale: -10,
        };
        assert!(matches!(big_math("exp", &big), Err(ExecError::Server(_))));
        let neg = CqlValue::Varint((-1).into());
        assert!(matches!(big_math("log", &neg), Err(ExecError::Server(_))));
        assert!(matches!(big_math("log10", &neg), Err(ExecError::Server(_))));
    }

    #[test]
    fn signatures_are_checked() {
        let ts = native(NativeType::Timestamp);
        assert!(resolve("totimestamp", std::slice::from_ref(&ts)).is_err());
        assert!(resolve("to_date", std::slice::from_ref(&ts)).is_ok());
        assert!(resolve("dateof", std::slice::from_ref(&ts)).is_err());
        assert!(resolve("abs", &[ts.clone(), ts.clone()]).is_err());
        assert!(resolve("blobasblob", &[native(NativeType::Blob)]).is_err());
        assert_eq!(canonical_name("text_as_blob"), "textasblob");
        assert_eq!(canonical_name("Blob_As_Int"), "blobasint");
        assert_eq!(canonical_name("to_json"), "tojson");
        assert_eq!(canonical_name("blob_as_nosuchtype"), "blob_as_nosuchtype");
        assert_eq!(
            resolve("int_as_blob", &[native(NativeType::Int)]).ok(),
            Some(native(NativeType::Blob))
        );
        assert_eq!(
            resolve("blobastimeuuid", &[native(NativeType::Blob)]).ok(),
            Some(CqlType::Custom(LEGACY_TIMEUUID.into()))
        );
    }

    #[test]
    fn abs_wraps_like_java_and_refuses_non_numbers() {
        let v = call("abs", &[Some(CqlValue::Int(i32::MIN))], &Now::system()).unwrap();
        assert_eq!(v, Some(CqlValue::Int(i32::MIN)));
        assert_eq!(call("abs", &[None], &Now::system()).unwrap(), None);
        assert!(matches!(
            call("abs", &[Some(CqlValue::Text("x".into()))], &Now::system()),
            Err(ExecError::Invalid(m)) if m == "Unknown function 'abs'"
        ));
    }

    #[test]
    fn blob_conversions_round_trip_and_reject_bad_lengths() {
        let blob = call("bigintAsBlob", &[Some(CqlValue::Bigint(7))], &Now::system()).unwrap();
        assert_eq!(
            call("blobAsBigint", &[blob], &Now::system()).unwrap(),
            Some(CqlValue::Bigint(7))
        );
        let short = Some(CqlValue::Blob(bytes::Bytes::from_static(&[1, 2])));
        assert!(matches!(
            call("blobAsBigint", &[short], &Now::system()),
            Err(ExecError::Invalid(m)) if m.starts_with("In call to function system.blobasbigint, value 0x0102")
        ));
        assert!(call("nosuchfunction", &[], &Now::system()).is_err());
    }

    #[test]
    fn similarity_of_vectors() {
        let v = |xs: &[f32]| {
            Some(CqlValue::Vector(
                xs.iter().map(|x| CqlValue::Float(*x)).collect(),
            ))
        };
        let same = call(
            "similarity_cosine",
            &[v(&[1.0, 0.0]), v(&[2.0, 0.0])],
            &Now::system(),
        )
        .unwrap();
        assert_eq!(same, Some(CqlValue::Float(1.0)));
        let far = call(
            "similarity_euclidean",
            &[v(&[0.0, 0.0]), v(&[3.0, 4.0])],
            &Now::system(),
        )
        .unwrap();
        assert_eq!(far, Some(CqlValue::Float(1.0 / 26.0)));
        assert!(call("similarity_cosine", &[v(&[0.0]), v(&[1.0])], &Now::system()).is_err());
        assert!(call(
            "similarity_dot_product",
            &[v(&[1.0]), v(&[1.0, 2.0])],
            &Now::system()
        )
        .is_err());
    }
}
