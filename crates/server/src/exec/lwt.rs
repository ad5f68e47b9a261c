//! Lightweight transactions on one node: conditional statements and conditional batches.
//!
//! Linearizability: every compare-and-set takes the lock of its partition's stripe (a fixed array
//! of async mutexes indexed by a hash of table id and token) for the read of the current state,
//! the evaluation of the conditions and the write, so two LWTs on the same partition never
//! interleave. Unrelated partitions that share a stripe are merely serialised too. Plain writes do
//! not take the lock, as in Cassandra, where only Paxos rounds are ordered with each other.
//! (Across nodes this becomes Paxos.)

use super::error::{invalid, ExecError, ExecResult};
use super::rows::{partition_rows, ColumnLayout, Row};
use super::select::{compare_clustering, SelectOutput};
use super::values::{self, Binds};
use super::write::lwt_cond::holds;
use super::write::{self, mutations, Op, WriteContext, WritePlan};
use super::Outcome;
use crate::node::NodeState;
use bytes::Bytes;
use helenus_cql::ast::WriteCondition;
use helenus_schema::{ColumnKind, TableMeta};
use helenus_storage as st;
use helenus_types::{CqlType, CqlValue, NativeType};

fn applied_column() -> (String, CqlType) {
    (
        "[applied]".to_string(),
        CqlType::Native(NativeType::Boolean),
    )
}

fn applied_cell(applied: bool) -> Option<Bytes> {
    Some(values::serialize(&CqlValue::Boolean(applied)))
}

/// Operations that read the current list before writing; they must be computed under the lock.
fn reads_before_write(plan: &WritePlan) -> bool {
    plan.ops.iter().any(|(i, op)| {
        matches!(
            plan.table.columns[*i].cql_type,
            CqlType::List { frozen: false, .. }
        ) && matches!(
            op,
            Op::SetElement(..) | Op::Subtract(_) | Op::Delete(Some(_))
        )
    })
}

/// One conditional statement (`IF ...` on an INSERT, UPDATE or DELETE).
pub async fn execute(
    node: &NodeState,
    plan: &WritePlan,
    binds: &Binds<'_>,
    ctx: &WriteContext<'_>,
) -> ExecResult<Outcome> {
    cas(node, &[(plan, binds)], ctx, false).await
}

/// A BATCH with at least one conditional statement: every statement must write the same partition
/// of the same table; the conditions are evaluated together and the batch applies all or nothing.
/// Each statement comes with its own bound values (a BATCH request binds each statement apart).
pub async fn execute_batch(
    node: &NodeState,
    children: &[(&WritePlan, &Binds<'_>)],
    ctx: &WriteContext<'_>,
) -> ExecResult<Outcome> {
    cas(node, children, ctx, true).await
}

fn all_mutations(
    statements: &[(&WritePlan, &Binds<'_>)],
    ctx: &WriteContext<'_>,
    is_batch: bool,
) -> ExecResult<Vec<Vec<st::Mutation>>> {
    let mut out = Vec::with_capacity(statements.len());
    let mut key: Option<Bytes> = None;
    for (p, binds) in statements {
        let muts = mutations(p, binds, ctx)?;
        for m in &muts {
            match &key {
                Some(k) if *k != m.key => {
                    return invalid(if is_batch {
                        "Batch with conditions cannot span multiple partitions"
                    } else {
                        "IN on the partition key is not supported with conditional updates"
                    })
                }
                Some(_) => {}
                None => key = Some(m.key.clone()),
            }
        }
        out.push(muts);
    }
    Ok(out)
}

/// What a conditional statement is about: a clustering row, or (`None`) the partition's static row.
fn target_row(t: &TableMeta, muts: &[st::Mutation]) -> Option<Vec<Bytes>> {
    let m = muts.first()?;
    match m.rows.first() {
        Some(r) => Some(r.clustering.clone()),
        None if t.clustering_len() == 0 => Some(Vec::new()),
        None => None,
    }
}

async fn cas(
    node: &NodeState,
    statements: &[(&WritePlan, &Binds<'_>)],
    ctx: &WriteContext<'_>,
    is_batch: bool,
) -> ExecResult<Outcome> {
    let plans: Vec<&WritePlan> = statements.iter().map(|(p, _)| *p).collect();
    let plans = plans.as_slice();
    let Some(first) = plans.first() else {
        return Ok(Outcome::Void);
    };
    let t = &first.table;
    if plans.iter().any(|p| p.table.id != t.id) {
        return invalid("Batch with conditions cannot span multiple tables");
    }
    let mut muts = all_mutations(statements, ctx, is_batch)?;
    let Some((key, token)) = muts
        .iter()
        .flatten()
        .next()
        .map(|m| (m.key.clone(), m.token))
    else {
        return invalid("Conditional updates need a partition key");
    };
    let _guard = node.exec.lwt_locks().stripe(t, token).lock().await;
    if plans.iter().any(|p| reads_before_write(p)) {
        // List positions must be those of the state the conditions are checked against.
        muts = all_mutations(statements, ctx, is_batch)?;
    }
    let mut targets: Vec<Option<Vec<Bytes>>> = Vec::new();
    for ((p, binds), m) in statements.iter().zip(&muts) {
        targets.push(match &p.condition {
            None => None,
            Some(WriteCondition::Columns(_)) if t.clustering_len() > 0 && !p.ck.is_empty() => {
                write::named_clustering(p, binds)?.or_else(|| target_row(t, m))
            }
            Some(_) => target_row(t, m),
        });
    }
    check_mixed_conditions(plans, &targets)?;
    let mut clusterings: Vec<Vec<Bytes>> = plans
        .iter()
        .zip(&targets)
        .filter(|(p, _)| p.condition.is_some())
        .filter_map(|(_, c)| c.clone())
        .collect();
    clusterings.sort_by(|a, b| compare_clustering(t, a, b));
    clusterings.dedup();
    if let Some(outcome) = cas_across_replicas(
        node,
        statements,
        (&key, token),
        &targets,
        &clusterings,
        ctx,
        &muts,
    )
    .await
    {
        return outcome.map(|(applied, current)| {
            if applied {
                return rows_outcome(t, vec![applied_column()], vec![vec![applied_cell(true)]]);
            }
            let (columns, rows) =
                failure_result(t, plans, &targets, &clusterings, &current, is_batch);
            rows_outcome(t, columns, rows)
        });
    }
    let current = read_current(
        node,
        t,
        (&key, token),
        &clusterings,
        (ctx.now_s, ctx.serial_consistency),
    )
    .await?;
    let applied = conditions_hold(statements, &targets, &current)?;
    if applied {
        super::apply_mutations(node, muts.into_iter().flatten().collect(), ctx.consistency).await?;
        return Ok(rows_outcome(
            t,
            vec![applied_column()],
            vec![vec![applied_cell(true)]],
        ));
    }
    let (columns, rows) = failure_result(t, plans, &targets, &clusterings, &current, is_batch);
    Ok(rows_outcome(t, columns, rows))
}

fn conditions_hold(
    statements: &[(&WritePlan, &Binds<'_>)],
    targets: &[Option<Vec<Bytes>>],
    current: &Current,
) -> ExecResult<bool> {
    let mut applied = true;
    for ((p, binds), target) in statements.iter().zip(targets) {
        let Some(cond) = &p.condition else { continue };
        if !condition_holds(&p.table, cond, target, current, binds)? {
            applied = false;
        }
    }
    Ok(applied)
}

/// In a ring: the compare-and-set runs as Paxos across the partition's replicas (the proxy's
/// `cas`), the conditions checked against what a quorum holds. `None` on a single node.
async fn cas_across_replicas(
    node: &NodeState,
    statements: &[(&WritePlan, &Binds<'_>)],
    partition: (&Bytes, i64),
    targets: &[Option<Vec<Bytes>>],
    clusterings: &[Vec<Bytes>],
    ctx: &WriteContext<'_>,
    muts: &[Vec<st::Mutation>],
) -> Option<ExecResult<(bool, Current)>> {
    let t = &statements.first()?.0.table;
    let q = current_query(t, partition, clusterings, ctx.now_s);
    let failed: parking_lot::Mutex<Option<ExecError>> = parking_lot::Mutex::new(None);
    let all: Vec<st::Mutation> = muts.iter().flatten().cloned().collect();
    let decide = |rows: &st::ReadResult| -> Option<Vec<st::Mutation>> {
        let current = current_from(t, clusterings, rows);
        match conditions_hold(statements, targets, &current) {
            Ok(true) => Some(all.clone()),
            Ok(false) => None,
            Err(e) => {
                *failed.lock() = Some(e);
                None
            }
        }
    };
    let running = node
        .proxy()
        .cas(*t.id.as_bytes(), &q, ctx.serial_consistency, &decide)?;
    let result = running.await;
    if let Some(e) = failed.lock().take() {
        return Some(Err(e));
    }
    Some(
        result
            .map(|r| (r.applied, current_from(t, clusterings, &r.current)))
            .map_err(ExecError::from),
    )
}

/// Cassandra keeps one condition per row of a conditional batch: statements on the same row may
/// repeat `IF EXISTS` or `IF NOT EXISTS`, or all give column conditions, but not mix the kinds.
fn check_mixed_conditions(plans: &[&WritePlan], targets: &[Option<Vec<Bytes>>]) -> ExecResult<()> {
    use helenus_cql::ast::WriteCondition as W;
    let conds: Vec<(&W, &Vec<Bytes>)> = plans
        .iter()
        .zip(targets)
        .filter_map(|(p, t)| Some((p.condition.as_ref()?, t.as_ref()?)))
        .collect();
    for (n, (later, row)) in conds.iter().enumerate() {
        let Some((earlier, _)) = conds[..n].iter().find(|(_, r)| r == row) else {
            continue;
        };
        match (earlier, later) {
            (W::Exists, W::Exists) | (W::NotExists, W::NotExists) => {}
            (W::Columns(_), W::Columns(_)) => {}
            (W::Exists, W::NotExists) | (W::NotExists, W::Exists) => {
                return invalid(
                    "Cannot mix IF EXISTS and IF NOT EXISTS conditions for the same row",
                )
            }
            (W::Columns(_), W::Exists) => {
                return invalid("Cannot mix IF conditions and IF EXISTS for the same row")
            }
            _ => return invalid("Cannot mix IF conditions and IF NOT EXISTS for the same row"),
        }
    }
    Ok(())
}

fn rows_outcome(
    t: &TableMeta,
    columns: Vec<(String, CqlType)>,
    rows: Vec<Vec<Option<Bytes>>>,
) -> Outcome {
    Outcome::Rows {
        keyspace: t.keyspace.clone(),
        table: t.name.clone(),
        out: SelectOutput {
            columns: columns.into(),
            wire_columns: None,
            rows,
            paging_state: None,
            encoded: None,
        },
    }
}

/// The partition's current state as far as the conditions need it.
struct Current {
    /// Live clustering rows read (each carries the static values too).
    rows: Vec<Row>,
    /// A row with the partition key and static values only, when the static row is live.
    statics: Option<Row>,
    /// The partition's first row read (key, clustering of its first row, static values), when
    /// the partition has any: what Cassandra shows for a failed condition on static columns,
    /// live static row or not.
    head: Option<Row>,
}

impl Current {
    fn row(&self, clustering: &[Bytes]) -> Option<&Row> {
        self.rows.iter().find(|r| r.clustering == clustering)
    }

    /// The current cell of column `i` for a statement about `target`.
    fn cell(&self, t: &TableMeta, i: usize, target: &Option<Vec<Bytes>>) -> Option<&Bytes> {
        let row = if t.columns[i].kind == ColumnKind::Static {
            self.statics.as_ref()
        } else {
            target.as_ref().and_then(|c| self.row(c))
        };
        row.and_then(|r| r.cells.get(i)).and_then(|c| c.as_ref())
    }
}

async fn read_current(
    node: &NodeState,
    t: &TableMeta,
    partition: (&Bytes, i64),
    clusterings: &[Vec<Bytes>],
    (now_s, serial): (i64, helenus_coordinator::ConsistencyLevel),
) -> ExecResult<Current> {
    let q = current_query(t, partition, clusterings, now_s);
    let read = node
        .proxy()
        .read(*t.id.as_bytes(), &q, serial, u64::MAX)
        .await?;
    Ok(current_from(t, clusterings, &read))
}

/// The read a condition is checked against: the rows it names, or the static row.
fn current_query(
    t: &TableMeta,
    (key, token): (&Bytes, i64),
    clusterings: &[Vec<Bytes>],
    now_s: i64,
) -> st::ReadQuery {
    let has_clustering = t.clustering_len() > 0;
    let slices = if has_clustering {
        clusterings
            .iter()
            .map(|c| {
                let b = |kind| st::ClusteringBound {
                    prefix: c.clone(),
                    kind,
                };
                (b(st::BoundKind::Inclusive), b(st::BoundKind::Inclusive))
            })
            .collect()
    } else {
        Vec::new()
    };
    // No clustering row asked for: only the static row matters, one row is enough to carry it.
    let row_limit = (has_clustering && clusterings.is_empty()).then_some(1);
    st::ReadQuery {
        columns: None,
        partitions: st::PartitionRange::Single {
            key: key.clone(),
            token,
        },
        slices,
        reversed: false,
        row_limit,
        per_partition_limit: None,
        partition_limit: None,
        now_s,
        resume_after: None,
    }
}

fn current_from(t: &TableMeta, clusterings: &[Vec<Bytes>], read: &st::ReadResult) -> Current {
    let has_clustering = t.clustering_len() > 0;
    let layout = ColumnLayout::new(t);
    let mut all = Vec::new();
    let mut static_live = false;
    for p in &read.partitions {
        static_live |= p.static_row.as_ref().is_some_and(|s| !s.cells.is_empty());
        partition_rows(t, &layout, p.clone(), true, &mut all);
    }
    let keep = |r: &Row, kinds: &[ColumnKind]| {
        let mut r = r.clone();
        for (i, c) in t.columns.iter().enumerate() {
            if !kinds.contains(&c.kind) {
                r.cells[i] = None;
            }
        }
        r
    };
    let head = all.first().map(|r| {
        keep(
            r,
            &[
                ColumnKind::PartitionKey,
                ColumnKind::Clustering,
                ColumnKind::Static,
            ],
        )
    });
    let statics = all.first().filter(|_| static_live).map(|r| {
        let mut r = keep(r, &[ColumnKind::PartitionKey, ColumnKind::Static]);
        r.clustering = Vec::new();
        r
    });
    let rows = all
        .into_iter()
        .filter(|r| !has_clustering || !r.clustering.is_empty())
        .filter(|r| !has_clustering || clusterings.contains(&r.clustering))
        .collect();
    Current {
        rows,
        statics,
        head,
    }
}

fn condition_holds(
    t: &TableMeta,
    cond: &WriteCondition,
    target: &Option<Vec<Bytes>>,
    current: &Current,
    binds: &Binds<'_>,
) -> ExecResult<bool> {
    let exists = match target {
        Some(c) => current.row(c).is_some(),
        None => current.statics.is_some(),
    };
    match cond {
        WriteCondition::NotExists => Ok(!exists),
        WriteCondition::Exists => Ok(exists),
        WriteCondition::Columns(conds) => {
            for c in conds {
                let i = t.column_index(&c.column.name).ok_or_else(|| {
                    ExecError::Invalid(format!("Undefined column name {}", c.column.name))
                })?;
                if !holds(&t.columns[i], c, current.cell(t, i, target), binds)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
    }
}

/// The columns Cassandra returns with `[applied] = false`: the whole row after IF (NOT) EXISTS,
/// otherwise the conditioned columns (regular ones first, then static ones, each in IF order),
/// preceded by the primary key in a batch so that rows of different statements can be told apart.
fn failure_columns(t: &TableMeta, plans: &[&WritePlan], is_batch: bool) -> Vec<usize> {
    if plans.iter().any(|p| {
        matches!(
            p.condition,
            Some(WriteCondition::Exists | WriteCondition::NotExists)
        )
    }) {
        return (0..t.columns.len()).collect();
    }
    let mut out: Vec<usize> = Vec::new();
    if is_batch {
        out.extend((0..t.columns.len()).filter(|&i| t.columns[i].kind.is_primary_key()));
    }
    for p in plans {
        let Some(WriteCondition::Columns(conds)) = &p.condition else {
            continue;
        };
        let idx: Vec<usize> = conds
            .iter()
            .filter_map(|c| t.column_index(&c.column.name))
            .collect();
        let (statics, regular): (Vec<usize>, Vec<usize>) = idx
            .into_iter()
            .partition(|&i| t.columns[i].kind == ColumnKind::Static);
        for i in regular.into_iter().chain(statics) {
            if !out.contains(&i) {
                out.push(i);
            }
        }
    }
    out
}

type ResultRows = (Vec<(String, CqlType)>, Vec<Vec<Option<Bytes>>>);

/// The rows read for the conditions, as Cassandra returns them when they do not hold. Static
/// values are only read (and so only shown) when a condition is about the static row.
fn failure_result(
    t: &TableMeta,
    plans: &[&WritePlan],
    targets: &[Option<Vec<Bytes>>],
    clusterings: &[Vec<Bytes>],
    current: &Current,
    is_batch: bool,
) -> ResultRows {
    let static_condition = plans
        .iter()
        .zip(targets)
        .any(|(p, target)| match &p.condition {
            Some(WriteCondition::Columns(conds)) => {
                target.is_none()
                    || conds.iter().any(|c| {
                        t.column(&c.column.name)
                            .is_some_and(|col| col.kind == ColumnKind::Static)
                    })
            }
            Some(_) => target.is_none(),
            None => false,
        });
    let shown = failure_columns(t, plans, is_batch);
    let mut source: Vec<&Row> = clusterings.iter().filter_map(|c| current.row(c)).collect();
    if source.is_empty() && static_condition {
        source.extend(current.head.as_ref());
    }
    if source.is_empty() {
        return (vec![applied_column()], vec![vec![applied_cell(false)]]);
    }
    let mut columns = vec![applied_column()];
    columns.extend(
        shown
            .iter()
            .map(|&i| (t.columns[i].name.clone(), t.columns[i].cql_type.clone())),
    );
    let rows = source
        .into_iter()
        .map(|r| {
            let mut out = vec![applied_cell(false)];
            out.extend(shown.iter().map(|&i| {
                if t.columns[i].kind == ColumnKind::Static && !static_condition {
                    None
                } else {
                    r.cells.get(i).cloned().flatten()
                }
            }));
            out
        })
        .collect();
    (columns, rows)
}
