//! Native scalar functions of CQL (Cassandra 5.0's set), evaluated on decoded values.

use super::error::{ExecError, ExecResult};
use helenus_types::{CqlType, CqlValue, NativeType};

fn native(t: NativeType) -> CqlType {
    CqlType::Native(t)
}

/// The return type of a native function given its argument types, or None if unknown.
pub fn return_type(name: &str, args: &[CqlType]) -> Option<CqlType> {
    use NativeType::*;
    let lower = name.to_ascii_lowercase();
    let t = match lower.as_str() {
        "now" | "mintimeuuid" | "maxtimeuuid" => native(Timeuuid),
        "uuid" => native(Uuid),
        "currenttimestamp" | "totimestamp" | "dateof" => native(Timestamp),
        "currentdate" | "todate" => native(Date),
        "currenttime" => native(Time),
        "currenttimeuuid" => native(Timeuuid),
        "tounixtimestamp" | "unixtimestampof" => native(Bigint),
        "abs" | "exp" | "log" | "log10" | "round" => args.first().cloned()?,
        "token" => native(Bigint),
        "writetime" | "maxwritetime" | "minwritetime" => native(Bigint),
        "ttl" => native(Int),
        "count" => native(Bigint),
        "min" | "max" | "sum" => args.first().cloned()?,
        "avg" => args.first().cloned()?,
        "similarity_cosine" | "similarity_euclidean" | "similarity_dot_product" => native(Float),
        _ => {
            if let Some(target) = lower.strip_prefix("blobas") {
                native(NativeType::from_cql_name(target)?)
            } else if lower.ends_with("asblob") {
                native(Blob)
            } else {
                return None;
            }
        }
    };
    Some(t)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
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
        CqlValue::Date(d) => Some((*d as i64 - (1i64 << 31)) * 86_400_000),
        _ => None,
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
pub fn call(name: &str, args: &[Option<CqlValue>]) -> ExecResult<Option<CqlValue>> {
    use CqlValue as V;
    let lower = name.to_ascii_lowercase();
    let unsupported = || ExecError::Invalid(format!("Unknown function '{name}'"));
    Ok(match lower.as_str() {
        "now" | "currenttimeuuid" => Some(V::Timeuuid(helenus_types::new_timeuuid())),
        "uuid" => Some(V::Uuid(uuid::Uuid::new_v4())),
        "currenttimestamp" => Some(V::Timestamp(now_ms())),
        "currentdate" => Some(V::Date(
            ((now_ms().div_euclid(86_400_000)) + (1i64 << 31)) as u32,
        )),
        "currenttime" => Some(V::Time(now_ms().rem_euclid(86_400_000) * 1_000_000)),
        "totimestamp" | "dateof" => arg(args, 0, &lower)?.and_then(as_ms).map(V::Timestamp),
        "todate" => arg(args, 0, &lower)?
            .and_then(as_ms)
            .map(|ms| V::Date((ms.div_euclid(86_400_000) + (1i64 << 31)) as u32)),
        "tounixtimestamp" | "unixtimestampof" => {
            arg(args, 0, &lower)?.and_then(as_ms).map(V::Bigint)
        }
        "mintimeuuid" => arg(args, 0, &lower)?
            .and_then(as_ms)
            .map(|ms| V::Timeuuid(helenus_types::min_timeuuid(ms))),
        "maxtimeuuid" => arg(args, 0, &lower)?
            .and_then(as_ms)
            .map(|ms| V::Timeuuid(helenus_types::max_timeuuid(ms))),
        "abs" => match arg(args, 0, &lower)? {
            None => None,
            Some(V::Int(x)) => Some(V::Int(x.wrapping_abs())),
            Some(V::Bigint(x)) => Some(V::Bigint(x.wrapping_abs())),
            Some(V::Smallint(x)) => Some(V::Smallint(x.wrapping_abs())),
            Some(V::Tinyint(x)) => Some(V::Tinyint(x.wrapping_abs())),
            Some(V::Float(x)) => Some(V::Float(x.abs())),
            Some(V::Double(x)) => Some(V::Double(x.abs())),
            Some(_) => return Err(unsupported()),
        },
        "exp" | "log" | "log10" | "round" => {
            let Some(v) = arg(args, 0, &lower)? else {
                return Ok(None);
            };
            let x = as_f64(v).ok_or_else(unsupported)?;
            let y = match lower.as_str() {
                "exp" => x.exp(),
                "log" => x.ln(),
                "log10" => x.log10(),
                _ => x.round(),
            };
            Some(match v {
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
        "similarity_cosine" | "similarity_euclidean" | "similarity_dot_product" => {
            let (Some(V::Vector(a)), Some(V::Vector(b))) =
                (arg(args, 0, &lower)?, arg(args, 1, &lower)?)
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
            let score = match lower.as_str() {
                "similarity_cosine" => {
                    let nx = xs.iter().map(|x| x * x).sum::<f64>().sqrt();
                    let ny = ys.iter().map(|y| y * y).sum::<f64>().sqrt();
                    if nx == 0.0 || ny == 0.0 {
                        return Err(ExecError::Invalid(
                            "Function system.similarity_cosine doesn't support all-zero vectors"
                                .into(),
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
            Some(V::Float(score as f32))
        }
        _ => {
            if let Some(target) = lower.strip_prefix("blobas") {
                let t = NativeType::from_cql_name(target).ok_or_else(unsupported)?;
                match arg(args, 0, &lower)? {
                    None => None,
                    Some(V::Blob(b)) => Some(
                        helenus_types::deserialize(&native(t), b)
                            .map_err(|e| ExecError::Invalid(format!("In call to function system.{lower}, value 0x{} is not a valid binary representation for type {}: {e}", hex(b), t.cql_name())))?,
                    ),
                    Some(_) => return Err(unsupported()),
                }
            } else if lower.ends_with("asblob") {
                match arg(args, 0, &lower)? {
                    None => None,
                    Some(v) => {
                        let mut out = bytes::BytesMut::new();
                        helenus_types::serialize(v, &mut out);
                        Some(V::Blob(out.freeze()))
                    }
                }
            } else {
                return Err(unsupported());
            }
        }
    })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
