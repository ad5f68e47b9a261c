//! Java `Number` semantics over CQL numeric values: the narrowing and widening conversions
//! Cassandra's CAST functions apply (`Number.intValue()` and friends), and `BigDecimal` /
//! `BigInteger` arithmetic for `decimal` and `varint` as Cassandra's operators, aggregates and
//! math functions compute it.

pub use num_bigint::BigInt;
use num_bigint::Sign;
pub use num_traits::Signed;
use num_traits::{ToPrimitive, Zero};

use crate::format::{format_decimal, format_java_double, format_java_float};
use crate::parse::parse_decimal;
use crate::value::CqlValue;

/// A numeric value as the Java object Cassandra composes it into.
#[derive(Debug, Clone, PartialEq)]
pub enum JavaNumber {
    /// `Byte`, `Short`, `Integer`, `Long` (and counters), widened without loss.
    Long(i64),
    Float(f32),
    Double(f64),
    /// `BigDecimal`: `unscaled * 10^-scale`.
    Decimal(BigInt, i32),
    /// `BigInteger`.
    Integer(BigInt),
}

/// The low 64 bits of a big integer in two's complement (Java's `BigInteger.longValue()`).
fn low_i64(n: &BigInt) -> i64 {
    let mask = BigInt::from(u64::MAX);
    ((n & mask).to_u64().unwrap_or(0)) as i64
}

fn pow10(n: u32) -> BigInt {
    num_traits::pow(BigInt::from(10), n as usize)
}

/// Most digits an integer built from a decimal (`CAST(d AS varint)`, `round(d)`) may gain from
/// its exponent: `1E2147483647` as an integer has two billion digits, and building it held a
/// node for minutes.
pub const MAX_RESCALE_DIGITS: i64 = 100_000;

/// `BigDecimal.toBigInteger()`: drops the fraction (towards zero); `None` when the integer
/// would have more than [`MAX_RESCALE_DIGITS`] digits of exponent.
pub fn decimal_to_integer(unscaled: &BigInt, scale: i32) -> Option<BigInt> {
    if scale <= 0 {
        let up = i64::from(scale).abs();
        (up <= MAX_RESCALE_DIGITS).then(|| unscaled * pow10(up as u32))
    } else if i64::from(scale) > digit_count(unscaled) {
        // |value| < 1: no need to build 10^scale to know the integer part is 0.
        Some(BigInt::zero())
    } else {
        Some(unscaled / pow10(scale as u32))
    }
}

impl JavaNumber {
    /// The Java number behind a CQL numeric value, `None` for other values.
    pub fn of(v: &CqlValue) -> Option<JavaNumber> {
        Some(match v {
            CqlValue::Tinyint(x) => JavaNumber::Long(i64::from(*x)),
            CqlValue::Smallint(x) => JavaNumber::Long(i64::from(*x)),
            CqlValue::Int(x) => JavaNumber::Long(i64::from(*x)),
            CqlValue::Bigint(x) | CqlValue::Counter(x) => JavaNumber::Long(*x),
            CqlValue::Float(x) => JavaNumber::Float(*x),
            CqlValue::Double(x) => JavaNumber::Double(*x),
            CqlValue::Decimal { unscaled, scale } => JavaNumber::Decimal(unscaled.clone(), *scale),
            CqlValue::Varint(n) => JavaNumber::Integer(n.clone()),
            _ => return None,
        })
    }

    /// `Number.longValue()`: integers wrap, floating point saturates (NaN is 0).
    pub fn long_value(&self) -> i64 {
        match self {
            JavaNumber::Long(x) => *x,
            JavaNumber::Float(f) => *f as i64,
            JavaNumber::Double(d) => *d as i64,
            // 10^64 is a multiple of 2^64: with a scale of -64 or less the low 64 bits are 0
            // (Java short-cuts the same way instead of building the huge integer).
            JavaNumber::Decimal(_, s) if *s <= -64 => 0,
            JavaNumber::Decimal(u, s) => decimal_to_integer(u, *s).map_or(0, |n| low_i64(&n)),
            JavaNumber::Integer(n) => low_i64(n),
        }
    }

    /// `Number.intValue()`.
    pub fn int_value(&self) -> i32 {
        match self {
            JavaNumber::Float(f) => *f as i32,
            JavaNumber::Double(d) => *d as i32,
            other => other.long_value() as i32,
        }
    }

    /// `Number.shortValue()`: `(short) intValue()` for the types that do not override it.
    pub fn short_value(&self) -> i16 {
        self.int_value() as i16
    }

    /// `Number.byteValue()`.
    pub fn byte_value(&self) -> i8 {
        self.int_value() as i8
    }

    /// `Number.doubleValue()` (correctly rounded for big numbers, via their decimal string).
    pub fn double_value(&self) -> f64 {
        match self {
            JavaNumber::Long(x) => *x as f64,
            JavaNumber::Float(f) => f64::from(*f),
            JavaNumber::Double(d) => *d,
            JavaNumber::Decimal(u, s) => format_decimal(u, *s).parse().unwrap_or(f64::NAN),
            JavaNumber::Integer(n) => n.to_string().parse().unwrap_or(f64::NAN),
        }
    }

    /// `Number.floatValue()`, rounded once from the exact value.
    pub fn float_value(&self) -> f32 {
        match self {
            JavaNumber::Long(x) => *x as f32,
            JavaNumber::Float(f) => *f,
            JavaNumber::Double(d) => *d as f32,
            JavaNumber::Decimal(u, s) => format_decimal(u, *s).parse().unwrap_or(f32::NAN),
            JavaNumber::Integer(n) => n.to_string().parse().unwrap_or(f32::NAN),
        }
    }

    /// The value as a `BigDecimal` the way Cassandra's cast to decimal builds it: floats through
    /// `Float.toString`, doubles through `BigDecimal.valueOf(double)`, integers exactly.
    /// `None` for NaN and infinities (Java throws `NumberFormatException`).
    pub fn to_decimal(&self) -> Option<(BigInt, i32)> {
        match self {
            JavaNumber::Long(x) => Some((BigInt::from(*x), 0)),
            JavaNumber::Float(f) => f
                .is_finite()
                .then(|| parse_decimal(&format_java_float(*f)))
                .flatten(),
            JavaNumber::Double(d) => d
                .is_finite()
                .then(|| parse_decimal(&format_java_double(*d)))
                .flatten(),
            JavaNumber::Decimal(u, s) => Some((u.clone(), *s)),
            JavaNumber::Integer(n) => Some((n.clone(), 0)),
        }
    }

    /// The value as a `BigInteger` (fractions dropped, floats saturated through `long`); `None`
    /// for a decimal whose exponent would add more than [`MAX_RESCALE_DIGITS`] digits.
    pub fn to_integer(&self) -> Option<BigInt> {
        Some(match self {
            JavaNumber::Long(x) => BigInt::from(*x),
            JavaNumber::Float(_) | JavaNumber::Double(_) => BigInt::from(self.long_value()),
            JavaNumber::Decimal(u, s) => decimal_to_integer(u, *s)?,
            JavaNumber::Integer(n) => n.clone(),
        })
    }
}

/// Cassandra's `DecimalType.MAX_PRECISION` (`new MathContext(10000)`): the significant digits
/// `+`, `-` and `*` on decimals keep (rounded half-up). It is also what bounds their time: an
/// exact `1E2147483647 + 1` would need a number of two billion digits.
pub const DECIMAL_MAX_PRECISION: i64 = 10_000;

/// Why a decimal operation has no result (Java's `ArithmeticException` messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecimalError {
    /// The result's scale does not fit an `int` (`BigDecimal` says "Overflow"/"Underflow").
    ScaleOutOfRange,
}

impl std::fmt::Display for DecimalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Overflow")
    }
}

type Decimal = (BigInt, i32);

fn to_scale(scale: i64) -> Result<i32, DecimalError> {
    i32::try_from(scale).map_err(|_| DecimalError::ScaleOutOfRange)
}

/// `|n| / d` rounded half-up (away from zero on a tie), keeping `n`'s sign; `d` positive.
fn div_half_up(n: &BigInt, d: &BigInt) -> BigInt {
    let q = n / d;
    let r = n - &q * d;
    if r.abs() * 2u32 >= *d {
        if n.sign() == Sign::Minus {
            q - 1
        } else {
            q + 1
        }
    } else {
        q
    }
}

/// `BigDecimal.round(new MathContext(DECIMAL_MAX_PRECISION))` on `unscaled * 10^-scale`.
fn round_to_max_precision(unscaled: BigInt, scale: i64) -> Result<Decimal, DecimalError> {
    let drop = digit_count(&unscaled) - DECIMAL_MAX_PRECISION;
    if drop <= 0 {
        return Ok((unscaled, to_scale(scale)?));
    }
    let mut q = div_half_up(&unscaled, &pow10(drop as u32));
    let mut scale = scale - drop;
    // A carry (999.5 -> 1000) adds a digit; the digit dropped is then an exact zero.
    if digit_count(&q) > DECIMAL_MAX_PRECISION {
        q /= 10u32;
        scale -= 1;
    }
    Ok((q, to_scale(scale)?))
}

/// Brings two decimals to a common scale (the larger one). Callers bound the difference.
fn align(a: &(BigInt, i32), b: &(BigInt, i32)) -> (BigInt, BigInt, i32) {
    let scale = a.1.max(b.1);
    let up = |x: &(BigInt, i32)| &x.0 * pow10((scale - x.1) as u32);
    (up(a), up(b), scale)
}

/// `BigDecimal.add(augend, new MathContext(DECIMAL_MAX_PRECISION))`, as Cassandra's `+`.
pub fn decimal_add(a: &Decimal, b: &Decimal) -> Result<Decimal, DecimalError> {
    if a.0.is_zero() || b.0.is_zero() {
        return add_to_zero(a, b);
    }
    let (big, small) = if a.1 < b.1 { (a, b) } else { (b, a) };
    let small = pre_align(big, small);
    let scale = i64::from(big.1).max(small.1);
    let up = |u: &BigInt, s: i64| u * pow10((scale - s) as u32);
    let sum = up(&big.0, i64::from(big.1)) + up(&small.0, small.1);
    round_to_max_precision(sum, scale)
}

/// Java's `BigDecimal.preAlign`: when `small` lies wholly below the digits the rounded sum
/// keeps, it only matters as a sticky bit, so it is replaced by ±1 just below that position.
/// This is what keeps the scale difference, and so the numbers built, within the precision.
fn pre_align(big: &Decimal, small: &Decimal) -> (BigInt, i64) {
    let big_scale = i64::from(big.1);
    let est_result_ulp_scale = big_scale - digit_count(&big.0) + DECIMAL_MAX_PRECISION;
    let small_high_digit_pos = i64::from(small.1) - digit_count(&small.0) + 1;
    if small_high_digit_pos > big_scale + 2 && small_high_digit_pos > est_result_ulp_scale + 2 {
        let sign = if small.0.sign() == Sign::Minus { -1 } else { 1 };
        return (BigInt::from(sign), big_scale.max(est_result_ulp_scale) + 3);
    }
    (small.0.clone(), i64::from(small.1))
}

/// Java's zero cases of `add(augend, mc)`: the other operand rounded, its scale moved towards
/// the larger of the two scales as far as the precision allows.
fn add_to_zero(a: &Decimal, b: &Decimal) -> Result<Decimal, DecimalError> {
    let preferred = i64::from(a.1.max(b.1));
    let other = if a.0.is_zero() { b } else { a };
    if other.0.is_zero() {
        return Ok((BigInt::zero(), to_scale(preferred)?));
    }
    let (mut u, scale) = round_to_max_precision(other.0.clone(), i64::from(other.1))?;
    let mut scale = i64::from(scale);
    let ten = BigInt::from(10);
    if scale > preferred {
        while scale > preferred && (&u % &ten).is_zero() {
            u /= &ten;
            scale -= 1;
        }
    } else if scale < preferred {
        let room = DECIMAL_MAX_PRECISION - digit_count(&u);
        let raise = room.min(preferred - scale).max(0);
        u *= pow10(raise as u32);
        scale += raise;
    }
    Ok((u, to_scale(scale)?))
}

/// `BigDecimal.subtract(subtrahend, new MathContext(DECIMAL_MAX_PRECISION))`.
pub fn decimal_sub(a: &Decimal, b: &Decimal) -> Result<Decimal, DecimalError> {
    decimal_add(a, &(-&b.0, b.1))
}

/// `BigDecimal.multiply(multiplicand, new MathContext(DECIMAL_MAX_PRECISION))`.
pub fn decimal_mul(a: &Decimal, b: &Decimal) -> Result<Decimal, DecimalError> {
    let scale = i64::from(a.1) + i64::from(b.1);
    if a.0.is_zero() || b.0.is_zero() {
        return Ok((BigInt::zero(), to_scale(scale)?));
    }
    round_to_max_precision(&a.0 * &b.0, scale)
}

/// `BigDecimal.remainder`: the sign follows the dividend; `None` when dividing by zero.
/// Exact like Java's, without building the aligned operands when the scales are far apart.
pub fn decimal_rem(a: &Decimal, b: &Decimal) -> Option<Decimal> {
    if b.0.is_zero() {
        return None;
    }
    if a.1 < b.1 {
        // a * 10^d mod b, with 10^d reduced modulo b first: d may be two billion.
        let d = BigInt::from(i64::from(b.1) - i64::from(a.1));
        let m = b.0.abs();
        let factor = BigInt::from(10).modpow(&d, &m);
        return Some(((&a.0 * factor) % &m, b.1));
    }
    let d = i64::from(a.1) - i64::from(b.1);
    if d > digit_count(&a.0) {
        // |b| * 10^d has more digits than |a|: the quotient is 0 and `a` is the remainder.
        return Some(a.clone());
    }
    let (x, y, s) = align(a, b);
    Some((x % y, s))
}

/// Integer division of `n` by `d` rounded half-even (`d` non-zero).
fn div_half_even(n: &BigInt, d: &BigInt) -> BigInt {
    let q = n / d;
    let r = n - &q * d;
    if r.is_zero() {
        return q;
    }
    let twice: BigInt = r.abs() * 2;
    let cmp = twice.cmp(&d.abs());
    let away = match cmp {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => (&q % 2u32) != BigInt::zero(),
    };
    if !away {
        return q;
    }
    let negative = (n.sign() == Sign::Minus) != (d.sign() == Sign::Minus);
    if negative {
        q - 1
    } else {
        q + 1
    }
}

/// Decimal digits of `|n|` (1 for zero), from the bit length: printing a number of a million
/// digits to count them would take seconds.
fn digit_count(n: &BigInt) -> i64 {
    if n.is_zero() {
        return 1;
    }
    let m = n.magnitude();
    let bits = m.bits();
    // 2^(bits-1) <= |n| < 2^bits, so the digit count is one of two neighbours of this estimate.
    let estimate = ((bits - 1) as f64 * std::f64::consts::LOG10_2) as i64 + 1;
    let mut digits = estimate.max(1);
    while digits > 1 && *m < *pow10((digits - 1) as u32).magnitude() {
        digits -= 1;
    }
    while *m >= *pow10(digits as u32).magnitude() {
        digits += 1;
    }
    digits
}

/// `BigDecimal.divide(divisor, MathContext.DECIMAL128)`: 34 significant digits, half-even,
/// trailing zeros stripped down to the preferred scale; `None` when dividing by zero.
pub fn decimal_div(a: &(BigInt, i32), b: &(BigInt, i32)) -> Option<(BigInt, i32)> {
    if b.0.is_zero() {
        return None;
    }
    let preferred = i64::from(a.1) - i64::from(b.1);
    if a.0.is_zero() {
        return Some((
            BigInt::zero(),
            preferred.clamp(i32::MIN as i64, i32::MAX as i64) as i32,
        ));
    }
    // Enough extra digits that the quotient carries at least 34 significant ones.
    let extra = (34 + digit_count(&b.0) - digit_count(&a.0) + 1).max(0);
    let scaled = &a.0 * pow10(extra as u32);
    let mut q = div_half_even(&scaled, &b.0);
    let mut scale = preferred + extra;
    let excess = digit_count(&q) - 34;
    if excess > 0 {
        // Round from the exact quotient again so the rounding happens once.
        let d = &b.0 * pow10(excess as u32);
        q = div_half_even(&scaled, &d);
        scale -= excess;
        if digit_count(&q) > 34 {
            q = div_half_even(&q, &BigInt::from(10));
            scale -= 1;
        }
    }
    let ten = BigInt::from(10);
    while scale > preferred && !q.is_zero() && (&q % &ten).is_zero() {
        q /= &ten;
        scale -= 1;
    }
    Some((q, scale.clamp(i32::MIN as i64, i32::MAX as i64) as i32))
}

/// `BigDecimal.divide(BigDecimal.valueOf(n), RoundingMode.HALF_EVEN)`: keeps `a`'s scale.
pub fn decimal_div_keep_scale(a: &(BigInt, i32), n: i64) -> (BigInt, i32) {
    if n == 0 {
        return a.clone();
    }
    (div_half_even(&a.0, &BigInt::from(n)), a.1)
}

/// `BigDecimal.setScale(0, RoundingMode.HALF_UP)`.
/// An integral value too large to rescale (see [`MAX_RESCALE_DIGITS`]) is returned as it is: it
/// has no fraction to round.
pub fn decimal_round_half_up(a: &(BigInt, i32)) -> (BigInt, i32) {
    if a.1 <= 0 {
        return match decimal_to_integer(&a.0, a.1) {
            Some(n) => (n, 0),
            None => a.clone(),
        };
    }
    if i64::from(a.1) > digit_count(&a.0) {
        // |value| < 0.1 rounds to 0 without building 10^scale.
        return (BigInt::zero(), 0);
    }
    let d = pow10(a.1 as u32);
    let q = &a.0 / &d;
    let r = &a.0 - &q * &d;
    if r.abs() * 2u32 >= d {
        if a.0.sign() == Sign::Minus {
            (q - 1, 0)
        } else {
            (q + 1, 0)
        }
    } else {
        (q, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> (BigInt, i32) {
        parse_decimal(s).unwrap_or_default()
    }

    fn show(d: (BigInt, i32)) -> String {
        format_decimal(&d.0, d.1)
    }

    #[test]
    fn narrowing_follows_java() {
        let big = JavaNumber::Decimal(BigInt::from(1), -10);
        assert_eq!(big.int_value(), 1410065408);
        assert_eq!(big.short_value(), -7168);
        assert_eq!(big.byte_value(), 0);
        assert_eq!(JavaNumber::Double(1.7976931348623157e308).short_value(), -1);
        let v: BigInt = "-123456789012345678901234567890"
            .parse()
            .unwrap_or_default();
        let n = JavaNumber::Integer(v);
        assert_eq!(n.long_value(), 4362896299872285998);
        assert_eq!(n.int_value(), -1312754386);
        assert_eq!(n.byte_value(), 46);
        assert_eq!(JavaNumber::Decimal(BigInt::from(3), -100).long_value(), 0);
    }

    #[test]
    fn decimal_conversions() {
        assert_eq!(
            show(
                JavaNumber::Float(3.4028235e38)
                    .to_decimal()
                    .unwrap_or_default()
            ),
            "3.4028235E+38"
        );
        assert_eq!(
            show(JavaNumber::Double(0.0).to_decimal().unwrap_or_default()),
            "0.0"
        );
        assert_eq!(
            show(JavaNumber::Long(-1).to_decimal().unwrap_or_default()),
            "-1"
        );
    }

    /// Issue 11: `1E2147483647 + 1` (and sum() over such a value) built a two-billion-digit
    /// number and never returned. With Cassandra's MathContext(10000) every result is bounded.
    #[test]
    fn decimal_arithmetic_on_extreme_exponents_is_bounded() {
        let start = std::time::Instant::now();
        let huge = dec("1E2147483647");
        let one = dec("1");
        let sum = decimal_add(&huge, &one).unwrap();
        assert_eq!(digit_count(&sum.0), DECIMAL_MAX_PRECISION);
        assert!(show(sum).starts_with("1.000"));
        let sum = decimal_add(&(BigInt::zero(), 0), &huge).unwrap();
        assert!(digit_count(&sum.0) <= DECIMAL_MAX_PRECISION);
        let big = dec("1E50000000");
        assert!(show(decimal_add(&big, &one).unwrap()).ends_with("E+50000000"));
        assert!(show(decimal_sub(&one, &dec("1E-2147483647")).unwrap()).starts_with("1.000"));
        assert_eq!(
            decimal_mul(&huge, &huge),
            Err(DecimalError::ScaleOutOfRange)
        );
        let tiny = dec("1E-2147483647");
        assert_eq!(show(decimal_rem(&huge, &dec("7")).unwrap()), "3");
        assert_eq!(
            show(decimal_rem(&tiny, &dec("7")).unwrap()),
            "1E-2147483647"
        );
        assert_eq!(
            JavaNumber::Decimal(huge.0.clone(), huge.1).to_integer(),
            None
        );
        assert_eq!(
            JavaNumber::Decimal(tiny.0.clone(), tiny.1).to_integer(),
            Some(0.into())
        );
        assert_eq!(decimal_round_half_up(&huge), huge);
        assert_eq!(show(decimal_round_half_up(&tiny)), "0");
        assert!(decimal_div(&huge, &dec("3")).is_some());
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
    }

    /// Java's MathContext rounding: half-up at the 10,000th significant digit.
    #[test]
    fn sums_round_half_up_at_the_maximum_precision() {
        let nines = ("9".repeat(10_000).parse::<BigInt>().unwrap(), 0);
        let (u, s) = decimal_add(&nines, &dec("0.5")).unwrap();
        assert_eq!((digit_count(&u), s), (10_000, -1));
        assert_eq!(show((u, s)), format!("1.{}E+10000", "0".repeat(9_999)));
        for n in ["1", "9", "10", "99999", "123456789012345678901234567890"] {
            let v: BigInt = n.parse().unwrap();
            assert_eq!(digit_count(&v), n.len() as i64);
            assert_eq!(digit_count(&-v), n.len() as i64);
        }
    }

    #[test]
    fn decimal_arithmetic() {
        assert_eq!(
            show(decimal_add(&dec("1"), &dec("0.001")).unwrap()),
            "1.001"
        );
        assert_eq!(
            show(decimal_add(&dec("1E+10"), &dec("1E+10")).unwrap()),
            "2E+10"
        );
        assert_eq!(show(decimal_mul(&dec("3"), &dec("4")).unwrap()), "12");
        assert_eq!(
            show(decimal_div(&dec("1"), &dec("4")).unwrap_or_default()),
            "0.25"
        );
        assert_eq!(
            show(decimal_div(&dec("1"), &dec("3")).unwrap_or_default()),
            "0.3333333333333333333333333333333333"
        );
        assert_eq!(
            show(decimal_div(&dec("6"), &dec("2")).unwrap_or_default()),
            "3"
        );
        assert!(decimal_div(&dec("1"), &dec("0")).is_none());
        assert_eq!(
            show(decimal_rem(&dec("-7.5"), &dec("2")).unwrap_or_default()),
            "-1.5"
        );
        assert_eq!(show(decimal_round_half_up(&dec("-1.5"))), "-2");
        assert_eq!(show(decimal_round_half_up(&dec("3.14159"))), "3");
        assert_eq!(show(decimal_round_half_up(&dec("1E+10"))), "10000000000");
        assert_eq!(show(decimal_div_keep_scale(&dec("-1.5"), 2)), "-0.8");
    }
}
