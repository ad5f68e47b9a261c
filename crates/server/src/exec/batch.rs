//! Rules every batch obeys, whether it came as `BEGIN BATCH ... APPLY BATCH` text or as a BATCH
//! request: which statements a batch kind may hold, and Cassandra's size and spread guardrails
//! (`batch_size_warn_threshold`, `batch_size_fail_threshold`,
//! `unlogged_batch_across_partitions_warn_threshold`) with its messages.

use super::client_warn::{pretty_bytes, warn};
use super::error::{ExecError, ExecResult};
use super::write::WritePlan;
use crate::node::NodeState;
use helenus_cql::ast::BatchKind;
use helenus_storage as st;
use std::collections::{BTreeSet, HashSet};

/// Refuses statements the batch kind cannot hold, with Cassandra's messages and order of checks.
pub(super) fn check_kind(kind: BatchKind, children: &[&WritePlan]) -> ExecResult<()> {
    let has_counters = children.iter().any(|c| c.table.is_counter_table());
    let has_non_counters = children.iter().any(|c| !c.table.is_counter_table());
    let refuse = |m: &str| Err(ExecError::Invalid(m.to_string()));
    if kind == BatchKind::Logged && has_counters {
        return refuse("Cannot include a counter statement in a logged batch");
    }
    if kind == BatchKind::Counter && has_non_counters {
        return refuse("Cannot include non-counter statement in a counter batch");
    }
    if has_counters && has_non_counters {
        return refuse("Counter and non-counter mutations cannot exist in the same batch");
    }
    Ok(())
}

/// Applies the size and spread guardrails to a batch's mutations: a warning to the client past
/// the warn thresholds, InvalidRequest past the fail threshold. Only batches that touch more than
/// one partition are checked, as in Cassandra (CASSANDRA-10876).
pub(super) fn check_limits(
    node: &NodeState,
    kind: BatchKind,
    children: &[&WritePlan],
    mutations: &[st::Mutation],
) -> ExecResult<()> {
    let keyspace_of = |m: &st::Mutation| {
        children
            .iter()
            .find(|c| *c.table.id.as_bytes() == m.table)
            .map(|c| c.table.keyspace.as_str())
    };
    let partitions: HashSet<(Option<&str>, &[u8])> = mutations
        .iter()
        .map(|m| (keyspace_of(m), m.key.as_ref()))
        .collect();
    if partitions.len() <= 1 {
        return Ok(());
    }
    let tables: BTreeSet<String> = children
        .iter()
        .map(|c| format!("{}.{}", c.table.keyspace, c.table.name))
        .collect();
    let tables = format!("[{}]", tables.into_iter().collect::<Vec<_>>().join(", "));
    let cfg = &node.config;
    let size: u64 = mutations.iter().map(data_size).sum();
    if size > cfg.batch_size_warn_threshold_bytes {
        if size > cfg.batch_size_fail_threshold_bytes {
            tracing::error!(
                "Batch for {tables} is of size {}, exceeding specified threshold of {} by {}. (see batch_size_fail_threshold)",
                pretty_bytes(size),
                pretty_bytes(cfg.batch_size_fail_threshold_bytes),
                pretty_bytes(size - cfg.batch_size_fail_threshold_bytes),
            );
            return Err(ExecError::Invalid("Batch too large".into()));
        }
        warn(format!(
            "Batch for {tables} is of size {}, exceeding specified threshold of {} by {}.",
            pretty_bytes(size),
            pretty_bytes(cfg.batch_size_warn_threshold_bytes),
            pretty_bytes(size - cfg.batch_size_warn_threshold_bytes),
        ));
    }
    let spread = partitions.len() as u64;
    if kind == BatchKind::Unlogged && spread > cfg.unlogged_batch_across_partitions_warn_threshold {
        let plural = if tables.contains(", ") { "s" } else { "" };
        warn(format!(
            "Unlogged batch covering {spread} partitions detected against table{plural} {tables}. \
             You should use a logged batch for atomicity, or asynchronous writes for performance."
        ));
    }
    Ok(())
}

/// The size Cassandra's `PartitionUpdate.dataSize()` gives a mutation: per row its clustering
/// values, 8 bytes of liveness when it has a row marker, 12 of row deletion, and per cell 16
/// bytes of timestamp/TTL/deletion time plus its value and path; 12 more per complex column, and
/// an (empty) static row's 12.
fn data_size(m: &st::Mutation) -> u64 {
    const DELETION_TIME: u64 = 12;
    const CELL_OVERHEAD: u64 = 16;
    let row = |r: &st::RowUpdate| -> u64 {
        let clustering: u64 = r.clustering.iter().map(|c| c.len() as u64).sum();
        let liveness = if r.liveness.is_some() { 8 } else { 0 };
        let mut complex_columns: Vec<st::ColumnId> = Vec::new();
        let cells: u64 = r
            .cells
            .iter()
            .map(|c| {
                let value = match &c.op {
                    st::CellOp::Set { value, .. } | st::CellOp::SetExpiring { value, .. } => {
                        value.len() as u64
                    }
                    st::CellOp::CounterAdd(_) | st::CellOp::CounterState { .. } => 8,
                    st::CellOp::Delete
                    | st::CellOp::DeleteComplex
                    | st::CellOp::Tombstone { .. }
                    | st::CellOp::ComplexDeletion { .. } => 0,
                };
                let complex = c.path.is_some()
                    || matches!(
                        c.op,
                        st::CellOp::DeleteComplex | st::CellOp::ComplexDeletion { .. }
                    );
                if complex && !complex_columns.contains(&c.column) {
                    complex_columns.push(c.column);
                }
                let path = c.path.as_ref().map_or(0, |p| p.len() as u64);
                CELL_OVERHEAD + value + path
            })
            .sum();
        clustering + liveness + DELETION_TIME + cells + DELETION_TIME * complex_columns.len() as u64
    };
    let statics = m.static_row.as_ref().map_or(DELETION_TIME, row);
    statics + m.rows.iter().map(row).sum::<u64>()
}
