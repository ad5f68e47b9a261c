//! The in-memory form of one partition (or one partition's update): the unit that memtables
//! hold, the commitlog logs, SSTables store and reads merge. Merging two `Partition`s applies the
//! reconciliation rules, so merge order never matters.

pub(crate) mod cellmap;
mod digest;
mod growth;
pub mod rows;
mod shadow;
mod unfiltered;

pub(crate) use digest::digest_bytes;

use crate::clustering::{CKey, ClusteringComparator};
use crate::error::StorageError;
use crate::reconcile::{self, Cell, CellKind};
use crate::types::*;
use bytes::Bytes;
pub use growth::MergeGrowth;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// What the engine needs from a `TableDef` on hot paths.
pub struct TableLayout {
    pub cmp: Arc<ClusteringComparator>,
    pub path_cmp: HashMap<ColumnId, Arc<dyn ValueComparator>>,
}

impl TableLayout {
    pub fn new(def: &TableDef) -> Self {
        let path_cmp = def
            .columns
            .iter()
            .filter_map(|c| c.multi_cell.clone().map(|p| (c.id, p)))
            .collect();
        TableLayout {
            cmp: Arc::new(ClusteringComparator::new(def.clustering.clone())),
            path_cmp,
        }
    }
}

pub use crate::partition::cellmap::CellMap;
pub use crate::partition::rows::Rows;
pub(crate) use unfiltered::to_mutation;

/// One row (or the static row).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    pub liveness: Option<Liveness>,
    pub deletion: Option<DeletionTime>,
    /// Whole-collection deletions.
    pub complex_deletions: BTreeMap<ColumnId, DeletionTime>,
    pub cells: CellMap,
}

impl Row {
    pub fn is_empty(&self) -> bool {
        self.liveness.is_none()
            && self.deletion.is_none()
            && self.complex_deletions.is_empty()
            && self.cells.is_empty()
    }

    /// Merges `other` into `self`.
    pub fn merge(&mut self, other: Row) {
        self.merge_counting(other);
    }

    /// Merges `other` into `self`; returns what that added besides values.
    fn merge_counting(&mut self, other: Row) -> MergeGrowth {
        let mut grew = MergeGrowth::default();
        self.liveness = reconcile::merge_liveness(self.liveness, other.liveness);
        self.deletion = reconcile::max_deletion(self.deletion, other.deletion);
        for (col, d) in other.complex_deletions {
            let cur = self.complex_deletions.get(&col).copied();
            if let Some(m) = reconcile::max_deletion(cur, Some(d)) {
                grew.deletions += u64::from(self.complex_deletions.insert(col, m).is_none());
            }
        }
        grew.added_cells += self.cells.merge_with(other.cells, |c, cur| {
            if reconcile::cell_wins(&c, cur) {
                *cur = c;
            }
        });
        grew
    }

    /// Drops data shadowed by `outer` (partition/range deletion) and by the row's own deletions.
    /// The deletions themselves are kept, so this never changes what a read returns.
    pub fn drop_shadowed(&mut self, outer: Option<DeletionTime>) {
        let d = reconcile::max_deletion(outer, self.deletion);
        if matches!((self.deletion, outer), (Some(r), Some(o)) if !reconcile::deletion_supersedes(&r, &o))
        {
            self.deletion = None; // the outer deletion covers it
        }
        if let Some(l) = self.liveness {
            if reconcile::deletes(d, l.timestamp_us) {
                self.liveness = None;
            }
        }
        self.complex_deletions
            .retain(|_, cd| !reconcile::deletes(d, cd.marked_for_delete_at_us));
        let cds = &self.complex_deletions;
        self.cells.retain(|(col, path), c| {
            let cd = if path.is_some() {
                cds.get(col).copied()
            } else {
                None
            };
            !reconcile::deletes(d, c.timestamp_us) && !reconcile::deletes(cd, c.timestamp_us)
        });
    }
}

/// A partition (or update to one).
#[derive(Debug, Clone)]
pub struct Partition {
    pub key: Bytes,
    pub token: i64,
    pub deletion: Option<DeletionTime>,
    /// (start, end, deletion) with positions from `CKey::start` / `CKey::end`.
    pub range_tombstones: Vec<(CKey, CKey, DeletionTime)>,
    pub static_row: Row,
    pub rows: Rows,
}

impl Partition {
    pub fn new(key: Bytes, token: i64) -> Self {
        Partition {
            key,
            token,
            deletion: None,
            range_tombstones: Vec::new(),
            static_row: Row::default(),
            rows: Rows::new(),
        }
    }

    /// Converts a mutation into a partition update. Counter increments are not allowed here: the
    /// engine resolves them into absolute counter cells first (see `Engine::apply`).
    pub fn from_mutation(m: &Mutation, layout: &TableLayout) -> Result<Partition, StorageError> {
        let mut p = Partition::new(m.key.clone(), m.token);
        p.deletion = m.partition_deletion;
        for (s, e, d) in &m.range_tombstones {
            p.range_tombstones
                .push((CKey::start(s, &layout.cmp), CKey::end(e, &layout.cmp), *d));
        }
        if let Some(s) = &m.static_row {
            p.static_row = row_from_update(s)?;
        }
        for r in &m.rows {
            // A row may have a clustering prefix (dense COMPACT STORAGE tables, whose writes may
            // leave out trailing clustering columns; the CQL layer decides when), never an empty
            // clustering when the table has clustering columns, nor too long a one.
            let n = r.clustering.len();
            if n > layout.cmp.len() || (n == 0 && layout.cmp.len() != 0) {
                return Err(StorageError::InvalidRequest(format!(
                    "row has {} clustering values, table has {}",
                    r.clustering.len(),
                    layout.cmp.len()
                )));
            }
            let row = row_from_update(r)?;
            let key = CKey::row(r.clustering.clone(), &layout.cmp);
            match p.rows.get_mut(&key) {
                Some(cur) => cur.merge(row),
                None => {
                    p.rows.insert(key, Box::new(row));
                }
            }
        }
        Ok(p)
    }

    /// Sets the row at `key` (replacing any there).
    pub fn insert_row(&mut self, key: CKey, row: Row) {
        self.rows.insert(key, Box::new(row));
    }

    /// Merges `other` (same partition key) into `self`.
    pub fn merge(&mut self, other: Partition) {
        self.merge_counting(other);
    }

    /// Merges `other` (same partition key) into `self`; returns what that added besides
    /// values (the memtable's budget counts it).
    pub fn merge_counting(&mut self, other: Partition) -> MergeGrowth {
        let mut grew = MergeGrowth::default();
        self.deletion = reconcile::max_deletion(self.deletion, other.deletion);
        for rt in other.range_tombstones {
            if !self
                .range_tombstones
                .iter()
                .any(|x| x.0 == rt.0 && x.1 == rt.1 && x.2 == rt.2)
            {
                self.range_tombstones.push(rt);
                grew.deletions += 1;
            }
        }
        grew.add(self.static_row.merge_counting(other.static_row));
        if self.rows.is_empty() {
            for (k, r) in &other.rows {
                grew.add_new_row(k, r);
            }
            grew.adopted_rows = other.rows.len() as u64;
            self.rows = other.rows;
            return grew;
        }
        let had_map = self.rows.is_map();
        for (k, r) in other.rows {
            match self.rows.get_mut(&k) {
                Some(cur) => grew.add(cur.merge_counting(*r)),
                None => {
                    grew.add_new_row(&k, &r);
                    grew.rows += 1;
                    self.rows.insert(k, r);
                }
            }
        }
        grew.row_maps += u64::from(!had_map && self.rows.is_map());
        grew
    }

    /// The strongest deletion covering row `key` (partition deletion and range tombstones).
    pub fn covering_deletion(&self, key: &CKey) -> Option<DeletionTime> {
        let mut d = self.deletion;
        for (s, e, rd) in &self.range_tombstones {
            if s <= key && key <= e {
                d = reconcile::max_deletion(d, Some(*rd));
            }
        }
        d
    }

    /// Removes data shadowed by deletions (used by compaction and flush; reads are unaffected).
    pub fn drop_shadowed(&mut self) {
        let pd = self.deletion;
        self.range_tombstones
            .retain(|rt| !reconcile::deletes(pd, rt.2.marked_for_delete_at_us));
        self.static_row.drop_shadowed(pd);
        let covering: Vec<Option<DeletionTime>> = self
            .rows
            .keys()
            .map(|k| self.covering_deletion(k))
            .collect();
        for (row, d) in self.rows.values_mut().zip(covering) {
            row.drop_shadowed(d);
        }
        self.rows.retain(|_, r| !r.is_empty());
    }

    /// Number of tombstones of every kind (statistics).
    pub fn tombstone_count(&self) -> u64 {
        let mut n = self.deletion.is_some() as u64 + self.range_tombstones.len() as u64;
        for r in std::iter::once(&self.static_row).chain(self.rows.values().map(|r| &**r)) {
            n += r.deletion.is_some() as u64 + r.complex_deletions.len() as u64;
            n += r
                .cells
                .values()
                .filter(|c| matches!(c.kind, CellKind::Tombstone { .. }))
                .count() as u64;
        }
        n
    }

    /// Every timestamp in the partition as (min, max); None when empty.
    pub fn timestamp_range(&self) -> Option<(i64, i64)> {
        let mut lo = i64::MAX;
        let mut hi = i64::MIN;
        let mut see = |t: i64| {
            lo = lo.min(t);
            hi = hi.max(t);
        };
        if let Some(d) = self.deletion {
            see(d.marked_for_delete_at_us);
        }
        for rt in &self.range_tombstones {
            see(rt.2.marked_for_delete_at_us);
        }
        for r in std::iter::once(&self.static_row).chain(self.rows.values().map(|r| &**r)) {
            if let Some(l) = r.liveness {
                see(l.timestamp_us);
            }
            if let Some(d) = r.deletion {
                see(d.marked_for_delete_at_us);
            }
            for d in r.complex_deletions.values() {
                see(d.marked_for_delete_at_us);
            }
            for c in r.cells.values() {
                see(c.timestamp_us);
            }
        }
        (lo <= hi).then_some((lo, hi))
    }
}

fn row_from_update(r: &RowUpdate) -> Result<Row, StorageError> {
    let mut row = Row {
        liveness: r.liveness,
        deletion: r.deletion,
        // Sized once: a row of a million list elements would otherwise grow by doubling,
        // touching about three times the memory it ends up holding.
        cells: CellMap::with_capacity(r.cells.len()),
        ..Row::default()
    };
    for c in &r.cells {
        let cell = match &c.op {
            CellOp::Set { value, ttl_s } => Cell {
                timestamp_us: c.timestamp_us,
                kind: CellKind::Live {
                    value: value.clone(),
                    ttl_s: *ttl_s,
                    expires_at_s: 0,
                },
            },
            CellOp::Delete => Cell {
                timestamp_us: c.timestamp_us,
                kind: CellKind::Tombstone {
                    local_deletion_time_s: 0,
                },
            },
            CellOp::DeleteComplex => {
                // Cassandra writes a complex deletion at timestamp - 1 so that elements added by
                // the same statement (`SET l = [..]`) survive it.
                let d = DeletionTime {
                    marked_for_delete_at_us: c.timestamp_us - 1,
                    local_deletion_time_s: 0,
                };
                let cur = row.complex_deletions.get(&c.column).copied();
                if let Some(m) = reconcile::max_deletion(cur, Some(d)) {
                    row.complex_deletions.insert(c.column, m);
                }
                continue;
            }
            CellOp::CounterAdd(_) => {
                return Err(StorageError::InvalidRequest(
                    "unresolved counter increment".into(),
                ));
            }
            CellOp::SetExpiring {
                value,
                ttl_s,
                expires_at_s,
            } => Cell {
                timestamp_us: c.timestamp_us,
                kind: CellKind::Live {
                    value: value.clone(),
                    ttl_s: *ttl_s,
                    expires_at_s: *expires_at_s,
                },
            },
            CellOp::Tombstone {
                local_deletion_time_s,
            } => Cell {
                timestamp_us: c.timestamp_us,
                kind: CellKind::Tombstone {
                    local_deletion_time_s: *local_deletion_time_s,
                },
            },
            CellOp::ComplexDeletion {
                local_deletion_time_s,
            } => {
                let d = DeletionTime {
                    marked_for_delete_at_us: c.timestamp_us,
                    local_deletion_time_s: *local_deletion_time_s,
                };
                let cur = row.complex_deletions.get(&c.column).copied();
                if let Some(m) = reconcile::max_deletion(cur, Some(d)) {
                    row.complex_deletions.insert(c.column, m);
                }
                continue;
            }
            CellOp::CounterState { clock, total } => Cell {
                timestamp_us: c.timestamp_us,
                kind: CellKind::Counter {
                    clock: *clock,
                    total: *total,
                },
            },
        };
        let key = (c.column, c.path.clone());
        match row.cells.get_mut(&key) {
            Some(cur) => {
                if reconcile::cell_wins(&cell, cur) {
                    *cur = cell;
                }
            }
            None => {
                row.cells.insert(key, cell);
            }
        }
    }
    Ok(row)
}

/// Fills in server-time fields (TTL expiry, tombstone local deletion times) that a mutation leaves
/// at 0, using the mutation's deletion times or `now_s`.
pub fn stamp_local_times(p: &mut Partition, now_s: i64) {
    for r in std::iter::once(&mut p.static_row).chain(p.rows.values_mut().map(|r| &mut **r)) {
        for d in r.complex_deletions.values_mut() {
            if d.local_deletion_time_s == 0 {
                d.local_deletion_time_s = now_s;
            }
        }
        for c in r.cells.values_mut() {
            match &mut c.kind {
                CellKind::Live {
                    ttl_s,
                    expires_at_s,
                    ..
                } if *ttl_s > 0 && *expires_at_s == 0 => {
                    *expires_at_s = now_s + i64::from(*ttl_s);
                }
                CellKind::Tombstone {
                    local_deletion_time_s,
                } if *local_deletion_time_s == 0 => {
                    *local_deletion_time_s = now_s;
                }
                _ => {}
            }
        }
    }
}

/// Live cells of a row at `now_s` under deletion `d`, in column then cell-path order, of the
/// `wanted` columns (None: all), and whether any cell of any column is live.
fn live_cells(
    row: &Row,
    d: Option<DeletionTime>,
    now_s: i64,
    layout: &TableLayout,
    wanted: Option<&[ColumnId]>,
) -> (Vec<LiveCell>, bool) {
    let mut out: Vec<LiveCell> = Vec::new();
    let mut any_live = false;
    // A counter in a ring is one cell per shard (the path names the shard's leader); its value
    // is their sum. On one node it is the single cell without a path.
    let mut counters: Vec<(ColumnId, i64, i64)> = Vec::new();
    for ((col, path), c) in &row.cells {
        if reconcile::deletes(d, c.timestamp_us) || !c.is_live(now_s) {
            continue;
        }
        if path.is_some()
            && reconcile::deletes(row.complex_deletions.get(col).copied(), c.timestamp_us)
        {
            continue;
        }
        if let Some(w) = wanted {
            if w.binary_search(col).is_err() {
                any_live |= match c.kind {
                    CellKind::Counter { .. } => !counter_deleted(row, *col),
                    _ => true,
                };
                continue;
            }
        }
        let (value, ttl_s, expires_at_s) = match &c.kind {
            CellKind::Live {
                value,
                ttl_s,
                expires_at_s,
            } => (value.clone(), *ttl_s, *expires_at_s),
            CellKind::Counter { total, .. } => {
                if !counter_deleted(row, *col) {
                    any_live = true;
                    add_counter_shard(&mut counters, *col, *total, c.timestamp_us);
                }
                continue;
            }
            CellKind::Tombstone { .. } => continue,
        };
        any_live = true;
        out.push(LiveCell {
            column: *col,
            path: path.clone(),
            value,
            timestamp_us: c.timestamp_us,
            ttl_s,
            expires_at_s,
        });
    }
    if !counters.is_empty() {
        out.extend(counters.into_iter().map(|(column, total, ts)| LiveCell {
            column,
            path: None,
            value: Bytes::copy_from_slice(&total.to_be_bytes()),
            timestamp_us: ts,
            ttl_s: 0,
            expires_at_s: 0,
        }));
        // Stable: cells of one multi-cell column keep their order.
        out.sort_by_key(|c| c.column);
    }
    // Paths are stored bytewise; re-sort each multi-cell column by its element comparator.
    let mut i = 0;
    while i < out.len() {
        let col = out[i].column;
        let mut j = i;
        while j < out.len() && out[j].column == col {
            j += 1;
        }
        if let Some(pc) = layout.path_cmp.get(&col) {
            if let Some(run) = out.get_mut(i..j) {
                run.sort_by(|a, b| match (&a.path, &b.path) {
                    (Some(x), Some(y)) => pc.compare(x, y),
                    (x, y) => x.is_some().cmp(&y.is_some()),
                });
            }
        }
        i = j;
    }
    (out, any_live)
}

/// Whether the whole counter `col` is deleted: a tombstone of the counter (the cell without a
/// path) beats every shard whatever their timestamps, as it beats a counter on one node
/// (CASSANDRA-7346).
fn counter_deleted(row: &Row, col: ColumnId) -> bool {
    matches!(
        row.cells.get(&(col, None)).map(|c| &c.kind),
        Some(CellKind::Tombstone { .. })
    )
}

/// Adds one live counter shard to its column's sum.
fn add_counter_shard(
    counters: &mut Vec<(ColumnId, i64, i64)>,
    col: ColumnId,
    total: i64,
    timestamp_us: i64,
) {
    match counters.iter_mut().find(|(c, _, _)| *c == col) {
        Some((_, sum, ts)) => {
            *sum = sum.wrapping_add(total);
            *ts = (*ts).max(timestamp_us);
        }
        None => counters.push((col, total, timestamp_us)),
    }
}

/// The live form of a row, or None if nothing in it is live.
pub fn live_row(
    clustering: &[Bytes],
    row: &Row,
    outer: Option<DeletionTime>,
    now_s: i64,
    layout: &TableLayout,
    wanted: Option<&[ColumnId]>,
) -> Option<LiveRow> {
    live_row_keyed(|| clustering.to_vec(), row, outer, now_s, layout, wanted)
}

/// A row's clustering as a read holds it: borrowed from a map (copied into a live row) or
/// owned (moved into it, when the read's rows are its own).
pub(crate) trait RowKey {
    fn ckey(&self) -> &CKey;
    fn into_values(self) -> Vec<Bytes>;
}

impl RowKey for &CKey {
    fn ckey(&self) -> &CKey {
        self
    }
    fn into_values(self) -> Vec<Bytes> {
        self.values.clone()
    }
}

impl RowKey for CKey {
    fn ckey(&self) -> &CKey {
        self
    }
    fn into_values(self) -> Vec<Bytes> {
        self.values
    }
}

/// `live_row` with the clustering made only for a live row.
fn live_row_keyed(
    clustering: impl FnOnce() -> Vec<Bytes>,
    row: &Row,
    outer: Option<DeletionTime>,
    now_s: i64,
    layout: &TableLayout,
    wanted: Option<&[ColumnId]>,
) -> Option<LiveRow> {
    let d = reconcile::max_deletion(outer, row.deletion);
    let row_ts = row
        .liveness
        .filter(|l| !reconcile::deletes(d, l.timestamp_us) && reconcile::liveness_is_live(l, now_s))
        .map(|l| l.timestamp_us);
    let (cells, any_live) = live_cells(row, d, now_s, layout, wanted);
    if row_ts.is_none() && !any_live {
        return None;
    }
    Some(LiveRow {
        clustering: clustering(),
        cells,
        row_timestamp_us: row_ts,
    })
}

/// Row-count limits of one read, shared across partitions, with the tombstones it scanned so far.
#[derive(Clone, Copy)]
pub(crate) struct Limits {
    pub rows_left: usize,
    pub per_partition: usize,
    pub scan: TombstoneScan,
}

/// Applies deletions, TTLs, slices, order and limits: the live view of `p`. Returns None when
/// nothing is live; fails once the read has scanned more tombstones than its threshold allows,
/// without visiting the rest of the partition.
pub(crate) fn live_partition(
    p: &Partition,
    q: &ReadQuery,
    layout: &TableLayout,
    limits: &mut Limits,
) -> Result<Option<PartitionData>, StorageError> {
    live_partition_within(p, &slice_ranges(q, layout), q, layout, limits)
}

/// The query's slices as comparator positions (all rows when none), empty ones left out.
pub(crate) fn slice_ranges(q: &ReadQuery, layout: &TableLayout) -> Vec<(CKey, CKey)> {
    if q.slices.is_empty() {
        let u = ClusteringBound::unbounded();
        return vec![(CKey::start(&u, &layout.cmp), CKey::end(&u, &layout.cmp))];
    }
    q.slices
        .iter()
        .map(|(s, e)| (CKey::start(s, &layout.cmp), CKey::end(e, &layout.cmp)))
        .filter(|(s, e)| s <= e)
        .collect()
}

/// `live_partition` over `ranges` (ascending, each start at most its end) instead of the
/// query's slices: a read that resumes inside a partition, or reads a partition in place
/// (read/single.rs), passes the slices already cut.
pub(crate) fn live_partition_within(
    p: &Partition,
    ranges: &[(CKey, CKey)],
    q: &ReadQuery,
    layout: &TableLayout,
    limits: &mut Limits,
) -> Result<Option<PartitionData>, StorageError> {
    use crate::clustering::map_bounds;
    // Each shape its own loop, not a boxed iterator: a scan of one-row partitions calls this
    // per row.
    match (ranges, q.reversed) {
        ([(s, e)], false) => {
            let rows = p.rows.range(map_bounds(s, e)).map(unbox);
            live_rows_of(p, rows, ranges, q, layout, limits)
        }
        ([(s, e)], true) => {
            let rows = p.rows.range(map_bounds(s, e)).rev().map(unbox);
            live_rows_of(p, rows, ranges, q, layout, limits)
        }
        (_, false) => {
            let rows = ranges
                .iter()
                .flat_map(|(s, e)| p.rows.range(map_bounds(s, e)).map(unbox));
            live_rows_of(p, rows, ranges, q, layout, limits)
        }
        (_, true) => {
            let rows = (ranges.iter().rev())
                .flat_map(|(s, e)| p.rows.range(map_bounds(s, e)).rev().map(unbox));
            live_rows_of(p, rows, ranges, q, layout, limits)
        }
    }
}

/// A map entry's row as a plain reference (the entries a range of the map yields hold boxes).
#[allow(clippy::borrowed_box)]
fn unbox<'a>((k, r): (&'a CKey, &'a Box<Row>)) -> (&'a CKey, &'a Row) {
    (k, r)
}

/// `live_partition_within` for rows that are not in `header`'s map: `rows` are the rows of
/// `ranges` (and only those), ascending, as one SSTable gives them; `header` holds the
/// partition's deletion, static row and range tombstones. A read with no other source to merge
/// then builds no map.
pub(crate) fn live_partition_sorted(
    header: &Partition,
    rows: Vec<(CKey, Row)>,
    ranges: &[(CKey, CKey)],
    q: &ReadQuery,
    layout: &TableLayout,
    limits: &mut Limits,
) -> Result<Option<PartitionData>, StorageError> {
    // The rows are this read's own: their clusterings move into the live rows.
    if q.reversed {
        live_rows_of(header, rows.into_iter().rev(), ranges, q, layout, limits)
    } else {
        live_rows_of(header, rows.into_iter(), ranges, q, layout, limits)
    }
}

/// The live view of partition `p` with `rows` (in the read's order) as its rows.
fn live_rows_of<K: RowKey, R: std::borrow::Borrow<Row>>(
    p: &Partition,
    rows: impl Iterator<Item = (K, R)>,
    ranges: &[(CKey, CKey)],
    q: &ReadQuery,
    layout: &TableLayout,
    limits: &mut Limits,
) -> Result<Option<PartitionData>, StorageError> {
    // Static rows stay whole: a partition with only static data is a row, which the caller
    // tells by its cells.
    let static_row = live_row(&[], &p.static_row, p.deletion, q.now_s, layout, None);
    if !p.static_row.is_empty() {
        let live = static_row.is_some();
        limits.scan.row(&p.static_row, p.deletion, live, q.now_s)?;
    }
    let max_rows = limits.rows_left.min(limits.per_partition);
    let (lower, _) = rows.size_hint();
    let mut live_rows = Vec::with_capacity(max_rows.min(lower.max(p.rows.len())));
    limits.scan.range_tombstones(&p.range_tombstones, ranges)?;
    let scan = &mut limits.scan;
    if max_rows > 0 {
        for (k, r) in rows {
            let r = r.borrow();
            let outer = p.covering_deletion(k.ckey());
            let columns = q.columns.as_deref();
            let lr = live_row_keyed(|| k.into_values(), r, outer, q.now_s, layout, columns);
            scan.row(r, outer, lr.is_some(), q.now_s)?;
            live_rows.extend(lr);
            if live_rows.len() >= max_rows {
                break;
            }
        }
    }
    if live_rows.is_empty() && static_row.is_none() {
        return Ok(None);
    }
    // A partition with only static data counts as one row, as in Cassandra's paging.
    let used = live_rows.len().max(1);
    limits.rows_left = limits.rows_left.saturating_sub(used);
    Ok(Some(PartitionData {
        key: p.key.clone(),
        token: p.token,
        static_row,
        rows: live_rows,
    }))
}

/// Range tombstone markers per range tombstone (open and close).
const MARKERS_PER_RANGE_TOMBSTONE: u64 = 2;

/// The running count of one read (the rules are in read/tombstones.rs), kept here beside the
/// merge that feeds it so partitions need nothing from the read path, with the threshold past which it is abandoned.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TombstoneScan {
    pub stats: ReadStats,
    /// The read fails once more tombstones than this were scanned (u64::MAX: never).
    pub failure_threshold: u64,
}

impl TombstoneScan {
    pub fn new(failure_threshold: u64) -> Self {
        TombstoneScan {
            stats: ReadStats::default(),
            failure_threshold,
        }
    }

    fn add(&mut self, n: u64) -> Result<(), StorageError> {
        self.stats.tombstones_scanned = self.stats.tombstones_scanned.saturating_add(n);
        if self.stats.tombstones_scanned > self.failure_threshold {
            return Err(StorageError::TombstoneOverwhelming {
                tombstones_scanned: self.stats.tombstones_scanned,
                live_rows: self.stats.live_rows,
                failure_threshold: self.failure_threshold,
            });
        }
        Ok(())
    }

    /// Counts one visited row (`outer`: the partition or range deletion covering it; `live`:
    /// whether the read returns it).
    pub fn row(
        &mut self,
        row: &Row,
        outer: Option<DeletionTime>,
        live: bool,
        now_s: i64,
    ) -> Result<(), StorageError> {
        let d = reconcile::max_deletion(outer, row.deletion);
        // `is_live` is false for tombstones and expired cells alike.
        let mut dead_cells = if d.is_none() && row.complex_deletions.is_empty() {
            // The common row: nothing can shadow its cells.
            row.cells.values().filter(|c| !c.is_live(now_s)).count() as u64
        } else {
            let shadowed = |col: &ColumnId, has_path: bool, ts: i64| {
                let complex = has_path
                    .then(|| row.complex_deletions.get(col).copied())
                    .flatten();
                reconcile::deletes(d, ts) || reconcile::deletes(complex, ts)
            };
            // Shadowed data is dropped by Cassandra's merge before it counts.
            row.cells
                .iter()
                .filter(|((col, path), c)| {
                    !shadowed(col, path.is_some(), c.timestamp_us) && !c.is_live(now_s)
                })
                .count() as u64
        };
        if live {
            self.stats.live_rows += 1;
        } else if dead_cells == 0 && (row.deletion.is_some() || !row.complex_deletions.is_empty()) {
            dead_cells = 1;
        }
        self.add(dead_cells)
    }

    /// Counts the range tombstones of a partition that overlap the read's `ranges`.
    pub fn range_tombstones(
        &mut self,
        rts: &[(CKey, CKey, DeletionTime)],
        ranges: &[(CKey, CKey)],
    ) -> Result<(), StorageError> {
        let n = rts
            .iter()
            .filter(|(s, e, _)| ranges.iter().any(|(rs, re)| s <= re && rs <= e))
            .count() as u64;
        self.add(n * MARKERS_PER_RANGE_TOMBSTONE)
    }
}
