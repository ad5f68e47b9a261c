//! Restrictions evaluated on a chunk's encoded values (late materialization): which rows of a
//! row group satisfy `column op value`, without building the column's vector. A dictionary
//! chunk tests each distinct value once and then only looks its codes up; integers and floats
//! are compared as they are decoded, and nothing is spread over the null rows but one bit.
//! What `WHERE c = 'x' ALLOW FILTERING` costs when `c` is not itself selected.

use super::bits::Cursor;
use super::chunk::{chunk_body, decode_dense_ints, decode_floats, decode_validity, segment_codes};
use super::dict::Dictionary;
use super::ints::select_codes;
use super::stats::CompareOp;
use super::varlen::select_bytes;
use super::vector::{
    java_double_compare, Bitmap, Column, ColumnValues, Physical, Scalar, ValueType,
};
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
    let on_number = |v: i64| match physical {
        Physical::Float32 => p.on_float(f64::from(f32::from_bits(v as u32))),
        Physical::Float64 => p.on_float(f64::from_bits(v as u64)),
        _ => p.on_int(v),
    };
    // Codes into the segment's dictionary: each entry tested once, not each row's value.
    let coded = segment_codes(&mut c, physical, segment)?;
    let dense: Vec<bool> = match (physical, coded) {
        (_, Some(dict)) => select_codes(&mut c, present, dict, on_number)?,
        (Physical::Bytes, None) => select_bytes(
            &mut c,
            present,
            &|v| p.on_bytes(v),
            segment.and_then(Dictionary::bytes),
        )?,
        (Physical::Int, None) => decode_dense_ints(&mut c, present, segment, None)?
            .into_iter()
            .map(on_number)
            .collect(),
        (_, None) => {
            let single = physical == Physical::Float32;
            decode_floats(&mut c, present, single, segment, None)?
                .into_iter()
                .map(|b| on_number(b as i64))
                .collect()
        }
    };
    if !c.is_empty() || dense.len() != present {
        return Err(ColumnarError::corrupt("trailing chunk bytes"));
    }
    Ok(Bitmap::spread(dense.into_iter(), validity.as_ref(), rows))
}

/// The chunk's values of the rows set in `selected` (a bitmap of its `rows` rows), at their
/// rows, every other row null: what an aggregate reads of a column after a restriction on
/// another one left a few rows of the group. Only the selected values are looked up, unscaled
/// and placed (bit-packed codes or integers are read where they lie); a text chunk, or a
/// selection of another length, is decoded whole.
pub(super) fn decode_selected(
    bytes: &[u8],
    rows: usize,
    physical: Physical,
    segment: Option<&Dictionary>,
    selected: &Bitmap,
) -> Result<Column, ColumnarError> {
    if bytes.is_empty() || physical == Physical::Bytes || selected.len() != rows {
        return super::chunk::decode_chunk_with(bytes, rows, physical, segment);
    }
    let (nulls, body) = chunk_body(bytes, rows, physical)?;
    let mut c = Cursor::new(&body);
    let validity = decode_validity(&mut c, rows, nulls)?;
    let present = rows - nulls;
    let (at_rows, ranks) = selected.ranks_in(validity.as_ref());
    let placed = Bitmap::from_rows(&at_rows, rows);
    let values = match physical {
        Physical::Int => ColumnValues::Int(place(
            decode_dense_ints(&mut c, present, segment, Some(&ranks))?,
            &at_rows,
            rows,
        )),
        Physical::Float32 => {
            let bits = decode_floats(&mut c, present, true, segment, Some(&ranks))?;
            let v = bits.iter().map(|b| f32::from_bits(*b as u32)).collect();
            ColumnValues::Float32(place(v, &at_rows, rows))
        }
        _ => {
            let bits = decode_floats(&mut c, present, false, segment, Some(&ranks))?;
            let v = bits.iter().map(|b| f64::from_bits(*b)).collect();
            ColumnValues::Float64(place(v, &at_rows, rows))
        }
    };
    if !c.is_empty() {
        return Err(ColumnarError::corrupt("trailing chunk bytes"));
    }
    Ok(Column {
        values,
        validity: Some(placed),
    })
}

/// `values` at `at` (ascending) in a vector of `rows` defaults.
fn place<T: Copy + Default>(values: Vec<T>, at: &[usize], rows: usize) -> Vec<T> {
    let mut out = vec![T::default(); rows];
    for (v, i) in values.into_iter().zip(at) {
        if let Some(slot) = out.get_mut(*i) {
            *slot = v;
        }
    }
    out
}
