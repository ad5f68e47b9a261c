//! `system_distributed.parent_repair_history` and `repair_history`: the repairs this node
//! coordinated or heard of (`crate::repair_history`), in Cassandra 5.0's columns.

use super::{text, RowBuilder};
use crate::node::NodeState;
use crate::repair_history::ParentRepair;
use bytes::Bytes;
use helenus_schema::TableMeta;
use helenus_types::CqlValue;

type Rows = Vec<Vec<Option<Bytes>>>;

/// A set of text, sorted as a CQL set's elements are.
fn text_set(items: &[String]) -> CqlValue {
    let mut items = items.to_vec();
    items.sort();
    items.dedup();
    CqlValue::Set(items.into_iter().map(text).collect())
}

/// One row per repair of a keyspace.
pub fn parent_repair_history(state: &NodeState, t: &TableMeta) -> Rows {
    state
        .repair_history
        .all()
        .iter()
        .map(|p| {
            let options = p
                .options
                .iter()
                .map(|(k, v)| (text(k.clone()), text(v.clone())))
                .collect();
            // Cassandra writes successful_ranges only when the repair succeeds.
            let successful =
                (!p.successful_ranges.is_empty()).then(|| text_set(&p.successful_ranges));
            RowBuilder::new(t)
                .set("parent_id", CqlValue::Timeuuid(p.parent_id))
                .set("keyspace_name", text(p.keyspace.clone()))
                .set("columnfamily_names", text_set(&p.tables))
                .set("started_at", CqlValue::Timestamp(p.started_at))
                .set_opt("finished_at", p.finished_at.map(CqlValue::Timestamp))
                .set_opt("exception_message", p.exception_message.clone().map(text))
                .set("requested_ranges", text_set(&p.requested_ranges))
                .set_opt("successful_ranges", successful)
                .set("options", CqlValue::Map(options))
                .build()
        })
        .collect()
}

/// One row per table and range repaired.
pub fn repair_history(state: &NodeState, t: &TableMeta) -> Rows {
    state
        .repair_history
        .all()
        .iter()
        .flat_map(|p| job_rows(p, t))
        .collect()
}

fn job_rows(p: &ParentRepair, t: &TableMeta) -> Rows {
    p.jobs
        .iter()
        .map(|j| {
            let mut participants: Vec<_> = j.participants.iter().map(|a| a.ip()).collect();
            participants.sort();
            let participants_v2: Vec<String> =
                j.participants.iter().map(|a| a.to_string()).collect();
            RowBuilder::new(t)
                .set("keyspace_name", text(p.keyspace.clone()))
                .set("columnfamily_name", text(j.table.clone()))
                .set("id", CqlValue::Timeuuid(j.id))
                .set("parent_id", CqlValue::Timeuuid(p.parent_id))
                .set("range_begin", text(j.range_begin.clone()))
                .set("range_end", text(j.range_end.clone()))
                .set("coordinator", CqlValue::Inet(j.coordinator.ip()))
                .set(
                    "coordinator_port",
                    CqlValue::Int(i32::from(j.coordinator.port())),
                )
                .set(
                    "participants",
                    CqlValue::Set(participants.into_iter().map(CqlValue::Inet).collect()),
                )
                .set("participants_v2", text_set(&participants_v2))
                .set("status", text(j.status.clone()))
                .set("started_at", CqlValue::Timestamp(j.started_at))
                .set_opt("finished_at", j.finished_at.map(CqlValue::Timestamp))
                .set_opt("exception_message", j.exception_message.clone().map(text))
                .build()
        })
        .collect()
}
