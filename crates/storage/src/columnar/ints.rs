//! Integer encodings, and the chooser that picks the smallest per chunk:
//!
//! ```text
//! 0 bit-packed   sv(min) u8(width) packed(v - min)            frame of reference: small ints, codes
//! 1 run-length   uv(runs) ints(run values) ints(run lengths)  constant stretches (timestamps of a batch)
//! 2 delta        sv(first) ints(v[i] - v[i-1])                monotone ints, sorted tokens, timestamps
//! 3 dictionary   uv(d) ints(sorted distinct) ints(codes)      few distinct values spread far apart
//! ```
//!
//! Nested `ints` are encoded by this same chooser without dictionaries (and delta only where it
//! can help), so a dictionary's codes become run-length or bit-packed by whichever is smaller.
//! Differences use wrapping arithmetic, so every i64 round-trips. Floats are encoded as their bit
//! patterns through the same code (a dictionary of few distinct values, or runs, or plain bits).

use super::bits::{pack, packed_at, packed_len, put_sv, put_uv, unpack, width, zigzag, Cursor};
use super::vector::Bitmap;
use super::ColumnarError;

const BIT_PACKED: u8 = 0;
const RUN_LENGTH: u8 = 1;
const DELTA: u8 = 2;
const DICTIONARY: u8 = 3;

/// Candidates a (nested) encoding may use.
#[derive(Clone, Copy)]
pub(super) struct Allow {
    pub rle: bool,
    pub delta: bool,
    pub dict: bool,
}

impl Allow {
    pub const ALL: Allow = Allow {
        rle: true,
        delta: true,
        dict: true,
    };
    const PACKED: Allow = Allow {
        rle: false,
        delta: false,
        dict: false,
    };
}

fn uv_len(v: u64) -> usize {
    (width(v).max(1) as usize).div_ceil(7)
}

fn packed_cost(min: i64, max: i64, n: usize) -> usize {
    2 + uv_len(zigzag(min)) + packed_len(n, width(max.wrapping_sub(min) as u64))
}

/// What the chooser learns of a vector in one pass.
struct Shape {
    min: i64,
    max: i64,
    runs: usize,
    run_min: i64,
    run_max: i64,
    longest_run: usize,
    delta_min: i64,
    delta_max: i64,
}

fn shape(v: &[i64]) -> Shape {
    let first = v.first().copied().unwrap_or(0);
    let mut s = Shape {
        min: first,
        max: first,
        runs: usize::from(!v.is_empty()),
        run_min: first,
        run_max: first,
        longest_run: usize::from(!v.is_empty()),
        delta_min: i64::MAX,
        delta_max: i64::MIN,
    };
    let mut run = 1usize;
    for w in v.windows(2) {
        let (a, b) = (w[0], w[1]);
        s.min = s.min.min(b);
        s.max = s.max.max(b);
        let d = b.wrapping_sub(a);
        s.delta_min = s.delta_min.min(d);
        s.delta_max = s.delta_max.max(d);
        if a == b {
            run += 1;
        } else {
            s.runs += 1;
            run = 1;
        }
        s.longest_run = s.longest_run.max(run);
    }
    // Run values' range equals the values' range; only their count differs.
    s.run_min = s.min;
    s.run_max = s.max;
    s
}

impl Shape {
    fn rle_cost(&self) -> usize {
        1 + uv_len(self.runs as u64)
            + packed_cost(self.run_min, self.run_max, self.runs)
            + packed_cost(1, self.longest_run as i64, self.runs)
    }

    fn delta_cost(&self, n: usize) -> usize {
        if n < 2 {
            return usize::MAX;
        }
        1 + uv_len(zigzag(self.min)) + packed_cost(self.delta_min, self.delta_max, n - 1)
    }
}

/// Appends the smallest encoding of `v` among those `allow` permits.
pub(super) fn encode_ints(out: &mut Vec<u8>, v: &[i64], allow: Allow) {
    let s = shape(v);
    let packed = 1 + packed_cost(s.min, s.max, v.len());
    let rle = if allow.rle { s.rle_cost() } else { usize::MAX };
    let delta = if allow.delta {
        s.delta_cost(v.len())
    } else {
        usize::MAX
    };
    let best = packed.min(rle).min(delta);
    if allow.dict && v.len() >= 16 && best > 8 && try_dictionary(out, v, &s, best) {
        return;
    }
    if best == packed {
        encode_packed(out, v, s.min, s.max);
    } else if best == rle {
        encode_rle(out, v, s.runs);
    } else {
        encode_delta(out, v);
    }
}

fn encode_packed(out: &mut Vec<u8>, v: &[i64], min: i64, max: i64) {
    out.push(BIT_PACKED);
    put_sv(out, min);
    let w = width(max.wrapping_sub(min) as u64);
    out.push(w as u8);
    pack(out, v.iter().map(|x| x.wrapping_sub(min) as u64), w);
}

fn encode_rle(out: &mut Vec<u8>, v: &[i64], runs: usize) {
    let mut values = Vec::with_capacity(runs);
    let mut lengths = Vec::with_capacity(runs);
    for x in v {
        match (values.last(), lengths.last_mut()) {
            (Some(last), Some(len)) if last == x => *len += 1,
            _ => {
                values.push(*x);
                lengths.push(1i64);
            }
        }
    }
    out.push(RUN_LENGTH);
    put_uv(out, values.len() as u64);
    encode_ints(out, &values, Allow::PACKED);
    encode_ints(out, &lengths, Allow::PACKED);
}

fn encode_delta(out: &mut Vec<u8>, v: &[i64]) {
    out.push(DELTA);
    put_sv(out, v.first().copied().unwrap_or(0));
    let deltas: Vec<i64> = v.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect();
    encode_ints(out, &deltas, Allow::PACKED);
}

/// Writes a dictionary encoding if it is estimated smaller than `best`; returns whether it did.
fn try_dictionary(out: &mut Vec<u8>, v: &[i64], s: &Shape, best: usize) -> bool {
    let mut dict = v.to_vec();
    dict.sort_unstable();
    dict.dedup();
    let d = dict.len();
    if d > v.len() / 2 {
        return false;
    }
    let code_bits = width((d as u64).saturating_sub(1));
    let codes = (packed_len(v.len(), code_bits) + 4)
        .min(1 + packed_len(s.runs, code_bits) + packed_cost(1, s.longest_run as i64, s.runs));
    let dict_shape = shape(&dict);
    let dict_cost =
        (1 + packed_cost(dict_shape.min, dict_shape.max, d)).min(dict_shape.delta_cost(d));
    if 2 + uv_len(d as u64) + dict_cost + codes >= best {
        return false;
    }
    out.push(DICTIONARY);
    put_uv(out, d as u64);
    encode_ints(
        out,
        &dict,
        Allow {
            rle: false,
            delta: true,
            dict: false,
        },
    );
    let codes: Vec<i64> = v
        .iter()
        .map(|x| dict.binary_search(x).unwrap_or(0) as i64)
        .collect();
    encode_ints(
        out,
        &codes,
        Allow {
            rle: true,
            delta: false,
            dict: false,
        },
    );
    true
}

/// Encodings nest at most this deep (dictionary codes in runs); a corrupt file that claims
/// more must not recurse without bound.
const MAX_DEPTH: u32 = 4;

/// Decodes `n` integers, appending them to `out`.
pub(super) fn decode_ints(
    c: &mut Cursor<'_>,
    n: usize,
    out: &mut Vec<i64>,
) -> Result<(), ColumnarError> {
    decode_nested(c, n, out, 0)
}

/// Decodes `n` integers, appending only those at positions `at` (ascending, below `n`; every
/// one when None). Bit-packed values are read where they lie, the others decoded whole first:
/// an aggregate over the 1% of a row group a restriction leaves reads 1% of its values.
pub(super) fn decode_ints_at(
    c: &mut Cursor<'_>,
    n: usize,
    out: &mut Vec<i64>,
    at: Option<&[usize]>,
) -> Result<(), ColumnarError> {
    let Some(at) = at else {
        return decode_ints(c, n, out);
    };
    if at.last().is_some_and(|i| *i >= n) {
        return Err(ColumnarError::corrupt("position past the values"));
    }
    let mut peek = c.clone();
    if peek.u8()? == BIT_PACKED {
        let min = peek.sv()?;
        let w = u32::from(peek.u8()?);
        if w > 64 {
            return Err(ColumnarError::corrupt("bit width"));
        }
        let bytes = peek.take(packed_len(n, w))?;
        out.extend(
            at.iter()
                .map(|i| min.wrapping_add(packed_at(bytes, w, *i) as i64)),
        );
        *c = peek;
        return Ok(());
    }
    let mut all = Vec::with_capacity(n);
    decode_ints(c, n, &mut all)?;
    out.extend(at.iter().filter_map(|i| all.get(*i)));
    Ok(())
}

/// The tag (where an integer encoding's tag would be) of integers coded into the stream's
/// segment dictionary: `4 ints(codes)`.
pub(super) const SEGMENT_CODES: u8 = 4;

/// Most entries an integer segment dictionary may hold (2 MiB of values at most).
const INT_DICT_ENTRIES: usize = 1 << 18;

/// A numeric stream's dictionary for a whole segment (integers, or floats' bit patterns), built
/// as its chunks are written: what a column of a few thousand distinct numbers (coordinates,
/// place ids) or of many repeating doubles (scores with many decimals) is cheaper as than as
/// each row group's own encoding.
#[derive(Default)]
pub(super) struct IntDict {
    index: std::collections::HashMap<i64, u32, foldhash::fast::RandomState>,
    entries: Vec<i64>,
    full: bool,
    /// Whether a chunk was coded with it (else it is not written).
    used: bool,
}

impl IntDict {
    /// The codes of a chunk's (non-null) values, adding what is new to the dictionary, when
    /// they and the new entries take fewer than `own_bytes` (the chunk's own encoding); None
    /// otherwise, or when the dictionary is full.
    pub fn codes(&mut self, values: &[i64], own_bytes: usize) -> Option<Vec<i64>> {
        if self.full || values.len() < 4 {
            return None;
        }
        let mut fresh: std::collections::HashSet<i64, foldhash::fast::RandomState> =
            std::collections::HashSet::default();
        for v in values {
            if !self.index.contains_key(v) {
                fresh.insert(*v);
            }
        }
        let size = self.index.len() + fresh.len();
        if size > INT_DICT_ENTRIES {
            self.full = true;
            return None;
        }
        // Codes bit-packed at the dictionary's width, and each new entry at half its 8 bytes:
        // the dictionary is written compressed, and an entry is paid once, then serves every
        // later chunk.
        let code_bits = width(size.saturating_sub(1) as u64) as usize;
        let cost = packed_len(values.len(), code_bits as u32) + fresh.len() * 4;
        if cost >= own_bytes {
            // The first chunk pays for every entry, so it rarely gains itself; when its values
            // repeat at all, they seed the dictionary for the chunks after it.
            if self.entries.is_empty() && fresh.len() <= values.len() * 3 / 4 {
                for v in values {
                    let next = self.index.len() as u32;
                    self.index.entry(*v).or_insert_with(|| {
                        self.entries.push(*v);
                        next
                    });
                }
            }
            return None;
        }
        self.used = true;
        let codes = values
            .iter()
            .map(|v| {
                let next = self.index.len() as u32;
                let code = *self.index.entry(*v).or_insert_with(|| {
                    self.entries.push(*v);
                    next
                });
                i64::from(code)
            })
            .collect();
        Some(codes)
    }
}

impl IntDict {
    /// The entries to write: None when no chunk was coded with them.
    pub fn into_entries(self) -> Option<Vec<i64>> {
        self.used.then_some(self.entries)
    }
}

/// Appends `codes` as dictionary codes are encoded (runs or bit-packed).
pub(super) fn encode_codes(out: &mut Vec<u8>, codes: &[i64]) {
    encode_ints(
        out,
        codes,
        Allow {
            rle: true,
            delta: false,
            dict: false,
        },
    );
}

/// Decodes `n` codes into `dict`, appending the values the codes at positions `at` name (every
/// code's when None).
pub(super) fn decode_codes(
    c: &mut Cursor<'_>,
    n: usize,
    dict: &[i64],
    out: &mut Vec<i64>,
    at: Option<&[usize]>,
) -> Result<(), ColumnarError> {
    let mut codes = Vec::with_capacity(at.map_or(n, <[usize]>::len));
    decode_ints_at(c, n, &mut codes, at)?;
    out.reserve(codes.len());
    for code in codes {
        let v = usize::try_from(code)
            .ok()
            .and_then(|i| dict.get(i))
            .ok_or_else(|| ColumnarError::corrupt("dictionary code"))?;
        out.push(*v);
    }
    Ok(())
}

/// Decodes `n` codes into `dict` and tells for each whether the value it names satisfies
/// `keep`: tested once per entry when the dictionary is no longer than the codes (a month
/// column's 72 values for 16,384 rows), else once per code.
pub(super) fn select_codes(
    c: &mut Cursor<'_>,
    n: usize,
    dict: &[i64],
    keep: impl Fn(i64) -> bool,
) -> Result<Vec<bool>, ColumnarError> {
    if dict.len() > n {
        let mut values = Vec::with_capacity(n);
        decode_codes(c, n, dict, &mut values, None)?;
        return Ok(values.into_iter().map(keep).collect());
    }
    let table: Vec<bool> = dict.iter().map(|v| keep(*v)).collect();
    let mut codes = Vec::with_capacity(n);
    decode_ints(c, n, &mut codes)?;
    codes
        .iter()
        .map(|k| {
            usize::try_from(*k)
                .ok()
                .and_then(|i| table.get(i).copied())
                .ok_or_else(|| ColumnarError::corrupt("dictionary code"))
        })
        .collect()
}

/// `n` integers that are all 0 or 1 (a validity stream), as a bitmap. The usual encoding,
/// bit-packed from 0 at width 1, already is one (bit i of the bytes is value i): its bytes are
/// taken a word at a time; any other encoding is decoded and packed.
pub(super) fn decode_bits(c: &mut Cursor<'_>, n: usize) -> Result<Bitmap, ColumnarError> {
    let mut peek = c.clone();
    if peek.u8()? == BIT_PACKED && peek.sv()? == 0 && peek.u8()? == 1 {
        let bytes = peek.take(packed_len(n, 1))?;
        *c = peek;
        return Ok(Bitmap::from_le_bytes(bytes, n));
    }
    let mut bits = Vec::with_capacity(n);
    decode_ints(c, n, &mut bits)?;
    Ok(Bitmap::from_bools(bits.iter().map(|b| *b != 0), n))
}

fn decode_nested(
    c: &mut Cursor<'_>,
    n: usize,
    out: &mut Vec<i64>,
    depth: u32,
) -> Result<(), ColumnarError> {
    if depth > MAX_DEPTH {
        return Err(ColumnarError::corrupt("integer encodings nested too deep"));
    }
    let decode_ints =
        |c: &mut Cursor<'_>, n: usize, out: &mut Vec<i64>| decode_nested(c, n, out, depth + 1);
    match c.u8()? {
        BIT_PACKED => {
            let min = c.sv()?;
            let w = u32::from(c.u8()?);
            if packed_len(n, w.min(64)) > c.remaining() {
                return Err(ColumnarError::corrupt("packed ints past end"));
            }
            out.reserve(n);
            unpack(c, n, w, |x| out.push(min.wrapping_add(x as i64)))
        }
        RUN_LENGTH => {
            let runs = c.len_at_most(n)?;
            let mut values = Vec::with_capacity(runs);
            decode_ints(c, runs, &mut values)?;
            let mut lengths = Vec::with_capacity(runs);
            decode_ints(c, runs, &mut lengths)?;
            let total = lengths
                .iter()
                .try_fold(0usize, |acc, l| acc.checked_add(usize::try_from(*l).ok()?));
            if total != Some(n) {
                return Err(ColumnarError::corrupt("run lengths"));
            }
            out.reserve(n);
            for (v, l) in values.iter().zip(&lengths) {
                out.extend(std::iter::repeat_n(*v, *l as usize));
            }
            Ok(())
        }
        DELTA => {
            let first = c.sv()?;
            if n == 0 {
                return Err(ColumnarError::corrupt("delta of no values"));
            }
            let start = out.len();
            out.reserve(n);
            out.push(first);
            decode_ints(c, n - 1, out)?;
            let mut acc = first;
            for x in out.iter_mut().skip(start + 1) {
                acc = acc.wrapping_add(*x);
                *x = acc;
            }
            Ok(())
        }
        DICTIONARY => {
            let d = c.len_at_most(n)?;
            let mut dict = Vec::with_capacity(d);
            decode_ints(c, d, &mut dict)?;
            let start = out.len();
            decode_ints(c, n, out)?;
            for x in out.iter_mut().skip(start) {
                *x = *usize::try_from(*x)
                    .ok()
                    .and_then(|i| dict.get(i))
                    .ok_or_else(|| ColumnarError::corrupt("dictionary code"))?;
            }
            Ok(())
        }
        _ => Err(ColumnarError::corrupt("integer encoding")),
    }
}

/// The encoding tag a buffer starts with.
#[cfg(test)]
pub(super) fn encoding_name(tag: Option<u8>) -> &'static str {
    match tag {
        Some(BIT_PACKED) => "bit-packed",
        Some(RUN_LENGTH) => "run-length",
        Some(DELTA) => "delta",
        Some(DICTIONARY) => "dictionary",
        _ => "none",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::Rng;

    fn round_trip(v: &[i64]) -> Vec<u8> {
        let mut b = Vec::new();
        encode_ints(&mut b, v, Allow::ALL);
        let mut back = Vec::new();
        let mut c = Cursor::new(&b);
        decode_ints(&mut c, v.len(), &mut back).unwrap();
        assert_eq!(back, v);
        assert!(c.is_empty(), "trailing bytes");
        for cut in 0..b.len() {
            let mut out = Vec::new();
            let _ = decode_ints(&mut Cursor::new(&b[..cut]), v.len(), &mut out);
        }
        b
    }

    fn tag(v: &[i64]) -> &'static str {
        encoding_name(round_trip(v).first().copied())
    }

    /// Codes tested through a dictionary shorter and longer than them, and values read at
    /// positions, agree with the values decoded whole, whatever encoding the codes took.
    #[test]
    fn codes_selected_and_values_read_at_positions_agree_with_a_whole_decode() {
        let mut r = Rng(0xC0DE5);
        for round in 0..400 {
            let n = 1 + r.below(3000) as usize;
            let entries = [3usize, 70, 5000][round % 3];
            let dict: Vec<i64> = (0..entries).map(|i| i as i64 * 37 - 900).collect();
            // Runs now and then, so that codes are run-length as well as bit-packed.
            let codes: Vec<i64> = (0..n)
                .map(|i| if round % 4 == 0 { (i / 50) as i64 } else { r.below(entries as u64) as i64 } % entries as i64)
                .collect();
            let mut b = Vec::new();
            encode_codes(&mut b, &codes);
            let bound = r.below(entries as u64) as i64 * 37 - 900;
            let got = select_codes(&mut Cursor::new(&b), n, &dict, |v| v < bound).unwrap();
            let want: Vec<bool> = codes.iter().map(|k| dict[*k as usize] < bound).collect();
            assert_eq!(got, want, "{entries} entries, {n} codes");
            let at: Vec<usize> = (0..n).filter(|_| r.below(7) == 0).collect();
            let mut picked = Vec::new();
            let mut c = Cursor::new(&b);
            decode_ints_at(&mut c, n, &mut picked, Some(&at)).unwrap();
            assert!(c.is_empty(), "trailing bytes");
            assert_eq!(picked, at.iter().map(|i| codes[*i]).collect::<Vec<_>>());
        }
        // A code past the dictionary is an error either way.
        let mut b = Vec::new();
        encode_codes(&mut b, &[0, 9]);
        assert!(select_codes(&mut Cursor::new(&b), 2, &[1, 2], |_| true).is_err());
        assert!(select_codes(&mut Cursor::new(&b), 2, &[1], |_| true).is_err());
        assert!(decode_ints_at(&mut Cursor::new(&b), 2, &mut Vec::new(), Some(&[2])).is_err());
    }

    #[test]
    fn the_chooser_picks_the_shape_of_the_data() {
        // A constant is bit-packed at width 0: a few bytes whatever the count.
        assert!(round_trip(&[7; 1000]).len() < 6);
        let batches: Vec<i64> = (0..1000)
            .map(|i| 1_700_000_000_000_000 + (i / 250) * 977)
            .collect();
        assert_eq!(tag(&batches), "run-length");
        let monotone: Vec<i64> = (0..1000)
            .map(|i| 1_700_000_000_000_000 + i * 1000)
            .collect();
        assert_eq!(tag(&monotone), "delta");
        assert!(round_trip(&monotone).len() < 20);
        let small: Vec<i64> = (0..1000).map(|i| (i * 7919) % 13).collect();
        assert_eq!(tag(&small), "bit-packed");
        let far: Vec<i64> = (0..1000).map(|i| [i64::MIN, 0, i64::MAX][i % 3]).collect();
        assert_eq!(tag(&far), "dictionary");
        assert!(round_trip(&far).len() < 300);
        let months: Vec<i64> = (0..1000).map(|i| 197901 + (i / 100)).collect();
        assert!(round_trip(&months).len() < 60);
    }

    #[test]
    fn edge_vectors_round_trip() {
        round_trip(&[]);
        round_trip(&[i64::MIN]);
        round_trip(&[i64::MIN, i64::MAX]);
        round_trip(&[i64::MAX, i64::MIN, 0, -1, 1]);
        round_trip(&[0; 100_000]);
    }

    #[test]
    fn random_vectors_round_trip() {
        let mut r = Rng(0x1234_5678);
        for _ in 0..500 {
            let n = r.below(300) as usize;
            let spread = [1u64, 2, 16, 1 << 20, u64::MAX][r.below(5) as usize];
            let run = 1 + r.below(20) as usize;
            let mut v = Vec::with_capacity(n);
            while v.len() < n {
                // Wrapping: with the full spread the shift is past i64's range (tests build with
                // overflow checks outside --release).
                let x = (r.below(spread) as i64).wrapping_sub((spread / 2) as i64);
                v.extend(std::iter::repeat_n(x, run.min(n - v.len())));
            }
            round_trip(&v);
        }
    }

    #[test]
    fn corrupt_codes_and_runs_are_errors() {
        let mut b = vec![DICTIONARY];
        put_uv(&mut b, 1);
        encode_ints(&mut b, &[5], Allow::PACKED);
        encode_ints(&mut b, &[0, 3], Allow::PACKED);
        assert!(decode_ints(&mut Cursor::new(&b), 2, &mut Vec::new()).is_err());
        let mut b = vec![RUN_LENGTH];
        put_uv(&mut b, 1);
        encode_ints(&mut b, &[5], Allow::PACKED);
        encode_ints(&mut b, &[3], Allow::PACKED);
        assert!(decode_ints(&mut Cursor::new(&b), 2, &mut Vec::new()).is_err());
        assert!(decode_ints(&mut Cursor::new(&[9]), 1, &mut Vec::new()).is_err());
    }
}
