//! cassandra-stress's command line: `COMMAND [opt=value ...] [-GROUP opt=value ...]...`.
//!
//! Every malformed input becomes an [`OptionError`] that names the option and what was expected;
//! nothing here panics.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::dist::DistSpec;

mod groups;
mod timeseries;
mod values;
use groups::parse_groups;
pub use timeseries::{TimeSeriesOptions, DEFAULT_TIMESERIES_IN_FLIGHT, MAX_TIMESERIES_STEPS};
pub use values::{parse_count, parse_dist, parse_duration, parse_rate};

/// What went wrong on the command line.
#[derive(Debug, Clone, PartialEq)]
pub enum OptionError {
    /// No command was given.
    MissingCommand,
    /// The first word is not a known command.
    UnknownCommand(String),
    /// `-group` is not a known option group.
    UnknownGroup(String),
    /// An option that the command or group does not take.
    UnknownOption { group: String, option: String },
    /// A value that does not parse.
    BadValue {
        option: String,
        value: String,
        expected: &'static str,
    },
    /// A required value is missing.
    Missing {
        option: String,
        expected: &'static str,
    },
    /// Two options that exclude each other.
    Conflict(String),
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionError::MissingCommand => {
                write!(f, "no command given; expected one of write, read, mixed, user, sla, timeseries, help")
            }
            OptionError::UnknownCommand(c) => {
                write!(f, "unknown command '{c}'; expected one of write, read, mixed, user, sla, timeseries, help")
            }
            OptionError::UnknownGroup(g) => write!(
                f,
                "unknown option group '{g}'; expected -pop, -rate, -node, -port, -schema, -col, -log, -json, -hdr, -mode"
            ),
            OptionError::UnknownOption { group, option } => write!(f, "{group}: unknown option '{option}'"),
            OptionError::BadValue { option, value, expected } => {
                write!(f, "{option}: cannot parse '{value}': expected {expected}")
            }
            OptionError::Missing { option, expected } => write!(f, "{option}: missing value: expected {expected}"),
            OptionError::Conflict(what) => write!(f, "conflicting options: {what}"),
        }
    }
}

impl std::error::Error for OptionError {}

/// The consistency levels a request can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsistencyLevel {
    Any,
    One,
    Two,
    Three,
    Quorum,
    All,
    LocalQuorum,
    EachQuorum,
    LocalOne,
}

impl ConsistencyLevel {
    fn parse(s: &str) -> Option<Self> {
        Some(match s.to_ascii_uppercase().as_str() {
            "ANY" => ConsistencyLevel::Any,
            "ONE" => ConsistencyLevel::One,
            "TWO" => ConsistencyLevel::Two,
            "THREE" => ConsistencyLevel::Three,
            "QUORUM" => ConsistencyLevel::Quorum,
            "ALL" => ConsistencyLevel::All,
            "LOCAL_QUORUM" => ConsistencyLevel::LocalQuorum,
            "EACH_QUORUM" => ConsistencyLevel::EachQuorum,
            "LOCAL_ONE" => ConsistencyLevel::LocalOne,
            _ => return None,
        })
    }
}

/// Which schema and statements the run uses.
#[derive(Debug, Clone, PartialEq)]
pub enum ProfileKind {
    /// cassandra-stress's `keyspace1.standard1`.
    Standard,
    /// WORKLOADS.md §2: sensor time series, TWCS, latest-rows reads.
    TimeSeries,
    /// WORKLOADS.md §3: wide partitions of JSON-ish events with a TTL.
    WideTtl,
    /// A cassandra-stress YAML user profile.
    User(PathBuf),
}

/// When a run ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StopCondition {
    /// After this many operations.
    Ops(u64),
    /// After this much time.
    Duration(Duration),
}

/// How requests are paced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RateMode {
    /// Closed loop: every worker sends its next request as soon as the previous one returns.
    Unlimited,
    /// Open model: request i is due at start + i / rate; latency counts from that due time.
    Fixed { rate_per_s: f64 },
    /// Closed loop capped at the rate; latency counts from the actual send.
    Throttle { rate_per_s: f64 },
}

/// `sla` step-load settings (WORKLOADS.md §1).
#[derive(Debug, Clone, PartialEq)]
pub struct SlaOptions {
    /// Rows written with a SEQ population before the steps (0: skip the load phase).
    pub load_ops: u64,
    /// First fixed rate; `None`: a fraction of the measured maximum.
    pub start_rate_per_s: Option<f64>,
    /// Increment per step: a rate, or a fraction of the measured maximum.
    pub step: SlaStep,
    /// Duration of each fixed-rate step.
    pub step_duration: Duration,
    /// Duration of the closed-loop run that measures the maximum.
    pub probe_duration: Duration,
    /// Upper bound on the number of steps.
    pub max_steps: u32,
}

/// The increment between `sla` steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SlaStep {
    /// A fixed number of op/s.
    Rate(f64),
    /// A fraction (0.1 = 10%) of the measured maximum throughput.
    FractionOfMax(f64),
}

/// Everything a run needs, parsed from the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct StressOptions {
    /// The command word (`write`, `read`, `mixed`, `user`).
    pub command: String,
    /// Operation names with their weights (`write`, `read`; for profiles `insert` and query names).
    pub ops: Vec<(String, u32)>,
    pub profile: ProfileKind,
    pub stop: StopCondition,
    pub consistency: ConsistencyLevel,
    /// Key population; `None` means the command's default.
    pub population: Option<DistSpec>,
    /// Workers, i.e. the maximum number of requests in flight.
    pub threads: u32,
    pub rate: RateMode,
    pub nodes: Vec<String>,
    pub port: u16,
    pub connections_per_host: u32,
    /// OS threads of the client's async runtime (`-mode clientThreads=N`); 1 runs the driver and
    /// every worker on one thread, as latte's `-t 1` does, which costs the least CPU per request.
    pub client_threads: u32,
    pub keyspace: String,
    pub replication_factor: u32,
    pub replication_class: String,
    /// `(strategy, [(option, value)])` from `-schema compaction(...)`.
    pub compaction: Option<(String, Vec<(String, String)>)>,
    /// Column value size (`-col size=`).
    pub col_size: DistSpec,
    /// Column count (`-col n=`).
    pub col_count: DistSpec,
    pub log_file: Option<PathBuf>,
    pub log_interval: Duration,
    pub json_file: Option<PathBuf>,
    pub hdr_file: Option<PathBuf>,
    /// Skip the warm-up ops before measuring.
    pub no_warmup: bool,
    /// Print fewer lines (no per-second progress).
    pub quiet: bool,
    pub sla: Option<SlaOptions>,
    /// The `timeseries` command's steps and tlp-stress options.
    pub timeseries: Option<TimeSeriesOptions>,
}

impl Default for StressOptions {
    fn default() -> Self {
        StressOptions {
            command: "write".into(),
            ops: vec![("write".into(), 1)],
            profile: ProfileKind::Standard,
            stop: StopCondition::Ops(1_000_000),
            consistency: ConsistencyLevel::LocalOne,
            population: None,
            threads: 64,
            rate: RateMode::Unlimited,
            nodes: vec!["127.0.0.1".into()],
            port: 9042,
            connections_per_host: 1,
            client_threads: 1,
            keyspace: "keyspace1".into(),
            replication_factor: 1,
            replication_class: "SimpleStrategy".into(),
            compaction: None,
            col_size: DistSpec::Fixed(34),
            col_count: DistSpec::Fixed(5),
            log_file: None,
            log_interval: Duration::from_secs(1),
            json_file: None,
            hdr_file: None,
            no_warmup: false,
            quiet: false,
            sla: None,
            timeseries: None,
        }
    }
}

/// The usage text printed by `help` and after an error.
pub const USAGE: &str = "\
usage: helenus stress COMMAND [options] [-GROUP options]...
commands:
  write | read                       standard1 (or profile=timeseries|widettl) inserts / reads
  mixed ratio(write=1,read=1)        weighted mix (profiles: ratio(insert=8,select=2))
  user profile=FILE.yaml ops(insert=1,q1=2)   cassandra-stress YAML user profile
  sla write|read|mixed ... [load=N] [step=10%|step=R start=R] [step_duration=60s] [probe_duration=30s] [max_steps=N]
  timeseries [rates=2k,4k,6k] [step_duration=60s] [partitions=10k] [limit=500] [readrate=0.2] [populate=N]
                                     tlp-stress BasicTimeSeries: fixed-rate steps, P99 per interval (-rate threads=400)
command options: n=N | duration=60s, cl=ONE|QUORUM|LOCAL_ONE|..., profile=NAME, no-warmup, quiet
groups:
  -pop dist=UNIFORM(1..N)|GAUSSIAN(1..N,mean,stdev)|GAUSSIAN(1..N,stdvrng)|SEQ(1..N) | seq=1..N
  -rate threads=N [fixed=R/s | throttle=R/s]
  -node HOST[,HOST]     -port native=P     -mode connectionsPerHost=N clientThreads=N (default 1)
  -schema keyspace=K \"replication(factor=1)\" \"compaction(strategy=LeveledCompactionStrategy)\"
  -col size=FIXED(34) n=FIXED(5)
  -log file=FILE interval=1s     -json FILE     -hdr FILE (HdrHistogram interval log)";

/// Parses the arguments after `stress` (the command word first).
pub fn parse_args(args: &[String]) -> Result<StressOptions, OptionError> {
    let mut opts = StressOptions::default();
    let mut rest = args;
    let first = rest.first().ok_or(OptionError::MissingCommand)?;
    if first.eq_ignore_ascii_case("timeseries") {
        return timeseries::parse_timeseries(args);
    }
    let mut sla = None;
    if first == "sla" {
        sla = Some(SlaOptions {
            load_ops: 0,
            start_rate_per_s: None,
            step: SlaStep::FractionOfMax(0.1),
            step_duration: Duration::from_secs(60),
            probe_duration: Duration::from_secs(30),
            max_steps: 30,
        });
        rest = &rest[1..];
    }
    let command = rest
        .first()
        .ok_or(OptionError::MissingCommand)?
        .to_ascii_lowercase();
    match command.as_str() {
        "write" | "read" | "mixed" | "user" => {}
        _ => return Err(OptionError::UnknownCommand(command)),
    }
    opts.command = command.clone();
    let words = parse_command_words(&mut opts, sla.as_mut(), &command, rest)?;
    let i = words.consumed;
    let explicit_ops = words.explicit_ops;
    if let Some(stop) = words.stop {
        opts.stop = stop;
    }
    opts.profile = profile_of(&command, words.profile)?;
    opts.ops = default_ops(&command, &opts.profile, explicit_ops)?;
    if let Some(s) = sla.as_ref() {
        if matches!(s.step, SlaStep::FractionOfMax(_)) && s.start_rate_per_s.is_some() {
            return Err(OptionError::Conflict(
                "sla start=R needs step=R (a rate), not a percentage".into(),
            ));
        }
    }
    opts.sla = sla;
    parse_groups(&mut opts, &rest[i..])?;
    Ok(opts)
}

/// What the words between the command and the first `-group` say.
struct CommandWords {
    /// `ratio(...)` / `ops(...)`.
    explicit_ops: Option<Vec<(String, u32)>>,
    /// `profile=`.
    profile: Option<String>,
    /// `n=` or `duration=`.
    stop: Option<StopCondition>,
    /// Index in `rest` of the first group.
    consumed: usize,
}

/// Reads the command's words (`n=`, `duration=`, `cl=`, `profile=`, `ratio(...)`, `no-warmup`,
/// `quiet`, and the `sla` options); `rest` starts at the command word.
fn parse_command_words(
    opts: &mut StressOptions,
    mut sla: Option<&mut SlaOptions>,
    command: &str,
    rest: &[String],
) -> Result<CommandWords, OptionError> {
    let mut i = 1;
    let mut explicit_ops: Option<Vec<(String, u32)>> = None;
    let mut profile_arg: Option<String> = None;
    let mut stop: Option<StopCondition> = None;
    while let Some(arg) = rest.get(i) {
        if arg.starts_with('-') {
            break;
        }
        i += 1;
        if arg == "no-warmup" {
            opts.no_warmup = true;
            continue;
        }
        if arg == "quiet" {
            opts.quiet = true;
            continue;
        }
        if let Some(inner) = call_args(arg, "ratio").or_else(|| call_args(arg, "ops")) {
            explicit_ops = Some(parse_weights(arg, inner)?);
            continue;
        }
        let (key, value) = split_kv(arg, command)?;
        match key {
            "n" | "duration" => {
                if stop.is_some() {
                    return Err(OptionError::Conflict("n= and duration= both given".into()));
                }
                stop = Some(if key == "n" {
                    StopCondition::Ops(parse_count(arg, value)?)
                } else {
                    StopCondition::Duration(parse_duration(arg, value)?)
                });
            }
            "cl" => {
                opts.consistency = ConsistencyLevel::parse(value).ok_or_else(|| {
                    bad(
                        arg,
                        value,
                        "a consistency level such as ONE, QUORUM, LOCAL_ONE",
                    )
                })?
            }
            "profile" => profile_arg = Some(value.to_string()),
            _ => match sla.as_mut() {
                Some(s) => parse_sla_option(s, arg, key, value)?,
                None => {
                    return Err(OptionError::UnknownOption {
                        group: command.to_string(),
                        option: arg.clone(),
                    })
                }
            },
        }
    }
    Ok(CommandWords {
        explicit_ops,
        profile: profile_arg,
        stop,
        consumed: i,
    })
}

/// The profile `profile=` names for `command` (`user` requires a YAML file).
fn profile_of(command: &str, profile_arg: Option<String>) -> Result<ProfileKind, OptionError> {
    Ok(match (command, profile_arg) {
        ("user", Some(p)) => ProfileKind::User(PathBuf::from(p)),
        ("user", None) => {
            return Err(OptionError::Missing {
                option: "user profile=".into(),
                expected: "a YAML profile path",
            })
        }
        (_, None) => ProfileKind::Standard,
        (_, Some(p)) => match p.to_ascii_lowercase().as_str() {
            "standard1" | "standard" => ProfileKind::Standard,
            "timeseries" => ProfileKind::TimeSeries,
            "widettl" => ProfileKind::WideTtl,
            _ if p.ends_with(".yaml") || p.ends_with(".yml") => ProfileKind::User(PathBuf::from(p)),
            _ => {
                return Err(bad(
                    "profile=",
                    &p,
                    "standard1, timeseries, widettl or a .yaml file",
                ))
            }
        },
    })
}

fn default_ops(
    command: &str,
    profile: &ProfileKind,
    explicit: Option<Vec<(String, u32)>>,
) -> Result<Vec<(String, u32)>, OptionError> {
    let (write, read) = match profile {
        ProfileKind::Standard => ("write", "read"),
        _ => ("insert", "select"),
    };
    let ops = match (command, explicit) {
        ("write", None) => vec![(write.to_string(), 1)],
        ("read", None) => vec![(read.to_string(), 1)],
        ("mixed", None) => match profile {
            ProfileKind::TimeSeries => vec![(write.to_string(), 8), (read.to_string(), 2)],
            _ => vec![(write.to_string(), 1), (read.to_string(), 1)],
        },
        ("user", None) => vec![("insert".to_string(), 1)],
        (_, Some(ops)) => ops,
        _ => return Err(OptionError::UnknownCommand(command.to_string())),
    };
    if ops.iter().all(|(_, w)| *w == 0) {
        return Err(OptionError::BadValue {
            option: "ratio".into(),
            value: "all zero".into(),
            expected: "at least one positive weight",
        });
    }
    Ok(ops)
}

fn parse_sla_option(
    s: &mut SlaOptions,
    arg: &str,
    key: &str,
    value: &str,
) -> Result<(), OptionError> {
    match key {
        "load" => s.load_ops = parse_count(arg, value)?,
        "start" => s.start_rate_per_s = Some(parse_rate(arg, value)?),
        "step" => {
            s.step = match value.strip_suffix('%') {
                Some(p) => {
                    let pct: f64 = p.parse().map_err(|_| {
                        bad(arg, value, "a percentage like 10% or a rate like 1000")
                    })?;
                    if !(pct > 0.0 && pct <= 100.0) {
                        return Err(bad(arg, value, "a percentage in (0, 100]"));
                    }
                    SlaStep::FractionOfMax(pct / 100.0)
                }
                None => SlaStep::Rate(parse_rate(arg, value)?),
            }
        }
        "step_duration" => s.step_duration = parse_duration(arg, value)?,
        "probe_duration" => s.probe_duration = parse_duration(arg, value)?,
        "max_steps" => {
            s.max_steps = u32::try_from(parse_count(arg, value)?)
                .map_err(|_| bad(arg, value, "a step count below 2^32"))?
        }
        _ => {
            return Err(OptionError::UnknownOption {
                group: "sla".into(),
                option: arg.to_string(),
            })
        }
    }
    Ok(())
}

fn bad(option: &str, value: &str, expected: &'static str) -> OptionError {
    OptionError::BadValue {
        option: option.to_string(),
        value: value.to_string(),
        expected,
    }
}

fn split_kv<'a>(arg: &'a str, group: &str) -> Result<(&'a str, &'a str), OptionError> {
    arg.split_once('=')
        .ok_or_else(|| OptionError::UnknownOption {
            group: group.to_string(),
            option: arg.to_string(),
        })
}

/// `name(inner)` -> `inner` (case-insensitive name).
fn call_args<'a>(arg: &'a str, name: &str) -> Option<&'a str> {
    let open = arg.find('(')?;
    if !arg[..open].eq_ignore_ascii_case(name) {
        return None;
    }
    arg[open + 1..].strip_suffix(')')
}

fn parse_pairs(arg: &str, inner: &str) -> Result<Vec<(String, String)>, OptionError> {
    let mut out = Vec::new();
    for part in inner.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| bad(arg, part, "name=value pairs separated by commas"))?;
        out.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok(out)
}

fn parse_weights(arg: &str, inner: &str) -> Result<Vec<(String, u32)>, OptionError> {
    let pairs = parse_pairs(arg, inner)?;
    if pairs.is_empty() {
        return Err(bad(
            arg,
            inner,
            "op=weight pairs, e.g. ratio(write=1,read=3)",
        ));
    }
    pairs
        .into_iter()
        .map(|(k, v)| {
            let w: u32 = v
                .parse()
                .map_err(|_| bad(arg, &v, "a whole-number weight"))?;
            Ok((k, w))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn client_threads_default_to_one_and_must_be_positive() {
        assert_eq!(parse_args(&args("write")).unwrap().client_threads, 1);
        let two = parse_args(&args("write -mode native clientThreads=2")).unwrap();
        assert_eq!(two.client_threads, 2);
        assert!(parse_args(&args("write -mode clientThreads=0")).is_err());
    }

    #[test]
    fn parses_a_full_cassandra_stress_write_line() {
        let o = parse_args(&args(
            "write n=100k cl=QUORUM -pop dist=UNIFORM(1..1M) -rate threads=50 fixed=2000/s -node 127.0.0.2,127.0.0.3 -port native=9043 \
             -schema keyspace=ks1 replication(factor=3) compaction(strategy=LeveledCompactionStrategy,sstable_size_in_mb=160) \
             -col size=FIXED(34) n=FIXED(5) -log file=out.log interval=2s -json r.json -hdr r.hdr -mode native cql3 connectionsPerHost=4",
        ))
        .unwrap();
        assert_eq!(o.stop, StopCondition::Ops(100_000));
        assert_eq!(o.consistency, ConsistencyLevel::Quorum);
        assert_eq!(
            o.population,
            Some(DistSpec::Uniform {
                min: 1,
                max: 1_000_000
            })
        );
        assert_eq!(o.threads, 50);
        assert_eq!(o.rate, RateMode::Fixed { rate_per_s: 2000.0 });
        assert_eq!(o.nodes, vec!["127.0.0.2", "127.0.0.3"]);
        assert_eq!(o.port, 9043);
        assert_eq!(o.keyspace, "ks1");
        assert_eq!(o.replication_factor, 3);
        assert_eq!(
            o.compaction,
            Some((
                "LeveledCompactionStrategy".into(),
                vec![("sstable_size_in_mb".into(), "160".into())]
            ))
        );
        assert_eq!(o.log_interval, Duration::from_secs(2));
        assert_eq!(o.json_file, Some(PathBuf::from("r.json")));
        assert_eq!(o.connections_per_host, 4);
        assert_eq!(o.ops, vec![("write".to_string(), 1)]);
    }

    #[test]
    fn mixed_takes_ratio_and_profiles_default_to_their_mix() {
        let o = parse_args(&args("mixed ratio(write=1,read=3) duration=30s")).unwrap();
        assert_eq!(
            o.ops,
            vec![("write".to_string(), 1), ("read".to_string(), 3)]
        );
        assert_eq!(o.stop, StopCondition::Duration(Duration::from_secs(30)));
        let ts = parse_args(&args("mixed profile=timeseries")).unwrap();
        assert_eq!(ts.profile, ProfileKind::TimeSeries);
        assert_eq!(
            ts.ops,
            vec![("insert".to_string(), 8), ("select".to_string(), 2)]
        );
    }

    #[test]
    fn user_needs_a_profile_and_takes_ops() {
        assert!(matches!(
            parse_args(&args("user ops(insert=1)")),
            Err(OptionError::Missing { .. })
        ));
        let o = parse_args(&args("user profile=p.yaml ops(insert=1,q1=2)")).unwrap();
        assert_eq!(o.profile, ProfileKind::User(PathBuf::from("p.yaml")));
        assert_eq!(
            o.ops,
            vec![("insert".to_string(), 1), ("q1".to_string(), 2)]
        );
    }

    #[test]
    fn pop_accepts_seq() {
        let o = parse_args(&args("write -pop seq=1..1000")).unwrap();
        assert_eq!(o.population, Some(DistSpec::Seq { min: 1, max: 1000 }));
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        for bad_line in [
            "",
            "frobnicate",
            "write n=abc",
            "write n=99999999999999999999",
            "write duration=xs",
            "write -pop dist=UNIFORM(5..1)",
            "write -pop dist=UNIFORM(1..",
            "write -pop dist=ZIPF(1..5)",
            "write -rate threads=0",
            "write -rate fixed=-5/s",
            "write -rate fixed=10/s throttle=5/s",
            "write -port native=99999",
            "write -schema replication(factor=x)",
            "write -schema compaction(sstable_size_in_mb=1)",
            "write -schema keyspace=a;drop",
            "write -col size=FIXED()",
            "write -log interval=0s",
            "write -json",
            "write -bogus",
            "write n=1 duration=1s",
            "mixed ratio(write=0,read=0)",
            "mixed ratio(write)",
            "write zzz",
            "sla write step=200%",
            "sla write start=100 step=10%",
            "sla",
            "write profile=nosuch",
        ] {
            let r = parse_args(&args(bad_line));
            assert!(r.is_err(), "accepted: {bad_line}");
            assert!(!r.unwrap_err().to_string().is_empty());
        }
    }

    #[test]
    fn sla_options_parse() {
        let o = parse_args(&args(
            "sla mixed load=1M start=1000 step=500 step_duration=20s max_steps=8",
        ))
        .unwrap();
        let s = o.sla.unwrap();
        assert_eq!(s.load_ops, 1_000_000);
        assert_eq!(s.start_rate_per_s, Some(1000.0));
        assert_eq!(s.step, SlaStep::Rate(500.0));
        assert_eq!(s.step_duration, Duration::from_secs(20));
        assert_eq!(s.max_steps, 8);
        let p = parse_args(&args("sla write step=10%"))
            .unwrap()
            .sla
            .unwrap();
        assert_eq!(p.step, SlaStep::FractionOfMax(0.1));
    }
}
