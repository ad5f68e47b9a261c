//! Drives a run: connects, creates the schema, prepares statements, and runs phases of workers
//! that take tickets from a [`Schedule`] and record latencies, while the reporter prints one
//! progress line per interval and writes the log and HDR interval log.

use std::fmt;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::profile::{UserProfile, UserProfileError};
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::client::PoolSize;
use scylla::errors::{NewSessionError, PrepareError};
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::Consistency;

use crate::dist::{DistSpec, Rng, Sampler};
use crate::options::{ConsistencyLevel, ProfileKind, RateMode, StopCondition, StressOptions};
use crate::scheduler::Schedule;
use crate::stats::{process_cpu_time, progress_line, OpWindow, Recorder, Summary, PROGRESS_HEADER};
use crate::workload::{bind_values, ValuesGen, Workload};

/// Distinct error messages printed per run; the rest are only counted.
const MAX_PRINTED_ERRORS: u64 = 5;
/// Per-request client-side timeout; a request older than this counts as an error.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(12);

/// Why a run could not start or finish.
#[derive(Debug)]
pub enum RunError {
    Connect(Box<NewSessionError>),
    /// A schema statement (or the USE after it) failed.
    Schema {
        cql: String,
        error: Cause,
    },
    Prepare {
        cql: String,
        error: Box<PrepareError>,
    },
    Profile(UserProfileError),
    Output {
        path: String,
        error: Cause,
    },
}

/// The driver's or the file system's own error, kept whole for whoever inspects it.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

impl From<UserProfileError> for RunError {
    fn from(e: UserProfileError) -> Self {
        RunError::Profile(e)
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Connect(e) => write!(f, "cannot connect: {e}"),
            RunError::Schema { cql, error } => {
                write!(f, "schema statement failed: {error}\n  {cql}")
            }
            RunError::Prepare { cql, error } => write!(f, "cannot prepare: {error}\n  {cql}"),
            RunError::Profile(e) => write!(f, "{e}"),
            RunError::Output { path, error } => write!(f, "cannot write {path}: {error}"),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Connect(e) => Some(e.as_ref()),
            RunError::Prepare { error, .. } => Some(error.as_ref()),
            RunError::Profile(e) => Some(e),
            RunError::Schema { error, .. } | RunError::Output { error, .. } => Some(error.as_ref()),
        }
    }
}

fn consistency(cl: ConsistencyLevel) -> Consistency {
    match cl {
        ConsistencyLevel::Any => Consistency::Any,
        ConsistencyLevel::One => Consistency::One,
        ConsistencyLevel::Two => Consistency::Two,
        ConsistencyLevel::Three => Consistency::Three,
        ConsistencyLevel::Quorum => Consistency::Quorum,
        ConsistencyLevel::All => Consistency::All,
        ConsistencyLevel::LocalQuorum => Consistency::LocalQuorum,
        ConsistencyLevel::EachQuorum => Consistency::EachQuorum,
        ConsistencyLevel::LocalOne => Consistency::LocalOne,
    }
}

/// A connected session with the workload's statements prepared.
pub struct Prepared {
    pub session: Arc<Session>,
    pub workload: Arc<Workload>,
    pub statements: Arc<Vec<PreparedStatement>>,
}

/// Connects, creates the schema and prepares every op.
pub async fn connect_and_prepare(
    o: &StressOptions,
    mut workload: Workload,
) -> Result<Prepared, RunError> {
    let nodes: Vec<String> = o
        .nodes
        .iter()
        .map(|n| {
            if n.contains(':') {
                n.clone()
            } else {
                format!("{n}:{}", o.port)
            }
        })
        .collect();
    let pool = std::num::NonZeroUsize::new(o.connections_per_host as usize)
        .unwrap_or(std::num::NonZeroUsize::MIN);
    let session = SessionBuilder::new()
        .known_nodes(&nodes)
        .pool_size(PoolSize::PerHost(pool))
        .fetch_schema_metadata(false)
        .build()
        .await
        .map_err(|e| RunError::Connect(Box::new(e)))?;
    let profile = match &o.profile {
        ProfileKind::User(path) => Some(crate::profile::load(path)?),
        _ => None,
    };
    create_schema(&session, &workload.schema_cql, profile.as_ref()).await?;
    let mut statements = Vec::new();
    for op in workload.ops.iter_mut() {
        let mut ps = session
            .prepare(op.cql.as_str())
            .await
            .map_err(|e| RunError::Prepare {
                cql: op.cql.clone(),
                error: Box::new(e),
            })?;
        ps.set_consistency(consistency(o.consistency));
        ps.set_is_idempotent(true);
        ps.set_request_timeout(Some(REQUEST_TIMEOUT));
        if let (Some(p), ValuesGen::User(gens)) = (&profile, &mut op.values) {
            for spec in ps.get_variable_col_specs().iter() {
                gens.push(p.bind_gen(spec.name(), spec.typ())?);
            }
        }
        statements.push(ps);
    }
    Ok(Prepared {
        session: Arc::new(session),
        workload: Arc::new(workload),
        statements: Arc::new(statements),
    })
}

/// Runs the workload's schema statements (an existing keyspace or table is fine) and, for a
/// user profile, switches to its keyspace once it exists.
async fn create_schema(
    session: &Session,
    schema_cql: &[String],
    profile: Option<&UserProfile>,
) -> Result<(), RunError> {
    for cql in schema_cql {
        if let Err(e) = session.query_unpaged(cql.as_str(), &[]).await {
            // Profiles use plain CREATE; an existing keyspace or table is what we want anyway.
            if !e.to_string().to_ascii_lowercase().contains("already exist") {
                return Err(RunError::Schema {
                    cql: cql.clone(),
                    error: Box::new(e),
                });
            }
        }
        if let Some(p) = profile {
            if cql.to_ascii_uppercase().contains("KEYSPACE") {
                session
                    .use_keyspace(&p.keyspace, false)
                    .await
                    .map_err(|e| RunError::Schema {
                        cql: format!("USE {}", p.keyspace),
                        error: Box::new(e),
                    })?;
            }
        }
    }
    if let Some(p) = profile {
        session
            .use_keyspace(&p.keyspace, false)
            .await
            .map_err(|e| RunError::Schema {
                cql: format!("USE {}", p.keyspace),
                error: Box::new(e),
            })?;
    }
    Ok(())
}

/// What one phase is asked to do.
#[derive(Debug, Clone)]
pub struct PhaseSpec {
    pub name: String,
    pub rate: RateMode,
    pub stop: StopCondition,
    pub threads: u32,
    pub population: DistSpec,
    /// Op index to force (the `sla` load phase writes only); `None`: weighted pick.
    pub only_op: Option<usize>,
    pub print_progress: bool,
}

/// Results of one phase.
#[derive(Debug, Clone)]
pub struct PhaseResult {
    pub name: String,
    pub op_names: Vec<String>,
    /// Whole-phase windows per op.
    pub per_op: Vec<OpWindow>,
    pub elapsed: Duration,
    /// Wall-clock start, so a bench can line the phase up with what it sampled of the server.
    pub started: std::time::SystemTime,
    pub client_cpu: Duration,
    /// One JSON object per interval.
    pub intervals: Vec<serde_json::Value>,
    pub offered_rate_per_s: Option<f64>,
}

impl PhaseResult {
    /// All ops merged.
    pub fn total(&self) -> OpWindow {
        let mut it = self.per_op.iter();
        let mut acc = it.next().cloned().unwrap_or_else(|| OpWindow {
            hist: crate::stats::new_histogram(),
            errors: 0,
        });
        for w in it {
            acc.merge(w);
        }
        acc
    }

    /// Client CPU milliseconds per 1,000 completed operations.
    pub fn cpu_ms_per_1000_ops(&self) -> f64 {
        let ops = self.total().hist.len();
        if ops == 0 {
            return 0.0;
        }
        self.client_cpu.as_secs_f64() * 1e3 * 1000.0 / ops as f64
    }

    /// The phase as JSON (totals, per op, intervals).
    pub fn to_json(&self) -> serde_json::Value {
        let mut per_op = serde_json::Map::new();
        for (name, w) in self.op_names.iter().zip(&self.per_op) {
            per_op.insert(name.clone(), Summary::of(w, self.elapsed).to_json());
        }
        serde_json::json!({
            "phase": self.name,
            "offered_rate_per_s": self.offered_rate_per_s,
            "elapsed_s": crate::stats::round3(self.elapsed.as_secs_f64()),
            "started_unix_s": crate::stats::round3(
                self.started
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs_f64()
            ),
            "total": Summary::of(&self.total(), self.elapsed).to_json(),
            "ops": per_op,
            "client_cpu_s": crate::stats::round3(self.client_cpu.as_secs_f64()),
            "client_cpu_ms_per_1000_ops": crate::stats::round3(self.cpu_ms_per_1000_ops()),
            "intervals": self.intervals,
        })
    }
}

/// Interval outputs: the `-log` file and the `-hdr` interval log.
pub struct Sinks {
    log: Option<BufWriter<File>>,
    hdr: Option<BufWriter<File>>,
    hdr_serializer: V2DeflateSerializer,
    base: Instant,
}

impl Sinks {
    /// Opens the files the options name.
    pub fn open(o: &StressOptions) -> Result<Self, RunError> {
        let open = |p: &std::path::Path| {
            File::create(p)
                .map(BufWriter::new)
                .map_err(|e| RunError::Output {
                    path: p.display().to_string(),
                    error: Box::new(e),
                })
        };
        let log = o.log_file.as_deref().map(open).transpose()?;
        let mut hdr = o.hdr_file.as_deref().map(open).transpose()?;
        let mut hdr_serializer = V2DeflateSerializer::new();
        if let Some(w) = hdr.as_mut() {
            let written = IntervalLogWriterBuilder::new()
                .add_comment("helenus stress interval log; values in microseconds; tag = phase/op")
                .with_start_time(SystemTime::now())
                .with_base_time(SystemTime::now())
                .begin_log_with(w, &mut hdr_serializer)
                .map(|_| ());
            written.map_err(|e| RunError::Output {
                path: format!("{:?}", o.hdr_file),
                error: Box::new(e),
            })?;
        }
        Ok(Sinks {
            log,
            hdr,
            hdr_serializer,
            base: Instant::now(),
        })
    }

    fn line(&mut self, s: &str, print: bool) {
        if print {
            println!("{s}");
        }
        if let Some(w) = self.log.as_mut() {
            let _ = writeln!(w, "{s}");
        }
    }

    fn hdr_interval(&mut self, tag: &str, w: &OpWindow, start: Instant, dur: Duration) {
        let Some(out) = self.hdr.as_mut() else { return };
        let tag: String = tag
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '/' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if let Ok(mut writer) =
            IntervalLogWriterBuilder::new().begin_log_with(out, &mut self.hdr_serializer)
        {
            let _ = writer.write_histogram(
                &w.hist,
                start.saturating_duration_since(self.base),
                dur,
                Tag::new(&tag),
            );
        }
    }

    /// Flushes both files.
    pub fn flush(&mut self) {
        if let Some(w) = self.log.as_mut() {
            let _ = w.flush();
        }
        if let Some(w) = self.hdr.as_mut() {
            let _ = w.flush();
        }
    }
}

struct WorkerCtx {
    prepared: Arc<Vec<PreparedStatement>>,
    session: Arc<Session>,
    workload: Arc<Workload>,
    schedule: Arc<Schedule>,
    recorder: Arc<Recorder>,
    sampler: Sampler,
    only_op: Option<usize>,
    errors_printed: Arc<AtomicU64>,
}

async fn worker(ctx: Arc<WorkerCtx>, id: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    while let Some(ticket) = ctx.schedule.next(Instant::now()) {
        if let Some(wake) = ctx.schedule.wake_at(&ticket) {
            if wake > Instant::now() {
                tokio::time::sleep_until(wake.into()).await;
            }
        }
        let op = ctx
            .only_op
            .unwrap_or_else(|| ctx.workload.pick_op(&mut rng));
        let (Some(def), Some(stmt)) = (ctx.workload.ops.get(op), ctx.prepared.get(op)) else {
            continue;
        };
        let index = ctx.sampler.next(&mut rng);
        let values = bind_values(def, index, &mut rng);
        let sent = Instant::now();
        let origin = ctx.schedule.latency_origin(&ticket, sent);
        let result = ctx.session.execute_unpaged(stmt, values).await;
        let latency = Instant::now().saturating_duration_since(origin);
        if let Err(e) = &result {
            if ctx.errors_printed.fetch_add(1, Ordering::Relaxed) < MAX_PRINTED_ERRORS {
                eprintln!("error in {}: {e}", def.name);
            }
        }
        ctx.recorder.record(id, op, latency, result.is_ok());
    }
}

/// What a phase's progress report needs besides the counts.
struct Progress<'a> {
    spec: &'a PhaseSpec,
    op_names: &'a [String],
    start: Instant,
}

impl Progress<'_> {
    /// One interval from `last` to `now`: a progress line per op (and a total line), the HDR
    /// intervals, and the interval's JSON entry; `window` is merged into `totals`.
    fn report(
        &self,
        sinks: &mut Sinks,
        totals: &mut [OpWindow],
        window: &[OpWindow],
        last: Instant,
        now: Instant,
    ) -> serde_json::Value {
        let dur = now.saturating_duration_since(last);
        let mut entry = serde_json::Map::new();
        entry.insert(
            "time_s".into(),
            serde_json::json!(crate::stats::round3(
                now.saturating_duration_since(self.start).as_secs_f64()
            )),
        );
        let mut merged: Option<OpWindow> = None;
        for (i, w) in window.iter().enumerate() {
            if let Some(t) = totals.get_mut(i) {
                t.merge(w);
            }
            let name = self.op_names.get(i).map(String::as_str).unwrap_or("?");
            let s = Summary::of(w, dur);
            let total_ops = totals.get(i).map(|t| t.hist.len()).unwrap_or(0);
            let total_err = totals.get(i).map(|t| t.errors).unwrap_or(0);
            sinks.line(
                &progress_line(
                    name,
                    total_ops,
                    &s,
                    now.saturating_duration_since(self.start),
                    total_err,
                ),
                self.spec.print_progress,
            );
            sinks.hdr_interval(&format!("{}/{}", self.spec.name, name), w, last, dur);
            entry.insert(name.to_string(), s.to_json());
            match merged.as_mut() {
                Some(m) => m.merge(w),
                None => merged = Some(w.clone()),
            }
        }
        if window.len() > 1 {
            if let Some(m) = merged {
                let all_ops: u64 = totals.iter().map(|t| t.hist.len()).sum();
                let all_err: u64 = totals.iter().map(|t| t.errors).sum();
                let s = Summary::of(&m, dur);
                sinks.line(
                    &progress_line(
                        "total",
                        all_ops,
                        &s,
                        now.saturating_duration_since(self.start),
                        all_err,
                    ),
                    self.spec.print_progress,
                );
                entry.insert("total".into(), s.to_json());
            }
        }
        serde_json::Value::Object(entry)
    }
}

/// Runs one phase to completion and reports it.
pub async fn run_phase(
    p: &Prepared,
    spec: &PhaseSpec,
    sinks: &mut Sinks,
    interval: Duration,
) -> PhaseResult {
    let op_names: Vec<String> = p.workload.ops.iter().map(|o| o.name.clone()).collect();
    let recorder = Arc::new(Recorder::new(op_names.len(), spec.threads as usize));
    let start = Instant::now();
    let started = std::time::SystemTime::now();
    let schedule = Arc::new(Schedule::new(spec.rate, spec.stop, start));
    let ctx = Arc::new(WorkerCtx {
        prepared: p.statements.clone(),
        session: p.session.clone(),
        workload: p.workload.clone(),
        schedule,
        recorder: recorder.clone(),
        sampler: Sampler::new(spec.population.clone()),
        only_op: spec.only_op,
        errors_printed: Arc::new(AtomicU64::new(0)),
    });
    let cpu0 = process_cpu_time();
    let mut workers = tokio::task::JoinSet::new();
    for id in 0..spec.threads as usize {
        let seed =
            crate::dist::mix64(start.elapsed().as_nanos() as u64 ^ ((id as u64) << 32) ^ 0x5eed);
        workers.spawn(worker(ctx.clone(), id, seed));
    }
    sinks.line(
        &format!(
            "Running {} ({} threads, {:?}, {:?})",
            spec.name, spec.threads, spec.rate, spec.stop
        ),
        spec.print_progress,
    );
    sinks.line(PROGRESS_HEADER, spec.print_progress);
    let mut totals: Vec<OpWindow> = recorder.take_interval();
    let mut intervals = Vec::new();
    let mut ticker = tokio::time::interval_at((start + interval).into(), interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let progress = Progress {
        spec,
        op_names: &op_names,
        start,
    };
    let mut last = start;
    let mut done = false;
    while !done {
        tokio::select! {
            _ = ticker.tick() => {}
            joined = workers.join_next() => {
                match joined {
                    None => done = true,
                    // A panicked worker only loses its own requests; the rest of the run goes on.
                    Some(Err(e)) => eprintln!("worker failed: {e}"),
                    Some(Ok(())) => {}
                }
                if !done { continue; }
            }
        }
        let now = Instant::now();
        let window = recorder.take_interval();
        intervals.push(progress.report(sinks, &mut totals, &window, last, now));
        last = now;
    }
    sinks.flush();
    let elapsed = start.elapsed();
    let offered = match spec.rate {
        RateMode::Fixed { rate_per_s } | RateMode::Throttle { rate_per_s } => Some(rate_per_s),
        RateMode::Unlimited => None,
    };
    PhaseResult {
        name: spec.name.clone(),
        op_names,
        per_op: totals,
        elapsed,
        started,
        client_cpu: process_cpu_time().saturating_sub(cpu0),
        intervals,
        offered_rate_per_s: offered,
    }
}

/// cassandra-stress's closing "Results:" block.
pub fn print_summary(r: &PhaseResult) {
    let total = Summary::of(&r.total(), r.elapsed);
    println!("\nResults:");
    if r.per_op.len() > 1 {
        for (name, w) in r.op_names.iter().zip(&r.per_op) {
            let s = Summary::of(w, r.elapsed);
            println!(
                "  {name:<10} {:>9.0} op/s  mean {:.2}  med {:.2}  .90 {:.2}  .99 {:.2}  .999 {:.2}  max {:.2} ms  errors {}",
                s.rate_per_s, s.mean_ms, s.p50_ms, s.p90_ms, s.p99_ms, s.p999_ms, s.max_ms, s.errors
            );
        }
    }
    if let Some(rate) = r.offered_rate_per_s {
        println!("Offered rate              : {rate:>10.0} op/s");
    }
    println!(
        "Op rate                   : {:>10.0} op/s",
        total.rate_per_s
    );
    println!("Latency mean              : {:>10.2} ms", total.mean_ms);
    println!("Latency median            : {:>10.2} ms", total.p50_ms);
    println!("Latency 90th percentile   : {:>10.2} ms", total.p90_ms);
    println!("Latency 95th percentile   : {:>10.2} ms", total.p95_ms);
    println!("Latency 99th percentile   : {:>10.2} ms", total.p99_ms);
    println!("Latency 99.9th percentile : {:>10.2} ms", total.p999_ms);
    println!("Latency max               : {:>10.2} ms", total.max_ms);
    println!("Total operations          : {:>10}", total.ops);
    println!("Total errors              : {:>10}", total.errors);
    println!(
        "Total operation time      : {:>10.1} s",
        r.elapsed.as_secs_f64()
    );
    println!(
        "Client CPU                : {:>10.2} s ({:.2} ms per 1,000 ops)",
        r.client_cpu.as_secs_f64(),
        r.cpu_ms_per_1000_ops()
    );
}
