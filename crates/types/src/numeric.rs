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

/// `BigDecimal.toBigInteger()`: drops the fraction (towards zero).
pub fn decimal_to_integer(unscaled: &BigInt, scale: i32) -> BigInt {
    if scale <= 0 {
        unscaled * pow10(scale.unsigned_abs())
    } else {
        unscaled / pow10(scale as u32)
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
            JavaNumber::Decimal(u, s) => low_i64(&decimal_to_integer(u, *s)),
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

    /// The value as a `BigInteger` (fractions dropped, floats saturated through `long`).
    pub fn to_integer(&self) -> BigInt {
        match self {
            JavaNumber::Long(x) => BigInt::from(*x),
            JavaNumber::Float(_) | JavaNumber::Double(_) => BigInt::from(self.long_value()),
            JavaNumber::Decimal(u, s) => decimal_to_integer(u, *s),
            JavaNumber::Integer(n) => n.clone(),
        }
    }
}

/// Brings two decimals to a common scale (the larger one).
fn align(a: &(BigInt, i32), b: &(BigInt, i32)) -> (BigInt, BigInt, i32) {
    let scale = a.1.max(b.1);
    let up = |x: &(BigInt, i32)| &x.0 * pow10((scale - x.1) as u32);
    (up(a), up(b), scale)
}

/// `BigDecimal.add`.
pub fn decimal_add(a: &(BigInt, i32), b: &(BigInt, i32)) -> (BigInt, i32) {
    let (x, y, s) = align(a, b);
    (x + y, s)
}

/// `BigDecimal.subtract`.
pub fn decimal_sub(a: &(BigInt, i32), b: &(BigInt, i32)) -> (BigInt, i32) {
    let (x, y, s) = align(a, b);
    (x - y, s)
}

/// `BigDecimal.multiply`.
pub fn decimal_mul(a: &(BigInt, i32), b: &(BigInt, i32)) -> (BigInt, i32) {
    (&a.0 * &b.0, a.1.saturating_add(b.1))
}

/// `BigDecimal.remainder`: the sign follows the dividend; `None` when dividing by zero.
pub fn decimal_rem(a: &(BigInt, i32), b: &(BigInt, i32)) -> Option<(BigInt, i32)> {
    if b.0.is_zero() {
        return None;
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

fn digit_count(n: &BigInt) -> i64 {
    if n.is_zero() {
        1
    } else {
        n.abs().to_string().len() as i64
    }
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
pub fn decimal_round_half_up(a: &(BigInt, i32)) -> (BigInt, i32) {
    if a.1 <= 0 {
        return (decimal_to_integer(&a.0, a.1), 0);
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

    #[test]
    fn decimal_arithmetic() {
        assert_eq!(show(decimal_add(&dec("1"), &dec("0.001"))), "1.001");
        assert_eq!(show(decimal_add(&dec("1E+10"), &dec("1E+10"))), "2E+10");
        assert_eq!(show(decimal_mul(&dec("3"), &dec("4"))), "12");
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
