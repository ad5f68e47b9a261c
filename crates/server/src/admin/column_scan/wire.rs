//! The column-scan stream's body: what the Helenus Spark source (connectors/spark) decodes
//! straight into Spark's column vectors. Everything is little-endian, the byte order of the
//! machines Spark runs on, so the reader copies each fixed-width vector in one call.
//!
//! ```text
//! body   := "HCS1" frame*
//! frame  := 0x01 u32(len) batch      -- a batch of len bytes
//!         | 0x00 u64(rows)           -- the end: rows sent in all (a body without it was cut)
//!         | 0x02 u32(len) utf8       -- the scan failed: why
//! batch  := u32(rows) column*        -- one per requested column, in the request's order
//! column := u8(has_nulls) [validity: ceil(rows/8) bytes, bit i set = row i has a value]
//!           values
//! values := rows x fixed width (the column's wire kind)
//!         | u32 offsets x (rows + 1), then the bytes          -- variable width
//! ```

use helenus_storage::columnar::{Column, ColumnValues, Scalar, ValueType};

pub const MAGIC: &[u8; 4] = b"HCS1";
pub const FRAME_END: u8 = 0;
pub const FRAME_BATCH: u8 = 1;
pub const FRAME_ERROR: u8 = 2;

/// Days from 0000 to the epoch as CQL's `date` counts them: its values are days + 2^31.
const DATE_EPOCH: i64 = 1 << 31;

/// How a column's values travel, named in the plan so the reader picks the Spark type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireKind {
    Bool,
    I8,
    I16,
    I32,
    /// Days since the epoch (Spark's `DateType`), 4 bytes.
    Date,
    I64,
    /// Nanoseconds since midnight (CQL `time`), 8 bytes.
    Time,
    /// Microseconds since the epoch (Spark's `TimestampType`), 8 bytes.
    Timestamp,
    F32,
    F64,
    Text,
    Blob,
    /// 16 bytes the reader prints as a UUID.
    Uuid,
    /// An address's 4 or 16 bytes, printed by the reader.
    Inet,
    /// Cassandra's serialized bytes of a type Spark has no cheap form for (varint, decimal,
    /// duration, frozen collections and UDTs): binary.
    Opaque,
}

impl WireKind {
    pub fn of(value_type: ValueType, cql_type: &str) -> WireKind {
        match value_type {
            ValueType::Boolean => WireKind::Bool,
            ValueType::TinyInt => WireKind::I8,
            ValueType::SmallInt => WireKind::I16,
            ValueType::Int => WireKind::I32,
            ValueType::Date => WireKind::Date,
            ValueType::BigInt => WireKind::I64,
            ValueType::Time => WireKind::Time,
            ValueType::Timestamp => WireKind::Timestamp,
            ValueType::Float => WireKind::F32,
            ValueType::Double => WireKind::F64,
            ValueType::Text => WireKind::Text,
            ValueType::Blob => WireKind::Blob,
            ValueType::Opaque => match cql_type {
                "uuid" | "timeuuid" => WireKind::Uuid,
                "inet" => WireKind::Inet,
                _ => WireKind::Opaque,
            },
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            WireKind::Bool => "bool",
            WireKind::I8 => "i8",
            WireKind::I16 => "i16",
            WireKind::I32 => "i32",
            WireKind::Date => "date",
            WireKind::I64 => "i64",
            WireKind::Time => "time",
            WireKind::Timestamp => "timestamp",
            WireKind::F32 => "f32",
            WireKind::F64 => "f64",
            WireKind::Text => "text",
            WireKind::Blob => "blob",
            WireKind::Uuid => "uuid",
            WireKind::Inet => "inet",
            WireKind::Opaque => "opaque",
        }
    }

    /// Bytes per value; None for variable-width kinds.
    fn width(self) -> Option<usize> {
        match self {
            WireKind::Bool | WireKind::I8 => Some(1),
            WireKind::I16 => Some(2),
            WireKind::I32 | WireKind::Date | WireKind::F32 => Some(4),
            WireKind::I64 | WireKind::Time | WireKind::Timestamp | WireKind::F64 => Some(8),
            WireKind::Text
            | WireKind::Blob
            | WireKind::Uuid
            | WireKind::Inet
            | WireKind::Opaque => None,
        }
    }

    /// An integer as storage keeps it (`date` offset by 2^31, `timestamp` in ms) in this
    /// kind's units, little-endian.
    fn put_int(self, v: i64, out: &mut Vec<u8>) {
        match self {
            WireKind::Bool => out.push(u8::from(v != 0)),
            WireKind::I8 => out.push(v as i8 as u8),
            WireKind::I16 => out.extend_from_slice(&(v as i16).to_le_bytes()),
            WireKind::I32 => out.extend_from_slice(&(v as i32).to_le_bytes()),
            WireKind::Date => out.extend_from_slice(&((v - DATE_EPOCH) as i32).to_le_bytes()),
            WireKind::Timestamp => out.extend_from_slice(&v.saturating_mul(1000).to_le_bytes()),
            _ => out.extend_from_slice(&v.to_le_bytes()),
        }
    }
}

/// Appends one column of `rows` rows, taking row `keep[i]` of `col` as row i (all rows, in
/// order, when `keep` is None).
pub fn put_column(out: &mut Vec<u8>, col: &Column, kind: WireKind, keep: Option<&[u32]>) {
    let rows = keep.map_or(col.len(), <[u32]>::len);
    let at = |i: usize| keep.map_or(i, |k| k.get(i).map_or(usize::MAX, |&r| r as usize));
    put_validity(out, rows, |i| col.is_valid(at(i)), col.null_count() > 0);
    out.reserve(rows * kind.width().unwrap_or(4));
    match (&col.values, kind.width()) {
        (ColumnValues::Int(v), Some(_)) => {
            for i in 0..rows {
                kind.put_int(v.get(at(i)).copied().unwrap_or(0), out);
            }
        }
        (ColumnValues::Float32(v), Some(4)) => {
            for i in 0..rows {
                out.extend_from_slice(&v.get(at(i)).copied().unwrap_or(0.0).to_le_bytes());
            }
        }
        (ColumnValues::Float64(v), Some(8)) => {
            for i in 0..rows {
                out.extend_from_slice(&v.get(at(i)).copied().unwrap_or(0.0).to_le_bytes());
            }
        }
        (ColumnValues::Bytes(v), None) => put_variable(out, rows, |i| v.get(at(i))),
        // A chunk stored as bytes although its type is fixed-width (Cassandra accepts empty
        // values for most types; such a chunk keeps them as bytes): each value parsed alone.
        (ColumnValues::Bytes(v), Some(_)) => {
            for i in 0..rows {
                put_fixed_serialized(out, kind, value_type_of(kind), v.get(at(i)));
            }
        }
        _ => {
            // Storage decodes a column's chunks into its type's vector; anything else would
            // be a defect, and zeros keep the frame's shape whole.
            let width = kind.width().unwrap_or(0);
            if width == 0 {
                put_variable(out, rows, |_| &[]);
            } else {
                out.resize(out.len() + rows * width, 0);
            }
        }
    }
}

/// Appends a column of serialized values (key columns, which storage keeps as bytes).
pub fn put_serialized(out: &mut Vec<u8>, values: &[Option<&[u8]>], kind: WireKind) {
    put_validity(
        out,
        values.len(),
        |i| values.get(i).is_some_and(Option::is_some),
        values.iter().any(Option::is_none),
    );
    let get = |i: usize| values.get(i).copied().flatten().unwrap_or_default();
    if kind.width().is_some() {
        for i in 0..values.len() {
            put_fixed_serialized(out, kind, value_type_of(kind), get(i));
        }
    } else {
        put_variable(out, values.len(), get);
    }
}

/// The storage value type a fixed-width kind reads serialized values as.
fn value_type_of(kind: WireKind) -> ValueType {
    match kind {
        WireKind::Bool => ValueType::Boolean,
        WireKind::I8 => ValueType::TinyInt,
        WireKind::I16 => ValueType::SmallInt,
        WireKind::I32 => ValueType::Int,
        WireKind::Date => ValueType::Date,
        WireKind::Time => ValueType::Time,
        WireKind::Timestamp => ValueType::Timestamp,
        WireKind::F32 => ValueType::Float,
        WireKind::F64 => ValueType::Double,
        WireKind::I64 => ValueType::BigInt,
        _ => ValueType::Opaque,
    }
}

/// One serialized value as a fixed-width kind; a value of the wrong length (an empty one)
/// goes as zero, its row already marked null by the caller or read as Cassandra's empty value.
fn put_fixed_serialized(out: &mut Vec<u8>, kind: WireKind, vt: ValueType, b: &[u8]) {
    match (vt.scalar(b), kind) {
        (Some(Scalar::Int(v)), _) => kind.put_int(v, out),
        (Some(Scalar::Float(v)), WireKind::F32) => out.extend_from_slice(&(v as f32).to_le_bytes()),
        (Some(Scalar::Float(v)), _) => out.extend_from_slice(&v.to_le_bytes()),
        _ => out.resize(out.len() + kind.width().unwrap_or(0), 0),
    }
}

fn put_validity(out: &mut Vec<u8>, rows: usize, valid: impl Fn(usize) -> bool, has_nulls: bool) {
    out.push(u8::from(has_nulls));
    if !has_nulls {
        return;
    }
    let start = out.len();
    out.resize(start + rows.div_ceil(8), 0);
    for i in 0..rows {
        if valid(i) {
            if let Some(b) = out.get_mut(start + i / 8) {
                *b |= 1 << (i % 8);
            }
        }
    }
}

fn put_variable<'a>(out: &mut Vec<u8>, rows: usize, value: impl Fn(usize) -> &'a [u8]) {
    let mut offset = 0u32;
    out.extend_from_slice(&offset.to_le_bytes());
    for i in 0..rows {
        offset = offset.saturating_add(value(i).len() as u32);
        out.extend_from_slice(&offset.to_le_bytes());
    }
    for i in 0..rows {
        out.extend_from_slice(value(i));
    }
}

/// A batch frame: kind, length, then `payload` (the batch).
pub fn batch_frame(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 5);
    out.push(FRAME_BATCH);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

pub fn end_frame(rows: u64) -> Vec<u8> {
    let mut out = vec![FRAME_END];
    out.extend_from_slice(&rows.to_le_bytes());
    out
}

pub fn error_frame(message: &str) -> Vec<u8> {
    let mut out = vec![FRAME_ERROR];
    out.extend_from_slice(&(message.len() as u32).to_le_bytes());
    out.extend_from_slice(message.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use helenus_storage::columnar::{Bitmap, BytesVec};

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
    }

    #[test]
    fn ints_go_in_their_spark_units_with_nulls_marked() {
        let mut validity = Bitmap::with_capacity(3);
        for present in [true, false, true] {
            validity.push(present);
        }
        let col = Column {
            values: ColumnValues::Int(vec![DATE_EPOCH + 3, 0, DATE_EPOCH - 1]),
            validity: Some(validity),
        };
        let mut out = Vec::new();
        put_column(&mut out, &col, WireKind::Date, None);
        assert_eq!(out[0], 1, "has nulls");
        assert_eq!(out[1], 0b101, "row 1 is null");
        assert_eq!(&out[2..6], &3i32.to_le_bytes());
        assert_eq!(&out[10..14], &(-1i32).to_le_bytes());

        let ts = Column {
            values: ColumnValues::Int(vec![1_700_000_000_123]),
            validity: None,
        };
        let mut out = Vec::new();
        put_column(&mut out, &ts, WireKind::Timestamp, None);
        assert_eq!(
            out,
            [&[0u8][..], &1_700_000_000_123_000i64.to_le_bytes()].concat()
        );
    }

    #[test]
    fn kept_rows_alone_are_sent_in_their_order() {
        let mut v = BytesVec::default();
        for s in ["a", "bb", "ccc", "dddd"] {
            v.push(s.as_bytes());
        }
        let col = Column {
            values: ColumnValues::Bytes(v),
            validity: None,
        };
        let mut out = Vec::new();
        put_column(&mut out, &col, WireKind::Text, Some(&[3, 1]));
        assert_eq!(out[0], 0);
        assert_eq!(
            [u32_at(&out, 1), u32_at(&out, 5), u32_at(&out, 9)],
            [0, 4, 6]
        );
        assert_eq!(&out[13..], b"ddddbb");
    }

    #[test]
    fn serialized_key_values_parse_by_kind() {
        let a = 7i32.to_be_bytes();
        let b = (-2i32).to_be_bytes();
        let mut out = Vec::new();
        put_serialized(&mut out, &[Some(&a[..]), None, Some(&b[..])], WireKind::I32);
        assert_eq!(out[0], 1);
        assert_eq!(out[1], 0b101);
        assert_eq!(&out[2..6], &7i32.to_le_bytes());
        assert_eq!(&out[10..14], &(-2i32).to_le_bytes());

        let mut out = Vec::new();
        put_serialized(&mut out, &[Some(b"xy".as_slice())], WireKind::Text);
        assert_eq!(out, [0, 0, 0, 0, 0, 2, 0, 0, 0, b'x', b'y']);
    }

    #[test]
    fn frames_say_what_they_hold() {
        assert_eq!(batch_frame(b"abc"), [1, 3, 0, 0, 0, b'a', b'b', b'c']);
        assert_eq!(end_frame(5), [0, 5, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(error_frame("no"), [2, 2, 0, 0, 0, b'n', b'o']);
    }
}
