//! What the system tables, the admin API and drivers' events see of the ring this node is in:
//! peers with their tokens, data centers and schema versions, who is alive, and where a key's
//! replicas are. Implemented by `cluster::ClusterNode`; a node alone has none.

use helenus_cluster::locator::{NodeId, Ring};
use helenus_cluster::service::PeerInfo;
use std::collections::BTreeMap;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;

/// Work still running that yields nothing.
pub type Pending<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;
/// Why a schema change was not made: the statement's own error (the executor's error type,
/// boxed so that this trait stays below the executor) or the ring's.
pub type SchemaError = Box<dyn std::error::Error + Send + Sync>;
/// A schema change planned against a schema: the new schema and what changed, None when the
/// statement changes nothing (IF [NOT] EXISTS that matched), or why it is refused.
pub type SchemaPlan =
    Result<Option<(helenus_schema::Schema, helenus_protocol::SchemaChange)>, SchemaError>;
pub type SchemaPlanner<'a> = dyn Fn(&helenus_schema::Schema) -> SchemaPlan + Send + Sync + 'a;
/// A schema change once ordered: what changed, or why not.
pub type Ordered<'a> = Pin<
    Box<
        dyn Future<Output = Result<Option<helenus_protocol::SchemaChange>, SchemaError>>
            + Send
            + 'a,
    >,
>;
/// Token ranges as storage takes them: `[lo, hi)`, None unbounded.
pub type OwnedRanges = Vec<(Option<i64>, Option<i64>)>;

/// What `nodetool repair [-pr] [-st T -et T] [KS [TABLES]]` asks for.
#[derive(Debug, Clone, Default)]
pub struct RepairOptions {
    pub keyspace: Option<String>,
    pub tables: Vec<String>,
    /// Only this node's primary ranges (`-pr`).
    pub primary_range: bool,
    pub start: Option<i64>,
    pub end: Option<i64>,
    /// Compare only unrepaired data and mark it repaired after (the default, as in Cassandra
    /// 4.0+); false for `-full`.
    pub incremental: bool,
}

pub trait ClusterView: Send + Sync {
    /// This node.
    fn local(&self) -> NodeId;
    /// Every other node known, up or down.
    fn peers(&self) -> Vec<PeerInfo>;
    /// The ring (NORMAL members and their tokens).
    fn ring(&self) -> Arc<Ring>;
    /// The replicas of `token` in `keyspace`, primary first (`nodetool getendpoints`).
    fn replicas(&self, keyspace: &helenus_schema::KeyspaceMeta, token: i64) -> Vec<NodeId>;
    /// Effective ownership of each node for `keyspace` (`nodetool status KS`), 0..1.
    fn ownership(&self, keyspace: Option<&helenus_schema::KeyspaceMeta>) -> BTreeMap<NodeId, f64>;
    /// Cuts this node's internode traffic with the peers at `addresses`, both ways (empty:
    /// heals): fault injection for partition tests (`fault_injection_enabled`).
    fn isolate(&self, addresses: std::collections::HashSet<IpAddr>);
    /// `nodetool decommission`: checks the node may leave, then hands its ranges over in the
    /// background and stops (`operation_mode` follows it).
    fn decommission(self: Arc<Self>) -> Result<(), String>;
    /// `nodetool removenode HOSTID` (`force`: end the removal under way now): checks the node
    /// is a dead ring member, then restores its ranges in the background and removes it.
    fn remove_node(self: Arc<Self>, host_id: &str, force: bool) -> Result<(), String>;
    /// `nodetool removenode status`.
    fn removal_status(&self) -> String;
    /// `nodetool rebuild [SOURCE_DC]`: checks the data center and that no topology change is
    /// under way, then streams this node's ranges in the background (`rebuild_status`).
    fn rebuild(
        self: Arc<Self>,
        source_dc: Option<String>,
        keyspaces: Vec<String>,
    ) -> Result<(), String>;
    /// `{"state": "running" | "done" | "failed" | "none", "message": ...}` of the last rebuild.
    fn rebuild_status(&self) -> serde_json::Value;
    /// `nodetool bootstrap resume`: restarts a failed bootstrap in the background (true), or
    /// false when there is none to resume (`bootstrap_status` follows it).
    fn resume_bootstrap(self: Arc<Self>) -> Result<bool, String>;
    /// `{"state": "running" | "done" | "failed" | "none", "message": ...}` of the bootstrap.
    fn bootstrap_status(&self) -> serde_json::Value;
    /// JOINING, NORMAL, LEAVING or DECOMMISSIONED, as `nodetool netstats` prints Cassandra's.
    fn operation_mode(&self) -> String;
    /// Starts a repair in the background; its number for `repair_status`.
    fn start_repair(self: Arc<Self>, options: RepairOptions) -> u64;
    /// `{"state": "running" | "done" | "failed", ...}` of repair `id`.
    fn repair_status(&self, id: u64) -> Option<serde_json::Value>;
    /// The incremental repair sessions this node takes part in (`nodetool repair_admin list`).
    /// Each as `LocalSession` serialises (cluster/repair/session.rs), oldest first.
    fn repair_sessions(&self) -> Vec<serde_json::Value>;
    /// `nodetool repair_admin cancel --session ID`.
    fn cancel_repair_session(self: Arc<Self>, id: uuid::Uuid) -> Result<(), String>;
    /// `nodetool disablehandoff` / `enablehandoff`: whether hints are stored for replicas.
    fn set_hinted_handoff(&self, enabled: bool);
    fn hinted_handoff(&self) -> bool;
    /// The peer addresses this node is cut off from.
    fn isolated(&self) -> Vec<IpAddr>;
    /// Schema versions and the nodes on each (`nodetool describecluster`).
    fn schema_versions(&self) -> BTreeMap<String, Vec<IpAddr>>;
    /// A schema change ordered through the ring's metadata log: `plan` maps the newest schema
    /// to the changed one (planned again if another node's change comes first); once chosen,
    /// it is installed here and pushed to the live peers, waiting (bounded) until they have it,
    /// as Cassandra waits for schema agreement before answering DDL.
    fn order_schema_change<'a>(&'a self, plan: &'a SchemaPlanner<'a>) -> Ordered<'a>;
    /// After a statement that may have changed roles or permissions: if they changed, push
    /// them to the live peers and wait (bounded) until they have merged them, so the change
    /// holds on every node when the statement returns.
    fn roles_changed(&self) -> Pending<'_>;
    /// The token ranges of `keyspace` this node replicates, as storage's `[lo, hi)` (None:
    /// unbounded), for `nodetool cleanup`; None when it keeps everything; refused while nodes
    /// join or leave.
    fn owned_ranges(
        &self,
        keyspace: &helenus_schema::KeyspaceMeta,
    ) -> Result<Option<OwnedRanges>, String>;
}
