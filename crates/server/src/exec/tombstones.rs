//! Tombstone thresholds of a SELECT, as Cassandra applies them per read command: the tombstones
//! every storage read of one page scanned are added up; past `tombstone_failure_threshold` the
//! read fails with READ_FAILURE (READ_TOO_MANY_TOMBSTONES), past `tombstone_warn_threshold` the
//! client gets a warning and the log a line, both worded as Cassandra's.

use super::client_warn;
use super::error::{ExecError, READ_TOO_MANY_TOMBSTONES};
use super::rows;
use bytes::Bytes;
use helenus_protocol as proto;
use helenus_schema::TableMeta;
use helenus_storage as st;
use helenus_types::{deserialize, to_cql_literal};

/// Longest query text quoted in the warning (Cassandra's `%1.512s`).
const MAX_QUERY_CHARS: usize = 512;

/// What the storage reads of one page scanned so far.
#[derive(Debug, Default)]
pub(super) struct TombstoneTally {
    live_rows: u64,
    tombstones: u64,
    /// The partition the last read was about (key when it read one partition) and its token.
    last: Option<(i64, Option<Bytes>)>,
}

impl TombstoneTally {
    /// The failure threshold left for the next storage read of this page.
    pub fn threshold_left(&self, failure_threshold: u64) -> u64 {
        failure_threshold.saturating_sub(self.tombstones)
    }

    /// Adds one storage read's outcome; a read abandoned past the threshold becomes Cassandra's
    /// ReadFailure from this node.
    pub fn note(
        &mut self,
        result: Result<st::ReadResult, crate::proxy::ProxyError>,
        node: std::net::IpAddr,
        single_key: Option<&Bytes>,
    ) -> Result<st::ReadResult, ExecError> {
        match result {
            Ok(r) => {
                self.live_rows += r.stats.live_rows;
                self.tombstones += r.stats.tombstones_scanned;
                if let Some(p) = r.partitions.last() {
                    self.last = Some((p.token, single_key.cloned()));
                }
                Ok(r)
            }
            Err(crate::proxy::ProxyError::Storage(st::StorageError::TombstoneOverwhelming {
                tombstones_scanned,
                ..
            })) => {
                tracing::error!(
                    "Scanned over {} tombstones during query; query aborted (see tombstone_failure_threshold)",
                    self.tombstones + tombstones_scanned
                );
                Err(overwhelmed(node))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Warns the client (and logs) when the page scanned more tombstones than `warn_threshold`.
    pub fn warn_if_over(&self, warn_threshold: u64, table: &TableMeta, limit: Option<usize>) {
        if self.tombstones <= warn_threshold {
            return;
        }
        let query = query_text(table, self.last.as_ref(), limit);
        let query: String = query.chars().take(MAX_QUERY_CHARS).collect();
        let token = self
            .last
            .as_ref()
            .map_or(String::new(), |(t, _)| format!("; token {t}"));
        let msg = format!(
            "Read {} live rows and {} tombstone cells for query {query}{token} (see tombstone_warn_threshold)",
            self.live_rows, self.tombstones
        );
        tracing::warn!("{msg}");
        client_warn::warn(msg);
    }
}

/// The read as Cassandra's `ReadCommand.toCQLString` writes it: the partition key of a
/// single-partition read, the page's limit, ALLOW FILTERING always.
fn query_text(t: &TableMeta, last: Option<&(i64, Option<Bytes>)>, limit: Option<usize>) -> String {
    let mut q = format!("SELECT * FROM {}.{}", t.keyspace, t.name);
    if let Some((_, Some(key))) = last {
        let parts = rows::key_components(t, key);
        let terms: Vec<String> = t
            .partition_key()
            .zip(parts)
            .map(|(c, v)| {
                let lit = deserialize(&c.cql_type, &v)
                    .map(|v| to_cql_literal(&v))
                    .unwrap_or_else(|_| "?".into());
                format!("{} = {lit}", c.name)
            })
            .collect();
        q.push_str(" WHERE ");
        q.push_str(&terms.join(" AND "));
    }
    if let Some(n) = limit {
        q.push_str(&format!(" LIMIT {n}"));
    }
    q.push_str(" ALLOW FILTERING");
    q
}

/// The error of a read that scanned more tombstones than `tombstone_failure_threshold`.
pub fn overwhelmed(node: std::net::IpAddr) -> ExecError {
    ExecError::ReadFailure {
        consistency: proto::Consistency::One,
        node,
        reason: READ_TOO_MANY_TOMBSTONES,
        reason_name: "READ_TOO_MANY_TOMBSTONES",
    }
}
