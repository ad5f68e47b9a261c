//! Column scans for analytics engines (issue 15): the Helenus Spark source
//! (connectors/spark) reads a columnar table's columns as vectors, without CQL rows between
//! the chunks and Spark's column vectors, as Spark reads Parquet.
//!
//! Two requests on the admin API (its access rules and TLS apply):
//! - `GET /column_scan/KS/TABLE[?splits=N]`: the plan, text lines `column NAME KIND CQLTYPE
//!   WIREKIND` for every column a scan can read, then `range START END HOST`: ranges `(START,
//!   END]` covering the ring once (split into at least N), each with the admin address of a
//!   node holding it (the first replica).
//! - `GET /column_scan/KS/TABLE/data?start=S&end=E&columns=C.C&where=R~R`: the live rows of the
//!   tokens `(S, E]` as a stream of column batches (wire.rs), this node's own data: the range
//!   must lie within one ring range it replicates. Columns and restrictions name columns in
//!   hex (names may hold any character); a restriction is `OP.NAME.VALUE` with OP one of
//!   `eq lt le gt ge` and VALUE the CQL serialized value in hex, on a regular column of an
//!   ordered type, as `WHERE c op v ALLOW FILTERING` filters.
//!
//! One replica's data is what the connector's default consistency (LOCAL_ONE) reads too.

mod wire;

use super::HttpRequest;
use crate::exec::storage_bridge::{effective_layout, value_type};
use crate::exec::values::decode_hex as unhex;
use crate::export::ExportRange;
use crate::node::NodeState;
use crate::tls::Stream;
use bytes::Bytes;
use helenus_schema::{ColumnKind, StorageLayout, TableMeta};
use helenus_storage::columnar::{ColumnSpec, CompareOp};
use helenus_storage::{ColumnRestriction, ColumnScan, ScanBatch, StorageError};
use helenus_types::SharedClock;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use wire::WireKind;

/// Batches queued between the scan and the socket: enough to keep both busy, few enough that a
/// slow client holds little memory.
const QUEUED_BATCHES: usize = 4;
/// How long a batch may wait for the client to take it.
const STALLED_CLIENT: std::time::Duration = std::time::Duration::from_secs(120);
/// Most ranges a plan is split into (a Spark partition each).
const MAX_SPLITS: u64 = 4096;

/// Whether `path` is a column-scan request.
pub(super) fn handles(path: &str) -> bool {
    path.starts_with("/column_scan/")
}

/// Answers a column-scan request on `socket`.
pub(super) async fn serve(
    node: Arc<NodeState>,
    clock: SharedClock,
    req: &HttpRequest,
    socket: &mut Box<dyn Stream>,
) -> std::io::Result<()> {
    let segs: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    let answer = match segs.as_slice() {
        ["column_scan", ks, table] => plan(&node, ks, table, req).map(Answer::Plan),
        ["column_scan", ks, table, "data"] => {
            data_request(&node, ks, table, req, clock.wall_ms() / 1000).map(Answer::Data)
        }
        _ => Err((
            404,
            format!("no such endpoint: {} {}", req.method, req.path),
        )),
    };
    match answer {
        Err((status, message)) => {
            let body = serde_json::json!({"message": message, "code": status}).to_string();
            super::respond(socket, status, "application/json", &body).await
        }
        Ok(Answer::Plan(text)) => super::respond(socket, 200, "text/plain", &text).await,
        Ok(Answer::Data(scan)) => stream(node, scan, socket).await,
    }
}

enum Answer {
    Plan(String),
    Data(DataScan),
}

type Refusal = (u16, String);

/// A column a scan can read, and where its values come from.
#[derive(Debug, Clone)]
struct ScanColumn {
    name: String,
    /// Its CQL type as the schema spells it.
    cql_type: String,
    source: Source,
    kind: WireKind,
}

#[derive(Debug, Clone, Copy)]
enum Source {
    /// The i-th component of the partition key.
    PartitionKey(usize),
    /// The i-th clustering value.
    Clustering(usize),
    /// A regular column (storage's id and value type).
    Regular(ColumnSpec),
}

/// The table a request names, if a column scan can read it.
fn scannable(node: &NodeState, ks: &str, table: &str) -> Result<Arc<TableMeta>, Refusal> {
    let schema = node.schema();
    let t = schema
        .keyspaces
        .get(ks)
        .ok_or((404, format!("Keyspace {ks} does not exist")))?
        .tables
        .get(table)
        .cloned()
        .ok_or((404, format!("Table {ks}.{table} does not exist")))?;
    if effective_layout(&t) != StorageLayout::Columnar {
        return Err((
            400,
            format!(
                "{ks}.{table} is stored as rows: column scans read columnar tables \
                 (the Spark Cassandra Connector reads any table)"
            ),
        ));
    }
    if t.columns.iter().any(|c| c.kind == ColumnKind::Static) {
        return Err((
            400,
            format!("{ks}.{table} has static columns, which column scans do not read"),
        ));
    }
    Ok(t)
}

/// The columns of `t` a scan reads: key columns and regular columns but collections and
/// counters (kept outside the column chunks).
fn scan_columns(t: &TableMeta) -> Vec<ScanColumn> {
    let mut partition = 0;
    let mut clustering = 0;
    let mut out = Vec::new();
    for c in &t.columns {
        let vt = value_type(&c.cql_type);
        let source = match c.kind {
            ColumnKind::PartitionKey => {
                partition += 1;
                Source::PartitionKey(partition - 1)
            }
            ColumnKind::Clustering => {
                clustering += 1;
                Source::Clustering(clustering - 1)
            }
            ColumnKind::Regular if !c.cql_type.is_multi_cell() && !c.cql_type.is_counter() => {
                Source::Regular(ColumnSpec {
                    id: c.id,
                    value_type: vt,
                })
            }
            _ => continue,
        };
        let cql_type = c.cql_type.to_string();
        out.push(ScanColumn {
            name: c.name.clone(),
            kind: WireKind::of(vt, &cql_type),
            cql_type,
            source,
        });
    }
    // Key components in key order (the schema lists columns by name).
    out.sort_by_key(|c| match c.source {
        Source::PartitionKey(i) => (0, i),
        Source::Clustering(i) => (1, i),
        Source::Regular(_) => (2, 0),
    });
    out
}

fn plan(node: &NodeState, ks: &str, table: &str, req: &HttpRequest) -> Result<String, Refusal> {
    let t = scannable(node, ks, table)?;
    let splits = match req.query.get("splits") {
        Some(s) => s
            .parse::<u64>()
            .map_err(|_| (400, format!("splits must be a number, not '{s}'")))?,
        None => 1,
    }
    .clamp(1, MAX_SPLITS);
    let mut text = String::new();
    for c in scan_columns(&t) {
        let kind = match c.source {
            Source::PartitionKey(_) => "partition_key",
            Source::Clustering(_) => "clustering",
            Source::Regular(_) => "regular",
        };
        text.push_str(&format!(
            "column\t{}\t{kind}\t{}\t{}\n",
            c.name,
            c.cql_type,
            c.kind.name()
        ));
    }
    let ranges = holders(node, ks)?;
    let per_range = splits.div_ceil(ranges.len().max(1) as u64);
    for (range, host) in ranges {
        for (start, end) in split(range, per_range) {
            text.push_str(&format!("range\t{start}\t{end}\t{host}\n"));
        }
    }
    Ok(text)
}

/// The ring's ranges, each with the admin address of its first replica (this node's alone
/// when it is not in a ring).
fn holders(node: &NodeState, ks: &str) -> Result<Vec<(ExportRange, String)>, Refusal> {
    let me = node.config.admin_address().to_string();
    let own = || {
        crate::export::ranges_of_tokens(&node.identity.tokens)
            .into_iter()
            .map(|r| (r, me.clone()))
            .collect()
    };
    let Some(cluster) = node.cluster() else {
        return Ok(own());
    };
    let ring = cluster.ring();
    if ring.is_empty() {
        return Ok(own());
    }
    let schema = node.schema();
    let keyspace = schema
        .keyspaces
        .get(ks)
        .ok_or((404, format!("Keyspace {ks} does not exist")))?;
    let local = cluster.local();
    let peers = cluster.peers();
    let mut out = Vec::new();
    for (range, _) in ring.ranges() {
        let first = cluster.replicas(keyspace, range.end).first().copied();
        let host = match first {
            Some(n) if n == local => me.clone(),
            // A peer's admin API listens on its listen address, as this node's does on a
            // loopback ring.
            Some(n) => peers
                .iter()
                .find(|p| p.host_id == n)
                .and_then(|p| p.address)
                .map(|a| a.ip().to_string())
                .ok_or((503, format!("no address known for replica {n:?}")))?,
            None => return Err((503, format!("no replica for tokens up to {}", range.end))),
        };
        out.push((
            ExportRange {
                start: range.start,
                end: range.end,
            },
            host,
        ));
    }
    Ok(out)
}

/// `range` cut into `parts` ranges of about equal width.
fn split(range: ExportRange, parts: u64) -> Vec<(i64, i64)> {
    let width: u128 = match (range.end as i128 - range.start as i128).rem_euclid(1 << 64) {
        0 => 1 << 64,
        w => w as u128,
    };
    let parts = u128::from(parts.max(1)).min(width);
    let mut out = Vec::new();
    let mut start = range.start;
    for i in 1..=parts {
        let end = if i == parts {
            range.end
        } else {
            // Wrapping arithmetic on the ring: start + width * i / parts.
            (range.start as i128 + (width * i / parts) as i128) as i64
        };
        out.push((start, end));
        start = end;
    }
    out
}

/// A validated data request.
struct DataScan {
    table: Arc<TableMeta>,
    range: ExportRange,
    columns: Vec<ScanColumn>,
    restrictions: Vec<ColumnRestriction>,
    now_s: i64,
}

fn data_request(
    node: &NodeState,
    ks: &str,
    table: &str,
    req: &HttpRequest,
    now_s: i64,
) -> Result<DataScan, Refusal> {
    let t = scannable(node, ks, table)?;
    let token = |name: &str| -> Result<i64, Refusal> {
        let v = req
            .query
            .get(name)
            .ok_or((400, format!("'{name}' (a token) is required")))?;
        v.parse()
            .map_err(|_| (400, format!("'{name}' must be a token, not '{v}'")))
    };
    let range = ExportRange {
        start: token("start")?,
        end: token("end")?,
    };
    replicated_here(node, ks, range)?;
    let known = scan_columns(&t);
    let find = |hex_name: &str| -> Result<ScanColumn, Refusal> {
        let name = unhex(hex_name)
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or((400, format!("'{hex_name}' is not a hex column name")))?;
        known.iter().find(|c| c.name == name).cloned().ok_or((
            400,
            format!("{ks}.{table} has no column {name} a column scan reads"),
        ))
    };
    let columns = req
        .query
        .get("columns")
        .map(|s| s.split('.').filter(|c| !c.is_empty()).map(find).collect())
        .transpose()?
        .unwrap_or_default();
    let mut restrictions = Vec::new();
    for r in req
        .query
        .get("where")
        .map(|w| w.split('~').filter(|r| !r.is_empty()).collect::<Vec<_>>())
        .unwrap_or_default()
    {
        restrictions.push(restriction(r, &find)?);
    }
    Ok(DataScan {
        table: t,
        range,
        columns,
        restrictions,
        now_s,
    })
}

/// `OP.NAME.VALUE` (hex name and value) as a restriction on a regular column.
fn restriction(
    text: &str,
    find: &dyn Fn(&str) -> Result<ScanColumn, Refusal>,
) -> Result<ColumnRestriction, Refusal> {
    let bad = || {
        (
            400,
            format!("bad restriction '{text}': expected OP.NAME.VALUE"),
        )
    };
    let mut parts = text.split('.');
    let (Some(op), Some(name), Some(value), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    let op = match op {
        "eq" => CompareOp::Eq,
        "lt" => CompareOp::Lt,
        "le" => CompareOp::Le,
        "gt" => CompareOp::Gt,
        "ge" => CompareOp::Ge,
        _ => return Err(bad()),
    };
    let column = find(name)?;
    let Source::Regular(spec) = column.source else {
        return Err((
            400,
            format!("{} is a key column: restrict regular columns", column.name),
        ));
    };
    let value = unhex(value).ok_or_else(bad)?;
    if spec.value_type.scalar(&value).is_none() {
        return Err((
            400,
            format!(
                "{} cannot be restricted by a column scan (no order, or a value of the wrong \
                 size)",
                column.name
            ),
        ));
    }
    Ok(ColumnRestriction {
        column: spec,
        op,
        value,
    })
}

/// Refuses a range this node does not hold whole: in a ring, it must lie within one ring range
/// this node replicates (the plan's ranges do).
fn replicated_here(node: &NodeState, ks: &str, range: ExportRange) -> Result<(), Refusal> {
    let Some(cluster) = node.cluster() else {
        return Ok(());
    };
    let ring = cluster.ring();
    if ring.is_empty() {
        return Ok(());
    }
    let schema = node.schema();
    let keyspace = schema
        .keyspaces
        .get(ks)
        .ok_or((404, format!("Keyspace {ks} does not exist")))?;
    let holding = ring
        .ranges()
        .into_iter()
        .map(|(r, _)| r)
        .find(|r| r.contains(range.end))
        .ok_or((503, "the ring has no ranges".to_string()))?;
    let offset = |t: i64| (t as u64).wrapping_sub(holding.start as u64);
    let within = holding.start == holding.end
        || (range.start != range.end && offset(range.start) < offset(range.end));
    let local = cluster.local();
    if !within || !cluster.replicas(keyspace, range.end).contains(&local) {
        return Err((
            400,
            format!(
                "this node does not hold tokens ({}, {}] whole: ask the host the plan names",
                range.start, range.end
            ),
        ));
    }
    Ok(())
}

/// Streams the scan's batches: the head, then frames as the scan makes them, then the end (or
/// the error that stopped it).
async fn stream(
    node: Arc<NodeState>,
    scan: DataScan,
    socket: &mut Box<dyn Stream>,
) -> std::io::Result<()> {
    socket
        .write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
        )
        .await?;
    socket.write_all(wire::MAGIC).await?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(QUEUED_BATCHES);
    let task = tokio::task::spawn_blocking(move || run(&node, &scan, &tx));
    while let Some(frame) = rx.recv().await {
        // A client that stops reading would hold the scan (its thread, its pinned SSTables)
        // for ever: past the timeout the connection is dropped, and with it the scan.
        tokio::time::timeout(STALLED_CLIENT, socket.write_all(&frame))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "client stalled"))??;
    }
    let last = match task.await {
        Ok(Ok(rows)) => wire::end_frame(rows),
        Ok(Err(e)) => wire::error_frame(&e.to_string()),
        Err(e) => wire::error_frame(&format!("column scan failed: {e}")),
    };
    socket.write_all(&last).await?;
    socket.shutdown().await
}

/// Runs the scan on this (blocking) thread, sending each batch's frame; the rows sent.
fn run(
    node: &NodeState,
    scan: &DataScan,
    tx: &tokio::sync::mpsc::Sender<Vec<u8>>,
) -> Result<u64, StorageError> {
    let t = &scan.table;
    let regular: Vec<ColumnSpec> = scan
        .columns
        .iter()
        .filter_map(|c| match c.source {
            Source::Regular(spec) => Some(spec),
            _ => None,
        })
        .collect();
    let wants_keys = scan
        .columns
        .iter()
        .any(|c| !matches!(c.source, Source::Regular(_)));
    let mut rows = 0u64;
    for (start, end) in scan.range.scans() {
        let request = ColumnScan {
            start,
            end,
            columns: regular.clone(),
            restrictions: scan.restrictions.clone(),
            now_s: scan.now_s,
            tombstone_failure_threshold: node.config.tombstone_failure_threshold,
            group_runs: wants_keys.then(|| t.clustering().count()),
            wire: None,
        };
        node.engine
            .scan_columns(*t.id.as_bytes(), &request, &mut |batch| {
                let (sent, payload) = encode(t, &scan.columns, &batch);
                if sent == 0 {
                    return Ok(());
                }
                rows += sent as u64;
                tx.blocking_send(wire::batch_frame(&payload))
                    .map_err(|_| StorageError::InvalidRequest("the client went away".into()))
            })?;
    }
    Ok(rows)
}

/// A batch's selected rows as a batch frame's payload; the rows it holds.
fn encode(t: &TableMeta, columns: &[ScanColumn], batch: &ScanBatch) -> (usize, Vec<u8>) {
    let keep: Option<Vec<u32>> = batch
        .selected
        .as_ref()
        .filter(|s| s.count_ones() < batch.rows)
        .map(|s| {
            (0..batch.rows)
                .filter(|&i| s.get(i))
                .map(|i| i as u32)
                .collect()
        });
    let rows = keep.as_ref().map_or(batch.rows, Vec::len);
    let mut out = Vec::with_capacity(4 + rows * 8 * columns.len().max(1));
    out.extend_from_slice(&(rows as u32).to_le_bytes());
    if rows == 0 {
        return (0, out);
    }
    let keys = RowKeys::of(t, batch);
    let mut regular = 0;
    for c in columns {
        match c.source {
            Source::Regular(_) => {
                match batch.columns.get(regular) {
                    Some(col) => wire::put_column(&mut out, col, c.kind, keep.as_deref()),
                    None => wire::put_serialized(&mut out, &vec![None; rows], c.kind),
                }
                regular += 1;
            }
            Source::PartitionKey(_) | Source::Clustering(_) => {
                let values: Vec<Option<&[u8]>> = (0..rows)
                    .map(|i| {
                        let row = keep
                            .as_ref()
                            .map_or(i, |k| k.get(i).map_or(0, |&r| r as usize));
                        keys.value(row, c.source)
                    })
                    .collect();
                wire::put_serialized(&mut out, &values, c.kind);
            }
        }
    }
    (rows, out)
}

/// The key values of a batch's rows, from its partition runs.
struct RowKeys<'a> {
    batch: &'a ScanBatch,
    /// Per run, the partition key's components.
    parts: Vec<Vec<Bytes>>,
    /// Per row, its run.
    run_of: Vec<usize>,
}

impl<'a> RowKeys<'a> {
    /// Batches carry partition runs only when the scan asked for them (`group_runs`: a key
    /// column is wanted); without, there is nothing to index.
    fn of(t: &TableMeta, batch: &'a ScanBatch) -> Self {
        if batch.partitions.is_empty() {
            return RowKeys {
                batch,
                parts: Vec::new(),
                run_of: Vec::new(),
            };
        }
        let mut run_of = vec![usize::MAX; batch.rows];
        for (r, run) in batch.partitions.iter().enumerate() {
            for row in run.start..run.end.min(batch.rows) {
                if let Some(slot) = run_of.get_mut(row) {
                    *slot = r;
                }
            }
        }
        let parts = batch
            .partitions
            .iter()
            .map(|run| crate::exec::rows::key_components(t, &run.key))
            .collect();
        RowKeys {
            batch,
            parts,
            run_of,
        }
    }

    fn value(&self, row: usize, source: Source) -> Option<&[u8]> {
        let run = *self.run_of.get(row)?;
        match source {
            Source::PartitionKey(i) => self.parts.get(run)?.get(i).map(|b| b.as_ref()),
            Source::Clustering(i) => self
                .batch
                .partitions
                .get(run)?
                .clustering
                .get(i)
                .map(|b| b.as_ref()),
            Source::Regular(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_splits_into_parts_that_cover_it_once() {
        let whole = ExportRange {
            start: i64::MIN,
            end: i64::MIN,
        };
        let parts = split(whole, 4);
        assert_eq!(parts.len(), 4);
        assert_eq!(parts[0].0, i64::MIN);
        assert_eq!(parts[3].1, i64::MIN);
        assert_eq!(parts[1].0, -(1i64 << 62));
        for w in parts.windows(2) {
            assert_eq!(w[0].1, w[1].0);
        }
        let wrapping = ExportRange {
            start: 100,
            end: -100,
        };
        let parts = split(wrapping, 2);
        assert_eq!(parts.first().map(|p| p.0), Some(100));
        assert_eq!(parts.last().map(|p| p.1), Some(-100));
        assert_eq!(
            split(ExportRange { start: 1, end: 3 }, 10),
            vec![(1, 2), (2, 3)]
        );
    }

    #[test]
    fn hex_is_read_strictly() {
        assert_eq!(unhex("6162"), Some(b"ab".to_vec()));
        assert_eq!(unhex(""), Some(Vec::new()));
        assert_eq!(unhex("6"), None);
        assert_eq!(unhex("zz"), None);
    }

    #[test]
    fn restrictions_are_parsed_or_refused_with_a_reason() {
        let spec = ColumnSpec {
            id: 3,
            value_type: helenus_storage::columnar::ValueType::Int,
        };
        let find = |h: &str| -> Result<ScanColumn, Refusal> {
            match unhex(h).as_deref() {
                Some(b"a") => Ok(ScanColumn {
                    name: "a".into(),
                    cql_type: "int".into(),
                    source: Source::Regular(spec),
                    kind: WireKind::I32,
                }),
                Some(b"k") => Ok(ScanColumn {
                    name: "k".into(),
                    cql_type: "int".into(),
                    source: Source::PartitionKey(0),
                    kind: WireKind::I32,
                }),
                _ => Err((400, "no such column".into())),
            }
        };
        let r = restriction("ge.61.00000005", &find).map_err(|e| e.1);
        assert_eq!(
            r,
            Ok(ColumnRestriction {
                column: spec,
                op: CompareOp::Ge,
                value: vec![0, 0, 0, 5]
            })
        );
        assert!(restriction("ge.61.05", &find).is_err(), "an int is 4 bytes");
        assert!(restriction("ne.61.00000005", &find).is_err());
        assert!(restriction("eq.6b.00000005", &find)
            .map_err(|e| e.1)
            .is_err_and(|m| m.contains("key column")));
        assert!(restriction("eq.61", &find).is_err());
    }
}
