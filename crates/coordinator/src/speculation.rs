//! When a read sends a duplicate request to a spare replica (the table's `speculative_retry`,
//! Cassandra's `SpeculativeRetryPolicy`): never (`NONE`), at once (`ALWAYS`), after a fixed
//! delay (`50ms`), after a percentile of how long the table's replicas take to answer (`99p`,
//! the default), or the smaller or larger of a percentile and a delay (`MIN(99p,50ms)`).
//!
//! The percentile is of replica answer times as this coordinator sees them, over the last one
//! to two seconds. Requests to a replica that never answers (dead, not yet convicted) are not
//! counted, so the threshold stays what healthy replicas take and a read that went to the
//! silent one moves on after a few milliseconds instead of a fixed 100 ms.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One side of a policy: a delay, or a percentile of the table's replica answer times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    Fixed(Duration),
    Percentile(f64),
}

/// A table's `speculative_retry`, parsed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SpeculativeRetry {
    Never,
    Always,
    After(Threshold),
    Min(Threshold, Threshold),
    Max(Threshold, Threshold),
}

impl Default for SpeculativeRetry {
    fn default() -> Self {
        SpeculativeRetry::After(Threshold::Percentile(99.0))
    }
}

/// Cassandra's refusal of a value it cannot parse.
fn invalid(text: &str) -> String {
    format!("Invalid value {text} for option 'speculative_retry'")
}

fn parse_threshold(text: &str, whole: &str) -> Result<Threshold, String> {
    let lower = text.trim().to_ascii_lowercase();
    let (number, percentile) = if let Some(n) = lower.strip_suffix("percentile") {
        (n, true)
    } else if let Some(n) = lower.strip_suffix("ms") {
        (n, false)
    } else if let Some(n) = lower.strip_suffix('p') {
        (n, true)
    } else {
        return Err(invalid(whole));
    };
    let value: f64 = number.trim().parse().map_err(|_| invalid(whole))?;
    if !value.is_finite() || value < 0.0 {
        return Err(invalid(whole));
    }
    if percentile {
        if value <= 0.0 || value > 100.0 {
            return Err(format!(
                "Invalid value {whole} for PERCENTILE option 'speculative_retry': must be between (0.0 and 100.0]"
            ));
        }
        return Ok(Threshold::Percentile(value));
    }
    Ok(Threshold::Fixed(Duration::from_micros(
        (value * 1000.0) as u64,
    )))
}

impl SpeculativeRetry {
    /// Parses a `speculative_retry` value as Cassandra accepts it (any case).
    pub fn parse(text: &str) -> Result<SpeculativeRetry, String> {
        let trimmed = text.trim();
        let upper = trimmed.to_ascii_uppercase();
        match upper.as_str() {
            "NONE" => return Ok(SpeculativeRetry::Never),
            "ALWAYS" => return Ok(SpeculativeRetry::Always),
            _ => {}
        }
        for (name, min) in [("MIN(", true), ("MAX(", false)] {
            let Some(inner) = upper.strip_prefix(name).and_then(|r| r.strip_suffix(')')) else {
                continue;
            };
            let (a, b) = inner.split_once(',').ok_or_else(|| invalid(trimmed))?;
            let (a, b) = (parse_threshold(a, trimmed)?, parse_threshold(b, trimmed)?);
            return Ok(if min {
                SpeculativeRetry::Min(a, b)
            } else {
                SpeculativeRetry::Max(a, b)
            });
        }
        parse_threshold(trimmed, trimmed).map(SpeculativeRetry::After)
    }

    /// The delay before a duplicate request, given the table's answer times; `None` never.
    pub fn delay(&self, latencies: &AnswerTimes) -> Option<Duration> {
        let of = |t: &Threshold| match t {
            Threshold::Fixed(d) => *d,
            Threshold::Percentile(p) => latencies.percentile(*p),
        };
        match self {
            SpeculativeRetry::Never => None,
            SpeculativeRetry::Always => Some(Duration::ZERO),
            SpeculativeRetry::After(t) => Some(of(t)),
            SpeculativeRetry::Min(a, b) => Some(of(a).min(of(b))),
            SpeculativeRetry::Max(a, b) => Some(of(a).max(of(b))),
        }
    }
}

fn threshold_text(t: &Threshold) -> String {
    match t {
        Threshold::Fixed(d) => format!("{}ms", d.as_millis()),
        Threshold::Percentile(p) => format!("{}p", trim_number(*p)),
    }
}

/// Up to four decimals without trailing zeros, as Cassandra's `#.####` prints a percentile.
fn trim_number(v: f64) -> String {
    let text = format!("{v:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

impl std::fmt::Display for SpeculativeRetry {
    /// The form Cassandra stores and shows (`99p`, `50ms`, `MIN(99p,50ms)`, `NONE`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpeculativeRetry::Never => f.write_str("NONE"),
            SpeculativeRetry::Always => f.write_str("ALWAYS"),
            SpeculativeRetry::After(t) => f.write_str(&threshold_text(t)),
            SpeculativeRetry::Min(a, b) => {
                write!(f, "MIN({},{})", threshold_text(a), threshold_text(b))
            }
            SpeculativeRetry::Max(a, b) => {
                write!(f, "MAX({},{})", threshold_text(a), threshold_text(b))
            }
        }
    }
}

/// Buckets: microseconds below 16 exactly, then eight per power of two (12.5% wide) up to
/// about 35 minutes, far past any request timeout.
const EXACT: usize = 16;
const PER_OCTAVE: usize = 8;
const BUCKETS: usize = EXACT + (41 - 4) * PER_OCTAVE;
/// A window's answers stop counting after two windows.
const WINDOW: Duration = Duration::from_secs(1);
/// The percentile is computed again at most this often; reads use the cached value between.
const REFRESH: Duration = Duration::from_millis(100);
/// The delay before anything has been measured (a fresh node or table).
const UNMEASURED: Duration = Duration::from_millis(100);

fn bucket_of(micros: u64) -> usize {
    if micros < EXACT as u64 {
        return micros as usize;
    }
    let octave = 63 - micros.leading_zeros() as usize; // >= 4
    let sub = ((micros >> (octave - 3)) & 7) as usize;
    (EXACT + (octave - 4) * PER_OCTAVE + sub).min(BUCKETS - 1)
}

/// The largest value a bucket holds (a percentile reports its bucket's upper end).
fn bucket_top(bucket: usize) -> u64 {
    if bucket < EXACT {
        return bucket as u64;
    }
    let octave = (bucket - EXACT) / PER_OCTAVE + 4;
    let sub = ((bucket - EXACT) % PER_OCTAVE) as u64;
    ((8 + sub + 1) << (octave - 3)) - 1
}

struct Window {
    counts: Vec<AtomicU64>,
}

impl Window {
    fn new() -> Self {
        Window {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

/// Which window records, and since when.
struct Clock {
    current: usize,
    started: Instant,
}

/// A table's replica answer times over the last one to two seconds. Recording is one atomic
/// add; the percentile is recomputed at most every 100 ms by the read that finds it stale.
pub struct AnswerTimes {
    windows: [Window; 2],
    current: AtomicU64,
    clock: Mutex<Clock>,
    /// The percentile last computed (in hundredths) and its value in microseconds + 1 (0:
    /// nothing cached yet).
    cached_p: AtomicU64,
    cached_micros: AtomicU64,
    /// When the cached value was computed, in microseconds since `born`: reads check it
    /// without taking the lock.
    refreshed_at: AtomicU64,
    born: Instant,
}

impl Default for AnswerTimes {
    fn default() -> Self {
        let now = Instant::now();
        AnswerTimes {
            windows: [Window::new(), Window::new()],
            current: AtomicU64::new(0),
            clock: Mutex::new(Clock {
                current: 0,
                started: now,
            }),
            cached_p: AtomicU64::new(u64::MAX),
            cached_micros: AtomicU64::new(0),
            refreshed_at: AtomicU64::new(0),
            born: now,
        }
    }
}

impl AnswerTimes {
    /// One replica's answer, `took` after the request was sent.
    pub fn record(&self, took: Duration) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let window = (self.current.load(Ordering::Relaxed) & 1) as usize;
        if let Some(count) = self.windows[window].counts.get(bucket_of(micros)) {
            count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The `p`th percentile of the recent answers ([`UNMEASURED`] before any).
    pub fn percentile(&self, p: f64) -> Duration {
        let key = (p * 100.0) as u64;
        if self.cached_p.load(Ordering::Acquire) == key {
            let micros = self.cached_micros.load(Ordering::Relaxed);
            if micros > 0 {
                let age = self
                    .micros_since_born()
                    .saturating_sub(self.refreshed_at.load(Ordering::Relaxed));
                // Stale: the first read to get the lock recomputes; the others use the old value.
                if age >= REFRESH.as_micros() as u64 {
                    if let Some(mut clock) = self.clock.try_lock() {
                        return self.refresh(&mut clock, p, key);
                    }
                }
                return Duration::from_micros(micros - 1);
            }
        }
        let mut clock = self.clock.lock();
        self.refresh(&mut clock, p, key)
    }

    fn micros_since_born(&self) -> u64 {
        u64::try_from(self.born.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn refresh(&self, clock: &mut Clock, p: f64, key: u64) -> Duration {
        let now = Instant::now();
        if now.duration_since(clock.started) >= WINDOW {
            // The older window is emptied and records from now on.
            let older = 1 - clock.current;
            for c in &self.windows[older].counts {
                c.store(0, Ordering::Relaxed);
            }
            clock.current = older;
            clock.started = now;
            self.current.store(older as u64, Ordering::Relaxed);
        }
        self.refreshed_at
            .store(self.micros_since_born(), Ordering::Relaxed);
        let totals: Vec<u64> = (0..BUCKETS)
            .map(|b| {
                self.windows[0].counts[b].load(Ordering::Relaxed)
                    + self.windows[1].counts[b].load(Ordering::Relaxed)
            })
            .collect();
        let all: u64 = totals.iter().sum();
        let value = if all == 0 {
            UNMEASURED
        } else {
            let rank = ((p / 100.0) * all as f64).ceil().max(1.0) as u64;
            let mut seen = 0;
            let bucket = totals
                .iter()
                .position(|c| {
                    seen += c;
                    seen >= rank
                })
                .unwrap_or(BUCKETS - 1);
            Duration::from_micros(bucket_top(bucket))
        };
        self.cached_micros.store(
            u64::try_from(value.as_micros()).unwrap_or(u64::MAX - 1) + 1,
            Ordering::Relaxed,
        );
        self.cached_p.store(key, Ordering::Release);
        value
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn values_parse_as_cassandra_accepts_them_and_print_as_it_stores_them() {
        for (input, shown) in [
            ("99p", "99p"),
            ("99PERCENTILE", "99p"),
            ("99.5p", "99.5p"),
            ("50ms", "50ms"),
            ("50MS", "50ms"),
            ("none", "NONE"),
            ("ALWAYS", "ALWAYS"),
            ("min(99p,50ms)", "MIN(99p,50ms)"),
            ("MAX(90p, 10ms)", "MAX(90p,10ms)"),
        ] {
            let parsed = SpeculativeRetry::parse(input).unwrap();
            assert_eq!(parsed.to_string(), shown, "{input}");
            assert_eq!(SpeculativeRetry::parse(shown).unwrap(), parsed);
        }
        for bad in [
            "",
            "99",
            "fast",
            "101p",
            "0p",
            "-5ms",
            "MIN(99p)",
            "MIN(99p,x)",
        ] {
            let e = SpeculativeRetry::parse(bad).unwrap_err();
            assert!(e.starts_with("Invalid value"), "{bad}: {e}");
        }
    }

    #[test]
    fn buckets_cover_their_values_within_an_eighth() {
        for v in [
            0u64, 1, 15, 16, 17, 100, 1_000, 12_345, 1_000_000, 60_000_000,
        ] {
            let b = bucket_of(v);
            assert!(bucket_top(b) >= v, "{v}: top {}", bucket_top(b));
            assert!(bucket_top(b) <= v + v / 8 + 1, "{v}: top {}", bucket_top(b));
            if b > 0 {
                assert!(bucket_top(b - 1) < v, "{v}");
            }
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn the_threshold_follows_what_replicas_take() {
        let times = AnswerTimes::default();
        assert_eq!(times.percentile(99.0), UNMEASURED);
        for i in 0..1000u64 {
            // 99% answer within 1 ms, 1% take 40 ms.
            let took = if i % 100 == 0 { 40_000 } else { 200 + i % 800 };
            times.record(Duration::from_micros(took));
        }
        std::thread::sleep(REFRESH);
        let p99 = times.percentile(99.0);
        assert!(
            p99 >= Duration::from_micros(990) && p99 <= Duration::from_micros(1200),
            "{p99:?}"
        );
        let p50 = times.percentile(50.0);
        assert!(p50 < p99, "{p50:?} {p99:?}");
        let policy = SpeculativeRetry::parse("MIN(99p,500us)");
        assert!(policy.is_err());
        let policy = SpeculativeRetry::parse("MAX(99p,5ms)").unwrap();
        assert_eq!(policy.delay(&times), Some(Duration::from_millis(5)));
        assert_eq!(SpeculativeRetry::Never.delay(&times), None);
    }

    #[test]
    fn old_answers_stop_counting() {
        let times = AnswerTimes::default();
        for _ in 0..100 {
            times.record(Duration::from_millis(80));
        }
        assert!(times.percentile(99.0) >= Duration::from_millis(80));
        // Two window turns later only the new, fast answers count.
        for _ in 0..2 {
            std::thread::sleep(WINDOW + Duration::from_millis(10));
            for _ in 0..100 {
                times.record(Duration::from_micros(500));
            }
            times.percentile(99.0);
        }
        assert!(times.percentile(99.0) < Duration::from_millis(1));
    }
}
