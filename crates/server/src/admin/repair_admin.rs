//! The admin API of incremental repair sessions, for `nodetool repair_admin`: the sessions this
//! node takes part in (`list`), cancelling one (`cancel`), and the data still pending for a
//! session, by table (`summarize-pending`).

use super::{HttpRequest, RouteResult};
use crate::node::NodeState;
use serde_json::json;

/// `GET /storage_service/repair_admin`: the sessions, oldest first.
pub(super) fn list(node: &NodeState) -> RouteResult {
    let sessions = node
        .cluster()
        .map(|c| c.repair_sessions())
        .unwrap_or_default();
    Ok(("application/json", json!(sessions).to_string()))
}

/// `POST /storage_service/repair_admin/cancel?session=ID`.
pub(super) fn cancel(node: &NodeState, req: &HttpRequest) -> RouteResult {
    let cluster = node
        .cluster()
        .ok_or((400, "this node is not in a ring".to_string()))?;
    let id = req
        .query
        .get("session")
        .and_then(|s| uuid::Uuid::parse_str(s).ok())
        .ok_or((400, "cancel needs session=UUID".to_string()))?;
    cluster
        .clone()
        .cancel_repair_session(id)
        .map_err(|e| (400, e))?;
    Ok(("application/json", "\"\"".to_string()))
}

/// `GET /storage_service/repair_admin/pending`: per table and session, the SSTables and bytes
/// still pending.
pub(super) fn pending(node: &NodeState) -> RouteResult {
    let schema = node.schema();
    let names: std::collections::HashMap<[u8; 16], (String, String)> = schema
        .keyspaces
        .values()
        .flat_map(|k| k.tables.values())
        .map(|t| (*t.id.as_bytes(), (t.keyspace.clone(), t.name.clone())))
        .collect();
    let rows: Vec<_> = node
        .engine
        .pending_repairs()
        .into_iter()
        .filter_map(|p| {
            let (keyspace, table) = names.get(&p.table)?;
            Some(json!({
                "keyspace": keyspace,
                "table": table,
                "session": uuid::Uuid::from_bytes(p.session).to_string(),
                "sstables": p.sstables,
                "bytes": p.bytes,
            }))
        })
        .collect();
    Ok(("application/json", json!(rows).to_string()))
}
