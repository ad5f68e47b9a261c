//! The column type [option] tree.
//!
//! Column types: `[option]` = [short] id + id-specific payload. Custom 0x0000 carries a [string]
//! Java class name; natives are 0x0001-0x0015 (the `NativeType` discriminants; 0x000A is the
//! pre-v3 varchar id and is read as text); list 0x20 / set 0x22 carry one element option; map 0x21
//! two; UDT 0x30 = keyspace [string], name [string], [short] n, n x (field [string], [option]);
//! tuple 0x31 = [short] n, n x [option]. Vectors have no id of their own: Cassandra sends them as
//! the custom type `org.apache.cassandra.db.marshal.VectorType(<element class>,<dimension>)`.
//! The wire carries no frozen-ness, so decoded collections and UDTs come back `frozen: false`.

use bytes::{BufMut, BytesMut};
use helenus_types::{CqlType, NativeType, UserType};

use crate::error::{EncodeError, WireError};
use crate::primitives::{write_string, Reader};

/// Deepest column type nesting accepted from the wire; bounds decoder recursion.
pub const MAX_TYPE_DEPTH: usize = 32;

const MARSHAL: &str = "org.apache.cassandra.db.marshal.";
const VECTOR_PREFIX: &str = "org.apache.cassandra.db.marshal.VectorType(";

fn native_from_id(id: u16) -> Option<NativeType> {
    use NativeType::*;
    Some(match id {
        0x0001 => Ascii,
        0x0002 => Bigint,
        0x0003 => Blob,
        0x0004 => Boolean,
        0x0005 => Counter,
        0x0006 => Decimal,
        0x0007 => Double,
        0x0008 => Float,
        0x0009 => Int,
        0x000A | 0x000D => Varchar,
        0x000B => Timestamp,
        0x000C => Uuid,
        0x000E => Varint,
        0x000F => Timeuuid,
        0x0010 => Inet,
        0x0011 => Date,
        0x0012 => Time,
        0x0013 => Smallint,
        0x0014 => Tinyint,
        0x0015 => Duration,
        _ => return None,
    })
}

/// Cassandra's `AbstractType` class (simple name) for a native type.
fn marshal_class(t: NativeType) -> &'static str {
    use NativeType::*;
    match t {
        Ascii => "AsciiType",
        Bigint => "LongType",
        Blob => "BytesType",
        Boolean => "BooleanType",
        Counter => "CounterColumnType",
        Decimal => "DecimalType",
        Double => "DoubleType",
        Float => "FloatType",
        Int => "Int32Type",
        Timestamp => "TimestampType",
        Uuid => "UUIDType",
        Varchar => "UTF8Type",
        Varint => "IntegerType",
        Timeuuid => "TimeUUIDType",
        Inet => "InetAddressType",
        Date => "SimpleDateType",
        Time => "TimeType",
        Smallint => "ShortType",
        Tinyint => "ByteType",
        Duration => "DurationType",
    }
}

const ALL_NATIVE: [NativeType; 20] = {
    use NativeType::*;
    [
        Ascii, Bigint, Blob, Boolean, Counter, Decimal, Double, Float, Int, Timestamp, Uuid,
        Varchar, Varint, Timeuuid, Inet, Date, Time, Smallint, Tinyint, Duration,
    ]
};

/// Cassandra's marshal type string for a type, as used inside `VectorType(...)`.
/// Only natives, collections, tuples and vectors are expressible here; UDTs are not.
fn marshal_name(t: &CqlType, out: &mut String) -> Result<(), EncodeError> {
    let wrap =
        |out: &mut String, frozen: bool, inner: &dyn Fn(&mut String) -> Result<(), EncodeError>| {
            if frozen {
                out.push_str(MARSHAL);
                out.push_str("FrozenType(");
                inner(out)?;
                out.push(')');
            } else {
                inner(out)?;
            }
            Ok(())
        };
    match t {
        CqlType::Native(n) => {
            out.push_str(MARSHAL);
            out.push_str(marshal_class(*n));
            Ok(())
        }
        CqlType::List { element, frozen } | CqlType::Set { element, frozen } => {
            let name = if matches!(t, CqlType::List { .. }) {
                "ListType("
            } else {
                "SetType("
            };
            wrap(out, *frozen, &|out| {
                out.push_str(MARSHAL);
                out.push_str(name);
                marshal_name(element, out)?;
                out.push(')');
                Ok(())
            })
        }
        CqlType::Map { key, value, frozen } => wrap(out, *frozen, &|out| {
            out.push_str(MARSHAL);
            out.push_str("MapType(");
            marshal_name(key, out)?;
            out.push(',');
            marshal_name(value, out)?;
            out.push(')');
            Ok(())
        }),
        CqlType::Tuple(items) => {
            out.push_str(MARSHAL);
            out.push_str("TupleType(");
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                marshal_name(it, out)?;
            }
            out.push(')');
            Ok(())
        }
        CqlType::Vector { element, dimension } => {
            out.push_str(VECTOR_PREFIX);
            marshal_name(element, out)?;
            out.push(',');
            out.push_str(&dimension.to_string());
            out.push(')');
            Ok(())
        }
        CqlType::Custom(name) => {
            out.push_str(name);
            Ok(())
        }
        CqlType::Udt { .. } => Err(EncodeError::Invalid(
            "vector of UDT has no marshal name here",
        )),
    }
}

/// Splits `a,b(c,d),e` at top-level commas.
fn split_top_level(s: &str) -> Option<Vec<&str>> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.checked_sub(1)?,
            ',' if depth == 0 => {
                parts.push(s.get(start..i)?.trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return None;
    }
    parts.push(s.get(start..)?.trim());
    Some(parts)
}

/// Parses the marshal type strings `marshal_name` produces; `None` for anything else.
fn parse_marshal(s: &str, depth: usize) -> Option<CqlType> {
    if depth > MAX_TYPE_DEPTH {
        return None;
    }
    let short = s.strip_prefix(MARSHAL).unwrap_or(s);
    let (name, args) = match short.find('(') {
        Some(i) => (
            short.get(..i)?,
            Some(short.get(i + 1..)?.strip_suffix(')')?),
        ),
        None => (short, None),
    };
    let args = match args {
        None => {
            return ALL_NATIVE
                .iter()
                .find(|n| marshal_class(**n) == name)
                .map(|n| CqlType::Native(*n))
        }
        Some(a) => split_top_level(a)?,
    };
    let arg = |i: usize| args.get(i).and_then(|a| parse_marshal(a, depth + 1));
    match (name, args.len()) {
        ("FrozenType", 1) => arg(0).map(CqlType::frozen),
        ("ListType", 1) => Some(CqlType::List {
            element: Box::new(arg(0)?),
            frozen: false,
        }),
        ("SetType", 1) => Some(CqlType::Set {
            element: Box::new(arg(0)?),
            frozen: false,
        }),
        ("MapType", 2) => Some(CqlType::Map {
            key: Box::new(arg(0)?),
            value: Box::new(arg(1)?),
            frozen: false,
        }),
        ("TupleType", n) => (0..n)
            .map(arg)
            .collect::<Option<Vec<_>>>()
            .map(CqlType::Tuple),
        ("VectorType", 2) => {
            let dimension = args.get(1)?.parse::<u32>().ok()?;
            Some(CqlType::Vector {
                element: Box::new(arg(0)?),
                dimension,
            })
        }
        _ => None,
    }
}

/// Writes a column type as an [option] tree.
pub fn write_type(out: &mut BytesMut, t: &CqlType) -> Result<(), EncodeError> {
    match t {
        CqlType::Native(n) => out.put_u16(*n as u16),
        CqlType::Custom(name) => {
            out.put_u16(0x0000);
            write_string(out, name)?;
        }
        CqlType::Vector { .. } => {
            let mut name = String::new();
            marshal_name(t, &mut name)?;
            out.put_u16(0x0000);
            write_string(out, &name)?;
        }
        CqlType::List { element, .. } => {
            out.put_u16(0x0020);
            write_type(out, element)?;
        }
        CqlType::Map { key, value, .. } => {
            out.put_u16(0x0021);
            write_type(out, key)?;
            write_type(out, value)?;
        }
        CqlType::Set { element, .. } => {
            out.put_u16(0x0022);
            write_type(out, element)?;
        }
        CqlType::Udt { def, .. } => {
            out.put_u16(0x0030);
            write_string(out, &def.keyspace)?;
            write_string(out, &def.name)?;
            let n = u16::try_from(def.fields.len()).map_err(|_| EncodeError::TooLong {
                what: "UDT fields",
                len: def.fields.len(),
            })?;
            out.put_u16(n);
            for (name, ft) in &def.fields {
                write_string(out, name)?;
                write_type(out, ft)?;
            }
        }
        CqlType::Tuple(items) => {
            out.put_u16(0x0031);
            let n = u16::try_from(items.len()).map_err(|_| EncodeError::TooLong {
                what: "tuple",
                len: items.len(),
            })?;
            out.put_u16(n);
            for it in items {
                write_type(out, it)?;
            }
        }
    }
    Ok(())
}

/// Reads a column type [option] tree, at most [`MAX_TYPE_DEPTH`] deep.
pub fn read_type(r: &mut Reader) -> Result<CqlType, WireError> {
    read_type_at(r, 0)
}

fn read_type_at(r: &mut Reader, depth: usize) -> Result<CqlType, WireError> {
    if depth > MAX_TYPE_DEPTH {
        return Err(WireError::TypeNestingTooDeep);
    }
    let id = r.read_u16()?;
    if let Some(n) = native_from_id(id) {
        return Ok(CqlType::Native(n));
    }
    let d = depth + 1;
    Ok(match id {
        0x0000 => {
            let name = r.read_string()?;
            if name.starts_with(VECTOR_PREFIX) {
                if let Some(v) = parse_marshal(&name, 0) {
                    return Ok(v);
                }
            }
            CqlType::Custom(name)
        }
        0x0020 => CqlType::List {
            element: Box::new(read_type_at(r, d)?),
            frozen: false,
        },
        0x0021 => {
            let key = Box::new(read_type_at(r, d)?);
            let value = Box::new(read_type_at(r, d)?);
            CqlType::Map {
                key,
                value,
                frozen: false,
            }
        }
        0x0022 => CqlType::Set {
            element: Box::new(read_type_at(r, d)?),
            frozen: false,
        },
        0x0030 => {
            let keyspace = r.read_string()?;
            let name = r.read_string()?;
            let n = r.read_u16()? as usize;
            // Each field is at least a 2-byte name length and a 2-byte type id.
            let mut fields = Vec::with_capacity(r.capped(n) / 4);
            for _ in 0..n {
                let fname = r.read_string()?;
                fields.push((fname, read_type_at(r, d)?));
            }
            CqlType::Udt {
                def: Box::new(UserType {
                    keyspace,
                    name,
                    fields,
                }),
                frozen: false,
            }
        }
        0x0031 => {
            let n = r.read_u16()? as usize;
            let mut items = Vec::with_capacity(r.capped(n) / 2);
            for _ in 0..n {
                items.push(read_type_at(r, d)?);
            }
            CqlType::Tuple(items)
        }
        other => return Err(WireError::UnknownTypeId(other)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(t: &CqlType) -> CqlType {
        let mut out = BytesMut::new();
        write_type(&mut out, t).unwrap();
        read_type(&mut Reader::new(out.freeze())).unwrap()
    }

    #[test]
    fn float_vector_is_sent_as_cassandras_custom_type_string() {
        let v = CqlType::Vector {
            element: Box::new(CqlType::Native(NativeType::Float)),
            dimension: 3,
        };
        let mut out = BytesMut::new();
        write_type(&mut out, &v).unwrap();
        let name = "org.apache.cassandra.db.marshal.VectorType(org.apache.cassandra.db.marshal.FloatType,3)";
        let mut expected = vec![0u8, 0, 0, name.len() as u8];
        expected.extend_from_slice(name.as_bytes());
        assert_eq!(&out[..], &expected[..]);
        assert_eq!(round_trip(&v), v);
    }

    #[test]
    fn nested_collections_udt_and_tuple_round_trip() {
        let udt = CqlType::Udt {
            def: Box::new(UserType {
                keyspace: "ks".into(),
                name: "addr".into(),
                fields: vec![("street".into(), CqlType::Native(NativeType::Varchar))],
            }),
            frozen: false,
        };
        let t = CqlType::Map {
            key: Box::new(CqlType::Native(NativeType::Int)),
            value: Box::new(CqlType::List {
                element: Box::new(CqlType::Tuple(vec![
                    udt,
                    CqlType::Native(NativeType::Duration),
                ])),
                frozen: false,
            }),
            frozen: false,
        };
        assert_eq!(round_trip(&t), t);
    }

    #[test]
    fn deeply_nested_list_is_rejected() {
        let mut out = BytesMut::new();
        for _ in 0..1000 {
            out.put_u16(0x20);
        }
        out.put_u16(0x09);
        assert_eq!(
            read_type(&mut Reader::new(out.freeze())),
            Err(WireError::TypeNestingTooDeep)
        );
    }

    #[test]
    fn unknown_custom_class_stays_custom() {
        let t = CqlType::Custom("com.example.MyType".into());
        assert_eq!(round_trip(&t), t);
    }
}
