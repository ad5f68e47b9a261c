//! Time as a dependency: logic asks a `Clock` instead of calling `SystemTime::now()`, so tests and a
//! simulated cluster (gossip, hints, timeouts) can control it. `SystemClock` is the real one;
//! `ManualClock` moves only when told to.

use std::fmt;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Wall-clock and monotonic time.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Microseconds since the Unix epoch (Cassandra's write-timestamp unit). May jump.
    fn wall_micros(&self) -> i64;
    /// Nanoseconds since an arbitrary fixed origin; never goes backwards. For timeouts and rates.
    fn monotonic_nanos(&self) -> u64;

    /// Milliseconds since the Unix epoch.
    fn wall_ms(&self) -> i64 {
        self.wall_micros().div_euclid(1000)
    }
    /// Whole seconds since the Unix epoch (TTL and `local_deletion_time` unit).
    fn wall_secs(&self) -> i64 {
        self.wall_micros().div_euclid(1_000_000)
    }
    /// Time since the monotonic origin.
    fn monotonic(&self) -> Duration {
        Duration::from_nanos(self.monotonic_nanos())
    }
}

/// A shared clock handle.
pub type SharedClock = Arc<dyn Clock>;

/// The operating system's clocks.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl SystemClock {
    /// A shared handle to the system clock.
    pub fn shared() -> SharedClock {
        Arc::new(SystemClock)
    }
}

fn process_origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

impl Clock for SystemClock {
    fn wall_micros(&self) -> i64 {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
            Err(e) => -i64::try_from(e.duration().as_micros()).unwrap_or(i64::MAX),
        }
    }
    fn monotonic_nanos(&self) -> u64 {
        u64::try_from(process_origin().elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// A clock that moves only when told to: deterministic tests and simulated clusters.
#[derive(Debug)]
pub struct ManualClock {
    wall_micros: AtomicI64,
    monotonic_nanos: AtomicU64,
}

impl ManualClock {
    /// A clock standing at `wall_micros` on the wall and zero on the monotonic scale.
    pub fn new(wall_micros: i64) -> Self {
        ManualClock {
            wall_micros: AtomicI64::new(wall_micros),
            monotonic_nanos: AtomicU64::new(0),
        }
    }
    /// Moves both scales forward by `by`.
    pub fn advance(&self, by: Duration) {
        let nanos = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let micros = i64::try_from(by.as_micros()).unwrap_or(i64::MAX);
        self.monotonic_nanos.fetch_add(nanos, Ordering::SeqCst);
        self.wall_micros.fetch_add(micros, Ordering::SeqCst);
    }
    /// Sets the wall clock alone (it may jump backwards, as NTP can make a real one do).
    pub fn set_wall_micros(&self, wall_micros: i64) {
        self.wall_micros.store(wall_micros, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn wall_micros(&self) -> i64 {
        self.wall_micros.load(Ordering::SeqCst)
    }
    fn monotonic_nanos(&self) -> u64 {
        self.monotonic_nanos.load(Ordering::SeqCst)
    }
}

/// Write timestamps for one node: the clock's microseconds, but strictly increasing, so two writes
/// coordinated here never tie even when the wall clock stalls or steps back.
#[derive(Debug)]
pub struct WriteTimestamps {
    clock: SharedClock,
    last: AtomicI64,
}

impl WriteTimestamps {
    /// Timestamps drawn from `clock`.
    pub fn new(clock: SharedClock) -> Self {
        WriteTimestamps {
            clock,
            last: AtomicI64::new(i64::MIN),
        }
    }
    /// The next timestamp: at least the clock's time, and above every one handed out before.
    pub fn next(&self) -> i64 {
        advance_past(&self.last, self.clock.wall_micros())
    }
    /// Makes every later timestamp exceed `seen` (one issued elsewhere that outranked ours).
    pub fn observe(&self, seen: i64) {
        self.last.fetch_max(seen, Ordering::Relaxed);
    }
    /// The clock these timestamps come from.
    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }
}

/// Moves `last` to `max(now, last + 1)` atomically and returns the new value: a sequence that
/// follows a clock but never repeats or goes back.
pub(crate) fn advance_past(last: &AtomicI64, now: i64) -> i64 {
    let mut prev = last.load(Ordering::Relaxed);
    loop {
        let next = now.max(prev.saturating_add(1));
        match last.compare_exchange_weak(prev, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(p) => prev = p,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_advanced() {
        let c = ManualClock::new(1_000_000);
        assert_eq!(c.wall_micros(), 1_000_000);
        assert_eq!(c.wall_secs(), 1);
        c.advance(Duration::from_millis(1500));
        assert_eq!(c.wall_ms(), 2_500);
        assert_eq!(c.monotonic(), Duration::from_millis(1500));
    }

    #[test]
    fn write_timestamps_increase_when_the_clock_stalls_or_steps_back() {
        let clock = Arc::new(ManualClock::new(5_000));
        let ts = WriteTimestamps::new(clock.clone());
        assert_eq!(ts.next(), 5_000);
        assert_eq!(ts.next(), 5_001);
        clock.set_wall_micros(10);
        assert_eq!(ts.next(), 5_002);
        clock.set_wall_micros(9_000);
        assert_eq!(ts.next(), 9_000);
    }

    #[test]
    fn system_clock_is_near_the_os_time_and_monotonic() {
        let c = SystemClock;
        let a = c.monotonic_nanos();
        let b = c.monotonic_nanos();
        assert!(b >= a);
        let os = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(0);
        assert!((c.wall_micros() - os).abs() < 5_000_000);
    }
}
