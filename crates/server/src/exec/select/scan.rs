//! Row sources for SELECT: partitions by key, token-range scans over the storage engine (read in
//! batches of partitions), and the computed rows of system tables. All yield rows in the order a
//! client sees them and resume after a paging state.

use super::index_scan::{self, IndexCursor};
use super::{
    clustering_slices, compare_clustering, PartitionSelection, SelectPlan, TokenBound, ValuesOf,
};
use crate::exec::error::{ExecError, ExecResult};
use crate::exec::key_values::{cartesian, check_key_components, expand_values};
use crate::exec::paging::PagingState;
use crate::exec::rows::{self, ColumnLayout, Row};
use crate::exec::tombstones::TombstoneTally;
use crate::exec::values::{self, Binds, Bound};
use crate::node::NodeState;
use bytes::Bytes;
use helenus_schema::TableKind;
use helenus_storage as st;
use helenus_types::CqlType;
use std::collections::VecDeque;

/// Partitions read per storage call in a range scan.
const RANGE_BATCH_PARTITIONS: usize = 128;

enum Mode {
    Keys {
        keys: VecDeque<(i64, Bytes)>,
    },
    Range {
        next_start: Option<(i64, Bytes)>,
        first: bool,
        lower: Option<(i64, bool)>,
        upper: Option<(i64, bool)>,
        done: bool,
    },
    System,
    /// The entries of a secondary index, then the base rows they name (index_scan.rs).
    Index(IndexCursor),
}

pub struct RowSource<'a> {
    node: &'a NodeState,
    plan: &'a SelectPlan,
    layout: ColumnLayout,
    slices: Vec<(st::ClusteringBound, st::ClusteringBound)>,
    mode: Mode,
    buffered: VecDeque<Row>,
    resume: Option<PagingState>,
    now_s: i64,
    /// The request's consistency level, carried to the proxy with every read.
    consistency: helenus_coordinator::ConsistencyLevel,
    /// Rows a storage read needs at most (see `limit_rows_per_partition_read`).
    row_hint: Option<usize>,
    /// A partition a read stopped inside (token, key, last row read): it is read alone from
    /// after that row before the scan goes on after it.
    inside: Option<(i64, Bytes, Vec<Bytes>)>,
    /// Tombstones this page's storage reads scanned (for Cassandra's tombstone thresholds).
    tombstones: TombstoneTally,
    /// The non-key columns storage copies into rows (see projection.rs); None = all.
    columns: Option<std::sync::Arc<[u32]>>,
}

pub(super) fn token_value(
    t: &helenus_schema::TableMeta,
    term: &helenus_cql::ast::Term,
    binds: &Binds<'_>,
) -> ExecResult<i64> {
    // `token(p) > token(1)`: the token of the given partition key values.
    if let helenus_cql::ast::Term::FunctionCall { name, args } = term {
        if name.name.name.eq_ignore_ascii_case("token") {
            let pk: Vec<_> = t
                .columns
                .iter()
                .filter(|c| c.kind == helenus_schema::ColumnKind::PartitionKey)
                .collect();
            if pk.len() != args.len() {
                return Err(ExecError::Invalid(format!(
                    "Invalid number of arguments in call to function system.token: {} required but {} provided",
                    pk.len(),
                    args.len()
                )));
            }
            let mut parts = Vec::with_capacity(args.len());
            for (c, a) in pk.iter().zip(args) {
                match values::eval(a, &c.cql_type, &c.name, binds)? {
                    Bound::Value(b) => parts.push(b),
                    _ => return Err(ExecError::Invalid("Invalid null token value".into())),
                }
            }
            let refs: Vec<&[u8]> = parts.iter().map(|b| b.as_ref()).collect();
            return Ok(helenus_types::murmur3_token(&crate::keys::partition_key(
                &refs,
            )));
        }
    }
    let ty = CqlType::Native(helenus_types::NativeType::Bigint);
    match values::eval(term, &ty, "partition key token", binds)? {
        Bound::Value(b) => {
            Ok(i64::from_be_bytes(b.as_ref().try_into().map_err(|_| {
                ExecError::Invalid("Invalid token value".into())
            })?))
        }
        _ => Err(ExecError::Invalid("Invalid null token value".into())),
    }
}

/// The rows of a system table, computed from the node's state and ordered as a scan of a stored
/// table would return them (token, key, clustering), after the last row returned if resuming.
fn system_rows(
    node: &NodeState,
    t: &helenus_schema::TableMeta,
    resume: Option<&PagingState>,
) -> VecDeque<Row> {
    let mut buffered = VecDeque::new();
    let all = crate::system::rows_of(node, t);
    let pk_idx: Vec<usize> = t
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.kind == helenus_schema::ColumnKind::PartitionKey)
        .map(|(i, _)| i)
        .collect();
    let ck_idx: Vec<usize> = t
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.kind == helenus_schema::ColumnKind::Clustering)
        .map(|(i, _)| i)
        .collect();
    for cells in all {
        let parts: Vec<&[u8]> = pk_idx
            .iter()
            .map(|&i| cells.get(i).and_then(|c| c.as_deref()).unwrap_or(&[]))
            .collect();
        let partition_key = crate::keys::partition_key(&parts);
        let token = helenus_types::murmur3_token(&partition_key);
        let clustering = ck_idx
            .iter()
            .map(|&i| cells.get(i).cloned().flatten().unwrap_or_default())
            .collect();
        let n = cells.len();
        buffered.push_back(Row {
            cells,
            meta: vec![None; n],
            element_meta: vec![None; n],
            token,
            partition_key,
            clustering,
        });
    }
    // Ordered as a scan of a stored table would return them: token, key, clustering.
    buffered.make_contiguous().sort_by(|a, b| {
        a.token
            .cmp(&b.token)
            .then_with(|| a.partition_key.cmp(&b.partition_key))
            .then_with(|| compare_clustering(t, &a.clustering, &b.clustering))
    });
    if let Some(r) = resume {
        // Skip up to and including the last row returned.
        while let Some(row) = buffered.pop_front() {
            if row.partition_key == r.partition_key && row.clustering == r.clustering {
                break;
            }
        }
    }
    buffered
}

/// Reading the partitions named by partition key values (from the resumed key, if any).
fn key_mode(
    t: &helenus_schema::TableMeta,
    values_of: &[ValuesOf],
    binds: &Binds<'_>,
    resume: Option<&PagingState>,
) -> ExecResult<Mode> {
    let pk: Vec<&helenus_schema::ColumnMeta> = t.partition_key().collect();
    let mut lists = Vec::new();
    for (c, v) in pk.iter().zip(values_of) {
        lists.push(expand_values(v, &c.cql_type, &c.name, binds)?);
    }
    check_key_components(&lists)?;
    let mut keys: VecDeque<(i64, Bytes)> = cartesian(&lists, "partition key")?
        .into_iter()
        .map(|comps| {
            let refs: Vec<&[u8]> = comps.iter().map(|b| b.as_ref()).collect();
            let key = crate::keys::partition_key(&refs);
            (helenus_types::murmur3_token(&key), key)
        })
        .collect();
    if let Some(r) = resume {
        while keys.front().is_some_and(|(_, k)| *k != r.partition_key) {
            keys.pop_front();
        }
    }
    Ok(Mode::Keys { keys })
}

/// Scanning a token range (from the resumed partition, if any).
fn range_mode(
    table: &helenus_schema::TableMeta,
    lower: &TokenBound,
    upper: &TokenBound,
    binds: &Binds<'_>,
    resume: Option<&PagingState>,
) -> ExecResult<Mode> {
    let lower = lower
        .as_ref()
        .map(|(term, inc)| token_value(table, term, binds).map(|v| (v, *inc)))
        .transpose()?;
    let upper = upper
        .as_ref()
        .map(|(term, inc)| token_value(table, term, binds).map(|v| (v, *inc)))
        .transpose()?;
    Ok(Mode::Range {
        next_start: resume.map(|r| (r.token, r.partition_key.clone())),
        first: true,
        lower,
        upper,
        done: false,
    })
}

impl<'a> RowSource<'a> {
    /// A partition's static row stands alone only when the query selects whole partitions.
    fn statics_alone(&self) -> bool {
        self.plan.clustering_eq.is_empty() && self.plan.clustering_slice.is_none()
    }

    pub fn new(
        node: &'a NodeState,
        plan: &'a SelectPlan,
        binds: &Binds<'_>,
        resume: Option<&PagingState>,
        (now_s, consistency): (i64, helenus_coordinator::ConsistencyLevel),
    ) -> ExecResult<Self> {
        let t = &plan.table;
        let (mode, buffered) = if t.kind != TableKind::User {
            (Mode::System, system_rows(node, t, resume))
        } else {
            let mode = match &plan.partitions {
                PartitionSelection::Keys(values_of) => key_mode(t, values_of, binds, resume)?,
                PartitionSelection::TokenRange { lower, upper } => {
                    match index_scan::choose(node, plan, binds, resume)? {
                        Some(cursor) => Mode::Index(cursor),
                        None => range_mode(t, lower, upper, binds, resume)?,
                    }
                }
            };
            (mode, VecDeque::new())
        };
        // A range page that stopped inside a partition resumes inside it; key lists resume
        // through their key list (the resumed key is read from after the last row).
        let inside = match (&mode, resume) {
            (Mode::Range { .. }, Some(r)) if !r.clustering.is_empty() => {
                Some((r.token, r.partition_key.clone(), r.clustering.clone()))
            }
            _ => None,
        };
        let slices = clustering_slices(plan, binds)?;
        // `c IN ()` selects no clustering prefix at all; no slices would mean whole partitions.
        let mode =
            if slices.is_empty() && !plan.clustering_eq.is_empty() && !matches!(mode, Mode::System)
            {
                Mode::Keys {
                    keys: VecDeque::new(),
                }
            } else {
                mode
            };
        // An index scan checks base rows against restrictions it resolved itself: it reads
        // them whole.
        let columns = match mode {
            Mode::Keys { .. } | Mode::Range { .. } => super::projection::read_columns(plan),
            Mode::Index(_) | Mode::System => None,
        };
        let layout = ColumnLayout::new(t).narrowed_to(columns.as_deref());
        Ok(RowSource {
            columns,
            inside,
            node,
            plan,
            layout: if super::projection::reads_cell_meta(plan) {
                layout
            } else {
                layout.without_cell_meta()
            },
            slices,
            mode,
            buffered,
            resume: resume.cloned(),
            now_s,
            consistency,
            row_hint: None,
            tombstones: TombstoneTally::default(),
        })
    }

    /// Lets storage reads stop after `n` rows: storage then reads only the row-index blocks of
    /// a wide partition that hold them, and a range scan stops inside a partition (the next
    /// read resumes there). Callers promise every row counts toward what they need (no
    /// filters, no DISTINCT); a page resumed inside a partition reads from after its last row,
    /// so leading rows are not dropped.
    pub fn limit_rows_per_partition_read(&mut self, n: usize) {
        self.row_hint = Some(n);
    }

    fn query(
        &self,
        partitions: st::PartitionRange,
        partition_limit: Option<usize>,
        resume_after: Option<Vec<Bytes>>,
    ) -> st::ReadQuery {
        st::ReadQuery {
            columns: self.columns.clone(),
            partitions,
            slices: self.slices.clone(),
            reversed: self.plan.reversed,
            row_limit: self.row_hint,
            per_partition_limit: None,
            partition_limit,
            now_s: self.now_s,
            resume_after,
        }
    }

    /// One storage read of this page, within what is left of the tombstone failure threshold.
    async fn read(&mut self, q: &st::ReadQuery) -> ExecResult<st::ReadResult> {
        let cfg = &self.node.config;
        let threshold = self
            .tombstones
            .threshold_left(cfg.tombstone_failure_threshold);
        let result = self
            .node
            .proxy()
            .read(
                *self.plan.table.id.as_bytes(),
                q,
                self.consistency,
                threshold,
            )
            .await;
        let single_key = match &q.partitions {
            st::PartitionRange::Single { key, .. } => Some(key),
            st::PartitionRange::Range { .. } => None,
        };
        self.tombstones.note(result, cfg.listen_address, single_key)
    }

    /// The rows of one partition, after `resume_after` (in the read's order) when given;
    /// returns where the read stopped inside it (`cut_at`).
    async fn read_partition(
        &mut self,
        token: i64,
        key: Bytes,
        resume_after: Option<Vec<Bytes>>,
        rows: &mut Vec<Row>,
    ) -> ExecResult<Option<(i64, Bytes, Vec<Bytes>)>> {
        let q = self.query(
            st::PartitionRange::Single { key, token },
            None,
            resume_after,
        );
        let resumed = q.resume_after.is_some();
        let result = self.read(&q).await?;
        let cut = self.cut_at(&result);
        // Read again from inside, a partition that had rows has no static row to give alone
        // (its static values came with those rows).
        let statics_alone = self.statics_alone() && !resumed;
        reserve_rows(rows, &result);
        for p in result.partitions {
            rows::partition_rows(&self.plan.table, &self.layout, p, statics_alone, rows);
        }
        Ok(cut)
    }

    /// Where a read stopped when it used up its row limit: the last partition and its last row
    /// (the read may have stopped inside it). Rows are counted as storage counts them: a
    /// partition with only static data counts one.
    fn cut_at(&self, result: &st::ReadResult) -> Option<(i64, Bytes, Vec<Bytes>)> {
        if !self.used_row_limit(result) {
            return None;
        }
        let last = result.partitions.last()?;
        let row = last.rows.last()?;
        Some((last.token, last.key.clone(), row.clustering.clone()))
    }

    /// Whether a read returned as many rows as its limit: partitions may follow it even when
    /// it returned fewer partitions than asked for.
    fn used_row_limit(&self, result: &st::ReadResult) -> bool {
        let used: usize = result.partitions.iter().map(|p| p.rows.len().max(1)).sum();
        self.row_hint.is_some_and(|limit| used >= limit)
    }

    /// The CQL rows of a storage read's partitions.
    fn push_rows(&self, result: st::ReadResult, rows: &mut Vec<Row>) {
        reserve_rows(rows, &result);
        for p in result.partitions {
            rows::partition_rows(
                &self.plan.table,
                &self.layout,
                p,
                self.statics_alone(),
                rows,
            );
        }
    }

    /// Drops rows of the resumed partition up to the paging position. A partition's rows are
    /// contiguous and in the read's order, so those are one run from its first row: the rows
    /// after the position are not compared (a page resumed inside a partition, read from the
    /// position on, compares one row).
    fn trim_resumed(&mut self, rows: &mut Vec<Row>) {
        let Some(r) = self.resume.take() else {
            return;
        };
        let Some(first) = rows
            .iter()
            .position(|row| row.partition_key == r.partition_key)
        else {
            return;
        };
        let t = &self.plan.table;
        let reached = |row: &Row| {
            if r.clustering.is_empty() {
                return true;
            }
            let o = compare_clustering(t, &row.clustering, &r.clustering);
            if self.plan.reversed {
                o.is_ge()
            } else {
                o.is_le()
            }
        };
        let run = rows
            .get(first..)
            .unwrap_or_default()
            .iter()
            .take_while(|row| row.partition_key == r.partition_key && reached(row))
            .count();
        rows.drain(first..first + run);
    }

    async fn fill(&mut self) -> ExecResult<bool> {
        loop {
            let mut rows = Vec::new();
            if let Some((token, key, after)) = self.inside.take() {
                self.inside = self
                    .read_partition(token, key.clone(), Some(after), &mut rows)
                    .await?;
                if self.inside.is_none() {
                    // The range goes on after this partition.
                    if let Mode::Range {
                        next_start, first, ..
                    } = &mut self.mode
                    {
                        *next_start = Some((token, key));
                        *first = false;
                    }
                }
            } else {
                match &mut self.mode {
                    Mode::System => return Ok(false),
                    Mode::Keys { keys } => {
                        let Some((token, key)) = keys.pop_front() else {
                            return Ok(false);
                        };
                        let after = self
                            .resume
                            .as_ref()
                            .filter(|r| r.partition_key == key && !r.clustering.is_empty())
                            .map(|r| r.clustering.clone());
                        self.inside = self.read_partition(token, key, after, &mut rows).await?;
                    }
                    Mode::Range { done: true, .. } => return Ok(false),
                    // Scans' futures are boxed so that a point read's (the common case) stays small.
                    Mode::Range { .. } => Box::pin(self.read_range_batch(&mut rows)).await?,
                    Mode::Index(cursor) if cursor.done() => return Ok(false),
                    Mode::Index(_) => Box::pin(self.read_index_batch(&mut rows)).await?,
                }
            }
            self.trim_resumed(&mut rows);
            if !rows.is_empty() {
                // Called with nothing buffered: the read's rows become the buffer as they are,
                // not copied into it.
                if self.buffered.is_empty() {
                    self.buffered = VecDeque::from(rows);
                } else {
                    self.buffered.extend(rows);
                }
                return Ok(true);
            }
        }
    }

    /// The next batch of partitions of a token-range scan, up to the row limit.
    async fn read_range_batch(&mut self, rows: &mut Vec<Row>) -> ExecResult<()> {
        let Mode::Range {
            next_start,
            first,
            lower,
            upper,
            ..
        } = &mut self.mode
        else {
            return Ok(());
        };
        let start = match (next_start.clone(), *first) {
            // Resuming after a partition's last row: it is read again and trimmed (it may have
            // a static row alone to give).
            (Some((token, key)), true) => st::PartitionBound::Key {
                token,
                key,
                inclusive: true,
            },
            (Some((token, key)), false) => st::PartitionBound::Key {
                token,
                key,
                inclusive: false,
            },
            (None, _) => match lower {
                Some((token, inclusive)) => st::PartitionBound::Token {
                    token: *token,
                    inclusive: *inclusive,
                },
                None => st::PartitionBound::Unbounded,
            },
        };
        let end = match upper {
            Some((token, inclusive)) => st::PartitionBound::Token {
                token: *token,
                inclusive: *inclusive,
            },
            None => st::PartitionBound::Unbounded,
        };
        *first = false;
        let q = self.query(
            st::PartitionRange::Range { start, end },
            Some(RANGE_BATCH_PARTITIONS),
            None,
        );
        let result = self.read(&q).await?;
        self.inside = self.cut_at(&result);
        let cut = self.used_row_limit(&result);
        let n = result.partitions.len();
        if let Mode::Range {
            next_start, done, ..
        } = &mut self.mode
        {
            if let Some(last) = result.partitions.last() {
                *next_start = Some((last.token, last.key.clone()));
            }
            // A read cut by the row limit may have left rows of its last partition (read next
            // through `inside`) and partitions after it.
            if n < RANGE_BATCH_PARTITIONS && !cut {
                *done = true;
            }
        }
        self.push_rows(result, rows);
        Ok(())
    }

    /// The base rows of the next batch of index entries: one read per base partition, of the
    /// rows the entries name (or, under clustering restrictions, of the restricted slices, kept
    /// only where an entry names the row).
    async fn read_index_batch(&mut self, rows: &mut Vec<Row>) -> ExecResult<()> {
        let Mode::Index(cursor) = &mut self.mode else {
            return Ok(());
        };
        let entries = cursor.next_batch(&self.node.engine, self.now_s)?;
        let mut rest = entries.as_slice();
        while let Some(first) = rest.first() {
            let (token, key) = (first.token, first.key.clone());
            let n = rest.iter().take_while(|e| e.key == key).count();
            let (group, after) = rest.split_at(n);
            rest = after;
            let named: std::collections::HashSet<&Vec<Bytes>> =
                group.iter().map(|e| &e.clustering).collect();
            // Under clustering restrictions the read is of their slices, so a row it lacks
            // may still be live: only point reads tell which entries are stale.
            let points = self.slices.is_empty();
            let slices = match (points, self.plan.table.clustering().next()) {
                (true, Some(_)) => group
                    .iter()
                    .map(|e| {
                        let at = |kind| st::ClusteringBound {
                            prefix: e.clustering.clone(),
                            kind,
                        };
                        (at(st::BoundKind::Inclusive), at(st::BoundKind::Inclusive))
                    })
                    .collect(),
                _ => self.slices.clone(),
            };
            let q = st::ReadQuery {
                columns: None,
                slices,
                row_limit: None,
                ..self.query(
                    st::PartitionRange::Single {
                        key: key.clone(),
                        token,
                    },
                    None,
                    None,
                )
            };
            let result = self.read(&q).await?;
            let mut found = Vec::new();
            for p in result.partitions {
                rows::partition_rows(&self.plan.table, &self.layout, p, false, &mut found);
            }
            if let (true, Mode::Index(cursor)) = (points, &self.mode) {
                cursor
                    .purge_stale(&self.node.engine, group, &found, self.now_s)
                    .await;
            }
            rows.extend(found.into_iter().filter(|r| named.contains(&r.clustering)));
        }
        Ok(())
    }

    /// Tells the source the page returns at most `rows` rows (a read through an index sizes
    /// its first read of entries by it).
    pub fn expect_rows(&mut self, rows: usize) {
        if let Mode::Index(cursor) = &mut self.mode {
            cursor.expect_rows(rows);
        }
    }

    pub async fn next_row(&mut self) -> ExecResult<Option<Row>> {
        // Every scan, filter and aggregate pulls its rows through here; the deadline is
        // checked before each storage read, not per buffered row (a clock read per row).
        if self.buffered.is_empty() {
            crate::exec::cancel::check()?;
            if !self.fill().await? {
                return Ok(None);
            }
        }
        Ok(self.buffered.pop_front())
    }

    /// Whether more rows may follow (conservative: true unless the source is known exhausted).
    pub fn has_more(&mut self) -> bool {
        if !self.buffered.is_empty() {
            return true;
        }
        match &self.mode {
            Mode::System => false,
            Mode::Keys { keys } => !keys.is_empty() || self.inside.is_some(),
            Mode::Range { done, .. } => !*done || self.inside.is_some(),
            Mode::Index(cursor) => !cursor.done(),
        }
    }
}

/// Room for a read's rows before they are built: a page of thousands of rows grown by pushes
/// is copied a dozen times.
fn reserve_rows(rows: &mut Vec<Row>, result: &st::ReadResult) {
    let n: usize = result.partitions.iter().map(|p| p.rows.len().max(1)).sum();
    rows.reserve(n);
}

/// Like Cassandra's read command on close: once the page is done (or abandoned), the tombstones
/// it scanned past the warn threshold reach the client as a warning. A drop rather than a call
/// from every SELECT path, so no path forgets it.
impl Drop for RowSource<'_> {
    fn drop(&mut self) {
        let warn_threshold = self.node.config.tombstone_warn_threshold;
        self.tombstones
            .warn_if_over(warn_threshold, &self.plan.table, self.row_hint);
    }
}
