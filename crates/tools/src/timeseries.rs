//! `helenus stress timeseries`: tlp-stress's `BasicTimeSeries` as the GC and 4.0 studies run it
//! (WORKLOADS.md §2). After an optional closed-loop populate, one fixed-rate step per requested
//! rate (open model: latency counts from each request's due time), and per step, for writes and
//! reads separately: the achieved rate against the requested one, and the average and maximum of
//! the P99 of each 1 s interval (the studies' "max P99 per interval", where stalls show).

use std::time::Duration;

use crate::dist::DistSpec;
use crate::options::{RateMode, StopCondition, StressOptions, TimeSeriesOptions};
use crate::runner::{run_phase, PhaseResult, PhaseSpec, Prepared, Sinks};
use crate::stats::{round3, Summary};

/// A step counts as reached when at least this fraction of the requested rate completed (as `sla`).
pub const REACHED_FRACTION: f64 = crate::sla::REACHED_FRACTION;

/// One operation type (insert or select) over one step.
#[derive(Debug, Clone, PartialEq)]
pub struct OpStep {
    pub op: String,
    pub total: Summary,
    /// Mean over the step's intervals of each interval's P99.
    pub interval_p99_avg_ms: f64,
    /// Highest P99 of any interval of the step.
    pub interval_p99_max_ms: f64,
    /// Intervals that had at least one operation of this type.
    pub intervals: usize,
}

/// One fixed-rate step.
#[derive(Debug, Clone)]
pub struct TimeSeriesStep {
    pub requested_rate_per_s: f64,
    pub achieved_rate_per_s: f64,
    pub reached: bool,
    pub ops: Vec<OpStep>,
    pub phase: PhaseResult,
}

/// Everything the command measured.
#[derive(Debug, Clone)]
pub struct TimeSeriesReport {
    pub populate: Option<PhaseResult>,
    pub steps: Vec<TimeSeriesStep>,
}

/// Average and maximum of the per-interval P99 of `op` in a phase's interval records; intervals
/// without that op (e.g. the last, partial one with no reads) are left out.
pub fn interval_p99(intervals: &[serde_json::Value], op: &str) -> (f64, f64, usize) {
    let p99s: Vec<f64> = intervals
        .iter()
        .filter_map(|iv| iv.get(op))
        .filter(|s| {
            s.get("ops")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0)
                > 0
        })
        .filter_map(|s| s.get("latency_p99_ms").and_then(serde_json::Value::as_f64))
        .collect();
    if p99s.is_empty() {
        return (0.0, 0.0, 0);
    }
    let avg = p99s.iter().sum::<f64>() / p99s.len() as f64;
    let max = p99s.iter().copied().fold(0.0, f64::max);
    (avg, max, p99s.len())
}

/// The per-op figures of a finished step.
pub fn step_of(requested_rate_per_s: f64, phase: PhaseResult) -> TimeSeriesStep {
    let ops = phase
        .op_names
        .iter()
        .zip(&phase.per_op)
        .map(|(name, w)| {
            let (avg, max, n) = interval_p99(&phase.intervals, name);
            OpStep {
                op: name.clone(),
                total: Summary::of(w, phase.elapsed),
                interval_p99_avg_ms: avg,
                interval_p99_max_ms: max,
                intervals: n,
            }
        })
        .collect();
    let achieved = Summary::of(&phase.total(), phase.elapsed).rate_per_s;
    TimeSeriesStep {
        requested_rate_per_s,
        achieved_rate_per_s: achieved,
        reached: achieved >= REACHED_FRACTION * requested_rate_per_s,
        ops,
        phase,
    }
}

/// Runs the populate phase (if asked) and every step.
pub async fn run_timeseries(
    o: &StressOptions,
    ts: &TimeSeriesOptions,
    p: &Prepared,
    sinks: &mut Sinks,
    population: DistSpec,
) -> TimeSeriesReport {
    let mut report = TimeSeriesReport {
        populate: None,
        steps: Vec::new(),
    };
    if ts.populate_rows > 0 {
        let insert = p.workload.ops.iter().position(|op| op.name == "insert");
        let spec = PhaseSpec {
            name: "populate".into(),
            rate: RateMode::Unlimited,
            stop: StopCondition::Ops(ts.populate_rows),
            threads: o.threads,
            population: population.clone(),
            only_op: Some(insert.unwrap_or(0)),
            print_progress: !o.quiet,
        };
        let phase = run_phase(p, &spec, sinks, Duration::from_secs(5).max(o.log_interval)).await;
        println!(
            "populated {} rows in {:.1} s",
            phase.total().hist.len(),
            phase.elapsed.as_secs_f64()
        );
        report.populate = Some(phase);
    }
    for (k, &rate) in ts.rates_per_s.iter().enumerate() {
        let spec = PhaseSpec {
            name: format!("step{k}"),
            rate: RateMode::Fixed { rate_per_s: rate },
            stop: StopCondition::Duration(ts.step_duration),
            threads: o.threads,
            population: population.clone(),
            only_op: None,
            print_progress: !o.quiet,
        };
        let step = step_of(rate, run_phase(p, &spec, sinks, o.log_interval).await);
        print_step(&step);
        report.steps.push(step);
    }
    report
}

fn print_step(s: &TimeSeriesStep) {
    println!(
        "step {:>8.0} op/s requested: {:>8.0} achieved{}",
        s.requested_rate_per_s,
        s.achieved_rate_per_s,
        if s.reached { "" } else { "  (not reached)" }
    );
    for op in &s.ops {
        println!(
            "  {:<6} {:>8.0} op/s  P50 {:>7.2}  P99 {:>7.2}  P99 per interval avg {:>7.2} max {:>7.2} ms  errors {}",
            op.op,
            op.total.rate_per_s,
            op.total.p50_ms,
            op.total.p99_ms,
            op.interval_p99_avg_ms,
            op.interval_p99_max_ms,
            op.total.errors
        );
    }
}

impl TimeSeriesReport {
    /// The report as JSON, settings included; each step keeps its full phase (intervals too).
    pub fn to_json(&self, o: &StressOptions, ts: &TimeSeriesOptions) -> serde_json::Value {
        let step_json = |s: &TimeSeriesStep| {
            let ops: serde_json::Map<String, serde_json::Value> = s
                .ops
                .iter()
                .map(|op| {
                    let mut v = op.total.to_json();
                    if let Some(m) = v.as_object_mut() {
                        m.insert(
                            "interval_p99_avg_ms".into(),
                            round3(op.interval_p99_avg_ms).into(),
                        );
                        m.insert(
                            "interval_p99_max_ms".into(),
                            round3(op.interval_p99_max_ms).into(),
                        );
                        m.insert("intervals".into(), op.intervals.into());
                    }
                    (op.op.clone(), v)
                })
                .collect();
            serde_json::json!({
                "requested_rate_per_s": round3(s.requested_rate_per_s),
                "achieved_rate_per_s": round3(s.achieved_rate_per_s),
                "reached": s.reached,
                "ops": ops,
                "phase": s.phase.to_json(),
            })
        };
        serde_json::json!({
            "workload": "timeseries",
            "settings": crate::settings_json(o),
            "timeseries": {
                "rates_per_s": ts.rates_per_s,
                "step_duration_s": ts.step_duration.as_secs_f64(),
                "partitions": ts.partitions,
                "read_limit": ts.read_limit,
                "read_fraction": ts.read_fraction,
                "populate_rows": ts.populate_rows,
            },
            "populate": self.populate.as_ref().map(PhaseResult::to_json),
            "steps": self.steps.iter().map(step_json).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn interval_p99_averages_and_maxes_only_intervals_with_that_op() {
        let intervals = vec![
            json!({"time_s": 1.0, "insert": {"ops": 100, "latency_p99_ms": 2.0}, "select": {"ops": 20, "latency_p99_ms": 5.0}}),
            json!({"time_s": 2.0, "insert": {"ops": 100, "latency_p99_ms": 4.0}, "select": {"ops": 0, "latency_p99_ms": 0.0}}),
            json!({"time_s": 2.1, "insert": {"ops": 3, "latency_p99_ms": 9.0}}),
        ];
        assert_eq!(interval_p99(&intervals, "insert"), (5.0, 9.0, 3));
        assert_eq!(interval_p99(&intervals, "select"), (5.0, 5.0, 1));
        assert_eq!(interval_p99(&intervals, "scan"), (0.0, 0.0, 0));
    }
}
