//! Statement execution: parse, prepare (bind-marker types, result metadata, partition-key indexes),
//! and run each statement kind against the schema, the data (through `node.proxy`, with the
//! request's consistency level) or the system tables.
//!
//! This module prepares statements (`Prepared`, cached in the node's prepared cache) and runs them;
//! `respond` maps outcomes and errors to protocol responses. Which request runs what (QUERY,
//! PREPARE, EXECUTE, BATCH) is decided by the transport (`transport/dispatch.rs`). The submodules form layers, each using only those below it (no cycles,
//! checked by `tests/module_cycles.py`):
//! - requests and statements: `respond`, then `lwt` (conditional statements and batches), then
//!   `select` (plan in phases, scan, filter, order, SELECT JSON) and `batch`, then `write`
//!   (INSERT/UPDATE/DELETE plans, cells, LWT conditions);
//! - selections: `aggregates` over `selectors` (compiled selectors);
//! - schema: `ddl` (a pure `apply` per statement kind, then `execute` persists it and makes
//!   storage follow), `describe` (DESCRIBE rows and statements);
//! - key restrictions: `key_values` (the values a key column is restricted to and their expansion
//!   into key bytes, shared by SELECT and writes);
//! - values: `values` (terms to values), over `functions`, `cast`, `arith` and `json`;
//! - leaves: `error`, `cql_text` (quoting), `rows`, `paging`, `tombstones`, `client_warn`,
//!   `write_checks`, `storage_bridge`.

mod access;
#[cfg(test)]
mod access_tests;
mod aggregates;
mod arith;
mod batch;
pub mod cancel;
mod cast;
pub mod client_warn;
mod cql_text;
pub mod ddl;
pub mod describe;
mod error;
mod floor;
mod functions;
#[cfg(test)]
mod index_tests;
mod json;
mod key_values;
mod lwt;
#[cfg(test)]
mod node_tests;
mod paging;
mod respond;
mod roles;
pub(crate) mod rows;
mod select;
mod selectors;
mod sorted;
pub mod storage_bridge;
mod tombstones;
mod tuple_text;
// Tracing lives at the top level (NodeState keeps the trace store); re-exported for callers that
// reach it through exec.
pub(crate) use crate::trace;
pub(crate) mod values;
mod write;
mod write_checks;

pub use crate::exec_state::ExecState;
pub use error::{ExecError, ExecResult};
pub use respond::{
    error_response, outcome_response, prepared_response, rows_result, run_batch, supported,
};

use crate::node::NodeState;
use helenus_coordinator::ConsistencyLevel;
use helenus_cql::ast::{self, Statement};
use helenus_protocol as proto;
use helenus_types::CqlType;
use std::sync::Arc;
use values::Binds;

/// Per-connection state.
#[derive(Debug, Default, Clone)]
pub struct Session {
    pub keyspace: Option<String>,
    /// The role this connection logged in as (PasswordAuthenticator); `None` is anonymous.
    pub user: Option<String>,
}

/// What a bind marker receives: shown to drivers as the variable metadata of a PREPARED result.
#[derive(Debug, Clone, PartialEq)]
pub struct BindSpec {
    pub keyspace: String,
    pub table: String,
    pub name: String,
    pub ty: CqlType,
}

impl BindSpec {
    /// A marker bound to `name` (a column, or a pseudo-name like `[limit]`) of `table`.
    pub fn new(table: &helenus_schema::TableMeta, name: &str, ty: CqlType) -> BindSpec {
        BindSpec {
            keyspace: table.keyspace.clone(),
            table: table.name.clone(),
            name: name.to_string(),
            ty,
        }
    }

    /// The same table's receiver under another name and type (a field, element or argument).
    pub fn renamed(&self, name: &str, ty: CqlType) -> BindSpec {
        BindSpec {
            name: name.to_string(),
            ty,
            ..self.clone()
        }
    }
}

#[derive(Debug, Clone)]
pub enum Planned {
    Select(Box<select::SelectPlan>),
    Write(Box<write::WritePlan>),
    Batch {
        children: Vec<write::WritePlan>,
        using: ast::UsingClause,
        kind: ast::BatchKind,
    },
    Use(String),
    Ddl(Box<Statement>),
    Auth(Box<ast::AuthStatement>),
    Describe(ast::DescribeStatement),
    Truncate {
        keyspace: String,
        table: String,
    },
}

/// (keyspace, table, (name, type) of each column) of a SELECT's result.
pub type ResultColumns = (String, String, Vec<(String, CqlType)>);

/// A statement ready to execute many times.
#[derive(Debug)]
pub struct Prepared {
    pub query: String,
    pub keyspace: Option<String>,
    pub plan: Planned,
    pub binds: Vec<BindSpec>,
    pub bind_names: Vec<Option<String>>,
    /// (keyspace, table, columns) of a SELECT's result.
    pub result: Option<ResultColumns>,
    pub pk_indexes: Vec<u16>,
    pub id: [u8; 16],
    pub result_metadata_id: [u8; 16],
    /// What the statement does, for its timeout and where it runs: found once from its text, not
    /// on every EXECUTE.
    pub kind: crate::request_kind::RequestKind,
    /// The tables the plan was built against; a change to any of them makes the plan stale.
    pub tables: Vec<Arc<helenus_schema::TableMeta>>,
    /// The schema generation at which `tables` were last found current (see [`cached`]).
    checked_generation: std::sync::atomic::AtomicU64,
}

impl Prepared {
    /// Whether every table the plan was built against is still the schema's table of that
    /// name, unchanged. Checked in full only once per schema generation.
    fn is_current(&self, node: &NodeState) -> bool {
        use std::sync::atomic::Ordering;
        let generation = node.schema_generation();
        if self.checked_generation.load(Ordering::Acquire) == generation {
            return true;
        }
        let schema = node.schema();
        let current = self.tables.iter().all(|t| {
            schema
                .keyspaces
                .get(&t.keyspace)
                .and_then(|k| k.tables.get(&t.name))
                .is_some_and(|now| Arc::ptr_eq(now, t) || **now == **t)
        });
        if current {
            self.checked_generation.store(generation, Ordering::Release);
        }
        current
    }
}

impl crate::prepared::CachedStatement for Prepared {
    fn query(&self) -> &str {
        &self.query
    }

    fn depends_on_keyspace(&self, keyspace: &str) -> bool {
        self.keyspace.as_deref() == Some(keyspace)
            || self.tables.iter().any(|t| t.keyspace == keyspace)
    }
}

/// The statement cached under `id`, unless the schema it was planned against has changed.
pub fn cached(node: &NodeState, id: &[u8]) -> Option<Arc<Prepared>> {
    // The cache holds only `Prepared` (exec is its sole writer), so the downcasts always succeed.
    let as_prepared = |p: &dyn crate::prepared::CachedStatement| {
        (p as &dyn std::any::Any)
            .downcast_ref::<Prepared>()
            .is_some_and(|p| p.is_current(node))
    };
    let p: Arc<dyn std::any::Any + Send + Sync> = node.prepared.get(id, as_prepared)?;
    p.downcast::<Prepared>().ok()
}

/// The tables a plan reads or writes.
fn planned_tables(plan: &Planned) -> Vec<Arc<helenus_schema::TableMeta>> {
    let mut out: Vec<Arc<helenus_schema::TableMeta>> = match plan {
        Planned::Select(s) => vec![s.table.clone()],
        Planned::Write(w) => vec![w.table.clone()],
        Planned::Batch { children, .. } => children.iter().map(|c| c.table.clone()).collect(),
        _ => Vec::new(),
    };
    out.dedup_by(|a, b| Arc::ptr_eq(a, b));
    out
}

/// The result of one statement.
pub enum Outcome {
    Void,
    Rows {
        keyspace: String,
        table: String,
        out: select::SelectOutput,
    },
    SetKeyspace(String),
    SchemaChange(proto::SchemaChange),
}

fn resolve_table(
    node: &NodeState,
    q: &ast::QualifiedName,
    session_ks: Option<&str>,
) -> ExecResult<Arc<helenus_schema::TableMeta>> {
    let ks = match (&q.keyspace, session_ks) {
        (Some(k), _) => k.name.clone(),
        (None, Some(k)) => k.to_string(),
        (None, None) => {
            return Err(ExecError::Invalid(
                "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename".into(),
            ))
        }
    };
    let schema = node.schema();
    let ksm = schema
        .keyspaces
        .get(&ks)
        .ok_or_else(|| ExecError::Invalid(format!("Keyspace {ks} does not exist")))?;
    ksm.tables
        .get(&q.name.name)
        .cloned()
        .ok_or_else(|| ExecError::Invalid(format!("table {} does not exist", q.name.name)))
}

fn pk_indexes_of(plan: &Planned) -> Vec<u16> {
    let terms: Option<&Vec<select::ValuesOf>> = match plan {
        Planned::Select(s) => match &s.partitions {
            select::PartitionSelection::Keys(v) => Some(v),
            _ => None,
        },
        Planned::Write(w) => Some(&w.pk),
        _ => None,
    };
    let Some(terms) = terms else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for v in terms {
        match v {
            select::ValuesOf::Terms(t) if t.len() == 1 => match &t[0] {
                ast::Term::Bind(m) => out.push(m.index as u16),
                _ => return Vec::new(),
            },
            _ => return Vec::new(),
        }
    }
    out
}

fn plan_statement(
    node: &NodeState,
    stmt: &Statement,
    session_ks: Option<&str>,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<Planned> {
    Ok(match stmt {
        Statement::Select(s) => {
            let t = resolve_table(node, &s.table, session_ks)?;
            Planned::Select(Box::new(select::plan(t, s, specs)?))
        }
        Statement::Insert(s) => {
            let t = resolve_table(node, &s.table, session_ks)?;
            check_writable(&t)?;
            Planned::Write(Box::new(write::plan_insert(t, s, specs)?))
        }
        Statement::Update(s) => {
            let t = resolve_table(node, &s.table, session_ks)?;
            check_writable(&t)?;
            Planned::Write(Box::new(write::plan_update(t, s, specs)?))
        }
        Statement::Delete(s) => {
            let t = resolve_table(node, &s.table, session_ks)?;
            check_writable(&t)?;
            Planned::Write(Box::new(write::plan_delete(t, s, specs)?))
        }
        Statement::Batch(b) => {
            if b.using.ttl.is_some() {
                return Err(ExecError::Invalid(
                    "Global TTL on the BATCH statement is not supported.".into(),
                ));
            }
            if let Some(ts) = &b.using.timestamp {
                let spec = BindSpec {
                    keyspace: "[batch]".into(),
                    table: "[batch]".into(),
                    name: "[timestamp]".into(),
                    ty: CqlType::Native(helenus_types::NativeType::Bigint),
                };
                key_values::note_binds(ts, spec, specs)?;
            }
            let mut children = Vec::new();
            for child in &b.statements {
                let p = match child {
                    ast::BatchChild::Insert(s) => {
                        let t = resolve_table(node, &s.table, session_ks)?;
                        check_writable(&t)?;
                        write::plan_insert(t, s, specs)?
                    }
                    ast::BatchChild::Update(s) => {
                        let t = resolve_table(node, &s.table, session_ks)?;
                        check_writable(&t)?;
                        write::plan_update(t, s, specs)?
                    }
                    ast::BatchChild::Delete(s) => {
                        let t = resolve_table(node, &s.table, session_ks)?;
                        check_writable(&t)?;
                        write::plan_delete(t, s, specs)?
                    }
                };
                if p.using.timestamp.is_some() && b.using.timestamp.is_some() {
                    return Err(ExecError::Invalid(
                        "Timestamp must be set either on BATCH or individual statements".into(),
                    ));
                }
                children.push(p);
            }
            if children.iter().any(|c| c.condition.is_some()) {
                if b.using.timestamp.is_some() {
                    return Err(ExecError::Invalid(
                        "Cannot provide custom timestamp for conditional BATCH".into(),
                    ));
                }
                let first = children.first().map(|c| c.table.id);
                if children.iter().any(|c| Some(c.table.id) != first) {
                    return Err(ExecError::Invalid(
                        "Batch with conditions cannot span multiple tables".into(),
                    ));
                }
            }
            batch::check_kind(b.kind, &children.iter().collect::<Vec<_>>())?;
            if b.kind == helenus_cql::ast::BatchKind::Counter && b.using.timestamp.is_some() {
                return Err(ExecError::Invalid(
                    "Cannot provide custom timestamp for counter BATCH".into(),
                ));
            }
            Planned::Batch {
                children,
                using: b.using.clone(),
                kind: b.kind,
            }
        }
        Statement::Use(ks) => {
            if node.keyspace(&ks.name).is_none() {
                return Err(ExecError::Invalid(format!(
                    "Keyspace '{}' does not exist",
                    ks.name
                )));
            }
            Planned::Use(ks.name.clone())
        }
        Statement::Truncate(q) => {
            let t = resolve_table(node, q, session_ks)?;
            check_writable(&t)?;
            Planned::Truncate {
                keyspace: t.keyspace.clone(),
                table: t.name.clone(),
            }
        }
        Statement::Describe(d) => Planned::Describe(d.clone()),
        Statement::Auth(a) => Planned::Auth(a.clone()),
        other => Planned::Ddl(Box::new(other.clone())),
    })
}

fn check_writable(t: &helenus_schema::TableMeta) -> ExecResult<()> {
    if t.kind != helenus_schema::TableKind::User {
        return Err(ExecError::Unauthorized(format!(
            "Modification on table {}.{} is not allowed",
            t.keyspace, t.name
        )));
    }
    Ok(())
}

/// Parses and plans `query`, or returns the cached plan (keyed like Cassandra's prepared cache).
pub fn prepare(
    node: &NodeState,
    session_ks: Option<&str>,
    query: &str,
) -> ExecResult<Arc<Prepared>> {
    let id = crate::prepared::prepared_id(session_ks, query);
    if let Some(p) = cached(node, &id) {
        trace::event(|| "Statement found in the prepared cache".to_string());
        return Ok(p);
    }
    trace::event(|| "Parsing statement".to_string());
    // Read before planning: if the schema changes while we plan, the statement is re-checked on
    // its next use instead of being trusted at a generation it was not planned against.
    let generation = node.schema_generation();
    let parsed = helenus_cql::parse(query).map_err(|e| ExecError::Syntax(e.to_string()))?;
    let mut specs: Vec<Option<BindSpec>> = vec![None; parsed.bind_count];
    trace::event(|| "Preparing statement".to_string());
    let plan = plan_statement(node, &parsed.statement, session_ks, &mut specs)?;
    let binds = bind_specs(specs, &parsed.bind_names, session_ks);
    let result = result_columns(&plan);
    let result_metadata_id = result_metadata_id(result.as_ref());
    let pk_indexes = pk_indexes_of(&plan);
    let tables = planned_tables(&plan);
    let p = Arc::new(Prepared {
        query: query.to_string(),
        keyspace: session_ks.map(str::to_string),
        plan,
        binds,
        bind_names: parsed.bind_names,
        result,
        pk_indexes,
        id,
        result_metadata_id,
        kind: crate::request_kind::kind_of_statement(query),
        tables,
        checked_generation: std::sync::atomic::AtomicU64::new(generation),
    });
    // DDL and USE are cheap to re-plan and depend on schema state at execution: don't cache them.
    if matches!(
        p.plan,
        Planned::Select(_) | Planned::Write(_) | Planned::Batch { .. }
    ) {
        // Too large to cache: still runs, and a PREPARE of it is refused by the caller.
        let _ = node.prepared.insert(id, p.clone());
    }
    Ok(p)
}

/// The receiver of each bind marker: what planning found, else a blob named after the marker
/// (or its position); a named marker (`:name`) keeps its name.
fn bind_specs(
    specs: Vec<Option<BindSpec>>,
    bind_names: &[Option<String>],
    session_ks: Option<&str>,
) -> Vec<BindSpec> {
    specs
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let mut s = s.unwrap_or(BindSpec {
                keyspace: session_ks.unwrap_or_default().to_string(),
                table: String::new(),
                name: bind_names
                    .get(i)
                    .cloned()
                    .flatten()
                    .unwrap_or_else(|| format!("[{i}]")),
                ty: CqlType::Native(helenus_types::NativeType::Blob),
            });
            if let Some(Some(n)) = bind_names.get(i) {
                s.name = n.clone();
            }
            s
        })
        .collect()
}

/// The result columns of a SELECT (one `[json]` text column for SELECT JSON).
fn result_columns(plan: &Planned) -> Option<ResultColumns> {
    let Planned::Select(s) = plan else {
        return None;
    };
    let columns = if s.json {
        vec![(
            "[json]".to_string(),
            CqlType::Native(helenus_types::NativeType::Varchar),
        )]
    } else {
        s.compiled.result_columns.to_vec()
    };
    Some((s.table.keyspace.clone(), s.table.name.clone(), columns))
}

/// MD5 of the result columns' names and types, which drivers compare to notice a changed result.
fn result_metadata_id(result: Option<&ResultColumns>) -> [u8; 16] {
    let mut ctx = md5::Context::new();
    if let Some((_, _, cols)) = result {
        for (n, t) in cols {
            ctx.consume(n.as_bytes());
            ctx.consume(t.to_string().as_bytes());
        }
    }
    ctx.compute().0
}

/// Maps named values to positions using the statement's marker names.
fn check_value_count(p: &Prepared, given: usize) -> ExecResult<()> {
    if given != p.binds.len() {
        return Err(ExecError::Invalid(format!(
            "There were {} markers(?) in CQL but {given} bound variables",
            p.binds.len()
        )));
    }
    Ok(())
}

/// Positional values are borrowed as they are (the common case, on the hot path); named ones are
/// reordered into a new vector.
fn positional<'v>(
    p: &Prepared,
    values: &'v proto::QueryValues,
) -> ExecResult<std::borrow::Cow<'v, [proto::Value]>> {
    match values {
        proto::QueryValues::Positional(v) => {
            check_value_count(p, v.len())?;
            Ok(std::borrow::Cow::Borrowed(v.as_slice()))
        }
        proto::QueryValues::Named(named) => {
            let mut out = vec![proto::Value::Unset; p.binds.len()];
            for (i, spec) in p.binds.iter().enumerate() {
                let found = named
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(&spec.name));
                match found {
                    Some((_, v)) => out[i] = v.clone(),
                    None => {
                        return Err(ExecError::Invalid(format!(
                            "Invalid unset value for column {}",
                            spec.name
                        )))
                    }
                }
            }
            Ok(std::borrow::Cow::Owned(out))
        }
    }
}

pub struct ExecOptions {
    pub page_size: Option<usize>,
    pub paging_state: Option<bytes::Bytes>,
    pub timestamp_us: i64,
    pub consistency: ConsistencyLevel,
    pub serial_consistency: ConsistencyLevel,
}

/// The protocol's consistency as the coordinator's level.
pub fn consistency_level(c: proto::Consistency) -> ConsistencyLevel {
    ConsistencyLevel::from_code(c as u16).unwrap_or(ConsistencyLevel::One)
}

/// A request's serial level: SERIAL unless it names one.
pub fn serial_level(c: Option<proto::Consistency>) -> ConsistencyLevel {
    c.map_or(ConsistencyLevel::Serial, consistency_level)
}

/// Applies a statement's or a batch's mutations as one commitlog entry, so a batch (or an IN
/// write) is replayed all-or-nothing after a crash, as a logged batch is on one node.
async fn apply_mutations(
    node: &NodeState,
    muts: Vec<helenus_storage::Mutation>,
    consistency: ConsistencyLevel,
) -> ExecResult<()> {
    trace::event(|| {
        format!(
            "Appending {} partition update(s) to the commitlog and memtables",
            muts.len()
        )
    });
    Ok(node.proxy().mutate(muts, consistency).await?)
}

/// A batch's mutations: a logged batch goes through the batchlog in a ring.
async fn apply_batch_mutations(
    node: &NodeState,
    muts: Vec<helenus_storage::Mutation>,
    consistency: ConsistencyLevel,
    kind: helenus_cql::ast::BatchKind,
) -> ExecResult<()> {
    if kind != helenus_cql::ast::BatchKind::Logged {
        return apply_mutations(node, muts, consistency).await;
    }
    trace::event(|| {
        format!(
            "Writing a logged batch of {} partition update(s)",
            muts.len()
        )
    });
    Ok(node.proxy().mutate_logged(muts, consistency).await?)
}

/// Executes a prepared statement with its values.
///
/// Reads and plain writes run inline; every other kind (LWT, batches, DDL, roles, TRUNCATE) runs
/// in a boxed future of its own. A future is as large as the largest one it awaits, and the
/// request's future is moved whole a few times before it runs, so an inline DDL or LWT branch
/// made every point read copy KiBs it never used.
pub async fn execute(
    node: &NodeState,
    session: &parking_lot::Mutex<Session>,
    p: &Prepared,
    values: &proto::QueryValues,
    opts: ExecOptions,
) -> ExecResult<Outcome> {
    let values = positional(p, values)?;
    let user = session.lock().user.clone();
    access::authorize(node, user.as_deref(), p)?;
    let binds = Binds {
        values: &values,
        now: node.exec.now(),
        planning: false,
    };
    match &p.plan {
        Planned::Select(plan) => {
            trace::event(|| {
                format!(
                    "Executing read on {}.{}",
                    plan.table.keyspace, plan.table.name
                )
            });
            opts.consistency.validate_for_read()?;
            let out = select::execute(
                node,
                plan,
                &binds,
                (opts.page_size, opts.paging_state.as_deref()),
                opts.consistency,
            )
            .await?;
            trace::event(|| format!("Read {} live rows", out.row_count()));
            Ok(Outcome::Rows {
                keyspace: plan.table.keyspace.clone(),
                table: plan.table.name.clone(),
                out,
            })
        }
        Planned::Write(plan) => {
            let table_id = *plan.table.id.as_bytes();
            let now = binds.now.s;
            let consistency = opts.consistency;
            let lookup =
                move |key: &bytes::Bytes, token: i64, clustering: &[bytes::Bytes], col: u32| {
                    current_list_paths(
                        node,
                        (table_id, key, token),
                        clustering,
                        col,
                        now,
                        consistency,
                    )
                };
            let ctx = write::WriteContext {
                timestamp_us: opts.timestamp_us,
                now_s: now,
                lists: Some(&lookup),
                prepends: node.exec.prepends(),
                consistency: opts.consistency,
                serial_consistency: opts.serial_consistency,
                max_mutation_bytes: node.config.max_mutation_bytes(),
            };
            if plan.condition.is_some() {
                return Box::pin(lwt::execute(node, plan, &binds, &ctx)).await;
            }
            opts.consistency.validate_for_write()?;
            let muts = write::mutations(plan, &binds, &ctx)?;
            apply_mutations(node, muts, opts.consistency).await?;
            Ok(Outcome::Void)
        }
        Planned::Batch {
            children,
            using,
            kind,
        } => Box::pin(execute_batch(node, (children, using, *kind), &binds, &opts)).await,
        Planned::Use(ks) => {
            session.lock().keyspace = Some(ks.clone());
            Ok(Outcome::SetKeyspace(ks.clone()))
        }
        Planned::Describe(d) => respond::describe(node, d, p.keyspace.as_deref()),
        Planned::Ddl(_) | Planned::Truncate { .. } | Planned::Auth(_) => {
            Box::pin(execute_admin(node, p, user.as_deref())).await
        }
    }
}

/// A prepared BATCH: its children's mutations applied together, or as one Paxos round when
/// any child has a condition.
async fn execute_batch(
    node: &NodeState,
    (children, using, kind): (&[write::WritePlan], &ast::UsingClause, ast::BatchKind),
    binds: &Binds<'_>,
    opts: &ExecOptions,
) -> ExecResult<Outcome> {
    let ts = match &using.timestamp {
        Some(t) => match values::eval(
            t,
            &CqlType::Native(helenus_types::NativeType::Bigint),
            "[timestamp]",
            binds,
        )? {
            values::Bound::Value(b) => i64::from_be_bytes(b.as_ref().try_into().unwrap_or([0; 8])),
            _ => opts.timestamp_us,
        },
        None => opts.timestamp_us,
    };
    let ctx = write::WriteContext {
        timestamp_us: ts,
        now_s: binds.now.s,
        lists: None,
        prepends: node.exec.prepends(),
        consistency: opts.consistency,
        serial_consistency: opts.serial_consistency,
        max_mutation_bytes: node.config.max_mutation_bytes(),
    };
    if children.iter().any(|c| c.condition.is_some()) {
        let statements: Vec<_> = children.iter().map(|c| (c, binds)).collect();
        return lwt::execute_batch(node, &statements, &ctx).await;
    }
    let mut muts = Vec::new();
    for c in children {
        muts.extend(write::batch_child_mutations(c, binds, &ctx)?);
    }
    batch::check_limits(node, kind, &children.iter().collect::<Vec<_>>(), &muts)?;
    opts.consistency.validate_for_write()?;
    apply_batch_mutations(node, muts, opts.consistency, kind).await?;
    Ok(Outcome::Void)
}

/// DDL, TRUNCATE and role statements.
async fn execute_admin(node: &NodeState, p: &Prepared, user: Option<&str>) -> ExecResult<Outcome> {
    let session_ks = p.keyspace.as_deref();
    match &p.plan {
        Planned::Ddl(stmt) => match ddl::execute(node, stmt, session_ks).await? {
            Some(change) => {
                access::after_schema_change(node, user, &change)?;
                if let Some(cluster) = node.cluster() {
                    cluster.roles_changed().await;
                }
                let _ = node.events.send(crate::node::NodeEvent(
                    helenus_protocol::Event::SchemaChange(change.clone()),
                ));
                Ok(Outcome::SchemaChange(change))
            }
            None => Ok(Outcome::Void),
        },
        Planned::Truncate { keyspace, table } => {
            let t = node
                .table(keyspace, table)
                .ok_or_else(|| ExecError::Invalid(format!("table {table} does not exist")))?;
            let proxy = node.proxy().clone();
            let id = *t.id.as_bytes();
            tokio::task::spawn_blocking(move || proxy.truncate(id))
                .await
                .map_err(|e| ExecError::Server(e.to_string()))?
                .map_err(|e| ExecError::Truncate(e.to_string()))?;
            Ok(Outcome::Void)
        }
        Planned::Auth(a) => {
            let outcome = roles::execute(node, user, a, session_ks).await;
            if let Some(cluster) = node.cluster() {
                cluster.roles_changed().await;
            }
            outcome
        }
        _ => Err(ExecError::Server(
            "not a schema, truncate or role statement".to_string(),
        )),
    }
}

/// Parses and runs a QUERY request.
pub async fn run_query(
    node: &NodeState,
    session: &parking_lot::Mutex<Session>,
    query: &str,
    params: &proto::QueryParameters,
) -> ExecResult<(Arc<Prepared>, Outcome)> {
    let ks = params
        .keyspace
        .clone()
        .or_else(|| session.lock().keyspace.clone());
    let p = prepare(node, ks.as_deref(), query)?;
    let opts = exec_options(node, params);
    let out = execute(node, session, &p, &params.values, opts).await?;
    Ok((p, out))
}

pub fn exec_options(node: &NodeState, params: &proto::QueryParameters) -> ExecOptions {
    ExecOptions {
        page_size: params.page_size.filter(|&n| n > 0).map(|n| n as usize),
        paging_state: params.paging_state.clone(),
        timestamp_us: params
            .default_timestamp
            .filter(|&t| t != i64::MIN)
            .unwrap_or_else(|| node.exec.next_timestamp_us()),
        consistency: consistency_level(params.consistency),
        serial_consistency: serial_level(params.serial_consistency),
    }
}

/// The element paths a list column holds now in one row (read before a write by index).
fn current_list_paths(
    node: &NodeState,
    (table, key, token): ([u8; 16], &bytes::Bytes, i64),
    clustering: &[bytes::Bytes],
    column: u32,
    now_s: i64,
    consistency: ConsistencyLevel,
) -> ExecResult<Vec<(bytes::Bytes, bytes::Bytes)>> {
    use helenus_storage as st;
    let bound = |kind| st::ClusteringBound {
        prefix: clustering.to_vec(),
        kind,
    };
    let slices = if clustering.is_empty() {
        Vec::new()
    } else {
        vec![(
            bound(st::BoundKind::Inclusive),
            bound(st::BoundKind::Inclusive),
        )]
    };
    let q = st::ReadQuery {
        columns: None,
        partitions: st::PartitionRange::Single {
            key: key.clone(),
            token,
        },
        slices,
        reversed: false,
        row_limit: Some(1),
        per_partition_limit: None,
        partition_limit: None,
        now_s,
        resume_after: None,
    };
    let r = crate::proxy::wait_for_read(node.proxy().read(table, &q, consistency, u64::MAX))?;
    Ok(r.partitions
        .iter()
        .flat_map(|p| p.static_row.iter().chain(p.rows.iter()))
        .flat_map(|row| row.cells.iter())
        .filter(|c| c.column == column)
        .filter_map(|c| c.path.clone().map(|p| (p, c.value.clone())))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unplanned_markers_become_blobs_named_by_name_or_position() {
        let int = CqlType::Native(helenus_types::NativeType::Int);
        let planned = BindSpec {
            keyspace: "ks".into(),
            table: "t".into(),
            name: "k".into(),
            ty: int.clone(),
        };
        let names = vec![Some("key".to_string()), None];
        let specs = bind_specs(vec![Some(planned), None, None], &names, Some("ks"));
        let got: Vec<(&str, &CqlType)> = specs.iter().map(|s| (s.name.as_str(), &s.ty)).collect();
        let blob = CqlType::Native(helenus_types::NativeType::Blob);
        assert_eq!(got, vec![("key", &int), ("[1]", &blob), ("[2]", &blob)]);
        assert_eq!(specs[1].keyspace, "ks");
    }

    #[test]
    fn result_metadata_id_changes_with_the_columns() {
        let int = CqlType::Native(helenus_types::NativeType::Int);
        let cols = |name: &str| -> ResultColumns {
            (
                "ks".into(),
                "t".into(),
                vec![(name.to_string(), int.clone())],
            )
        };
        assert_eq!(
            result_metadata_id(Some(&cols("a"))),
            result_metadata_id(Some(&cols("a")))
        );
        assert_ne!(
            result_metadata_id(Some(&cols("a"))),
            result_metadata_id(Some(&cols("b")))
        );
        assert_ne!(
            result_metadata_id(None),
            result_metadata_id(Some(&cols("a")))
        );
    }
}
