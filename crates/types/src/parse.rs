//! Parsing a value from its string form (`fromString` in Cassandra's types): used by CAST,
//! JSON input and literal coercion.

use std::net::IpAddr;
use std::str::FromStr;

use bytes::Bytes;
use num_bigint::BigInt;
use uuid::Uuid;

use crate::cql_type::{CqlType, NativeType};
use crate::time::{days_from_civil, days_to_date, is_valid_civil, NANOS_PER_DAY};
use crate::value::CqlValue;
use crate::TypeError;

/// Parses `s` as a value of type `t`. An empty string gives [`CqlValue::Empty`] for the types
/// where Cassandra turns it into the empty value, and the empty text/blob otherwise.
/// Collections, tuples, UDTs and vectors have no string form here (they arrive as literals or
/// JSON, parsed by the `cql` crate) and return [`TypeError::Unsupported`].
pub fn from_string(t: &CqlType, s: &str) -> Result<CqlValue, TypeError> {
    let CqlType::Native(n) = t else {
        return Err(TypeError::Unsupported(format!(
            "Cannot parse a {t} value from a string"
        )));
    };
    let n = *n;
    match n {
        NativeType::Varchar => return Ok(CqlValue::Text(s.to_owned())),
        NativeType::Ascii => {
            if let Some(b) = s.bytes().find(|b| *b > 0x7f) {
                return Err(TypeError::Marshal(format!(
                    "Invalid byte for ascii: {}",
                    b as i8
                )));
            }
            return Ok(CqlValue::Ascii(s.to_owned()));
        }
        NativeType::Blob => return parse_blob(s),
        _ => {}
    }
    if s.is_empty()
        && !matches!(
            n,
            NativeType::Date | NativeType::Time | NativeType::Duration
        )
    {
        return Ok(CqlValue::Empty);
    }
    let err = |what: &str| TypeError::Marshal(format!("Unable to make {what} from '{s}'"));
    let v = match n {
        NativeType::Boolean => match s.to_ascii_lowercase().as_str() {
            "true" => CqlValue::Boolean(true),
            "false" => CqlValue::Boolean(false),
            _ => return Err(err("boolean")),
        },
        NativeType::Int => CqlValue::Int(s.parse().map_err(|_| err("int"))?),
        NativeType::Bigint => CqlValue::Bigint(s.parse().map_err(|_| err("long"))?),
        NativeType::Counter => CqlValue::Counter(s.parse().map_err(|_| err("long"))?),
        NativeType::Smallint => CqlValue::Smallint(s.parse().map_err(|_| err("short"))?),
        NativeType::Tinyint => CqlValue::Tinyint(s.parse().map_err(|_| err("byte"))?),
        NativeType::Double => CqlValue::Double(parse_java_float(s).ok_or_else(|| err("double"))?),
        NativeType::Float => {
            CqlValue::Float(parse_java_float(s).ok_or_else(|| err("float"))? as f32)
        }
        NativeType::Varint => {
            check_literal_length(s, "BigInteger")?;
            CqlValue::Varint(BigInt::from_str(s.trim_start_matches('+')).map_err(|_| err("int"))?)
        }
        NativeType::Decimal => {
            check_literal_length(s, "BigDecimal")?;
            let (unscaled, scale) = parse_decimal(s).ok_or_else(|| err("BigDecimal"))?;
            CqlValue::Decimal { unscaled, scale }
        }
        NativeType::Uuid => CqlValue::Uuid(parse_uuid(s)?),
        NativeType::Timeuuid => {
            let u = parse_uuid(s)?;
            if u.get_version_num() != 1 {
                return Err(TypeError::Marshal(format!(
                    "Unsupported UUID version for timeuuid: '{s}'"
                )));
            }
            CqlValue::Timeuuid(u)
        }
        NativeType::Inet => CqlValue::Inet(
            IpAddr::from_str(s.trim())
                .map(canonical_inet)
                .map_err(|_| {
                    TypeError::Marshal(format!("Unable to make inet address from '{s}'"))
                })?,
        ),
        NativeType::Timestamp => CqlValue::Timestamp(parse_timestamp(s)?),
        NativeType::Date => CqlValue::Date(parse_date(s)?),
        NativeType::Time => CqlValue::Time(parse_time(s)?),
        NativeType::Duration => {
            let (months, days, nanos) = parse_duration(s)?;
            CqlValue::Duration {
                months,
                days,
                nanos,
            }
        }
        NativeType::Varchar | NativeType::Ascii | NativeType::Blob => return Err(err("value")),
    };
    Ok(v)
}

fn parse_blob(s: &str) -> Result<CqlValue, TypeError> {
    let hex = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    let bad = || TypeError::Marshal(format!("cannot parse '{s}' as hex bytes"));
    if hex.len() & 1 != 0 {
        return Err(bad());
    }
    let digits = hex.as_bytes();
    let mut out = Vec::with_capacity(digits.len() / 2);
    for pair in digits.chunks_exact(2) {
        let hi = (pair[0] as char).to_digit(16).ok_or_else(bad)?;
        let lo = (pair[1] as char).to_digit(16).ok_or_else(bad)?;
        out.push((hi * 16 + lo) as u8);
    }
    Ok(CqlValue::Blob(Bytes::from(out)))
}

fn parse_uuid(s: &str) -> Result<Uuid, TypeError> {
    let bad = || TypeError::Marshal(format!("Unable to make UUID from '{s}'"));
    // Only the hyphenated 36-character form, as UUIDType's regex requires.
    if s.len() != 36 {
        return Err(bad());
    }
    Uuid::parse_str(s).map_err(|_| bad())
}

/// `Double.parseDouble`: also accepts `NaN`, `Infinity` and a trailing `d`/`f`.
fn parse_java_float(s: &str) -> Option<f64> {
    let t = s.trim();
    match t.trim_start_matches(['+', '-']) {
        "NaN" => return Some(f64::NAN),
        "Infinity" => {
            return Some(if t.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            })
        }
        _ => {}
    }
    let t = t.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(t);
    if t.is_empty()
        || !t
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
    {
        return None;
    }
    t.parse().ok()
}

/// Longest number literal (`varint` or `decimal`, counted in characters) parsed from text.
/// Decimal-to-binary conversion is quadratic in the digit count: a 3M-digit literal held a node
/// for minutes. 100,000 digits (a 41 KB number) take milliseconds; larger numbers can still be
/// sent as bound values, which arrive in binary.
pub const MAX_NUMBER_LITERAL_CHARS: usize = 100_000;

fn check_literal_length(s: &str, java_type: &str) -> Result<(), TypeError> {
    if s.len() > MAX_NUMBER_LITERAL_CHARS {
        return Err(TypeError::marshal(format!(
            "unable to make {java_type} from a literal of {} characters (at most \
             {MAX_NUMBER_LITERAL_CHARS} are parsed; bind larger values)",
            s.len()
        )));
    }
    Ok(())
}

/// `new BigDecimal(s)`: `[sign]digits[.digits][E[sign]digits]`; `None` past
/// [`MAX_NUMBER_LITERAL_CHARS`].
pub(crate) fn parse_decimal(s: &str) -> Option<(BigInt, i32)> {
    if s.len() > MAX_NUMBER_LITERAL_CHARS {
        return None;
    }
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let exp: i64 = match exp {
        Some(e) => e.trim_start_matches('+').parse().ok()?,
        None => 0,
    };
    let (sign, body) = match mantissa.as_bytes().first() {
        Some(b'-') => ("-", &mantissa[1..]),
        Some(b'+') => ("", &mantissa[1..]),
        _ => ("", mantissa),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let unscaled = BigInt::from_str(&format!("{sign}{int}{frac}0")).ok()? / 10;
    let scale = i32::try_from(frac.len() as i64 - exp).ok()?;
    Some((unscaled, scale))
}

fn is_integer_literal(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// A cursor over ASCII for the hand-written date/time grammars.
struct Cursor<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(s: &'a str) -> Self {
        Cursor {
            s: s.as_bytes(),
            pos: 0,
        }
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    /// Between `min` and `max` ASCII digits as a number, with the count read.
    fn digits(&mut self, min: usize, max: usize) -> Option<(i64, usize)> {
        let start = self.pos;
        let mut v: i64 = 0;
        while self.pos - start < max {
            match self.peek() {
                Some(c) if c.is_ascii_digit() => {
                    v = v.checked_mul(10)?.checked_add(i64::from(c - b'0'))?;
                    self.pos += 1;
                }
                _ => break,
            }
        }
        let n = self.pos - start;
        (n >= min).then_some((v, n))
    }
    fn rest(&self) -> &'a [u8] {
        self.s.get(self.pos..).unwrap_or_default()
    }
    fn done(&self) -> bool {
        self.pos >= self.s.len()
    }
}

/// `[+-]yyyy-MM-dd` to days since the epoch.
fn parse_civil(c: &mut Cursor<'_>) -> Option<i64> {
    let neg = c.eat(b'-');
    if !neg {
        c.eat(b'+');
    }
    let (year, _) = c.digits(1, 9)?;
    let year = if neg { -year } else { year };
    if !c.eat(b'-') {
        return None;
    }
    let (month, _) = c.digits(1, 2)?;
    if !c.eat(b'-') {
        return None;
    }
    let (day, _) = c.digits(1, 2)?;
    let (month, day) = (month as u32, day as u32);
    is_valid_civil(year, month, day).then(|| days_from_civil(year, month, day))
}

/// `HH:mm[:ss[.f{1,9}]]` to nanoseconds since midnight. With `fraction_is_millis` (timestamps)
/// the fraction has at most 3 digits and is a decimal fraction of a second (`.5` is 500 ms, as
/// Cassandra 5.0's date-time parser reads it).
fn parse_clock(
    c: &mut Cursor<'_>,
    seconds_required: bool,
    fraction_is_millis: bool,
) -> Option<i64> {
    let (h, _) = c.digits(1, 2)?;
    if !c.eat(b':') {
        return None;
    }
    // `time` values are split on ':' and read as integers by Cassandra, so `1:2:3` is valid;
    // timestamps follow a date-time pattern with two-digit fields.
    let min_digits = if fraction_is_millis { 2 } else { 1 };
    let (m, _) = c.digits(min_digits, 2)?;
    let mut s = 0;
    let mut frac_ns = 0;
    if c.eat(b':') {
        s = c.digits(min_digits, 2)?.0;
        if c.eat(b'.') {
            if fraction_is_millis {
                let (f, n) = c.digits(1, 3)?;
                frac_ns = f * 10i64.pow(3 - n as u32) * 1_000_000;
            } else {
                let (f, n) = c.digits(1, 9)?;
                frac_ns = f * 10i64.pow(9 - n as u32);
            }
        }
    } else if seconds_required {
        return None;
    }
    if h > 23 || m > 59 || s > 59 {
        return None;
    }
    Some(((h * 60 + m) * 60 + s) * 1_000_000_000 + frac_ns)
}

/// Zone suffix as an offset in minutes: `Z`, `UTC`, `GMT`, `+hh`, `+hhmm`, `+hh:mm`.
fn parse_zone(c: &mut Cursor<'_>) -> Option<i64> {
    c.eat(b' ');
    let rest = c.rest();
    for name in [&b"UTC"[..], b"GMT", b"Z"] {
        if rest.starts_with(name) {
            c.pos += name.len();
            if c.done() {
                return Some(0);
            }
        }
    }
    let sign = if c.eat(b'+') {
        1
    } else if c.eat(b'-') {
        -1
    } else {
        return None;
    };
    let (h, _) = c.digits(2, 2)?;
    c.eat(b':');
    let m = if c.done() { 0 } else { c.digits(2, 2)?.0 };
    (h <= 18 && m <= 59).then_some(sign * (h * 60 + m))
}

/// Java's `InetAddress` turns an IPv4-mapped IPv6 address (`::ffff:1.2.3.4`) into the IPv4
/// address, so Cassandra stores 4 bytes for it.
fn canonical_inet(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// Every timestamp form `TimestampSerializer` accepts: integer milliseconds, or a date with an
/// optional ` `/`T` time and optional zone. A missing zone means UTC (Cassandra uses the
/// server's zone, which Helenus fixes to UTC).
pub(crate) fn parse_timestamp(s: &str) -> Result<i64, TypeError> {
    let bad = || TypeError::Marshal(format!("Unable to coerce '{s}' to a formatted date (long)"));
    let t = s.trim();
    if t.eq_ignore_ascii_case("now") {
        return Ok(crate::time::now_ms());
    }
    if is_integer_literal(t) {
        return t.parse().map_err(|_| bad());
    }
    let mut c = Cursor::new(t);
    let days = parse_civil(&mut c).ok_or_else(bad)?;
    let mut nanos = 0;
    if c.eat(b'T')
        || (c.peek() == Some(b' ')
            && c.s.get(c.pos + 1).is_some_and(u8::is_ascii_digit)
            && c.eat(b' '))
    {
        nanos = parse_clock(&mut c, false, true).ok_or_else(bad)?;
    }
    let offset_min = if c.done() {
        0
    } else {
        parse_zone(&mut c).ok_or_else(bad)?
    };
    if !c.done() {
        return Err(bad());
    }
    days.checked_mul(86_400_000)
        .and_then(|ms| ms.checked_add(nanos / 1_000_000))
        .and_then(|ms| ms.checked_sub(offset_min * 60_000))
        .ok_or_else(bad)
}

/// `date`: `yyyy-MM-dd`, or an integer taken as the raw unsigned day value.
pub(crate) fn parse_date(s: &str) -> Result<u32, TypeError> {
    let t = s.trim();
    if is_integer_literal(t) {
        return t
            .parse::<i64>()
            .ok()
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| {
                TypeError::Marshal(format!(
                    "Unable to make unsigned int (for date) from: '{s}'"
                ))
            });
    }
    let mut c = Cursor::new(t);
    parse_civil(&mut c)
        .filter(|_| c.done())
        .and_then(days_to_date)
        .ok_or_else(|| {
            TypeError::Marshal(format!("Unable to coerce '{s}' to a formatted date (long)"))
        })
}

/// `time`: `HH:mm:ss[.fffffffff]`, or integer nanoseconds since midnight.
pub(crate) fn parse_time(s: &str) -> Result<i64, TypeError> {
    let t = s.trim();
    let v = if is_integer_literal(t) {
        t.parse::<i64>().ok()
    } else {
        let mut c = Cursor::new(t);
        parse_clock(&mut c, true, false).filter(|_| c.done())
    };
    v.filter(|v| (0..NANOS_PER_DAY).contains(v))
        .ok_or_else(|| TypeError::Marshal("Timestamp format must be hh:mm:ss[.fffffffff]".into()))
}

const NANOS_PER_HOUR: i64 = 3_600_000_000_000;

/// Cassandra's `Duration.from`: `1y2mo3w4d5h6m7s8ms9us10ns`, ISO 8601 `P1Y2M3DT4H5M6S`,
/// `P2W`, or the alternative `P0001-02-03T04:05:06`, each optionally preceded by `-`.
pub(crate) fn parse_duration(s: &str) -> Result<(i32, i32, i64), TypeError> {
    let bad = || TypeError::Marshal(format!("Unable to convert '{s}' to a duration"));
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let (months, days, nanos) = if let Some(iso) = body.strip_prefix('P') {
        parse_iso_duration(iso).ok_or_else(bad)?
    } else {
        parse_unit_duration(body).ok_or_else(bad)?
    };
    let months = i32::try_from(months).map_err(|_| {
        TypeError::Marshal(
            "Invalid duration. The total number of months must be less or equal to 2147483647"
                .into(),
        )
    })?;
    let days = i32::try_from(days).map_err(|_| {
        TypeError::Marshal(
            "Invalid duration. The total number of days must be less or equal to 2147483647".into(),
        )
    })?;
    Ok(if neg {
        (-months, -days, -nanos)
    } else {
        (months, days, nanos)
    })
}

fn parse_unit_duration(body: &str) -> Option<(i64, i64, i64)> {
    // Units longest-first so `ms` is not read as `m` then `s`; ranks enforce Cassandra's
    // "largest unit first, each once" rule.
    const UNITS: [(&str, usize); 11] = [
        ("mo", 1),
        ("ms", 7),
        ("us", 8),
        ("µs", 8),
        ("ns", 9),
        ("y", 0),
        ("w", 2),
        ("d", 3),
        ("h", 4),
        ("m", 5),
        ("s", 6),
    ];
    if body.is_empty() {
        return None;
    }
    let (mut months, mut days, mut nanos) = (0i64, 0i64, 0i64);
    let mut last_rank: Option<usize> = None;
    let mut rest = body;
    while !rest.is_empty() {
        let digits_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits_len == 0 {
            return None;
        }
        let n: i64 = rest[..digits_len].parse().ok()?;
        rest = &rest[digits_len..];
        let (unit, rank) = UNITS.iter().find(|(u, _)| {
            rest.get(..u.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(u))
        })?;
        if last_rank.is_some_and(|r| r >= *rank) {
            return None;
        }
        last_rank = Some(*rank);
        rest = rest.get(unit.len()..)?;
        match *rank {
            0 => months = months.checked_add(n.checked_mul(12)?)?,
            1 => months = months.checked_add(n)?,
            2 => days = days.checked_add(n.checked_mul(7)?)?,
            3 => days = days.checked_add(n)?,
            r => {
                let per = [
                    NANOS_PER_HOUR,
                    60_000_000_000,
                    1_000_000_000,
                    1_000_000,
                    1_000,
                    1,
                ][r - 4];
                nanos = nanos.checked_add(n.checked_mul(per)?)?;
            }
        }
    }
    Some((months, days, nanos))
}

fn parse_iso_duration(iso: &str) -> Option<(i64, i64, i64)> {
    if let Some(weeks) = iso.strip_suffix('W') {
        return Some((0, weeks.parse::<i64>().ok()?.checked_mul(7)?, 0));
    }
    if iso.contains('-') {
        // Alternative format: P0001-02-03T04:05:06.
        let mut c = Cursor::new(iso);
        let (y, _) = c.digits(4, 4)?;
        let ok = c.eat(b'-');
        let (mo, _) = c.digits(2, 2)?;
        let ok = ok && c.eat(b'-');
        let (d, _) = c.digits(2, 2)?;
        let ok = ok && c.eat(b'T');
        let (h, _) = c.digits(2, 2)?;
        let ok = ok && c.eat(b':');
        let (mi, _) = c.digits(2, 2)?;
        let ok = ok && c.eat(b':');
        let (s, _) = c.digits(2, 2)?;
        if !ok || !c.done() {
            return None;
        }
        return Some((
            y * 12 + mo,
            d,
            h * NANOS_PER_HOUR + mi * 60_000_000_000 + s * 1_000_000_000,
        ));
    }
    let (date, time) = match iso.split_once('T') {
        Some((d, t)) if !t.is_empty() => (d, Some(t)),
        Some(_) => return None,
        None => (iso, None),
    };
    if date.is_empty() && time.is_none() {
        return None;
    }
    let (mut months, mut days, mut nanos) = (0i64, 0i64, 0i64);
    for (n, unit) in iso_parts(date, "YMD")? {
        match unit {
            'Y' => months = months.checked_add(n.checked_mul(12)?)?,
            'M' => months = months.checked_add(n)?,
            _ => days = n,
        }
    }
    if let Some(time) = time {
        for (n, unit) in iso_parts(time, "HMS")? {
            let per = match unit {
                'H' => NANOS_PER_HOUR,
                'M' => 60_000_000_000,
                _ => 1_000_000_000,
            };
            nanos = nanos.checked_add(n.checked_mul(per)?)?;
        }
    }
    Some((months, days, nanos))
}

/// `3Y2M` style number/unit pairs with units in the given order, each at most once.
fn iso_parts(s: &str, order: &str) -> Option<Vec<(i64, char)>> {
    let mut out = Vec::new();
    let mut rest = s;
    let mut allowed = order;
    while !rest.is_empty() {
        let digits_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let n: i64 = rest.get(..digits_len)?.parse().ok()?;
        let unit = rest[digits_len..].chars().next()?;
        let at = allowed.find(unit)?;
        allowed = &allowed[at + 1..];
        out.push((n, unit));
        rest = &rest[digits_len + 1..];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> i64 {
        parse_timestamp(s).unwrap()
    }

    #[test]
    fn timestamps_parse_in_every_cassandra_form() {
        let base = 1_296_705_900_000; // 2011-02-03 04:05:00 UTC
        assert_eq!(ts("2011-02-03 04:05+0000"), base);
        assert_eq!(ts("2011-02-03 04:05:00"), base);
        assert_eq!(ts("2011-02-03T04:05:00.000+0000"), base);
        assert_eq!(ts("2011-02-03T04:05:00.000Z"), base);
        assert_eq!(ts("2011-02-03 04:05:00.000+00:00"), base);
        assert_eq!(ts("2011-02-03 05:05:00+0100"), base);
        assert_eq!(ts("2011-02-03 04:05:00 UTC"), base);
        assert_eq!(ts("2011-02-03"), base - 4 * 3_600_000 - 5 * 60_000);
        assert_eq!(ts("2011-02-03+0000"), base - 4 * 3_600_000 - 5 * 60_000);
        assert_eq!(ts("1296705900000"), base);
        assert_eq!(ts("-5"), -5);
        // A decimal fraction of a second, as Cassandra 5.0 reads it.
        assert_eq!(ts("2011-02-03 04:05:00.1Z"), base + 100);
        assert_eq!(ts("2011-02-03 04:05:00.05Z"), base + 50);
        assert!((ts("now") - crate::time::now_ms()).abs() < 60_000);
        assert!(parse_timestamp("2011-02-30").is_err());
        assert!(parse_timestamp("yesterday").is_err());
    }

    #[test]
    fn dates_and_times_parse() {
        assert_eq!(parse_date("1970-01-01").unwrap(), 1 << 31);
        assert_eq!(parse_date("2011-02-03").unwrap(), (1u32 << 31) + 15_008);
        assert_eq!(parse_date("7").unwrap(), 7);
        assert!(parse_date("2011-13-01").is_err());
        assert_eq!(
            parse_time("08:12:54.123456789").unwrap(),
            29_574_123_456_789
        );
        assert_eq!(parse_time("08:12:54.1").unwrap(), 29_574_100_000_000);
        assert_eq!(parse_time("100").unwrap(), 100);
        assert!(parse_time("24:00:00").is_err());
    }

    #[test]
    fn durations_parse_in_all_three_syntaxes() {
        assert_eq!(parse_duration("1h30m").unwrap(), (0, 0, 5_400_000_000_000));
        assert_eq!(parse_duration("1y2mo3w4d").unwrap(), (14, 25, 0));
        assert_eq!(parse_duration("-2ms5us").unwrap(), (0, 0, -2_005_000));
        assert_eq!(parse_duration("3µs2NS").unwrap(), (0, 0, 3_002));
        assert_eq!(parse_duration("P1Y2M").unwrap(), (14, 0, 0));
        assert_eq!(
            parse_duration("P1DT2H").unwrap(),
            (0, 1, 2 * NANOS_PER_HOUR)
        );
        assert_eq!(parse_duration("P2W").unwrap(), (0, 14, 0));
        assert_eq!(
            parse_duration("P0001-02-03T04:05:06").unwrap(),
            (14, 3, 14_706_000_000_000)
        );
        assert!(parse_duration("1m1h").is_err());
        assert!(parse_duration("1x").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn decimals_keep_their_scale() {
        assert_eq!(parse_decimal("123.45"), Some((BigInt::from(12345), 2)));
        assert_eq!(parse_decimal("-1.2E+4"), Some((BigInt::from(-12), -3)));
        assert_eq!(parse_decimal(".5"), Some((BigInt::from(5), 1)));
        // Issue 11: a 3M-digit literal took minutes to convert; past the cap it is refused.
        let long = "9".repeat(MAX_NUMBER_LITERAL_CHARS + 1);
        assert_eq!(parse_decimal(&long), None);
        let t = |n| CqlType::Native(n);
        for n in [NativeType::Varint, NativeType::Decimal] {
            let err = from_string(&t(n), &"7".repeat(3_000_000)).unwrap_err();
            assert!(err.to_string().contains("at most"), "{err}");
            assert!(from_string(&t(n), &"7".repeat(MAX_NUMBER_LITERAL_CHARS)).is_ok());
        }
        assert_eq!(parse_decimal("abc"), None);
    }

    #[test]
    fn scalars_parse_and_empty_is_empty() {
        let p = |n: NativeType, s: &str| from_string(&CqlType::Native(n), s);
        assert_eq!(p(NativeType::Int, "42"), Ok(CqlValue::Int(42)));
        assert_eq!(p(NativeType::Int, ""), Ok(CqlValue::Empty));
        assert!(p(NativeType::Int, "4x").is_err());
        assert_eq!(p(NativeType::Boolean, "TRUE"), Ok(CqlValue::Boolean(true)));
        assert_eq!(
            p(NativeType::Blob, "0xcafe"),
            Ok(CqlValue::Blob(Bytes::from_static(&[0xca, 0xfe])))
        );
        assert!(p(NativeType::Inet, "1.2.3.4").is_ok());
        assert!(p(NativeType::Timeuuid, "550e8400-e29b-41d4-a716-446655440000").is_err());
        assert_eq!(
            p(NativeType::Double, "NaN").map(|v| matches!(v, CqlValue::Double(d) if d.is_nan())),
            Ok(true)
        );
    }
}
