//! Variable-length (text, blob) encodings:
//!
//! ```text
//! 0 plain       ints(lengths) raw bytes
//! 1 dictionary  uv(d) ints(dictionary lengths) dictionary bytes ints(codes)
//! 2 segment     ints(codes) into the segment's dictionary of the stream (SegmentDict)
//! ```
//!
//! A segment dictionary holds a stream's values once for the whole file, in the order they
//! first came (codes are not in value order). A chunk dictionary of a column of thousands of
//! values (names, places) repeats in every row group and can outweigh the codes; a segment
//! dictionary costs each value once, and a restriction tests each entry at most once per chunk.
//!
//! The dictionary is sorted bytewise, so code order is value order for text and blobs (a later
//! filter can compare codes instead of bytes). Codes go through the integer chooser, so a
//! column of few values in long runs costs a few bytes per run.

use super::bits::Cursor;
use super::ints::{decode_ints, encode_codes, encode_ints, Allow};
use super::vector::BytesVec;
use super::ColumnarError;
use std::collections::HashMap;

const PLAIN: u8 = 0;
const DICTIONARY: u8 = 1;
const SEGMENT: u8 = 2;

/// Most entries and bytes a segment dictionary may hold; past either, the stream's later chunks
/// are encoded on their own (as Parquet falls back from a dictionary page that grew too large).
const SEGMENT_DICT_ENTRIES: usize = 1 << 16;
const SEGMENT_DICT_BYTES: usize = 1 << 20;

/// Appends the smaller of the plain and dictionary encodings of `values`.
pub(super) fn encode_bytes(out: &mut Vec<u8>, values: &[&[u8]]) {
    let mut plain = Vec::new();
    encode_plain(&mut plain, values.iter().copied());
    if values.len() >= 4 {
        if let Some(dict) = encode_dictionary(values, plain.len()) {
            out.extend_from_slice(&dict);
            return;
        }
    }
    out.extend_from_slice(&plain);
}

fn encode_plain<'a>(out: &mut Vec<u8>, values: impl Iterator<Item = &'a [u8]> + Clone) {
    out.push(PLAIN);
    let lengths: Vec<i64> = values.clone().map(|v| v.len() as i64).collect();
    encode_ints(out, &lengths, Allow::ALL);
    for v in values {
        out.extend_from_slice(v);
    }
}

/// The dictionary encoding when there are few enough distinct values for it to be smaller than
/// `plain_len`.
fn encode_dictionary(values: &[&[u8]], plain_len: usize) -> Option<Vec<u8>> {
    let limit = values.len() / 2;
    let mut seen: HashMap<&[u8], u32, foldhash::fast::RandomState> = HashMap::default();
    let mut distinct_bytes = 0usize;
    for v in values {
        if !seen.contains_key(v) {
            if seen.len() >= limit {
                return None;
            }
            distinct_bytes += v.len();
            seen.insert(v, 0);
        }
    }
    if distinct_bytes >= plain_len {
        return None;
    }
    let mut dict: Vec<&[u8]> = seen.keys().copied().collect();
    dict.sort_unstable();
    for (i, v) in dict.iter().enumerate() {
        seen.insert(v, i as u32);
    }
    let codes: Vec<i64> = values
        .iter()
        .map(|v| seen.get(v).copied().map_or(0, i64::from))
        .collect();
    let mut out = vec![DICTIONARY];
    super::bits::put_uv(&mut out, dict.len() as u64);
    let mut entries = Vec::new();
    encode_plain(&mut entries, dict.iter().copied());
    // The plain encoding's tag is implied here.
    out.extend_from_slice(entries.get(1..).unwrap_or_default());
    encode_codes(&mut out, &codes);
    (out.len() < plain_len).then_some(out)
}

/// A dictionary-coded body after its tag: its dictionary (the chunk's own, or the segment's)
/// and its `n` codes.
fn coded<'d>(
    c: &mut Cursor<'_>,
    n: usize,
    tag: u8,
    segment: Option<&'d BytesVec>,
) -> Result<(std::borrow::Cow<'d, BytesVec>, Vec<i64>), ColumnarError> {
    let dict = match tag {
        DICTIONARY => {
            let d = c.len_at_most(n)?;
            let mut dict = BytesVec::default();
            decode_plain(c, d, &mut dict)?;
            std::borrow::Cow::Owned(dict)
        }
        SEGMENT => std::borrow::Cow::Borrowed(
            segment.ok_or_else(|| ColumnarError::corrupt("no segment dictionary"))?,
        ),
        _ => return Err(ColumnarError::corrupt("bytes encoding")),
    };
    let mut codes = Vec::with_capacity(n);
    decode_ints(c, n, &mut codes)?;
    Ok((dict, codes))
}

/// Decodes `n` values, appending them to `out`; `segment` is the stream's segment
/// dictionary, if the segment has one.
pub(super) fn decode_bytes(
    c: &mut Cursor<'_>,
    n: usize,
    out: &mut BytesVec,
    segment: Option<&BytesVec>,
) -> Result<(), ColumnarError> {
    let (dict, codes) = match c.u8()? {
        PLAIN => return decode_plain(c, n, out),
        tag => coded(c, n, tag, segment)?,
    };
    out.offsets.reserve(n);
    for code in codes {
        let i = usize::try_from(code)
            .ok()
            .filter(|i| *i < dict.len())
            .ok_or_else(|| ColumnarError::corrupt("dictionary code"))?;
        out.push(dict.get(i));
    }
    Ok(())
}

/// Whether each of `n` values satisfies `keep`, without copying them: a dictionary's entries
/// are tested at most once each (a segment dictionary's only when a code names them), then
/// its codes looked up.
pub(super) fn select_bytes(
    c: &mut Cursor<'_>,
    n: usize,
    keep: &dyn Fn(&[u8]) -> bool,
    segment: Option<&BytesVec>,
) -> Result<Vec<bool>, ColumnarError> {
    let (dict, codes) = match c.u8()? {
        PLAIN => {
            let mut values = BytesVec::default();
            decode_plain(c, n, &mut values)?;
            return Ok(values.iter().map(keep).collect());
        }
        tag => coded(c, n, tag, segment)?,
    };
    // Checked once (a negative code is past any length as u64), so the lookups need no checks.
    if !codes.iter().all(|c| (*c as u64) < dict.len() as u64) {
        return Err(ColumnarError::corrupt("dictionary code"));
    }
    if dict.len() <= codes.len() {
        // A dictionary no longer than the chunk: every entry tested once, up front.
        let kept: Vec<bool> = dict.iter().map(keep).collect();
        return Ok(codes
            .iter()
            .map(|c| kept.get(*c as usize).copied().unwrap_or(false))
            .collect());
    }
    // A segment dictionary larger than the chunk: only the entries its codes name.
    // 0: not tested yet, 1: fails, 2: holds.
    let mut tested = vec![0u8; dict.len()];
    Ok(codes
        .iter()
        .map(|c| {
            let i = *c as usize;
            match tested.get_mut(i) {
                Some(slot) => {
                    if *slot == 0 {
                        *slot = 1 + u8::from(keep(dict.get(i)));
                    }
                    *slot == 2
                }
                None => false,
            }
        })
        .collect())
}

/// A stream's dictionary for a whole segment, built as its chunks are written.
#[derive(Default)]
pub(super) struct SegmentDict {
    index: HashMap<Vec<u8>, u32, foldhash::fast::RandomState>,
    pub entries: BytesVec,
    /// Set once the dictionary would grow past its bounds: later chunks are on their own.
    full: bool,
}

impl SegmentDict {
    /// The segment encoding of a chunk's (non-null) `values`, adding what is new to the
    /// dictionary; None when the chunk is better encoded on its own (its values barely repeat)
    /// or the dictionary is full.
    pub fn encode(&mut self, values: &[&[u8]]) -> Option<Vec<u8>> {
        if self.full || values.len() < 4 {
            return None;
        }
        let mut fresh: HashMap<&[u8], (), foldhash::fast::RandomState> = HashMap::default();
        let mut fresh_bytes = 0usize;
        let mut distinct = 0usize;
        let mut seen: HashMap<&[u8], (), foldhash::fast::RandomState> = HashMap::default();
        for v in values {
            if seen.insert(v, ()).is_none() {
                distinct += 1;
                if !self.index.contains_key(*v) && fresh.insert(v, ()).is_none() {
                    fresh_bytes += v.len();
                }
            }
        }
        // Values that barely repeat within a chunk (ids, free text) gain nothing from codes.
        if distinct > values.len() / 2 {
            return None;
        }
        if self.index.len() + fresh.len() > SEGMENT_DICT_ENTRIES
            || self.entries.data.len() + fresh_bytes > SEGMENT_DICT_BYTES
        {
            self.full = true;
            return None;
        }
        let mut codes = Vec::with_capacity(values.len());
        for v in values {
            let code = match self.index.get(*v) {
                Some(c) => *c,
                None => {
                    let c = self.index.len() as u32;
                    self.index.insert(v.to_vec(), c);
                    self.entries.push(v);
                    c
                }
            };
            codes.push(i64::from(code));
        }
        let mut out = vec![SEGMENT];
        encode_codes(&mut out, &codes);
        Some(out)
    }
}

fn decode_plain(c: &mut Cursor<'_>, n: usize, out: &mut BytesVec) -> Result<(), ColumnarError> {
    let mut lengths = Vec::with_capacity(n.min(c.remaining().saturating_mul(8)));
    decode_ints(c, n, &mut lengths)?;
    let total = lengths
        .iter()
        .try_fold(0usize, |acc, l| acc.checked_add(usize::try_from(*l).ok()?))
        .ok_or_else(|| ColumnarError::corrupt("value lengths"))?;
    let data = c.take(total)?;
    let base = out.data.len();
    if base.saturating_add(total) > u32::MAX as usize {
        return Err(ColumnarError::corrupt("chunk values too large"));
    }
    out.data.extend_from_slice(data);
    out.offsets.reserve(n);
    let mut end = base;
    for l in lengths {
        end += l as usize;
        out.offsets.push(end as u32);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(values: &[&[u8]]) -> Vec<u8> {
        let mut b = Vec::new();
        encode_bytes(&mut b, values);
        let mut back = BytesVec::default();
        let mut c = Cursor::new(&b);
        decode_bytes(&mut c, values.len(), &mut back, None).unwrap();
        assert!(c.is_empty());
        assert_eq!(back.iter().collect::<Vec<_>>(), values);
        for cut in 0..b.len() {
            let _ = decode_bytes(
                &mut Cursor::new(&b[..cut]),
                values.len(),
                &mut BytesVec::default(),
                None,
            );
        }
        b
    }

    #[test]
    fn low_cardinality_text_becomes_a_dictionary() {
        let codes: [&[u8]; 3] = [b"USA", b"GBR", b"ALB"];
        let v: Vec<&[u8]> = (0..3000).map(|i| codes[(i * 7) % 3]).collect();
        let b = round_trip(&v);
        assert_eq!(b[0], DICTIONARY);
        assert!(b.len() < 900, "{}", b.len());
        let runs: Vec<&[u8]> = (0..3000).map(|i| codes[i / 1000]).collect();
        assert!(round_trip(&runs).len() < 40);
    }

    #[test]
    fn distinct_and_edge_values_stay_plain() {
        let owned: Vec<Vec<u8>> = (0..100u32).map(|i| i.to_be_bytes().to_vec()).collect();
        let v: Vec<&[u8]> = owned.iter().map(|x| x.as_slice()).collect();
        assert_eq!(round_trip(&v)[0], PLAIN);
        round_trip(&[]);
        round_trip(&[b""]);
        round_trip(&[b"", b"", b"", b"", b""]);
        let big = vec![0xffu8; 1 << 20];
        round_trip(&[&big, b"x", &big]);
    }
}
