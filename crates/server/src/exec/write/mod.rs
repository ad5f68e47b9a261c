//! INSERT, UPDATE and DELETE: validated against the schema at prepare time, turned into storage
//! mutations at execution (one per partition), with Cassandra's timestamp, TTL and collection rules.
//!
//! This module owns the plan types (`WritePlan`, `Op`, `WriteContext`) and turning a plan into
//! mutations (keys, timestamp, TTL, range deletions); `plan` builds plans from statements,
//! `cells` builds the cells of one row, and `lwt_cond` checks and evaluates IF conditions.

use super::error::{invalid, ExecError, ExecResult};
use super::key_values::{self, ValuesOf};
use super::values::{self, Binds, Bound};
use bytes::Bytes;
use helenus_coordinator::ConsistencyLevel;
use helenus_cql::ast::{Operator, SubPath, Term, UsingClause, WriteCondition};
use helenus_schema::{ColumnKind, TableMeta};
use helenus_storage as st;
use helenus_types::{CqlType, NativeType};
use std::sync::Arc;

mod cells;
mod expand;
pub(super) mod lwt_cond;
mod plan;

use cells::{json_values, row_cells, JsonRow, RowAt};
pub use plan::{plan_delete, plan_insert, plan_update};

#[derive(Debug, Clone)]
pub enum Op {
    /// `c = t` (also INSERT values).
    Set(Term),
    Add(Term),
    Prepend(Term),
    Subtract(Term),
    SetElement(Term, Term),
    SetField(usize, Term),
    /// DELETE c / DELETE c[k] / DELETE c.f
    Delete(Option<SubPath>),
}

#[derive(Debug, Clone)]
pub enum WriteKind {
    Insert,
    InsertJson { json: Term, default_unset: bool },
    Update,
    Delete,
}

#[derive(Debug, Clone)]
pub struct WritePlan {
    pub table: Arc<TableMeta>,
    pub kind: WriteKind,
    pub ops: Vec<(usize, Op)>,
    pub pk: Vec<ValuesOf>,
    /// = / IN on a clustering prefix.
    pub ck: Vec<ValuesOf>,
    /// DELETE ... WHERE c > x: a range of rows.
    pub ck_slice: Vec<(Operator, Term)>,
    pub using: UsingClause,
    pub condition: Option<WriteCondition>,
}

/// The element type an operation's value has for a collection column.
fn op_value_type(ty: &CqlType, op: &Op) -> CqlType {
    match (ty, op) {
        (CqlType::Map { key, .. }, Op::Subtract(_)) => CqlType::Set {
            element: key.clone(),
            frozen: false,
        },
        (CqlType::Native(NativeType::Counter), _) => CqlType::Native(NativeType::Bigint),
        _ => ty.clone(),
    }
}

/// Per-execution settings from the protocol.
/// Reads the current element paths of a list column of one row (partition key, token,
/// clustering, column id), for the list operations that address elements by position.
pub type ListLookup<'a> =
    dyn Fn(&Bytes, i64, &[Bytes], u32) -> ExecResult<Vec<(Bytes, Bytes)>> + Sync + 'a;

pub struct WriteContext<'a> {
    pub timestamp_us: i64,
    pub now_s: i64,
    pub lists: Option<&'a ListLookup<'a>>,
    /// The node's low-water mark of list-prepend paths.
    pub prepends: &'a crate::exec_state::PrependPaths,
    /// The request's consistency level (a conditional write's commit level).
    pub consistency: ConsistencyLevel,
    /// A conditional write's serial level.
    pub serial_consistency: ConsistencyLevel,
    /// `max_mutation_size`: the largest mutation one partition of the write may make.
    pub max_mutation_bytes: u64,
}

fn int_of(term: &Term, ty: NativeType, name: &str, binds: &Binds<'_>) -> ExecResult<Option<i64>> {
    match values::eval(term, &CqlType::Native(ty), name, binds)? {
        Bound::Value(b) => Ok(Some(match b.len() {
            4 => i32::from_be_bytes([b[0], b[1], b[2], b[3]]) as i64,
            8 => i64::from_be_bytes(b.as_ref().try_into().unwrap_or([0; 8])),
            _ => return invalid(format!("Invalid value for {name}")),
        })),
        Bound::Unset => Ok(None),
        Bound::Null => invalid(format!(
            "Invalid null value of {}",
            if name == "[ttl]" { "TTL" } else { "timestamp" }
        )),
    }
}

/// The maximum TTL Cassandra accepts (20 years).
const MAX_TTL_S: i64 = 20 * 365 * 24 * 60 * 60;

/// The mutations of one statement of an unconditional BATCH (conditional ones go through `lwt`).
pub fn batch_child_mutations(
    plan: &WritePlan,
    binds: &Binds<'_>,
    ctx: &WriteContext<'_>,
) -> ExecResult<Vec<st::Mutation>> {
    mutations(plan, binds, ctx)
}

/// The mutations a planned write makes (one per partition), for a given execution.
pub fn mutations(
    plan: &WritePlan,
    binds: &Binds<'_>,
    ctx: &WriteContext,
) -> ExecResult<Vec<st::Mutation>> {
    let t = &plan.table;
    let ts = write_timestamp(plan, binds, ctx)?;
    let ttl = write_ttl(plan, binds)?;
    super::write_checks::check_expiration(t, ttl, ctx.now_s)?;
    let json = json_values(plan, binds)?;
    let (pk_lists, ck_lists) = key_lists(plan, &json, binds)?;
    key_values::check_key_components(&pk_lists)?;
    check_compact_clustering(t, &plan.kind, &ck_lists)?;
    let keys = key_values::cartesian(&pk_lists, "partition key")?;
    let write = PartitionWrite {
        plan,
        binds,
        ctx,
        clusterings: key_values::cartesian(&ck_lists, "clustering columns")?,
        no_clustering: ck_lists.is_empty(),
        full_clustering: ck_lists.len() == t.clustering_len(),
        ts,
        ttl,
        json_cols: json.map(|(c, _, _)| c),
    };
    let mut out = Vec::with_capacity(keys.len());
    for comps in keys {
        let refs: Vec<&[u8]> = comps.iter().map(|b| b.as_ref()).collect();
        let key = crate::keys::partition_key(&refs);
        let token = helenus_types::murmur3_token(&key);
        let mut m = st::Mutation {
            table: *t.id.as_bytes(),
            key,
            token,
            partition_deletion: None,
            range_tombstones: Vec::new(),
            static_row: None,
            rows: Vec::new(),
        };
        match plan.kind {
            WriteKind::Delete if plan.ops.is_empty() => write.deletions(&mut m)?,
            _ => write.rows(&mut m)?,
        }
        let size = super::write_checks::mutation_size(&m);
        if size > ctx.max_mutation_bytes {
            return Err(super::write_checks::oversized_mutation(
                size,
                ctx.max_mutation_bytes,
                t,
                Some(&m.key),
            ));
        }
        out.push(m);
    }
    Ok(out)
}

/// `USING TIMESTAMP`, or the execution's.
fn write_timestamp(plan: &WritePlan, binds: &Binds<'_>, ctx: &WriteContext) -> ExecResult<i64> {
    let Some(term) = &plan.using.timestamp else {
        return Ok(ctx.timestamp_us);
    };
    match int_of(term, NativeType::Bigint, "[timestamp]", binds)? {
        // Long.MIN_VALUE is Cassandra's "no timestamp" marker.
        Some(i64::MIN) => invalid(format!(
            "Out of bound timestamp, must be in [{}, {}]",
            i64::MIN + 1,
            i64::MAX
        )),
        Some(v) => Ok(v),
        None => Ok(ctx.timestamp_us),
    }
}

/// `USING TTL`, or the table's default.
fn write_ttl(plan: &WritePlan, binds: &Binds<'_>) -> ExecResult<u32> {
    let default = plan.table.params.default_time_to_live.max(0) as u32;
    let Some(term) = &plan.using.ttl else {
        return Ok(default);
    };
    match int_of(term, NativeType::Int, "[ttl]", binds)? {
        Some(v) if v < 0 => invalid(format!("A TTL must be greater or equal to 0, but was {v}")),
        Some(v) if v > MAX_TTL_S => invalid(format!(
            "ttl is too large. requested ({v}) maximum ({MAX_TTL_S})"
        )),
        Some(v) => Ok(v as u32),
        None => Ok(default),
    }
}

/// The values each partition key and clustering column takes (several under IN).
#[allow(clippy::type_complexity)]
fn key_lists(
    plan: &WritePlan,
    json: &Option<JsonRow>,
    binds: &Binds<'_>,
) -> ExecResult<(Vec<Vec<Bytes>>, Vec<Vec<Bytes>>)> {
    if let Some((_, pk, ck)) = json {
        return Ok((
            pk.iter().map(|b| vec![b.clone()]).collect(),
            ck.iter().map(|b| vec![b.clone()]).collect(),
        ));
    }
    let t = &plan.table;
    let mut p = Vec::new();
    for (c, v) in t.partition_key().zip(&plan.pk) {
        p.push(key_values::expand_values(v, &c.cql_type, &c.name, binds)?);
    }
    let mut k = Vec::new();
    for (c, v) in t.clustering().zip(&plan.ck) {
        k.push(key_values::expand_values(v, &c.cql_type, &c.name, binds)?);
    }
    Ok((p, k))
}

/// The one clustering row a statement names (every clustering column given one value), even
/// when it writes only static columns: a condition on a regular column is about that row.
pub fn named_clustering(plan: &WritePlan, binds: &Binds<'_>) -> ExecResult<Option<Vec<Bytes>>> {
    let (_, ck) = key_lists(plan, &None, binds)?;
    if ck.len() != plan.table.clustering_len() || ck.iter().any(|v| v.len() != 1) {
        return Ok(None);
    }
    Ok(Some(ck.into_iter().flatten().collect()))
}

/// What every partition of one write shares.
struct PartitionWrite<'r, 'b, 'c> {
    plan: &'r WritePlan,
    binds: &'r Binds<'b>,
    ctx: &'r WriteContext<'c>,
    clusterings: Vec<Vec<Bytes>>,
    /// No clustering column is restricted.
    no_clustering: bool,
    full_clustering: bool,
    ts: i64,
    ttl: u32,
    json_cols: Option<Vec<(usize, Bound)>>,
}

impl PartitionWrite<'_, '_, '_> {
    /// A DELETE without columns: the partition, rows, or ranges of rows.
    fn deletions(&self, m: &mut st::Mutation) -> ExecResult<()> {
        let t = &self.plan.table;
        let deletion = st::DeletionTime {
            marked_for_delete_at_us: self.ts,
            local_deletion_time_s: self.ctx.now_s,
        };
        if !self.plan.ck_slice.is_empty() {
            for prefix in &self.clusterings {
                let (start, end) = slice_bounds(prefix, &self.plan.ck_slice, t, self.binds)?;
                m.range_tombstones.push((start, end, deletion));
            }
        } else if self.no_clustering {
            m.partition_deletion = Some(deletion);
        } else if self.full_clustering {
            for c in &self.clusterings {
                m.rows.push(st::RowUpdate {
                    clustering: c.clone(),
                    liveness: None,
                    deletion: Some(deletion),
                    cells: Vec::new(),
                });
            }
        } else {
            for prefix in &self.clusterings {
                let b = |kind| st::ClusteringBound {
                    prefix: prefix.clone(),
                    kind,
                };
                m.range_tombstones.push((
                    b(st::BoundKind::Inclusive),
                    b(st::BoundKind::Inclusive),
                    deletion,
                ));
            }
        }
        Ok(())
    }

    /// A dense COMPACT STORAGE table with no declared value keeps its rows alive through a
    /// hidden empty value, which every INSERT writes.
    fn hidden_compact_value(&self) -> Option<st::CellUpdate> {
        let t = &self.plan.table;
        if !t.is_compact() || !t.is_dense() {
            return None;
        }
        let empty = t.columns.iter().find(|c| c.cql_type.is_empty_type())?;
        Some(st::CellUpdate {
            column: empty.id,
            path: None,
            timestamp_us: self.ts,
            op: st::CellOp::Set {
                value: Bytes::new(),
                ttl_s: self.ttl,
            },
        })
    }

    /// INSERT, UPDATE and DELETE of columns: the static row and the regular rows' cells.
    fn rows(&self, m: &mut st::Mutation) -> ExecResult<()> {
        let t = &self.plan.table;
        let (ts, ttl) = (self.ts, self.ttl);
        let mut all = Vec::new();
        let single =
            // Without clustering values the row is the static row (static list operations).
            if self.clusterings.len() == 1
                && (self.full_clustering || t.clustering_len() == 0 || self.no_clustering)
            {
                self.clusterings.first().map(|c| RowAt {
                    key: &m.key,
                    token: m.token,
                    clustering: c,
                })
            } else {
                None
            };
        row_cells(
            self.plan,
            self.binds,
            self.ctx,
            single,
            ts,
            ttl,
            &self.json_cols,
            &mut all,
        )?;
        let is_static = |cell: &st::CellUpdate| {
            t.columns
                .iter()
                .any(|c| c.id == cell.column && c.kind == ColumnKind::Static)
        };
        // Most writes touch no static column: their cells are moved, not copied (a row of a
        // million list elements is ~100 MB of cell updates).
        let (static_cells, mut regular_cells): (Vec<_>, Vec<_>) = if all.iter().any(is_static) {
            all.into_iter().partition(is_static)
        } else {
            (Vec::new(), all)
        };
        if !static_cells.is_empty() {
            m.static_row = Some(st::RowUpdate {
                clustering: Vec::new(),
                liveness: None,
                deletion: None,
                cells: static_cells,
            });
        }
        let insert = matches!(
            self.plan.kind,
            WriteKind::Insert | WriteKind::InsertJson { .. }
        );
        let needs_row = insert || !regular_cells.is_empty();
        // A COMPACT STORAGE table stores a row under a clustering prefix when the write leaves
        // out trailing clustering columns (planning allowed it); other tables need them all.
        let prefix_row = t.is_compact() && !self.no_clustering;
        if !needs_row || (t.clustering_len() != 0 && !self.full_clustering && !prefix_row) {
            return Ok(());
        }
        let expires = if ttl > 0 {
            self.ctx.now_s + ttl as i64
        } else {
            0
        };
        // COMPACT STORAGE rows have no marker: they live through their cells (a dense table
        // with no declared value writes its hidden empty value).
        let liveness = (insert && !t.is_compact()).then_some(st::Liveness {
            timestamp_us: ts,
            ttl_s: ttl,
            expires_at_s: expires,
        });
        if insert {
            regular_cells.extend(self.hidden_compact_value());
        }
        let cl = if t.clustering_len() == 0 {
            vec![Vec::new()]
        } else {
            self.clusterings.clone()
        };
        let last = cl.len().saturating_sub(1);
        for (i, c) in cl.into_iter().enumerate() {
            // The last row takes the cells; only the others copy them.
            let cells = if i == last {
                std::mem::take(&mut regular_cells)
            } else {
                regular_cells.clone()
            };
            m.rows.push(st::RowUpdate {
                clustering: c,
                liveness,
                deletion: None,
                cells,
            });
        }
        Ok(())
    }
}

fn slice_bounds(
    prefix: &[Bytes],
    slice: &[(Operator, Term)],
    t: &TableMeta,
    binds: &Binds<'_>,
) -> ExecResult<(st::ClusteringBound, st::ClusteringBound)> {
    let c = t
        .clustering()
        .nth(prefix.len())
        .ok_or_else(|| ExecError::Invalid("bad range deletion".into()))?;
    let mut start = st::ClusteringBound {
        prefix: prefix.to_vec(),
        kind: st::BoundKind::Inclusive,
    };
    let mut end = st::ClusteringBound {
        prefix: prefix.to_vec(),
        kind: st::BoundKind::Inclusive,
    };
    for (op, term) in slice {
        let Bound::Value(v) = values::eval(term, &c.cql_type, &c.name, binds)? else {
            return invalid(format!(
                "Invalid null value in condition for column {}",
                c.name
            ));
        };
        let mut p = prefix.to_vec();
        p.push(v);
        let kind = if matches!(op, Operator::Gte | Operator::Lte) {
            st::BoundKind::Inclusive
        } else {
            st::BoundKind::Exclusive
        };
        if matches!(op, Operator::Gt | Operator::Gte) {
            start = st::ClusteringBound { prefix: p, kind };
        } else {
            end = st::ClusteringBound { prefix: p, kind };
        }
    }
    if c.order == helenus_schema::ClusteringOrder::Desc {
        return Ok((end, start));
    }
    Ok((start, end))
}

/// A non-compound COMPACT STORAGE table stores its one clustering value as the cell name, which
/// cannot be empty: Cassandra refuses such a row when it is written.
fn check_compact_clustering(
    t: &TableMeta,
    kind: &WriteKind,
    ck_lists: &[Vec<Bytes>],
) -> ExecResult<()> {
    let compound = t.flags.iter().any(|f| f == "compound");
    if matches!(kind, WriteKind::Delete) || compound || !t.is_compact() || t.clustering_len() != 1 {
        return Ok(());
    }
    if let (Some(values), Some(c)) = (ck_lists.first(), t.clustering().next()) {
        if values.iter().any(|v| v.is_empty()) {
            return invalid(format!("Invalid empty or null value for column {}", c.name));
        }
    }
    Ok(())
}
