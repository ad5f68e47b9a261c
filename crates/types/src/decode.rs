//! Decoding and validating serialized values, with Cassandra's `MarshalException` messages.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bytes::Bytes;
use num_bigint::BigInt;
use uuid::Uuid;

use crate::cql_type::{CqlType, NativeType};
use crate::value::{type_fixed_size, CqlValue};
use crate::vint::{read_signed_vint, read_unsigned_vint};
use crate::TypeError;

fn fixed<const N: usize>(
    bytes: &[u8],
    msg: impl FnOnce(usize) -> String,
) -> Result<[u8; N], TypeError> {
    <[u8; N]>::try_from(bytes).map_err(|_| TypeError::Marshal(msg(bytes.len())))
}

/// Decodes a serialized value of type `t`. A zero-length input decodes to [`CqlValue::Empty`]
/// for the types where Cassandra accepts empty values, and to the empty string/blob/collection
/// where that is what zero bytes mean.
pub fn deserialize(t: &CqlType, bytes: &[u8]) -> Result<CqlValue, TypeError> {
    match t {
        CqlType::Native(n) => deserialize_native(*n, bytes),
        CqlType::List { element, .. } => {
            if bytes.is_empty() {
                return Ok(CqlValue::List(Vec::new()));
            }
            Ok(CqlValue::List(read_elements(element, bytes, "list")?))
        }
        CqlType::Set { element, .. } => {
            if bytes.is_empty() {
                return Ok(CqlValue::Set(Vec::new()));
            }
            Ok(CqlValue::Set(read_elements(element, bytes, "set")?))
        }
        CqlType::Map { key, value, .. } => {
            if bytes.is_empty() {
                return Ok(CqlValue::Map(Vec::new()));
            }
            read_map(key, value, bytes)
        }
        CqlType::Tuple(types) => {
            if bytes.is_empty() {
                return Ok(CqlValue::Empty);
            }
            let items = read_components(types.iter(), bytes, "component", "tuple")?;
            Ok(CqlValue::Tuple(items))
        }
        CqlType::Udt { def, .. } => {
            if bytes.is_empty() {
                return Ok(CqlValue::Empty);
            }
            let items = read_components(
                def.fields.iter().map(|(_, t)| t),
                bytes,
                "field",
                "user type",
            )?;
            let mut fields: Vec<(String, Option<CqlValue>)> = def
                .fields
                .iter()
                .map(|(name, _)| (name.clone(), None))
                .collect();
            for (slot, v) in fields.iter_mut().zip(items) {
                slot.1 = v;
            }
            Ok(CqlValue::Udt(fields))
        }
        CqlType::Vector { element, dimension } => read_vector(element, *dimension, bytes),
        CqlType::Custom(class) => Err(TypeError::Unsupported(format!(
            "Custom type {class} is not supported"
        ))),
    }
}

/// Checks that `bytes` is a valid serialized value of `t`, as Cassandra's serializers'
/// `validate()` do: sizes, UTF-8 / ASCII, collection and tuple structure. Collections are walked
/// in place, so checking one costs no memory per element (a 15 MB list of 3M tinyints decoded
/// to values would cost 40 bytes an element).
pub fn validate(t: &CqlType, bytes: &[u8]) -> Result<(), TypeError> {
    match t {
        CqlType::Native(NativeType::Blob) => Ok(()),
        CqlType::Native(NativeType::Varchar) => std::str::from_utf8(bytes)
            .map(|_| ())
            .map_err(|_| TypeError::marshal("String didn't validate.")),
        CqlType::Native(NativeType::Ascii) => check_ascii(bytes),
        CqlType::List { element, .. } | CqlType::Set { element, .. } if !bytes.is_empty() => {
            let kind = if matches!(t, CqlType::List { .. }) {
                "list"
            } else {
                "set"
            };
            each_element(bytes, kind, |v| validate(element, v))
        }
        CqlType::Map { key, value, .. } if !bytes.is_empty() => each_entry(bytes, |k, v| {
            validate(key, k)?;
            validate(value, v)
        }),
        CqlType::Vector { element, dimension } => {
            each_vector_element(element, *dimension, bytes, |v| validate(element, v))
        }
        // Natives decode without allocating (or in proportion to their bytes); tuples and UDTs
        // have as many components as their type.
        _ => deserialize(t, bytes).map(|_| ()),
    }
}

/// Calls `f` with each element of a serialized list or set, or each (key, value) of a map (the
/// value then `Some`), as sub-slices of `bytes`, without decoding them; `bytes` should have
/// passed [`validate`] (a malformed value is still refused, not misread). An empty input is the
/// empty collection.
pub fn for_each_entry<'b>(
    t: &CqlType,
    bytes: &'b [u8],
    mut f: impl FnMut(&'b [u8], Option<&'b [u8]>),
) -> Result<(), TypeError> {
    if bytes.is_empty() {
        return Ok(());
    }
    match t {
        CqlType::List { .. } | CqlType::Set { .. } => {
            let kind = if matches!(t, CqlType::List { .. }) {
                "list"
            } else {
                "set"
            };
            each_element(bytes, kind, |v| {
                f(v, None);
                Ok(())
            })
        }
        CqlType::Map { .. } => each_entry(bytes, |k, v| {
            f(k, Some(v));
            Ok(())
        }),
        _ => Err(TypeError::marshal(format!("{t} is not a collection"))),
    }
}

/// The element (or entry) count a serialized collection declares; 0 for an empty input.
pub fn collection_len(bytes: &[u8]) -> usize {
    let mut buf = bytes;
    take_i32(&mut buf).map_or(0, |n| n.max(0) as usize)
}

fn check_ascii(bytes: &[u8]) -> Result<(), TypeError> {
    match bytes.iter().find(|b| **b > 0x7f) {
        Some(b) => Err(TypeError::marshal(format!(
            "Invalid byte for ascii: {}",
            *b as i8
        ))),
        None => Ok(()),
    }
}

fn deserialize_native(n: NativeType, bytes: &[u8]) -> Result<CqlValue, TypeError> {
    // Types whose zero-length form is an ordinary value rather than "empty".
    match n {
        NativeType::Ascii => {
            check_ascii(bytes)?;
            return Ok(CqlValue::Ascii(String::from_utf8_lossy(bytes).into_owned()));
        }
        NativeType::Varchar => {
            return std::str::from_utf8(bytes)
                .map(|s| CqlValue::Text(s.to_owned()))
                .map_err(|_| TypeError::marshal("String didn't validate."));
        }
        NativeType::Blob => return Ok(CqlValue::Blob(Bytes::copy_from_slice(bytes))),
        _ => {}
    }
    if bytes.is_empty() {
        return match n {
            // These serializers reject zero bytes outright.
            NativeType::Date => Err(TypeError::marshal("Expected 4 byte long for date (0)")),
            NativeType::Time => Err(TypeError::marshal("Expected 8 byte long for time (0)")),
            NativeType::Smallint => Err(TypeError::marshal("Expected 2 bytes for a smallint (0)")),
            NativeType::Tinyint => Err(TypeError::marshal("Expected 1 byte for a tinyint (0)")),
            _ => Ok(CqlValue::Empty),
        };
    }
    let v = match n {
        NativeType::Bigint | NativeType::Counter => {
            let v = i64::from_be_bytes(fixed(bytes, |l| {
                format!("Expected 8 or 0 byte long ({l})")
            })?);
            if n == NativeType::Counter {
                CqlValue::Counter(v)
            } else {
                CqlValue::Bigint(v)
            }
        }
        NativeType::Timestamp => CqlValue::Timestamp(i64::from_be_bytes(fixed(bytes, |l| {
            format!("Expected 8 or 0 byte long for date ({l})")
        })?)),
        NativeType::Time => {
            let v = i64::from_be_bytes(fixed(bytes, |l| {
                format!("Expected 8 byte long for time ({l})")
            })?);
            if !(0..crate::time::NANOS_PER_DAY).contains(&v) {
                return Err(TypeError::marshal(format!(
                    "Invalid time value {v}: out of range"
                )));
            }
            CqlValue::Time(v)
        }
        NativeType::Boolean => CqlValue::Boolean(
            fixed::<1>(bytes, |l| format!("Expected 1 or 0 byte value ({l})"))?[0] != 0,
        ),
        NativeType::Decimal => {
            let Some((scale, rest)) = bytes.split_first_chunk::<4>() else {
                return Err(TypeError::marshal(format!(
                    "Expected 0 or at least 4 bytes ({})",
                    bytes.len()
                )));
            };
            CqlValue::Decimal {
                unscaled: BigInt::from_signed_bytes_be(rest),
                scale: i32::from_be_bytes(*scale),
            }
        }
        NativeType::Double => CqlValue::Double(f64::from_be_bytes(fixed(bytes, |l| {
            format!("Expected 8 or 0 byte value for a double ({l})")
        })?)),
        NativeType::Float => CqlValue::Float(f32::from_be_bytes(fixed(bytes, |l| {
            format!("Expected 4 or 0 byte value for a float ({l})")
        })?)),
        NativeType::Int => CqlValue::Int(i32::from_be_bytes(fixed(bytes, |l| {
            format!("Expected 4 or 0 byte int ({l})")
        })?)),
        NativeType::Uuid | NativeType::Timeuuid => {
            let u = Uuid::from_bytes(fixed(bytes, |l| {
                format!(
                    "{} should be 16 or 0 bytes ({l})",
                    if n == NativeType::Timeuuid {
                        "TimeUUID"
                    } else {
                        "UUID"
                    }
                )
            })?);
            if n == NativeType::Timeuuid {
                if u.get_version_num() != 1 {
                    return Err(TypeError::marshal("Invalid version for TimeUUID type."));
                }
                CqlValue::Timeuuid(u)
            } else {
                CqlValue::Uuid(u)
            }
        }
        NativeType::Varint => CqlValue::Varint(BigInt::from_signed_bytes_be(bytes)),
        NativeType::Inet => match bytes.len() {
            4 => CqlValue::Inet(IpAddr::V4(Ipv4Addr::from(fixed::<4>(bytes, |_| {
                String::new()
            })?))),
            16 => CqlValue::Inet(IpAddr::V6(Ipv6Addr::from(fixed::<16>(bytes, |_| {
                String::new()
            })?))),
            _ => {
                return Err(TypeError::marshal(format!(
                    "Expected 4 or 16 byte inetaddress; got 0x{}",
                    crate::format::hex(bytes)
                )))
            }
        },
        NativeType::Date => CqlValue::Date(u32::from_be_bytes(fixed(bytes, |l| {
            format!("Expected 4 byte long for date ({l})")
        })?)),
        NativeType::Smallint => CqlValue::Smallint(i16::from_be_bytes(fixed(bytes, |l| {
            format!("Expected 2 bytes for a smallint ({l})")
        })?)),
        NativeType::Tinyint => CqlValue::Tinyint(i8::from_be_bytes(fixed(bytes, |l| {
            format!("Expected 1 byte for a tinyint ({l})")
        })?)),
        NativeType::Duration => read_duration(bytes)?,
        NativeType::Ascii | NativeType::Varchar | NativeType::Blob => CqlValue::Empty,
    };
    Ok(v)
}

fn read_duration(bytes: &[u8]) -> Result<CqlValue, TypeError> {
    let bad = || TypeError::marshal("Invalid duration value: not enough bytes");
    let (months, a) = read_signed_vint(bytes).ok_or_else(bad)?;
    let (days, b) = read_signed_vint(bytes.get(a..).ok_or_else(bad)?).ok_or_else(bad)?;
    let (nanos, c) = read_signed_vint(bytes.get(a + b..).ok_or_else(bad)?).ok_or_else(bad)?;
    if a + b + c != bytes.len() {
        return Err(TypeError::marshal(
            "Invalid duration value: unexpected extraneous bytes",
        ));
    }
    let months = i32::try_from(months)
        .map_err(|_| TypeError::marshal("Duration months out of int range"))?;
    let days =
        i32::try_from(days).map_err(|_| TypeError::marshal("Duration days out of int range"))?;
    let all_pos = months >= 0 && days >= 0 && nanos >= 0;
    let all_neg = months <= 0 && days <= 0 && nanos <= 0;
    if !all_pos && !all_neg {
        return Err(TypeError::marshal(
            "The duration months, days and nanoseconds must be all of the same sign",
        ));
    }
    Ok(CqlValue::Duration {
        months,
        days,
        nanos,
    })
}

/// Reads an `[int]` from the front of `buf`.
pub(crate) fn take_i32(buf: &mut &[u8]) -> Option<i32> {
    let (head, rest) = buf.split_first_chunk::<4>()?;
    *buf = rest;
    Some(i32::from_be_bytes(*head))
}

/// Reads a `[bytes]` (int length, -1 for null) from the front of `buf`.
pub(crate) fn take_value<'a>(buf: &mut &'a [u8]) -> Option<Option<&'a [u8]>> {
    let len = take_i32(buf)?;
    if len < 0 {
        return Some(None);
    }
    let len = len as usize;
    if buf.len() < len {
        return None;
    }
    let (v, rest) = buf.split_at(len);
    *buf = rest;
    Some(Some(v))
}

fn read_elements(element: &CqlType, bytes: &[u8], kind: &str) -> Result<Vec<CqlValue>, TypeError> {
    // Each element needs at least its 4-byte length, so the count cannot honestly exceed this.
    let mut out = Vec::with_capacity(collection_len(bytes).min(bytes.len() / 4));
    each_element(bytes, kind, |v| {
        out.push(deserialize(element, v)?);
        Ok(())
    })?;
    Ok(out)
}

/// Walks a serialized list or set: its count, then that many non-null `[bytes]`, then nothing.
fn each_element<'b>(
    bytes: &'b [u8],
    kind: &str,
    mut f: impl FnMut(&'b [u8]) -> Result<(), TypeError>,
) -> Result<(), TypeError> {
    let short = || TypeError::marshal(format!("Not enough bytes to read a {kind}"));
    let mut buf = bytes;
    let n = take_i32(&mut buf).ok_or_else(short)?;
    if n < 0 {
        return Err(short());
    }
    for _ in 0..n {
        match take_value(&mut buf).ok_or_else(short)? {
            Some(v) => f(v)?,
            None => {
                return Err(TypeError::marshal(format!(
                    "null is not supported inside {kind}s"
                )))
            }
        }
    }
    if !buf.is_empty() {
        return Err(TypeError::marshal(format!(
            "Unexpected extraneous bytes after {kind} value"
        )));
    }
    Ok(())
}

fn read_map(key: &CqlType, value: &CqlType, bytes: &[u8]) -> Result<CqlValue, TypeError> {
    let mut out = Vec::with_capacity(collection_len(bytes).min(bytes.len() / 8));
    each_entry(bytes, |k, v| {
        out.push((deserialize(key, k)?, deserialize(value, v)?));
        Ok(())
    })?;
    Ok(CqlValue::Map(out))
}

/// Walks a serialized map: its count, then that many non-null key and value `[bytes]`.
fn each_entry<'b>(
    bytes: &'b [u8],
    mut f: impl FnMut(&'b [u8], &'b [u8]) -> Result<(), TypeError>,
) -> Result<(), TypeError> {
    let short = || TypeError::marshal("Not enough bytes to read a map");
    let null = || TypeError::marshal("null is not supported inside maps");
    let mut buf = bytes;
    let n = take_i32(&mut buf).ok_or_else(short)?;
    if n < 0 {
        return Err(short());
    }
    for _ in 0..n {
        let k = take_value(&mut buf).ok_or_else(short)?.ok_or_else(null)?;
        let v = take_value(&mut buf).ok_or_else(short)?.ok_or_else(null)?;
        f(k, v)?;
    }
    if !buf.is_empty() {
        return Err(TypeError::marshal(
            "Unexpected extraneous bytes after map value",
        ));
    }
    Ok(())
}

/// Tuple and UDT bodies. A value may stop early (fields added to a UDT later are missing from
/// older values); missing trailing components decode as null.
fn read_components<'t>(
    types: impl ExactSizeIterator<Item = &'t CqlType>,
    bytes: &[u8],
    what: &str,
    kind: &str,
) -> Result<Vec<Option<CqlValue>>, TypeError> {
    let mut buf = bytes;
    let mut out = Vec::with_capacity(types.len());
    for (i, t) in types.enumerate() {
        if buf.is_empty() {
            out.push(None);
            continue;
        }
        let v = take_value(&mut buf)
            .ok_or_else(|| TypeError::marshal(format!("Not enough bytes to read {i}th {what}")))?;
        out.push(match v {
            Some(v) => Some(deserialize(t, v)?),
            None => None,
        });
    }
    if !buf.is_empty() {
        return Err(TypeError::marshal(format!(
            "Invalid remaining data after end of {kind} value"
        )));
    }
    Ok(out)
}

/// Cassandra 5.0's `VectorType`: packed fixed-size elements, or unsigned-vint-prefixed ones.
fn read_vector(element: &CqlType, dimension: u32, bytes: &[u8]) -> Result<CqlValue, TypeError> {
    let mut out = Vec::with_capacity((dimension as usize).min(bytes.len()));
    each_vector_element(element, dimension, bytes, |v| {
        out.push(deserialize(element, v)?);
        Ok(())
    })?;
    Ok(CqlValue::Vector(out))
}

fn each_vector_element<'b>(
    element: &CqlType,
    dimension: u32,
    bytes: &'b [u8],
    mut f: impl FnMut(&'b [u8]) -> Result<(), TypeError>,
) -> Result<(), TypeError> {
    if bytes.is_empty() {
        return Err(TypeError::marshal("Invalid empty vector value"));
    }
    let type_name = || {
        CqlType::Vector {
            element: Box::new(element.clone()),
            dimension,
        }
        .to_string()
    };
    let short = || TypeError::marshal(format!("Not enough bytes to read a {}", type_name()));
    let extra = |n: usize| {
        TypeError::marshal(format!(
            "Unexpected {n} extraneous bytes after {} value",
            type_name()
        ))
    };
    let dim = dimension as usize;
    if let Some(size) = type_fixed_size(element) {
        let expected = size.saturating_mul(dim);
        if bytes.len() < expected {
            return Err(short());
        }
        if bytes.len() > expected {
            return Err(extra(bytes.len() - expected));
        }
        if size > 0 {
            for chunk in bytes.chunks_exact(size) {
                f(chunk)?;
            }
        }
        return Ok(());
    }
    let mut buf = bytes;
    for _ in 0..dim {
        let (len, used) = read_unsigned_vint(buf).ok_or_else(short)?;
        let len = usize::try_from(len).map_err(|_| short())?;
        let v = buf
            .get(used..)
            .and_then(|r| r.get(..len))
            .ok_or_else(short)?;
        f(v)?;
        buf = &buf[used + len..];
    }
    if !buf.is_empty() {
        return Err(extra(buf.len()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int() -> CqlType {
        CqlType::Native(NativeType::Int)
    }

    #[test]
    fn wrong_size_int_reports_cassandra_message() {
        assert_eq!(
            validate(&int(), &[1, 2, 3]),
            Err(TypeError::Marshal("Expected 4 or 0 byte int (3)".into()))
        );
        assert_eq!(deserialize(&int(), &[]), Ok(CqlValue::Empty));
    }

    #[test]
    fn invalid_utf8_and_ascii_are_rejected() {
        let text = CqlType::Native(NativeType::Varchar);
        assert!(validate(&text, &[0xc3, 0x28]).is_err());
        let ascii = CqlType::Native(NativeType::Ascii);
        assert_eq!(
            validate(&ascii, &[b'a', 0xe9]),
            Err(TypeError::Marshal("Invalid byte for ascii: -23".into()))
        );
    }

    #[test]
    fn truncated_and_oversized_lists_are_rejected() {
        let t = CqlType::List {
            element: Box::new(int()),
            frozen: true,
        };
        assert!(validate(&t, &[0, 0, 0, 1, 0, 0, 0, 4, 0, 0]).is_err());
        assert!(validate(&t, &[0x7f, 0xff, 0xff, 0xff]).is_err());
        assert!(validate(&t, &[0, 0, 0, 0, 9]).is_err());
        assert!(validate(&t, &[0, 0, 0, 0]).is_ok());
    }

    #[test]
    fn duration_with_mixed_signs_is_rejected() {
        let t = CqlType::Native(NativeType::Duration);
        // months = 1 (zigzag 2), days = -1 (zigzag 1), nanos = 0
        assert!(validate(&t, &[2, 1, 0]).is_err());
        assert_eq!(
            deserialize(&t, &[2, 2, 0]),
            Ok(CqlValue::Duration {
                months: 1,
                days: 1,
                nanos: 0
            })
        );
    }

    #[test]
    fn udt_value_missing_trailing_fields_decodes_them_as_null() {
        let def = crate::UserType {
            keyspace: "ks".into(),
            name: "u".into(),
            fields: vec![("a".into(), int()), ("b".into(), int())],
        };
        let t = CqlType::Udt {
            def: Box::new(def),
            frozen: true,
        };
        let v = deserialize(&t, &[0, 0, 0, 4, 0, 0, 0, 7]).unwrap();
        assert_eq!(
            v,
            CqlValue::Udt(vec![
                ("a".into(), Some(CqlValue::Int(7))),
                ("b".into(), None)
            ])
        );
    }

    #[test]
    fn timeuuid_rejects_other_versions() {
        let t = CqlType::Native(NativeType::Timeuuid);
        let v4 = Uuid::from_u128(0x1234_5678_9abc_4def_8123_4567_89ab_cdef);
        assert!(validate(&t, v4.as_bytes()).is_err());
    }
}
