//! The compaction backlog controller: how fast, and at what CPU priority, background compaction
//! runs, so that foreground latency stays flat.
//!
//! * Priority: compaction threads (and the writer threads they start) run at a lower
//!   scheduling priority (`nice`), so on a busy node requests get the CPU first and compaction
//!   takes what is left, which is what Cassandra's compaction executor asks of the JVM with its
//!   minimum thread priority. Flushes keep the normal priority: writes wait on them.
//! * Rate: a background compaction writes at most `compaction_throughput` while the table holds
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
pub(crate) fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority take no pointers; they only read and set the calling
    // thread's scheduling attributes.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, COMPACTION_NICE);
    }
}

/// Keeps a writer under a rate that may change while it runs.
pub(crate) struct Throttle<'a> {
    rate: &'a dyn Fn() -> u64,
    current: u64,
    /// Start of the current rate's period and the bytes written when it began.
    since: Instant,
    since_written: u64,
    next_check: u64,
}

impl<'a> Throttle<'a> {
    pub(crate) fn new(rate: &'a dyn Fn() -> u64) -> Self {
        Throttle {
            current: rate(),
            rate,
            since: Instant::now(),
            since_written: 0,
            next_check: RECHECK_BYTES,
        }
    }

    /// The rate in force (MiB/s, 0 = unlimited).
    #[cfg(test)]
    fn current(&self) -> u64 {
        self.current
    }

    /// Called with the total bytes written so far; sleeps while ahead of the rate.
    pub(crate) fn wrote(&mut self, written: u64) {
        if written >= self.next_check {
            self.next_check = written + RECHECK_BYTES;
            let rate = (self.rate)();
            if rate != self.current {
                self.current = rate;
                self.since = Instant::now();
                self.since_written = written;
            }
        }
        if self.current == 0 {
            return;
        }
        let due = (written - self.since_written) as f64 / (self.current as f64 * 1048576.0);
        if let Some(wait) = Duration::from_secs_f64(due).checked_sub(self.since.elapsed()) {
            std::thread::sleep(wait.min(Duration::from_secs(1)));
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
        let mut t = Throttle::new(&read);
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
}
