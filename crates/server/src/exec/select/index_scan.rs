//! Reading a SELECT through a secondary index's table (helenus-storage's index.rs): the
//! entries of the restricted value in base-scan order, a batch at a time, and for each batch
//! only the base rows they name. Base rows are checked against every restriction by the
//! caller (execute.rs), the indexed one included: an entry a later write, deletion or expiry
//! made stale is dropped there, as Cassandra's legacy index drops it.
//!
//! Chosen instead of a token-range scan when the query scans the whole ring, on a node that
//! holds all its data alone (in a ring each node's index covers only its own replicas, and the
//! coordinator reads ranges from other nodes), with an `=` on a column an index table serves
//! and has finished building. A paging state is the position of the last row returned, which
//! is the position of its entry, so pages resume inside the index.

use super::{PartitionSelection, SelectPlan};
use crate::exec::error::ExecResult;
use crate::exec::paging::PagingState;
use crate::exec::values::{self, Binds, Bound};
use crate::node::NodeState;
use bytes::Bytes;
use helenus_cql::ast::{Operator, RelationValue};
use helenus_storage as st;

/// Entries read first when the page size is not known; each further read of the same page
/// doubles, up to the maximum, so a small page reads few stale entries and a long scan reads
/// few times.
const FIRST_BATCH_ENTRIES: usize = 128;
const MAX_BATCH_ENTRIES: usize = 4096;

/// Where a read through an index is: the value's partition in the index table and the last
/// entry read.
pub(super) struct IndexCursor {
    index_table: st::TableId,
    /// The indexed column (in the table's columns) and the value it is restricted to.
    column: usize,
    value: Bytes,
    after: Option<Vec<Bytes>>,
    batch: usize,
    done: bool,
}

/// The index that answers `plan`, when one does (see the module doc for when).
pub(super) fn choose(
    node: &NodeState,
    plan: &SelectPlan,
    binds: &Binds<'_>,
    resume: Option<&PagingState>,
) -> ExecResult<Option<IndexCursor>> {
    let whole_ring = matches!(
        plan.partitions,
        PartitionSelection::TokenRange {
            lower: None,
            upper: None
        }
    );
    if !whole_ring || plan.reversed || node.cluster().is_some() {
        return Ok(None);
    }
    let t = &plan.table;
    for f in &plan.filters {
        let (Operator::Eq, RelationValue::Single(term)) = (f.op, &f.value) else {
            continue;
        };
        let Some(index_table) = crate::index_storage::built_index_table(&node.engine, t, f.column)
        else {
            continue;
        };
        let Some(c) = t.columns.get(f.column) else {
            continue;
        };
        // A null, unset or empty value is left to the scan: its errors and its (empty) matches.
        let Bound::Value(value) = values::eval(term, &c.cql_type, &c.name, binds)? else {
            continue;
        };
        if value.is_empty() {
            continue;
        }
        return Ok(Some(IndexCursor {
            index_table,
            column: f.column,
            value,
            after: resume.map(|r| st::entry_clustering(r.token, &r.partition_key, &r.clustering)),
            batch: FIRST_BATCH_ENTRIES,
            done: false,
        }));
    }
    Ok(None)
}

/// One entry read: the base row it names, and when it was written.
pub(super) struct Entry {
    pub(super) token: i64,
    pub(super) key: Bytes,
    pub(super) clustering: Vec<Bytes>,
    written_at_us: i64,
}

impl IndexCursor {
    /// Sizes the first read for a page of `rows` (one more, to tell whether another follows),
    /// so a page reads about the entries it returns.
    pub(super) fn expect_rows(&mut self, rows: usize) {
        self.batch = rows.saturating_add(1).clamp(1, MAX_BATCH_ENTRIES);
    }

    pub(super) fn done(&self) -> bool {
        self.done
    }

    /// The next entries, in scan order.
    pub(super) fn next_batch(&mut self, engine: &st::Engine, now_s: i64) -> ExecResult<Vec<Entry>> {
        if self.done {
            return Ok(Vec::new());
        }
        let q = st::ReadQuery {
            columns: None,
            partitions: st::value_partition(&self.value),
            slices: Vec::new(),
            reversed: false,
            row_limit: Some(self.batch),
            per_partition_limit: None,
            partition_limit: None,
            now_s,
            resume_after: self.after.clone(),
        };
        let result = engine.read(self.index_table, &q)?;
        let rows: Vec<st::LiveRow> = result.partitions.into_iter().flat_map(|p| p.rows).collect();
        self.done = rows.len() < self.batch;
        self.batch = (self.batch * 2).min(MAX_BATCH_ENTRIES);
        if let Some(last) = rows.last() {
            self.after = Some(last.clustering.clone());
        }
        Ok(rows
            .into_iter()
            .filter_map(|r| {
                let (token, key, clustering) = st::entry_target(&r.clustering)?;
                Some(Entry {
                    token,
                    key,
                    clustering,
                    written_at_us: r.row_timestamp_us?,
                })
            })
            .collect())
    }

    /// Deletes the entries of `group` (one base partition's) whose row `found` (the point
    /// reads of exactly those rows) lacks or holds with another value, so later queries do
    /// not read them again. Best effort: an entry left behind is filtered out again.
    pub(super) async fn purge_stale(
        &self,
        engine: &st::Engine,
        group: &[Entry],
        found: &[crate::exec::rows::Row],
        now_s: i64,
    ) {
        let stale: Vec<st::Mutation> = group
            .iter()
            .filter(|e| {
                !found.iter().any(|r| {
                    r.clustering == e.clustering
                        && r.cells.get(self.column).and_then(Option::as_ref) == Some(&self.value)
                })
            })
            .map(|e| {
                let entry = st::entry_clustering(e.token, &e.key, &e.clustering);
                st::stale_entry_deletion(
                    self.index_table,
                    &self.value,
                    entry,
                    e.written_at_us,
                    now_s,
                )
            })
            .collect();
        if !stale.is_empty() {
            if let Err(e) = engine.apply_batch(stale).await {
                tracing::debug!("stale index entries not deleted: {e}");
            }
        }
    }
}
