//! Restrictions evaluated on a chunk's encoded values (late materialization): which rows of a
//! row group satisfy `column op value`, without building the column's vector. A dictionary
//! chunk tests each distinct value once and then only looks its codes up; integers and floats
//! are compared as they are decoded, and nothing is spread over the null rows but one bit.
//! What `WHERE c = 'x' ALLOW FILTERING` costs when `c` is not itself selected.

use super::bits::Cursor;
use super::chunk::{chunk_body, decode_dense_ints, decode_floats, decode_validity};
use super::dict::Dictionary;
use super::stats::CompareOp;
use super::varlen::select_bytes;
use super::vector::{java_double_compare, Bitmap, Physical, Scalar, ValueType};
use super::ColumnarError;

/// `value op operand` for values of one column type; a null never satisfies it.
#[derive(Debug, Clone, PartialEq)]
pub struct ValuePredicate {
    pub value_type: ValueType,
    pub op: CompareOp,
    /// None when the operand is not a value of the type: nothing satisfies it.
    pub operand: Option<Scalar>,
}

impl ValuePredicate {
    /// `op` against the serialized operand `value` of type `t`.
    pub fn new(t: ValueType, op: CompareOp, value: &[u8]) -> Self {
        ValuePredicate {
            value_type: t,
            op,
            operand: t.scalar(value),
        }
    }

    pub(crate) fn on_int(&self, a: i64) -> bool {
        match &self.operand {
            Some(Scalar::Int(b)) => self.op.holds(a.cmp(b)),
            _ => false,
        }
    }

    pub(crate) fn on_float(&self, a: f64) -> bool {
        match &self.operand {
            Some(Scalar::Float(b)) => self.op.holds(java_double_compare(a, *b)),
            _ => false,
        }
    }

    /// A serialized value: bytewise for text and blobs, else parsed (a chunk of another type
    /// kept as serialized values, when one value did not fit its vector).
    pub(crate) fn on_bytes(&self, a: &[u8]) -> bool {
        match &self.operand {
            Some(Scalar::Bytes(b)) => self.op.holds(a.cmp(b.as_slice())),
            Some(operand) => self
                .value_type
                .scalar(a)
                .and_then(|v| v.compare(operand))
                .is_some_and(|o| self.op.holds(o)),
            None => false,
        }
    }
}

/// The rows of a chunk (`bytes`, `rows` rows of `physical` type; empty: all null) whose value
/// satisfies `p`; `segment` is the stream's segment dictionary, if it has one.
pub(super) fn select_chunk(
    bytes: &[u8],
    rows: usize,
    physical: Physical,
    p: &ValuePredicate,
    segment: Option<&Dictionary>,
) -> Result<Bitmap, ColumnarError> {
    if bytes.is_empty() || p.operand.is_none() {
        return Ok(Bitmap::filled(rows, false));
    }
    let (nulls, body) = chunk_body(bytes, rows, physical)?;
    let mut c = Cursor::new(&body);
    let validity = decode_validity(&mut c, rows, nulls)?;
    let present = rows - nulls;
    let dense: Vec<bool> = match physical {
        Physical::Bytes => select_bytes(
            &mut c,
            present,
            &|v| p.on_bytes(v),
            segment.and_then(Dictionary::bytes),
        )?,
        Physical::Int => decode_dense_ints(&mut c, present, segment)?
            .iter()
            .map(|v| p.on_int(*v))
            .collect(),
        Physical::Float32 => decode_floats(&mut c, present, true, segment)?
            .iter()
            .map(|b| p.on_float(f64::from(f32::from_bits(*b as u32))))
            .collect(),
        Physical::Float64 => decode_floats(&mut c, present, false, segment)?
            .iter()
            .map(|b| p.on_float(f64::from_bits(*b)))
            .collect(),
    };
    if !c.is_empty() || dense.len() != present {
        return Err(ColumnarError::corrupt("trailing chunk bytes"));
    }
    Ok(Bitmap::spread(dense.into_iter(), validity.as_ref(), rows))
}
