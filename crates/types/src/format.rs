//! Printing values: CQL literals (DESCRIBE, cqlsh-style) and `SELECT JSON` output, following
//! Cassandra's `toCQLLiteral` / `toJSONString` and Java's own `toString` forms.

use std::fmt::Write;
use std::net::IpAddr;

use num_bigint::BigInt;

use crate::time::{civil_from_days, date_to_days};
use crate::value::CqlValue;

/// Lowercase hex without a prefix.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The value as a CQL literal that parses back to the same value: `'it''s'`, `0xcafe`,
/// `[1, 2]`, `{'k': 1}`, `(1, 'a')`, `{field: 1}`, `null` for null tuple/UDT components.
pub fn to_cql_literal(v: &CqlValue) -> String {
    let mut out = String::new();
    write_literal(v, &mut out);
    out
}

fn quote_cql(s: &str, out: &mut String) {
    out.push('\'');
    out.push_str(&s.replace('\'', "''"));
    out.push('\'');
}

fn write_literal(v: &CqlValue, out: &mut String) {
    match v {
        CqlValue::Ascii(s) | CqlValue::Text(s) => quote_cql(s, out),
        CqlValue::Blob(b) => {
            out.push_str("0x");
            out.push_str(&hex(b));
        }
        CqlValue::Timestamp(ms) => quote_cql(&format_timestamp_iso(*ms), out),
        CqlValue::Date(_) | CqlValue::Time(_) | CqlValue::Inet(_) => {
            quote_cql(&to_plain_string(v), out)
        }
        CqlValue::Duration {
            months: 0,
            days: 0,
            nanos: 0,
        } => out.push_str("0s"),
        // Cassandra prints the empty value of a non-string type as `null` in literals.
        CqlValue::Empty => out.push_str("null"),
        CqlValue::List(items) | CqlValue::Vector(items) => {
            write_seq(items.iter().map(Some), '[', ']', out)
        }
        CqlValue::Set(items) => write_seq(items.iter().map(Some), '{', '}', out),
        CqlValue::Tuple(items) => write_seq(items.iter().map(Option::as_ref), '(', ')', out),
        CqlValue::Map(entries) => {
            out.push('{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_literal(k, out);
                out.push_str(": ");
                write_literal(v, out);
            }
            out.push('}');
        }
        CqlValue::Udt(fields) => {
            out.push('{');
            for (i, (name, v)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&maybe_quote_identifier(name));
                out.push_str(": ");
                match v {
                    Some(v) => write_literal(v, out),
                    None => out.push_str("null"),
                }
            }
            out.push('}');
        }
        _ => out.push_str(&to_plain_string(v)),
    }
}

fn write_seq<'a>(
    items: impl Iterator<Item = Option<&'a CqlValue>>,
    open: char,
    close: char,
    out: &mut String,
) {
    out.push(open);
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        match item {
            Some(v) => write_literal(v, out),
            None => out.push_str("null"),
        }
    }
    out.push(close);
}

/// Quotes an identifier the way `ColumnIdentifier.maybeQuote` does when it is not a plain
/// lowercase identifier.
pub fn maybe_quote_identifier(name: &str) -> String {
    let plain = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_owned()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// The value as `SELECT JSON` prints it (Cassandra's `AbstractType.toJSONString`).
pub fn to_json(v: &CqlValue) -> String {
    let mut out = String::new();
    write_json(v, &mut out);
    out
}

/// Jackson's `quoteAsString` escaping, inside double quotes.
fn quote_json(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_json(v: &CqlValue, out: &mut String) {
    match v {
        CqlValue::Ascii(s) | CqlValue::Text(s) => quote_json(s, out),
        CqlValue::Blob(b) => {
            out.push_str("\"0x");
            out.push_str(&hex(b));
            out.push('"');
        }
        CqlValue::Timestamp(ms) => quote_json(&format_timestamp_json(*ms), out),
        // JSON has no NaN or infinities: Cassandra writes null.
        CqlValue::Double(d) if !d.is_finite() => out.push_str("null"),
        CqlValue::Float(f) if !f.is_finite() => out.push_str("null"),
        CqlValue::Uuid(_)
        | CqlValue::Timeuuid(_)
        | CqlValue::Inet(_)
        | CqlValue::Date(_)
        | CqlValue::Time(_)
        | CqlValue::Duration { .. } => quote_json(&to_plain_string(v), out),
        CqlValue::List(items) | CqlValue::Set(items) | CqlValue::Vector(items) => {
            write_json_seq(items.iter().map(Some), out)
        }
        CqlValue::Tuple(items) => write_json_seq(items.iter().map(Option::as_ref), out),
        CqlValue::Map(entries) => {
            out.push('{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let key = to_json(k);
                // JSON object keys must be strings: non-string keys are quoted as text.
                if key.starts_with('"') {
                    out.push_str(&key);
                } else {
                    quote_json(&key, out);
                }
                out.push_str(": ");
                write_json(v, out);
            }
            out.push('}');
        }
        CqlValue::Udt(fields) => {
            out.push('{');
            for (i, (name, v)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                quote_json(&maybe_quote_identifier(name), out);
                out.push_str(": ");
                match v {
                    Some(v) => write_json(v, out),
                    None => out.push_str("null"),
                }
            }
            out.push('}');
        }
        CqlValue::Empty => out.push_str("null"),
        _ => out.push_str(&to_plain_string(v)),
    }
}

fn write_json_seq<'a>(items: impl Iterator<Item = Option<&'a CqlValue>>, out: &mut String) {
    out.push('[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        match item {
            Some(v) => write_json(v, out),
            None => out.push_str("null"),
        }
    }
    out.push(']');
}

/// Java's `toString` of a scalar value: what `CAST(x AS text)` yields and what JSON and
/// literals build on. Collections fall back to their CQL literal.
pub fn to_plain_string(v: &CqlValue) -> String {
    match v {
        CqlValue::Ascii(s) | CqlValue::Text(s) => s.clone(),
        CqlValue::Bigint(n) | CqlValue::Counter(n) => n.to_string(),
        CqlValue::Blob(b) => format!("0x{}", hex(b)),
        CqlValue::Boolean(b) => b.to_string(),
        CqlValue::Decimal { unscaled, scale } => format_decimal(unscaled, *scale),
        CqlValue::Double(d) => format_java_double(*d),
        CqlValue::Float(f) => format_java_float(*f),
        CqlValue::Int(n) => n.to_string(),
        CqlValue::Timestamp(ms) => format_timestamp_iso(*ms),
        CqlValue::Uuid(u) | CqlValue::Timeuuid(u) => u.hyphenated().to_string(),
        CqlValue::Varint(n) => n.to_string(),
        CqlValue::Inet(a) => format_java_inet(a),
        CqlValue::Date(d) => format_date(*d),
        CqlValue::Time(ns) => format_time(*ns),
        CqlValue::Smallint(n) => n.to_string(),
        CqlValue::Tinyint(n) => n.to_string(),
        CqlValue::Duration {
            months,
            days,
            nanos,
        } => format_duration(*months, *days, *nanos),
        CqlValue::Empty => String::new(),
        other => to_cql_literal(other),
    }
}

/// `InetAddress.getHostAddress`: IPv6 groups in lowercase hex, uncompressed; IPv4-mapped
/// addresses print as IPv4 (Java decodes them to `Inet4Address`).
fn format_java_inet(a: &IpAddr) -> String {
    match a {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6
                .segments()
                .iter()
                .map(|s| format!("{s:x}"))
                .collect::<Vec<_>>()
                .join(":"),
        },
    }
}

/// `BigDecimal.toString`: plain unless the scale is negative or the exponent is below -6.
pub(crate) fn format_decimal(unscaled: &BigInt, scale: i32) -> String {
    let neg = unscaled.sign() == num_bigint::Sign::Minus;
    let digits = unscaled.magnitude().to_string();
    let sign = if neg { "-" } else { "" };
    let adjusted = -i64::from(scale) + digits.len() as i64 - 1;
    if scale >= 0 && adjusted >= -6 {
        let scale = scale as usize;
        if scale == 0 {
            return format!("{sign}{digits}");
        }
        if digits.len() > scale {
            let (int, frac) = digits.split_at(digits.len() - scale);
            return format!("{sign}{int}.{frac}");
        }
        return format!("{sign}0.{}{digits}", "0".repeat(scale - digits.len()));
    }
    let (first, rest) = digits.split_at(1);
    let frac = if rest.is_empty() {
        String::new()
    } else {
        format!(".{rest}")
    };
    let exp_sign = if adjusted >= 0 { "+" } else { "" };
    format!("{sign}{first}{frac}E{exp_sign}{adjusted}")
}

/// Java's `Double.toString` (shortest round-trip digits, `1.0E10` style outside [1e-3, 1e7)).
pub(crate) fn format_java_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    let abs = d.abs();
    if abs == 0.0 || (1e-3..1e7).contains(&abs) {
        let s = format!("{d}");
        return if s.contains('.') { s } else { format!("{s}.0") };
    }
    java_sci(&format!("{d:e}"))
}

/// Java's `Float.toString`.
pub(crate) fn format_java_float(f: f32) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    let abs = f.abs();
    if abs == 0.0 || (1e-3..1e7).contains(&abs) {
        let s = format!("{f}");
        return if s.contains('.') { s } else { format!("{s}.0") };
    }
    java_sci(&format!("{f:e}"))
}

/// Rust's `1.5e-7` / `1e10` into Java's `1.5E-7` / `1.0E10`.
fn java_sci(rust: &str) -> String {
    let (mantissa, exp) = rust.split_once('e').unwrap_or((rust, "0"));
    if mantissa.contains('.') {
        format!("{mantissa}E{exp}")
    } else {
        format!("{mantissa}.0E{exp}")
    }
}

/// `yyyy-MM-dd` as Java's `LocalDate.toString` (a `+` before years past 9999).
pub(crate) fn format_civil_date(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    if y > 9999 {
        format!("+{y}-{m:02}-{d:02}")
    } else if y < 0 {
        format!("-{:04}-{m:02}-{d:02}", -y)
    } else {
        format!("{y:04}-{m:02}-{d:02}")
    }
}

fn format_date(raw: u32) -> String {
    format_civil_date(date_to_days(raw))
}

/// `TimeSerializer.toString`: `HH:mm:ss.nnnnnnnnn`.
pub(crate) fn format_time(ns: i64) -> String {
    let (h, rem) = (ns / 3_600_000_000_000, ns % 3_600_000_000_000);
    let (m, rem) = (rem / 60_000_000_000, rem % 60_000_000_000);
    let (s, n) = (rem / 1_000_000_000, rem % 1_000_000_000);
    format!("{h:02}:{m:02}:{s:02}.{n:09}")
}

fn split_timestamp(ms: i64) -> (String, i64, i64, i64, i64) {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let date = format_civil_date(days);
    (
        date,
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000,
    )
}

/// Timestamp as Cassandra's `TimestampSerializer.toString` prints it: `2011-02-03T04:05:00.000Z`.
pub(crate) fn format_timestamp_iso(ms: i64) -> String {
    let (date, h, m, s, milli) = split_timestamp(ms);
    format!("{date}T{h:02}:{m:02}:{s:02}.{milli:03}Z")
}

/// Timestamp as `SELECT JSON` prints it: `2011-02-03 04:05:00.000Z`.
pub(crate) fn format_timestamp_json(ms: i64) -> String {
    let (date, h, m, s, milli) = split_timestamp(ms);
    format!("{date} {h:02}:{m:02}:{s:02}.{milli:03}Z")
}

/// Cassandra's `Duration.toString`: `1y2mo3d4h5m6s7ms8us9ns`, units that are zero omitted.
pub(crate) fn format_duration(months: i32, days: i32, nanos: i64) -> String {
    let mut out = String::new();
    if months < 0 || days < 0 || nanos < 0 {
        out.push('-');
    }
    let mut append = |dividend: u64, divisor: u64, unit: &str| -> u64 {
        if dividend == 0 || dividend < divisor {
            return dividend;
        }
        let _ = write!(out, "{}{unit}", dividend / divisor);
        dividend % divisor
    };
    let rem = append(u64::from(months.unsigned_abs()), 12, "y");
    append(rem, 1, "mo");
    append(u64::from(days.unsigned_abs()), 1, "d");
    if nanos != 0 {
        let mut rem = nanos.unsigned_abs();
        for (divisor, unit) in [
            (3_600_000_000_000, "h"),
            (60_000_000_000, "m"),
            (1_000_000_000, "s"),
            (1_000_000, "ms"),
            (1_000, "us"),
            (1, "ns"),
        ] {
            rem = append(rem, divisor, unit);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn text_literals_double_single_quotes() {
        assert_eq!(to_cql_literal(&CqlValue::Text("it's".into())), "'it''s'");
        assert_eq!(
            to_cql_literal(&CqlValue::Blob(Bytes::from_static(&[0xca, 0xfe]))),
            "0xcafe"
        );
    }

    #[test]
    fn doubles_print_like_java() {
        assert_eq!(format_java_double(1.0), "1.0");
        assert_eq!(format_java_double(1e10), "1.0E10");
        assert_eq!(format_java_double(1.5e-7), "1.5E-7");
        assert_eq!(format_java_double(0.001), "0.001");
        assert_eq!(format_java_float(3.25), "3.25");
    }

    #[test]
    fn decimals_print_like_bigdecimal() {
        assert_eq!(format_decimal(&BigInt::from(12345), 2), "123.45");
        assert_eq!(format_decimal(&BigInt::from(-5), 3), "-0.005");
        assert_eq!(format_decimal(&BigInt::from(12), -3), "1.2E+4");
        assert_eq!(format_decimal(&BigInt::from(1), 10), "1E-10");
    }

    #[test]
    fn temporal_values_print_like_cassandra() {
        assert_eq!(
            format_timestamp_json(1_296_705_900_000),
            "2011-02-03 04:05:00.000Z"
        );
        assert_eq!(format_time(29_574_123_456_789), "08:12:54.123456789");
        assert_eq!(format_duration(14, 3, 5_400_000_000_000), "1y2mo3d1h30m");
        assert_eq!(format_duration(0, 0, -1_000), "-1us");
        assert_eq!(
            to_plain_string(&CqlValue::Date(crate::time::DATE_EPOCH_RAW)),
            "1970-01-01"
        );
    }

    #[test]
    fn json_quotes_map_keys_and_udt_names() {
        let m = CqlValue::Map(vec![(CqlValue::Int(1), CqlValue::Text("a\"b".into()))]);
        assert_eq!(to_json(&m), r#"{"1": "a\"b"}"#);
        let u = CqlValue::Udt(vec![
            ("Name".into(), None),
            ("x".into(), Some(CqlValue::Boolean(true))),
        ]);
        assert_eq!(to_json(&u), r#"{"\"Name\"": null, "x": true}"#);
        assert_eq!(to_cql_literal(&u), r#"{"Name": null, x: true}"#);
    }

    #[test]
    fn inet_prints_uncompressed_like_java() {
        let v6: IpAddr = "::1".parse().unwrap();
        assert_eq!(to_plain_string(&CqlValue::Inet(v6)), "0:0:0:0:0:0:0:1");
    }
}
