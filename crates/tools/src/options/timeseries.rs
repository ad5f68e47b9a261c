//! `helenus stress timeseries ...`: tlp-stress's `BasicTimeSeries` by name (WORKLOADS.md §2).
//!
//! ```text
//! timeseries [rates=5k,10k,20k] [step_duration=60s] [partitions=10k] [limit=500] [readrate=0.2]
//!            [populate=0] [cl=LOCAL_ONE] [quiet] -rate threads=400 -node HOST ...
//! ```
//! tlp-stress's options where they map: `partitions=` is `-p`, `readrate=` is `-r`, `populate=` is
//! `--populate`, `limit=` is the workload's `limit` field, the in-flight requests are `-rate
//! threads=` (tlp-stress's threads x concurrency); `rates=` are the fixed-rate steps the studies
//! run one after the other, each for `step_duration`.

use std::time::Duration;

use super::groups::parse_groups;
use super::{
    bad, parse_count, parse_duration, parse_rate, split_kv, ConsistencyLevel, OptionError,
    ProfileKind, RateMode, StopCondition, StressOptions,
};
use crate::dist::DistSpec;

/// Fixed-rate steps when `rates=` is not given: a gentle ramp a 2-core machine can follow.
const DEFAULT_RATES_PER_S: [f64; 3] = [2_000.0, 4_000.0, 6_000.0];
/// At most this many steps, so a typo cannot queue a day of load.
pub const MAX_TIMESERIES_STEPS: usize = 100;
/// Rows a read asks for at most; tlp-stress's default `limit` is 500.
const MAX_READ_LIMIT: u32 = 100_000;
/// Requests in flight when `-rate threads=` is not given: tlp-stress's 8 threads x 50 concurrent
/// of WORKLOADS.md §2, all on one connection per host.
pub const DEFAULT_TIMESERIES_IN_FLIGHT: u32 = 400;

/// What the `timeseries` command runs.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeSeriesOptions {
    /// Offered rates of the fixed-rate steps, in order.
    pub rates_per_s: Vec<f64>,
    /// Duration of each step.
    pub step_duration: Duration,
    /// Sensors (partitions); keys are drawn uniformly from 1..=partitions.
    pub partitions: u64,
    /// `LIMIT` of the read of a sensor's latest rows.
    pub read_limit: u32,
    /// Fraction of operations that are reads (tlp-stress `-r`, 0.2 = 20% reads, 80% writes).
    pub read_fraction: f64,
    /// Rows inserted closed-loop before the steps (tlp-stress `--populate`), 0 for none.
    pub populate_rows: u64,
}

impl Default for TimeSeriesOptions {
    fn default() -> Self {
        TimeSeriesOptions {
            rates_per_s: DEFAULT_RATES_PER_S.to_vec(),
            step_duration: Duration::from_secs(60),
            partitions: 10_000,
            read_limit: 500,
            read_fraction: 0.2,
            populate_rows: 0,
        }
    }
}

impl TimeSeriesOptions {
    /// Integer op weights (insert, select) for the weighted pick, in thousandths.
    pub fn weights(&self) -> (u32, u32) {
        let reads = (self.read_fraction * 1000.0).round().clamp(0.0, 1000.0) as u32;
        (1000 - reads, reads)
    }
}

/// Parses `timeseries ...`; `args` starts at the command word.
pub fn parse_timeseries(args: &[String]) -> Result<StressOptions, OptionError> {
    let mut opts = StressOptions {
        command: "timeseries".into(),
        profile: ProfileKind::TimeSeries,
        consistency: ConsistencyLevel::LocalOne,
        threads: DEFAULT_TIMESERIES_IN_FLIGHT,
        ..StressOptions::default()
    };
    let mut ts = TimeSeriesOptions::default();
    let mut i = 1;
    while let Some(arg) = args.get(i) {
        if arg.starts_with('-') {
            break;
        }
        i += 1;
        match arg.as_str() {
            "quiet" => opts.quiet = true,
            "no-warmup" => opts.no_warmup = true,
            _ => parse_word(&mut opts, &mut ts, arg)?,
        }
    }
    parse_groups(&mut opts, args.get(i..).unwrap_or_default())?;
    if opts.rate != RateMode::Unlimited {
        return Err(OptionError::Conflict(
            "timeseries paces itself with rates=; drop -rate fixed=/throttle=".into(),
        ));
    }
    let (insert, select) = ts.weights();
    opts.ops = vec![("insert".into(), insert), ("select".into(), select)]
        .into_iter()
        .filter(|(_, w)| *w > 0)
        .collect();
    let total_s = ts.step_duration.as_secs_f64() * ts.rates_per_s.len() as f64;
    opts.stop = StopCondition::Duration(Duration::from_secs_f64(total_s));
    if opts.population.is_none() {
        opts.population = Some(DistSpec::Uniform {
            min: 1,
            max: ts.partitions,
        });
    }
    opts.timeseries = Some(ts);
    Ok(opts)
}

fn parse_word(
    opts: &mut StressOptions,
    ts: &mut TimeSeriesOptions,
    arg: &str,
) -> Result<(), OptionError> {
    let (key, value) = split_kv(arg, "timeseries")?;
    match key {
        "rates" => ts.rates_per_s = parse_rates(arg, value)?,
        "step_duration" | "duration" => {
            ts.step_duration = parse_duration(arg, value)?;
            if ts.step_duration.is_zero() {
                return Err(bad(arg, value, "a positive duration like 60s"));
            }
        }
        "partitions" => {
            ts.partitions = parse_count(arg, value)?;
            if ts.partitions == 0 {
                return Err(bad(arg, value, "at least one partition"));
            }
        }
        "limit" => {
            ts.read_limit = u32::try_from(parse_count(arg, value)?)
                .ok()
                .filter(|n| (1..=MAX_READ_LIMIT).contains(n))
                .ok_or_else(|| bad(arg, value, "a row count in 1..=100000"))?
        }
        "readrate" => {
            ts.read_fraction = value
                .parse::<f64>()
                .ok()
                .filter(|r| (0.0..=1.0).contains(r))
                .ok_or_else(|| bad(arg, value, "a fraction in [0, 1], e.g. 0.2"))?
        }
        "populate" => ts.populate_rows = parse_count(arg, value)?,
        "cl" => {
            opts.consistency = ConsistencyLevel::parse(value)
                .ok_or_else(|| bad(arg, value, "a consistency level such as LOCAL_ONE"))?
        }
        _ => {
            return Err(OptionError::UnknownOption {
                group: "timeseries".into(),
                option: arg.to_string(),
            })
        }
    }
    Ok(())
}

/// `5000,10k,20k/s`: the step rates, each positive, at most [`MAX_TIMESERIES_STEPS`].
fn parse_rates(arg: &str, value: &str) -> Result<Vec<f64>, OptionError> {
    let rates = value
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(|r| parse_rate(arg, r))
        .collect::<Result<Vec<_>, _>>()?;
    if rates.is_empty() || rates.len() > MAX_TIMESERIES_STEPS {
        return Err(bad(
            arg,
            value,
            "1 to 100 comma-separated rates, e.g. 5k,10k",
        ));
    }
    Ok(rates)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::parse_args;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn defaults_are_tlp_stress_basic_time_series() {
        let o = parse_args(&args("timeseries")).unwrap();
        assert_eq!(o.command, "timeseries");
        assert_eq!(o.profile, ProfileKind::TimeSeries);
        assert_eq!(o.consistency, ConsistencyLevel::LocalOne);
        assert_eq!(o.threads, DEFAULT_TIMESERIES_IN_FLIGHT);
        assert_eq!(
            o.ops,
            vec![("insert".to_string(), 800), ("select".to_string(), 200)]
        );
        let ts = o.timeseries.unwrap();
        assert_eq!(ts.read_limit, 500);
        assert_eq!(ts.rates_per_s, DEFAULT_RATES_PER_S.to_vec());
        assert_eq!(
            o.population,
            Some(DistSpec::Uniform {
                min: 1,
                max: 10_000
            })
        );
    }

    #[test]
    fn parses_rates_steps_and_tlp_stress_options() {
        let o = parse_args(&args(
            "timeseries rates=1000,2500,4k/s step_duration=10s partitions=500 limit=50 readrate=0.5 \
             populate=20k cl=ONE quiet -rate threads=64 -node 127.0.0.2 -json out.json",
        ))
        .unwrap();
        let ts = o.timeseries.clone().unwrap();
        assert_eq!(ts.rates_per_s, vec![1000.0, 2500.0, 4000.0]);
        assert_eq!(ts.step_duration, Duration::from_secs(10));
        assert_eq!(
            (ts.partitions, ts.read_limit, ts.populate_rows),
            (500, 50, 20_000)
        );
        assert_eq!(ts.weights(), (500, 500));
        assert_eq!(o.threads, 64);
        assert_eq!(o.consistency, ConsistencyLevel::One);
        assert!(o.quiet);
        assert_eq!(o.stop, StopCondition::Duration(Duration::from_secs(30)));
        assert_eq!(o.population, Some(DistSpec::Uniform { min: 1, max: 500 }));
    }

    #[test]
    fn write_only_and_read_only_drop_the_zero_weight_op() {
        let w = parse_args(&args("timeseries readrate=0")).unwrap();
        assert_eq!(w.ops, vec![("insert".to_string(), 1000)]);
        let r = parse_args(&args("timeseries readrate=1")).unwrap();
        assert_eq!(r.ops, vec![("select".to_string(), 1000)]);
    }

    #[test]
    fn rejects_bad_values_and_a_fixed_rate() {
        for bad_line in [
            "timeseries rates=",
            "timeseries rates=100,0",
            "timeseries readrate=1.5",
            "timeseries limit=0",
            "timeseries partitions=0",
            "timeseries step_duration=0s",
            "timeseries cl=SOME",
            "timeseries steps=3",
            "timeseries -rate fixed=1000/s",
        ] {
            assert!(parse_args(&args(bad_line)).is_err(), "{bad_line}");
        }
        let many = format!("timeseries rates={}", vec!["1"; 101].join(","));
        assert!(parse_args(&args(&many)).is_err());
    }
}
