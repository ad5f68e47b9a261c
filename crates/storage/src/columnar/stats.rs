//! Per-chunk statistics and the predicate-skip rule: which chunks cannot hold a value matching
//! a restriction, decided from the footer alone (no chunk byte read).

use super::bits::{put_sv, put_uv, Cursor};
use super::vector::{java_double_compare, Column, ColumnValues, Physical, Scalar, ValueType};
use super::ColumnarError;
use std::cmp::Ordering;

/// Text and blob bounds keep at most this many bytes (a max is rounded up when cut).
pub const STAT_PREFIX_BYTES: usize = 64;

/// What the footer keeps of one chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkStats {
    pub rows: u32,
    pub nulls: u32,
    /// None when every row is null, when the type has no order here (`ValueType::Opaque`), or
    /// when the chunk fell back to bytes for a value that does not fit its type.
    pub min: Option<Scalar>,
    pub max: Option<Scalar>,
    /// Every distinct non-null value, in order, when there are at most `MAX_STAT_VALUES` (and
    /// text short enough to keep whole): an equality skips a chunk whose range holds the
    /// value but whose values do not, as a group of two partition keys far apart.
    pub values: Option<Vec<Scalar>>,
}

/// Most distinct values a chunk's statistics list.
pub const MAX_STAT_VALUES: usize = 8;

/// The distinct items of `it` (by `eq`) if there are at most `MAX_STAT_VALUES`.
fn small_set<T>(it: impl Iterator<Item = T>, eq: impl Fn(&T, &T) -> bool) -> Option<Vec<T>> {
    let mut set: Vec<T> = Vec::new();
    for x in it {
        if !set.iter().any(|y| eq(y, &x)) {
            if set.len() == MAX_STAT_VALUES {
                return None;
            }
            set.push(x);
        }
    }
    Some(set)
}

/// A comparison of one column with a constant, as in `WHERE c >= 5 ALLOW FILTERING`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CompareOp {
    /// Whether a value comparing `o` to the operand satisfies `value op operand`.
    #[inline]
    pub fn holds(self, o: std::cmp::Ordering) -> bool {
        match self {
            CompareOp::Eq => o.is_eq(),
            CompareOp::Lt => o.is_lt(),
            CompareOp::Le => o.is_le(),
            CompareOp::Gt => o.is_gt(),
            CompareOp::Ge => o.is_ge(),
        }
    }
}

impl ChunkStats {
    pub(super) fn of(col: &Column, t: ValueType) -> ChunkStats {
        let rows = col.len();
        let nulls = col.null_count();
        let valid = |i: &usize| col.is_valid(*i);
        let values = distinct_values(col, t);
        let (min, max) = match (&col.values, t.physical()) {
            (ColumnValues::Int(v), Physical::Int) => {
                let it = (0..rows).filter(valid).filter_map(|i| v.get(i).copied());
                match it.clone().min().zip(it.max()) {
                    Some((lo, hi)) => (Some(Scalar::Int(lo)), Some(Scalar::Int(hi))),
                    None => (None, None),
                }
            }
            (ColumnValues::Float32(v), Physical::Float32) => float_bounds(
                (0..rows)
                    .filter(valid)
                    .filter_map(|i| v.get(i).map(|f| f64::from(*f))),
            ),
            (ColumnValues::Float64(v), Physical::Float64) => {
                float_bounds((0..rows).filter(valid).filter_map(|i| v.get(i).copied()))
            }
            (ColumnValues::Bytes(v), Physical::Bytes) if t.bytewise_ordered() => {
                let it = (0..rows).filter(valid).map(|i| v.get(i));
                match it.clone().min().zip(it.max()) {
                    Some((lo, hi)) => (
                        Some(Scalar::Bytes(
                            lo.get(..STAT_PREFIX_BYTES).unwrap_or(lo).to_vec(),
                        )),
                        round_up(hi).map(Scalar::Bytes),
                    ),
                    None => (None, None),
                }
            }
            _ => (None, None),
        };
        ChunkStats {
            rows: rows as u32,
            nulls: nulls as u32,
            values: values.filter(|_| max.is_some()),
            min: min.filter(|_| max.is_some()),
            max,
        }
    }

    /// True when no row of the chunk can satisfy `column op value`: CQL comparisons never match
    /// a null, so an all-null chunk is always skipped. Without bounds nothing is skipped.
    pub fn can_skip(&self, op: CompareOp, value: &Scalar) -> bool {
        if self.nulls >= self.rows {
            return true;
        }
        if let (CompareOp::Eq, Some(values)) = (op, &self.values) {
            return values
                .iter()
                .all(|v| matches!(v.compare(value), Some(o) if o != Ordering::Equal));
        }
        let (Some(min), Some(max)) = (&self.min, &self.max) else {
            return false;
        };
        let (Some(vs_min), Some(vs_max)) = (value.compare(min), value.compare(max)) else {
            return false;
        };
        match op {
            CompareOp::Eq => vs_min == Ordering::Less || vs_max == Ordering::Greater,
            CompareOp::Lt => vs_min != Ordering::Greater,
            CompareOp::Le => vs_min == Ordering::Less,
            CompareOp::Gt => vs_max != Ordering::Less,
            CompareOp::Ge => vs_max == Ordering::Greater,
        }
    }

    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        put_uv(out, u64::from(self.rows));
        put_uv(out, u64::from(self.nulls));
        match (&self.min, &self.max) {
            (Some(Scalar::Int(a)), Some(Scalar::Int(b))) => {
                out.push(1);
                put_sv(out, *a);
                put_sv(out, *b);
            }
            (Some(Scalar::Float(a)), Some(Scalar::Float(b))) => {
                out.push(2);
                out.extend_from_slice(&a.to_bits().to_le_bytes());
                out.extend_from_slice(&b.to_bits().to_le_bytes());
            }
            (Some(Scalar::Bytes(a)), Some(Scalar::Bytes(b))) => {
                out.push(3);
                for x in [a, b] {
                    put_uv(out, x.len() as u64);
                    out.extend_from_slice(x);
                }
            }
            _ => out.push(0),
        }
        let values = self.values.as_deref().unwrap_or_default();
        out.push(values.len() as u8);
        for v in values {
            put_scalar(out, v);
        }
    }

    pub(super) fn decode(c: &mut Cursor<'_>) -> Result<ChunkStats, ColumnarError> {
        let rows = u32::try_from(c.uv()?).map_err(|_| ColumnarError::corrupt("stats rows"))?;
        let nulls = u32::try_from(c.len_at_most(rows as usize)?)
            .map_err(|_| ColumnarError::corrupt("stats nulls"))?;
        let (min, max) = match c.u8()? {
            0 => (None, None),
            1 => (Some(Scalar::Int(c.sv()?)), Some(Scalar::Int(c.sv()?))),
            2 => (
                Some(Scalar::Float(f64::from_bits(c.u64_le()?))),
                Some(Scalar::Float(f64::from_bits(c.u64_le()?))),
            ),
            3 => {
                let mut b = || -> Result<Scalar, ColumnarError> {
                    let n = c.len_at_most(STAT_PREFIX_BYTES)?;
                    Ok(Scalar::Bytes(c.take(n)?.to_vec()))
                };
                (Some(b()?), Some(b()?))
            }
            _ => return Err(ColumnarError::corrupt("stats kind")),
        };
        let n = c.u8()? as usize;
        if n > MAX_STAT_VALUES {
            return Err(ColumnarError::corrupt("stats values"));
        }
        let values = if n > 0 {
            Some((0..n).map(|_| scalar(c)).collect::<Result<Vec<_>, _>>()?)
        } else {
            None
        };
        Ok(ChunkStats {
            rows,
            nulls,
            min,
            max,
            values,
        })
    }
}

fn put_scalar(out: &mut Vec<u8>, v: &Scalar) {
    match v {
        Scalar::Int(i) => {
            out.push(1);
            put_sv(out, *i);
        }
        Scalar::Float(f) => {
            out.push(2);
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Scalar::Bytes(b) => {
            out.push(3);
            put_uv(out, b.len() as u64);
            out.extend_from_slice(b);
        }
    }
}

fn scalar(c: &mut Cursor<'_>) -> Result<Scalar, ColumnarError> {
    Ok(match c.u8()? {
        1 => Scalar::Int(c.sv()?),
        2 => Scalar::Float(f64::from_bits(c.u64_le()?)),
        3 => {
            let n = c.len_at_most(STAT_PREFIX_BYTES)?;
            Scalar::Bytes(c.take(n)?.to_vec())
        }
        _ => return Err(ColumnarError::corrupt("stats value")),
    })
}

/// The chunk's distinct values for `ChunkStats::values`, in order.
fn distinct_values(col: &Column, t: ValueType) -> Option<Vec<Scalar>> {
    let rows = (0..col.len()).filter(|i| col.is_valid(*i));
    let mut set: Vec<Scalar> = match (&col.values, t.physical()) {
        (ColumnValues::Int(v), Physical::Int) => {
            small_set(rows.filter_map(|i| v.get(i).copied()), |a, b| a == b)?
                .into_iter()
                .map(Scalar::Int)
                .collect()
        }
        (ColumnValues::Float32(v), Physical::Float32) => small_set(
            rows.filter_map(|i| v.get(i).map(|f| f64::from(*f))),
            |a, b| java_double_compare(*a, *b) == Ordering::Equal,
        )?
        .into_iter()
        .map(Scalar::Float)
        .collect(),
        (ColumnValues::Float64(v), Physical::Float64) => {
            small_set(rows.filter_map(|i| v.get(i).copied()), |a, b| {
                java_double_compare(*a, *b) == Ordering::Equal
            })?
            .into_iter()
            .map(Scalar::Float)
            .collect()
        }
        (ColumnValues::Bytes(v), Physical::Bytes) if t.bytewise_ordered() => {
            let set = small_set(rows.map(|i| v.get(i)), |a, b| a == b)?;
            if set.iter().any(|b| b.len() > STAT_PREFIX_BYTES) {
                return None;
            }
            set.into_iter().map(|b| Scalar::Bytes(b.to_vec())).collect()
        }
        _ => return None,
    };
    set.sort_by(|a, b| a.compare(b).unwrap_or(Ordering::Equal));
    (!set.is_empty()).then_some(set)
}

fn float_bounds(it: impl Iterator<Item = f64> + Clone) -> (Option<Scalar>, Option<Scalar>) {
    let lo = it.clone().min_by(|a, b| java_double_compare(*a, *b));
    let hi = it.max_by(|a, b| java_double_compare(*a, *b));
    (lo.map(Scalar::Float), hi.map(Scalar::Float))
}

/// An upper bound of `v` of at most `STAT_PREFIX_BYTES` bytes: the prefix with its last byte
/// below 0xff incremented. None (no bound) when every byte of the prefix is 0xff.
fn round_up(v: &[u8]) -> Option<Vec<u8>> {
    if v.len() <= STAT_PREFIX_BYTES {
        return Some(v.to_vec());
    }
    let mut p = v.get(..STAT_PREFIX_BYTES)?.to_vec();
    while let Some(last) = p.pop() {
        if last < 0xff {
            p.push(last + 1);
            return Some(p);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columnar::vector::{Bitmap, BytesVec};

    fn ints(v: &[Option<i64>]) -> Column {
        let mut valid = Bitmap::default();
        v.iter().for_each(|x| valid.push(x.is_some()));
        Column {
            values: ColumnValues::Int(v.iter().map(|x| x.unwrap_or(0)).collect()),
            validity: Some(valid),
        }
    }

    #[test]
    fn bounds_skip_exactly_what_cannot_match() {
        let s = ChunkStats::of(&ints(&[Some(10), None, Some(20)]), ValueType::Int);
        assert_eq!((s.rows, s.nulls), (3, 1));
        let skip = |op, v| s.can_skip(op, &Scalar::Int(v));
        assert!(skip(CompareOp::Eq, 9) && !skip(CompareOp::Eq, 10) && !skip(CompareOp::Eq, 20));
        assert!(skip(CompareOp::Eq, 21));
        assert!(skip(CompareOp::Lt, 10) && !skip(CompareOp::Lt, 11));
        assert!(skip(CompareOp::Le, 9) && !skip(CompareOp::Le, 10));
        assert!(skip(CompareOp::Gt, 20) && !skip(CompareOp::Gt, 19));
        assert!(skip(CompareOp::Ge, 21) && !skip(CompareOp::Ge, 20));
        let all_null = ChunkStats::of(&ints(&[None, None]), ValueType::Int);
        assert!(all_null.can_skip(CompareOp::Ge, &Scalar::Int(i64::MIN)));
        assert!(!s.can_skip(CompareOp::Eq, &Scalar::Bytes(vec![1])));
    }

    #[test]
    fn few_distinct_values_are_listed_and_decide_equality() {
        let s = ChunkStats::of(&ints(&[Some(20), Some(10), None, Some(20)]), ValueType::Int);
        assert_eq!(s.values, Some(vec![Scalar::Int(10), Scalar::Int(20)]));
        assert!(s.can_skip(CompareOp::Eq, &Scalar::Int(15)));
        assert!(!s.can_skip(CompareOp::Eq, &Scalar::Int(10)));
        assert!(!s.can_skip(CompareOp::Ge, &Scalar::Int(15)));
        let mut b = Vec::new();
        s.encode(&mut b);
        assert_eq!(ChunkStats::decode(&mut Cursor::new(&b)).unwrap(), s);
        let many: Vec<Option<i64>> = (0..=MAX_STAT_VALUES as i64).map(Some).collect();
        assert_eq!(ChunkStats::of(&ints(&many), ValueType::Int).values, None);
    }

    #[test]
    fn long_text_bounds_are_cut_and_rounded_up() {
        let mut b = BytesVec::default();
        let long = vec![b'a'; 200];
        b.push(&long);
        b.push(b"b");
        let col = Column {
            values: ColumnValues::Bytes(b),
            validity: None,
        };
        let s = ChunkStats::of(&col, ValueType::Text);
        assert!(!s.can_skip(CompareOp::Eq, &Scalar::Bytes(long.clone())));
        assert!(!s.can_skip(CompareOp::Eq, &Scalar::Bytes(b"b".to_vec())));
        assert!(s.can_skip(CompareOp::Eq, &Scalar::Bytes(b"c".to_vec())));
        assert_eq!(round_up(&[0xff; 100]), None);
        assert_eq!(
            round_up(&[[1u8; 63].as_slice(), &[0xff; 10]].concat()).unwrap(),
            [[1u8; 62].as_slice(), &[2]].concat()
        );
        let opaque = ChunkStats::of(&col, ValueType::Opaque);
        assert_eq!(opaque.max, None);
    }

    #[test]
    fn floats_order_as_java_does() {
        let col = Column {
            values: ColumnValues::Float64(vec![-0.0, 0.0, f64::NAN, -1.5]),
            validity: None,
        };
        let s = ChunkStats::of(&col, ValueType::Double);
        assert_eq!(s.min, Some(Scalar::Float(-1.5)));
        assert!(matches!(s.max, Some(Scalar::Float(x)) if x.is_nan()));
        assert!(!s.can_skip(CompareOp::Eq, &Scalar::Float(f64::NAN)));
        assert!(s.can_skip(CompareOp::Lt, &Scalar::Float(-1.5)));
        let mut b = Vec::new();
        s.encode(&mut b);
        let back = ChunkStats::decode(&mut Cursor::new(&b)).unwrap();
        assert_eq!(back.min, s.min);
    }
}
