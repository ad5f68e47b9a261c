//! When each request is due, and from when its latency counts.
//!
//! Requests are numbered by tickets handed out by one shared counter. With a fixed rate, ticket i
//! is due at `start + i / rate`, whatever happened to earlier requests (open model); a request
//! that goes out late because every worker was busy is charged the wait, so a server stall shows
//! up as latency instead of as fewer requests (coordinated-omission correction).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::options::{RateMode, StopCondition};

/// tokio's timer wheel has a 1 ms resolution: a worker wakes up to this much before its due time
/// and sends at once, instead of always sending up to 1 ms late.
pub const EARLY_SEND_SLACK: Duration = Duration::from_millis(1);

/// The request schedule for one run (or one `sla` step).
#[derive(Debug)]
pub struct Schedule {
    mode: RateMode,
    stop: StopCondition,
    start: Instant,
    interval_ns: f64,
    next_ticket: AtomicU64,
}

/// One request to send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ticket {
    /// Sequence number, from 0.
    pub index: u64,
    /// When the request is due (`None` when unpaced).
    pub due: Option<Instant>,
}

impl Schedule {
    /// A schedule starting at `start`.
    pub fn new(mode: RateMode, stop: StopCondition, start: Instant) -> Self {
        let interval_ns = match mode {
            RateMode::Unlimited => 0.0,
            RateMode::Fixed { rate_per_s } | RateMode::Throttle { rate_per_s } => {
                1e9 / rate_per_s.max(1e-9)
            }
        };
        Schedule {
            mode,
            stop,
            start,
            interval_ns,
            next_ticket: AtomicU64::new(0),
        }
    }

    /// When the run started.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// The pacing mode.
    pub fn mode(&self) -> RateMode {
        self.mode
    }

    /// The next ticket, or `None` once the run is over (`now` decides duration-bounded runs).
    pub fn next(&self, now: Instant) -> Option<Ticket> {
        let index = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        let due = self.due(index);
        match self.stop {
            StopCondition::Ops(n) if index >= n => return None,
            StopCondition::Duration(d) => {
                let end = self.start + d;
                // A paced ticket belongs to the run if it is due before the end; an unpaced one if
                // it is taken before the end.
                if due.unwrap_or(now) >= end {
                    return None;
                }
            }
            StopCondition::Ops(_) => {}
        }
        Some(Ticket { index, due })
    }

    /// When ticket `index` is due.
    pub fn due(&self, index: u64) -> Option<Instant> {
        match self.mode {
            RateMode::Unlimited => None,
            _ => Some(self.start + Duration::from_nanos((index as f64 * self.interval_ns) as u64)),
        }
    }

    /// When a worker holding `ticket` should wake up to send it (`None`: send now).
    pub fn wake_at(&self, ticket: &Ticket) -> Option<Instant> {
        ticket
            .due
            .map(|d| d.checked_sub(EARLY_SEND_SLACK).unwrap_or(d))
    }

    /// The instant latency is measured from for a request of `ticket` actually sent at `sent`.
    ///
    /// Fixed rate: the due time when sent late (the wait counts), the send time when sent up to
    /// [`EARLY_SEND_SLACK`] early. Throttled and unpaced: the send time (closed loop).
    pub fn latency_origin(&self, ticket: &Ticket, sent: Instant) -> Instant {
        match (self.mode, ticket.due) {
            (RateMode::Fixed { .. }, Some(due)) => due.min(sent),
            _ => sent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_rate_tickets_are_evenly_spaced_from_start() {
        let t0 = Instant::now();
        let s = Schedule::new(
            RateMode::Fixed { rate_per_s: 1000.0 },
            StopCondition::Ops(10),
            t0,
        );
        let a = s.next(t0).unwrap();
        let b = s.next(t0).unwrap();
        let c = s.next(t0).unwrap();
        assert_eq!(a.due, Some(t0));
        assert_eq!(b.due, Some(t0 + Duration::from_millis(1)));
        assert_eq!(c.due, Some(t0 + Duration::from_millis(2)));
    }

    #[test]
    fn late_fixed_rate_request_is_charged_from_its_due_time() {
        let t0 = Instant::now();
        let s = Schedule::new(
            RateMode::Fixed { rate_per_s: 100.0 },
            StopCondition::Ops(10),
            t0,
        );
        let t = s.next(t0).unwrap();
        let sent_late = t0 + Duration::from_millis(500);
        assert_eq!(s.latency_origin(&t, sent_late), t0);
        let early = Schedule::new(
            RateMode::Fixed { rate_per_s: 100.0 },
            StopCondition::Ops(10),
            t0,
        );
        let _ = early.next(t0);
        let t1 = early.next(t0).unwrap();
        let sent_early = t0 + Duration::from_micros(9_500);
        assert_eq!(early.latency_origin(&t1, sent_early), sent_early);
    }

    #[test]
    fn throttled_and_unpaced_requests_count_from_the_send() {
        let t0 = Instant::now();
        let sent = t0 + Duration::from_secs(3);
        let th = Schedule::new(
            RateMode::Throttle { rate_per_s: 10.0 },
            StopCondition::Ops(10),
            t0,
        );
        let t = th.next(t0).unwrap();
        assert!(t.due.is_some());
        assert_eq!(th.latency_origin(&t, sent), sent);
        let un = Schedule::new(RateMode::Unlimited, StopCondition::Ops(10), t0);
        let u = un.next(t0).unwrap();
        assert_eq!(u.due, None);
        assert_eq!(un.wake_at(&u), None);
        assert_eq!(un.latency_origin(&u, sent), sent);
    }

    #[test]
    fn op_count_bounds_the_tickets() {
        let t0 = Instant::now();
        let s = Schedule::new(RateMode::Unlimited, StopCondition::Ops(3), t0);
        assert_eq!((0..10).filter_map(|_| s.next(t0)).count(), 3);
    }

    #[test]
    fn duration_bounds_paced_tickets_by_due_time() {
        let t0 = Instant::now();
        let s = Schedule::new(
            RateMode::Fixed { rate_per_s: 100.0 },
            StopCondition::Duration(Duration::from_secs(1)),
            t0,
        );
        // Due times 0, 10 ms, ..., 990 ms fit in one second: exactly 100 tickets, even if asked early.
        assert_eq!((0..1000).filter_map(|_| s.next(t0)).count(), 100);
    }

    #[test]
    fn duration_bounds_unpaced_tickets_by_clock() {
        let t0 = Instant::now();
        let s = Schedule::new(
            RateMode::Unlimited,
            StopCondition::Duration(Duration::from_secs(1)),
            t0,
        );
        assert!(s.next(t0 + Duration::from_millis(999)).is_some());
        assert!(s.next(t0 + Duration::from_secs(1)).is_none());
    }

    #[test]
    fn workers_wake_slightly_before_due() {
        let t0 = Instant::now();
        let s = Schedule::new(
            RateMode::Fixed { rate_per_s: 1.0 },
            StopCondition::Ops(5),
            t0,
        );
        let _ = s.next(t0);
        let t = s.next(t0).unwrap();
        assert_eq!(
            s.wake_at(&t),
            Some(t0 + Duration::from_secs(1) - EARLY_SEND_SLACK)
        );
    }
}
