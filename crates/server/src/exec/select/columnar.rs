//! Aggregates over a columnar table computed from column vectors (issue 15): `SELECT count(*),
//! avg(c), min(c) ... FROM t [WHERE token(k) > ? AND token(k) <= ?] [AND c op v ... ALLOW
//! FILTERING]` reads only the columns named, skips row groups by their statistics, and folds
//! each batch into the same aggregate states the row path uses (aggregates.rs), so results are
//! Cassandra's to the bit (Kahan sums, integer overflow, min/max order), without building rows.
//!
//! `GROUP BY` the whole partition key (the only grouping of a key prefix that does not need
//! clustering values: Cassandra refuses part of a partition key) folds each partition's rows
//! into its own states, from the batches' partition runs; the groups come out in token order,
//! the partition key columns may be selected beside the aggregates, and LIMIT counts groups,
//! all in one page as the row path's grouping returns them.
//!
//! Taken only where it answers exactly as the row path: a node alone, or a ring member that
//! replicates every token of the keyspace while no node joins or leaves, asked at ONE or
//! LOCAL_ONE (one replica's answer is what those levels read: the Spark connector's default;
//! any other level goes through replicas), a table without static columns (a
//! partition with only a static row is a row of `count(*)`), aggregates of regular columns
//! only, and restrictions `=`, `<`, `<=`, `>`, `>=` on regular columns of ordered types. Any
//! other statement runs as before.

use super::{Filter, PartitionSelection, SelectOutput, SelectPlan};
use crate::exec::aggregates::{agg_finish, agg_init, AggState};
use crate::exec::error::{ExecError, ExecResult};
use crate::exec::paging::PagingState;
use crate::exec::selectors::{AggKind, Sel};
use crate::exec::storage_bridge::{effective_layout, value_type};
use crate::exec::values::{self, Binds, Bound};
use crate::node::NodeState;
use helenus_coordinator::ConsistencyLevel;
use helenus_cql::ast::{Operator, RelationValue};
use helenus_schema::{ColumnKind, StorageLayout, TableKind, TableMeta};
use helenus_storage as st;
use helenus_storage::columnar::{Column, ColumnSpec, ColumnValues, CompareOp, Scalar, ValueType};
use helenus_types::CqlType;

/// One output column of an aggregate selection.
#[derive(Clone)]
struct Output {
    sel: Sel,
    /// `count(*)`, or the aggregate's argument column (its index in the scan's columns).
    arg: Option<usize>,
    kind: AggKind,
    ty: CqlType,
    /// A key column of a grouped selection, read from the group's key (no state).
    key_part: Option<KeyPart>,
}

/// Where a grouped selection's key column comes from.
#[derive(Clone, Copy)]
enum KeyPart {
    /// The i-th component of the partition key.
    Partition(usize),
    /// The i-th clustering value of the group's prefix.
    Clustering(usize),
}

/// A group's identity: its partition (token, key) and clustering prefix.
type GroupKey = ((i64, bytes::Bytes), Vec<bytes::Bytes>);

/// One group of a grouped aggregate: its key and the outputs' states.
type Group = (GroupKey, Vec<AggState>);

/// The aggregate's result, or None when the statement is not one this path answers.
pub(super) async fn aggregate(
    node: &NodeState,
    plan: &SelectPlan,
    binds: &Binds<'_>,
    resumed: bool,
    (limit, consistency): (Option<usize>, ConsistencyLevel),
) -> ExecResult<Option<SelectOutput>> {
    let t = &plan.table;
    if resumed || !eligible(plan) || !served_locally(node, t, consistency) {
        return Ok(None);
    }
    // GROUP BY names the partition key, then a prefix of the clustering columns.
    let group_runs = plan
        .group_by
        .checked_sub(t.partition_key_len())
        .filter(|_| plan.group_by > 0);
    let Some((outputs, columns)) = outputs(t, plan, group_runs) else {
        return Ok(None);
    };
    let Some(mut scan) = column_scan(node, plan, binds, columns)? else {
        return Ok(None);
    };
    scan.group_runs = group_runs;
    crate::trace::event(|| {
        format!(
            "Aggregating {}.{} from its column chunks",
            t.keyspace, t.name
        )
    });
    let engine = node.engine.clone();
    let table = *t.id.as_bytes();
    let folded = outputs.clone();
    // A scan of the whole table is seconds of CPU: off the connection's runtime thread.
    let groups = tokio::task::spawn_blocking(move || fold(&engine, table, &scan, &folded))
        .await
        .map_err(|e| ExecError::Server(format!("column scan failed: {e}")))?
        .map_err(|e| scan_error(node, e))?;
    let finish = |key: Option<&GroupKey>, states: &[AggState]| -> Vec<Option<bytes::Bytes>> {
        let parts = key.map(|((_, k), c)| (crate::exec::rows::key_components(t, k), c));
        outputs
            .iter()
            .zip(states.iter())
            .map(|(o, s)| match (o.key_part, &parts) {
                (Some(KeyPart::Partition(i)), Some((parts, _))) => parts.get(i).cloned(),
                (Some(KeyPart::Clustering(i)), Some((_, c))) => c.get(i).cloned(),
                _ => agg_finish(s, &o.sel),
            })
            .collect()
    };
    let rows = match groups {
        Folded::Total(states) => vec![finish(None, &states)],
        Folded::Groups(groups) => groups
            .iter()
            .take(limit.unwrap_or(usize::MAX))
            .map(|(key, states)| finish(Some(key), states))
            .collect(),
    };
    Ok(Some(SelectOutput {
        columns: plan.compiled.result_columns.clone(),
        wire_columns: plan.compiled.wire_columns.clone(),
        rows,
        paging_state: None,
        encoded: None,
    }))
}

/// One page of `SELECT <columns> FROM t [WHERE token(k) ...] [AND c op v ALLOW FILTERING]` over
/// a columnar table without static columns, read column by column in (token, key, clustering)
/// order (`Engine::scan_column_page`): what the Spark connector's scans are. `want` is the rows
/// this page may return (None: all); the paging state is the row path's (the last row's
/// partition and clustering), so either path resumes the other's pages.
pub(super) async fn project(
    node: &NodeState,
    plan: &SelectPlan,
    binds: &Binds<'_>,
    (want, paged, consistency): (Option<usize>, bool, ConsistencyLevel),
    resume: Option<&PagingState>,
) -> ExecResult<Option<SelectOutput>> {
    let t = &plan.table;
    if !projection_eligible(plan) || !served_locally(node, t, consistency) {
        return Ok(None);
    }
    let Some((slots, columns)) = projection_slots(t, plan) else {
        return Ok(None);
    };
    let Some(mut scan) = column_scan(node, plan, binds, columns)? else {
        return Ok(None);
    };
    let composite = t.partition_key_len() > 1;
    // The rows go out as storage writes them, unless a cell is a component of a composite key.
    scan.wire = slots
        .iter()
        .map(|slot| match slot {
            Slot::Partition(_) if composite => None,
            Slot::Partition(_) => Some(st::WireCell::PartitionKey),
            Slot::Clustering(c) => Some(st::WireCell::Clustering(*c)),
            Slot::Column(j) => Some(st::WireCell::Column(*j)),
        })
        .collect();
    let wired = scan.wire.is_some();
    crate::trace::event(|| format!("Reading {}.{} column by column", t.keyspace, t.name));
    let after = resume.map(|r| st::ResumeAt {
        token: r.token,
        key: r.partition_key.clone(),
        clustering: r.clustering.clone(),
    });
    let limit = want.unwrap_or(usize::MAX);
    let engine = node.engine.clone();
    let table = *t.id.as_bytes();
    // A page a restriction left short only says where it got to; reads go on from there until
    // the page has a row (an unpaged request: until its limit), as a row scan's filtering does.
    let mut page = tokio::task::spawn_blocking(move || {
        let mut scan = scan;
        let allowance = scan.tombstone_failure_threshold;
        let mut page = engine.scan_column_page(table, &scan, after, limit)?;
        while page.more && page.keys.len() < limit && (!paged || page.keys.is_empty()) {
            let Some((token, key, clustering)) = page.resume_point() else {
                break;
            };
            let at = st::ResumeAt {
                token,
                key,
                clustering,
            };
            // One request's reads share one tombstone allowance, as the row path's do.
            scan.tombstone_failure_threshold = allowance.saturating_sub(page.tombstones_scanned);
            let next = engine.scan_column_page(table, &scan, Some(at), limit - page.keys.len())?;
            page.append(next);
        }
        Ok::<_, st::StorageError>(page)
    })
    .await
    .map_err(|e| ExecError::Server(format!("column scan failed: {e}")))??;
    let count = page.keys.len();
    let (rows, encoded) = if wired {
        let body = std::mem::take(&mut page.wire).freeze();
        (
            Vec::new(),
            Some((u32::try_from(count).unwrap_or(u32::MAX), body)),
        )
    } else {
        (value_rows(t, &slots, &mut page), None)
    };
    let paging_state = match (page.more, page.resume_point()) {
        (true, Some((token, key, clustering))) => {
            // Rows of the last partition returned so far (a page may resume inside it).
            let in_page = page
                .keys
                .iter()
                .rev()
                .take_while(|(_, k)| *k == key)
                .count();
            let before = resume
                .filter(|r| r.partition_key == key && in_page == page.keys.len())
                .map_or(0, |r| r.partition_rows_returned);
            Some(
                PagingState {
                    token,
                    partition_key: key,
                    clustering,
                    rows_returned: resume.map_or(0, |r| r.rows_returned) + count,
                    partition_rows_returned: before + in_page,
                }
                .encode(),
            )
        }
        _ => None,
    };
    Ok(Some(SelectOutput {
        columns: plan.compiled.result_columns.clone(),
        wire_columns: plan.compiled.wire_columns.clone(),
        rows,
        paging_state,
        encoded,
    }))
}

/// The page's rows as values, for `slots` (a composite partition key's components split out).
fn value_rows(
    t: &TableMeta,
    slots: &[Slot],
    page: &mut st::ColumnPage,
) -> Vec<Vec<Option<bytes::Bytes>>> {
    let composite = t.partition_key_len() > 1;
    // A column one slot selects gives its cells up rather than a clone each (a clone and its
    // drop are two atomic updates of the page buffer's count, from two threads).
    let mut cells = std::mem::take(&mut page.cells);
    let selected_once: Vec<bool> = (0..cells.len())
        .map(|j| {
            slots
                .iter()
                .filter(|s| matches!(s, Slot::Column(c) if *c == j))
                .count()
                == 1
        })
        .collect();
    page.keys
        .iter()
        .enumerate()
        .map(|(i, (_, key))| {
            let parts = composite.then(|| crate::exec::rows::key_components(t, key));
            slots
                .iter()
                .map(|slot| match (slot, &parts) {
                    (Slot::Partition(p), Some(parts)) => parts.get(*p).cloned(),
                    (Slot::Partition(_), None) => Some(key.clone()),
                    (Slot::Clustering(c), _) => {
                        page.clustering.get(i).and_then(|v| v.get(*c)).cloned()
                    }
                    (Slot::Column(j), _) => {
                        let cell = cells.get_mut(*j).and_then(|c| c.get_mut(i))?;
                        if selected_once.get(*j).copied().unwrap_or(false) {
                            cell.take()
                        } else {
                            cell.clone()
                        }
                    }
                })
                .collect()
        })
        .collect()
}

/// Where a projected column comes from.
enum Slot {
    /// The i-th partition key component.
    Partition(usize),
    /// The i-th clustering value.
    Clustering(usize),
    /// The j-th scanned column.
    Column(usize),
}

/// Each selected column's slot, and the regular columns to scan; None when a selector is not
/// a plain column, or a column is a collection or counter.
fn projection_slots(t: &TableMeta, plan: &SelectPlan) -> Option<(Vec<Slot>, Vec<ColumnSpec>)> {
    let mut columns: Vec<ColumnSpec> = Vec::new();
    let mut slots = Vec::new();
    for c in &plan.compiled.columns {
        let Sel::Column(i) = c.sel else {
            return None;
        };
        let meta = t.columns.get(i)?;
        let slot = match meta.kind {
            ColumnKind::PartitionKey => {
                Slot::Partition(t.partition_key().position(|k| k.id == meta.id)?)
            }
            ColumnKind::Clustering => {
                Slot::Clustering(t.clustering().position(|k| k.id == meta.id)?)
            }
            ColumnKind::Regular
                if !meta.cql_type.is_multi_cell() && !meta.cql_type.is_counter() =>
            {
                let at = columns
                    .iter()
                    .position(|s| s.id == meta.id)
                    .unwrap_or_else(|| {
                        columns.push(ColumnSpec {
                            id: meta.id,
                            value_type: value_type(&meta.cql_type),
                        });
                        columns.len() - 1
                    });
                Slot::Column(at)
            }
            _ => return None,
        };
        slots.push(slot);
    }
    Some((slots, columns))
}

/// The scan of `columns` the plan's token range and restrictions ask for; None when a
/// restriction or the range is not one a column scan takes.
fn column_scan(
    node: &NodeState,
    plan: &SelectPlan,
    binds: &Binds<'_>,
    columns: Vec<ColumnSpec>,
) -> ExecResult<Option<st::ColumnScan>> {
    let t = &plan.table;
    let Some(restrictions) = restrictions(t, &plan.filters, binds)? else {
        return Ok(None);
    };
    let Some((start, end)) = token_bounds(t, &plan.partitions, binds)? else {
        return Ok(None);
    };
    Ok(Some(st::ColumnScan {
        start,
        end,
        columns,
        restrictions,
        now_s: binds.now.s,
        tombstone_failure_threshold: node.config.tombstone_failure_threshold,
        group_runs: None,
        wire: None,
    }))
}

/// A scan's error as the row path reports it: too many tombstones is its read failure.
fn scan_error(node: &NodeState, e: st::StorageError) -> ExecError {
    match e {
        st::StorageError::TombstoneOverwhelming { .. } => {
            crate::exec::tombstones::overwhelmed(node.config.listen_address)
        }
        other => other.into(),
    }
}

/// Whether this node's own data answers a scan of `t` at `consistency`: it is alone, or it is a
/// NORMAL ring member replicating every token of the keyspace (no node joining or leaving) and
/// the level asks for one replica.
fn served_locally(node: &NodeState, t: &TableMeta, consistency: ConsistencyLevel) -> bool {
    let Some(cluster) = node.cluster() else {
        return true;
    };
    if !matches!(
        consistency,
        ConsistencyLevel::One | ConsistencyLevel::LocalOne
    ) {
        return false;
    }
    let schema = node.schema();
    let Some(ks) = schema.keyspaces.get(&t.keyspace) else {
        return false;
    };
    match cluster.owned_ranges(ks) {
        Ok(None) => true,
        Ok(Some(ranges)) => ranges == [(None, None)],
        Err(_) => false,
    }
}

/// A plain projection of a columnar table without static columns, over a token range, with at
/// most simple restrictions.
fn projection_eligible(plan: &SelectPlan) -> bool {
    plain_scan(plan) && plan.group_by == 0 && !plan.compiled.has_aggregate
}

/// What both column-scan statements need: a user table stored columnar without static columns,
/// read over a token range (or all of it) with no clustering, multi-column or extra token
/// restriction, no grouping (but by the partition key and a clustering prefix, for
/// aggregates), ordering, DISTINCT, JSON or per-partition limit.
fn plain_scan(plan: &SelectPlan) -> bool {
    let t = &plan.table;
    t.kind == TableKind::User
        && effective_layout(t) == StorageLayout::Columnar
        && !t.columns.iter().any(|c| c.kind == ColumnKind::Static)
        && (plan.group_by == 0 || plan.group_by >= t.partition_key_len())
        && plan.group_fn.is_none()
        && !plan.distinct
        && !plan.json
        && plan.ann.is_none()
        && plan.merge_order.is_empty()
        && plan.multi_filters.is_empty()
        && plan.clustering_eq.is_empty()
        && plan.clustering_slice.is_none()
        && plan.per_partition_limit.is_none()
        && plan.token_filter.0.is_none()
        && plan.token_filter.1.is_none()
        && plan.bound_projection.is_none()
        && matches!(plan.partitions, PartitionSelection::TokenRange { .. })
}

/// The statement's shape: aggregates, ungrouped or grouped by partition, over a token range (or
/// all of it) of a columnar table with no static column, with no clustering or multi-column
/// restriction.
fn eligible(plan: &SelectPlan) -> bool {
    plain_scan(plan) && plan.compiled.has_aggregate
}

/// The outputs (each `count(*)`, an aggregate of a regular column or, grouped by the partition
/// key and `group_runs` clustering columns, one of those key columns) and the columns scanned.
fn outputs(
    t: &TableMeta,
    plan: &SelectPlan,
    group_runs: Option<usize>,
) -> Option<(Vec<Output>, Vec<ColumnSpec>)> {
    let mut columns: Vec<ColumnSpec> = Vec::new();
    let mut out = Vec::new();
    for c in &plan.compiled.columns {
        let (kind, arg, ty) = match (&c.sel, group_runs) {
            (Sel::Column(i), Some(n)) => {
                let meta = t.columns.get(*i)?;
                let part = match t.partition_key().position(|k| k.id == meta.id) {
                    Some(p) => KeyPart::Partition(p),
                    None => {
                        KeyPart::Clustering(t.clustering().take(n).position(|k| k.id == meta.id)?)
                    }
                };
                out.push(Output {
                    sel: c.sel.clone(),
                    arg: None,
                    kind: AggKind::Count,
                    ty: c.ty.clone(),
                    key_part: Some(part),
                });
                continue;
            }
            (Sel::CountStar, _) => (AggKind::Count, None, c.ty.clone()),
            (Sel::Agg { kind, arg, ty }, _) => {
                let Sel::Column(i) = arg.as_ref() else {
                    return None;
                };
                let meta = t.columns.get(*i)?;
                if meta.kind != ColumnKind::Regular
                    || meta.cql_type.is_multi_cell()
                    || meta.cql_type.is_counter()
                {
                    return None;
                }
                let vt = value_type(&meta.cql_type);
                let supported = match kind {
                    AggKind::Count => true,
                    AggKind::Min | AggKind::Max => vt != ValueType::Opaque,
                    AggKind::Sum | AggKind::Avg => numeric(vt),
                };
                if !supported {
                    return None;
                }
                let at = match columns.iter().position(|s| s.id == meta.id) {
                    Some(at) => at,
                    None => {
                        columns.push(ColumnSpec {
                            id: meta.id,
                            value_type: vt,
                        });
                        columns.len() - 1
                    }
                };
                (*kind, Some(at), ty.clone())
            }
            _ => return None,
        };
        out.push(Output {
            sel: c.sel.clone(),
            arg,
            kind,
            ty,
            key_part: None,
        });
    }
    Some((out, columns))
}

fn numeric(vt: ValueType) -> bool {
    matches!(
        vt,
        ValueType::TinyInt
            | ValueType::SmallInt
            | ValueType::Int
            | ValueType::BigInt
            | ValueType::Float
            | ValueType::Double
    )
}

/// The `ALLOW FILTERING` restrictions as column restrictions; None when one is not `=`, `<`,
/// `<=`, `>`, `>=` on a regular column of an ordered type.
fn restrictions(
    t: &TableMeta,
    filters: &[Filter],
    binds: &Binds<'_>,
) -> ExecResult<Option<Vec<st::ColumnRestriction>>> {
    let mut out = Vec::new();
    for f in filters {
        let Some(c) = t.columns.get(f.column) else {
            return Ok(None);
        };
        let op = match f.op {
            Operator::Eq => CompareOp::Eq,
            Operator::Lt => CompareOp::Lt,
            Operator::Lte => CompareOp::Le,
            Operator::Gt => CompareOp::Gt,
            Operator::Gte => CompareOp::Ge,
            _ => return Ok(None),
        };
        let vt = value_type(&c.cql_type);
        let RelationValue::Single(term) = &f.value else {
            return Ok(None);
        };
        if c.kind != ColumnKind::Regular || f.key.is_some() || vt == ValueType::Opaque {
            return Ok(None);
        }
        // Null and unset values are refused with the row path's messages.
        let Bound::Value(v) = values::eval(term, &c.cql_type, &c.name, binds)? else {
            return Ok(None);
        };
        out.push(st::ColumnRestriction {
            column: ColumnSpec {
                id: c.id,
                value_type: vt,
            },
            op,
            value: v.to_vec(),
        });
    }
    Ok(Some(out))
}

/// The token bounds of the selection; None for one that wraps (left to the row path).
fn token_bounds(
    t: &TableMeta,
    p: &PartitionSelection,
    binds: &Binds<'_>,
) -> ExecResult<Option<(st::PartitionBound, st::PartitionBound)>> {
    let PartitionSelection::TokenRange { lower, upper } = p else {
        return Ok(None);
    };
    let bound = |b: &Option<(helenus_cql::ast::Term, bool)>| -> ExecResult<_> {
        Ok(match b {
            None => (st::PartitionBound::Unbounded, None),
            Some((term, inclusive)) => {
                let token = super::scan::token_value(t, term, binds)?;
                (
                    st::PartitionBound::Token {
                        token,
                        inclusive: *inclusive,
                    },
                    Some(token),
                )
            }
        })
    };
    let ((start, lo), (end, hi)) = (bound(lower)?, bound(upper)?);
    if let (Some(lo), Some(hi)) = (lo, hi) {
        if lo > hi {
            return Ok(None);
        }
    }
    Ok(Some((start, end)))
}

/// What a scan folded into: one set of states, or one per partition in (token, key) order.
enum Folded {
    Total(Vec<AggState>),
    Groups(Vec<Group>),
}

/// The aggregate states after every batch of the scan (per group with `group_runs`).
fn fold(
    engine: &st::Engine,
    table: st::TableId,
    scan: &st::ColumnScan,
    outputs: &[Output],
) -> Result<Folded, st::StorageError> {
    let init = || -> Vec<AggState> { outputs.iter().map(|o| agg_init(&o.sel)).collect() };
    let types: Vec<ValueType> = scan.columns.iter().map(|c| c.value_type).collect();
    let mut total = init();
    let mut groups: Vec<Group> = Vec::new();
    engine.scan_columns(table, scan, &mut |batch| {
        if scan.group_runs.is_none() {
            fold_rows(&mut total, outputs, &types, &batch, 0..batch.rows);
            return Ok(());
        }
        for run in &batch.partitions {
            if !(run.start..run.end).any(|i| batch.is_selected(i)) {
                continue;
            }
            let key = ((run.token, run.key.clone()), run.clustering.clone());
            let at = group_slot(&mut groups, key, init);
            if let Some((_, states)) = groups.get_mut(at) {
                fold_rows(states, outputs, &types, &batch, run.start..run.end);
            }
        }
        Ok(())
    })?;
    Ok(if scan.group_runs.is_some() {
        Folded::Groups(groups)
    } else {
        Folded::Total(total)
    })
}

/// The index of group `key`, added if new. Batches arrive in token order and a partition's
/// rows in clustering order, so this is almost always the last group or a new one after it;
/// a partition that comes back out of order goes to its place in (token, key) order, and a
/// clustering prefix new to a partition after that partition's other groups.
fn group_slot(groups: &mut Vec<Group>, key: GroupKey, init: impl Fn() -> Vec<AggState>) -> usize {
    let Some(((last_partition, last_prefix), _)) = groups.last() else {
        groups.push((key, init()));
        return 0;
    };
    if *last_partition == key.0 && *last_prefix == key.1 {
        return groups.len() - 1;
    }
    if *last_partition <= key.0 {
        groups.push((key, init()));
        return groups.len() - 1;
    }
    let first = groups.partition_point(|((p, _), _)| *p < key.0);
    let end = groups.partition_point(|((p, _), _)| *p <= key.0);
    if let Some(at) = (first..end).find(|&i| groups.get(i).is_some_and(|(k, _)| k.1 == key.1)) {
        return at;
    }
    groups.insert(end, (key, init()));
    end
}

/// Folds rows `rows` of a batch into one set of states.
fn fold_rows(
    states: &mut [AggState],
    outputs: &[Output],
    types: &[ValueType],
    batch: &st::ScanBatch,
    rows: std::ops::Range<usize>,
) {
    for (o, state) in outputs.iter().zip(states.iter_mut()) {
        if o.key_part.is_some() {
            continue;
        }
        let Some(at) = o.arg else {
            // A whole batch counts its selection bitmap's ones; a group's run, row by row.
            let n = if rows == (0..batch.rows) {
                batch.selected_rows()
            } else {
                batch.selected_in(rows.clone()).count()
            };
            state.add_count(n as i64);
            continue;
        };
        let (Some(col), Some(vt)) = (batch.columns.get(at), types.get(at)) else {
            continue;
        };
        fold_column(state, o, batch, col, *vt, rows.clone());
    }
}

/// Folds rows `rows` of a batch's values of an aggregate's column into its state.
fn fold_column(
    state: &mut AggState,
    o: &Output,
    batch: &st::ScanBatch,
    col: &Column,
    vt: ValueType,
    rows: std::ops::Range<usize>,
) {
    let rows = batch.selected_in(rows).filter(|i| col.is_valid(*i));
    match o.kind {
        AggKind::Count => state.add_count(rows.count() as i64),
        AggKind::Sum | AggKind::Avg => match &col.values {
            ColumnValues::Int(v) => {
                for i in rows {
                    let x = v.get(i).copied().unwrap_or(0);
                    state.add_number(x as f64, i128::from(x));
                }
            }
            ColumnValues::Float32(v) => {
                for i in rows {
                    state.add_number(f64::from(v.get(i).copied().unwrap_or(0.0)), 0);
                }
            }
            ColumnValues::Float64(v) => {
                for i in rows {
                    state.add_number(v.get(i).copied().unwrap_or(0.0), 0);
                }
            }
            // A chunk kept as serialized values (one did not fit the type): parsed one by one.
            ColumnValues::Bytes(v) => {
                for i in rows {
                    match vt.scalar(v.get(i)) {
                        Some(Scalar::Int(x)) => state.add_number(x as f64, i128::from(x)),
                        Some(Scalar::Float(x)) => state.add_number(x, 0),
                        _ => {}
                    }
                }
            }
        },
        AggKind::Min | AggKind::Max => {
            // The batch's own extreme first, then one comparison with the running one.
            let mut best: Option<usize> = None;
            for i in rows {
                let better = match best {
                    None => true,
                    Some(b) => match compare_rows(col, i, b, vt) {
                        Some(ord) if o.kind == AggKind::Min => ord.is_lt(),
                        Some(ord) => ord.is_gt(),
                        None => false,
                    },
                };
                if better {
                    best = Some(i);
                }
            }
            if let Some(v) = best.and_then(|i| col.serialized(i, vt)) {
                state.offer_extreme(o.kind, &o.ty, v.into());
            }
        }
    }
}

/// Rows `a` and `b` of `col` in CQL order, compared in place (no value copied).
fn compare_rows(col: &Column, a: usize, b: usize, vt: ValueType) -> Option<std::cmp::Ordering> {
    let double = st::columnar::java_double_compare;
    match &col.values {
        ColumnValues::Int(v) => Some(v.get(a)?.cmp(v.get(b)?)),
        ColumnValues::Float32(v) => Some(double(f64::from(*v.get(a)?), f64::from(*v.get(b)?))),
        ColumnValues::Float64(v) => Some(double(*v.get(a)?, *v.get(b)?)),
        ColumnValues::Bytes(v) if matches!(vt, ValueType::Text | ValueType::Blob) => {
            Some(v.get(a).cmp(v.get(b)))
        }
        // A chunk of another type kept as its serialized bytes.
        ColumnValues::Bytes(v) => vt.scalar(v.get(a))?.compare(&vt.scalar(v.get(b))?),
    }
}
