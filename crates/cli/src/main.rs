//! `helenus`: the node and the tools around it, one binary with subcommands.

mod allocator;
mod cluster;
mod nodetool;

use clap::{Parser, Subcommand};
use helenus_server::config::{ConfigError, NodeConfig};
use helenus_server::StartError;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// mimalloc instead of glibc malloc: the engine allocates and frees millions of small objects
/// (memtable rows and cells, decoded partitions); freeing a flushed memtable with glibc took
/// about a third of a flush's CPU (malloc_consolidate, unlink_chunk), and mimalloc's per-thread
/// free lists make it a fraction. Its C build costs ~5 s (DEPENDENCIES.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "helenus",
    version,
    about = "Helenus: a Cassandra-compatible database node and its tools"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a node.
    Server(ServerArgs),
    /// nodetool commands over the node's admin API: `helenus nodetool -h 127.0.0.1 flush ks t`,
    /// `export ks t DIR [--format parquet]` (a point-in-time Parquet copy, a file per token range).
    #[command(disable_help_flag = true)]
    Nodetool {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// ccm for Helenus: `helenus cluster start 3`, `status`, `kill node2`, `start node2`, ...
    #[command(disable_help_flag = true)]
    Cluster {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Inspect SSTables: `helenus sstable dump FILE` / `helenus sstable verify FILE`.
    Sstable {
        /// dump | verify
        action: String,
        /// Path of the SSTable's Data file (or any component of it).
        file: PathBuf,
    },
    /// cassandra-stress compatible load generator (`helenus stress write n=100000 -rate threads=8`).
    #[command(disable_help_flag = true)]
    Stress {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[derive(clap::Args)]
struct ServerArgs {
    /// helenus.yaml (Cassandra setting names). Defaults need no file.
    #[arg(long)]
    config: Option<PathBuf>,
    #[arg(long = "listen-address")]
    listen_address: Option<String>,
    #[arg(long = "rpc-address")]
    rpc_address: Option<String>,
    #[arg(long = "native-transport-port")]
    native_transport_port: Option<u16>,
    /// Nodes to contact first, `A,B[:PORT]` (cassandra.yaml's `seed_provider` seeds). Without
    /// seeds the node is a cluster of one and opens no storage port.
    #[arg(long)]
    seeds: Option<String>,
    /// Data center of this node (GossipingPropertyFileSnitch's `dc`).
    #[arg(long)]
    dc: Option<String>,
    /// Rack of this node.
    #[arg(long)]
    rack: Option<String>,
    #[arg(long = "storage-port")]
    storage_port: Option<u16>,
    /// Take over the tokens of the dead node at this address on this node's first start
    /// (Cassandra's `-Dcassandra.replace_address_first_boot`).
    #[arg(long = "replace-address")]
    replace_address: Option<String>,
    /// Puts data, commitlog, caches and hints under this directory.
    #[arg(long = "data-dir")]
    data_dir: Option<PathBuf>,
    /// Any other setting by its helenus.yaml name: `--set commitlog_sync=batch`.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
}

/// How long tasks still alive after the drain and the storage shutdown may hold the exit.
const SHUTDOWN_LEFTOVER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Why `helenus server` stopped with an error; printed after `ERROR`.
#[derive(Debug)]
enum ServerError {
    Config(ConfigError),
    /// A `--set` argument without `=`.
    SetSyntax(String),
    UnknownSetting(String),
    Runtime(std::io::Error),
    Start(StartError),
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerError::Config(e) => write!(f, "{e}"),
            ServerError::SetSyntax(kv) => write!(f, "--set expects NAME=VALUE, got '{kv}'"),
            ServerError::UnknownSetting(k) => write!(f, "unknown setting '{k}'"),
            ServerError::Runtime(e) => write!(f, "cannot start the runtime: {e}"),
            ServerError::Start(e) => write!(f, "{e}"),
        }
    }
}

impl From<ConfigError> for ServerError {
    fn from(e: ConfigError) -> Self {
        ServerError::Config(e)
    }
}

fn run_server(args: ServerArgs) -> Result<(), ServerError> {
    allocator::use_small_pages();
    allocator::start_purger();
    let (mut cfg, warnings) = match &args.config {
        Some(path) => NodeConfig::load(path)?,
        None => (NodeConfig::default(), Vec::new()),
    };
    for w in warnings {
        eprintln!("WARN  {w}");
    }
    if let Some(dir) = &args.data_dir {
        cfg.set_data_dir(dir);
    }
    let mut overrides: Vec<(String, String)> = Vec::new();
    if let Some(a) = args.listen_address {
        overrides.push(("listen_address".into(), a));
    }
    if let Some(a) = args.rpc_address {
        overrides.push(("rpc_address".into(), a));
    }
    if let Some(p) = args.native_transport_port {
        overrides.push(("native_transport_port".into(), p.to_string()));
    }
    if let Some(p) = args.storage_port {
        overrides.push(("storage_port".into(), p.to_string()));
    }
    for (name, value) in [
        ("seeds", args.seeds),
        ("dc", args.dc),
        ("rack", args.rack),
        ("replace_address_first_boot", args.replace_address),
    ] {
        if let Some(value) = value {
            overrides.push((name.into(), value));
        }
    }
    for kv in args.set {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| ServerError::SetSyntax(kv.clone()))?;
        overrides.push((k.trim().to_string(), v.trim().to_string()));
    }
    for (k, v) in overrides {
        if !cfg.set(&k, &v)? {
            return Err(ServerError::UnknownSetting(k));
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("helenus")
        .build()
        .map_err(ServerError::Runtime)?;
    let result = runtime
        .block_on(helenus_server::run_until_shutdown(cfg))
        .map_err(ServerError::Start);
    // Dropping the runtime would wait for every task and blocking job, however stuck; the
    // drain in run_until_shutdown already gave them their time.
    runtime.shutdown_timeout(SHUTDOWN_LEFTOVER_TIMEOUT);
    result
}

/// Why `helenus sstable` failed; printed after `ERROR`.
#[derive(Debug)]
enum SstableError {
    Storage(helenus_storage::StorageError),
    /// `verify` found this many problems (listed above the error).
    Damaged(usize),
    UnknownAction(String),
}

impl std::fmt::Display for SstableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SstableError::Storage(e) => write!(f, "{e}"),
            SstableError::Damaged(n) => write!(f, "{n} errors found"),
            SstableError::UnknownAction(a) => {
                write!(f, "unknown sstable action '{a}' (dump | verify)")
            }
        }
    }
}

fn sstable(action: &str, file: &Path) -> Result<(), SstableError> {
    match action {
        "dump" => helenus_storage::dump_sstable(file, &mut std::io::stdout().lock())
            .map_err(SstableError::Storage),
        "verify" => {
            let r = helenus_storage::verify_sstable(file).map_err(SstableError::Storage)?;
            println!("{r:?}");
            if r.errors.is_empty() {
                Ok(())
            } else {
                Err(SstableError::Damaged(r.errors.len()))
            }
        }
        other => Err(SstableError::UnknownAction(other.to_string())),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Server(args) => match run_server(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ERROR {e}");
                ExitCode::from(1)
            }
        },
        Command::Nodetool { args } => match nodetool::run(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(1)
            }
        },
        Command::Cluster { args } => match cluster::run(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ERROR {e}");
                ExitCode::from(1)
            }
        },
        Command::Sstable { action, file } => match sstable(&action, &file) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ERROR {e}");
                ExitCode::from(1)
            }
        },
        Command::Stress { args } => {
            let code = helenus_tools::stress_main(args);
            ExitCode::from(code.clamp(0, 255) as u8)
        }
    }
}
