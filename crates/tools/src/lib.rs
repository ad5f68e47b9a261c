//! Helenus's tools that are not the server: `helenus stress` (a cassandra-stress compatible load
//! generator with an open-model scheduler, HdrHistogram latencies, a step-load `sla` mode and
//! tlp-stress's `BasicTimeSeries` as the `timeseries` command) and
//! the protocol-ceiling server used by `bench/` to measure the native protocol's cost alone.
//!
//! It talks to servers only through the `scylla` driver (stress) or a minimal v4 codec (ceiling);
//! it owns no server code.

pub mod ceiling;
pub mod dist;
pub mod options;
pub mod profile;
pub mod runner;
pub mod scheduler;
pub mod sla;
pub mod stats;
pub mod timeseries;
pub mod workload;

use std::io::Write;

/// Runs `work` on the runtime `builder` makes, for a tool's `main`: a runtime that cannot start
/// or work that fails prints `error: ...` and exits with status 1.
pub fn block_on_or_exit<E: std::fmt::Display>(
    mut builder: tokio::runtime::Builder,
    work: impl std::future::Future<Output = Result<(), E>>,
) {
    let outcome = builder
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
        .and_then(|rt| rt.block_on(work).map_err(|e| e.to_string()));
    if let Err(e) = outcome {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

use options::{parse_args, StressOptions, USAGE};
use runner::{connect_and_prepare, print_summary, run_phase, PhaseSpec, Sinks};
use workload::Workload;

/// Entry point of `helenus stress ARGS...` (`args` excludes `stress`). Returns the exit code:
/// 0 success, 1 the run failed or had errors, 2 bad command line.
pub fn stress_main(args: Vec<String>) -> i32 {
    if args.is_empty()
        || matches!(
            args.first().map(String::as_str),
            Some("help" | "-h" | "--help")
        )
    {
        println!("{USAGE}");
        return if args.is_empty() { 2 } else { 0 };
    }
    let opts = match parse_args(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}\n\n{USAGE}");
            return 2;
        }
    };
    let workload = match Workload::from_options(&opts) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    // One thread by default, as latte's `-t 1`: it avoids cross-thread wake-ups, and on a
    // machine the client shares with the server every client CPU second is the server's loss.
    // Against two worker threads on 2 cores (same node, closed loop, 3 pairs): 7.2 -> 5.0 ms of
    // client CPU per 1,000 writes and 71k -> 86k op/s; 7.8 -> 4.6 ms per 1,000 reads and
    // 76k -> 103k op/s. One thread at ~5 µs per request drives ~200k requests/s; `clientThreads=N`
    // gives a bigger machine more.
    let built = if opts.client_threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(opts.client_threads as usize)
            .enable_all()
            .build()
    };
    let rt = match built {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return 1;
        }
    };
    rt.block_on(async move {
        match run(opts, workload).await {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e}");
                1
            }
        }
    })
}

async fn run(opts: StressOptions, workload: Workload) -> Result<i32, runner::RunError> {
    let population = opts
        .population
        .clone()
        .unwrap_or_else(|| workload.default_population.clone());
    let prepared = connect_and_prepare(&opts, workload).await?;
    let mut sinks = Sinks::open(&opts)?;
    if let Some(ts) = opts.timeseries.clone() {
        let report =
            timeseries::run_timeseries(&opts, &ts, &prepared, &mut sinks, population).await;
        write_json(&opts, report.to_json(&opts, &ts))?;
        let errors: u64 = report.steps.iter().map(|s| s.phase.total().errors).sum();
        return Ok(if errors > 0 { 1 } else { 0 });
    }
    if let Some(sla) = opts.sla.clone() {
        let report = sla::run_sla(&opts, &sla, &prepared, &mut sinks, population).await;
        sla::print_report(&report);
        write_json(&opts, report.to_json(&opts))?;
        return Ok(0);
    }
    let spec = PhaseSpec {
        name: opts.command.clone(),
        rate: opts.rate,
        stop: opts.stop,
        threads: opts.threads,
        population,
        only_op: None,
        print_progress: !opts.quiet,
    };
    let result = run_phase(&prepared, &spec, &mut sinks, opts.log_interval).await;
    print_summary(&result);
    let mut json = result.to_json();
    if let Some(obj) = json.as_object_mut() {
        obj.insert("settings".into(), settings_json(&opts));
    }
    write_json(&opts, json)?;
    Ok(if result.total().errors > 0 { 1 } else { 0 })
}

/// The run's settings, recorded next to its numbers.
pub fn settings_json(o: &StressOptions) -> serde_json::Value {
    serde_json::json!({
        "command": o.command,
        "ops": o.ops.iter().map(|(n, w)| serde_json::json!({"op": n, "weight": w})).collect::<Vec<_>>(),
        "profile": format!("{:?}", o.profile),
        "stop": format!("{:?}", o.stop),
        "consistency": format!("{:?}", o.consistency),
        "population": format!("{:?}", o.population),
        "threads": o.threads,
        "rate": format!("{:?}", o.rate),
        "nodes": o.nodes,
        "port": o.port,
        "connections_per_host": o.connections_per_host,
        "keyspace": o.keyspace,
    })
}

fn write_json(o: &StressOptions, v: serde_json::Value) -> Result<(), runner::RunError> {
    let Some(path) = &o.json_file else {
        return Ok(());
    };
    let err = |e: std::io::Error| runner::RunError::Output {
        path: path.display().to_string(),
        error: Box::new(e),
    };
    let mut f = std::fs::File::create(path).map_err(err)?;
    let text = serde_json::to_string_pretty(&v).unwrap_or_default();
    f.write_all(text.as_bytes()).map_err(err)?;
    f.write_all(b"\n").map_err(err)
}
