//! The compaction backlog controller: how fast, and at what CPU priority, background compaction
//! runs, so that foreground latency stays flat.
//!
//! * Priority: compaction threads (and the writer threads they start) run at a lower
//!   scheduling priority (`nice`), so on a busy node requests get the CPU first and compaction
//!   takes what is left, which is what Cassandra's compaction executor asks of the JVM with its
//!   minimum thread priority. Flushes keep the normal priority: writes wait on them.
//! * Rate: all compactions together write at most `compaction_throughput` (one node-wide
//!   [`RateLimiter`], as Cassandra's is one Guava `RateLimiter` for the node), with up to one
//!   second of unused rate saved for a burst, as Guava's `SmoothBursty` saves it: an operator's
//!   `nodetool compact` or `garbagecollect` after an idle second starts with that much credit.
//!   A background compaction writes at most `compaction_throughput` while the table holds
//!   a normal number of SSTables (twice its min_threshold); each further min_threshold
//!   SSTables doubles the allowed rate, and beyond three doublings it is unlimited. A backlog
//!   makes every read touch more SSTables, which costs foreground latency more than compaction
//!   CPU does; without one, compaction can take its time.

use std::time::{Duration, Instant};

/// SSTables per table, in multiples of min_threshold, that compaction works through at the
/// configured rate.
const CALM_THRESHOLDS: usize = 2;
/// Doublings of the configured rate before the cap is lifted altogether.
const MAX_DOUBLINGS: usize = 3;
/// The nice value of compaction threads (0 is normal, 19 the lowest priority).
const COMPACTION_NICE: i32 = 10;
/// Bytes written between two looks at the backlog.
const RECHECK_BYTES: u64 = 4 << 20;

/// The rate (MiB/s, 0 = unlimited) for a background compaction of a table holding `sstables`.
pub(crate) fn background_rate_mib_s(cap: u64, sstables: usize, min_threshold: usize) -> u64 {
    if cap == 0 {
        return 0;
    }
    let step = min_threshold.max(2);
    let doublings = sstables
        .saturating_sub(CALM_THRESHOLDS * step)
        .div_ceil(step);
    if doublings > MAX_DOUBLINGS {
        0
    } else {
        cap.saturating_mul(1 << doublings)
    }
}

/// Lowers the calling thread's CPU priority (Linux threads have their own nice value; threads
/// it starts inherit it). Best effort: a refusal leaves the normal priority.
pub fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority take no pointers; they only read and set the calling
    // thread's scheduling attributes.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, COMPACTION_NICE);
    }
}

/// Seconds of unused rate a [`RateLimiter`] saves (Guava's `SmoothBursty` default, which
/// Cassandra's compaction limiter uses).
const BURST_S: f64 = 1.0;
/// Bytes a writer accumulates before it charges the limiter (one lock per MiB, not per
/// partition).
const CHARGE_STEP_BYTES: u64 = 1 << 20;

/// A token bucket shared by the writers it limits: credit refills at the rate of the caller
/// charging it, up to `BURST_S` of it, and goes into debt when a charge exceeds it, so writers
/// on several threads share one rate (each waits for the debt in front of it).
pub(crate) struct RateLimiter {
    bucket: parking_lot::Mutex<Bucket>,
    /// What its writers wrote, capped or not (counted a MiB at a time).
    pub(crate) meter: super::meter::RateMeter,
}

struct Bucket {
    credit_bytes: f64,
    at: Instant,
}

impl RateLimiter {
    /// A limiter with no credit at `at` (it earns its burst by staying idle, as Guava's does).
    pub(crate) fn new_at(at: Instant) -> Self {
        RateLimiter {
            bucket: parking_lot::Mutex::new(Bucket {
                credit_bytes: 0.0,
                at,
            }),
            meter: super::meter::RateMeter::new_at(at),
        }
    }

    /// Charges `bytes` at `rate_mib_s` (0 = unlimited) and returns how long the caller must
    /// wait for them.
    fn charge(&self, bytes: u64, rate_mib_s: u64, now: Instant) -> Duration {
        if rate_mib_s == 0 {
            return Duration::ZERO;
        }
        let rate_bytes_s = rate_mib_s as f64 * 1048576.0;
        let mut b = self.bucket.lock();
        let idle_s = now.saturating_duration_since(b.at).as_secs_f64();
        b.credit_bytes = (b.credit_bytes + idle_s * rate_bytes_s).min(rate_bytes_s * BURST_S);
        b.at = b.at.max(now);
        b.credit_bytes -= bytes as f64;
        if b.credit_bytes >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-b.credit_bytes / rate_bytes_s)
        }
    }
}

/// Keeps a writer under a rate that may change while it runs, through a limiter it may share.
pub(crate) struct Throttle<'a> {
    limiter: &'a RateLimiter,
    rate: &'a dyn Fn() -> u64,
    current: u64,
    /// Bytes written when the limiter was last charged.
    charged: u64,
    next_check: u64,
}

impl<'a> Throttle<'a> {
    pub(crate) fn new(limiter: &'a RateLimiter, rate: &'a dyn Fn() -> u64) -> Self {
        Throttle {
            limiter,
            current: rate(),
            rate,
            charged: 0,
            next_check: RECHECK_BYTES,
        }
    }

    /// The rate in force (MiB/s, 0 = unlimited).
    #[cfg(test)]
    fn current(&self) -> u64 {
        self.current
    }

    /// Called with the total bytes written so far; sleeps while the limiter is in debt.
    pub(crate) fn wrote(&mut self, written: u64) {
        if written >= self.next_check {
            self.next_check = written + RECHECK_BYTES;
            self.current = (self.rate)();
        }
        let due = written.saturating_sub(self.charged);
        if due < CHARGE_STEP_BYTES {
            return;
        }
        self.charged = written;
        let now = Instant::now();
        self.limiter.meter.mark(due, now);
        let wait = self.limiter.charge(due, self.current, now);
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_doubles_with_the_backlog_then_the_cap_lifts() {
        let r = |n| background_rate_mib_s(64, n, 4);
        assert_eq!((r(0), r(4), r(8)), (64, 64, 64));
        assert_eq!(
            (r(9), r(12), r(13), r(16), r(20)),
            (128, 128, 256, 256, 512)
        );
        assert_eq!((r(21), r(100)), (0, 0));
        assert_eq!(background_rate_mib_s(0, 3, 4), 0, "0 means no cap at all");
    }

    #[test]
    fn a_throttle_holds_the_rate_and_follows_its_changes() {
        let rate = std::sync::atomic::AtomicU64::new(8);
        let read = || rate.load(std::sync::atomic::Ordering::Relaxed);
        let limiter = RateLimiter::new_at(Instant::now());
        let mut t = Throttle::new(&limiter, &read);
        let start = Instant::now();
        t.wrote(1 << 20);
        // 1 MiB at 8 MiB/s is due after 125 ms.
        assert!(start.elapsed() >= Duration::from_millis(120));
        rate.store(0, std::sync::atomic::Ordering::Relaxed);
        t.wrote(RECHECK_BYTES + 1);
        assert_eq!(t.current(), 0);
        let lifted = Instant::now();
        t.wrote(64 << 20);
        assert!(lifted.elapsed() < Duration::from_millis(50));
    }

    /// Guava's SmoothBursty, which Cassandra's compaction_throughput is: a second of idle rate
    /// is credit, no more, and writers on two threads share one rate.
    #[test]
    fn an_idle_limiter_lets_one_second_through_then_holds_the_rate_for_everyone() {
        let mib = 1u64 << 20;
        let start = Instant::now();
        let limiter = RateLimiter::new_at(start);
        // Fresh: no credit, 64 MiB at 64 MiB/s wait a second.
        let wait = limiter.charge(64 * mib, 64, start);
        assert!((wait.as_secs_f64() - 1.0).abs() < 1e-6, "{wait:?}");
        // Ten idle seconds after that debt is paid earn one second of credit, not ten.
        let later = start + Duration::from_secs(11);
        assert_eq!(limiter.charge(64 * mib, 64, later), Duration::ZERO);
        let wait = limiter.charge(32 * mib, 64, later);
        assert!((wait.as_secs_f64() - 0.5).abs() < 1e-6, "{wait:?}");
        // A second writer at the same moment waits behind the first one's debt.
        let wait = limiter.charge(32 * mib, 64, later);
        assert!((wait.as_secs_f64() - 1.0).abs() < 1e-6, "{wait:?}");
        assert_eq!(limiter.charge(u64::MAX, 0, later), Duration::ZERO);
    }
}
