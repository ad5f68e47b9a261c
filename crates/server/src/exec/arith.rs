//! Arithmetic operators in selections (`a + b`, `-a` ...) as Cassandra's `OperationFcts` run
//! them: the result type is the wider operand type (`decimal` and `varint` included), integer
//! overflow wraps like Java, and a division by zero is a function failure (0x1400).

use super::error::{ExecError, ExecResult};
use helenus_cql::ast::ArithOp;
use helenus_types::numeric::{self, JavaNumber};
use helenus_types::{CqlType, CqlValue, NativeType};

fn rank(t: &CqlType) -> Option<u8> {
    Some(match t {
        CqlType::Native(NativeType::Tinyint) => 0,
        CqlType::Native(NativeType::Smallint) => 1,
        CqlType::Native(NativeType::Int) => 2,
        CqlType::Native(NativeType::Bigint | NativeType::Counter) => 3,
        CqlType::Native(NativeType::Float) => 4,
        CqlType::Native(NativeType::Double) => 5,
        CqlType::Native(NativeType::Varint) => 6,
        CqlType::Native(NativeType::Decimal) => 7,
        _ => return None,
    })
}

fn is_floating(t: &CqlType) -> bool {
    matches!(t, CqlType::Native(NativeType::Float | NativeType::Double))
}

/// The type of `a op b`, or None when either side is not a number.
pub fn result_type(a: &CqlType, b: &CqlType) -> Option<CqlType> {
    let (ra, rb) = (rank(a)?, rank(b)?);
    let varint = CqlType::Native(NativeType::Varint);
    // A varint mixed with a floating point number needs a decimal to hold the result.
    if (*a == varint && is_floating(b)) || (*b == varint && is_floating(a)) {
        return Some(CqlType::Native(NativeType::Decimal));
    }
    Some(if ra >= rb { a.clone() } else { b.clone() })
}

fn symbol(op: ArithOp) -> &'static str {
    match op {
        ArithOp::Add => "+",
        ArithOp::Sub => "-",
        ArithOp::Mul => "*",
        ArithOp::Div => "/",
        ArithOp::Rem => "%",
    }
}

/// The FunctionExecutionException Cassandra raises when an operation throws.
fn failed(op: ArithOp, lt: &CqlType, rt: &CqlType, why: &str) -> ExecError {
    let function = match op {
        ArithOp::Add => "_add",
        ArithOp::Sub => "_substract",
        ArithOp::Mul => "_multiply",
        ArithOp::Div => "_divide",
        ArithOp::Rem => "_modulo",
    };
    ExecError::FunctionFailure {
        keyspace: "system".into(),
        function: function.into(),
        arg_types: vec![lt.to_string(), rt.to_string()],
        message: format!("the operation '{lt} {} {rt}' failed: {why}", symbol(op)),
    }
}

fn int_value(out: &CqlType, v: i128) -> CqlValue {
    match out {
        CqlType::Native(NativeType::Int) => CqlValue::Int(v as i32),
        CqlType::Native(NativeType::Counter) => CqlValue::Counter(v as i64),
        CqlType::Native(NativeType::Smallint) => CqlValue::Smallint(v as i16),
        CqlType::Native(NativeType::Tinyint) => CqlValue::Tinyint(v as i8),
        _ => CqlValue::Bigint(v as i64),
    }
}

/// Evaluates `l op r` (both non-null) into a value of type `out` (from [`result_type`]).
pub fn apply(
    op: ArithOp,
    l: &CqlValue,
    r: &CqlValue,
    types: (&CqlType, &CqlType),
    out: &CqlType,
) -> ExecResult<Option<CqlValue>> {
    let (lt, rt) = types;
    let (Some(x), Some(y)) = (JavaNumber::of(l), JavaNumber::of(r)) else {
        return Ok(None);
    };
    match out {
        CqlType::Native(NativeType::Decimal) => {
            let overflow =
                || ExecError::Server("java.lang.NumberFormatException: Infinite or NaN".into());
            let a = x.to_decimal().ok_or_else(overflow)?;
            let b = y.to_decimal().ok_or_else(overflow)?;
            let zero = || failed(op, lt, rt, "BigInteger divide by zero");
            let range = |e: numeric::DecimalError| failed(op, lt, rt, &e.to_string());
            let (unscaled, scale) = match op {
                ArithOp::Add => numeric::decimal_add(&a, &b).map_err(range)?,
                ArithOp::Sub => numeric::decimal_sub(&a, &b).map_err(range)?,
                ArithOp::Mul => numeric::decimal_mul(&a, &b).map_err(range)?,
                ArithOp::Div => numeric::decimal_div(&a, &b).ok_or_else(zero)?,
                ArithOp::Rem => numeric::decimal_rem(&a, &b).ok_or_else(zero)?,
            };
            Ok(Some(CqlValue::Decimal { unscaled, scale }))
        }
        CqlType::Native(NativeType::Varint) => {
            let too_big = || failed(op, lt, rt, "BigInteger would overflow supported range");
            let a = x.to_integer().ok_or_else(too_big)?;
            let b = y.to_integer().ok_or_else(too_big)?;
            let zero = b == 0.into();
            let v = match op {
                ArithOp::Add => a + b,
                ArithOp::Sub => a - b,
                ArithOp::Mul => a * b,
                ArithOp::Div | ArithOp::Rem if zero => {
                    return Err(failed(op, lt, rt, "BigInteger divide by zero"))
                }
                ArithOp::Div => a / b,
                ArithOp::Rem => a % b,
            };
            Ok(Some(CqlValue::Varint(v)))
        }
        CqlType::Native(NativeType::Float | NativeType::Double) => {
            let (a, b) = (x.double_value(), y.double_value());
            let v = match op {
                ArithOp::Add => a + b,
                ArithOp::Sub => a - b,
                ArithOp::Mul => a * b,
                ArithOp::Div => a / b,
                ArithOp::Rem => a % b,
            };
            Ok(Some(if matches!(out, CqlType::Native(NativeType::Float)) {
                CqlValue::Float(v as f32)
            } else {
                CqlValue::Double(v)
            }))
        }
        _ => {
            let (a, b) = (i128::from(x.long_value()), i128::from(y.long_value()));
            let v = match op {
                ArithOp::Add => a.wrapping_add(b),
                ArithOp::Sub => a.wrapping_sub(b),
                ArithOp::Mul => a.wrapping_mul(b),
                ArithOp::Div | ArithOp::Rem if b == 0 => {
                    return Err(failed(op, lt, rt, "/ by zero"))
                }
                ArithOp::Div => a / b,
                ArithOp::Rem => a % b,
            };
            Ok(Some(int_value(out, v)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(n: NativeType) -> CqlType {
        CqlType::Native(n)
    }

    #[test]
    fn result_types_widen() {
        assert_eq!(
            result_type(&t(NativeType::Int), &t(NativeType::Varint)),
            Some(t(NativeType::Varint))
        );
        assert_eq!(
            result_type(&t(NativeType::Varint), &t(NativeType::Double)),
            Some(t(NativeType::Decimal))
        );
        assert_eq!(
            result_type(&t(NativeType::Varchar), &t(NativeType::Int)),
            None
        );
    }

    #[test]
    fn division_by_zero_is_a_function_failure() {
        let (i, v) = (t(NativeType::Int), t(NativeType::Varint));
        let r = apply(
            ArithOp::Div,
            &CqlValue::Int(1),
            &CqlValue::Int(0),
            (&i, &i),
            &i,
        );
        assert!(matches!(r, Err(ExecError::FunctionFailure { .. })));
        let r = apply(
            ArithOp::Div,
            &CqlValue::Varint(1.into()),
            &CqlValue::Int(0),
            (&v, &i),
            &v,
        );
        assert!(matches!(r, Err(ExecError::FunctionFailure { .. })));
    }

    #[test]
    fn varint_arithmetic_is_exact() {
        let v = t(NativeType::Varint);
        let big: CqlValue =
            CqlValue::Varint("12345678901234567890123456789".parse().unwrap_or_default());
        let r = apply(ArithOp::Add, &big, &big, (&v, &v), &v).ok().flatten();
        assert_eq!(
            r,
            Some(CqlValue::Varint(
                "24691357802469135780246913578".parse().unwrap_or_default()
            ))
        );
    }
}
