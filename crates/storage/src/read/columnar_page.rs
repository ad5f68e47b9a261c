//! Pages of a column scan in token order (issue 15): what a paged `SELECT a, b FROM t WHERE
//! token(k) > ? AND token(k) <= ?` over a columnar table reads (the Spark connector's scan),
//! resumable after the last partition a page returned.
//!
//! The token range is cut as `Engine::scan_columns` cuts it (columnar_scan.rs): plain row
//! groups no other source overlaps are read from their chunks (only the key streams and the
//! columns asked), every other token through the row path. The pieces are disjoint token spans,
//! visited in token order, so the rows come out in (token, key) order as a row scan's do.
//! For tables without clustering columns: one row per partition, so a page resumes after a
//! partition key.

use super::columnar_scan::{apply_restrictions, plain_groups, rows_batch, token_span, ColumnScan};
use crate::columnar::{Column, ScanRequest};
use crate::engine::Engine;
use crate::types::*;
use bytes::Bytes;
use std::sync::Arc;

/// Rows of one page, in (token, key) order.
#[derive(Debug, Clone, Default)]
pub struct ColumnPage {
    /// (token, partition key) of each row.
    pub keys: Vec<(i64, Bytes)>,
    /// One per `ColumnScan::columns`, each with one serialized value (or null) per row.
    pub cells: Vec<Vec<Option<Bytes>>>,
    /// Whether rows may follow this page in the range.
    pub more: bool,
}

impl ColumnPage {
    fn full(&self, limit: usize) -> bool {
        self.keys.len() >= limit
    }
}

impl Engine {
    /// Up to `limit` live rows of `scan`'s range after partition `after`, in token order; for
    /// tables without clustering columns.
    pub fn scan_column_page(
        &self,
        table: TableId,
        scan: &ColumnScan,
        after: Option<(i64, Bytes)>,
        limit: usize,
    ) -> Result<ColumnPage, StorageError> {
        let t = self.table(table)?;
        if !t.def.read().clustering.is_empty() {
            return Err(StorageError::InvalidRequest(
                "a column page is for tables without clustering columns".into(),
            ));
        }
        let mut page = ColumnPage {
            cells: vec![Vec::new(); scan.columns.len()],
            ..ColumnPage::default()
        };
        let Some((lo, hi)) = token_span(&scan.start, &scan.end)? else {
            return Ok(page);
        };
        let lo = after.as_ref().map_or(lo, |(tk, _)| lo.max(*tk));
        if lo > hi || limit == 0 {
            return Ok(page);
        }
        let pieces = plain_groups(&t, scan, lo, hi)?;
        for piece in pieces.in_order(lo, hi) {
            match piece {
                Piece::Group(si, g) => {
                    let Some(seg) = pieces.sstables.get(si).and_then(|s| s.segment()) else {
                        continue;
                    };
                    let req = ScanRequest {
                        columns: pieces.read_ids.clone(),
                        restrictions: Vec::new(),
                        keys: true,
                        metadata: false,
                    };
                    let b = seg.read_group(g, &req)?;
                    let Some(k) = b.keys else { continue };
                    let columns: Vec<Column> = b.columns.into_iter().map(|c| c.values).collect();
                    let mut selected = None;
                    apply_restrictions(&mut selected, b.rows, &columns, &pieces.read_ids, scan);
                    let key_type = seg.key_type();
                    for i in 0..b.rows {
                        let key = k.keys.serialized(i, key_type).map(Bytes::from);
                        let (Some(token), Some(key)) = (k.tokens.int(i), key) else {
                            continue;
                        };
                        let inside = token >= lo && token <= hi;
                        let past = after.as_ref().is_none_or(|a| (token, &key) > (a.0, &a.1));
                        if !inside || !past || selected.as_ref().is_some_and(|s| !s.get(i)) {
                            continue;
                        }
                        push_row(&mut page, token, key, &columns, scan, i);
                        if page.full(limit) {
                            page.more = true;
                            return Ok(page);
                        }
                    }
                }
                Piece::Gap(a, b) => {
                    let start = match &after {
                        Some((tk, key)) if *tk >= a => PartitionBound::Key {
                            token: *tk,
                            key: key.clone(),
                            inclusive: false,
                        },
                        _ => PartitionBound::Token {
                            token: a,
                            inclusive: true,
                        },
                    };
                    let want = limit - page.keys.len();
                    let q = ReadQuery {
                        partitions: PartitionRange::Range {
                            start,
                            end: PartitionBound::Token {
                                token: b,
                                inclusive: true,
                            },
                        },
                        slices: Vec::new(),
                        reversed: false,
                        row_limit: None,
                        per_partition_limit: None,
                        // Partitions a restriction leaves out still count here: a short page
                        // only says "more may follow", as a row scan's pages do.
                        partition_limit: Some(want),
                        now_s: scan.now_s,
                        resume_after: None,
                        columns: Some(Arc::from(pieces.sorted_ids.as_slice())),
                    };
                    let r = self.read(table, &q)?;
                    let batch = rows_batch(&r.partitions, &pieces.read_ids, scan);
                    let mut i = 0;
                    for p in &r.partitions {
                        for _ in &p.rows {
                            if batch.is_selected(i) {
                                push_row(
                                    &mut page,
                                    p.token,
                                    p.key.clone(),
                                    &batch.columns,
                                    scan,
                                    i,
                                );
                            }
                            i += 1;
                        }
                    }
                    if r.partitions.len() >= want {
                        page.more = true;
                        return Ok(page);
                    }
                }
            }
        }
        Ok(page)
    }
}

/// One piece of a scanned range: a plain row group (SSTable index, group) or a token span the
/// row path reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece {
    Group(usize, usize),
    Gap(i64, i64),
}

/// Appends row `i` of `columns` (in `read_ids` order: the scan's columns first).
fn push_row(
    page: &mut ColumnPage,
    token: i64,
    key: Bytes,
    columns: &[Column],
    scan: &ColumnScan,
    i: usize,
) {
    page.keys.push((token, key));
    let mut buf = Vec::new();
    for ((out, col), spec) in page.cells.iter_mut().zip(columns).zip(&scan.columns) {
        buf.clear();
        let v = col
            .serialize_into(i, spec.value_type, &mut buf)
            .then(|| Bytes::copy_from_slice(&buf));
        out.push(v);
    }
}
