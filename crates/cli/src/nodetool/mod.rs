//! `helenus nodetool`: nodetool's command names, arguments and output layouts, over the node's admin
//! HTTP API (port 10000). One function per command group: table maintenance, snapshots,
//! statistics, node facts.

mod bootstrap;
mod compaction_throughput;
mod export;
mod http;
mod rebuild;
mod repair;
mod report;
mod streams;

use http::{enc, ks_path};
pub use http::{Node, NodetoolError};

fn usage() -> String {
    "usage: helenus nodetool [-h HOST] [-p PORT] [-u USER (-pw PASSWORD | -pwf FILE)]\n\
     \x20                       [--ssl [--truststore CA.pem]] <command> [args]\n\
     commands: info, flush [ks [tables...]], compact [ks [tables...]], garbagecollect [-g ROW|CELL] [ks [tables...]],\n\
     \x20         cleanup [ks [tables...]], export ks table dir [--format parquet],\n\
     \x20         snapshot [-t tag] [ks...], clearsnapshot [-t tag], tablestats [ks[.table]...],\n\
     \x20         tablehistograms ks table, compactionstats, version,\n\
     \x20         status [ks], ring, describecluster, gossipinfo, getendpoints ks table key,\n\
     \x20         decommission, removenode (HOSTID | status | force), rebuild [SOURCE_DC], bootstrap resume, netstats [-H], repair [-full] [-pr] [-st T -et T] [ks [tables...]],\n\
     \x20         repair_admin [list [--all] | cancel --session ID | summarize-pending],\n\
     \x20         disablehandoff, enablehandoff, statushandoff,\n\
     \x20         setstreamthroughput [-e | -m] N, getstreamthroughput [-e | -m | -d],\n\
     \x20         setcompactionthroughput N, getcompactionthroughput [-d],\n\
     \x20         enableauditlog [--included-keyspaces K,..] [--excluded-keyspaces K,..]\n\
     \x20           [--included-categories C,..] [--excluded-categories C,..]\n\
     \x20           [--included-users U,..] [--excluded-users U,..], disableauditlog, getauditlog"
        .to_string()
}

/// The connection options before the command; the rest of the line.
fn parse_options(args: Vec<String>) -> Result<(Node, Vec<String>), NodetoolError> {
    let usage_err = |m: &str| NodetoolError::Usage(m.to_string());
    let mut node = Node::plain("127.0.0.1".to_string(), 10000);
    let (mut user, mut password, mut password_file) = (None, None, None);
    let (mut ssl, mut truststore) = (false, std::env::var_os("SSL_CERTFILE"));
    let mut rest = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut value = |what: &str| {
            it.next()
                .ok_or_else(|| usage_err(&format!("{a} needs {what}")))
        };
        match a.as_str() {
            "-h" | "--host" => node.host = value("a host")?,
            "-p" | "--port" => {
                node.port = value("a port")?
                    .parse()
                    .map_err(|_| usage_err("bad port"))?
            }
            "-u" | "--username" => user = Some(value("a user")?),
            "-pw" | "--password" => password = Some(value("a password")?),
            "-pwf" | "--password-file" => password_file = Some(value("a file")?),
            "--ssl" => ssl = true,
            "--truststore" => truststore = Some(value("a PEM file")?.into()),
            _ => rest.push(a),
        }
    }
    if let Some(user) = user {
        let password = match (password, password_file) {
            (Some(p), _) => p,
            (None, Some(file)) => password_from_file(&file, &user)?,
            (None, None) => return Err(usage_err("-u needs -pw PASSWORD or -pwf FILE")),
        };
        node.credentials = Some((user, password));
    }
    if ssl {
        let truststore = truststore.ok_or_else(|| {
            usage_err("--ssl needs --truststore CA.pem (or SSL_CERTFILE): the CA of the node's certificate")
        })?;
        node.tls = Some(http::tls_config(std::path::Path::new(&truststore))?);
    }
    Ok((node, rest))
}

/// nodetool's password file: lines of `user password`; the line of `user`.
fn password_from_file(file: &str, user: &str) -> Result<String, NodetoolError> {
    let text = std::fs::read_to_string(file)?;
    text.lines()
        .filter_map(|l| l.trim().split_once(char::is_whitespace))
        .find(|(u, _)| *u == user)
        .map(|(_, p)| p.trim().to_string())
        .ok_or_else(|| NodetoolError::Usage(format!("no password for {user} in {file}")))
}

/// Runs one nodetool command line (options, then `<command> [args]`).
pub fn run(args: Vec<String>) -> Result<(), NodetoolError> {
    let (node, rest) = parse_options(args)?;
    let Some((cmd, args)) = rest.split_first() else {
        return Err(NodetoolError::Usage(usage()));
    };
    match cmd.as_str() {
        "flush" | "compact" | "garbagecollect" | "cleanup" => maintenance(&node, cmd, args),
        "snapshot" => snapshot(&node, args),
        "clearsnapshot" => clearsnapshot(&node, args),
        "tablestats" | "cfstats" | "tablehistograms" | "cfhistograms" | "compactionstats" => {
            statistics(&node, cmd, args)
        }
        "info" | "version" => node_facts(&node, cmd),
        "enableauditlog" | "disableauditlog" | "getauditlog" => audit_log(&node, cmd, args),
        "status" | "ring" | "describecluster" | "gossipinfo" | "getendpoints" => {
            ring_report(&node, cmd, args)
        }
        "decommission" => decommission(&node),
        "removenode" => removenode(&node, args),
        "rebuild" => rebuild::run(&node, args),
        "export" => export::run(&node, args),
        "bootstrap" => bootstrap::run(&node, args),
        "repair" => repair::run(&node, args),
        "repair_admin" => repair::admin(&node, args),
        "disablehandoff" | "enablehandoff" => node
            .request(
                "POST",
                &format!(
                    "/storage_service/hinted_handoff?enabled={}",
                    cmd == "enablehandoff"
                ),
            )
            .map(|_| ()),
        "statushandoff" => {
            let on = node.request_json("GET", "/storage_service/hinted_handoff")?;
            println!(
                "Hinted handoff is {}",
                if on.as_bool() == Some(true) {
                    "running"
                } else {
                    "not running"
                }
            );
            Ok(())
        }
        "netstats" => {
            let human = args.iter().any(|a| a == "-H" || a == "--human-readable");
            let path = format!("/storage_service/netstats?human={human}");
            print!("{}", node.request("GET", &path)?);
            Ok(())
        }
        "setstreamthroughput" | "getstreamthroughput" => streams::run(&node, cmd, args),
        "setcompactionthroughput" | "getcompactionthroughput" => {
            compaction_throughput::run(&node, cmd, args)
        }
        other => Err(NodetoolError::Usage(format!(
            "nodetool: Found unexpected argument '{other}'\n{}",
            usage()
        ))),
    }
}

/// `decommission`: like nodetool's, returns once the node has handed its ranges over and left
/// (the node then stops), or fails with its reason.
fn decommission(node: &Node) -> Result<(), NodetoolError> {
    node.request("POST", "/storage_service/decommission")?;
    let mut last = String::from("LEAVING");
    loop {
        std::thread::sleep(std::time::Duration::from_millis(250));
        match node.request_json("GET", "/storage_service/operation_mode") {
            Ok(mode) => last = mode.as_str().unwrap_or_default().to_string(),
            // It stops right after DECOMMISSIONED; gone after that is done.
            Err(NodetoolError::Connect { .. }) if last == "DECOMMISSIONED" => return Ok(()),
            Err(e) => return Err(e),
        }
        match last.as_str() {
            "DECOMMISSIONED" => return Ok(()),
            "LEAVING" => {}
            failed => return Err(NodetoolError::Refused(failed.to_string())),
        }
    }
}

/// `removenode HOSTID`: like nodetool's, returns once the dead node's ranges are restored and
/// it is out of the ring; `removenode status` prints the removal under way; `removenode force`
/// ends it at once.
fn removenode(node: &Node, args: &[String]) -> Result<(), NodetoolError> {
    let status = |node: &Node| -> Result<String, NodetoolError> {
        let s = node.request_json("GET", "/storage_service/removal_status")?;
        Ok(s.as_str().unwrap_or_default().to_string())
    };
    let path = match args {
        [cmd] if cmd == "status" => {
            println!("{}", status(node)?);
            return Ok(());
        }
        [cmd] if cmd == "force" => {
            println!("{}", status(node)?);
            return node
                .request("POST", "/storage_service/removenode?force=true")
                .map(|_| ());
        }
        [host_id] => format!("/storage_service/removenode?host_id={}", enc(host_id)),
        _ => {
            return Err(NodetoolError::Usage(
                "usage: nodetool removenode <status>|<force>|<ID>".into(),
            ))
        }
    };
    node.request("POST", &path)?;
    loop {
        std::thread::sleep(std::time::Duration::from_millis(250));
        let now = status(node)?;
        if now.contains("No removals in process") {
            return Ok(());
        }
        if let Some(failed) = now.strip_prefix("RemovalStatus: Failed: ") {
            return Err(NodetoolError::Refused(failed.to_string()));
        }
    }
}

/// `flush`, `compact`, `garbagecollect [-g ROW|CELL] [-j N]`, `cleanup [-j N]`, each
/// `[ks [tables...]]`. `-j` is accepted as Cassandra's is and ignored: SSTables are rewritten
/// one after another.
fn maintenance(node: &Node, cmd: &str, args: &[String]) -> Result<(), NodetoolError> {
    let base = match cmd {
        "flush" => "/storage_service/keyspace_flush",
        "compact" => "/storage_service/keyspace_compaction",
        "cleanup" => "/storage_service/keyspace_cleanup",
        _ => "/storage_service/keyspace_garbage_collect",
    };
    let mut granularity = None;
    let mut names = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-g" | "--granularity" if cmd == "garbagecollect" => granularity = it.next(),
            "-j" | "--jobs" if cmd != "flush" => {
                it.next();
            }
            _ => names.push(a.clone()),
        }
    }
    let mut path = ks_path(base, &names);
    if let Some(g) = granularity {
        let sep = if path.contains('?') { '&' } else { '?' };
        path.push_str(&format!("{sep}tombstone_option={}", enc(&g.to_uppercase())));
    }
    node.request("POST", &path).map(|_| ())
}

/// `snapshot [-t tag] [ks...]`.
fn snapshot(node: &Node, args: &[String]) -> Result<(), NodetoolError> {
    let mut tag = None;
    let mut kss = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "-t" {
            tag = it.next().cloned();
        } else {
            kss.push(a.clone());
        }
    }
    let mut path = "/storage_service/snapshots?".to_string();
    if let Some(t) = &tag {
        path.push_str(&format!("tag={}&", enc(t)));
    }
    if let Some(k) = kss.first() {
        path.push_str(&format!("kn={}", enc(k)));
    }
    println!("Requested creating snapshot(s) for [{}] with snapshot name [{}] and options {{skipFlush=false}}",
        if kss.is_empty() { "all keyspaces".to_string() } else { kss.join(", ") }, tag.clone().unwrap_or_default());
    let body = node.request("POST", &path)?;
    println!("Snapshot directory: {}", body.trim_matches('"'));
    Ok(())
}

/// `clearsnapshot [-t tag]`.
fn clearsnapshot(node: &Node, args: &[String]) -> Result<(), NodetoolError> {
    let path = match args
        .iter()
        .position(|a| a == "-t")
        .and_then(|i| args.get(i + 1))
    {
        Some(t) => format!("/storage_service/snapshots?tag={}", enc(t)),
        None => "/storage_service/snapshots".to_string(),
    };
    node.request("DELETE", &path).map(|_| ())
}

/// `tablestats [ks[.table]]`, `tablehistograms ks table` (or `ks.table`), `compactionstats`.
fn statistics(node: &Node, cmd: &str, args: &[String]) -> Result<(), NodetoolError> {
    match cmd {
        "tablestats" | "cfstats" => {
            let path = match args.first() {
                None => "/helenus/tablestats".to_string(),
                Some(a) => match a.split_once('.') {
                    Some((ks, t)) => format!("/helenus/tablestats?ks={}&cf={}", enc(ks), enc(t)),
                    None => format!("/helenus/tablestats?ks={}", enc(a)),
                },
            };
            report::tablestats(&node.request_json("GET", &path)?);
        }
        "tablehistograms" | "cfhistograms" => {
            let (ks, t) = match args {
                [a] => a
                    .split_once('.')
                    .map(|(k, t)| (k.to_string(), t.to_string()))
                    .ok_or_else(|| NodetoolError::Usage(usage()))?,
                [k, t, ..] => (k.clone(), t.clone()),
                _ => return Err(NodetoolError::Usage(usage())),
            };
            let path = format!("/helenus/tablestats?ks={}&cf={}", enc(&ks), enc(&t));
            report::tablehistograms(&ks, &t, &node.request_json("GET", &path)?);
        }
        _ => report::compactionstats(
            &node.request_json("GET", "/compaction_manager/pending_tasks_by_table")?,
            &node.request_json("GET", "/compaction_manager/compactions")?,
        ),
    }
    Ok(())
}

/// `status [KS]`, `ring`, `describecluster`, `gossipinfo`, `getendpoints KS TABLE KEY`: the
/// node renders them (it knows the ring); printed as they come.
fn ring_report(node: &Node, cmd: &str, args: &[String]) -> Result<(), NodetoolError> {
    let path = match (cmd, args) {
        ("status", [ks, ..]) => format!("/helenus/ring/status?ks={}", enc(ks)),
        ("getendpoints", [ks, table, key, ..]) => format!(
            "/helenus/ring/getendpoints?ks={}&cf={}&key={}",
            enc(ks),
            enc(table),
            enc(key)
        ),
        ("getendpoints", _) => {
            return Err(NodetoolError::Usage(
                "getendpoints needs <keyspace> <table> <key>".into(),
            ))
        }
        _ => format!("/helenus/ring/{cmd}"),
    };
    print!("{}", node.request("GET", &path)?);
    Ok(())
}

/// `enableauditlog [--included-keyspaces ...]`, `disableauditlog`, `getauditlog`.
fn audit_log(node: &Node, cmd: &str, args: &[String]) -> Result<(), NodetoolError> {
    match cmd {
        "disableauditlog" => node
            .request("DELETE", "/storage_service/audit_log")
            .map(|_| ()),
        "getauditlog" => {
            println!("{}", node.request("GET", "/storage_service/audit_log")?);
            Ok(())
        }
        _ => {
            let mut query = Vec::new();
            let mut it = args.iter();
            while let Some(flag) = it.next() {
                let name = flag.trim_start_matches('-').replace('-', "_");
                let known = [
                    "included_keyspaces",
                    "excluded_keyspaces",
                    "included_categories",
                    "excluded_categories",
                    "included_users",
                    "excluded_users",
                ];
                let value = it.next().filter(|_| known.contains(&name.as_str()));
                let Some(value) = value else {
                    return Err(NodetoolError::Usage(format!(
                        "enableauditlog: unexpected argument {flag}\n{}",
                        usage()
                    )));
                };
                query.push(format!("{name}={}", enc(value)));
            }
            let path = format!("/storage_service/audit_log?{}", query.join("&"));
            node.request("POST", &path).map(|_| ())
        }
    }
}

/// `info`, `version`.
fn node_facts(node: &Node, cmd: &str) -> Result<(), NodetoolError> {
    if cmd == "info" {
        report::info(&node.request_json("GET", "/helenus/info")?);
    } else {
        let v = node.request("GET", "/storage_service/release_version")?;
        println!("ReleaseVersion: {}", v.trim_matches('"'));
    }
    Ok(())
}
