//! `floor(t, duration[, start])` over timestamps, timeuuids, dates and times: the start of the
//! `duration`-wide bucket holding `t`, counting buckets from `start` (the epoch, or midnight
//! for times). It is what `GROUP BY pk, floor(time, 1h)` groups rows by.

use super::cast;
use super::error::{ExecError, ExecResult};
use helenus_types::{CqlType, CqlValue, NativeType};

const MS_PER_DAY: i64 = 86_400_000;
const NS_PER_MS: i64 = 1_000_000;
const NS_PER_DAY: i64 = MS_PER_DAY * NS_PER_MS;

fn invalid(msg: impl Into<String>) -> ExecError {
    ExecError::Invalid(msg.into())
}

/// The result type of `floor` for its argument types, and the type its optional start argument
/// takes (a literal start is typed by it).
pub fn signature(args: &[CqlType]) -> ExecResult<(CqlType, CqlType)> {
    use NativeType::*;
    let no_match = || {
        invalid("Invalid call to function floor, none of its type signatures match (known type signatures: system.floor : (timestamp, duration) -> timestamp, system.floor : (timestamp, duration, timestamp) -> timestamp, system.floor : (timeuuid, duration) -> timestamp, system.floor : (timeuuid, duration, timestamp) -> timestamp, system.floor : (date, duration) -> date, system.floor : (date, duration, date) -> date, system.floor : (time, duration) -> time, system.floor : (time, duration, time) -> time)")
    };
    if !(2..=3).contains(&args.len()) {
        return Err(no_match());
    }
    let (ret, start) = match &args[0] {
        CqlType::Native(Timestamp | Timeuuid) => (Timestamp, Timestamp),
        CqlType::Native(Date) => (Date, Date),
        CqlType::Native(Time) => (Time, Time),
        _ => return Err(no_match()),
    };
    if args[1] != CqlType::Native(Duration) {
        return Err(no_match());
    }
    if args.get(2).is_some_and(|t| *t != CqlType::Native(start)) {
        return Err(no_match());
    }
    Ok((CqlType::Native(ret), CqlType::Native(start)))
}

/// Applies `floor` to decoded arguments (None = null: a null argument gives null).
pub fn call(args: &[Option<CqlValue>]) -> ExecResult<Option<CqlValue>> {
    let (Some(Some(value)), Some(Some(duration))) = (args.first(), args.get(1)) else {
        return Ok(None);
    };
    let CqlValue::Duration {
        months,
        days,
        nanos,
    } = *duration
    else {
        return Err(invalid("floor takes a duration as its second argument"));
    };
    let d = Duration {
        months,
        days,
        nanos,
    };
    if months < 0 || days < 0 || nanos < 0 {
        return Err(invalid(
            "Negative durations are not supported by the floor function",
        ));
    }
    let start = match args.get(2) {
        Some(None) => return Ok(None),
        Some(Some(s)) => Some(s),
        None => None,
    };
    Ok(Some(match value {
        CqlValue::Time(ns) => {
            let origin = match start {
                Some(CqlValue::Time(s)) => *s,
                _ => 0,
            };
            CqlValue::Time(floor_time(*ns, &d, origin)?)
        }
        CqlValue::Date(raw) => {
            if d.nanos != 0 {
                return Err(invalid(format!(
                    "The floor on date values cannot be computed for the {} duration as precision is in days",
                    d.text()
                )));
            }
            let origin = match start {
                Some(CqlValue::Date(s)) => cast::raw_date_to_millis(*s),
                _ => 0,
            };
            let ms = floor_millis(cast::raw_date_to_millis(*raw), &d, origin)?;
            CqlValue::Date(cast::millis_to_raw_date(ms))
        }
        other => {
            let ms = match other {
                CqlValue::Timestamp(ms) => *ms,
                CqlValue::Timeuuid(u) => helenus_types::timeuuid_to_unix_ms(u),
                _ => return Err(invalid("floor takes a date or time value")),
            };
            if d.nanos % NS_PER_MS != 0 {
                return Err(invalid(format!(
                    "The floor on timestamp values cannot be computed for the {} duration as precision is in milliseconds",
                    d.text()
                )));
            }
            let origin = match start {
                Some(CqlValue::Timestamp(s)) => *s,
                _ => 0,
            };
            CqlValue::Timestamp(floor_millis(ms, &d, origin)?)
        }
    }))
}

struct Duration {
    months: i32,
    days: i32,
    nanos: i64,
}

impl Duration {
    fn text(&self) -> String {
        helenus_types::to_plain_string(&CqlValue::Duration {
            months: self.months,
            days: self.days,
            nanos: self.nanos,
        })
    }

    fn millis_without_months(&self) -> i64 {
        i64::from(self.days) * MS_PER_DAY + self.nanos / NS_PER_MS
    }
}

/// Cassandra's `Duration.floorTime`: times only take durations under a day.
fn floor_time(ns: i64, d: &Duration, origin: i64) -> ExecResult<i64> {
    if d.months != 0 || d.days != 0 || d.nanos > NS_PER_DAY {
        return Err(invalid(
            "For time values, the floor can only be computed for durations smaller that a day",
        ));
    }
    if origin > ns {
        return Err(invalid(
            "The floor function starting time is greater than the provided time",
        ));
    }
    if d.nanos == 0 {
        return Ok(ns);
    }
    Ok(ns - (ns - origin) % d.nanos)
}

/// Cassandra's `Duration.floorTimestamp`: the latest `origin + k * d` not after `ms`, months
/// added on the UTC calendar (day of month clamped to the month's length).
fn floor_millis(ms: i64, d: &Duration, origin: i64) -> ExecResult<i64> {
    if origin > ms {
        return Err(invalid(
            "The floor function starting time is greater than the provided time",
        ));
    }
    if d.months == 0 {
        let step = d.millis_without_months();
        if step == 0 {
            return Ok(ms);
        }
        return Ok(ms - (ms - origin) % step);
    }
    let (year, month) = year_month(ms);
    let (start_year, start_month) = year_month(origin);
    let elapsed_months = (year - start_year) * 12 + (month - start_month);
    let mut multiplier = elapsed_months / i64::from(d.months);
    let mut calendar = add_months(origin, multiplier * i64::from(d.months));
    if d.days == 0 && d.nanos == 0 {
        return Ok(calendar);
    }
    let step = d.millis_without_months();
    let mut floor = calendar + multiplier * step;
    // The months estimate ignores the days and nanoseconds, so it may overshoot.
    while floor > ms {
        multiplier -= 1;
        calendar = add_months(calendar, -i64::from(d.months));
        floor = calendar + multiplier * step;
    }
    Ok(floor.max(origin))
}

/// The UTC (year, month 0-11) of an epoch millisecond.
fn year_month(ms: i64) -> (i64, i64) {
    let (y, m, _) = civil(ms.div_euclid(MS_PER_DAY));
    (y, m)
}

/// `ms` moved by `months` calendar months, as `java.util.Calendar.add(MONTH, n)`.
fn add_months(ms: i64, months: i64) -> i64 {
    let days = ms.div_euclid(MS_PER_DAY);
    let in_day = ms.rem_euclid(MS_PER_DAY);
    let (y, m, d) = civil(days);
    let total = y * 12 + m + months;
    let (ny, nm) = (total.div_euclid(12), total.rem_euclid(12));
    let nd = d.min(month_length(ny, nm));
    days_from_civil(ny, nm, nd) * MS_PER_DAY + in_day
}

fn month_length(y: i64, m: i64) -> i64 {
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    match m {
        1 if leap => 29,
        1 => 28,
        3 | 5 | 8 | 10 => 30,
        _ => 31,
    }
}

/// (year, month 0-11, day 1-31) of a day count from 1970-01-01 (proleptic Gregorian).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m - 1, d)
}

fn days_from_civil(y: i64, m0: i64, d: i64) -> i64 {
    let m = m0 + 1;
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn ts(text: &str) -> i64 {
        match helenus_types::from_string(&CqlType::Native(NativeType::Timestamp), text).unwrap() {
            CqlValue::Timestamp(ms) => ms,
            other => panic!("{other:?}"),
        }
    }

    fn dur(months: i32, days: i32, nanos: i64) -> Option<CqlValue> {
        Some(CqlValue::Duration {
            months,
            days,
            nanos,
        })
    }

    #[test]
    fn timestamps_floor_to_buckets_from_the_epoch_or_a_start() {
        let five_min = dur(0, 0, 5 * 60 * 1_000_000_000);
        let t = Some(CqlValue::Timestamp(ts("2016-09-27 16:12:00 UTC")));
        let out = call(&[t.clone(), five_min.clone()]).unwrap();
        assert_eq!(
            out,
            Some(CqlValue::Timestamp(ts("2016-09-27 16:10:00 UTC")))
        );
        let month = call(&[t.clone(), dur(1, 0, 0)]).unwrap();
        assert_eq!(
            month,
            Some(CqlValue::Timestamp(ts("2016-09-01 00:00:00 UTC")))
        );
        let start = Some(CqlValue::Timestamp(ts("2016-06-01 00:00:00 UTC")));
        let quarter = call(&[t.clone(), dur(3, 0, 0), start]).unwrap();
        assert_eq!(
            quarter,
            Some(CqlValue::Timestamp(ts("2016-09-01 00:00:00 UTC")))
        );
        let late = Some(CqlValue::Timestamp(ts("2016-10-27 00:00:00 UTC")));
        assert!(call(&[t.clone(), five_min, late]).is_err());
        assert!(call(&[t.clone(), dur(0, 0, 10_000)]).is_err());
        assert!(call(&[t, dur(-1, 0, 0)]).is_err());
    }

    #[test]
    fn dates_and_times_keep_their_precision() {
        let date = Some(CqlValue::Date(cast::millis_to_raw_date(ts("2016-09-27"))));
        let out = call(&[date.clone(), dur(1, 0, 0)]).unwrap();
        let first = CqlValue::Date(cast::millis_to_raw_date(ts("2016-09-01")));
        assert_eq!(out, Some(first));
        assert!(call(&[date, dur(0, 0, 3_600_000_000_000)]).is_err());
        let time = Some(CqlValue::Time(16 * 3_600_000_000_000 + 12 * 60_000_000_000));
        let out = call(&[time.clone(), dur(0, 0, 5 * 60_000_000_000)]).unwrap();
        assert_eq!(
            out,
            Some(CqlValue::Time(16 * 3_600_000_000_000 + 10 * 60_000_000_000))
        );
        assert!(call(&[time, dur(0, 10, 0)]).is_err());
    }

    #[test]
    fn calendar_months_clamp_the_day() {
        let jan31 = ts("2016-01-31 10:00:00 UTC");
        assert_eq!(add_months(jan31, 1), ts("2016-02-29 10:00:00 UTC"));
        assert_eq!(add_months(jan31, -2), ts("2015-11-30 10:00:00 UTC"));
        assert_eq!(civil(0), (1970, 0, 1));
        assert_eq!(days_from_civil(2016, 8, 27) * MS_PER_DAY, ts("2016-09-27"));
    }
}
