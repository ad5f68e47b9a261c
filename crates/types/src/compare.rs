//! Comparators over serialized values, matching Cassandra's `AbstractType.compare` for each
//! type: the order of clustering rows, set elements and map keys.
//!
//! Native types compare without allocating (this runs for every clustering comparison);
//! decimals are the exception, as Cassandra also decodes them to `BigDecimal`.

use std::cmp::Ordering;

use num_bigint::BigInt;

use crate::cql_type::{CqlType, NativeType};
use crate::decode::{take_i32, take_value};
use crate::value::type_fixed_size;
use crate::vint::read_unsigned_vint;

/// Compares two serialized values of type `t` as Cassandra orders them. Reversed clustering
/// order is the caller's business. Malformed input never panics; it compares by whatever
/// prefix could be read, then by raw bytes.
pub fn compare_serialized(t: &CqlType, a: &[u8], b: &[u8]) -> Ordering {
    // Cassandra sorts the empty value before everything for every type.
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Less,
        (false, true) => return Ordering::Greater,
        _ => {}
    }
    match t {
        CqlType::Native(n) => compare_native(*n, a, b),
        CqlType::List { element, .. } | CqlType::Set { element, .. } => {
            compare_collection(element, None, a, b)
        }
        CqlType::Map { key, value, .. } => compare_collection(key, Some(value), a, b),
        CqlType::Tuple(types) => compare_components(types.iter(), a, b),
        CqlType::Udt { def, .. } => compare_components(def.fields.iter().map(|(_, t)| t), a, b),
        CqlType::Vector { element, dimension } => compare_vector(element, *dimension, a, b),
        CqlType::Custom(_) => a.cmp(b),
    }
}

fn be_u64(x: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(*x.get(at..)?.first_chunk::<8>()?))
}

/// Compares fixed-width big-endian signed integers of any width by flipping the sign bit of
/// the first byte, then comparing bytes; falls back to bytes on a width mismatch (which puts
/// the empty value first). Clustering comparisons call it directly, several per row read.
pub fn compare_signed(a: &[u8], b: &[u8]) -> Ordering {
    if let (Some(x), Some(y)) = (a.first_chunk::<8>(), b.first_chunk::<8>()) {
        if a.len() == 8 && b.len() == 8 {
            return i64::from_be_bytes(*x).cmp(&i64::from_be_bytes(*y));
        }
    }
    if a.len() != b.len() {
        return a.cmp(b);
    }
    match (a.split_first(), b.split_first()) {
        (Some((ha, ra)), Some((hb, rb))) => (ha ^ 0x80).cmp(&(hb ^ 0x80)).then_with(|| ra.cmp(rb)),
        _ => a.cmp(b),
    }
}

fn compare_native(n: NativeType, a: &[u8], b: &[u8]) -> Ordering {
    match n {
        NativeType::Ascii | NativeType::Varchar | NativeType::Blob | NativeType::Inet => a.cmp(b),
        NativeType::Duration => a.cmp(b),
        // Date is an unsigned day count centred on 2^31; boolean is one byte, false before true.
        NativeType::Date | NativeType::Boolean => a.cmp(b),
        NativeType::Int
        | NativeType::Bigint
        | NativeType::Counter
        | NativeType::Timestamp
        | NativeType::Time
        | NativeType::Smallint
        | NativeType::Tinyint => compare_signed(a, b),
        NativeType::Double => match (a.first_chunk::<8>(), b.first_chunk::<8>()) {
            (Some(x), Some(y)) => java_double_cmp(f64::from_be_bytes(*x), f64::from_be_bytes(*y)),
            _ => a.cmp(b),
        },
        NativeType::Float => match (a.first_chunk::<4>(), b.first_chunk::<4>()) {
            (Some(x), Some(y)) => java_double_cmp(
                f64::from(f32::from_be_bytes(*x)),
                f64::from(f32::from_be_bytes(*y)),
            ),
            _ => a.cmp(b),
        },
        NativeType::Varint => compare_varint(a, b),
        NativeType::Decimal => compare_decimal(a, b),
        NativeType::Uuid => compare_uuid(a, b),
        NativeType::Timeuuid => compare_timeuuid(a, b),
    }
}

/// Java's `Double.compare`: -0.0 < 0.0 and NaN above everything (NaNs equal each other).
fn java_double_cmp(x: f64, y: f64) -> Ordering {
    match (x.is_nan(), y.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        // total_cmp orders -0.0 before 0.0 exactly as Double.compare does.
        (false, false) => x.total_cmp(&y),
    }
}

/// Strips redundant sign-extension bytes so equal numbers have equal encodings.
fn minimal_varint(x: &[u8]) -> &[u8] {
    let mut x = x;
    while let [first, second, ..] = x {
        let redundant =
            (*first == 0 && second & 0x80 == 0) || (*first == 0xff && second & 0x80 != 0);
        if !redundant {
            break;
        }
        x = &x[1..];
    }
    x
}

/// Numeric order of two's complement big-endian integers without decoding them.
fn compare_varint(a: &[u8], b: &[u8]) -> Ordering {
    let a = minimal_varint(a);
    let b = minimal_varint(b);
    let neg_a = a.first().is_some_and(|x| x & 0x80 != 0);
    let neg_b = b.first().is_some_and(|x| x & 0x80 != 0);
    match (neg_a, neg_b) {
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        // Same sign, minimal encodings: more bytes means larger magnitude.
        (false, false) => a.len().cmp(&b.len()).then_with(|| a.cmp(b)),
        (true, true) => b.len().cmp(&a.len()).then_with(|| a.cmp(b)),
    }
}

/// `BigDecimal.compareTo`: numeric, so 1.0 equals 1.00.
fn compare_decimal(a: &[u8], b: &[u8]) -> Ordering {
    let (Some((sa, ua)), Some((sb, ub))) = (a.split_first_chunk::<4>(), b.split_first_chunk::<4>())
    else {
        return a.cmp(b);
    };
    let (sa, sb) = (i32::from_be_bytes(*sa), i32::from_be_bytes(*sb));
    let (ua, ub) = (
        BigInt::from_signed_bytes_be(ua),
        BigInt::from_signed_bytes_be(ub),
    );
    if sa == sb {
        return ua.cmp(&ub);
    }
    // Bring both to the larger scale; the exponent difference is bounded by 2^32 in theory, so
    // decide by sign first and cap the multiplication at a size no real value needs.
    let sign = ua.sign().cmp(&ub.sign());
    if sign != Ordering::Equal || ua.sign() == num_bigint::Sign::NoSign {
        return sign;
    }
    let diff = (i64::from(sa) - i64::from(sb)).unsigned_abs();
    const MAX_RESCALE_DIGITS: u64 = 10_000;
    if diff > MAX_RESCALE_DIGITS {
        // The value with the much smaller scale has much larger magnitude (unless zero, but
        // zero was settled by the sign comparison above).
        let (bigger_mag_is_a, positive) = (sa < sb, ua.sign() == num_bigint::Sign::Plus);
        return match (bigger_mag_is_a, positive) {
            (true, true) | (false, false) => Ordering::Greater,
            _ => Ordering::Less,
        };
    }
    let factor = num_traits::pow(BigInt::from(10), diff as usize);
    if sa < sb {
        (ua * factor).cmp(&ub)
    } else {
        ua.cmp(&(ub * factor))
    }
}

/// Cassandra's `TimeUUIDType.reorderTimestampBytes`: moves time_hi first so a signed long
/// comparison orders by timestamp.
fn reorder_timestamp(msb: u64) -> i64 {
    ((msb << 48) | ((msb << 16) & 0xffff_0000_0000) | (msb >> 32)) as i64
}

/// `UUIDType`: version first; version 1 by timestamp, others by unsigned msb; then unsigned lsb.
fn compare_uuid(a: &[u8], b: &[u8]) -> Ordering {
    let (Some(ma), Some(mb), Some(la), Some(lb)) =
        (be_u64(a, 0), be_u64(b, 0), be_u64(a, 8), be_u64(b, 8))
    else {
        return a.cmp(b);
    };
    let (va, vb) = ((ma >> 12) & 0xf, (mb >> 12) & 0xf);
    va.cmp(&vb)
        .then_with(|| {
            if va == 1 {
                reorder_timestamp(ma).cmp(&reorder_timestamp(mb))
            } else {
                ma.cmp(&mb)
            }
        })
        .then_with(|| la.cmp(&lb))
}

/// `TimeUUIDType`: timestamp, then the low half as signed bytes (kept for compatibility with
/// Cassandra's original byte-wise comparator; it is why minTimeuuid uses 0x80 bytes).
fn compare_timeuuid(a: &[u8], b: &[u8]) -> Ordering {
    let (Some(ma), Some(mb), Some(la), Some(lb)) =
        (be_u64(a, 0), be_u64(b, 0), be_u64(a, 8), be_u64(b, 8))
    else {
        return a.cmp(b);
    };
    let signed_bytes = |x: u64| (x ^ 0x0080_8080_8080_8080) as i64;
    reorder_timestamp(ma)
        .cmp(&reorder_timestamp(mb))
        .then_with(|| signed_bytes(la).cmp(&signed_bytes(lb)))
}

/// Frozen lists/sets (value = None) and maps: element by element (key then value for maps),
/// then the shorter collection first.
fn compare_collection(elem: &CqlType, value: Option<&CqlType>, a: &[u8], b: &[u8]) -> Ordering {
    let (mut ra, mut rb) = (a, b);
    let (Some(na), Some(nb)) = (take_i32(&mut ra), take_i32(&mut rb)) else {
        return a.cmp(b);
    };
    for _ in 0..na.min(nb).max(0) {
        let types = std::iter::once(elem).chain(value);
        for t in types {
            let (Some(x), Some(y)) = (take_value(&mut ra), take_value(&mut rb)) else {
                return a.cmp(b);
            };
            let c = compare_serialized(t, x.unwrap_or_default(), y.unwrap_or_default());
            if c != Ordering::Equal {
                return c;
            }
        }
    }
    na.cmp(&nb)
}

/// Tuples and UDTs: component-wise with null before any value; a value that ends early (fewer
/// components) equals one whose extra components are all null or empty, else sorts first, as
/// in Cassandra 5.0's TupleType: a UDT value written before `ALTER TYPE ... ADD` is the same
/// clustering key as the new value with the added field null.
fn compare_components<'t>(
    mut types: impl Iterator<Item = &'t CqlType>,
    a: &[u8],
    b: &[u8],
) -> Ordering {
    let (mut ra, mut rb) = (a, b);
    while !ra.is_empty() && !rb.is_empty() {
        let Some(t) = types.next() else {
            return ra.cmp(rb);
        };
        let (Some(x), Some(y)) = (take_value(&mut ra), take_value(&mut rb)) else {
            return ra.cmp(rb);
        };
        let c = match (x, y) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => compare_serialized(t, x, y),
        };
        if c != Ordering::Equal {
            return c;
        }
    }
    if has_non_empty(ra) {
        return Ordering::Greater;
    }
    if has_non_empty(rb) {
        return Ordering::Less;
    }
    Ordering::Equal
}

/// Whether the remaining components of a tuple hold a non-empty value (a malformed rest counts
/// as one, so that it never equals a well-formed value).
fn has_non_empty(mut rest: &[u8]) -> bool {
    while !rest.is_empty() {
        match take_value(&mut rest) {
            Some(Some(v)) if !v.is_empty() => return true,
            Some(_) => {}
            None => return true,
        }
    }
    false
}

/// Vectors: element by element.
fn compare_vector(elem: &CqlType, dimension: u32, a: &[u8], b: &[u8]) -> Ordering {
    if let Some(size) = type_fixed_size(elem).filter(|s| *s > 0) {
        for (x, y) in a.chunks(size).zip(b.chunks(size)) {
            let c = compare_serialized(elem, x, y);
            if c != Ordering::Equal {
                return c;
            }
        }
        return a.len().cmp(&b.len());
    }
    let (mut ra, mut rb) = (a, b);
    for _ in 0..dimension {
        let (Some((la, ua)), Some((lb, ub))) = (read_unsigned_vint(ra), read_unsigned_vint(rb))
        else {
            return ra.cmp(rb);
        };
        let (Some(x), Some(y)) = (
            ra.get(ua..).and_then(|r| r.get(..la as usize)),
            rb.get(ub..).and_then(|r| r.get(..lb as usize)),
        ) else {
            return ra.cmp(rb);
        };
        let c = compare_serialized(elem, x, y);
        if c != Ordering::Equal {
            return c;
        }
        ra = &ra[ua + x.len()..];
        rb = &rb[ub + y.len()..];
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(t: NativeType) -> CqlType {
        CqlType::Native(t)
    }

    #[test]
    fn ints_compare_signed_and_empty_first() {
        let t = n(NativeType::Int);
        assert_eq!(
            compare_serialized(&t, &(-1i32).to_be_bytes(), &1i32.to_be_bytes()),
            Ordering::Less
        );
        assert_eq!(
            compare_serialized(&t, &[], &i32::MIN.to_be_bytes()),
            Ordering::Less
        );
    }

    #[test]
    fn varints_compare_numerically_across_lengths() {
        let t = n(NativeType::Varint);
        let enc = |v: i64| BigInt::from(v).to_signed_bytes_be();
        let vals = [-70000i64, -129, -128, -1, 0, 1, 127, 128, 70000];
        for x in vals {
            for y in vals {
                assert_eq!(
                    compare_serialized(&t, &enc(x), &enc(y)),
                    x.cmp(&y),
                    "{x} vs {y}"
                );
            }
        }
        assert_eq!(compare_varint(&[0, 0, 1], &[1]), Ordering::Equal);
    }

    #[test]
    fn decimals_compare_numerically_ignoring_scale() {
        let t = n(NativeType::Decimal);
        let dec = |unscaled: i64, scale: i32| {
            let mut v = scale.to_be_bytes().to_vec();
            v.extend(BigInt::from(unscaled).to_signed_bytes_be());
            v
        };
        assert_eq!(
            compare_serialized(&t, &dec(10, 1), &dec(100, 2)),
            Ordering::Equal
        );
        assert_eq!(
            compare_serialized(&t, &dec(15, 1), &dec(2, 0)),
            Ordering::Less
        );
        assert_eq!(
            compare_serialized(&t, &dec(-1, -20000), &dec(1, 0)),
            Ordering::Less
        );
    }

    #[test]
    fn doubles_follow_java_double_compare() {
        let t = n(NativeType::Double);
        let c = |x: f64, y: f64| compare_serialized(&t, &x.to_be_bytes(), &y.to_be_bytes());
        assert_eq!(c(-0.0, 0.0), Ordering::Less);
        assert_eq!(c(f64::NAN, f64::INFINITY), Ordering::Greater);
        assert_eq!(c(-2.0, 1.0), Ordering::Less);
    }

    #[test]
    fn uuid_orders_by_version_then_time() {
        let t = n(NativeType::Uuid);
        let v1 = crate::time::timeuuid_at_unix_ms(2_000_000_000_000);
        let v1_earlier = crate::time::timeuuid_at_unix_ms(1_000);
        let v4 = uuid::Uuid::from_u128(0x0000_0000_0000_4000_8000_0000_0000_0000);
        assert_eq!(
            compare_serialized(&t, v1.as_bytes(), v4.as_bytes()),
            Ordering::Less
        );
        assert_eq!(
            compare_serialized(&t, v1_earlier.as_bytes(), v1.as_bytes()),
            Ordering::Less
        );
    }

    #[test]
    fn frozen_lists_compare_elementwise_then_by_length() {
        let t = CqlType::List {
            element: Box::new(n(NativeType::Int)),
            frozen: true,
        };
        let list = |xs: &[i32]| {
            crate::value::serialize_to_bytes(&crate::CqlValue::List(
                xs.iter().map(|x| crate::CqlValue::Int(*x)).collect(),
            ))
        };
        assert_eq!(
            compare_serialized(&t, &list(&[1, 2]), &list(&[1, 2, 0])),
            Ordering::Less
        );
        assert_eq!(
            compare_serialized(&t, &list(&[-1, 9]), &list(&[1])),
            Ordering::Less
        );
    }

    #[test]
    fn tuples_put_null_before_values() {
        let t = CqlType::Tuple(vec![n(NativeType::Int)]);
        let null = (-1i32).to_be_bytes();
        let mut one = 4i32.to_be_bytes().to_vec();
        one.extend(1i32.to_be_bytes());
        assert_eq!(compare_serialized(&t, &null, &one), Ordering::Less);
    }

    #[test]
    fn trailing_null_components_equal_missing_ones() {
        let t = CqlType::Tuple(vec![n(NativeType::Int), n(NativeType::Int)]);
        let mut short = 4i32.to_be_bytes().to_vec();
        short.extend(1i32.to_be_bytes());
        let mut padded = short.clone();
        padded.extend((-1i32).to_be_bytes());
        let mut longer = short.clone();
        longer.extend(4i32.to_be_bytes());
        longer.extend(0i32.to_be_bytes());
        assert_eq!(compare_serialized(&t, &short, &padded), Ordering::Equal);
        assert_eq!(compare_serialized(&t, &padded, &short), Ordering::Equal);
        assert_eq!(compare_serialized(&t, &short, &longer), Ordering::Less);
        assert_eq!(compare_serialized(&t, &longer, &padded), Ordering::Greater);
    }
}
