//! How fast compactions have been writing lately: bytes per second over the last 1, 5 and 15
//! minutes, averaged as the Dropwizard `Meter` behind Cassandra's `BytesCompactedThroughput`
//! does (exponentially weighted, ticked every 5 s), so `nodetool getcompactionthroughput` shows
//! the same three figures with the same inertia.

use std::time::{Duration, Instant};

const TICK: Duration = Duration::from_secs(5);
const WINDOWS_MINUTES: [f64; 3] = [1.0, 5.0, 15.0];
/// Ticks after which every average has decayed to nothing (an idle node's first look after
/// hours need not replay each 5 s of it).
const MAX_TICKS: u64 = 2_000;

pub(crate) struct RateMeter {
    state: parking_lot::Mutex<MeterState>,
}

struct MeterState {
    /// Bytes marked since the last tick.
    uncounted: u64,
    last_tick: Instant,
    /// Bytes per second, one per window.
    rates: [f64; 3],
    /// Whether a tick has set the rates (the first sets them to its own rate).
    started: bool,
}

impl RateMeter {
    pub(crate) fn new_at(at: Instant) -> Self {
        RateMeter {
            state: parking_lot::Mutex::new(MeterState {
                uncounted: 0,
                last_tick: at,
                rates: [0.0; 3],
                started: false,
            }),
        }
    }

    pub(crate) fn mark(&self, bytes: u64, now: Instant) {
        let mut s = self.state.lock();
        s.tick_to(now);
        s.uncounted = s.uncounted.saturating_add(bytes);
    }

    /// Bytes per second over the last 1, 5 and 15 minutes.
    pub(crate) fn rates(&self, now: Instant) -> [f64; 3] {
        let mut s = self.state.lock();
        s.tick_to(now);
        s.rates
    }
}

impl MeterState {
    fn tick_to(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last_tick);
        let ticks = (elapsed.as_nanos() / TICK.as_nanos()) as u64;
        if ticks == 0 {
            return;
        }
        for _ in 0..ticks.min(MAX_TICKS) {
            let instant = self.uncounted as f64 / TICK.as_secs_f64();
            self.uncounted = 0;
            for (rate, minutes) in self.rates.iter_mut().zip(WINDOWS_MINUTES) {
                if self.started {
                    let alpha = 1.0 - (-TICK.as_secs_f64() / 60.0 / minutes).exp();
                    *rate += alpha * (instant - *rate);
                } else {
                    *rate = instant;
                }
            }
            self.started = true;
        }
        // Ticks beyond those replayed saw nothing: each keeps (1 - alpha) of a rate.
        let idle = ticks.saturating_sub(MAX_TICKS) as f64;
        for (rate, minutes) in self.rates.iter_mut().zip(WINDOWS_MINUTES) {
            *rate *= (-TICK.as_secs_f64() / 60.0 / minutes * idle).exp();
        }
        self.last_tick += TICK * u32::try_from(ticks).unwrap_or(u32::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: f64 = 1048576.0;

    #[test]
    fn a_steady_rate_shows_in_every_window_and_decays_by_window_once_it_stops() {
        let t0 = Instant::now();
        let m = RateMeter::new_at(t0);
        // 10 MiB/s for 20 minutes, marked once a second.
        for s in 1..=1200u64 {
            m.mark(10 << 20, t0 + Duration::from_secs(s));
        }
        let end = t0 + Duration::from_secs(1200);
        let r = m.rates(end);
        assert!((r[0] / MIB - 10.0).abs() < 0.1, "{r:?}");
        assert!((r[1] / MIB - 10.0).abs() < 0.2, "{r:?}");
        assert!(r[2] / MIB > 7.0 && r[2] / MIB < 10.1, "{r:?}");
        // Two idle minutes: the 1-minute average is mostly gone, the 15-minute one is not.
        let r = m.rates(end + Duration::from_secs(120));
        assert!(r[0] / MIB < 2.0, "{r:?}");
        assert!(r[2] / MIB > 6.0, "{r:?}");
        assert!(r[0] < r[1] && r[1] < r[2], "{r:?}");
    }

    #[test]
    fn nothing_marked_is_zero_and_hours_idle_take_no_time() {
        let t0 = Instant::now();
        let m = RateMeter::new_at(t0);
        assert_eq!(m.rates(t0 + Duration::from_secs(60)), [0.0; 3]);
        m.mark(1 << 30, t0 + Duration::from_secs(61));
        let later = t0 + Duration::from_secs(86_400);
        let r = m.rates(later);
        assert!(r.iter().all(|x| *x < 1.0), "{r:?}");
    }
}
