//! CQL values and their serialized form (native_protocol_v5.spec section 6).

use std::net::IpAddr;

use bytes::{BufMut, Bytes, BytesMut};
use num_bigint::BigInt;
use uuid::Uuid;

use crate::cql_type::{CqlType, NativeType};
use crate::vint::{write_signed_vint, write_unsigned_vint};

/// A decoded CQL value. Collections keep their elements in serialized order (sets and map keys
/// are sorted by the type's comparator when Cassandra stores them).
#[derive(Debug, Clone, PartialEq)]
pub enum CqlValue {
    Ascii(String),
    Bigint(i64),
    Blob(Bytes),
    Boolean(bool),
    Counter(i64),
    /// `unscaled * 10^-scale`, as Java's `BigDecimal`.
    Decimal {
        unscaled: BigInt,
        scale: i32,
    },
    Double(f64),
    Float(f32),
    Int(i32),
    /// Milliseconds since the Unix epoch.
    Timestamp(i64),
    Uuid(Uuid),
    Text(String),
    Varint(BigInt),
    Timeuuid(Uuid),
    Inet(IpAddr),
    /// Raw `date` value: days since the epoch shifted by 2^31 (so 2^31 is 1970-01-01).
    Date(u32),
    /// Nanoseconds since midnight.
    Time(i64),
    Smallint(i16),
    Tinyint(i8),
    Duration {
        months: i32,
        days: i32,
        nanos: i64,
    },
    List(Vec<CqlValue>),
    Set(Vec<CqlValue>),
    Map(Vec<(CqlValue, CqlValue)>),
    Tuple(Vec<Option<CqlValue>>),
    /// Field name and value, in the type's field order.
    Udt(Vec<(String, Option<CqlValue>)>),
    Vector(Vec<CqlValue>),
    /// The zero-length value Cassandra accepts for most native types (e.g. `blobAsInt(0x)`);
    /// it is not null, and sorts before every other value.
    Empty,
}

/// Writes a `[bytes]` length placeholder and returns its position for [`patch_len`].
fn begin_len(out: &mut BytesMut) -> usize {
    let at = out.len();
    out.put_i32(0);
    at
}

fn patch_len(out: &mut BytesMut, at: usize) {
    let len = (out.len() - at - 4) as i32;
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

fn put_element(v: &CqlValue, out: &mut BytesMut) {
    let at = begin_len(out);
    serialize(v, out);
    patch_len(out, at);
}

fn put_optional(v: &Option<CqlValue>, out: &mut BytesMut) {
    match v {
        Some(v) => put_element(v, out),
        None => out.put_i32(-1),
    }
}

/// Two's complement, big-endian, minimal length: the encoding of Java's `BigInteger.toByteArray`.
pub(crate) fn varint_bytes(v: &BigInt) -> Vec<u8> {
    v.to_signed_bytes_be()
}

/// Serializes `v` as the value bytes (without the outer `[bytes]` length) the native protocol
/// and SSTables carry.
pub fn serialize(v: &CqlValue, out: &mut BytesMut) {
    match v {
        CqlValue::Ascii(s) | CqlValue::Text(s) => out.put_slice(s.as_bytes()),
        CqlValue::Bigint(n) | CqlValue::Counter(n) | CqlValue::Timestamp(n) | CqlValue::Time(n) => {
            out.put_i64(*n)
        }
        CqlValue::Blob(b) => out.put_slice(b),
        CqlValue::Boolean(b) => out.put_u8(u8::from(*b)),
        CqlValue::Decimal { unscaled, scale } => {
            out.put_i32(*scale);
            out.put_slice(&varint_bytes(unscaled));
        }
        CqlValue::Double(d) => out.put_f64(*d),
        CqlValue::Float(f) => out.put_f32(*f),
        CqlValue::Int(n) => out.put_i32(*n),
        CqlValue::Uuid(u) | CqlValue::Timeuuid(u) => out.put_slice(u.as_bytes()),
        CqlValue::Varint(n) => out.put_slice(&varint_bytes(n)),
        CqlValue::Inet(IpAddr::V4(a)) => out.put_slice(&a.octets()),
        CqlValue::Inet(IpAddr::V6(a)) => out.put_slice(&a.octets()),
        CqlValue::Date(d) => out.put_u32(*d),
        CqlValue::Smallint(n) => out.put_i16(*n),
        CqlValue::Tinyint(n) => out.put_i8(*n),
        CqlValue::Duration {
            months,
            days,
            nanos,
        } => {
            write_signed_vint(i64::from(*months), out);
            write_signed_vint(i64::from(*days), out);
            write_signed_vint(*nanos, out);
        }
        CqlValue::List(items) | CqlValue::Set(items) => {
            out.put_i32(items.len() as i32);
            for item in items {
                put_element(item, out);
            }
        }
        CqlValue::Map(entries) => {
            out.put_i32(entries.len() as i32);
            for (k, v) in entries {
                put_element(k, out);
                put_element(v, out);
            }
        }
        CqlValue::Tuple(items) => {
            for item in items {
                put_optional(item, out);
            }
        }
        CqlValue::Udt(fields) => {
            for (_, item) in fields {
                put_optional(item, out);
            }
        }
        CqlValue::Vector(items) => serialize_vector(items, out),
        CqlValue::Empty => {}
    }
}

/// Cassandra 5.0's `VectorType`: fixed-size elements are packed with no lengths; variable-size
/// ones each carry an unsigned vint length.
fn serialize_vector(items: &[CqlValue], out: &mut BytesMut) {
    for item in items {
        if value_is_fixed_size(item) {
            serialize(item, out);
        } else {
            let mut tmp = BytesMut::new();
            serialize(item, &mut tmp);
            write_unsigned_vint(tmp.len() as u64, out);
            out.put_slice(&tmp);
        }
    }
}

/// Whether a value's type has a fixed serialized width, judged from the value alone (the
/// variants map one-to-one onto types, except vectors, which are fixed when their elements are).
fn value_is_fixed_size(v: &CqlValue) -> bool {
    match v {
        CqlValue::Bigint(_)
        | CqlValue::Counter(_)
        | CqlValue::Timestamp(_)
        | CqlValue::Boolean(_)
        | CqlValue::Double(_)
        | CqlValue::Float(_)
        | CqlValue::Int(_)
        | CqlValue::Uuid(_)
        | CqlValue::Timeuuid(_) => true,
        CqlValue::Vector(items) => match items.first() {
            Some(first) => value_is_fixed_size(first),
            None => true,
        },
        _ => false,
    }
}

/// Fixed serialized width of a type, as Cassandra's `valueLengthIfFixed`.
pub(crate) fn type_fixed_size(t: &CqlType) -> Option<usize> {
    match t {
        CqlType::Native(n) => n.fixed_size_bytes(),
        CqlType::Vector { element, dimension } => {
            type_fixed_size(element).map(|s| s.saturating_mul(*dimension as usize))
        }
        _ => None,
    }
}

/// Serializes a value into a fresh buffer.
pub fn serialize_to_bytes(v: &CqlValue) -> Bytes {
    let mut out = BytesMut::new();
    serialize(v, &mut out);
    out.freeze()
}

impl CqlValue {
    /// The native type a scalar value belongs to (`None` for collections, tuples, UDTs, vectors
    /// and `Empty`).
    pub fn native_type(&self) -> Option<NativeType> {
        let t = match self {
            CqlValue::Ascii(_) => NativeType::Ascii,
            CqlValue::Bigint(_) => NativeType::Bigint,
            CqlValue::Blob(_) => NativeType::Blob,
            CqlValue::Boolean(_) => NativeType::Boolean,
            CqlValue::Counter(_) => NativeType::Counter,
            CqlValue::Decimal { .. } => NativeType::Decimal,
            CqlValue::Double(_) => NativeType::Double,
            CqlValue::Float(_) => NativeType::Float,
            CqlValue::Int(_) => NativeType::Int,
            CqlValue::Timestamp(_) => NativeType::Timestamp,
            CqlValue::Uuid(_) => NativeType::Uuid,
            CqlValue::Text(_) => NativeType::Varchar,
            CqlValue::Varint(_) => NativeType::Varint,
            CqlValue::Timeuuid(_) => NativeType::Timeuuid,
            CqlValue::Inet(_) => NativeType::Inet,
            CqlValue::Date(_) => NativeType::Date,
            CqlValue::Time(_) => NativeType::Time,
            CqlValue::Smallint(_) => NativeType::Smallint,
            CqlValue::Tinyint(_) => NativeType::Tinyint,
            CqlValue::Duration { .. } => NativeType::Duration,
            _ => return None,
        };
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_is_minimal_twos_complement() {
        assert_eq!(varint_bytes(&BigInt::from(0)), vec![0]);
        assert_eq!(varint_bytes(&BigInt::from(127)), vec![0x7f]);
        assert_eq!(varint_bytes(&BigInt::from(128)), vec![0, 0x80]);
        assert_eq!(varint_bytes(&BigInt::from(-1)), vec![0xff]);
        assert_eq!(varint_bytes(&BigInt::from(-129)), vec![0xff, 0x7f]);
    }

    #[test]
    fn list_uses_int_counts_and_lengths() {
        let v = CqlValue::List(vec![CqlValue::Int(1), CqlValue::Int(2)]);
        assert_eq!(
            &serialize_to_bytes(&v)[..],
            &[0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 2]
        );
    }

    #[test]
    fn float_vector_is_packed_text_vector_has_vint_lengths() {
        let v = CqlValue::Vector(vec![CqlValue::Float(1.0), CqlValue::Float(2.0)]);
        assert_eq!(serialize_to_bytes(&v).len(), 8);
        let t = CqlValue::Vector(vec![CqlValue::Text("ab".into()), CqlValue::Text("".into())]);
        assert_eq!(&serialize_to_bytes(&t)[..], &[2, b'a', b'b', 0]);
    }

    #[test]
    fn tuple_null_component_is_minus_one() {
        let v = CqlValue::Tuple(vec![None, Some(CqlValue::Tinyint(3))]);
        assert_eq!(
            &serialize_to_bytes(&v)[..],
            &[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 3]
        );
    }
}
