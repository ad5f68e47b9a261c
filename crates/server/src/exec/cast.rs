//! `CAST(x AS type)` in selections, as Cassandra 5.0's `CastFcts` defines it: a family of
//! native functions `system.cast_as_<type>` with one signature per accepted input type,
//! resolved like any function call (exact match first, then value-compatible types).

use super::error::{ExecError, ExecResult};
use helenus_types::numeric::JavaNumber;
use helenus_types::{CqlType, CqlValue, NativeType};

/// What a compiled cast does.
#[derive(Debug, Clone, PartialEq)]
pub enum CastPlan {
    /// Casting to the argument's own type: Cassandra drops the cast (and keeps the argument's
    /// column name).
    Identity,
    /// Runs `cast_as_<to>(<input>)`; the argument's bytes are read as `input` (which differs
    /// from the argument's type when the match was only value-compatible, e.g. a timestamp
    /// passed to the `bigint` signature).
    Convert { input: NativeType, to: NativeType },
}

use NativeType::*;

const NUMERIC: [NativeType; 9] = [
    Tinyint, Smallint, Int, Bigint, Float, Double, Decimal, Counter, Varint,
];

/// The input types of `cast_as_<to>`, empty when Cassandra has no such function.
fn signatures(to: NativeType) -> Vec<NativeType> {
    match to {
        Tinyint | Smallint | Int | Bigint | Float | Double | Decimal | Varint => {
            NUMERIC.iter().copied().filter(|t| *t != to).collect()
        }
        Ascii | Varchar => {
            let mut v = NUMERIC.to_vec();
            if to == Varchar {
                v.push(Ascii);
            }
            v.extend([Inet, Boolean, Timeuuid, Timestamp, Date, Time, Uuid]);
            v
        }
        Date => vec![Timeuuid, Timestamp],
        Timestamp => vec![Timeuuid, Date],
        _ => Vec::new(),
    }
}

/// Whether a value of type `arg` is accepted where `param` is expected without being its exact
/// type (Cassandra's `isValueCompatibleWith`: same bytes, compatible meaning).
pub fn value_compatible(param: NativeType, arg: &CqlType) -> bool {
    let CqlType::Native(arg) = arg else {
        return false;
    };
    matches!(
        (param, arg),
        (Bigint, Timestamp)
            | (Timestamp, Bigint)
            | (Varint, Int | Bigint | Timestamp)
            | (Date, Int)
            | (Uuid, Timeuuid)
            | (Varchar, Ascii)
    )
}

fn signature_list(name: &str, inputs: &[NativeType], to: NativeType) -> String {
    inputs
        .iter()
        .map(|i| format!("system.{name} : ({}) -> {}", i.cql_name(), to.cql_name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Resolves `CAST(<arg> AS <to>)` for an argument of type `from`. `written` is the target type
/// as the query spelled it (`varchar` names no cast function even though it is `text`), and
/// `first_column` the column Cassandra names in its "cannot be cast" error.
pub fn plan(
    from: &CqlType,
    to: NativeType,
    written: &str,
    first_column: &str,
) -> ExecResult<CastPlan> {
    if *from == CqlType::Native(to) {
        return Ok(CastPlan::Identity);
    }
    let inputs = if written == "varchar" {
        Vec::new()
    } else {
        signatures(to)
    };
    if inputs.is_empty() {
        return Err(ExecError::Invalid(format!(
            "{first_column} cannot be cast to {written}"
        )));
    }
    let name = format!("cast_as_{}", to.cql_name());
    if let Some(exact) = inputs.iter().find(|i| CqlType::Native(**i) == *from) {
        return Ok(CastPlan::Convert { input: *exact, to });
    }
    let weak: Vec<NativeType> = inputs
        .iter()
        .copied()
        .filter(|i| value_compatible(*i, from))
        .collect();
    match weak.as_slice() {
        [one] => Ok(CastPlan::Convert { input: *one, to }),
        [] => Err(ExecError::Invalid(format!(
            "Invalid call to function system.{name}, none of its type signatures match (known type signatures: {})",
            signature_list(&name, &inputs, to)
        ))),
        many => Err(ExecError::Invalid(format!(
            "Ambiguous call to function system.{name} (can be matched by following signatures: {}): use type casts to disambiguate",
            signature_list(&name, many, to)
        ))),
    }
}

/// Java's `(int) TimeUnit.MILLISECONDS.toDays(ms) - Integer.MIN_VALUE`: days truncated towards
/// zero, wrapped into an int, as the raw `date` encoding (`toDate` of a timestamp).
pub fn millis_to_raw_date(ms: i64) -> u32 {
    ((ms / 86_400_000) as i32).wrapping_sub(i32::MIN) as u32
}

/// `toTimestamp(date)`: the raw date's days since the epoch, in milliseconds.
pub fn raw_date_to_millis(raw: u32) -> i64 {
    (i64::from(raw) - (1i64 << 31)) * 86_400_000
}

fn failure(what: &str) -> ExecError {
    ExecError::Server(format!("java.lang.NumberFormatException: {what}"))
}

/// Applies a resolved cast to a (non-null) value already decoded as the plan's input type.
pub fn apply(v: &CqlValue, to: NativeType) -> ExecResult<CqlValue> {
    if matches!(to, Ascii | Varchar) {
        // `toCQLLiteralNoQuote` of the input: Java's toString forms.
        let s = helenus_types::to_plain_string(v);
        return Ok(if to == Ascii {
            CqlValue::Ascii(s)
        } else {
            CqlValue::Text(s)
        });
    }
    match (v, to) {
        (CqlValue::Timeuuid(u), Timestamp) => {
            return Ok(CqlValue::Timestamp(helenus_types::timeuuid_to_unix_ms(u)))
        }
        (CqlValue::Timeuuid(u), Date) => {
            return Ok(CqlValue::Date(millis_to_raw_date(
                helenus_types::timeuuid_to_unix_ms(u),
            )))
        }
        (CqlValue::Timestamp(ms), Date) => return Ok(CqlValue::Date(millis_to_raw_date(*ms))),
        (CqlValue::Date(raw), Timestamp) => {
            return Ok(CqlValue::Timestamp(raw_date_to_millis(*raw)))
        }
        _ => {}
    }
    let n = JavaNumber::of(v).ok_or_else(|| {
        ExecError::Invalid(format!(
            "cannot cast a value of type {:?} to {}",
            v.native_type(),
            to.cql_name()
        ))
    })?;
    Ok(match to {
        Tinyint => CqlValue::Tinyint(n.byte_value()),
        Smallint => CqlValue::Smallint(n.short_value()),
        Int => CqlValue::Int(n.int_value()),
        Bigint => CqlValue::Bigint(n.long_value()),
        Float => CqlValue::Float(n.float_value()),
        Double => CqlValue::Double(n.double_value()),
        Decimal => {
            let (unscaled, scale) = n.to_decimal().ok_or_else(|| failure("Infinite or NaN"))?;
            CqlValue::Decimal { unscaled, scale }
        }
        // `BigInteger.valueOf(p.longValue())`, whatever the input.
        Varint => CqlValue::Varint(n.long_value().into()),
        other => {
            return Err(ExecError::Invalid(format!(
                "cannot cast to {}",
                other.cql_name()
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(n: NativeType) -> CqlType {
        CqlType::Native(n)
    }

    #[test]
    fn resolution_follows_cassandra() {
        assert_eq!(
            plan(&t(Varchar), Varchar, "varchar", "k").ok(),
            Some(CastPlan::Identity)
        );
        assert!(plan(&t(Ascii), Varchar, "varchar", "k").is_err());
        assert!(plan(&t(Int), Boolean, "boolean", "k").is_err());
        assert!(plan(&t(Varchar), Ascii, "ascii", "k").is_err());
        assert!(plan(&t(Blob), Varchar, "text", "k").is_err());
        // A timestamp matches both the varint and the bigint signatures of cast_as_int.
        assert!(plan(&t(Timestamp), Int, "int", "k").is_err());
        assert_eq!(
            plan(&t(Timestamp), Varint, "varint", "k").ok(),
            Some(CastPlan::Convert {
                input: Bigint,
                to: Varint
            })
        );
        assert_eq!(
            plan(&t(Int), Timestamp, "timestamp", "k").ok(),
            Some(CastPlan::Convert {
                input: Date,
                to: Timestamp
            })
        );
        assert_eq!(
            plan(&t(Bigint), Date, "date", "k").ok(),
            Some(CastPlan::Convert {
                input: Timestamp,
                to: Date
            })
        );
    }

    #[test]
    fn dates_truncate_towards_zero_and_wrap() {
        assert_eq!(millis_to_raw_date(-1000), 1 << 31);
        assert_eq!(
            i64::from(millis_to_raw_date(i64::MIN)) - (1i64 << 31),
            622191233
        );
        assert_eq!(raw_date_to_millis(u32::MAX), 185542587100800000);
    }

    #[test]
    fn numbers_convert_like_java() {
        let d = CqlValue::Double(2.5);
        assert_eq!(apply(&d, Varint).ok(), Some(CqlValue::Varint(2.into())));
        assert_eq!(
            apply(&CqlValue::Float(f32::MAX), Int).ok(),
            Some(CqlValue::Int(i32::MAX))
        );
        assert_eq!(
            apply(&CqlValue::Double(1.5), Varchar).ok(),
            Some(CqlValue::Text("1.5".into()))
        );
    }
}
