//! `helenus cluster`: ccm for Helenus. Nodes on consecutive loopback addresses, each with its
//! data and log under the cluster directory, started one after another (a node chooses its
//! tokens from the ring it finds, so two must not choose at once), each start returning once
//! the first node sees the new one Up and Normal.
//!
//! ```text
//! helenus cluster start 3 [--dir DIR] [--first-address 127.0.0.1] [--dcs 2] [-- SERVER ARGS]
//! helenus cluster status | stop [NODE] | kill NODE | pause NODE | resume NODE | start NODE
//! helenus cluster add [--dc DC]      # one more node, which bootstraps (streams its ranges)
//! helenus cluster replace NODE       # a new node that takes over dead NODE's tokens
//! helenus cluster nodetool NODE ARGS... | cqlsh NODE [ARGS...] | clear
//! ```
//!
//! The layout is `DIR/cluster.txt` (one line per node: name, address, data center) and
//! `DIR/nodeN/{pid,log,data...}`. Signals go through `kill(1)`: pause is SIGSTOP, resume
//! SIGCONT, kill SIGKILL, stop SIGTERM and a wait.

use crate::nodetool;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one node may take to start and be seen Up and Normal.
const NODE_START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long an added node may take: it streams its ranges before it is Normal.
const NODE_ADD_TIMEOUT: Duration = Duration::from_secs(1800);
/// How long `stop` waits for a node to exit after SIGTERM before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub enum ClusterError {
    Usage(String),
    Io(std::io::Error),
    /// A node did not start or join in time; its log's last lines.
    Start {
        node: String,
        log: String,
    },
}

impl std::fmt::Display for ClusterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClusterError::Usage(m) => write!(f, "{m}"),
            ClusterError::Io(e) => write!(f, "{e}"),
            ClusterError::Start { node, log } => {
                write!(
                    f,
                    "{node} did not join the ring in time; its log ends:\n{log}"
                )
            }
        }
    }
}

impl From<std::io::Error> for ClusterError {
    fn from(e: std::io::Error) -> Self {
        ClusterError::Io(e)
    }
}

const USAGE: &str = "usage: helenus cluster start N [--dir DIR] [--first-address IP] [--dcs D] [-- SERVER ARGS]\n\
       helenus cluster [--dir DIR] status | stop [NODE] | kill NODE | pause NODE | resume NODE | start NODE | add [--dc DC] | replace NODE | nodetool NODE ARGS | cqlsh NODE | clear";

struct NodeEntry {
    name: String,
    address: Ipv4Addr,
    datacenter: String,
}

struct ClusterDir {
    dir: PathBuf,
    nodes: Vec<NodeEntry>,
    server_args: Vec<String>,
}

impl ClusterDir {
    fn load(dir: &Path) -> Result<ClusterDir, ClusterError> {
        let text = std::fs::read_to_string(dir.join("cluster.txt")).map_err(|e| {
            ClusterError::Usage(format!(
                "no cluster in {} ({e}); start one with `helenus cluster start N`",
                dir.display()
            ))
        })?;
        let mut nodes = Vec::new();
        let mut server_args = Vec::new();
        for line in text.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                ["args", rest @ ..] => server_args = rest.iter().map(|s| s.to_string()).collect(),
                [name, address, dc] => nodes.push(NodeEntry {
                    name: name.to_string(),
                    address: address.parse().map_err(|_| {
                        ClusterError::Usage(format!("bad line in cluster.txt: {line}"))
                    })?,
                    datacenter: dc.to_string(),
                }),
                _ => {}
            }
        }
        Ok(ClusterDir {
            dir: dir.to_path_buf(),
            nodes,
            server_args,
        })
    }

    fn save(&self) -> Result<(), ClusterError> {
        let mut text = format!("args {}\n", self.server_args.join(" "));
        for n in &self.nodes {
            text.push_str(&format!("{} {} {}\n", n.name, n.address, n.datacenter));
        }
        std::fs::create_dir_all(&self.dir)?;
        std::fs::write(self.dir.join("cluster.txt"), text)?;
        Ok(())
    }

    fn node(&self, name: &str) -> Result<&NodeEntry, ClusterError> {
        self.nodes
            .iter()
            .find(|n| n.name == name || n.address.to_string() == name)
            .ok_or_else(|| ClusterError::Usage(format!("no node {name} in this cluster")))
    }

    fn node_dir(&self, n: &NodeEntry) -> PathBuf {
        self.dir.join(&n.name)
    }

    fn pid(&self, n: &NodeEntry) -> Option<u32> {
        std::fs::read_to_string(self.node_dir(n).join("pid"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
    }

    fn running(&self, n: &NodeEntry) -> Option<u32> {
        self.pid(n).filter(|pid| is_alive(*pid))
    }

    /// The seeds: the first node of each data center.
    fn seeds(&self) -> String {
        let mut seen = Vec::new();
        let mut seeds = Vec::new();
        for n in &self.nodes {
            if !seen.contains(&n.datacenter) {
                seen.push(n.datacenter.clone());
                seeds.push(n.address.to_string());
            }
        }
        seeds.join(",")
    }

    /// Starts `n` and waits until the first running node reports it Up and Normal.
    fn start_node(&self, n: &NodeEntry) -> Result<(), ClusterError> {
        self.start_node_within(n, NODE_START_TIMEOUT, &[])
    }

    /// Starts `n` with `extra` server arguments after the cluster's.
    fn start_node_within(
        &self,
        n: &NodeEntry,
        limit: Duration,
        extra: &[String],
    ) -> Result<(), ClusterError> {
        if self.running(n).is_some() {
            return Ok(());
        }
        let dir = self.node_dir(n);
        std::fs::create_dir_all(&dir)?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("log"))?;
        let exe = std::env::current_exe()?;
        let mut child = Command::new(exe)
            .arg("server")
            .args(["--listen-address", &n.address.to_string()])
            .args(["--data-dir", &dir.display().to_string()])
            .args(["--seeds", &self.seeds()])
            .args(["--dc", &n.datacenter])
            .args(&self.server_args)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        std::fs::write(dir.join("pid"), child.id().to_string())?;
        let started = Instant::now();
        while started.elapsed() < limit {
            // Exited already (a refused start): try_wait reaps it, where /proc would still
            // show the unreaped child.
            if !matches!(child.try_wait(), Ok(None)) {
                break;
            }
            if self.seen_normal(n) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        let text = std::fs::read_to_string(dir.join("log")).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        Err(ClusterError::Start {
            node: n.name.clone(),
            log: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        })
    }

    /// Whether `n` answers CQL and every running node, itself included, lists it `UN`.
    fn seen_normal(&self, n: &NodeEntry) -> bool {
        if std::net::TcpStream::connect((n.address, 9042)).is_err() {
            return false;
        }
        let line_start = "UN  ";
        self.nodes
            .iter()
            .filter(|o| self.running(o).is_some())
            .all(|o| {
                let api = nodetool::Node::plain(o.address.to_string(), 10000);
                api.request("GET", "/helenus/ring/status").is_ok_and(|s| {
                    s.lines().any(|l| {
                        l.starts_with(line_start)
                            && l.split_whitespace().nth(1) == Some(&n.address.to_string())
                    })
                })
            })
    }

    fn signal(&self, n: &NodeEntry, signal: &str) -> Result<(), ClusterError> {
        let Some(pid) = self.running(n) else {
            return Err(ClusterError::Usage(format!("{} is not running", n.name)));
        };
        let status = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()?;
        if !status.success() {
            return Err(ClusterError::Usage(format!("kill {signal} {pid} failed")));
        }
        Ok(())
    }

    fn stop_node(&self, n: &NodeEntry) -> Result<(), ClusterError> {
        if self.running(n).is_none() {
            return Ok(());
        }
        // A paused node cannot act on SIGTERM.
        self.signal(n, "-CONT")?;
        self.signal(n, "-TERM")?;
        let started = Instant::now();
        while self.running(n).is_some() {
            if started.elapsed() > STOP_TIMEOUT {
                self.signal(n, "-KILL")?;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }
}

/// Whether process `pid` exists and has not exited: a killed node whose parent (gone, or an init
/// that reaps late) has not reaped it yet is a zombie, and must count as stopped.
fn is_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses and may hold spaces.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

struct StartOptions {
    count: usize,
    first: Ipv4Addr,
    datacenters: usize,
    server_args: Vec<String>,
}

fn parse_start(args: &[String]) -> Result<StartOptions, ClusterError> {
    let mut opts = StartOptions {
        count: 0,
        first: Ipv4Addr::new(127, 0, 0, 1),
        datacenters: 1,
        server_args: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |what: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| ClusterError::Usage(format!("{what} needs a value\n{USAGE}")))
        };
        match a.as_str() {
            "--first-address" => {
                opts.first = value(a)?
                    .parse()
                    .map_err(|_| ClusterError::Usage(format!("bad address\n{USAGE}")))?
            }
            "--dcs" => {
                opts.datacenters = value(a)?
                    .parse()
                    .map_err(|_| ClusterError::Usage(format!("bad --dcs\n{USAGE}")))?
            }
            "--" => {
                opts.server_args = it.cloned().collect();
                break;
            }
            n => {
                opts.count = n
                    .parse()
                    .map_err(|_| ClusterError::Usage(format!("unknown argument {n}\n{USAGE}")))?
            }
        }
    }
    if opts.count == 0 || opts.datacenters == 0 || opts.datacenters > opts.count {
        return Err(ClusterError::Usage(USAGE.to_string()));
    }
    Ok(opts)
}

/// `helenus cluster ...`.
pub fn run(args: Vec<String>) -> Result<(), ClusterError> {
    let mut dir = PathBuf::from("helenus-cluster");
    let mut rest = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        if a == "--dir" {
            dir = it
                .next()
                .map(PathBuf::from)
                .ok_or_else(|| ClusterError::Usage(USAGE.to_string()))?;
        } else {
            rest.push(a);
        }
    }
    let Some((cmd, args)) = rest.split_first() else {
        return Err(ClusterError::Usage(USAGE.to_string()));
    };
    match (cmd.as_str(), args) {
        ("start", [name]) if name.starts_with("node") => {
            let c = ClusterDir::load(&dir)?;
            c.start_node(c.node(name)?)
        }
        ("start", args) => create(&dir, parse_start(args)?),
        ("add", args) => add(&dir, args),
        ("replace", [name]) => replace(&dir, name),
        ("status", _) => status(&ClusterDir::load(&dir)?),
        ("stop", []) | ("clear", []) => {
            let c = ClusterDir::load(&dir)?;
            for n in c.nodes.iter().rev() {
                c.stop_node(n)?;
            }
            if cmd == "clear" {
                std::fs::remove_dir_all(&dir)?;
            }
            Ok(())
        }
        ("stop", [name]) => {
            let c = ClusterDir::load(&dir)?;
            c.stop_node(c.node(name)?)
        }
        ("kill" | "pause" | "resume", [name]) => {
            let c = ClusterDir::load(&dir)?;
            let signal = match cmd.as_str() {
                "kill" => "-KILL",
                "pause" => "-STOP",
                _ => "-CONT",
            };
            c.signal(c.node(name)?, signal)
        }
        ("nodetool", [name, nt @ ..]) => {
            let c = ClusterDir::load(&dir)?;
            let n = c.node(name)?;
            let mut full = vec!["-h".to_string(), n.address.to_string()];
            full.extend(nt.iter().cloned());
            nodetool::run(full).map_err(|e| ClusterError::Usage(e.to_string()))
        }
        ("cqlsh", [name, extra @ ..]) => {
            let c = ClusterDir::load(&dir)?;
            let n = c.node(name)?;
            let status = Command::new("cqlsh")
                .arg(n.address.to_string())
                .args(extra)
                .status()?;
            if status.success() {
                Ok(())
            } else {
                Err(ClusterError::Usage(format!("cqlsh exited with {status}")))
            }
        }
        _ => Err(ClusterError::Usage(USAGE.to_string())),
    }
}

fn create(dir: &Path, opts: StartOptions) -> Result<(), ClusterError> {
    if dir.join("cluster.txt").exists() {
        let c = ClusterDir::load(dir)?;
        for n in &c.nodes {
            c.start_node(n)?;
        }
        return status(&c);
    }
    let first = u32::from(opts.first);
    let nodes = (0..opts.count)
        .map(|i| NodeEntry {
            name: format!("node{}", i + 1),
            address: Ipv4Addr::from(first + i as u32),
            datacenter: if opts.datacenters == 1 {
                "datacenter1".to_string()
            } else {
                format!("dc{}", i * opts.datacenters / opts.count + 1)
            },
        })
        .collect();
    let c = ClusterDir {
        dir: dir.to_path_buf(),
        nodes,
        server_args: opts.server_args,
    };
    c.save()?;
    for n in &c.nodes {
        c.start_node(n)?;
    }
    status(&c)
}

/// `replace NODE`: a new node on the address after the highest one, in NODE's data center,
/// started with `--replace-address` of NODE (which must be dead): it takes over NODE's tokens,
/// streams its ranges and returns once every running node sees it UN.
fn replace(dir: &Path, name: &str) -> Result<(), ClusterError> {
    let mut c = ClusterDir::load(dir)?;
    let (dead, datacenter) = {
        let n = c.node(name)?;
        if c.running(n).is_some() {
            return Err(ClusterError::Usage(format!(
                "{} is running: kill or stop it before replacing it",
                n.name
            )));
        }
        (n.address, n.datacenter.clone())
    };
    let address = next_address(&c)?;
    let new_name = format!("node{}", c.nodes.len() + 1);
    c.nodes.push(NodeEntry {
        name: new_name.clone(),
        address,
        datacenter,
    });
    c.save()?;
    let extra = ["--replace-address".to_string(), dead.to_string()];
    c.start_node_within(c.node(&new_name)?, NODE_ADD_TIMEOUT, &extra)?;
    status(&c)
}

/// The address after the highest one in the cluster.
fn next_address(c: &ClusterDir) -> Result<Ipv4Addr, ClusterError> {
    c.nodes
        .iter()
        .map(|n| u32::from(n.address))
        .max()
        .map(|a| Ipv4Addr::from(a + 1))
        .ok_or_else(|| ClusterError::Usage("the cluster has no node to join".into()))
}

/// `add [--dc DC]`: a new node on the address after the highest one, in `DC` (default: the
/// last node's), started as a non-seed so it bootstraps; returns once every node sees it UN.
fn add(dir: &Path, args: &[String]) -> Result<(), ClusterError> {
    let mut c = ClusterDir::load(dir)?;
    let datacenter = match args {
        [] => c.nodes.last().map(|n| n.datacenter.clone()),
        [flag, dc] if flag == "--dc" => Some(dc.clone()),
        _ => None,
    }
    .ok_or_else(|| ClusterError::Usage(USAGE.to_string()))?;
    let address = next_address(&c)?;
    let name = format!("node{}", c.nodes.len() + 1);
    c.nodes.push(NodeEntry {
        name: name.clone(),
        address,
        datacenter,
    });
    c.save()?;
    c.start_node_within(c.node(&name)?, NODE_ADD_TIMEOUT, &[])?;
    status(&c)
}

fn status(c: &ClusterDir) -> Result<(), ClusterError> {
    for n in &c.nodes {
        let state = match c.running(n) {
            Some(pid) => format!("running (pid {pid})"),
            None => "stopped".to_string(),
        };
        println!("{}  {}  {}  {state}", n.name, n.address, n.datacenter);
    }
    if let Some(n) = c.nodes.iter().find(|n| c.running(n).is_some()) {
        let api = nodetool::Node::plain(n.address.to_string(), 10000);
        if let Ok(s) = api.request("GET", "/helenus/ring/status") {
            println!("\n{s}");
        }
    }
    Ok(())
}
