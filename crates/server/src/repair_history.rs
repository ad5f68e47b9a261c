//! Repair history, as Cassandra keeps it in `system_distributed.parent_repair_history` (one row
//! per repair of a keyspace) and `system_distributed.repair_history` (one row per table and
//! range repaired, with its status). The tables' definitions are Cassandra 5.0's (the schema
//! crate's golden file); their rows are computed from this store (`system::repair_tables`).
//!
//! The coordinator of a repair records it here as it runs, and sends the record to every live
//! peer when the repair starts and when it ends (`cluster::repair::history`), so any node
//! answers, as Cassandra's replicated keyspace does. Records live in memory: a restarted node
//! sees the repairs its peers send from then on; the newest `MAX_REPAIRS` are kept (Cassandra
//! keeps them 30 days by TTL).

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use uuid::Uuid;

/// How many parent repairs are kept.
const MAX_REPAIRS: usize = 256;

/// One `nodetool repair` of one keyspace: a row of `parent_repair_history`, with the rows of
/// `repair_history` it started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParentRepair {
    /// A timeuuid.
    pub parent_id: Uuid,
    pub keyspace: String,
    pub tables: Vec<String>,
    /// Milliseconds since the epoch.
    pub started_at: i64,
    pub finished_at: Option<i64>,
    pub exception_message: Option<String>,
    /// Ranges as Cassandra prints them: `(start,end]`.
    pub requested_ranges: Vec<String>,
    pub successful_ranges: Vec<String>,
    pub options: BTreeMap<String, String>,
    pub jobs: Vec<RepairJob>,
}

/// One table's repair of one range: a row of `repair_history`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepairJob {
    /// The repair session's timeuuid: one per range, shared by its tables.
    pub id: Uuid,
    pub table: String,
    pub range_begin: String,
    pub range_end: String,
    pub coordinator: SocketAddr,
    /// The other replicas of the range.
    pub participants: Vec<SocketAddr>,
    /// STARTED, SUCCESS or FAILED.
    pub status: String,
    pub started_at: i64,
    pub finished_at: Option<i64>,
    pub exception_message: Option<String>,
}

/// The repairs this node coordinated or heard of, oldest first.
#[derive(Debug, Default)]
pub struct RepairHistory {
    repairs: Mutex<VecDeque<ParentRepair>>,
}

impl RepairHistory {
    /// Records `repair`, replacing an earlier record of it (a later state of the same repair).
    pub fn upsert(&self, repair: ParentRepair) {
        let mut repairs = self.repairs.lock();
        if let Some(slot) = repairs.iter_mut().find(|r| r.parent_id == repair.parent_id) {
            *slot = repair;
            return;
        }
        if repairs.len() >= MAX_REPAIRS {
            repairs.pop_front();
        }
        repairs.push_back(repair);
    }

    /// Every kept repair (the system table scan orders the rows).
    pub fn all(&self) -> Vec<ParentRepair> {
        self.repairs.lock().iter().cloned().collect()
    }
}

/// The form peers exchange a record in.
pub fn encode(repair: &ParentRepair) -> Vec<u8> {
    serde_json::to_vec(repair).unwrap_or_default()
}

/// A record a peer sent; None when malformed.
pub fn decode(bytes: &[u8]) -> Option<ParentRepair> {
    serde_json::from_slice(bytes).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn parent(n: u128, finished: Option<i64>) -> ParentRepair {
        ParentRepair {
            parent_id: Uuid::from_u128(n),
            keyspace: "ks".into(),
            tables: vec!["t".into()],
            started_at: 1,
            finished_at: finished,
            exception_message: None,
            requested_ranges: vec!["(1,2]".into()],
            successful_ranges: Vec::new(),
            options: BTreeMap::new(),
            jobs: Vec::new(),
        }
    }

    #[test]
    fn a_later_state_replaces_the_record_and_old_ones_are_dropped() {
        let h = RepairHistory::default();
        h.upsert(parent(1, None));
        h.upsert(parent(1, Some(5)));
        assert_eq!(h.all(), vec![parent(1, Some(5))]);
        for n in 0..MAX_REPAIRS as u128 {
            h.upsert(parent(n + 2, None));
        }
        assert_eq!(h.all().len(), MAX_REPAIRS);
        assert!(h
            .all()
            .iter()
            .all(|r| r.parent_id != parent(1, None).parent_id));
    }

    #[test]
    fn records_round_trip_and_garbage_is_refused() {
        let p = parent(7, Some(9));
        assert_eq!(decode(&encode(&p)), Some(p));
        assert_eq!(decode(b"not json"), None);
    }
}
