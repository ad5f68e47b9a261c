//! Phi-accrual failure detection as Cassandra does it (`FailureDetector`/`ArrivalWindow`): each
//! peer's heartbeat inter-arrival times are kept in a bounded window, and
//! `phi = PHI_FACTOR * (now - last arrival) / mean interval` is compared with
//! `phi_convict_threshold`. Cassandra's PHI_FACTOR (1/ln 10) assumes exponentially distributed
//! arrivals; with one-second gossip and the default threshold of 8 a silent peer is convicted after
//! about 18 seconds.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use helenus_types::SharedClock;

use crate::locator::NodeId;

/// Cassandra's `1 / ln(10)`.
const PHI_FACTOR: f64 = std::f64::consts::LOG10_E;
/// Samples kept per peer (Cassandra's SAMPLE_SIZE).
const SAMPLE_SIZE: usize = 1000;

/// Settings, with Cassandra's names and defaults.
#[derive(Clone, Debug)]
pub struct FailureDetectorConfig {
    /// `phi_convict_threshold` (cassandra.yaml, default 8).
    pub phi_convict_threshold: f64,
    /// The interval assumed before any has been measured and the longest one recorded
    /// (`cassandra.fd_initial_value_ms`/`fd_max_interval_ms`: twice the gossip interval).
    pub initial_interval: Duration,
}

impl Default for FailureDetectorConfig {
    fn default() -> Self {
        FailureDetectorConfig {
            phi_convict_threshold: 8.0,
            initial_interval: Duration::from_secs(2),
        }
    }
}

#[derive(Debug)]
struct ArrivalWindow {
    last_nanos: u64,
    intervals: VecDeque<u64>,
    sum: u128,
}

impl ArrivalWindow {
    fn new(now: u64, initial: u64) -> Self {
        // A large first interval errs toward false negatives (a late conviction) rather than
        // flapping before the real rhythm is known.
        ArrivalWindow {
            last_nanos: now,
            intervals: VecDeque::from([initial]),
            sum: u128::from(initial),
        }
    }

    fn add(&mut self, now: u64, max_interval: u64) {
        let interval = now.saturating_sub(self.last_nanos);
        // A long partition must not teach the detector to wait that long next time.
        if interval <= max_interval {
            if self.intervals.len() == SAMPLE_SIZE {
                if let Some(old) = self.intervals.pop_front() {
                    self.sum -= u128::from(old);
                }
            }
            self.intervals.push_back(interval);
            self.sum += u128::from(interval);
        }
        self.last_nanos = now;
    }

    fn phi(&self, now: u64) -> f64 {
        let mean = self.sum as f64 / self.intervals.len().max(1) as f64;
        if mean <= 0.0 {
            return 0.0;
        }
        PHI_FACTOR * now.saturating_sub(self.last_nanos) as f64 / mean
    }
}

/// Heartbeat arrivals per peer and the verdict on each.
#[derive(Debug)]
pub struct FailureDetector {
    config: FailureDetectorConfig,
    clock: SharedClock,
    windows: HashMap<NodeId, ArrivalWindow>,
}

impl FailureDetector {
    pub fn new(config: FailureDetectorConfig, clock: SharedClock) -> Self {
        FailureDetector {
            config,
            clock,
            windows: HashMap::new(),
        }
    }

    /// A heartbeat from `peer` arrived now (its gossip version moved).
    pub fn report(&mut self, peer: NodeId) {
        let now = self.clock.monotonic_nanos();
        let initial = u64::try_from(self.config.initial_interval.as_nanos()).unwrap_or(u64::MAX);
        self.windows
            .entry(peer)
            .and_modify(|w| w.add(now, initial))
            .or_insert_with(|| ArrivalWindow::new(now, initial));
    }

    /// The current suspicion of `peer`; `None` if it was never heard from.
    pub fn phi(&self, peer: NodeId) -> Option<f64> {
        let now = self.clock.monotonic_nanos();
        self.windows.get(&peer).map(|w| w.phi(now))
    }

    /// Whether `peer` is considered up: heard from, and phi under the threshold.
    pub fn is_alive(&self, peer: NodeId) -> bool {
        self.phi(peer)
            .is_some_and(|phi| phi < self.config.phi_convict_threshold)
    }

    /// Forgets a peer (it left the ring, or restarted with a new generation).
    pub fn remove(&mut self, peer: NodeId) {
        self.windows.remove(&peer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use helenus_types::ManualClock;
    use std::sync::Arc;
    use uuid::Uuid;

    fn peer() -> NodeId {
        NodeId(Uuid::from_u128(7))
    }

    #[test]
    fn a_peer_beating_every_second_is_convicted_after_about_eighteen_silent_seconds() {
        let clock = Arc::new(ManualClock::new(0));
        let mut fd = FailureDetector::new(FailureDetectorConfig::default(), clock.clone());
        assert!(!fd.is_alive(peer()), "never heard from");
        for _ in 0..200 {
            fd.report(peer());
            clock.advance(Duration::from_secs(1));
        }
        assert!(fd.is_alive(peer()));
        // The mean interval is about 1 s: phi reaches 8 at 8 / 0.434 = 18.4 s of silence.
        clock.advance(Duration::from_secs(16));
        assert!(fd.is_alive(peer()), "phi {:?}", fd.phi(peer()));
        clock.advance(Duration::from_secs(3));
        assert!(!fd.is_alive(peer()), "phi {:?}", fd.phi(peer()));
        fd.report(peer());
        assert!(fd.is_alive(peer()), "a heartbeat revives it");
    }

    #[test]
    fn a_long_gap_is_not_learned_as_the_normal_interval() {
        let clock = Arc::new(ManualClock::new(0));
        let mut fd = FailureDetector::new(FailureDetectorConfig::default(), clock.clone());
        for _ in 0..50 {
            fd.report(peer());
            clock.advance(Duration::from_millis(500));
        }
        clock.advance(Duration::from_secs(60));
        fd.report(peer());
        // Mean 0.53 s: 10 s of silence is phi 8.2. Had the 60 s gap been recorded, the mean would
        // be 1.7 s and phi 2.5.
        clock.advance(Duration::from_secs(10));
        assert!(!fd.is_alive(peer()), "phi {:?}", fd.phi(peer()));
    }

    #[test]
    fn a_lower_threshold_convicts_sooner() {
        let clock = Arc::new(ManualClock::new(0));
        let config = FailureDetectorConfig {
            phi_convict_threshold: 2.0,
            initial_interval: Duration::from_millis(200),
        };
        let mut fd = FailureDetector::new(config, clock.clone());
        for _ in 0..20 {
            fd.report(peer());
            clock.advance(Duration::from_millis(100));
        }
        // Mean 105 ms: phi 2 after 484 ms of silence (100 ms have passed since the last beat).
        clock.advance(Duration::from_millis(300));
        assert!(fd.is_alive(peer()));
        clock.advance(Duration::from_millis(200));
        assert!(!fd.is_alive(peer()));
    }
}
