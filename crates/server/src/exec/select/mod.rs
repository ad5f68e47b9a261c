//! SELECT: restrictions analysed at prepare time (partition keys, clustering slices, filters) with
//! Cassandra's rules for when ALLOW FILTERING is required; execution over the storage engine or the
//! system tables, with paging.
//!
//! This module owns the plan and output types shared by the submodules and by other executors:
//! `plan` builds a `SelectPlan` (one function per phase), `restrictions` holds the helpers for
//! reading WHERE terms and index support, `execute` runs a plan over `scan` (the row source over
//! storage or the system tables) and `filter` (row-by-row restrictions), `order` does ANN ranking,
//! IN merging and GROUP BY, and `json` rewrites a result for SELECT JSON.

use super::selectors::Compiled;
use bytes::Bytes;
use helenus_cql::ast::{Operator, RelationValue, Term};
use helenus_schema::TableMeta;
use helenus_types::CqlType;
use std::cmp::Ordering;
use std::sync::Arc;

mod columnar;
mod execute;
mod filter;
mod index_scan;
mod json;
mod order;
mod plan;
mod projection;
mod restrictions;
mod scan;
mod validate;

pub use crate::exec::key_values::ValuesOf;
pub use execute::{clustering_slices, execute};
pub use plan::plan;

#[derive(Debug, Clone)]
pub struct Filter {
    pub column: usize,
    pub op: Operator,
    pub value: RelationValue,
    pub key: Option<Term>,
}

#[derive(Debug, Clone)]
pub enum PartitionSelection {
    /// Every partition key column restricted by = or IN.
    Keys(Vec<ValuesOf>),
    /// `token(pk) > x AND token(pk) <= y` (either side optional), or a full scan.
    TokenRange {
        lower: Option<(Term, bool)>,
        upper: Option<(Term, bool)>,
    },
}

/// One side of a clustering slice: the bound's values and whether it is inclusive.
pub type SliceBound = Option<(Vec<Term>, bool)>;
/// One side of a token range: the token term and whether it is inclusive.
pub type TokenBound = Option<(Term, bool)>;

#[derive(Debug, Clone)]
pub struct SelectPlan {
    pub table: Arc<TableMeta>,
    pub compiled: Arc<Compiled>,
    /// A projection with bind markers, compiled again with each execution's values.
    pub bound_projection: Option<helenus_cql::ast::Projection>,
    pub partitions: PartitionSelection,
    /// = / IN restrictions on a clustering prefix.
    pub clustering_eq: Vec<ValuesOf>,
    /// A slice on the column after the prefix: (lower, upper) with inclusivity; multi-column
    /// slices carry several terms.
    pub clustering_slice: Option<(SliceBound, SliceBound)>,
    pub filters: Vec<Filter>,
    pub limit: Option<Term>,
    pub per_partition_limit: Option<Term>,
    pub reversed: bool,
    pub distinct: bool,
    pub json: bool,
    pub group_by: usize,
    /// `GROUP BY ..., floor(c, 1h)`: groups by the function's value of the last grouped column.
    pub group_fn: Option<GroupFn>,
    /// With `IN` on the partition key and ORDER BY, rows of the partitions are merged by these
    /// (column index, descending) keys, as Cassandra sorts them in memory.
    pub merge_order: Vec<(usize, bool)>,
    /// `ORDER BY v ANN OF [...]`: the vector column, the query vector and the similarity
    /// function of its storage-attached index.
    pub ann: Option<(usize, Term, &'static str)>,
    /// A token range given together with partition key values: checked on each partition.
    pub token_filter: (TokenBound, TokenBound),
    /// Multi-column relations evaluated on each row (tuple order is the types' natural order).
    pub multi_filters: Vec<MultiFilter>,
}

/// A function of the last GROUP BY column, compiled as a selector.
#[derive(Debug, Clone)]
pub struct GroupFn {
    pub sel: crate::exec::selectors::Sel,
    pub ty: CqlType,
}

/// `(c1, c2) op (v1, v2)` / `(c1, c2) IN (...)` checked row by row.
#[derive(Debug, Clone)]
pub struct MultiFilter {
    pub columns: Vec<usize>,
    pub op: Operator,
    pub value: RelationValue,
}

/// What a SELECT execution returns: result columns, rows, and where the next page starts.
pub struct SelectOutput {
    pub columns: Arc<[(String, CqlType)]>,
    /// `columns` as a ROWS result's column specs, when the plan encoded them once.
    pub wire_columns: Option<Arc<helenus_protocol::EncodedColumnSpecs>>,
    pub rows: Vec<Vec<Option<Bytes>>>,
    pub paging_state: Option<Bytes>,
    /// Rows already in their wire form (a column scan's), in place of `rows`: how many, and
    /// their cells as a ROWS result body holds them.
    pub encoded: Option<(u32, Bytes)>,
}

impl SelectOutput {
    pub fn row_count(&self) -> usize {
        match &self.encoded {
            Some((count, _)) => *count as usize,
            None => self.rows.len(),
        }
    }

    /// The rows as values, decoding wire-form rows (for callers that look at them).
    pub fn cell_rows(&self) -> Vec<Vec<Option<Bytes>>> {
        let Some((count, body)) = &self.encoded else {
            return self.rows.clone();
        };
        let mut cells = helenus_protocol::Reader::new(body.clone());
        let width = self.columns.len();
        let mut rows = Vec::with_capacity(*count as usize);
        for _ in 0..*count {
            let row: Result<Vec<_>, _> = (0..width).map(|_| cells.read_bytes()).collect();
            match row {
                Ok(row) => rows.push(row),
                // The body is the server's own writing; a short one ends the rows it holds.
                Err(_) => break,
            }
        }
        rows
    }
}

/// Compares two clustering prefixes with the table's comparators (for paging in a partition).
pub fn compare_clustering(t: &TableMeta, a: &[Bytes], b: &[Bytes]) -> Ordering {
    for (c, (x, y)) in t.clustering().zip(a.iter().zip(b.iter())) {
        let o = helenus_types::compare_serialized(&c.cql_type, x, y);
        let o = if c.order == helenus_schema::ClusteringOrder::Desc {
            o.reverse()
        } else {
            o
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}
