//! `helenus stress sla`: WORKLOADS.md §1's step load. Load the data (SEQ population), measure the
//! closed-loop maximum, then run fixed-rate steps of increasing rate until the rate can't be
//! reached or P90 passes 1 s, and finally one step at half the maximum for its percentiles.

use std::time::Duration;

use crate::dist::DistSpec;
use crate::options::{RateMode, SlaOptions, SlaStep, StopCondition, StressOptions};
use crate::runner::{run_phase, PhaseResult, PhaseSpec, Prepared, Sinks};
use crate::stats::{round3, Summary};

/// A step counts as reached when at least this fraction of the offered rate completed.
pub const REACHED_FRACTION: f64 = 0.95;
/// Steps stop once P90 exceeds this.
pub const P90_GIVE_UP_MS: f64 = 1000.0;
/// The latency bound of the "max throughput under SLA" figures.
pub const SLA_LATENCY_MS: f64 = 10.0;

/// One fixed-rate step.
#[derive(Debug, Clone)]
pub struct StepResult {
    pub offered_rate_per_s: f64,
    pub total: Summary,
    pub reached: bool,
    pub phase: PhaseResult,
}

/// Everything `sla` measured.
#[derive(Debug, Clone)]
pub struct SlaReport {
    pub load: Option<PhaseResult>,
    pub probe: Option<PhaseResult>,
    pub steps: Vec<StepResult>,
    pub half_max: Option<StepResult>,
}

impl SlaReport {
    /// Highest achieved throughput over the steps (and the closed-loop probe).
    pub fn max_throughput(&self) -> f64 {
        let steps = self.steps.iter().map(|s| s.total.rate_per_s);
        let probe = self
            .probe
            .iter()
            .map(|p| Summary::of(&p.total(), p.elapsed).rate_per_s);
        steps.chain(probe).fold(0.0, f64::max)
    }

    /// Highest achieved throughput of a reached step (the 50%-of-max step included) whose
    /// latency, as picked by `pick`, stayed under 10 ms.
    pub fn max_under_sla(&self, pick: fn(&Summary) -> f64) -> f64 {
        self.steps
            .iter()
            .chain(self.half_max.iter())
            .filter(|s| s.reached && pick(&s.total) < SLA_LATENCY_MS)
            .map(|s| s.total.rate_per_s)
            .fold(0.0, f64::max)
    }

    /// The report as JSON, settings included.
    pub fn to_json(&self, o: &StressOptions) -> serde_json::Value {
        let step_json = |s: &StepResult| {
            serde_json::json!({
                "offered_rate_per_s": round3(s.offered_rate_per_s), "reached": s.reached,
                "total": s.total.to_json(), "phase": s.phase.to_json(),
            })
        };
        serde_json::json!({
            "settings": crate::settings_json(o),
            "load": self.load.as_ref().map(PhaseResult::to_json),
            "probe": self.probe.as_ref().map(PhaseResult::to_json),
            "steps": self.steps.iter().map(step_json).collect::<Vec<_>>(),
            "half_max": self.half_max.as_ref().map(step_json),
            "max_throughput_per_s": round3(self.max_throughput()),
            "max_throughput_p90_under_10ms_per_s": round3(self.max_under_sla(|s| s.p90_ms)),
            "max_throughput_p99_under_10ms_per_s": round3(self.max_under_sla(|s| s.p99_ms)),
            "client_cpu_ms_per_1000_ops": round3(self.client_cpu_ms_per_1000_ops()),
        })
    }

    /// Client CPU per 1,000 ops over every phase.
    pub fn client_cpu_ms_per_1000_ops(&self) -> f64 {
        let phases = self
            .load
            .iter()
            .chain(self.probe.iter())
            .chain(self.steps.iter().map(|s| &s.phase))
            .chain(self.half_max.iter().map(|s| &s.phase));
        let (cpu, ops) = phases.fold((0.0, 0u64), |(c, n), p| {
            (c + p.client_cpu.as_secs_f64(), n + p.total().hist.len())
        });
        if ops == 0 {
            0.0
        } else {
            cpu * 1e6 / ops as f64
        }
    }
}

/// The offered rate of step `k` (0-based).
pub fn step_rate(sla: &SlaOptions, measured_max: f64, k: u32) -> f64 {
    let (start, inc) = match (sla.start_rate_per_s, sla.step) {
        (Some(s), SlaStep::Rate(r)) => (s, r),
        (None, SlaStep::Rate(r)) => (r, r),
        (Some(s), SlaStep::FractionOfMax(f)) => (s, f * measured_max),
        (None, SlaStep::FractionOfMax(f)) => (f * measured_max, f * measured_max),
    };
    start + inc * f64::from(k)
}

/// Whether the steps should stop after `s`.
pub fn should_stop(s: &StepResult) -> bool {
    !s.reached || s.total.p90_ms > P90_GIVE_UP_MS
}

async fn fixed_step(
    o: &StressOptions,
    sla: &SlaOptions,
    p: &Prepared,
    sinks: &mut Sinks,
    pop: &DistSpec,
    rate: f64,
    name: String,
) -> StepResult {
    let spec = PhaseSpec {
        name,
        rate: RateMode::Fixed { rate_per_s: rate },
        stop: StopCondition::Duration(sla.step_duration),
        threads: o.threads,
        population: pop.clone(),
        only_op: None,
        print_progress: !o.quiet,
    };
    let phase = run_phase(p, &spec, sinks, o.log_interval).await;
    let total = Summary::of(&phase.total(), phase.elapsed);
    let reached = total.rate_per_s >= REACHED_FRACTION * rate;
    println!(
        "step {:>9.0} op/s offered: {:>9.0} achieved, P50 {:.2} P90 {:.2} P99 {:.2} ms, errors {}{}",
        rate,
        total.rate_per_s,
        total.p50_ms,
        total.p90_ms,
        total.p99_ms,
        total.errors,
        if reached { "" } else { "  (not reached)" }
    );
    StepResult {
        offered_rate_per_s: rate,
        total,
        reached,
        phase,
    }
}

/// Runs the whole step load.
pub async fn run_sla(
    o: &StressOptions,
    sla: &SlaOptions,
    p: &Prepared,
    sinks: &mut Sinks,
    population: DistSpec,
) -> SlaReport {
    let mut report = SlaReport {
        load: None,
        probe: None,
        steps: Vec::new(),
        half_max: None,
    };
    if sla.load_ops > 0 {
        let write_op = p
            .workload
            .ops
            .iter()
            .position(|op| matches!(op.name.as_str(), "write" | "insert"));
        let spec = PhaseSpec {
            name: "load".into(),
            rate: RateMode::Unlimited,
            stop: StopCondition::Ops(sla.load_ops),
            threads: o.threads,
            population: DistSpec::Seq {
                min: 1,
                max: sla.load_ops,
            },
            only_op: Some(write_op.unwrap_or(0)),
            print_progress: !o.quiet,
        };
        report.load =
            Some(run_phase(p, &spec, sinks, Duration::from_secs(5).max(o.log_interval)).await);
    }
    let needs_probe =
        sla.start_rate_per_s.is_none() || matches!(sla.step, SlaStep::FractionOfMax(_));
    let mut measured_max = 0.0;
    if needs_probe {
        let spec = PhaseSpec {
            name: "probe".into(),
            rate: RateMode::Unlimited,
            stop: StopCondition::Duration(sla.probe_duration),
            threads: o.threads,
            population: population.clone(),
            only_op: None,
            print_progress: !o.quiet,
        };
        let probe = run_phase(p, &spec, sinks, o.log_interval).await;
        measured_max = Summary::of(&probe.total(), probe.elapsed).rate_per_s;
        println!("closed-loop maximum: {measured_max:.0} op/s");
        report.probe = Some(probe);
    }
    for k in 0..sla.max_steps {
        let rate = step_rate(sla, measured_max, k);
        if rate <= 0.0 {
            break;
        }
        let step = fixed_step(o, sla, p, sinks, &population, rate, format!("step{k}")).await;
        let stop = should_stop(&step);
        report.steps.push(step);
        if stop {
            break;
        }
    }
    let half = report.max_throughput() / 2.0;
    if half >= 1.0 {
        report.half_max =
            Some(fixed_step(o, sla, p, sinks, &population, half, "half_max".into()).await);
    }
    report
}

/// Prints the four figures of WORKLOADS.md §1.
pub fn print_report(r: &SlaReport) {
    println!("\nSLA results:");
    println!(
        "Max throughput                 : {:>10.0} op/s",
        r.max_throughput()
    );
    println!(
        "Max throughput with P90 < 10 ms: {:>10.0} op/s",
        r.max_under_sla(|s| s.p90_ms)
    );
    println!(
        "Max throughput with P99 < 10 ms: {:>10.0} op/s",
        r.max_under_sla(|s| s.p99_ms)
    );
    if let Some(h) = &r.half_max {
        let s = &h.total;
        println!(
            "At 50% of max ({:.0} op/s)     : P50 {:.2}  P90 {:.2}  P99 {:.2}  P99.9 {:.2}  max {:.2} ms",
            h.offered_rate_per_s, s.p50_ms, s.p90_ms, s.p99_ms, s.p999_ms, s.max_ms
        );
    }
    println!(
        "Client CPU per 1,000 ops       : {:>10.2} ms",
        r.client_cpu_ms_per_1000_ops()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sla(start: Option<f64>, step: SlaStep) -> SlaOptions {
        SlaOptions {
            load_ops: 0,
            start_rate_per_s: start,
            step,
            step_duration: Duration::from_secs(1),
            probe_duration: Duration::from_secs(1),
            max_steps: 10,
        }
    }

    #[test]
    fn percentage_steps_are_fractions_of_the_measured_max() {
        let s = sla(None, SlaStep::FractionOfMax(0.1));
        assert_eq!(step_rate(&s, 20_000.0, 0), 2_000.0);
        assert_eq!(step_rate(&s, 20_000.0, 4), 10_000.0);
    }

    #[test]
    fn absolute_steps_start_at_start() {
        let s = sla(Some(1000.0), SlaStep::Rate(500.0));
        assert_eq!(step_rate(&s, 0.0, 0), 1000.0);
        assert_eq!(step_rate(&s, 0.0, 3), 2500.0);
        let no_start = sla(None, SlaStep::Rate(500.0));
        assert_eq!(step_rate(&no_start, 0.0, 1), 1000.0);
    }
}
