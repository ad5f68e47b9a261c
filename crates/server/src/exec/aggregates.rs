//! Aggregates in selections (`count`, `min`, `max`, `sum`, `avg`), folded row by row.

use super::error::{ExecError, ExecResult};
use super::rows::Row;
use super::selectors::{decode, eval, AggKind, Sel};
use super::values::serialize;
use crate::exec_state::Now;
use bytes::Bytes;
use helenus_types::numeric::{self, BigInt, JavaNumber};
use helenus_types::{CqlType, CqlValue, NativeType};

/// Running state of one aggregate column.
#[derive(Debug, Clone)]
pub enum AggState {
    Count(i64),
    Extreme(Option<Bytes>),
    Sum(Kahan, i128, bool),
    Avg(Kahan, i128, i64, bool),
    /// sum/avg over varint or decimal, exact: the running sum, Cassandra's running decimal
    /// average (updated per row with half-even rounding, so the row order shows in the last
    /// digits exactly as in Cassandra) and the row count.
    Big {
        sum: Dec,
        avg: Dec,
        n: i64,
    },
    /// A plain column next to aggregates: the value of the group's first row (null included),
    /// once that row has been seen.
    First(Option<Option<Bytes>>),
}

impl AggState {
    /// `n` more rows for `count(*)`, or values for `count(c)`.
    pub fn add_count(&mut self, n: i64) {
        if let AggState::Count(c) = self {
            *c += n;
        }
    }

    /// One non-null value of a `sum` or `avg` argument: as a double, and exactly when it is
    /// an integer (`as_num`'s pair), as `agg_update` adds it.
    pub fn add_number(&mut self, x: f64, exact: i128) {
        match self {
            AggState::Sum(f, i, seen) => {
                f.add(x);
                *i = i.wrapping_add(exact);
                *seen = true;
            }
            AggState::Avg(f, i, n, seen) => {
                f.add(x);
                *i = i.wrapping_add(exact);
                *n += 1;
                *seen = true;
            }
            _ => {}
        }
    }

    /// A candidate for `min` or `max` (serialized as `ty`): kept when it beats the current one.
    pub fn offer_extreme(&mut self, kind: AggKind, ty: &CqlType, v: Bytes) {
        if let AggState::Extreme(cur) = self {
            let replace = match cur {
                None => true,
                Some(c) => {
                    let o = helenus_types::compare_serialized(ty, &v, c);
                    if kind == AggKind::Min {
                        o.is_lt()
                    } else {
                        o.is_gt()
                    }
                }
            };
            if replace {
                *cur = Some(v);
            }
        }
    }
}

/// A floating-point sum with Kahan compensation, as Cassandra's float/double `sum` and `avg`
/// (java.util.DoubleSummaryStatistics): `0.1 + ... + 0.6` gives 15.3, not 15.299999999999999.
#[derive(Debug, Clone, Copy, Default)]
pub struct Kahan {
    sum: f64,
    compensation: f64,
    simple: f64,
}

impl Kahan {
    fn add(&mut self, x: f64) {
        self.simple += x;
        let tmp = x - self.compensation;
        let rounded = self.sum + tmp;
        self.compensation = (rounded - self.sum) - tmp;
        self.sum = rounded;
    }

    fn total(&self) -> f64 {
        let t = self.sum - self.compensation;
        // Same-signed infinities make the compensated sum NaN; the plain sum has the right sign.
        if t.is_nan() && self.simple.is_infinite() {
            self.simple
        } else {
            t
        }
    }
}

type Dec = (BigInt, i32);

fn is_big(t: &CqlType) -> bool {
    matches!(t, CqlType::Native(NativeType::Varint | NativeType::Decimal))
}

/// `sel` with every aggregate in it replaced by its value over `rows`.
pub fn fold_aggs(sel: &Sel, rows: &[Row], now: Now<'_>) -> ExecResult<Sel> {
    let fold = |inner: &Sel| fold_aggs(inner, rows, now).map(Box::new);
    Ok(match sel {
        Sel::Agg { .. } | Sel::CountStar => {
            let bigint = CqlType::Native(NativeType::Bigint);
            let ty = match sel {
                Sel::Agg { ty, .. } => ty,
                _ => &bigint,
            };
            let mut state = agg_init(sel);
            for row in rows {
                super::cancel::check()?;
                agg_update(&mut state, sel, ty, row, now)?;
            }
            Sel::Constant(agg_finish(&state, sel))
        }
        Sel::Func {
            name,
            args,
            arg_types,
        } => Sel::Func {
            name: name.clone(),
            args: args
                .iter()
                .map(|a| fold_aggs(a, rows, now))
                .collect::<ExecResult<_>>()?,
            arg_types: arg_types.clone(),
        },
        Sel::Field { inner, index, udt } => Sel::Field {
            inner: fold(inner)?,
            index: *index,
            udt: udt.clone(),
        },
        Sel::Negate(inner) => Sel::Negate(fold(inner)?),
        Sel::ToJson { inner, ty } => Sel::ToJson {
            inner: fold(inner)?,
            ty: ty.clone(),
        },
        Sel::Cast {
            inner,
            from,
            input,
            to,
        } => Sel::Cast {
            inner: fold(inner)?,
            from: from.clone(),
            input: input.clone(),
            to: *to,
        },
        Sel::Arith {
            op,
            left,
            right,
            lt,
            rt,
        } => Sel::Arith {
            op: *op,
            left: fold(left)?,
            right: fold(right)?,
            lt: lt.clone(),
            rt: rt.clone(),
        },
        other => other.clone(),
    })
}

pub fn agg_init(sel: &Sel) -> AggState {
    match sel {
        Sel::CountStar
        | Sel::Agg {
            kind: AggKind::Count,
            ..
        } => AggState::Count(0),
        Sel::Agg {
            kind: AggKind::Min | AggKind::Max,
            ..
        } => AggState::Extreme(None),
        Sel::Agg {
            kind: AggKind::Sum | AggKind::Avg,
            ty,
            ..
        } if is_big(ty) => AggState::Big {
            sum: (BigInt::from(0), 0),
            avg: (BigInt::from(0), 0),
            n: 0,
        },
        Sel::Agg {
            kind: AggKind::Sum, ..
        } => AggState::Sum(Kahan::default(), 0, false),
        Sel::Agg {
            kind: AggKind::Avg, ..
        } => AggState::Avg(Kahan::default(), 0, 0, false),
        _ => AggState::First(None),
    }
}

fn is_float(t: &CqlType) -> bool {
    matches!(
        t,
        CqlType::Native(NativeType::Float | NativeType::Double | NativeType::Decimal)
    )
}

fn as_num(v: &CqlValue) -> (f64, i128) {
    match v {
        CqlValue::Int(x) => (*x as f64, *x as i128),
        CqlValue::Bigint(x) | CqlValue::Counter(x) => (*x as f64, *x as i128),
        CqlValue::Smallint(x) => (*x as f64, *x as i128),
        CqlValue::Tinyint(x) => (*x as f64, *x as i128),
        CqlValue::Float(x) => (*x as f64, 0),
        CqlValue::Double(x) => (*x, 0),
        _ => (0.0, 0),
    }
}

pub fn agg_update(
    state: &mut AggState,
    sel: &Sel,
    ty: &CqlType,
    row: &Row,
    now: Now<'_>,
) -> ExecResult<()> {
    match (state, sel) {
        (AggState::Count(n), Sel::CountStar) => *n += 1,
        (AggState::Count(n), Sel::Agg { arg, ty, .. }) if eval(arg, ty, row, now)?.is_some() => {
            *n += 1;
        }
        (state @ AggState::Extreme(_), Sel::Agg { kind, arg, ty }) => {
            if let Some(b) = eval(arg, ty, row, now)? {
                state.offer_extreme(*kind, ty, b);
            }
        }
        (state @ (AggState::Sum(..) | AggState::Avg(..)), Sel::Agg { arg, ty, .. }) => {
            if let Some(v) = decode(ty, &eval(arg, ty, row, now)?)? {
                let (x, y) = as_num(&v);
                state.add_number(x, y);
            }
        }
        (AggState::Big { sum, avg, n }, Sel::Agg { arg, ty, .. }) => {
            let value = decode(ty, &eval(arg, ty, row, now)?)?;
            if let Some(x) = value
                .as_ref()
                .and_then(JavaNumber::of)
                .and_then(|x| x.to_decimal())
            {
                *n += 1;
                let out_of_range = |e: numeric::DecimalError| {
                    ExecError::Invalid(format!("decimal aggregate: {e}"))
                };
                *sum = numeric::decimal_add(sum, &x).map_err(out_of_range)?;
                // DecimalAvg: avg += (x - avg) / n, keeping the difference's scale.
                let diff = numeric::decimal_sub(&x, avg).map_err(out_of_range)?;
                let step = numeric::decimal_div_keep_scale(&diff, *n);
                *avg = numeric::decimal_add(avg, &step).map_err(out_of_range)?;
            }
        }
        (AggState::First(cur), s) if cur.is_none() => {
            *cur = Some(eval(s, ty, row, now)?);
        }
        _ => {}
    }
    Ok(())
}

fn num_value(ty: &CqlType, f: f64, i: i128) -> CqlValue {
    match ty {
        CqlType::Native(NativeType::Int) => CqlValue::Int(i as i32),
        CqlType::Native(NativeType::Bigint) => CqlValue::Bigint(i as i64),
        CqlType::Native(NativeType::Counter) => CqlValue::Counter(i as i64),
        CqlType::Native(NativeType::Smallint) => CqlValue::Smallint(i as i16),
        CqlType::Native(NativeType::Tinyint) => CqlValue::Tinyint(i as i8),
        CqlType::Native(NativeType::Float) => CqlValue::Float(f as f32),
        _ => CqlValue::Double(f),
    }
}

pub fn agg_finish(state: &AggState, sel: &Sel) -> Option<Bytes> {
    match (state, sel) {
        (AggState::Count(n), _) => Some(serialize(&CqlValue::Bigint(*n))),
        (AggState::Extreme(b), _) => b.clone(),
        (AggState::Sum(f, i, _), Sel::Agg { ty, .. }) => {
            Some(serialize(&num_value(ty, f.total(), *i)))
        }
        (AggState::Avg(f, i, n, _), Sel::Agg { ty, .. }) => {
            if *n == 0 {
                return Some(serialize(&num_value(ty, 0.0, 0)));
            }
            let v = if is_float(ty) {
                num_value(ty, f.total() / *n as f64, 0)
            } else {
                num_value(ty, 0.0, i / *n as i128)
            };
            Some(serialize(&v))
        }
        (AggState::Big { sum, avg, n }, Sel::Agg { kind, ty, .. }) => {
            let v = match (ty, kind) {
                (CqlType::Native(NativeType::Varint), AggKind::Sum) => {
                    CqlValue::Varint(sum.0.clone())
                }
                // The varint average is the truncated quotient of the exact sum.
                (CqlType::Native(NativeType::Varint), _) => CqlValue::Varint(if *n == 0 {
                    BigInt::from(0)
                } else {
                    &sum.0 / BigInt::from(*n)
                }),
                (_, AggKind::Sum) => CqlValue::Decimal {
                    unscaled: sum.0.clone(),
                    scale: sum.1,
                },
                _ => CqlValue::Decimal {
                    unscaled: avg.0.clone(),
                    scale: avg.1,
                },
            };
            Some(serialize(&v))
        }
        (AggState::First(b), _) => b.clone().flatten(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compensated_sum_gives_what_cassandra_gives() {
        let mut k = Kahan::default();
        for x in [
            0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7,
        ] {
            k.add(x);
        }
        assert_eq!(k.total(), 15.3);
        let mut inf = Kahan::default();
        inf.add(f64::INFINITY);
        inf.add(f64::INFINITY);
        assert_eq!(inf.total(), f64::INFINITY);
    }
}
