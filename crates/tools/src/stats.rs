//! Latency recording: HdrHistograms per operation type, per interval and for the whole run.
//!
//! Workers record into a few mutex-guarded shards (worker id modulo the shard count) so that
//! hundreds of workers neither contend on one lock nor each carry a histogram of their own.

use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;

/// Latencies are recorded in microseconds, up to one hour; longer ones saturate.
pub const LATENCY_MAX_US: u64 = 3_600_000_000;
const SIGNIFICANT_FIGURES: u8 = 3;
/// Upper bound on recording shards: enough to keep lock hold times apart on any small machine.
pub const MAX_SHARDS: usize = 16;

/// A fresh latency histogram (microseconds).
pub fn new_histogram() -> Histogram<u64> {
    // Only constants reach this call (no input does), and hdrhistogram accepts them; the unit test
    // `histogram_bounds_are_valid` pins that.
    #[allow(clippy::expect_used)]
    Histogram::new_with_bounds(1, LATENCY_MAX_US, SIGNIFICANT_FIGURES)
        .expect("constant histogram bounds are valid")
}

/// Latencies and error count of one operation type over some span of time.
#[derive(Debug, Clone)]
pub struct OpWindow {
    pub hist: Histogram<u64>,
    pub errors: u64,
}

impl OpWindow {
    fn new() -> Self {
        OpWindow {
            hist: new_histogram(),
            errors: 0,
        }
    }

    /// Adds another window's counts into this one.
    pub fn merge(&mut self, other: &OpWindow) {
        // Same bounds on both sides, so `add` cannot fail; an error would only lose counts.
        let _ = self.hist.add(&other.hist);
        self.errors += other.errors;
    }

    fn reset(&mut self) {
        self.hist.reset();
        self.errors = 0;
    }
}

/// Shared recorder for all workers of a run.
#[derive(Debug)]
pub struct Recorder {
    shards: Vec<Mutex<Vec<OpWindow>>>,
    op_count: usize,
}

impl Recorder {
    /// A recorder for `op_count` operation types and `workers` workers.
    pub fn new(op_count: usize, workers: usize) -> Self {
        let n = workers.clamp(1, MAX_SHARDS);
        let shards = (0..n)
            .map(|_| Mutex::new((0..op_count).map(|_| OpWindow::new()).collect()))
            .collect();
        Recorder { shards, op_count }
    }

    /// Records one completed request.
    pub fn record(&self, worker: usize, op: usize, latency: Duration, ok: bool) {
        let shard = &self.shards[worker % self.shards.len()];
        // A poisoned lock means a worker panicked mid-record; the counts are still usable.
        let mut windows = shard.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = windows.get_mut(op) {
            if ok {
                let us = u64::try_from(latency.as_micros())
                    .unwrap_or(u64::MAX)
                    .max(1);
                w.hist.saturating_record(us);
            } else {
                w.errors += 1;
            }
        }
    }

    /// Takes what was recorded since the last call, per operation type, and starts a new window.
    pub fn take_interval(&self) -> Vec<OpWindow> {
        let mut out: Vec<OpWindow> = (0..self.op_count).map(|_| OpWindow::new()).collect();
        for shard in &self.shards {
            let mut windows = shard.lock().unwrap_or_else(|e| e.into_inner());
            for (acc, w) in out.iter_mut().zip(windows.iter_mut()) {
                acc.merge(w);
                w.reset();
            }
        }
        out
    }
}

/// Percentiles of one window, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Summary {
    pub ops: u64,
    pub errors: u64,
    pub rate_per_s: f64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

impl Summary {
    /// Summarises `w` observed over `elapsed`.
    pub fn of(w: &OpWindow, elapsed: Duration) -> Self {
        let h = &w.hist;
        let ms = |us: u64| us as f64 / 1000.0;
        let secs = elapsed.as_secs_f64();
        Summary {
            ops: h.len(),
            errors: w.errors,
            rate_per_s: if secs > 0.0 {
                h.len() as f64 / secs
            } else {
                0.0
            },
            mean_ms: if h.is_empty() { 0.0 } else { h.mean() / 1000.0 },
            p50_ms: ms(h.value_at_quantile(0.5)),
            p90_ms: ms(h.value_at_quantile(0.9)),
            p95_ms: ms(h.value_at_quantile(0.95)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
        }
    }

    /// As a JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "ops": self.ops, "errors": self.errors, "rate_per_s": round3(self.rate_per_s),
            "latency_mean_ms": round3(self.mean_ms), "latency_p50_ms": round3(self.p50_ms),
            "latency_p90_ms": round3(self.p90_ms), "latency_p95_ms": round3(self.p95_ms),
            "latency_p99_ms": round3(self.p99_ms), "latency_p999_ms": round3(self.p999_ms),
            "latency_max_ms": round3(self.max_ms),
        })
    }
}

/// Rounds to 3 decimals so JSON output stays readable.
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Header of the per-interval progress lines (cassandra-stress's columns, minus the GC ones).
pub const PROGRESS_HEADER: &str =
    "type           total ops,    op/s,    mean,     med,     .95,     .99,    .999,     max,   time,  errors";

/// One progress line: `total_ops` so far, rates and latencies of the last interval.
pub fn progress_line(
    name: &str,
    total_ops: u64,
    s: &Summary,
    elapsed: Duration,
    total_errors: u64,
) -> String {
    format!(
        "{:<14} {:>10}, {:>7.0}, {:>7.1}, {:>7.1}, {:>7.1}, {:>7.1}, {:>7.1}, {:>7.1}, {:>6.1}, {:>7}",
        format!("{name},"),
        total_ops,
        s.rate_per_s,
        s.mean_ms,
        s.p50_ms,
        s.p95_ms,
        s.p99_ms,
        s.p999_ms,
        s.max_ms,
        elapsed.as_secs_f64(),
        total_errors
    )
}

/// CPU time (user + system) this process has used so far.
pub fn process_cpu_time() -> Duration {
    // SAFETY: getrusage only writes into the struct we pass, which is zero-initialised and
    // correctly sized for this platform's libc.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_bounds_are_valid() {
        assert!(Histogram::<u64>::new_with_bounds(1, LATENCY_MAX_US, SIGNIFICANT_FIGURES).is_ok());
    }

    #[test]
    fn intervals_are_reset_after_being_taken() {
        let r = Recorder::new(2, 40);
        for worker in 0..40 {
            r.record(worker, 0, Duration::from_millis(2), true);
        }
        r.record(3, 1, Duration::from_millis(1), false);
        let w = r.take_interval();
        assert_eq!(w[0].hist.len(), 40);
        assert_eq!(w[1].errors, 1);
        let again = r.take_interval();
        assert_eq!(again[0].hist.len(), 0);
        assert_eq!(again[1].errors, 0);
    }

    #[test]
    fn summary_reports_percentiles_in_ms() {
        let mut w = OpWindow::new();
        for ms in 1..=100u64 {
            w.hist.saturating_record(ms * 1000);
        }
        let s = Summary::of(&w, Duration::from_secs(2));
        assert_eq!(s.ops, 100);
        assert_eq!(s.rate_per_s, 50.0);
        assert!((s.p50_ms - 50.0).abs() < 0.1, "{}", s.p50_ms);
        assert!((s.p90_ms - 90.0).abs() < 0.1);
        assert!((s.p99_ms - 99.0).abs() < 0.1);
        assert!((s.max_ms - 100.0).abs() < 0.1);
    }

    #[test]
    fn huge_latencies_saturate_instead_of_failing() {
        let r = Recorder::new(1, 1);
        r.record(0, 0, Duration::from_secs(100_000), true);
        r.record(0, 7, Duration::from_secs(1), true); // unknown op index is ignored
        let w = r.take_interval();
        assert_eq!(w[0].hist.len(), 1);
    }

    #[test]
    fn cpu_time_is_monotonic() {
        let a = process_cpu_time();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        assert!(x > 0);
        assert!(process_cpu_time() >= a);
    }
}
