//! Calendar math for `date`/`time`/`timestamp`, the clock, and version-1 (time-based) UUIDs
//! built the way Cassandra's `TimeUUID`/`UUIDGen` builds them.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::AtomicI64;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use uuid::Uuid;

/// Nanoseconds in a day: the exclusive upper bound of a `time` value.
pub const NANOS_PER_DAY: i64 = 86_400_000_000_000;
/// Raw `date` value of 1970-01-01 (dates are days since the epoch, centred on 2^31).
pub const DATE_EPOCH_RAW: u32 = 1 << 31;
/// Milliseconds from the Gregorian reform (1582-10-15, the UUID epoch) to the Unix epoch.
const UUID_EPOCH_OFFSET_MS: i64 = 12_219_292_800_000;
/// Cassandra's `MIN_CLOCK_SEQ_AND_NODE`/`MAX_...`: the extreme low halves under TimeUUIDType's
/// signed-byte comparison.
const MIN_CLOCK_SEQ_AND_NODE: u64 = 0x8080_8080_8080_8080;
const MAX_CLOCK_SEQ_AND_NODE: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian `(year, month, day)` of a day count since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Whether `day` exists in `month` of `year`.
pub fn is_valid_civil(year: i64, month: u32, day: u32) -> bool {
    if !(1..=12).contains(&month) || day == 0 {
        return false;
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let max = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    day <= max
}

/// Days since the epoch of a raw `date` value.
pub fn date_to_days(raw: u32) -> i64 {
    i64::from(raw) - i64::from(DATE_EPOCH_RAW)
}

/// The raw `date` value for a day count since the epoch, if it is in range.
pub fn days_to_date(days: i64) -> Option<u32> {
    u32::try_from(days + i64::from(DATE_EPOCH_RAW)).ok()
}

/// Current wall-clock time in milliseconds since the epoch.
pub fn now_ms() -> i64 {
    now_micros().div_euclid(1000)
}

/// Current wall-clock time in microseconds since the epoch (Cassandra's write-timestamp unit).
pub fn now_micros() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_micros()).unwrap_or(i64::MAX),
    }
}

/// UUID timestamp (100 ns units since 1582-10-15) of a Unix millisecond time.
fn uuid_ticks_from_unix_ms(ms: i64) -> i64 {
    ms.saturating_add(UUID_EPOCH_OFFSET_MS)
        .saturating_mul(10_000)
}

/// The high 64 bits of a version-1 UUID for a 60-bit timestamp (Cassandra's `createTime`).
fn time_msb(ticks: i64) -> u64 {
    let t = ticks as u64;
    ((t & 0xffff_ffff) << 32)
        | ((t & 0x0000_ffff_0000_0000) >> 16)
        | ((t & 0x0fff_0000_0000_0000) >> 48)
        | 0x1000
}

/// The 60-bit timestamp (100 ns units since 1582-10-15) of a version-1 UUID.
pub fn timeuuid_ticks(u: &Uuid) -> i64 {
    let msb = (u.as_u128() >> 64) as u64;
    (((msb & 0x0fff) << 48) | (((msb >> 16) & 0xffff) << 32) | (msb >> 32)) as i64
}

/// Unix milliseconds of a version-1 UUID (`toUnixTimestamp(timeuuid)`).
pub fn timeuuid_to_unix_ms(u: &Uuid) -> i64 {
    // Cassandra goes through microseconds and divides by 1000 with Java's truncation, so a
    // pre-1970 uuid rounds towards the epoch (1582's first uuid is ...773156, not ...773157).
    let micros = timeuuid_ticks(u) / 10 - UUID_EPOCH_OFFSET_MS * 1000;
    micros / 1000
}

/// The smallest timeuuid (under TimeUUIDType ordering) at `ms`: Cassandra's `minTimeuuid`.
pub fn min_timeuuid(ms: i64) -> Uuid {
    Uuid::from_u64_pair(
        time_msb(uuid_ticks_from_unix_ms(ms)),
        MIN_CLOCK_SEQ_AND_NODE,
    )
}

/// The greatest timeuuid at `ms`: Cassandra's `maxTimeuuid`.
pub fn max_timeuuid(ms: i64) -> Uuid {
    Uuid::from_u64_pair(
        time_msb(uuid_ticks_from_unix_ms(ms.saturating_add(1)) - 1),
        MAX_CLOCK_SEQ_AND_NODE,
    )
}

/// Random clock sequence and node for this process (RFC 4122 variant bits, multicast bit set
/// on the node as the RFC asks for random nodes).
fn clock_seq_and_node() -> u64 {
    static LSB: OnceLock<u64> = OnceLock::new();
    *LSB.get_or_init(|| {
        let mut h = RandomState::new().build_hasher();
        h.write_i64(now_micros());
        h.write_u32(std::process::id());
        let r = h.finish();
        (r & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000 | 0x0000_0100_0000_0000
    })
}

/// A new version-1 UUID for `now()` on the system clock: strictly increasing timestamps within
/// the process, so two calls never return equal or out-of-order values. A node uses its own
/// `TimeUuids` on its injected clock instead.
pub fn new_timeuuid() -> Uuid {
    static SYSTEM: OnceLock<TimeUuids> = OnceLock::new();
    SYSTEM
        .get_or_init(|| TimeUuids::new(crate::clock::SystemClock::shared()))
        .next()
}

/// Version-1 UUIDs for `now()` and the like from an injected clock: strictly increasing within one
/// generator (a node owns one), with this process's clock sequence and node.
#[derive(Debug)]
pub struct TimeUuids {
    clock: crate::clock::SharedClock,
    last_ticks: AtomicI64,
}

impl TimeUuids {
    pub fn new(clock: crate::clock::SharedClock) -> Self {
        TimeUuids {
            clock,
            last_ticks: AtomicI64::new(0),
        }
    }

    /// A time UUID at the clock's time, after every one this generator issued before.
    pub fn next(&self) -> Uuid {
        let micros = self.clock.wall_micros().max(0);
        let now = uuid_ticks_from_unix_ms(0).saturating_add(micros.saturating_mul(10));
        timeuuid_at_ticks(crate::clock::advance_past(&self.last_ticks, now))
    }
}

/// The version-1 UUID of a UUID timestamp (100 ns units since 1582-10-15) with this process's
/// clock sequence and node.
pub fn timeuuid_at_ticks(ticks: i64) -> Uuid {
    Uuid::from_u64_pair(time_msb(ticks), clock_seq_and_node())
}

/// A version-1 UUID at a given Unix millisecond time with this process's clock sequence and
/// node (used by `now()`-like functions that take an explicit time).
pub fn timeuuid_at_unix_ms(ms: i64) -> Uuid {
    Uuid::from_u64_pair(time_msb(uuid_ticks_from_unix_ms(ms)), clock_seq_and_node())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_uuids_follow_the_injected_clock_and_never_repeat() {
        let clock = std::sync::Arc::new(crate::clock::ManualClock::new(1_600_000_000_000_000));
        let uuids = TimeUuids::new(clock.clone());
        let a = uuids.next();
        let b = uuids.next();
        assert_eq!(timeuuid_to_unix_ms(&a), 1_600_000_000_000);
        assert!(
            timeuuid_ticks(&b) > timeuuid_ticks(&a),
            "same clock reading, still increasing"
        );
        clock.advance(std::time::Duration::from_secs(1));
        assert_eq!(timeuuid_to_unix_ms(&uuids.next()), 1_600_000_001_000);
    }

    #[test]
    fn civil_round_trips_around_the_epoch_and_far_away() {
        for days in [-719_468i64 * 3, -1, 0, 1, 59, 60, 11_016, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(days_from_civil(2011, 2, 3), 15_008);
        assert_eq!(civil_from_days(0), (1970, 1, 1));
    }

    #[test]
    fn timeuuid_timestamp_round_trips() {
        let ms = 1_700_000_000_123;
        assert_eq!(timeuuid_to_unix_ms(&timeuuid_at_unix_ms(ms)), ms);
        assert_eq!(timeuuid_to_unix_ms(&min_timeuuid(ms)), ms);
        assert_eq!(timeuuid_to_unix_ms(&max_timeuuid(ms)), ms);
        assert_eq!(min_timeuuid(ms).get_version_num(), 1);
    }

    #[test]
    fn new_timeuuids_are_strictly_increasing() {
        let mut prev = timeuuid_ticks(&new_timeuuid());
        for _ in 0..1000 {
            let t = timeuuid_ticks(&new_timeuuid());
            assert!(t > prev);
            prev = t;
        }
    }

    #[test]
    fn min_timeuuid_sorts_first_and_max_last() {
        use crate::compare_serialized;
        use std::cmp::Ordering;
        let t = crate::CqlType::Native(crate::NativeType::Timeuuid);
        let ms = 1_600_000_000_000;
        let mid = timeuuid_at_unix_ms(ms);
        assert_eq!(
            compare_serialized(&t, min_timeuuid(ms).as_bytes(), mid.as_bytes()),
            Ordering::Less
        );
        assert_eq!(
            compare_serialized(&t, max_timeuuid(ms).as_bytes(), mid.as_bytes()),
            Ordering::Greater
        );
    }
}
