//! One column chunk: a null bitmap and the non-null values of up to a row group's rows, encoded
//! by the smallest encoding (ints.rs, varlen.rs), then block-compressed when that pays, with the
//! statistics (stats.rs) a scan uses to skip it.
//!
//! ```text
//! u8 physical | uv rows | uv nulls | u8 codec (0 none, 1 LZ4, 2 zstd) | [uv raw length]
//! body: [validity as ints 0/1, when some but not all rows are null] [non-null values]
//! ```
//!
//! An all-null chunk is not written at all (its footer entry has length 0): per-cell TTL and
//! deletion-time streams are null in almost every row group of a table without TTLs.

use super::bits::{put_uv, Cursor};
use super::dict::{Dictionary, StreamDict};
use super::ints::{
    decode_bits, decode_codes, decode_ints_at, encode_codes, encode_ints, Allow, IntDict,
    SEGMENT_CODES,
};
use super::stats::ChunkStats;
use super::varlen::{decode_bytes, encode_bytes};
use super::vector::{Bitmap, BytesVec, Column, ColumnValues, Physical, ValueType};
use super::ColumnarError;

/// Block compression of encoded chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockCompression {
    None,
    Lz4,
    /// zstd at this level (0: zstd's default).
    Zstd(i32),
}

const CODEC_NONE: u8 = 0;
const CODEC_LZ4: u8 = 1;
const CODEC_ZSTD: u8 = 2;

/// Bodies smaller than this are not worth a compressor's framing.
const MIN_COMPRESS_BYTES: usize = 64;

/// Most rows a chunk may claim: bounds what a corrupt header can make a reader allocate.
pub const MAX_CHUNK_ROWS: usize = 1 << 20;

/// Most bytes a chunk body may claim once decompressed.
const MAX_RAW_BYTES: usize = 1 << 30;

/// Encodes `col` (of declared type `t`) into a chunk; returns its bytes (empty when every row
/// is null) and its statistics.
pub(super) fn encode_chunk(
    col: &Column,
    t: ValueType,
    compression: BlockCompression,
) -> (Vec<u8>, ChunkStats) {
    encode_chunk_with(col, t, compression, None)
}

/// `encode_chunk`, with values coded into the stream's segment dictionary `segment` where that
/// pays (dict.rs).
pub(super) fn encode_chunk_with(
    col: &Column,
    t: ValueType,
    compression: BlockCompression,
    mut segment: Option<&mut StreamDict>,
) -> (Vec<u8>, ChunkStats) {
    let stats = ChunkStats::of(col, t);
    let rows = col.len();
    let nulls = col.null_count();
    if rows == 0 || nulls == rows {
        return (Vec::new(), stats);
    }
    let mut body = Vec::new();
    if let (Some(v), true) = (&col.validity, nulls > 0) {
        let bits: Vec<i64> = (0..rows).map(|i| i64::from(v.get(i))).collect();
        encode_ints(&mut body, &bits, Allow::ALL);
    }
    let valid = |i: &usize| col.is_valid(*i);
    match &col.values {
        ColumnValues::Int(v) => {
            let vals: Vec<i64> = (0..rows)
                .filter(valid)
                .filter_map(|i| v.get(i).copied())
                .collect();
            let mut own = Vec::new();
            encode_ints(&mut own, &vals, Allow::ALL);
            match segment
                .and_then(StreamDict::ints)
                .and_then(|d| d.codes(&vals, own.len()))
            {
                Some(codes) => {
                    body.push(SEGMENT_CODES);
                    encode_codes(&mut body, &codes);
                }
                None => body.extend_from_slice(&own),
            }
        }
        ColumnValues::Float32(v) => {
            let bits: Vec<u64> = (0..rows)
                .filter(valid)
                .filter_map(|i| v.get(i).map(|f| u64::from(f.to_bits())))
                .collect();
            let dict = segment.as_deref_mut().and_then(StreamDict::ints);
            encode_floats(&mut body, &bits, true, dict);
        }
        ColumnValues::Float64(v) => {
            let bits: Vec<u64> = (0..rows)
                .filter(valid)
                .filter_map(|i| v.get(i).map(|f| f.to_bits()))
                .collect();
            let dict = segment.as_deref_mut().and_then(StreamDict::ints);
            encode_floats(&mut body, &bits, false, dict);
        }
        ColumnValues::Bytes(v) => {
            let vals: Vec<&[u8]> = (0..rows).filter(valid).map(|i| v.get(i)).collect();
            match segment
                .and_then(StreamDict::bytes)
                .and_then(|d| d.encode(&vals))
            {
                Some(codes) => body.extend_from_slice(&codes),
                None => encode_bytes(&mut body, &vals),
            }
        }
    }
    let mut out = Vec::with_capacity(body.len() + 16);
    out.push(col.values.physical().tag());
    put_uv(&mut out, rows as u64);
    put_uv(&mut out, nulls as u64);
    match compress(&body, compression) {
        Some((codec, packed)) => {
            out.push(codec);
            put_uv(&mut out, body.len() as u64);
            out.extend_from_slice(&packed);
        }
        None => {
            out.push(CODEC_NONE);
            out.extend_from_slice(&body);
        }
    }
    (out, stats)
}

/// Powers of ten a float column may be scaled by (exact in binary64).
const DECIMAL_SCALES: [f64; 7] = [1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6];
/// The scale byte of floats stored as their bit patterns.
const RAW_BITS: u8 = 0xff;
/// The scale byte of floats whose bit patterns are coded into the segment dictionary.
const SEGMENT_BITS: u8 = 0xfe;

/// The bit pattern (of an f32 when `single`) a scaled integer decodes to: the one formula
/// encoder and decoder share, so the encoder's check that every value comes back bit for bit
/// holds for the decoder too.
fn unscale(i: i64, p: f64, single: bool) -> u64 {
    let v = i as f64 / p;
    if single {
        u64::from((v as f32).to_bits())
    } else {
        v.to_bits()
    }
}

/// Floats coded into the stream's segment dictionary when that is smaller, else encoded on
/// their own; the scale byte says which. `bits`: the values' bit patterns (f32 patterns when
/// `single`).
fn encode_floats(out: &mut Vec<u8>, bits: &[u64], single: bool, segment: Option<&mut IntDict>) {
    let mut own = Vec::new();
    encode_floats_alone(&mut own, bits, single);
    let patterns: Vec<i64> = bits.iter().map(|b| *b as i64).collect();
    match segment.and_then(|d| d.codes(&patterns, own.len())) {
        Some(codes) => {
            out.push(SEGMENT_BITS);
            encode_codes(out, &codes);
        }
        None => out.extend_from_slice(&own),
    }
}

/// Floats with few decimals (coordinates, prices, scores) as integers times a power of ten
/// (bit-packed, run-length or dictionary from there), when every value comes back bit for bit;
/// others as their bit patterns.
fn encode_floats_alone(out: &mut Vec<u8>, bits: &[u64], single: bool) {
    let value = |b: u64| {
        if single {
            f64::from(f32::from_bits(b as u32))
        } else {
            f64::from_bits(b)
        }
    };
    'scale: for (k, p) in DECIMAL_SCALES.iter().enumerate() {
        let mut ints = Vec::with_capacity(bits.len());
        for b in bits {
            let s = (value(*b) * p).round();
            // Beyond 2^53 integers are not exact; NaN fails here, -0.0 at the bit check.
            if s.is_nan() || s.abs() >= 9.0e15 {
                continue 'scale;
            }
            let i = s as i64;
            if unscale(i, *p, single) != *b {
                continue 'scale;
            }
            ints.push(i);
        }
        out.push(k as u8);
        encode_ints(out, &ints, Allow::ALL);
        return;
    }
    out.push(RAW_BITS);
    let ints: Vec<i64> = bits.iter().map(|b| *b as i64).collect();
    encode_ints(out, &ints, Allow::ALL);
}

/// The `n` non-null float values of a body as bit patterns (of f32s when `single`): those at
/// positions `at` among them, or every one when None.
pub(super) fn decode_floats(
    c: &mut Cursor<'_>,
    n: usize,
    single: bool,
    segment: Option<&Dictionary>,
    at: Option<&[usize]>,
) -> Result<Vec<u64>, ColumnarError> {
    let mut ints = Vec::with_capacity(at.map_or(n, <[usize]>::len));
    if let Some(dict) = segment_codes(c, Physical::Float64, segment)? {
        decode_codes(c, n, dict, &mut ints, at)?;
        return Ok(ints.iter().map(|b| *b as u64).collect());
    }
    let scale = c.u8()?;
    decode_ints_at(c, n, &mut ints, at)?;
    if scale == RAW_BITS {
        return Ok(ints.iter().map(|b| *b as u64).collect());
    }
    let p = *DECIMAL_SCALES
        .get(scale as usize)
        .ok_or(ColumnarError::corrupt("float scale"))?;
    Ok(ints.iter().map(|i| unscale(*i, p, single)).collect())
}

/// The segment dictionary a numeric body's values are codes into, its tag consumed; None (the
/// cursor untouched) when the body holds its own encoding.
pub(super) fn segment_codes<'d>(
    c: &mut Cursor<'_>,
    physical: Physical,
    segment: Option<&'d Dictionary>,
) -> Result<Option<&'d [i64]>, ColumnarError> {
    let tag = match physical {
        Physical::Int => SEGMENT_CODES,
        Physical::Float32 | Physical::Float64 => SEGMENT_BITS,
        Physical::Bytes => return Ok(None),
    };
    let mut peek = c.clone();
    if peek.u8()? != tag {
        return Ok(None);
    }
    let dict = segment
        .and_then(Dictionary::ints)
        .ok_or_else(|| ColumnarError::corrupt("no segment dictionary"))?;
    *c = peek;
    Ok(Some(dict))
}

/// The `n` non-null integers of a body (encoded on their own, or codes into the stream's
/// segment dictionary): those at positions `at` among them, or every one when None.
pub(super) fn decode_dense_ints(
    c: &mut Cursor<'_>,
    n: usize,
    segment: Option<&Dictionary>,
    at: Option<&[usize]>,
) -> Result<Vec<i64>, ColumnarError> {
    let mut out = Vec::with_capacity(at.map_or(n, <[usize]>::len));
    match segment_codes(c, Physical::Int, segment)? {
        Some(dict) => decode_codes(c, n, dict, &mut out, at)?,
        None => decode_ints_at(c, n, &mut out, at)?,
    }
    Ok(out)
}

/// The compressed body and its codec, when compression saves at least an eighth.
fn compress(body: &[u8], c: BlockCompression) -> Option<(u8, Vec<u8>)> {
    if body.len() < MIN_COMPRESS_BYTES {
        return None;
    }
    let (codec, packed) = match c {
        BlockCompression::None => return None,
        BlockCompression::Lz4 => (CODEC_LZ4, lz4_flex::block::compress(body)),
        BlockCompression::Zstd(level) => (CODEC_ZSTD, zstd::bulk::compress(body, level).ok()?),
    };
    (packed.len() + packed.len() / 7 < body.len()).then_some((codec, packed))
}

/// Decodes a chunk of `rows` rows of `physical` type (as the footer says: a chunk that says
/// otherwise is corrupt). `bytes` empty: all `rows` are null.
pub(super) fn decode_chunk(
    bytes: &[u8],
    rows: usize,
    physical: Physical,
) -> Result<Column, ColumnarError> {
    decode_chunk_with(bytes, rows, physical, None)
}

/// `decode_chunk` of a stream whose segment dictionary is `segment` (if it has one).
pub(super) fn decode_chunk_with(
    bytes: &[u8],
    rows: usize,
    physical: Physical,
    segment: Option<&Dictionary>,
) -> Result<Column, ColumnarError> {
    if bytes.is_empty() {
        return if rows > MAX_CHUNK_ROWS {
            Err(ColumnarError::corrupt("chunk row count"))
        } else {
            Ok(Column::nulls(physical, rows))
        };
    }
    let (nulls, body) = chunk_body(bytes, rows, physical)?;
    decode_body(&mut Cursor::new(&body), rows, nulls, physical, segment)
}

/// The null count and the (decompressed) body of a non-empty chunk of `rows` rows of
/// `physical` type, after checking its header against them.
pub(super) fn chunk_body(
    bytes: &[u8],
    rows: usize,
    physical: Physical,
) -> Result<(usize, std::borrow::Cow<'_, [u8]>), ColumnarError> {
    if rows > MAX_CHUNK_ROWS {
        return Err(ColumnarError::corrupt("chunk row count"));
    }
    let mut c = Cursor::new(bytes);
    if Physical::from_tag(c.u8()?) != Some(physical) {
        return Err(ColumnarError::corrupt("chunk physical type"));
    }
    if c.len_at_most(MAX_CHUNK_ROWS)? != rows {
        return Err(ColumnarError::corrupt("chunk row count"));
    }
    let nulls = c.len_at_most(rows)?;
    let codec = c.u8()?;
    let body = match codec {
        CODEC_NONE => std::borrow::Cow::Borrowed(c.take(c.remaining())?),
        CODEC_LZ4 | CODEC_ZSTD => {
            let raw_len = c.len_at_most(MAX_RAW_BYTES)?;
            let stored = c.take(c.remaining())?;
            let raw = if codec == CODEC_LZ4 {
                lz4_flex::block::decompress(stored, raw_len).ok()
            } else {
                zstd_decompress(stored, raw_len)
            }
            .filter(|r| r.len() == raw_len)
            .ok_or(ColumnarError::corrupt("chunk does not decompress"))?;
            std::borrow::Cow::Owned(raw)
        }
        _ => return Err(ColumnarError::corrupt("chunk codec")),
    };
    Ok((nulls, body))
}

/// The validity bitmap at the head of a body with `nulls` of `rows` rows null (None: no
/// nulls), checked against that count.
pub(super) fn decode_validity(
    c: &mut Cursor<'_>,
    rows: usize,
    nulls: usize,
) -> Result<Option<Bitmap>, ColumnarError> {
    if nulls == 0 {
        return Ok(None);
    }
    let v = decode_bits(c, rows)?;
    if v.count_ones() != rows - nulls {
        return Err(ColumnarError::corrupt("null count"));
    }
    Ok(Some(v))
}

thread_local! {
    /// One zstd decompression context per thread: creating one per chunk was 3% of a scan.
    static ZSTD: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

fn zstd_decompress(stored: &[u8], raw_len: usize) -> Option<Vec<u8>> {
    ZSTD.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            *slot = zstd::bulk::Decompressor::new().ok();
        }
        slot.as_mut()?.decompress(stored, raw_len).ok()
    })
}

fn decode_body(
    c: &mut Cursor<'_>,
    rows: usize,
    nulls: usize,
    physical: Physical,
    segment: Option<&Dictionary>,
) -> Result<Column, ColumnarError> {
    let validity = decode_validity(c, rows, nulls)?;
    let present = rows - nulls;
    let values = match physical {
        Physical::Bytes => {
            let mut dense = BytesVec::default();
            decode_bytes(c, present, &mut dense, segment.and_then(Dictionary::bytes))?;
            ColumnValues::Bytes(spread_bytes(&dense, validity.as_ref(), rows))
        }
        Physical::Int => {
            let dense = decode_dense_ints(c, present, segment, None)?;
            ColumnValues::Int(spread(dense, validity.as_ref(), rows, 0))
        }
        Physical::Float32 => {
            let dense = decode_floats(c, present, true, segment, None)?;
            let bits = spread(dense, validity.as_ref(), rows, 0);
            ColumnValues::Float32(bits.iter().map(|b| f32::from_bits(*b as u32)).collect())
        }
        Physical::Float64 => {
            let dense = decode_floats(c, present, false, segment, None)?;
            let bits = spread(dense, validity.as_ref(), rows, 0);
            ColumnValues::Float64(bits.iter().map(|b| f64::from_bits(*b)).collect())
        }
    };
    if !c.is_empty() {
        return Err(ColumnarError::corrupt("trailing chunk bytes"));
    }
    Ok(Column { values, validity })
}

/// Places the non-null values at their rows (nulls get `zero`).
fn spread<T: Copy>(dense: Vec<T>, validity: Option<&Bitmap>, rows: usize, zero: T) -> Vec<T> {
    let Some(v) = validity else {
        return dense;
    };
    let mut it = dense.into_iter();
    (0..rows)
        .map(|i| {
            if v.get(i) {
                it.next().unwrap_or(zero)
            } else {
                zero
            }
        })
        .collect()
}

fn spread_bytes(dense: &BytesVec, validity: Option<&Bitmap>, rows: usize) -> BytesVec {
    let Some(v) = validity else {
        return dense.clone();
    };
    let mut out = BytesVec {
        offsets: Vec::with_capacity(rows + 1),
        data: Vec::with_capacity(dense.data.len()),
    };
    out.offsets.push(0);
    let mut next = 0;
    for i in 0..rows {
        if v.get(i) {
            out.push(dense.get(next));
            next += 1;
        } else {
            out.push(&[]);
        }
    }
    out
}

/// Converts raw serialized values to the vector of type `t`; falls back to bytes when a value
/// does not fit (an empty int, which Cassandra accepts), so nothing is ever lost.
pub(crate) fn typed_column(raw: BytesVec, validity: Option<Bitmap>, t: ValueType) -> Column {
    let valid = |i: usize| validity.as_ref().is_none_or(|v| v.get(i));
    let n = raw.len();
    let values = match t.physical() {
        Physical::Bytes => None,
        Physical::Int => (0..n)
            .map(|i| {
                if valid(i) {
                    t.parse_int(raw.get(i))
                } else {
                    Some(0)
                }
            })
            .collect::<Option<Vec<i64>>>()
            .map(ColumnValues::Int),
        Physical::Float32 => (0..n)
            .map(|i| match valid(i) {
                true => raw.get(i).try_into().ok().map(f32::from_be_bytes),
                false => Some(0.0),
            })
            .collect::<Option<Vec<f32>>>()
            .map(ColumnValues::Float32),
        Physical::Float64 => (0..n)
            .map(|i| match valid(i) {
                true => raw.get(i).try_into().ok().map(f64::from_be_bytes),
                false => Some(0.0),
            })
            .collect::<Option<Vec<f64>>>()
            .map(ColumnValues::Float64),
    };
    Column {
        values: values.unwrap_or(ColumnValues::Bytes(raw)),
        validity,
    }
}
