//! Lightweight transactions on one node: the condition is read and the write applied under one
//! lock, so conditional writes are linearizable with each other. (Across nodes this becomes Paxos.)

use super::error::{ExecError, ExecResult};
use super::select::SelectOutput;
use super::values::{self, Binds, Bound};
use super::write::{mutations, WriteContext, WritePlan};
use super::Outcome;
use crate::node::NodeState;
use bytes::Bytes;
use helenus_cql::ast::{Operator, RelationValue, WriteCondition};
use helenus_storage as st;
use helenus_types::{CqlType, CqlValue, NativeType};

static LWT_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn applied_column() -> (String, CqlType) {
    (
        "[applied]".to_string(),
        CqlType::Native(NativeType::Boolean),
    )
}

pub async fn execute(
    node: &NodeState,
    plan: &WritePlan,
    binds: &Binds<'_>,
    ctx: &WriteContext<'_>,
) -> ExecResult<Outcome> {
    let _guard = LWT_LOCK.lock().await;
    let t = &plan.table;
    let muts = mutations(plan, binds, ctx)?;
    let [m] = muts.as_slice() else {
        return Err(ExecError::Invalid(
            "IN on the partition key is not supported with conditional updates".into(),
        ));
    };
    // The current row (or static row) the condition is about.
    let clustering = m
        .rows
        .first()
        .map(|r| r.clustering.clone())
        .unwrap_or_default();
    let slices = if clustering.is_empty() {
        Vec::new()
    } else {
        let b = |kind| st::ClusteringBound {
            prefix: clustering.clone(),
            kind,
        };
        vec![(b(st::BoundKind::Inclusive), b(st::BoundKind::Inclusive))]
    };
    let q = st::ReadQuery {
        partitions: st::PartitionRange::Single {
            key: m.key.clone(),
            token: m.token,
        },
        slices,
        reversed: false,
        row_limit: Some(1),
        per_partition_limit: None,
        partition_limit: None,
        now_s: ctx.now_s,
    };
    let current = node
        .engine
        .read(*t.id.as_bytes(), &q)
        .map_err(|e| ExecError::Server(e.to_string()))?;
    let layout = super::rows::ColumnLayout::new(t);
    let mut rows = Vec::new();
    for p in &current.partitions {
        super::rows::partition_rows(t, &layout, p, &mut rows);
    }
    let existing = rows.into_iter().next();
    let exists = existing
        .as_ref()
        .is_some_and(|r| clustering.is_empty() || !r.clustering.is_empty());
    let (applied, shown): (bool, Vec<usize>) = match &plan.condition {
        Some(WriteCondition::NotExists) => (!exists, (0..t.columns.len()).collect()),
        Some(WriteCondition::Exists) => (exists, (0..t.columns.len()).collect()),
        Some(WriteCondition::Columns(conds)) => {
            let mut ok = exists;
            let mut shown = Vec::new();
            for c in conds {
                let i = t.column_index(&c.column.name).ok_or_else(|| {
                    ExecError::Invalid(format!("Undefined column name {}", c.column.name))
                })?;
                shown.push(i);
                let col = &t.columns[i];
                let cell = existing
                    .as_ref()
                    .and_then(|r| r.cells.get(i).cloned().flatten());
                let RelationValue::Single(term) = &c.value else {
                    ok = false;
                    continue;
                };
                let want = values::eval(term, &col.cql_type, &col.name, binds)?;
                let pass = match (&want, &cell) {
                    (Bound::Null, None) => matches!(c.op, Operator::Eq),
                    (Bound::Null, Some(_)) => matches!(c.op, Operator::Neq),
                    (Bound::Value(w), Some(v)) => {
                        let o = helenus_types::compare_serialized(&col.cql_type, v, w);
                        match c.op {
                            Operator::Eq => o.is_eq(),
                            Operator::Neq => !o.is_eq(),
                            Operator::Lt => o.is_lt(),
                            Operator::Lte => o.is_le(),
                            Operator::Gt => o.is_gt(),
                            Operator::Gte => o.is_ge(),
                            _ => false,
                        }
                    }
                    (Bound::Value(_), None) => matches!(c.op, Operator::Neq),
                    (Bound::Unset, _) => false,
                };
                // A missing row makes conditions on its columns compare against null.
                ok = if exists {
                    ok && pass
                } else {
                    pass && matches!(want, Bound::Null)
                };
            }
            (ok, shown)
        }
        None => (true, Vec::new()),
    };
    if applied {
        for m in muts {
            node.engine
                .apply(m)
                .await
                .map_err(|e| ExecError::Server(e.to_string()))?;
        }
    }
    let mut columns = vec![applied_column()];
    let mut row: Vec<Option<Bytes>> = vec![Some(values::serialize(&CqlValue::Boolean(applied)))];
    if !applied {
        if let Some(r) = &existing {
            for i in shown {
                columns.push((t.columns[i].name.clone(), t.columns[i].cql_type.clone()));
                row.push(r.cells.get(i).cloned().flatten());
            }
        }
    }
    Ok(Outcome::Rows {
        keyspace: t.keyspace.clone(),
        table: t.name.clone(),
        out: SelectOutput {
            columns,
            rows: vec![row],
            paging_state: None,
        },
    })
}
