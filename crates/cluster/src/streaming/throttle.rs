//! The outbound stream throttle (Cassandra's `stream_throughput_outbound`): one token bucket per
//! node, shared by every session that sends stream data, so a node streaming to several peers
//! at once stays under one rate in total, as Cassandra's global limiter does.
//!
//! A sender asks for a page's bytes before it sends the page. The bucket may go into debt: a
//! page larger than the burst passes, and the senders after it wait until the debt is paid, so
//! the long-run rate is the configured one whatever the page sizes.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// How much unused rate a quiet bucket keeps: 100 ms worth, so an idle stream does not earn a
/// long burst over the limit when it starts again.
const BURST_SECONDS: f64 = 0.1;

/// A shared token bucket; a rate of 0 means unthrottled.
#[derive(Debug)]
pub struct StreamThrottle {
    rate_bytes_per_s: AtomicU64,
    bucket: Mutex<Bucket>,
}

#[derive(Debug)]
struct Bucket {
    /// Bytes that may be sent now; negative while senders are paying a debt.
    available_bytes: f64,
    refilled_at: Instant,
}

impl StreamThrottle {
    pub fn new(rate_bytes_per_s: u64) -> StreamThrottle {
        StreamThrottle {
            rate_bytes_per_s: AtomicU64::new(rate_bytes_per_s),
            bucket: Mutex::new(Bucket {
                available_bytes: 0.0,
                refilled_at: Instant::now(),
            }),
        }
    }

    pub fn rate_bytes_per_s(&self) -> u64 {
        self.rate_bytes_per_s.load(Ordering::Relaxed)
    }

    /// Changes the rate (`nodetool setstreamthroughput`); the debt owed at the old rate is
    /// forgiven, so a raised limit takes effect at the next page.
    pub fn set_rate_bytes_per_s(&self, rate_bytes_per_s: u64) {
        let mut bucket = self.bucket.lock();
        self.rate_bytes_per_s
            .store(rate_bytes_per_s, Ordering::Relaxed);
        bucket.available_bytes = 0.0;
        bucket.refilled_at = Instant::now();
    }

    /// Waits until `bytes` may be sent under the rate.
    pub async fn acquire(&self, bytes: u64) {
        if let Some(wait) = self.reserve(bytes) {
            tokio::time::sleep(wait).await;
        }
    }

    /// Takes `bytes` from the bucket; how long the caller must wait before sending them.
    fn reserve(&self, bytes: u64) -> Option<Duration> {
        let rate = self.rate_bytes_per_s() as f64;
        if rate <= 0.0 {
            return None;
        }
        let mut bucket = self.bucket.lock();
        let now = Instant::now();
        let earned = now
            .saturating_duration_since(bucket.refilled_at)
            .as_secs_f64()
            * rate;
        bucket.available_bytes = (bucket.available_bytes + earned).min(rate * BURST_SECONDS);
        bucket.refilled_at = now;
        bucket.available_bytes -= bytes as f64;
        (bucket.available_bytes < 0.0)
            .then(|| Duration::from_secs_f64(-bucket.available_bytes / rate))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use std::sync::Arc;

    const MIB: u64 = 1024 * 1024;

    #[tokio::test]
    async fn the_throttle_bounds_the_rate_of_concurrent_senders() {
        // Two senders share 4 MiB/s and send 6 MiB between them in 64 KiB pages: at least
        // (6 MiB - the 0.4 MiB burst) / 4 MiB/s = 1.4 s, and not much more.
        let throttle = Arc::new(StreamThrottle::new(4 * MIB));
        let started = std::time::Instant::now();
        let senders: Vec<_> = (0..2)
            .map(|_| {
                let throttle = throttle.clone();
                tokio::spawn(async move {
                    for _ in 0..48 {
                        throttle.acquire(64 * 1024).await;
                    }
                })
            })
            .collect();
        for s in senders {
            s.await.unwrap();
        }
        let seconds = started.elapsed().as_secs_f64();
        assert!(seconds >= 1.35, "6 MiB at 4 MiB/s took only {seconds} s");
        assert!(seconds < 3.0, "6 MiB at 4 MiB/s took {seconds} s");
    }

    #[tokio::test]
    async fn a_rate_of_zero_is_unthrottled_and_a_new_rate_applies_at_once() {
        let throttle = StreamThrottle::new(0);
        let started = std::time::Instant::now();
        for _ in 0..1000 {
            throttle.acquire(MIB).await;
        }
        assert!(started.elapsed() < Duration::from_millis(200));

        // A debt owed at a low rate is forgiven when the rate is raised.
        throttle.set_rate_bytes_per_s(MIB);
        assert!(throttle.reserve(10 * MIB).is_some());
        throttle.set_rate_bytes_per_s(100 * MIB);
        let wait = throttle.reserve(MIB).unwrap_or_default();
        assert!(wait < Duration::from_millis(50), "waited {wait:?}");
    }
}
