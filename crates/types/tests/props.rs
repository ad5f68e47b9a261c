//! Property tests: random types and values driven by a seeded xorshift generator, so any
//! failure reproduces from the printed seed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

use std::cmp::Ordering;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bytes::Bytes;
use helenus_types::{
    compare_serialized, deserialize, from_string, serialize_to_bytes, timeuuid_at_unix_ms,
    to_cql_literal, to_json, validate, CqlType, CqlValue, NativeType, UserType,
};
use num_bigint::BigInt;
use uuid::Uuid;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
    fn bytes(&mut self, max_len: u64) -> Vec<u8> {
        let len = self.below(max_len + 1);
        (0..len).map(|_| self.next() as u8).collect()
    }
}

const NATIVES: [NativeType; 19] = [
    NativeType::Ascii,
    NativeType::Bigint,
    NativeType::Blob,
    NativeType::Boolean,
    NativeType::Decimal,
    NativeType::Double,
    NativeType::Float,
    NativeType::Int,
    NativeType::Timestamp,
    NativeType::Uuid,
    NativeType::Varchar,
    NativeType::Varint,
    NativeType::Timeuuid,
    NativeType::Inet,
    NativeType::Date,
    NativeType::Time,
    NativeType::Smallint,
    NativeType::Tinyint,
    NativeType::Duration,
];

fn random_native(r: &mut Rng) -> NativeType {
    NATIVES[r.below(NATIVES.len() as u64) as usize]
}

fn random_type(r: &mut Rng, depth: u32) -> CqlType {
    if depth == 0 || r.chance(2) {
        return CqlType::Native(random_native(r));
    }
    let sub = |r: &mut Rng| Box::new(random_type(r, depth - 1));
    match r.below(6) {
        0 => CqlType::List {
            element: sub(r),
            frozen: true,
        },
        1 => CqlType::Set {
            element: sub(r),
            frozen: true,
        },
        2 => CqlType::Map {
            key: sub(r),
            value: sub(r),
            frozen: true,
        },
        3 => CqlType::Tuple(
            (0..1 + r.below(3))
                .map(|_| random_type(r, depth - 1))
                .collect(),
        ),
        4 => {
            let fields = (0..1 + r.below(3))
                .map(|i| (format!("f{i}"), random_type(r, depth - 1)))
                .collect();
            CqlType::Udt {
                def: Box::new(UserType {
                    keyspace: "ks".into(),
                    name: "u".into(),
                    fields,
                }),
                frozen: true,
            }
        }
        _ => CqlType::Vector {
            element: sub(r),
            dimension: 1 + r.below(4) as u32,
        },
    }
}

fn random_text(r: &mut Rng, ascii: bool) -> String {
    let len = r.below(8);
    (0..len)
        .map(|_| {
            if ascii || r.chance(2) {
                (b' ' + r.below(95) as u8) as char
            } else {
                ['é', 'ß', '日', '🦀', '\''][r.below(5) as usize]
            }
        })
        .collect()
}

fn random_bigint(r: &mut Rng) -> BigInt {
    let mut v = BigInt::from(r.next() as i64);
    for _ in 0..r.below(3) {
        v = v * BigInt::from(u64::MAX) + BigInt::from(r.next());
    }
    if r.chance(3) {
        BigInt::from(r.below(300) as i64 - 150)
    } else {
        v
    }
}

fn random_native_value(r: &mut Rng, n: NativeType) -> CqlValue {
    match n {
        NativeType::Ascii => CqlValue::Ascii(random_text(r, true)),
        NativeType::Varchar => CqlValue::Text(random_text(r, false)),
        NativeType::Bigint => CqlValue::Bigint(r.next() as i64),
        NativeType::Counter => CqlValue::Counter(r.next() as i64),
        NativeType::Blob => CqlValue::Blob(Bytes::from(r.bytes(6))),
        NativeType::Boolean => CqlValue::Boolean(r.chance(2)),
        NativeType::Decimal => CqlValue::Decimal {
            unscaled: random_bigint(r),
            scale: r.below(40) as i32 - 20,
        },
        NativeType::Double => CqlValue::Double(f64::from_bits(r.next())),
        NativeType::Float => CqlValue::Float(f32::from_bits(r.next() as u32)),
        NativeType::Int => CqlValue::Int(r.next() as i32),
        NativeType::Timestamp => CqlValue::Timestamp(r.next() as i64 >> r.below(40)),
        NativeType::Uuid => CqlValue::Uuid(Uuid::from_u128(
            (u128::from(r.next()) << 64 | u128::from(r.next())) & !(0xf << 76)
                | (u128::from(r.below(6)) << 76),
        )),
        NativeType::Varint => CqlValue::Varint(random_bigint(r)),
        NativeType::Timeuuid => {
            CqlValue::Timeuuid(timeuuid_at_unix_ms(r.below(4_000_000_000_000) as i64))
        }
        NativeType::Inet => {
            if r.chance(2) {
                CqlValue::Inet(IpAddr::V4(Ipv4Addr::from(r.next() as u32)))
            } else {
                CqlValue::Inet(IpAddr::V6(Ipv6Addr::from(
                    u128::from(r.next()) << 64 | u128::from(r.next()),
                )))
            }
        }
        NativeType::Date => CqlValue::Date(r.next() as u32),
        NativeType::Time => CqlValue::Time(r.below(86_400_000_000_000) as i64),
        NativeType::Smallint => CqlValue::Smallint(r.next() as i16),
        NativeType::Tinyint => CqlValue::Tinyint(r.next() as i8),
        NativeType::Duration => {
            let sign = if r.chance(2) { 1 } else { -1 };
            CqlValue::Duration {
                months: sign * r.below(1000) as i32,
                days: sign * r.below(1000) as i32,
                nanos: i64::from(sign) * (r.next() >> (1 + r.below(63))) as i64,
            }
        }
    }
}

fn random_value(r: &mut Rng, t: &CqlType) -> CqlValue {
    match t {
        CqlType::Native(n) => random_native_value(r, *n),
        CqlType::List { element, .. } => {
            CqlValue::List((0..r.below(4)).map(|_| random_value(r, element)).collect())
        }
        CqlType::Set { element, .. } => {
            CqlValue::Set((0..r.below(4)).map(|_| random_value(r, element)).collect())
        }
        CqlType::Map { key, value, .. } => CqlValue::Map(
            (0..r.below(4))
                .map(|_| (random_value(r, key), random_value(r, value)))
                .collect(),
        ),
        CqlType::Tuple(types) => CqlValue::Tuple(
            types
                .iter()
                .map(|t| (!r.chance(4)).then(|| random_value(r, t)))
                .collect(),
        ),
        CqlType::Udt { def, .. } => CqlValue::Udt(
            def.fields
                .iter()
                .map(|(n, t)| (n.clone(), (!r.chance(4)).then(|| random_value(r, t))))
                .collect(),
        ),
        CqlType::Vector { element, dimension } => {
            CqlValue::Vector((0..*dimension).map(|_| random_value(r, element)).collect())
        }
        CqlType::Custom(_) => CqlValue::Blob(Bytes::new()),
    }
}

#[test]
fn every_type_round_trips_through_its_serialized_form() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    for i in 0..3000 {
        let t = random_type(&mut r, 3);
        let v = random_value(&mut r, &t);
        let bytes = serialize_to_bytes(&v);
        validate(&t, &bytes)
            .unwrap_or_else(|e| panic!("case {i}: {t} {v:?} failed validation: {e}"));
        let decoded =
            deserialize(&t, &bytes).unwrap_or_else(|e| panic!("case {i}: {t} {v:?}: {e}"));
        // Compare re-serialized bytes: NaN payloads make value equality useless for floats.
        assert_eq!(serialize_to_bytes(&decoded), bytes, "case {i}: {t} {v:?}");
        assert_eq!(
            compare_serialized(&t, &bytes, &bytes),
            Ordering::Equal,
            "case {i}: {t}"
        );
        // Formatting never panics.
        let _ = (to_cql_literal(&decoded), to_json(&decoded));
    }
}

#[test]
fn comparator_is_antisymmetric_for_random_types() {
    let mut r = Rng(0x1234_5678_9abc_def1);
    for i in 0..3000 {
        let t = random_type(&mut r, 2);
        let a = serialize_to_bytes(&random_value(&mut r, &t));
        let b = if r.chance(5) {
            a.clone()
        } else {
            serialize_to_bytes(&random_value(&mut r, &t))
        };
        let ab = compare_serialized(&t, &a, &b);
        assert_eq!(
            ab,
            compare_serialized(&t, &b, &a).reverse(),
            "case {i}: {t}"
        );
    }
}

fn decimal_cmp(a: (&BigInt, i32), b: (&BigInt, i32)) -> Ordering {
    let scale = a.1.max(b.1);
    let up = |(u, s): (&BigInt, i32)| u * num_traits::pow(BigInt::from(10), (scale - s) as usize);
    up(a).cmp(&up(b))
}

fn java_double_cmp(x: f64, y: f64) -> Ordering {
    match (x.is_nan(), y.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => x.total_cmp(&y),
    }
}

/// The natural order of two decoded native values, written independently of the byte-level
/// comparators under test.
fn natural_cmp(a: &CqlValue, b: &CqlValue) -> Option<Ordering> {
    use CqlValue::*;
    Some(match (a, b) {
        (Int(x), Int(y)) => x.cmp(y),
        (Bigint(x), Bigint(y)) | (Timestamp(x), Timestamp(y)) | (Time(x), Time(y)) => x.cmp(y),
        (Smallint(x), Smallint(y)) => x.cmp(y),
        (Tinyint(x), Tinyint(y)) => x.cmp(y),
        (Date(x), Date(y)) => x.cmp(y),
        (Boolean(x), Boolean(y)) => x.cmp(y),
        (Double(x), Double(y)) => java_double_cmp(*x, *y),
        (Float(x), Float(y)) => java_double_cmp(f64::from(*x), f64::from(*y)),
        (Text(x), Text(y)) | (Ascii(x), Ascii(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Blob(x), Blob(y)) => x.cmp(y),
        (Varint(x), Varint(y)) => x.cmp(y),
        (
            Decimal {
                unscaled: ua,
                scale: sa,
            },
            Decimal {
                unscaled: ub,
                scale: sb,
            },
        ) => decimal_cmp((ua, *sa), (ub, *sb)),
        (Timeuuid(x), Timeuuid(y)) => {
            let t = |u: &uuid::Uuid| helenus_types::time::timeuuid_ticks(u);
            match t(x).cmp(&t(y)) {
                Ordering::Equal => return None,
                o => o,
            }
        }
        _ => return None,
    })
}

#[test]
fn comparator_matches_natural_order_of_decoded_values() {
    let mut r = Rng(0xdead_beef_cafe_f00d);
    for i in 0..20_000 {
        let n = random_native(&mut r);
        let t = CqlType::Native(n);
        let (a, b) = (
            random_native_value(&mut r, n),
            random_native_value(&mut r, n),
        );
        let Some(expected) = natural_cmp(&a, &b) else {
            continue;
        };
        let got = compare_serialized(&t, &serialize_to_bytes(&a), &serialize_to_bytes(&b));
        assert_eq!(got, expected, "case {i}: {n:?} {a:?} vs {b:?}");
    }
}

#[test]
fn frozen_list_and_tuple_order_is_lexicographic() {
    let mut r = Rng(42);
    let list_t = CqlType::List {
        element: Box::new(CqlType::Native(NativeType::Int)),
        frozen: true,
    };
    let tuple_t = CqlType::Tuple(vec![
        CqlType::Native(NativeType::Int),
        CqlType::Native(NativeType::Int),
    ]);
    for _ in 0..5000 {
        let xs: Vec<i32> = (0..r.below(4)).map(|_| r.below(5) as i32 - 2).collect();
        let ys: Vec<i32> = (0..r.below(4)).map(|_| r.below(5) as i32 - 2).collect();
        let enc = |v: &[i32]| {
            serialize_to_bytes(&CqlValue::List(
                v.iter().map(|x| CqlValue::Int(*x)).collect(),
            ))
        };
        assert_eq!(
            compare_serialized(&list_t, &enc(&xs), &enc(&ys)),
            xs.cmp(&ys),
            "{xs:?} vs {ys:?}"
        );

        let opt = |r: &mut Rng| (!r.chance(3)).then(|| r.below(5) as i32 - 2);
        let (a, b) = ([opt(&mut r), opt(&mut r)], [opt(&mut r), opt(&mut r)]);
        let enc_t = |v: &[Option<i32>; 2]| {
            serialize_to_bytes(&CqlValue::Tuple(
                v.iter().map(|x| x.map(CqlValue::Int)).collect(),
            ))
        };
        assert_eq!(
            compare_serialized(&tuple_t, &enc_t(&a), &enc_t(&b)),
            a.cmp(&b),
            "{a:?} vs {b:?}"
        );
    }
}

#[test]
fn validate_and_compare_never_panic_on_random_or_mangled_bytes() {
    let mut r = Rng(0x0bad_c0de_0bad_c0de);
    for _ in 0..20_000 {
        let t = random_type(&mut r, 3);
        let bytes = if r.chance(2) {
            r.bytes(40)
        } else {
            // Mangle a valid value: truncate or flip a byte.
            let mut b = serialize_to_bytes(&random_value(&mut r, &t)).to_vec();
            if !b.is_empty() {
                let at = r.below(b.len() as u64) as usize;
                if r.chance(2) {
                    b.truncate(at);
                } else {
                    b[at] ^= 1 << r.below(8);
                }
            }
            b
        };
        let _ = validate(&t, &bytes);
        if let Ok(v) = deserialize(&t, &bytes) {
            let _ = (to_cql_literal(&v), to_json(&v));
        }
        let other = r.bytes(40);
        let _ = compare_serialized(&t, &bytes, &other);
    }
}

#[test]
fn from_string_parses_what_to_plain_string_prints() {
    let mut r = Rng(7);
    for _ in 0..5000 {
        let n = random_native(&mut r);
        let v = random_native_value(&mut r, n);
        let s = match &v {
            CqlValue::Blob(_) | CqlValue::Inet(_) => continue,
            CqlValue::Timestamp(ms) if !(-62_135_596_800_000..253_402_300_800_000).contains(ms) => {
                continue
            }
            CqlValue::Date(d)
                if !((1u32 << 31) - 719_162..(1u32 << 31) + 2_932_896).contains(d) =>
            {
                continue
            }
            _ => helenus_types::to_plain_string(&v),
        };
        let parsed =
            from_string(&CqlType::Native(n), &s).unwrap_or_else(|e| panic!("{n:?} '{s}': {e}"));
        assert_eq!(
            serialize_to_bytes(&parsed),
            serialize_to_bytes(&v),
            "{n:?} '{s}'"
        );
    }
}
