//! How each CQL type becomes a Parquet column, and how a serialized CQL value (as a read
//! returns it, the native protocol's encoding) becomes that column's value.
//!
//! Numbers, booleans, text, blobs, timestamps and dates get Parquet's own physical and
//! logical types. Values Parquet has no faithful type for are written as their CQL text:
//! `uuid`/`timeuuid` (Parquet's UUID annotation is unread by Spark 3.5), `inet`, `decimal`
//! (a scale per value, where Parquet's DECIMAL fixes one per column), `varint` (unbounded,
//! past every reader's decimal precision) and `duration` (Parquet's INTERVAL is unsigned and in
//! milliseconds). `time` is plain INT64 nanoseconds since midnight: Spark 3.5 refuses Parquet's
//! TIME annotation. Collections, tuples, UDTs and vectors are JSON text, as `SELECT JSON` prints
//! them: nested Parquet types would take longer than this first version could give.

use crate::ExportError;
use bytes::Bytes;
use helenus_types::{CqlType, NativeType};
use parquet::basic::{LogicalType, Repetition, TimeUnit, Type as PhysicalType};
use parquet::data_type::ByteArray;
use parquet::schema::types::{Type, TypePtr};
use std::sync::Arc;

/// The Parquet shape of one CQL column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    Boolean,
    /// `int`.
    Int32,
    /// `smallint`: INT32 annotated as 16-bit.
    Int16,
    /// `tinyint`: INT32 annotated as 8-bit.
    Int8,
    /// `bigint` and `counter`.
    Int64,
    Float,
    Double,
    /// `text`, `varchar`, `ascii`: UTF-8 strings.
    Text,
    /// `blob` and custom types: bytes as stored.
    Blob,
    /// `timestamp`: INT64 milliseconds since the epoch, UTC.
    TimestampMillis,
    /// `date`: INT32 days since the epoch.
    Date,
    /// `time`: INT64 nanoseconds since midnight, without Parquet's TIME annotation (see
    /// `logical`).
    TimeNanos,
    /// A value written as its CQL text (uuid, timeuuid, inet, decimal, varint, duration).
    PlainText,
    /// A collection, tuple, UDT or vector, written as `SELECT JSON` text.
    Json,
}

impl ColumnKind {
    /// The kind a column of CQL type `t` is written as.
    pub fn of(t: &CqlType) -> ColumnKind {
        let CqlType::Native(n) = t else {
            return match t {
                CqlType::Custom(_) => ColumnKind::Blob,
                _ => ColumnKind::Json,
            };
        };
        match n {
            NativeType::Boolean => ColumnKind::Boolean,
            NativeType::Int => ColumnKind::Int32,
            NativeType::Smallint => ColumnKind::Int16,
            NativeType::Tinyint => ColumnKind::Int8,
            NativeType::Bigint | NativeType::Counter => ColumnKind::Int64,
            NativeType::Float => ColumnKind::Float,
            NativeType::Double => ColumnKind::Double,
            NativeType::Ascii | NativeType::Varchar => ColumnKind::Text,
            NativeType::Blob => ColumnKind::Blob,
            NativeType::Timestamp => ColumnKind::TimestampMillis,
            NativeType::Date => ColumnKind::Date,
            NativeType::Time => ColumnKind::TimeNanos,
            NativeType::Uuid
            | NativeType::Timeuuid
            | NativeType::Inet
            | NativeType::Decimal
            | NativeType::Varint
            | NativeType::Duration => ColumnKind::PlainText,
        }
    }

    pub fn physical(self) -> PhysicalType {
        match self {
            ColumnKind::Boolean => PhysicalType::BOOLEAN,
            ColumnKind::Int32 | ColumnKind::Int16 | ColumnKind::Int8 | ColumnKind::Date => {
                PhysicalType::INT32
            }
            ColumnKind::Int64 | ColumnKind::TimestampMillis | ColumnKind::TimeNanos => {
                PhysicalType::INT64
            }
            ColumnKind::Float => PhysicalType::FLOAT,
            ColumnKind::Double => PhysicalType::DOUBLE,
            ColumnKind::Text | ColumnKind::Blob | ColumnKind::PlainText | ColumnKind::Json => {
                PhysicalType::BYTE_ARRAY
            }
        }
    }

    pub fn logical(self) -> Option<LogicalType> {
        match self {
            ColumnKind::Int16 => Some(LogicalType::integer(16, true)),
            ColumnKind::Int8 => Some(LogicalType::integer(8, true)),
            ColumnKind::TimestampMillis => Some(LogicalType::timestamp(true, TimeUnit::MILLIS)),
            ColumnKind::Date => Some(LogicalType::Date),
            // JSON text is annotated as a string: DuckDB's JSON type needs an extension
            // loaded, and every reader knows strings.
            ColumnKind::Text | ColumnKind::PlainText | ColumnKind::Json => {
                Some(LogicalType::String)
            }
            // Parquet's TIME(NANOS) would fit, but Spark 3.5 refuses any TIME column ("Illegal
            // Parquet type"), and the whole file with it: plain nanoseconds since midnight.
            ColumnKind::TimeNanos
            | ColumnKind::Boolean
            | ColumnKind::Int32
            | ColumnKind::Int64
            | ColumnKind::Float
            | ColumnKind::Double
            | ColumnKind::Blob => None,
        }
    }
}

/// One column of an exported table: its CQL name and type.
#[derive(Debug, Clone)]
pub struct ExportColumn {
    pub name: String,
    pub cql_type: CqlType,
}

/// The Parquet schema of `columns`, in their order; every column optional (a static-only
/// partition's row has null clustering columns, and any regular column may be unset).
pub fn parquet_schema(columns: &[ExportColumn]) -> Result<TypePtr, ExportError> {
    let mut fields = Vec::with_capacity(columns.len());
    for c in columns {
        let kind = ColumnKind::of(&c.cql_type);
        let field = Type::primitive_type_builder(&c.name, kind.physical())
            .with_repetition(Repetition::OPTIONAL)
            .with_logical_type(kind.logical())
            .build()?;
        fields.push(Arc::new(field));
    }
    Ok(Arc::new(
        Type::group_type_builder("schema")
            .with_fields(fields)
            .build()?,
    ))
}

/// One value converted for its column; `None` is null.
#[derive(Debug, Clone, PartialEq)]
pub enum ParquetValue {
    Boolean(bool),
    Int32(i32),
    Int64(i64),
    Float(f32),
    Double(f64),
    Bytes(ByteArray),
}

/// `date` is stored with the epoch at 2^31 (so that unsigned order is date order).
const DATE_EPOCH: i64 = 1 << 31;

fn fixed<const N: usize>(column: &str, v: &[u8]) -> Result<[u8; N], ExportError> {
    v.try_into().map_err(|_| ExportError::BadValue {
        column: column.to_string(),
        reason: format!("{} bytes where {N} were expected", v.len()),
    })
}

/// Converts the serialized CQL value `v` of column `c` (kind `kind`); an empty value of a
/// fixed-width type (`blobAsInt(0x)`, which drivers read as null) is null.
pub fn convert(
    c: &ExportColumn,
    kind: ColumnKind,
    v: &Bytes,
) -> Result<Option<ParquetValue>, ExportError> {
    let name = c.name.as_str();
    if v.is_empty() && !matches!(kind, ColumnKind::Text | ColumnKind::Blob) {
        return Ok(None);
    }
    let out = match kind {
        ColumnKind::Boolean => ParquetValue::Boolean(fixed::<1>(name, v)? != [0]),
        ColumnKind::Int32 => ParquetValue::Int32(i32::from_be_bytes(fixed(name, v)?)),
        ColumnKind::Int16 => ParquetValue::Int32(i16::from_be_bytes(fixed(name, v)?).into()),
        ColumnKind::Int8 => ParquetValue::Int32(i8::from_be_bytes(fixed(name, v)?).into()),
        ColumnKind::Int64 | ColumnKind::TimestampMillis | ColumnKind::TimeNanos => {
            ParquetValue::Int64(i64::from_be_bytes(fixed(name, v)?))
        }
        ColumnKind::Float => ParquetValue::Float(f32::from_be_bytes(fixed(name, v)?)),
        ColumnKind::Double => ParquetValue::Double(f64::from_be_bytes(fixed(name, v)?)),
        ColumnKind::Date => {
            let raw = i64::from(u32::from_be_bytes(fixed(name, v)?));
            // In range by construction: a u32 less 2^31 fits an i32.
            ParquetValue::Int32((raw - DATE_EPOCH) as i32)
        }
        // Bytes as read: no copy.
        ColumnKind::Text | ColumnKind::Blob => ParquetValue::Bytes(ByteArray::from(v.clone())),
        ColumnKind::PlainText | ColumnKind::Json => {
            let value =
                helenus_types::deserialize(&c.cql_type, v).map_err(|e| ExportError::BadValue {
                    column: c.name.clone(),
                    reason: e.to_string(),
                })?;
            let text = if kind == ColumnKind::Json {
                helenus_types::to_json(&value)
            } else {
                helenus_types::to_plain_string(&value)
            };
            ParquetValue::Bytes(ByteArray::from(text.into_bytes()))
        }
    };
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use helenus_types::{serialize_to_bytes, CqlValue};

    fn col(t: CqlType) -> ExportColumn {
        ExportColumn {
            name: "c".into(),
            cql_type: t,
        }
    }

    fn native(n: NativeType) -> CqlType {
        CqlType::Native(n)
    }

    fn convert_value(t: CqlType, v: CqlValue) -> Option<ParquetValue> {
        let c = col(t);
        let bytes = serialize_to_bytes(&v);
        convert(&c, ColumnKind::of(&c.cql_type), &bytes).unwrap()
    }

    fn text(s: &str) -> Option<ParquetValue> {
        Some(ParquetValue::Bytes(ByteArray::from(s.as_bytes().to_vec())))
    }

    #[test]
    fn integer_types_keep_their_width_as_logical_types() {
        assert_eq!(ColumnKind::of(&native(NativeType::Int)).logical(), None);
        assert_eq!(
            ColumnKind::of(&native(NativeType::Smallint)).logical(),
            Some(LogicalType::integer(16, true))
        );
        assert_eq!(
            ColumnKind::of(&native(NativeType::Tinyint)).physical(),
            PhysicalType::INT32
        );
        assert_eq!(
            ColumnKind::of(&native(NativeType::Counter)).physical(),
            PhysicalType::INT64
        );
    }

    #[test]
    fn time_types_map_to_parquet_time_logical_types() {
        assert_eq!(
            ColumnKind::of(&native(NativeType::Timestamp)).logical(),
            Some(LogicalType::timestamp(true, TimeUnit::MILLIS))
        );
        // Spark 3.5 cannot read a TIME column at all.
        assert_eq!(ColumnKind::of(&native(NativeType::Time)).logical(), None);
        assert_eq!(
            ColumnKind::of(&native(NativeType::Time)).physical(),
            PhysicalType::INT64
        );
        assert_eq!(
            ColumnKind::of(&native(NativeType::Date)).logical(),
            Some(LogicalType::Date)
        );
    }

    #[test]
    fn collections_and_udts_are_json_text() {
        let list = CqlType::List {
            element: Box::new(native(NativeType::Int)),
            frozen: false,
        };
        assert_eq!(ColumnKind::of(&list), ColumnKind::Json);
        assert_eq!(ColumnKind::of(&list).logical(), Some(LogicalType::String));
        let v = CqlValue::List(vec![CqlValue::Int(1), CqlValue::Int(-2)]);
        assert_eq!(convert_value(list, v), text("[1, -2]"));
        let map = CqlType::Map {
            key: Box::new(native(NativeType::Varchar)),
            value: Box::new(native(NativeType::Bigint)),
            frozen: true,
        };
        let v = CqlValue::Map(vec![(CqlValue::Text("a\"b".into()), CqlValue::Bigint(7))]);
        assert_eq!(convert_value(map, v), text("{\"a\\\"b\": 7}"));
    }

    #[test]
    fn fixed_width_values_decode_big_endian() {
        assert_eq!(
            convert_value(native(NativeType::Int), CqlValue::Int(-5)),
            Some(ParquetValue::Int32(-5))
        );
        assert_eq!(
            convert_value(native(NativeType::Smallint), CqlValue::Smallint(-300)),
            Some(ParquetValue::Int32(-300))
        );
        assert_eq!(
            convert_value(native(NativeType::Tinyint), CqlValue::Tinyint(-128)),
            Some(ParquetValue::Int32(-128))
        );
        assert_eq!(
            convert_value(native(NativeType::Bigint), CqlValue::Bigint(i64::MIN)),
            Some(ParquetValue::Int64(i64::MIN))
        );
        assert_eq!(
            convert_value(native(NativeType::Double), CqlValue::Double(2.5)),
            Some(ParquetValue::Double(2.5))
        );
        assert_eq!(
            convert_value(native(NativeType::Float), CqlValue::Float(-0.25)),
            Some(ParquetValue::Float(-0.25))
        );
        assert_eq!(
            convert_value(native(NativeType::Boolean), CqlValue::Boolean(true)),
            Some(ParquetValue::Boolean(true))
        );
        assert_eq!(
            convert_value(
                native(NativeType::Timestamp),
                CqlValue::Timestamp(1_700_000_000_123)
            ),
            Some(ParquetValue::Int64(1_700_000_000_123))
        );
    }

    #[test]
    fn dates_count_days_from_the_unix_epoch() {
        let epoch = 1u32 << 31;
        assert_eq!(
            convert_value(native(NativeType::Date), CqlValue::Date(epoch)),
            Some(ParquetValue::Int32(0))
        );
        assert_eq!(
            convert_value(native(NativeType::Date), CqlValue::Date(epoch - 1)),
            Some(ParquetValue::Int32(-1))
        );
        assert_eq!(
            convert_value(native(NativeType::Date), CqlValue::Date(u32::MAX)),
            Some(ParquetValue::Int32(i32::MAX))
        );
        assert_eq!(
            convert_value(native(NativeType::Date), CqlValue::Date(0)),
            Some(ParquetValue::Int32(i32::MIN))
        );
    }

    #[test]
    fn text_forms_for_values_parquet_cannot_hold_exactly() {
        let u =
            CqlValue::Uuid(uuid::Uuid::parse_str("550e8400-e29b-41d4-a716-446655440000").unwrap());
        assert_eq!(
            convert_value(native(NativeType::Uuid), u),
            text("550e8400-e29b-41d4-a716-446655440000")
        );
        let d = CqlValue::Decimal {
            unscaled: 12345.into(),
            scale: 3,
        };
        assert_eq!(
            convert_value(native(NativeType::Decimal), d),
            text("12.345")
        );
        let big: num_bigint::BigInt = "123456789012345678901234567890".parse().unwrap();
        assert_eq!(
            convert_value(native(NativeType::Varint), CqlValue::Varint(big)),
            text("123456789012345678901234567890")
        );
        assert_eq!(
            convert_value(
                native(NativeType::Inet),
                CqlValue::Inet("10.0.0.1".parse().unwrap())
            ),
            text("10.0.0.1")
        );
        let dur = CqlValue::Duration {
            months: 14,
            days: 3,
            nanos: 5_000_000_000,
        };
        assert_eq!(
            convert_value(native(NativeType::Duration), dur),
            text("1y2mo3d5s")
        );
    }

    #[test]
    fn empty_values_of_fixed_width_types_are_null_but_empty_text_is_not() {
        let int = col(native(NativeType::Int));
        assert_eq!(
            convert(&int, ColumnKind::Int32, &Bytes::new()).unwrap(),
            None
        );
        let t = col(native(NativeType::Varchar));
        assert_eq!(
            convert(&t, ColumnKind::Text, &Bytes::new()).unwrap(),
            text("")
        );
    }

    #[test]
    fn a_value_of_the_wrong_width_is_an_error_not_a_panic() {
        let int = col(native(NativeType::Int));
        let err = convert(&int, ColumnKind::Int32, &Bytes::from_static(&[1, 2, 3])).unwrap_err();
        assert!(err.to_string().contains("3 bytes where 4"), "{err}");
    }

    #[test]
    fn schema_has_one_optional_column_per_cql_column_in_order() {
        let cols = vec![
            ExportColumn {
                name: "id".into(),
                cql_type: native(NativeType::Uuid),
            },
            ExportColumn {
                name: "n".into(),
                cql_type: native(NativeType::Smallint),
            },
        ];
        let schema = parquet_schema(&cols).unwrap();
        let fields = schema.get_fields();
        assert_eq!(fields.len(), 2);
        assert_eq!(fields[0].name(), "id");
        assert_eq!(fields[1].name(), "n");
        assert_eq!(
            fields[1].get_basic_info().repetition(),
            Repetition::OPTIONAL
        );
        assert_eq!(
            fields[1].get_basic_info().logical_type_ref(),
            Some(&LogicalType::integer(16, true))
        );
    }
}
