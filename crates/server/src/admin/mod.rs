//! The admin HTTP API on port 10000 of the node's address (paths modelled on ScyllaDB's REST API),
//! which `helenus nodetool` drives, plus Prometheus text metrics at `/metrics`.
//!
//! HTTP/1.1 is parsed by hand: the API is a handful of small requests from local tools, and a full
//! HTTP stack would add more build time than the whole admin surface is worth.
//!
//! Who may call it is `access`'s concern; it is served over TLS (the CQL port's certificate)
//! when `client_encryption_options` is enabled.

pub mod access;

mod column_scan;
mod compaction_throughput;
mod repair_admin;
mod streams;

use crate::node::NodeState;
use crate::tls::{self, ServerTls, Stream};
use helenus_storage::StorageError;
use helenus_types::{Clock, SharedClock};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const MAX_REQUEST_BYTES: usize = 64 * 1024;
/// Admin connections served at once; past it new ones are closed at once. nodetool and a
/// metrics scraper need a handful; the cap keeps slow or hostile clients from taking the
/// process's file descriptors, which the CQL port needs too.
const MAX_ADMIN_CONNECTIONS: usize = 64;
/// A request head must arrive whole within this, or the connection is dropped.
const READ_HEAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// Pause after a failed accept (out of file descriptors): retrying at once would spin a core.
const ACCEPT_RETRY_DELAY: std::time::Duration = std::time::Duration::from_millis(50);

pub struct HttpRequest {
    pub method: String,
    pub path: String,
    pub query: HashMap<String, String>,
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let h = std::str::from_utf8(&b[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match h {
                    Some(v) => {
                        out.push(v);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn parse_request_line(head: &str) -> Option<HttpRequest> {
    let line = head.lines().next()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let target = parts.next()?;
    let (path, q) = target.split_once('?').unwrap_or((target, ""));
    let query = q
        .split('&')
        .filter(|s| !s.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect();
    Some(HttpRequest {
        method,
        path: percent_decode(path),
        query,
    })
}

/// Serves the admin API on `listener`; `clock` dates snapshots and measures uptime; `tls` as
/// for the CQL port.
pub async fn serve(
    node: Arc<NodeState>,
    clock: SharedClock,
    listener: TcpListener,
    tls: Option<ServerTls>,
) {
    let tls = tls.map(Arc::new);
    let connections = Arc::new(tokio::sync::Semaphore::new(MAX_ADMIN_CONNECTIONS));
    loop {
        let socket = match listener.accept().await {
            Ok((socket, _)) => socket,
            Err(e) => {
                tracing::warn!("admin accept failed: {e}");
                tokio::time::sleep(ACCEPT_RETRY_DELAY).await;
                continue;
            }
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            drop(socket);
            continue;
        };
        let node = node.clone();
        let clock = clock.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let Ok(accepted) = tls::accept(tls.as_deref(), socket).await else {
                return;
            };
            let _ = handle(node, clock, accepted.into_stream()).await;
        });
    }
}

/// Reads a request head (up to the blank line); `Ok(None)` if the peer closed first.
async fn read_head(socket: &mut Box<dyn Stream>) -> std::io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.windows(4).any(|w| w == b"\r\n\r\n") || buf.len() > MAX_REQUEST_BYTES {
            return Ok(Some(buf));
        }
    }
}

async fn handle(
    node: Arc<NodeState>,
    clock: SharedClock,
    mut socket: Box<dyn Stream>,
) -> std::io::Result<()> {
    let buf = match tokio::time::timeout(READ_HEAD_TIMEOUT, read_head(&mut socket)).await {
        Ok(Ok(Some(buf))) => buf,
        Ok(Ok(None)) | Err(_) => return Ok(()),
        Ok(Err(e)) => return Err(e),
    };
    if buf.len() > MAX_REQUEST_BYTES {
        return respond(&mut socket, 413, "text/plain", "request too large").await;
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let Some(req) = parse_request_line(&head) else {
        return respond(&mut socket, 400, "text/plain", "bad request").await;
    };
    if node.config.admin_requires_credentials() {
        if let Err(denied) = authenticate(&node, &head).await {
            return respond(
                &mut socket,
                denied.status(),
                "application/json",
                &json!({"message": denied.to_string(), "code": denied.status()}).to_string(),
            )
            .await;
        }
    }
    if column_scan::handles(&req.path) {
        return column_scan::serve(node, clock, &req, &mut socket).await;
    }
    let node2 = node.clone();
    let result = tokio::task::spawn_blocking(move || route(&node2, clock.as_ref(), &req)).await;
    match result {
        Ok(Ok((ctype, body))) => respond(&mut socket, 200, ctype, &body).await,
        Ok(Err((status, msg))) => {
            respond(
                &mut socket,
                status,
                "application/json",
                &json!({"message": msg, "code": status}).to_string(),
            )
            .await
        }
        Err(e) => respond(&mut socket, 500, "text/plain", &e.to_string()).await,
    }
}

/// Checks the request's credentials with the node's roles (bcrypt, so on a blocking thread and
/// at most as many at once as CQL logins).
async fn authenticate(node: &Arc<NodeState>, head: &str) -> Result<String, access::AccessDenied> {
    let header = access::authorization_header(head).map(str::to_string);
    let internal = |e: &dyn std::fmt::Display| access::AccessDenied::BadCredentials(e.to_string());
    let _slot = node
        .auth
        .login_slots
        .acquire()
        .await
        .map_err(|e| internal(&e))?;
    let auth = node.auth.clone();
    tokio::task::spawn_blocking(move || access::check(&auth, header.as_deref()))
        .await
        .map_err(|e| internal(&e))?
}

async fn respond(
    socket: &mut Box<dyn Stream>,
    status: u16,
    ctype: &str,
    body: &str,
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Payload Too Large",
        _ => "Error",
    };
    // A 401 names the scheme, so that curl and browsers know to send Basic credentials.
    let challenge = match status {
        401 => "WWW-Authenticate: Basic realm=\"helenus admin\"\r\n",
        _ => "",
    };
    let msg = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n{challenge}Connection: close\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(msg.as_bytes()).await?;
    socket.shutdown().await
}

type RouteResult = Result<(&'static str, String), (u16, String)>;

/// The tables a keyspace-level request names: `cf=a,b` or every table of the keyspace.
fn tables_of(
    node: &NodeState,
    ks: Option<&str>,
    cf: Option<&String>,
) -> Result<Vec<Arc<helenus_schema::TableMeta>>, (u16, String)> {
    let schema = node.schema();
    let mut out = Vec::new();
    let kss: Vec<_> = match ks {
        Some(k) => vec![schema
            .keyspaces
            .get(k)
            .cloned()
            .ok_or((400, format!("Keyspace {k} does not exist")))?],
        None => schema.user_keyspaces().cloned().collect(),
    };
    for k in kss {
        if k.kind != helenus_schema::KeyspaceKind::User {
            continue;
        }
        match cf.filter(|c| !c.is_empty()) {
            Some(list) => {
                for name in list.split(',') {
                    out.push(
                        k.tables
                            .get(name)
                            .cloned()
                            .ok_or((400, format!("Table {}.{name} does not exist", k.name)))?,
                    );
                }
            }
            None => out.extend(k.tables.values().cloned()),
        }
    }
    Ok(out)
}

/// A refused input (a bad snapshot tag) is the caller's error (400); anything else is ours.
fn storage_err(e: StorageError) -> (u16, String) {
    let status = match e {
        StorageError::InvalidRequest(_) => 400,
        _ => 500,
    };
    (status, e.to_string())
}

fn route(node: &NodeState, clock: &dyn Clock, req: &HttpRequest) -> RouteResult {
    let segs: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    let found = match segs.split_first() {
        Some((&"storage_service", rest)) => storage_service(node, clock, req, rest),
        _ => observe(node, clock, req, &segs),
    };
    found.unwrap_or_else(|| {
        Err((
            404,
            format!("no such endpoint: {} {}", req.method, req.path),
        ))
    })
}

fn ok() -> RouteResult {
    Ok(("application/json", "\"\"".to_string()))
}

/// `nodetool cleanup [KS [TABLES]]`: each table keeps only the token ranges this node
/// replicates (nothing to do on a node alone, which replicates everything).
fn cleanup(node: &NodeState, keyspace: Option<&str>, cf: Option<&String>) -> RouteResult {
    let Some(cluster) = node.cluster() else {
        return ok();
    };
    let schema = node.schema();
    for t in tables_of(node, keyspace, cf)? {
        let Some(ks) = schema.keyspaces.get(&t.keyspace) else {
            continue;
        };
        if let Some(owned) = cluster.owned_ranges(ks).map_err(|e| (400, e))? {
            let stats = node
                .engine
                .cleanup(*t.id.as_bytes(), &owned)
                .map_err(storage_err)?;
            tracing::info!(
                "cleanup of {}.{}: {} SSTables rewritten into {}, {} bytes read, {} written",
                t.keyspace,
                t.name,
                stats.input_sstables,
                stats.output_sstables,
                stats.bytes_read,
                stats.bytes_written
            );
        }
    }
    ok()
}

/// `nodetool garbagecollect`: Cassandra's `garbageCollect(tombstoneOption, ...)`, ROW (the
/// default) or CELL.
fn garbage_collect(node: &NodeState, req: &HttpRequest, rest: &[&str]) -> RouteResult {
    let cells = match req.query.get("tombstone_option").map(String::as_str) {
        None | Some("ROW") => false,
        Some("CELL") => true,
        Some(other) => return Err((400, format!("unknown granularity {other}: ROW or CELL"))),
    };
    for t in tables_of(node, rest.first().copied(), req.query.get("cf"))? {
        let st = node
            .engine
            .garbage_collect(*t.id.as_bytes(), cells)
            .map_err(storage_err)?;
        tracing::info!(
            "garbagecollect of {}.{}: {} SSTables rewritten ({} bytes read, {} written), {} with nothing to drop left as they were",
            t.keyspace,
            t.name,
            st.rewritten,
            st.compaction.bytes_read,
            st.compaction.bytes_written,
            st.skipped
        );
    }
    ok()
}

/// `/storage_service/...`: identity, flush, compaction, garbage collection and snapshots.
/// `None` for a path it does not serve.
fn storage_service(
    node: &NodeState,
    clock: &dyn Clock,
    req: &HttpRequest,
    segs: &[&str],
) -> Option<RouteResult> {
    let cf = req.query.get("cf");
    let each_table = |rest: &[&str], op: &dyn Fn([u8; 16]) -> Result<(), StorageError>| {
        for t in tables_of(node, rest.first().copied(), cf)? {
            op(*t.id.as_bytes()).map_err(storage_err)?;
        }
        ok()
    };
    Some(match (req.method.as_str(), segs) {
        ("GET", ["host_id"]) => Ok((
            "application/json",
            json!(node.identity.host_id.to_string()).to_string(),
        )),
        ("GET", ["release_version"]) => Ok((
            "application/json",
            json!(crate::RELEASE_VERSION).to_string(),
        )),
        ("POST", ["keyspace_flush", rest @ ..]) => {
            each_table(rest, &|id| node.engine.flush(Some(id))).and_then(|done| {
                if rest.is_empty() {
                    node.engine.flush(None).map_err(storage_err)?;
                }
                Ok(done)
            })
        }
        ("POST", ["keyspace_compaction", rest @ ..]) => {
            each_table(rest, &|id| node.engine.compact(id).map(drop))
        }
        ("POST", ["keyspace_garbage_collect", rest @ ..]) => garbage_collect(node, req, rest),
        ("POST", ["keyspace_cleanup", rest @ ..]) => cleanup(node, rest.first().copied(), cf),
        ("POST", ["snapshots"]) => snapshot(node, clock, req),
        ("POST", ["export"]) => export(node, clock, req),
        ("POST", ["decommission"]) => match node.cluster() {
            Some(c) => c
                .clone()
                .decommission()
                .map_err(|e| (400, e))
                .and_then(|()| ok()),
            None => Err((400, "this node is not in a ring".into())),
        },
        ("POST", ["removenode"]) => match (node.cluster(), req.query.get("host_id")) {
            (Some(c), Some(id)) => c
                .clone()
                .remove_node(id, req.query.get("force").is_some_and(|f| f == "true"))
                .map_err(|e| (400, e))
                .and_then(|()| ok()),
            (Some(c), None) if req.query.get("force").is_some_and(|f| f == "true") => c
                .clone()
                .remove_node("", true)
                .map_err(|e| (400, e))
                .and_then(|()| ok()),
            (Some(_), None) => Err((400, "needs host_id=UUID or force=true".into())),
            (None, _) => Err((400, "this node is not in a ring".into())),
        },
        ("POST", ["rebuild"]) => match node.cluster() {
            Some(c) => c
                .clone()
                .rebuild(
                    req.query
                        .get("source_dc")
                        .filter(|d| !d.is_empty())
                        .cloned(),
                    req.query
                        .get("keyspace")
                        .map(|ks| {
                            ks.split(',')
                                .map(|k| k.trim().to_string())
                                .filter(|k| !k.is_empty())
                                .collect()
                        })
                        .unwrap_or_default(),
                )
                .map_err(|e| (400, e))
                .and_then(|()| ok()),
            None => Err((400, "this node is not in a ring".into())),
        },
        ("POST", ["bootstrap", "resume"]) | ("GET", ["bootstrap_status"]) => {
            streams::bootstrap(node, segs)
        }
        ("GET", ["rebuild_status"]) => Ok((
            "application/json",
            node.cluster()
                .map_or_else(|| json!({"state": "none"}), |c| c.rebuild_status())
                .to_string(),
        )),
        ("GET", ["removal_status"]) => Ok((
            "application/json",
            json!(node.cluster().map_or_else(
                || "RemovalStatus: No removals in process.".to_string(),
                |c| c.removal_status()
            ))
            .to_string(),
        )),
        (method, ["repair"]) => repair(node, method, req),
        ("GET", ["repair_admin"]) => repair_admin::list(node),
        ("POST", ["repair_admin", "cancel"]) => repair_admin::cancel(node, req),
        ("GET", ["repair_admin", "pending"]) => repair_admin::pending(node),
        ("POST", ["hinted_handoff"]) => match (node.cluster(), req.query.get("enabled")) {
            (Some(c), Some(on)) => {
                c.set_hinted_handoff(on == "true");
                ok()
            }
            _ => Err((400, "needs a ring and enabled=true|false".into())),
        },
        ("GET", ["hinted_handoff"]) => Ok((
            "application/json",
            json!(node
                .cluster()
                .map_or(node.config.hinted_handoff_enabled, |c| c.hinted_handoff()))
            .to_string(),
        )),
        ("GET", ["netstats"]) => streams::netstats(node, req),
        ("GET", ["compaction_throughput"]) => compaction_throughput::get(node),
        ("POST", ["compaction_throughput"]) => compaction_throughput::set(node, req),
        ("GET", ["stream_throughput"]) => streams::throughput(node),
        ("POST", ["stream_throughput"]) => streams::set_throughput(node, req),
        ("GET", ["operation_mode"]) => Ok((
            "application/json",
            json!(node
                .cluster()
                .map_or_else(|| "NORMAL".to_string(), |c| c.operation_mode()))
            .to_string(),
        )),
        ("POST", ["audit_log"]) => enable_audit_log(node, req),
        ("DELETE", ["audit_log"]) => {
            node.audit.disable();
            ok()
        }
        ("GET", ["audit_log"]) => Ok(("application/json", audit_log_options(node).to_string())),
        ("DELETE", ["snapshots"]) => node
            .engine
            .clear_snapshot(req.query.get("tag").map(String::as_str))
            .map_err(storage_err)
            .and_then(|()| ok()),
        _ => return None,
    })
}

/// `GET /storage_service/audit_log` (`nodetool getauditlog`): whether audit logging is on, and
/// its filters.
fn audit_log_options(node: &NodeState) -> serde_json::Value {
    match node.audit.options() {
        Some(o) => json!({
            "enabled": true,
            "included_keyspaces": o.included_keyspaces,
            "excluded_keyspaces": o.excluded_keyspaces,
            "included_categories": o.included_categories,
            "excluded_categories": o.excluded_categories,
            "included_users": o.included_users,
            "excluded_users": o.excluded_users,
        }),
        None => json!({"enabled": false}),
    }
}

/// `POST /storage_service/audit_log` (`nodetool enableauditlog`): the configured options, with
/// any filter given as a comma-separated query parameter of the same name replacing its list.
fn enable_audit_log(node: &NodeState, req: &HttpRequest) -> RouteResult {
    let mut o = node.config.audit_logging.clone();
    let list = |k: &str| {
        req.query
            .get(k)
            .map(|v| crate::config::audit_list(&serde_yaml::Value::String(v.clone())))
    };
    let categories = |k: &str| -> Result<Option<Vec<String>>, (u16, String)> {
        list(k)
            .map(crate::config::audit_categories)
            .transpose()
            .map_err(|e| (400, e))
    };
    if let Some(v) = list("included_keyspaces") {
        o.included_keyspaces = v;
    }
    if let Some(v) = list("excluded_keyspaces") {
        o.excluded_keyspaces = v;
    }
    if let Some(v) = categories("included_categories")? {
        o.included_categories = v;
    }
    if let Some(v) = categories("excluded_categories")? {
        o.excluded_categories = v;
    }
    if let Some(v) = list("included_users") {
        o.included_users = v;
    }
    if let Some(v) = list("excluded_users") {
        o.excluded_users = v;
    }
    node.audit
        .enable(o)
        .map_err(|e| (500, format!("cannot open the audit log: {e}")))?;
    ok()
}

/// `POST /storage_service/snapshots`: the tag defaults to the wall clock in milliseconds.
fn snapshot(node: &NodeState, clock: &dyn Clock, req: &HttpRequest) -> RouteResult {
    let tag = req.query.get("tag").cloned().unwrap_or_else(|| {
        // A clock before 1970 gave an empty tag; kept so.
        let ms = clock.wall_ms();
        if ms >= 0 {
            ms.to_string()
        } else {
            String::new()
        }
    });
    let kn = req.query.get("kn").cloned();
    let tables = tables_of(node, kn.as_deref(), req.query.get("cf"))?;
    for t in tables {
        node.engine
            .snapshot(Some(*t.id.as_bytes()), &tag)
            .map_err(storage_err)?;
    }
    Ok(("application/json", json!(tag).to_string()))
}

/// `POST /storage_service/export?ks=&cf=&dir=&format=parquet` (`nodetool export`): writes a
/// point-in-time copy of the table under `dir` on this node, a file per primary range, and
/// answers what it wrote.
fn export(node: &NodeState, clock: &dyn Clock, req: &HttpRequest) -> RouteResult {
    let arg = |k: &str| req.query.get(k).map(String::as_str).unwrap_or_default();
    let fail = |e: crate::export::ExportFailure| (e.status(), e.to_string());
    let (keyspace, table, dir) = (arg("ks"), arg("cf"), arg("dir"));
    if keyspace.is_empty() || table.is_empty() || dir.is_empty() {
        return Err((400, "export needs ks, cf and dir".into()));
    }
    let request = crate::export::ExportRequest {
        keyspace,
        table,
        dir: std::path::Path::new(dir),
        format: crate::export::ExportFormat::parse(arg("format")).map_err(fail)?,
        now_s: clock.wall_ms().div_euclid(1000),
    };
    let done = crate::export::export(node, &request).map_err(fail)?;
    let files: Vec<_> = done
        .files
        .iter()
        .map(|f| {
            json!({
                "path": f.path.display().to_string(),
                "token_start": f.range.start,
                "token_end": f.range.end,
                "rows": f.rows,
                "bytes": f.bytes,
            })
        })
        .collect();
    let body = json!({
        "keyspace": keyspace,
        "table": table,
        "format": "parquet",
        "sstables": done.sstables,
        "rows": done.files.iter().map(|f| f.rows).sum::<u64>(),
        "bytes": done.files.iter().map(|f| f.bytes).sum::<u64>(),
        "elapsed_ms": done.elapsed_ms,
        "files": files,
    });
    Ok(("application/json", body.to_string()))
}

/// Read-only views: Prometheus metrics, table statistics, running compactions, node info.
fn observe(
    node: &NodeState,
    clock: &dyn Clock,
    req: &HttpRequest,
    segs: &[&str],
) -> Option<RouteResult> {
    Some(match (req.method.as_str(), segs) {
        ("GET", ["metrics"]) => Ok(("text/plain; version=0.0.4", crate::metrics::render(node))),
        ("GET", ["helenus", "tablestats"]) => {
            let tables = match tables_of(
                node,
                req.query.get("ks").map(String::as_str),
                req.query.get("cf"),
            ) {
                Ok(t) => t,
                Err(e) => return Some(Err(e)),
            };
            let out: Vec<_> = tables
                .iter()
                .map(|t| {
                    let s = node.engine.table_stats(*t.id.as_bytes());
                    json!({"keyspace": t.keyspace, "table": t.name, "stats": crate::metrics::table_stats_json(&s)})
                })
                .collect();
            Ok((
                "application/json",
                serde_json::Value::Array(out).to_string(),
            ))
        }
        ("GET", ["compaction_manager", "compactions"]) => {
            let list = crate::metrics::compactions_json(&node.engine.compaction_stats());
            Ok(("application/json", list.to_string()))
        }
        ("GET", ["compaction_manager", "pending_tasks_by_table"]) => {
            let pending = crate::metrics::pending_tasks_json(
                &node.engine.estimated_pending_compactions(),
                &node.engine.compaction_stats(),
            );
            Ok(("application/json", pending.to_string()))
        }
        ("GET", ["helenus", "info"]) => Ok((
            "application/json",
            crate::metrics::info_json(node, clock).to_string(),
        )),
        ("GET", ["helenus", "ring", report]) => ring_report(node, req, report),
        (method, ["helenus", "fault", "partition"]) => fault_partition(node, method, req),
        _ => return None,
    })
}

/// `/storage_service/repair`: POST `?ks=&tables=a,b&pr=true&st=&et=&full=true` starts a
/// repair (incremental unless `full=true`) and answers its number; GET `?id=N` tells how it is
/// going.
fn repair(node: &NodeState, method: &str, req: &HttpRequest) -> RouteResult {
    let Some(cluster) = node.cluster() else {
        return Err((400, "Nothing to repair: this node is not in a ring".into()));
    };
    let arg = |k: &str| req.query.get(k).filter(|v| !v.is_empty());
    let token = |k: &str| -> Result<Option<i64>, (u16, String)> {
        arg(k)
            .map(|v| {
                v.parse::<i64>()
                    .map_err(|_| (400, format!("bad token {k}={v}")))
            })
            .transpose()
    };
    match method {
        "POST" => {
            let options = crate::topology::RepairOptions {
                keyspace: arg("ks").cloned(),
                tables: arg("tables")
                    .map(|t| t.split(',').map(str::to_string).collect())
                    .unwrap_or_default(),
                primary_range: arg("pr").is_some_and(|v| v == "true"),
                start: token("st")?,
                end: token("et")?,
                incremental: arg("full").is_none_or(|v| v != "true"),
            };
            if let Some(ks) = &options.keyspace {
                node.schema()
                    .keyspace(ks)
                    .map_err(|e| (400, e.to_string()))?;
            }
            let id = cluster.clone().start_repair(options);
            Ok(("application/json", json!({ "id": id }).to_string()))
        }
        "GET" => {
            let id = arg("id")
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or((400, "repair status needs id=N".to_string()))?;
            cluster
                .repair_status(id)
                .map(|s| ("application/json", s.to_string()))
                .ok_or((404, format!("no repair #{id}")))
        }
        _ => Err((404, format!("no such endpoint: {method} {}", req.path))),
    }
}

/// `/helenus/fault/partition`: POST `?peers=A,B` cuts this node off from those peers' internode
/// traffic both ways (a network partition for tests, clients still reach every node), DELETE
/// heals, GET lists the cut. Only with `fault_injection_enabled`: a production node refuses.
fn fault_partition(node: &NodeState, method: &str, req: &HttpRequest) -> RouteResult {
    if !node.config.fault_injection_enabled {
        return Err((
            403,
            "fault injection is disabled (fault_injection_enabled)".into(),
        ));
    }
    let Some(cluster) = node.cluster() else {
        return Err((400, "this node is not in a ring".into()));
    };
    match method {
        "POST" => {
            let peers = req.query.get("peers").map(String::as_str).unwrap_or("");
            let mut cut = std::collections::HashSet::new();
            for p in peers.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let ip = p
                    .parse::<std::net::IpAddr>()
                    .map_err(|_| (400, format!("'{p}' is not an IP address")))?;
                cut.insert(ip);
            }
            cluster.isolate(cut);
        }
        "DELETE" => cluster.isolate(std::collections::HashSet::new()),
        "GET" => {}
        _ => return Err((404, format!("no such endpoint: {method} {}", req.path))),
    }
    let mut cut: Vec<String> = cluster.isolated().iter().map(|a| a.to_string()).collect();
    cut.sort();
    Ok((
        "application/json",
        json!({ "isolated_from": cut }).to_string(),
    ))
}

/// `/helenus/ring/{status,ring,describecluster,gossipinfo,getendpoints}`: nodetool's text.
fn ring_report(node: &NodeState, req: &HttpRequest, report: &str) -> RouteResult {
    let text = |s: String| -> RouteResult { Ok(("text/plain", s)) };
    let arg = |k: &str| req.query.get(k).map(String::as_str);
    match report {
        "status" => crate::ring_report::status(node, arg("ks"))
            .map_err(|e| (400, e))
            .and_then(text),
        "ring" => text(crate::ring_report::ring(node)),
        "describecluster" => text(crate::ring_report::describecluster(node)),
        "gossipinfo" => text(crate::ring_report::gossipinfo(node)),
        "getendpoints" => match (arg("ks"), arg("cf"), arg("key")) {
            (Some(ks), Some(cf), Some(key)) => crate::ring_report::getendpoints(node, ks, cf, key)
                .map_err(|e| (400, e))
                .and_then(text),
            _ => Err((400, "getendpoints needs ks, cf and key".to_string())),
        },
        other => Err((404, format!("no ring report {other}"))),
    }
}
