//! Typed column vectors: what chunks decode into and what the chunk encoder takes. Storage knows
//! no CQL types, so the caller names each column's `ValueType` (mapped from the CQL type when the
//! layout is wired to tables); values arrive as Cassandra's serialized bytes and are parsed here.

use std::cmp::Ordering;

pub use crate::types::ValueType;

impl ValueType {
    pub(super) fn tag(self) -> u8 {
        self as u8
    }

    pub(super) fn from_tag(t: u8) -> Option<Self> {
        use ValueType::*;
        [
            Boolean, TinyInt, SmallInt, Int, BigInt, Timestamp, Date, Time, Float, Double, Text,
            Blob, Opaque,
        ]
        .get(t as usize)
        .copied()
    }

    /// The vector a well-formed chunk of this type decodes into.
    pub(super) fn physical(self) -> Physical {
        match self {
            ValueType::Float => Physical::Float32,
            ValueType::Double => Physical::Float64,
            ValueType::Text | ValueType::Blob | ValueType::Opaque => Physical::Bytes,
            _ => Physical::Int,
        }
    }

    /// Parses one serialized value; None when its length does not fit the type (Cassandra
    /// accepts empty values for most types: such a chunk is stored as bytes instead).
    pub(super) fn parse_int(self, b: &[u8]) -> Option<i64> {
        Some(match (self, b.len()) {
            (ValueType::Boolean, 1) => i64::from(*b.first()? != 0),
            (ValueType::TinyInt, 1) => i64::from(i8::from_be_bytes(b.try_into().ok()?)),
            (ValueType::SmallInt, 2) => i64::from(i16::from_be_bytes(b.try_into().ok()?)),
            (ValueType::Int, 4) => i64::from(i32::from_be_bytes(b.try_into().ok()?)),
            (ValueType::Date, 4) => i64::from(u32::from_be_bytes(b.try_into().ok()?)),
            (ValueType::BigInt | ValueType::Timestamp | ValueType::Time, 8) => {
                i64::from_be_bytes(b.try_into().ok()?)
            }
            _ => return None,
        })
    }

    /// The serialized form of an integer of this type (the inverse of `parse_int`).
    pub(super) fn serialize_int(self, v: i64, out: &mut Vec<u8>) {
        match self {
            ValueType::Boolean => out.push(u8::from(v != 0)),
            ValueType::TinyInt => out.extend_from_slice(&(v as i8).to_be_bytes()),
            ValueType::SmallInt => out.extend_from_slice(&(v as i16).to_be_bytes()),
            ValueType::Int => out.extend_from_slice(&(v as i32).to_be_bytes()),
            ValueType::Date => out.extend_from_slice(&(v as u32).to_be_bytes()),
            _ => out.extend_from_slice(&v.to_be_bytes()),
        }
    }

    /// The value a restriction compares with, in the order chunk statistics keep.
    pub fn scalar(self, b: &[u8]) -> Option<Scalar> {
        match self.physical() {
            Physical::Int => self.parse_int(b).map(Scalar::Int),
            Physical::Float32 => Some(Scalar::Float(f64::from(f32::from_be_bytes(
                b.try_into().ok()?,
            )))),
            Physical::Float64 => Some(Scalar::Float(f64::from_be_bytes(b.try_into().ok()?))),
            Physical::Bytes if self.bytewise_ordered() => Some(Scalar::Bytes(b.to_vec())),
            Physical::Bytes => None,
        }
    }

    pub(super) fn bytewise_ordered(self) -> bool {
        matches!(self, ValueType::Text | ValueType::Blob)
    }
}

/// The vector kinds chunks decode into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Physical {
    Int,
    Float32,
    Float64,
    Bytes,
}

impl Physical {
    pub(super) fn tag(self) -> u8 {
        self as u8
    }

    pub(super) fn from_tag(t: u8) -> Option<Self> {
        [
            Physical::Int,
            Physical::Float32,
            Physical::Float64,
            Physical::Bytes,
        ]
        .get(t as usize)
        .copied()
    }
}

/// A comparable value of chunk statistics and restrictions.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Int(i64),
    Float(f64),
    Bytes(Vec<u8>),
}

impl Scalar {
    /// CQL order within one type (`Float` as Java's `Double.compare`: -0.0 before 0.0, NaN
    /// after everything); None across types.
    pub fn compare(&self, other: &Scalar) -> Option<Ordering> {
        match (self, other) {
            (Scalar::Int(a), Scalar::Int(b)) => Some(a.cmp(b)),
            (Scalar::Float(a), Scalar::Float(b)) => Some(java_double_compare(*a, *b)),
            (Scalar::Bytes(a), Scalar::Bytes(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }
}

/// `Double.compare`: the order CQL gives doubles and floats.
pub fn java_double_compare(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        // total_cmp orders -0.0 before 0.0, as Java does, and agrees elsewhere on non-NaNs.
        (false, false) => a.total_cmp(&b),
    }
}

/// One bit per row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bitmap {
    words: Vec<u64>,
    len: usize,
}

impl Bitmap {
    pub fn with_capacity(n: usize) -> Self {
        Bitmap {
            words: Vec::with_capacity(n.div_ceil(64)),
            len: 0,
        }
    }

    pub fn filled(n: usize, bit: bool) -> Self {
        let mut b = Bitmap {
            words: vec![if bit { u64::MAX } else { 0 }; n.div_ceil(64)],
            len: n,
        };
        b.clear_tail();
        b
    }

    fn clear_tail(&mut self) {
        let r = self.len % 64;
        if r != 0 {
            if let Some(w) = self.words.last_mut() {
                *w &= (1u64 << r) - 1;
            }
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, bit: bool) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        if bit {
            if let Some(w) = self.words.last_mut() {
                *w |= 1u64 << (self.len % 64);
            }
        }
        self.len += 1;
    }

    pub fn get(&self, i: usize) -> bool {
        i < self.len
            && self
                .words
                .get(i / 64)
                .is_some_and(|w| (w >> (i % 64)) & 1 == 1)
    }

    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The rows set in `self` and in `valid` (every row valid when None), and for each its
    /// place among `valid`'s set rows: where a selected row's value lies among a chunk's
    /// non-null values. A word at a time.
    pub(super) fn ranks_in(&self, valid: Option<&Bitmap>) -> (Vec<usize>, Vec<usize>) {
        let mut rows = Vec::new();
        let mut ranks = Vec::new();
        let mut base = 0usize;
        for (wi, sw) in self.words.iter().enumerate() {
            let vw = match valid {
                Some(v) => v.words.get(wi).copied().unwrap_or(0),
                None => u64::MAX,
            };
            let mut both = sw & vw;
            while both != 0 {
                let b = both.trailing_zeros();
                rows.push(wi * 64 + b as usize);
                ranks.push(base + (vw & ((1u64 << b) - 1)).count_ones() as usize);
                both &= both - 1;
            }
            base += vw.count_ones() as usize;
        }
        (rows, ranks)
    }

    /// `n` bits, set at `rows` (those below `n`).
    pub fn from_rows(rows: &[usize], n: usize) -> Self {
        let mut b = Bitmap::filled(n, false);
        for &i in rows.iter().filter(|i| **i < n) {
            if let Some(w) = b.words.get_mut(i / 64) {
                *w |= 1u64 << (i % 64);
            }
        }
        b
    }

    /// The first `n` bits of `bits` (false past its end), a word at a time.
    pub fn from_bools(mut bits: impl Iterator<Item = bool>, n: usize) -> Self {
        let mut words = Vec::with_capacity(n.div_ceil(64));
        let mut left = n;
        while left > 0 {
            let take = left.min(64);
            let mut w = 0u64;
            for (k, bit) in bits.by_ref().take(take).enumerate() {
                w |= u64::from(bit) << k;
            }
            words.push(w);
            left -= take;
        }
        Bitmap { words, len: n }
    }

    /// `n` bits from little-endian bytes (bit i is bit i % 8 of byte i / 8; missing bytes
    /// are zero, bits past `n` cleared).
    pub fn from_le_bytes(bytes: &[u8], n: usize) -> Self {
        let mut words: Vec<u64> = bytes
            .chunks(8)
            .take(n.div_ceil(64))
            .map(|c| {
                let mut w = [0u8; 8];
                w.iter_mut().zip(c).for_each(|(d, s)| *d = *s);
                u64::from_le_bytes(w)
            })
            .collect();
        words.resize(n.div_ceil(64), 0);
        let mut b = Bitmap { words, len: n };
        b.clear_tail();
        b
    }

    /// `n` bits: for each set bit of `validity` (all `n` when None), the next of `dense`; the
    /// others clear. What a predicate over a chunk's non-null values means for its rows.
    pub fn spread(dense: impl Iterator<Item = bool>, validity: Option<&Bitmap>, n: usize) -> Self {
        let Some(v) = validity else {
            return Bitmap::from_bools(dense, n);
        };
        let mut dense = dense;
        let words = (0..n.div_ceil(64))
            .map(|k| {
                let mut valid = v.words.get(k).copied().unwrap_or(0);
                let mut w = 0u64;
                while valid != 0 {
                    let bit = valid.trailing_zeros();
                    if dense.next() == Some(true) {
                        w |= 1u64 << bit;
                    }
                    valid &= valid - 1;
                }
                w
            })
            .collect();
        let mut b = Bitmap { words, len: n };
        b.clear_tail();
        b
    }

    /// The positions of the set bits within `range`, in order (a word at a time).
    pub fn ones_in(&self, range: std::ops::Range<usize>) -> impl Iterator<Item = usize> + '_ {
        let end = range.end.min(self.len);
        let start = range.start.min(end);
        let words = self
            .words
            .iter()
            .enumerate()
            .skip(start / 64)
            .take(end.div_ceil(64).saturating_sub(start / 64));
        words.flat_map(move |(k, w)| {
            let lo = (k * 64).max(start) - k * 64;
            let hi = (end - k * 64).min(64);
            let below_hi = if hi == 64 { u64::MAX } else { (1u64 << hi) - 1 };
            let mut w = *w & below_hi & (u64::MAX << lo);
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let bit = w.trailing_zeros() as usize;
                    w &= w - 1;
                    k * 64 + bit
                })
            })
        })
    }

    /// Clears every bit not also set in `other` (bits past `other`'s end are cleared).
    pub fn and_with(&mut self, other: &Bitmap) {
        for (i, w) in self.words.iter_mut().enumerate() {
            *w &= other.words.get(i).copied().unwrap_or(0);
        }
        if other.len < self.len {
            let keep = other.len;
            for i in keep..self.len {
                if let Some(w) = self.words.get_mut(i / 64) {
                    *w &= !(1u64 << (i % 64));
                }
            }
        }
    }
}

/// Variable-length values: value `i` is `data[offsets[i]..offsets[i + 1]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BytesVec {
    pub offsets: Vec<u32>,
    pub data: Vec<u8>,
}

impl Default for BytesVec {
    fn default() -> Self {
        BytesVec {
            offsets: vec![0],
            data: Vec::new(),
        }
    }
}

impl BytesVec {
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, i: usize) -> &[u8] {
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&s), Some(&e)) => self.data.get(s as usize..e as usize).unwrap_or_default(),
            _ => &[],
        }
    }

    pub fn push(&mut self, v: &[u8]) {
        self.data.extend_from_slice(v);
        self.offsets.push(self.data.len() as u32);
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }
}

/// Values of one chunk, one slot per row (null rows hold 0 or an empty value).
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnValues {
    Int(Vec<i64>),
    Float32(Vec<f32>),
    Float64(Vec<f64>),
    Bytes(BytesVec),
}

impl ColumnValues {
    pub fn len(&self) -> usize {
        match self {
            ColumnValues::Int(v) => v.len(),
            ColumnValues::Float32(v) => v.len(),
            ColumnValues::Float64(v) => v.len(),
            ColumnValues::Bytes(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn physical(&self) -> Physical {
        match self {
            ColumnValues::Int(_) => Physical::Int,
            ColumnValues::Float32(_) => Physical::Float32,
            ColumnValues::Float64(_) => Physical::Float64,
            ColumnValues::Bytes(_) => Physical::Bytes,
        }
    }
}

/// A decoded chunk: values and, when any row is null, which rows are valid.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub values: ColumnValues,
    /// None: every row has a value.
    pub validity: Option<Bitmap>,
}

impl Column {
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn is_valid(&self, i: usize) -> bool {
        i < self.len() && self.validity.as_ref().is_none_or(|v| v.get(i))
    }

    pub fn null_count(&self) -> usize {
        self.validity
            .as_ref()
            .map_or(0, |v| self.len().saturating_sub(v.count_ones()))
    }

    /// `rows` nulls of physical type `p`.
    pub fn nulls(p: Physical, rows: usize) -> Self {
        let values = match p {
            Physical::Int => ColumnValues::Int(vec![0; rows]),
            Physical::Float32 => ColumnValues::Float32(vec![0.0; rows]),
            Physical::Float64 => ColumnValues::Float64(vec![0.0; rows]),
            Physical::Bytes => {
                let mut b = BytesVec::default();
                b.offsets.resize(rows + 1, 0);
                ColumnValues::Bytes(b)
            }
        };
        Column {
            values,
            validity: (rows > 0).then(|| Bitmap::filled(rows, false)),
        }
    }

    /// Row `i` as a nullable integer.
    pub fn int(&self, i: usize) -> Option<i64> {
        match &self.values {
            ColumnValues::Int(v) if self.is_valid(i) => v.get(i).copied(),
            _ => None,
        }
    }

    /// Row `i` in Cassandra's serialized form for type `t` (None when null).
    pub fn serialized(&self, i: usize, t: ValueType) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        self.serialize_into(i, t, &mut out).then_some(out)
    }

    /// Appends row `i` in serialized form to `out`; false (nothing appended) when null.
    pub fn serialize_into(&self, i: usize, t: ValueType, out: &mut Vec<u8>) -> bool {
        if !self.is_valid(i) {
            return false;
        }
        match &self.values {
            ColumnValues::Int(v) => v.get(i).map(|x| t.serialize_int(*x, out)).is_some(),
            ColumnValues::Float32(v) => v
                .get(i)
                .map(|x| out.extend_from_slice(&x.to_be_bytes()))
                .is_some(),
            ColumnValues::Float64(v) => v
                .get(i)
                .map(|x| out.extend_from_slice(&x.to_be_bytes()))
                .is_some(),
            ColumnValues::Bytes(v) => {
                out.extend_from_slice(v.get(i));
                true
            }
        }
    }
}
