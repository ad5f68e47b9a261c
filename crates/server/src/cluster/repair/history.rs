//! A repair's record in the repair history (`crate::repair_history`, served as
//! `system_distributed.parent_repair_history` and `repair_history`), kept as Cassandra's
//! coordinator keeps it: the parent row when a keyspace's repair starts (requested ranges,
//! tables, options), a STARTED row per table as each range's session starts, SUCCESS or FAILED
//! as each ends, and the parent's end (successful ranges, or the failure's message).
//!
//! The record is shared with every live peer when the repair starts and when it ends (one
//! `RepairHistory` message each, not one per row: a repair of many ranges would otherwise send
//! its growing record once per table and range).

use super::ClusterNode;
use crate::node::NodeState;
use crate::repair_history::{self, ParentRepair, RepairJob};
use crate::topology::RepairOptions;
use helenus_cluster::locator::{NodeId, TokenRange};
use helenus_cluster::messaging::Verb;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use uuid::Uuid;

/// Cassandra's `RepairState` names.
const STARTED: &str = "STARTED";
const SUCCESS: &str = "SUCCESS";
const FAILED: &str = "FAILED";

/// A range as Cassandra prints one: `(start,end]`.
fn range_text(range: TokenRange) -> String {
    format!("({},{}]", range.start, range.end)
}

/// The repair's options as Cassandra's `RepairOption.asMap` names them (ranges and tables have
/// their own columns). Every repair here is parallel.
fn options_map(options: &RepairOptions) -> BTreeMap<String, String> {
    let sub_range = options.start.is_some() && options.end.is_some();
    [
        ("parallelism", "parallel".to_string()),
        ("primary_range", options.primary_range.to_string()),
        ("incremental", options.incremental.to_string()),
        ("job_threads", "1".into()),
        ("data_centers", String::new()),
        ("hosts", String::new()),
        ("trace", "false".into()),
        ("sub_range_repair", sub_range.to_string()),
        ("pull_repair", "false".into()),
        ("force_repair", "false".into()),
        ("preview_kind", "NONE".into()),
        ("optimise_streams", "false".into()),
        ("ignore_unreplicated_keyspaces", "false".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The record of one keyspace's repair, as it runs.
pub(super) struct HistoryLog<'a> {
    cluster: &'a ClusterNode,
    node: &'a NodeState,
    record: ParentRepair,
}

impl<'a> HistoryLog<'a> {
    /// Records the start of the repair of `keyspace`'s `tables` over `ranges`.
    pub(super) fn start(
        cluster: &'a ClusterNode,
        node: &'a NodeState,
        keyspace: &str,
        tables: Vec<String>,
        ranges: &[TokenRange],
        options: &RepairOptions,
    ) -> Self {
        let record = ParentRepair {
            parent_id: helenus_types::time::new_timeuuid(),
            keyspace: keyspace.to_string(),
            tables,
            started_at: node.exec.clock().wall_ms(),
            finished_at: None,
            exception_message: None,
            requested_ranges: ranges.iter().map(|r| range_text(*r)).collect(),
            successful_ranges: Vec::new(),
            options: options_map(options),
            jobs: Vec::new(),
        };
        let log = HistoryLog {
            cluster,
            node,
            record,
        };
        log.keep();
        log.share();
        log
    }

    /// Records the start of `range`'s session over the record's tables with `replicas`; its id.
    /// The parent repair's id, which an incremental repair's session shares (as Cassandra's
    /// pending repair id is its parent session's).
    pub(super) fn parent_id(&self) -> Uuid {
        self.record.parent_id
    }

    pub(super) fn start_session(&mut self, range: TokenRange, replicas: &[NodeId]) -> Uuid {
        let id = helenus_types::time::new_timeuuid();
        let coordinator = self.address(self.cluster.local());
        let participants: Vec<SocketAddr> = replicas
            .iter()
            .filter(|r| **r != self.cluster.local())
            .map(|r| self.address(*r))
            .collect();
        let now = self.node.exec.clock().wall_ms();
        for table in &self.record.tables {
            self.record.jobs.push(RepairJob {
                id,
                table: table.clone(),
                range_begin: range.start.to_string(),
                range_end: range.end.to_string(),
                coordinator,
                participants: participants.clone(),
                status: STARTED.into(),
                started_at: now,
                finished_at: None,
                exception_message: None,
            });
        }
        self.keep();
        id
    }

    /// Records how `table`'s part of session `id` ended; every still running table of the
    /// session when `table` is None (the session failed before reaching them).
    pub(super) fn end_job(&mut self, id: Uuid, table: Option<&str>, outcome: Result<(), &str>) {
        let now = self.node.exec.clock().wall_ms();
        for job in self
            .record
            .jobs
            .iter_mut()
            .filter(|j| j.id == id && j.status == STARTED && table.is_none_or(|t| t == j.table))
        {
            job.finished_at = Some(now);
            match outcome {
                Ok(()) => job.status = SUCCESS.into(),
                Err(e) => {
                    job.status = FAILED.into();
                    job.exception_message = Some(e.to_string());
                }
            }
        }
        self.keep();
    }

    /// Records the end of the keyspace's repair and shares the record.
    pub(super) fn finish(mut self, outcome: &Result<(), String>) {
        let now = self.node.exec.clock().wall_ms();
        self.record.finished_at = Some(now);
        match outcome {
            Ok(()) => self.record.successful_ranges = self.record.requested_ranges.clone(),
            Err(e) => {
                self.record.exception_message = Some(e.clone());
                // Sessions the failure cut short ended with it.
                for job in self.record.jobs.iter_mut().filter(|j| j.status == STARTED) {
                    job.status = FAILED.into();
                    job.finished_at = Some(now);
                    job.exception_message = Some(e.clone());
                }
            }
        }
        self.keep();
        self.share();
    }

    fn keep(&self) {
        self.node.repair_history.upsert(self.record.clone());
    }

    /// Sends the record to every live peer (they keep it as they receive it).
    fn share(&self) {
        let payload = bytes::Bytes::from(repair_history::encode(&self.record));
        for peer in self.cluster.service.peers().into_iter().filter(|p| p.alive) {
            let _ = self.cluster.messenger.send_one_way(
                peer.host_id,
                Verb::RepairHistory,
                payload.clone(),
            );
        }
    }

    /// `node`'s storage address (this node's own when it is local).
    fn address(&self, node: NodeId) -> SocketAddr {
        if node == self.cluster.local() {
            return self.cluster.service.listen_address();
        }
        let ip = super::super::streams::ip_of(self.cluster, node);
        let port = self.cluster.service.listen_address().port();
        SocketAddr::new(ip, port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_options_read_as_cassandra_writes_them() {
        assert_eq!(range_text(TokenRange::new(-5, 10)), "(-5,10]");
        let options = options_map(&RepairOptions {
            primary_range: true,
            ..RepairOptions::default()
        });
        assert_eq!(
            options.get("primary_range").map(String::as_str),
            Some("true")
        );
        assert_eq!(
            options.get("incremental").map(String::as_str),
            Some("false")
        );
        assert_eq!(
            options.get("sub_range_repair").map(String::as_str),
            Some("false")
        );
    }
}
