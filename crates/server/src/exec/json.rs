//! `SELECT JSON` and `INSERT JSON`: values to and from JSON as Cassandra maps them.

use super::error::{invalid, ExecError, ExecResult};
use bytes::Bytes;
use helenus_types::{CqlType, CqlValue, NativeType};
use serde_json::Value;

/// Parses an INSERT JSON document into (column name, value) pairs; unquoted keys are lowercased
/// as identifiers are, quoted keys (`"\"Name\""`) keep their case.
pub fn parse_object(text: &str) -> ExecResult<Vec<(String, Value)>> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        ExecError::Invalid(format!(
            "Could not decode JSON string as a map: {e}. String was: {text}"
        ))
    })?;
    let Value::Object(map) = v else {
        return invalid(format!("Could not decode JSON string as a map: {text}"));
    };
    Ok(map.into_iter().map(|(k, v)| (json_name(&k), v)).collect())
}

/// A JSON key naming a column or a UDT field: lowercased unless quoted, as identifiers are.
fn json_name(k: &str) -> String {
    if k.len() >= 2 && k.starts_with('"') && k.ends_with('"') {
        k[1..k.len() - 1].to_string()
    } else {
        k.to_lowercase()
    }
}

/// What a type that reads only JSON strings expects, as Cassandra words it.
fn string_only(n: NativeType) -> Option<&'static str> {
    Some(match n {
        NativeType::Ascii => "an ascii string",
        NativeType::Varchar => "a UTF-8 string",
        NativeType::Date => "a string representation of a date value",
        NativeType::Time => "a string representation of a time value",
        NativeType::Inet => "a string representation of an inet value",
        NativeType::Timeuuid => "a string representation of a timeuuid",
        NativeType::Uuid => "a string representation of a uuid",
        _ => return None,
    })
}

/// A JSON value for a native type, as Cassandra's `fromJSONObject` reads it.
fn native_from_json(n: NativeType, t: &CqlType, v: &Value) -> ExecResult<CqlValue> {
    let err = |what: &str| ExecError::Invalid(format!("Error decoding JSON value for {t}: {what}"));
    Ok(match (n, v) {
        (NativeType::Boolean, Value::Bool(b)) => CqlValue::Boolean(*b),
        (NativeType::Blob, Value::String(s)) => {
            let hex = s
                .strip_prefix("0x")
                .ok_or_else(|| err("blob values must start with 0x"))?;
            let bytes: Option<Vec<u8>> = (0..hex.len())
                .step_by(2)
                .map(|i| {
                    hex.get(i..i + 2)
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                })
                .collect();
            CqlValue::Blob(Bytes::from(bytes.ok_or_else(|| err("invalid hex"))?))
        }
        // Cassandra parses a JSON varint with `new BigInteger(..)`, which refuses "".
        (NativeType::Varint, Value::String(s)) if s.is_empty() => {
            return Err(ExecError::Invalid(
                "Value '' is not a valid representation of a varint value".into(),
            ));
        }
        (_, Value::String(s)) => {
            helenus_types::from_string(t, s).map_err(|e| err(&e.to_string()))?
        }
        // These types take JSON strings only (Cassandra's `fromJSONObject`).
        (_, Value::Number(_) | Value::Bool(_)) if string_only(n).is_some() => {
            let class = match v {
                Value::Bool(_) => "Boolean",
                _ => "Integer",
            };
            return Err(ExecError::Invalid(format!(
                "Expected {}, but got a {class}: {v}",
                string_only(n).unwrap_or_default()
            )));
        }
        // Jackson hands an int-sized number over as an Integer, which timestamps reject.
        (NativeType::Timestamp, Value::Number(num))
            if num.as_i64().is_some_and(|n| i32::try_from(n).is_ok()) =>
        {
            return Err(err(&format!("Expected a long or a datestring representation of a timestamp value, but got a Integer: {num}")));
        }
        (_, Value::Number(num)) => {
            // Jackson reads integers exactly (BigInteger when needed) but any other
            // number as a double, so `1.000000000000000000001` is the decimal 1.0.
            let raw = num.to_string();
            let integral = raw
                .strip_prefix('-')
                .unwrap_or(&raw)
                .bytes()
                .all(|b| b.is_ascii_digit());
            let text = match num.as_f64() {
                Some(f) if !integral => helenus_types::to_plain_string(&CqlValue::Double(f)),
                _ => raw,
            };
            helenus_types::from_string(t, &text).map_err(|e| err(&e.to_string()))?
        }
        (_, Value::Bool(b)) => {
            helenus_types::from_string(t, &b.to_string()).map_err(|e| err(&e.to_string()))?
        }
        _ => return Err(err("unexpected JSON type")),
    })
}

/// Converts one JSON value to a CQL value of type `t` (None for JSON null).
pub fn from_json(t: &CqlType, v: &Value) -> ExecResult<Option<CqlValue>> {
    if v.is_null() {
        return Ok(None);
    }
    let err = |what: &str| ExecError::Invalid(format!("Error decoding JSON value for {t}: {what}"));
    Ok(Some(match t {
        CqlType::Native(n) => native_from_json(*n, t, v)?,
        CqlType::List { element, .. }
        | CqlType::Set { element, .. }
        | CqlType::Vector { element, .. } => {
            let Value::Array(items) = v else {
                return Err(err("expected a list"));
            };
            let mut out = Vec::new();
            for it in items {
                out.push(from_json(element, it)?.ok_or_else(|| err("null inside a collection"))?);
            }
            match t {
                CqlType::List { .. } => CqlValue::List(out),
                // A set is stored in its element order whatever the JSON order (frozen sets too).
                CqlType::Set { .. } => {
                    super::sorted::sort_dedup(&mut out, element);
                    CqlValue::Set(out)
                }
                _ => CqlValue::Vector(out),
            }
        }
        CqlType::Map { key, value, .. } => {
            let Value::Object(m) = v else {
                return Err(err("expected a map"));
            };
            let mut out = Vec::new();
            for (k, val) in m {
                let kv = from_json(key, &Value::String(k.clone()))?
                    .ok_or_else(|| err("null map key"))?;
                let vv = from_json(value, val)?.ok_or_else(|| err("null map value"))?;
                out.push((kv, vv));
            }
            super::sorted::sort_dedup_map(&mut out, key);
            CqlValue::Map(out)
        }
        CqlType::Tuple(types) => {
            let Value::Array(items) = v else {
                return Err(err("expected a list for a tuple"));
            };
            if items.len() != types.len() {
                let what = if items.len() > types.len() {
                    "contains extra"
                } else {
                    "is missing"
                };
                return Err(ExecError::Invalid(format!(
                    "Tuple {what} items (expected {}): {v}",
                    types.len()
                )));
            }
            let mut out = Vec::new();
            for (i, ty) in types.iter().enumerate() {
                out.push(match items.get(i) {
                    Some(x) => from_json(ty, x)?,
                    None => None,
                });
            }
            CqlValue::Tuple(out)
        }
        CqlType::Udt { def, .. } => {
            let Value::Object(m) = v else {
                return Err(err("expected a map for a user type"));
            };
            let named: Vec<(String, &Value)> = m.iter().map(|(k, x)| (json_name(k), x)).collect();
            if let Some((unknown, _)) = named
                .iter()
                .find(|(k, _)| !def.fields.iter().any(|(n, _)| n == k))
            {
                return Err(err(&format!(
                    "Unknown field '{unknown}' in value of user defined type {}",
                    def.name
                )));
            }
            let mut out = Vec::new();
            for (name, ty) in &def.fields {
                out.push((
                    name.clone(),
                    match named.iter().find(|(k, _)| k == name) {
                        Some((_, x)) => from_json(ty, x)?,
                        None => None,
                    },
                ));
            }
            CqlValue::Udt(out)
        }
        CqlType::Custom(_) => return Err(err("custom types are not supported in JSON")),
    }))
}
