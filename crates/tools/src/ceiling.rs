//! The protocol-ceiling server: a minimal CQL native protocol v4 server that answers every request
//! with a constant result and stores nothing. Driven by `helenus stress`, it shows what the
//! protocol, the client and the loopback cost on their own: no real server can be faster.
//!
//! It answers OPTIONS, STARTUP, REGISTER, QUERY, PREPARE and EXECUTE: INSERTs and DDL get `Void`,
//! `USE` gets `SetKeyspace`, user SELECTs get zero rows, and `system.local` / `system.peers` get
//! one local row / no rows, which is what the scylla driver needs to build its cluster view. Bind
//! marker types are guessed from column names of the built-in stress workloads (blob otherwise).
//! This is a hand-written codec; it is test tooling, not the server's hardened codec.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::{TcpListener, TcpStream};

/// Frames larger than this are refused (the server's default `native_transport_max_frame_size`).
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;
const HEADER_LEN: usize = 9;

const OP_ERROR: u8 = 0x00;
const OP_STARTUP: u8 = 0x01;
const OP_READY: u8 = 0x02;
const OP_OPTIONS: u8 = 0x05;
const OP_SUPPORTED: u8 = 0x06;
const OP_QUERY: u8 = 0x07;
const OP_RESULT: u8 = 0x08;
const OP_PREPARE: u8 = 0x09;
const OP_EXECUTE: u8 = 0x0A;
const OP_REGISTER: u8 = 0x0B;

/// CQL type option ids (native protocol v4 §6.1).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Typ {
    Blob,
    Boolean,
    Int,
    Text,
    Uuid,
    Timeuuid,
    Inet,
    SetText,
    MapTextText,
}

impl Typ {
    fn encode(self, out: &mut Vec<u8>) {
        match self {
            Typ::Blob => put_u16(out, 0x0003),
            Typ::Boolean => put_u16(out, 0x0004),
            Typ::Int => put_u16(out, 0x0009),
            Typ::Text => put_u16(out, 0x000D),
            Typ::Uuid => put_u16(out, 0x000C),
            Typ::Timeuuid => put_u16(out, 0x000F),
            Typ::Inet => put_u16(out, 0x0010),
            Typ::SetText => {
                put_u16(out, 0x0022);
                put_u16(out, 0x000D);
            }
            Typ::MapTextText => {
                put_u16(out, 0x0021);
                put_u16(out, 0x000D);
                put_u16(out, 0x000D);
            }
        }
    }
}

fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_be_bytes());
}
fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_be_bytes());
}
fn put_string(out: &mut Vec<u8>, s: &str) {
    put_u16(out, s.len().min(u16::MAX as usize) as u16);
    out.extend_from_slice(&s.as_bytes()[..s.len().min(u16::MAX as usize)]);
}
fn put_bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        Some(b) => {
            put_i32(out, b.len() as i32);
            out.extend_from_slice(b);
        }
        None => put_i32(out, -1),
    }
}

/// The type a column of the built-in workloads or the system tables has.
fn column_type(name: &str) -> Typ {
    match name.trim_matches('"').to_ascii_lowercase().as_str() {
        "sensor_id" | "value" | "partition_key" | "payload" | "data_center" | "rack"
        | "cluster_name" | "release_version" | "partitioner" | "keyspace_name" | "table_name"
        | "column_name" | "type" | "kind" | "key" | "bootstrapped" | "cql_version" => Typ::Text,
        "ts" | "event_id" => Typ::Timeuuid,
        "host_id" | "schema_version" => Typ::Uuid,
        "rpc_address" | "peer" | "broadcast_address" | "listen_address" | "native_address"
        | "preferred_ip" => Typ::Inet,
        "tokens" => Typ::SetText,
        "replication" => Typ::MapTextText,
        "durable_writes" => Typ::Boolean,
        "native_port" | "position" => Typ::Int,
        _ => Typ::Blob,
    }
}

/// A statement classified once, at PREPARE (or per QUERY).
#[derive(Debug, Clone)]
struct Statement {
    kind: Kind,
    /// Names of the bind markers, in order.
    binds: Vec<String>,
    /// For SELECTs of system tables: (keyspace, table, selected columns).
    select: Option<(String, String, Vec<String>)>,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Use(String),
    SystemSelect,
    UserSelect,
    Other,
}

fn classify(cql: &str) -> Statement {
    let t = cql.trim();
    let upper = t.to_ascii_uppercase();
    let binds = bind_names(t);
    if let Some(ks) = upper
        .strip_prefix("USE ")
        .map(|_| t[4..].trim().trim_matches('"').to_string())
    {
        return Statement {
            kind: Kind::Use(ks),
            binds,
            select: None,
        };
    }
    if upper.starts_with("SELECT") {
        if let (Some(from), true) = (upper.find(" FROM "), upper.contains("SYSTEM")) {
            let cols: Vec<String> = t[6..from]
                .split(',')
                .map(|c| c.trim().to_string())
                .filter(|c| !c.is_empty())
                .collect();
            let target = t[from + 6..]
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string();
            let (ks, table) = target
                .split_once('.')
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .unwrap_or(("system".into(), target.clone()));
            let cols = if cols.iter().any(|c| c == "*") {
                [
                    "key",
                    "host_id",
                    "rpc_address",
                    "data_center",
                    "rack",
                    "tokens",
                    "cluster_name",
                    "schema_version",
                    "release_version",
                    "partitioner",
                ]
                .map(String::from)
                .to_vec()
            } else {
                cols
            };
            return Statement {
                kind: Kind::SystemSelect,
                binds,
                select: Some((ks, table, cols)),
            };
        }
        return Statement {
            kind: Kind::UserSelect,
            binds,
            select: None,
        };
    }
    Statement {
        kind: Kind::Other,
        binds,
        select: None,
    }
}

/// Names of the `?` markers: the INSERT column list, or the identifier before `= ?` elsewhere.
fn bind_names(cql: &str) -> Vec<String> {
    let upper = cql.to_ascii_uppercase();
    if upper.starts_with("INSERT") {
        if let (Some(open), Some(values)) = (cql.find('('), upper.find("VALUES")) {
            if let Some(close) = cql[open..values].find(')') {
                return cql[open + 1..open + close]
                    .split(',')
                    .map(|c| c.trim().to_string())
                    .collect();
            }
        }
    }
    let mut names = Vec::new();
    let bytes = cql.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'?' {
            let before = cql[..i]
                .trim_end()
                .trim_end_matches(['=', '<', '>'])
                .trim_end();
            let name = before
                .rsplit(|c: char| c.is_whitespace() || c == '(' || c == ',')
                .next()
                .unwrap_or("");
            names.push(name.to_string());
        }
    }
    names
}

/// What one connection needs to remember.
struct ConnState {
    prepared: HashMap<[u8; 16], Statement>,
    local_addr: SocketAddr,
}

fn result_void() -> Vec<u8> {
    let mut b = Vec::with_capacity(4);
    put_i32(&mut b, 0x0001);
    b
}

fn metadata(out: &mut Vec<u8>, ks: &str, table: &str, cols: &[(String, Typ)]) {
    put_i32(out, 0x0001); // global_tables_spec
    put_i32(out, cols.len() as i32);
    put_string(out, ks);
    put_string(out, table);
    for (name, typ) in cols {
        put_string(out, name);
        typ.encode(out);
    }
}

fn system_rows(st: &Statement, local: SocketAddr) -> Vec<u8> {
    let (ks, table, cols) = st.select.clone().unwrap_or_default();
    let typed: Vec<(String, Typ)> = cols.iter().map(|c| (c.clone(), column_type(c))).collect();
    let mut b = Vec::new();
    put_i32(&mut b, 0x0002);
    metadata(&mut b, &ks, &table, &typed);
    if ks.eq_ignore_ascii_case("system") && table.eq_ignore_ascii_case("local") {
        put_i32(&mut b, 1);
        for (name, _) in &typed {
            put_bytes(&mut b, local_value(name, local).as_deref());
        }
    } else {
        put_i32(&mut b, 0);
    }
    b
}

fn local_value(name: &str, local: SocketAddr) -> Option<Vec<u8>> {
    let text = |s: &str| Some(s.as_bytes().to_vec());
    match name {
        "key" => text("local"),
        "host_id" => Some(vec![0x11; 16]),
        "schema_version" => Some(vec![0x22; 16]),
        "rpc_address" | "broadcast_address" | "listen_address" => match local.ip() {
            std::net::IpAddr::V4(ip) => Some(ip.octets().to_vec()),
            std::net::IpAddr::V6(ip) => Some(ip.octets().to_vec()),
        },
        "data_center" => text("datacenter1"),
        "rack" => text("rack1"),
        "cluster_name" => text("ceiling"),
        "release_version" => text("5.0.9"),
        "partitioner" => text("org.apache.cassandra.dht.Murmur3Partitioner"),
        "native_port" => Some(i32::from(local.port()).to_be_bytes().to_vec()),
        "tokens" => {
            let mut v = Vec::new();
            put_i32(&mut v, 1);
            put_bytes(&mut v, Some(b"0"));
            Some(v)
        }
        _ => None,
    }
}

fn prepared_result(id: &[u8; 16], st: &Statement) -> Vec<u8> {
    let mut b = Vec::new();
    put_i32(&mut b, 0x0004);
    put_u16(&mut b, 16);
    b.extend_from_slice(id);
    // Variables metadata: no partition-key indexes, so the driver routes without token awareness.
    put_i32(&mut b, 0x0001);
    put_i32(&mut b, st.binds.len() as i32);
    put_i32(&mut b, 0);
    put_string(&mut b, "ks");
    put_string(&mut b, "t");
    for name in &st.binds {
        put_string(&mut b, name.trim_matches('"'));
        // standard1's `key` is a blob; system.local's `key` (text) is never a bind marker.
        let typ = if name.eq_ignore_ascii_case("key") {
            Typ::Blob
        } else {
            column_type(name)
        };
        typ.encode(&mut b);
    }
    match &st.select {
        Some((ks, table, cols)) => {
            let typed: Vec<(String, Typ)> =
                cols.iter().map(|c| (c.clone(), column_type(c))).collect();
            metadata(&mut b, ks, table, &typed);
        }
        None => {
            put_i32(&mut b, 0x0004); // no_metadata
            put_i32(&mut b, 0);
        }
    }
    b
}

fn empty_rows() -> Vec<u8> {
    let mut b = Vec::new();
    put_i32(&mut b, 0x0002);
    put_i32(&mut b, 0x0000);
    put_i32(&mut b, 0);
    put_i32(&mut b, 0);
    b
}

fn error_body(code: i32, msg: &str) -> Vec<u8> {
    let mut b = Vec::new();
    put_i32(&mut b, code);
    put_string(&mut b, msg);
    b
}

fn read_long_string(body: &[u8]) -> Option<&str> {
    let len = i32::from_be_bytes(body.get(0..4)?.try_into().ok()?);
    let len = usize::try_from(len).ok()?;
    std::str::from_utf8(body.get(4..4 + len)?).ok()
}

fn statement_id(cql: &str) -> [u8; 16] {
    let a = crate::dist::mix64(cql.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    }));
    let b = crate::dist::mix64(a ^ cql.len() as u64);
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&a.to_be_bytes());
    id[8..].copy_from_slice(&b.to_be_bytes());
    id
}

fn respond_statement(st: &Statement, state: &ConnState) -> (u8, Vec<u8>) {
    match &st.kind {
        Kind::Use(ks) => {
            let mut b = Vec::new();
            put_i32(&mut b, 0x0003);
            put_string(&mut b, ks);
            (OP_RESULT, b)
        }
        Kind::SystemSelect => (OP_RESULT, system_rows(st, state.local_addr)),
        Kind::UserSelect => (OP_RESULT, empty_rows()),
        Kind::Other => (OP_RESULT, result_void()),
    }
}

/// Answers one request (opcode and body); returns the response opcode and body.
fn handle(opcode: u8, body: &[u8], state: &mut ConnState) -> (u8, Vec<u8>) {
    match opcode {
        OP_OPTIONS => {
            let mut b = Vec::new();
            put_u16(&mut b, 2);
            put_string(&mut b, "CQL_VERSION");
            put_u16(&mut b, 1);
            put_string(&mut b, "3.4.7");
            put_string(&mut b, "COMPRESSION");
            put_u16(&mut b, 0);
            (OP_SUPPORTED, b)
        }
        OP_STARTUP | OP_REGISTER => (OP_READY, Vec::new()),
        OP_QUERY => match read_long_string(body) {
            Some(cql) => respond_statement(&classify(cql), state),
            None => (OP_ERROR, error_body(0x000A, "malformed QUERY")),
        },
        OP_PREPARE => match read_long_string(body) {
            Some(cql) => {
                let st = classify(cql);
                let id = statement_id(cql);
                let r = prepared_result(&id, &st);
                state.prepared.insert(id, st);
                (OP_RESULT, r)
            }
            None => (OP_ERROR, error_body(0x000A, "malformed PREPARE")),
        },
        OP_EXECUTE => {
            let id: Option<[u8; 16]> = body.get(0..2).and_then(|l| {
                if u16::from_be_bytes([l[0], l[1]]) != 16 {
                    return None;
                }
                body.get(2..18).and_then(|s| s.try_into().ok())
            });
            match id.and_then(|id| state.prepared.get(&id)) {
                Some(st) => respond_statement(st, state),
                None => {
                    // UNPREPARED (0x2500) carries the unknown id so the driver re-prepares.
                    let mut b = error_body(0x2500, "unknown prepared statement");
                    put_u16(&mut b, 16);
                    b.extend_from_slice(&id.unwrap_or([0; 16]));
                    (OP_ERROR, b)
                }
            }
        }
        _ => (OP_ERROR, error_body(0x000A, "unsupported opcode")),
    }
}

async fn serve_connection(stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let local_addr = stream.local_addr()?;
    let (r, w) = stream.into_split();
    let mut reader = BufReader::with_capacity(64 * 1024, r);
    let mut writer = BufWriter::with_capacity(64 * 1024, w);
    let mut state = ConnState {
        prepared: HashMap::new(),
        local_addr,
    };
    let mut header = [0u8; HEADER_LEN];
    let mut body = Vec::new();
    loop {
        if reader.read_exact(&mut header).await.is_err() {
            return Ok(());
        }
        let version = header[0] & 0x7F;
        let stream_id = [header[2], header[3]];
        let opcode = header[4];
        let len = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) as usize;
        if len > MAX_FRAME_BYTES {
            return Ok(());
        }
        body.resize(len, 0);
        reader.read_exact(&mut body).await?;
        let (op, resp) = if version != 4 {
            (
                OP_ERROR,
                error_body(0x000A, "Invalid or unsupported protocol version; only v4"),
            )
        } else {
            handle(opcode, &body, &mut state)
        };
        // Always answer as v4: a client probing another version reads the error and steps down.
        writer
            .write_all(&[0x84, 0, stream_id[0], stream_id[1], op])
            .await?;
        writer.write_all(&(resp.len() as u32).to_be_bytes()).await?;
        writer.write_all(&resp).await?;
        // Flush only when no further request is already buffered: batches replies under load.
        if reader.buffer().is_empty() {
            writer.flush().await?;
        }
    }
}

/// Serves until the process is killed.
pub async fn serve(addr: SocketAddr) -> io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    eprintln!("protocol-ceiling server listening on {addr}");
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::spawn(async move {
            let _ = serve_connection(stream).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_names_follow_insert_columns_and_where_clauses() {
        assert_eq!(
            bind_names("INSERT INTO ks.t (key, \"C0\") VALUES (?, ?)"),
            vec!["key", "\"C0\""]
        );
        assert_eq!(bind_names("SELECT * FROM ks.t WHERE key = ?"), vec!["key"]);
        assert_eq!(
            bind_names("SELECT * FROM t WHERE a=? AND b >= ? LIMIT 5"),
            vec!["a", "b"]
        );
    }

    #[test]
    fn system_local_row_has_what_the_driver_needs() {
        let st = classify("SELECT host_id, rpc_address, data_center, rack, tokens, cluster_name FROM system.local WHERE key='local'");
        assert_eq!(st.kind, Kind::SystemSelect);
        let body = system_rows(&st, "127.0.0.1:9042".parse().unwrap());
        assert_eq!(&body[0..4], &2i32.to_be_bytes());
        assert_eq!(&body[4..8], &1i32.to_be_bytes());
        assert_eq!(&body[8..12], &6i32.to_be_bytes());
    }

    #[test]
    fn malformed_requests_get_errors() {
        let mut st = ConnState {
            prepared: HashMap::new(),
            local_addr: "127.0.0.1:1".parse().unwrap(),
        };
        assert_eq!(handle(OP_QUERY, &[0, 0, 0, 9, b'x'], &mut st).0, OP_ERROR);
        assert_eq!(handle(OP_EXECUTE, &[0, 16, 1, 2], &mut st).0, OP_ERROR);
        assert_eq!(handle(0x42, &[], &mut st).0, OP_ERROR);
        let (op, _) = handle(OP_PREPARE, &[0, 0, 0, 4, b'U', b'S', b'E', b' '], &mut st);
        assert_eq!(op, OP_RESULT);
    }
}
