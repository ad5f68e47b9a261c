//! Scans of live rows column by column (issue 15): what aggregates and projections over a
//! columnar table read instead of rows.
//!
//! A row group of a columnar SSTable is served straight from its chunks when that is exact:
//! its rows are plain (`SegmentReader::group_is_plain`: every row live by its primary key, no
//! deletion or TTL in it) and no other source (memtable, other SSTable) has a partition in
//! its token span, so no reconciliation could change a value. Such a group is skipped unread
//! when a restriction rules it out (chunk statistics), else its chunks for the columns asked
//! are read and the restrictions evaluated on the vectors.
//!
//! Every token of the range that no such group covers (memtables, row SSTables, groups with
//! deletions or overlapping other sources) is read through the row path, merged and
//! reconciled as any read, and its live rows turned into the same column batches. So the scan
//! is exact whatever the table holds, and as fast as its chunks once compacted.

use crate::clustering::ClusteringComparator;
use crate::columnar::{Bitmap, BytesVec, Column, ColumnValues, Restriction, Target};
use crate::columnar::{ColumnSpec, CompareOp, ValuePredicate, ValueType};
use crate::memtable::{end_bound, start_bound, Memtable};
use crate::sstable::SSTableReader;
use crate::table::Table;
use crate::types::*;
use bytes::{Bytes, BytesMut};
use std::sync::Arc;

/// What `Engine::scan_columns` reads.
#[derive(Debug, Clone)]
pub struct ColumnScan {
    /// Token bounds of the partitions (`Unbounded` or `Token`; a range that wraps is two scans).
    pub start: PartitionBound,
    pub end: PartitionBound,
    /// The regular columns the batches hold, in this order, with their value types.
    pub columns: Vec<ColumnSpec>,
    /// Rows must satisfy all of these.
    pub restrictions: Vec<ColumnRestriction>,
    /// "Now" for TTL expiry on the row path.
    pub now_s: i64,
    /// The scan fails with `TombstoneOverwhelming` once its row-path reads scanned more
    /// tombstones than this (as a row scan does; plain groups have none).
    pub tombstone_failure_threshold: u64,
    /// With `Some(n)`, batches say which group each row belongs to (`ScanBatch::partitions`):
    /// its partition and its first `n` clustering values, for aggregates grouped by a prefix of
    /// the primary key (`GROUP BY` the partition key and `n` clustering columns).
    pub group_runs: Option<usize>,
    /// With `Some(cells)`, the page writes each row as a CQL ROWS result holds it, these cells
    /// in this order (`ColumnPage::wire`), instead of keeping its values (`ColumnPage::cells`).
    pub wire: Option<Vec<WireCell>>,
}

/// Where a cell of a row written in wire form comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireCell {
    /// The partition key as stored (a key of one column).
    PartitionKey,
    /// The i-th clustering value.
    Clustering(usize),
    /// The j-th of `ColumnScan::columns`.
    Column(usize),
}

/// `column op value` (the value serialized as the column's CQL type), as `WHERE c > 5 ALLOW
/// FILTERING` restricts a regular column; a null never matches.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnRestriction {
    pub column: ColumnSpec,
    pub op: CompareOp,
    pub value: Vec<u8>,
}

impl ColumnRestriction {
    fn chunk_restriction(&self) -> Restriction {
        Restriction {
            target: Target::Column(self.column.id),
            op: self.op,
            value: self.value.clone(),
        }
    }
}

/// Live rows of part of the range, one vector per column asked.
#[derive(Debug, Clone)]
pub struct ScanBatch {
    pub rows: usize,
    /// The rows inside the range that satisfy every restriction (None: all of them).
    pub selected: Option<Bitmap>,
    /// One per `ColumnScan::columns`, same order: live values, null where the row has none.
    pub columns: Vec<Column>,
    /// With `ColumnScan::group_runs`: the batch's rows as runs of one group each, in row
    /// order (empty otherwise).
    pub partitions: Vec<PartitionRun>,
}

/// Rows `start..end` of a batch, all of partition (`token`, `key`) and, when the scan groups
/// by clustering columns too, with the same first clustering values `clustering`.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionRun {
    pub start: usize,
    pub end: usize,
    pub token: i64,
    pub key: Bytes,
    pub clustering: Vec<Bytes>,
}

/// Appends row `row` of group (`token`, `key`, `clustering`) to `runs`: a new run where the
/// group changes.
pub(crate) fn extend_runs(
    runs: &mut Vec<PartitionRun>,
    row: usize,
    (token, key): (i64, &[u8]),
    clustering: &[&[u8]],
) {
    match runs.last_mut() {
        Some(r)
            if r.end == row
                && r.token == token
                && r.key.as_ref() == key
                && r.clustering
                    .iter()
                    .map(Bytes::as_ref)
                    .eq(clustering.iter().copied()) =>
        {
            r.end = row + 1
        }
        _ => runs.push(PartitionRun {
            start: row,
            end: row + 1,
            token,
            key: Bytes::copy_from_slice(key),
            clustering: clustering
                .iter()
                .map(|c| Bytes::copy_from_slice(c))
                .collect(),
        }),
    }
}

impl ScanBatch {
    /// Rows selected.
    pub fn selected_rows(&self) -> usize {
        self.selected.as_ref().map_or(self.rows, |s| s.count_ones())
    }

    /// The selected rows within `rows`, in order.
    pub fn selected_in(&self, rows: std::ops::Range<usize>) -> impl Iterator<Item = usize> + '_ {
        let end = rows.end.min(self.rows);
        let all = self.selected.is_none().then(|| rows.start.min(end)..end);
        let some = self.selected.as_ref().map(|s| s.ones_in(rows));
        all.into_iter().flatten().chain(some.into_iter().flatten())
    }

    pub fn is_selected(&self, i: usize) -> bool {
        i < self.rows && self.selected.as_ref().is_none_or(|s| s.get(i))
    }
}

/// Where a page of `Engine::scan_column_page` resumes: after the row (`token`, `key`,
/// `clustering`), or after the whole partition when `clustering` is empty.
#[derive(Debug, Clone, PartialEq)]
pub struct ResumeAt {
    pub token: i64,
    pub key: Bytes,
    pub clustering: Vec<Bytes>,
}

impl ResumeAt {
    /// Whether the row (`token`, `key`, `clustering`) comes after this point.
    pub(crate) fn is_before(
        &self,
        cmp: &ClusteringComparator,
        token: i64,
        key: &Bytes,
        clustering: &[Bytes],
    ) -> bool {
        match (token, key).cmp(&(self.token, &self.key)) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => {
                !self.clustering.is_empty()
                    && cmp.compare(clustering, 0, &self.clustering, 0).is_gt()
            }
        }
    }
}

/// How a scan was served, for tests and reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ColumnScanStats {
    /// Row groups read from their chunks.
    pub groups_read: u64,
    /// Row groups skipped unread by their statistics.
    pub groups_skipped: u64,
    /// Live rows read through the row path.
    pub rows_from_row_path: u64,
    /// Token spans read through the row path (none where no source may hold a partition).
    pub spans_from_row_path: u64,
    /// Tombstones the row-path reads scanned.
    pub tombstones_scanned: u64,
}

/// Rows of one page, in (token, key, clustering) order.
#[derive(Debug, Clone, Default)]
pub struct ColumnPage {
    /// (token, partition key) of each row.
    pub keys: Vec<(i64, Bytes)>,
    /// The clustering values of each row (empty for a table without clustering columns).
    pub clustering: Vec<Vec<Bytes>>,
    /// One per `ColumnScan::columns`, each with one serialized value (or null) per row (empty
    /// with `ColumnScan::wire`).
    pub cells: Vec<Vec<Option<Bytes>>>,
    /// With `ColumnScan::wire`: the rows' cells as a ROWS result body holds them, each an `[int]`
    /// length (-1 for null) and its bytes.
    pub wire: BytesMut,
    /// Where a value is serialized before it is copied out.
    pub(crate) scratch: Vec<u8>,
    /// Whether rows may follow this page in the range.
    pub more: bool,
    /// Tombstones the page's row-path reads scanned.
    pub tombstones_scanned: u64,
    /// Set when the page ended on partitions read but left out by a restriction (a read
    /// counts them against the page): the last of them, where the next page resumes.
    pub stopped_after: Option<(i64, Bytes)>,
    /// What the page's keys and cells are slices of: one allocation per `ARENA_CHUNK` rather
    /// than one per value, and clones that only count a reference (a page's values are cloned
    /// into result rows and dropped on another thread once sent).
    pub(crate) arena: BytesMut,
}

/// Bytes a page's arena grows by when a value does not fit.
const ARENA_CHUNK: usize = 64 * 1024;

/// `value` as a slice of `arena` (a page's), which starts a new chunk when it is full.
pub(crate) fn stash_in(arena: &mut BytesMut, value: &[u8]) -> Bytes {
    if arena.capacity() - arena.len() < value.len() {
        *arena = BytesMut::with_capacity(ARENA_CHUNK.max(value.len()));
    }
    arena.extend_from_slice(value);
    arena.split().freeze()
}

impl ColumnPage {
    /// `value` as a slice of the page's arena.
    pub(crate) fn stash(&mut self, value: &[u8]) -> Bytes {
        stash_in(&mut self.arena, value)
    }

    pub(crate) fn full(&self, limit: usize) -> bool {
        self.keys.len() >= limit
    }

    /// Appends the page read after this one (resumed at this one's `resume_point`).
    pub fn append(&mut self, next: ColumnPage) {
        self.keys.extend(next.keys);
        self.clustering.extend(next.clustering);
        for (mine, theirs) in self.cells.iter_mut().zip(next.cells) {
            mine.extend(theirs);
        }
        self.wire.unsplit(next.wire);
        self.more = next.more;
        self.tombstones_scanned += next.tombstones_scanned;
        self.stopped_after = next.stopped_after;
    }

    /// Where the next page resumes when `more`: (token, key, clustering) of the last row
    /// returned, or the partition the page stopped after when rows it read were left out
    /// (a page may then hold no row at all, and must still say where it got to).
    pub fn resume_point(&self) -> Option<(i64, Bytes, Vec<Bytes>)> {
        if let Some((token, key)) = &self.stopped_after {
            return Some((*token, key.clone(), Vec::new()));
        }
        let (token, key) = self.keys.last()?;
        Some((
            *token,
            key.clone(),
            self.clustering.last().cloned().unwrap_or_default(),
        ))
    }
}

/// One piece of a scanned range: a plain row group (SSTable index, group) or a token span the
/// row path reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece {
    Group(usize, usize),
    Gap(i64, i64),
}

/// How a token range splits into plain row groups read from chunks and spans for the row path.
pub(crate) struct Pieces {
    pub sstables: Vec<Arc<SSTableReader>>,
    /// The scan's columns, then the restricted columns not among them.
    pub read_ids: Vec<ColumnId>,
    /// `read_ids` sorted (the row path's projection).
    pub sorted_ids: Vec<ColumnId>,
    /// Plain groups in range: (SSTable index, group, first token, last token, skipped by a
    /// restriction).
    pub groups: Vec<(usize, usize, i64, i64, bool)>,
    /// The memtables the gaps are read from too.
    memtables: Vec<Arc<Memtable>>,
}

impl Pieces {
    /// Groups to read and gaps for the row path, in token order over `lo..=hi`.
    pub(crate) fn in_order(&self, lo: i64, hi: i64) -> Vec<Piece> {
        let covered = self.groups.iter().map(|g| (g.2, g.3)).collect();
        let mut out: Vec<(i64, Piece)> = self
            .groups
            .iter()
            .filter(|g| !g.4)
            .map(|g| (g.2, Piece::Group(g.0, g.1)))
            .chain(
                gaps(lo, hi, covered)
                    .into_iter()
                    .filter(|(a, b)| self.may_hold(*a, *b))
                    .map(|(a, b)| (a, Piece::Gap(a, b))),
            )
            .collect();
        out.sort_by_key(|(start, _)| *start);
        out.into_iter().map(|(_, p)| p).collect()
    }

    /// Whether a source may hold a partition in `a..=b`: the gaps between the row groups of a
    /// compacted segment hold none, and reading each through the row path would seek the
    /// index once a gap (a row group's keys decoded each time, for nothing).
    fn may_hold(&self, a: i64, b: i64) -> bool {
        self.sstables.iter().any(|s| s.may_have_tokens(a, b))
            || memtables_hold(&self.memtables, a, b)
    }
}

/// The plain row groups of `lo..=hi` no other source overlaps (see the module doc).
pub(crate) fn plain_groups(
    t: &Table,
    scan: &ColumnScan,
    lo: i64,
    hi: i64,
) -> Result<Pieces, StorageError> {
    let sstables = crate::read::readable_sstables(t).to_vec();
    let memtables: Vec<Arc<Memtable>> = std::iter::once(t.memtable.read().clone())
        .chain(t.flushing.read().iter().cloned())
        .collect();
    // The restricted columns are read too, to evaluate the restrictions on.
    let mut read_ids: Vec<ColumnId> = scan.columns.iter().map(|c| c.id).collect();
    for r in &scan.restrictions {
        if !read_ids.contains(&r.column.id) {
            read_ids.push(r.column.id);
        }
    }
    let skips: Vec<Restriction> = scan
        .restrictions
        .iter()
        .map(ColumnRestriction::chunk_restriction)
        .collect();
    let mut groups = Vec::new();
    for (si, s) in sstables.iter().enumerate() {
        let Some(seg) = s.segment() else { continue };
        for g in 0..seg.row_groups() {
            let Some((glo, ghi)) = seg.group_token_range(g) else {
                continue;
            };
            if ghi < lo || glo > hi || !seg.group_is_plain(g, &read_ids) {
                continue;
            }
            if others_hold(&sstables, si, &memtables, glo, ghi)? {
                continue;
            }
            let skipped = skips.iter().any(|r| seg.can_skip(g, r));
            groups.push((si, g, glo, ghi, skipped));
        }
    }
    let mut sorted_ids = read_ids.clone();
    sorted_ids.sort_unstable();
    Ok(Pieces {
        sstables,
        read_ids,
        sorted_ids,
        groups,
        memtables,
    })
}

/// The inclusive token span of the bounds; None when empty. Key bounds are refused: a scan
/// covers whole tokens.
pub(crate) fn token_span(
    start: &PartitionBound,
    end: &PartitionBound,
) -> Result<Option<(i64, i64)>, StorageError> {
    let lo = match start {
        PartitionBound::Unbounded => Some(i64::MIN),
        PartitionBound::Token { token, inclusive } if *inclusive => Some(*token),
        PartitionBound::Token { token, .. } => token.checked_add(1),
        PartitionBound::Key { .. } => None.ok_or(key_bound())?,
    };
    let hi = match end {
        PartitionBound::Unbounded => Some(i64::MAX),
        PartitionBound::Token { token, inclusive } if *inclusive => Some(*token),
        PartitionBound::Token { token, .. } => token.checked_sub(1),
        PartitionBound::Key { .. } => None.ok_or(key_bound())?,
    };
    Ok(match (lo, hi) {
        (Some(lo), Some(hi)) if lo <= hi => Some((lo, hi)),
        _ => None,
    })
}

fn key_bound() -> StorageError {
    StorageError::InvalidRequest("a column scan takes token bounds only".into())
}

/// Whether a source other than SSTable `own` holds a partition with a token in `lo..=hi`.
fn others_hold(
    sstables: &[Arc<SSTableReader>],
    own: usize,
    memtables: &[Arc<Memtable>],
    lo: i64,
    hi: i64,
) -> Result<bool, StorageError> {
    for (i, s) in sstables.iter().enumerate() {
        if i == own || s.stats.partitions == 0 || s.stats.max_token < lo || s.stats.min_token > hi {
            continue;
        }
        let at = s.first_at_or_after_token(lo)?;
        if at < s.partition_count() && s.entry(at)?.token <= hi {
            return Ok(true);
        }
    }
    Ok(memtables_hold(memtables, lo, hi))
}

/// Whether a memtable holds a partition with a token in `lo..=hi`.
fn memtables_hold(memtables: &[Arc<Memtable>], lo: i64, hi: i64) -> bool {
    let bound = |token, inclusive| PartitionBound::Token { token, inclusive };
    let Some(start) = start_bound(&bound(lo, true)) else {
        return false;
    };
    let end = end_bound(&bound(hi, true));
    memtables
        .iter()
        .any(|m| !m.keys_in_range(&start, &end, 1).is_empty())
}

/// `lo..=hi` less the spans in `covered` (which may touch or overlap), in order.
fn gaps(lo: i64, hi: i64, mut covered: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    covered.sort_unstable();
    let mut out = Vec::new();
    let mut next = Some(lo);
    for (a, b) in covered {
        let Some(from) = next else { break };
        if b < from {
            continue;
        }
        if a > from {
            out.push((from, (a - 1).min(hi)));
        }
        next = b.checked_add(1);
        if next.is_some_and(|n| n > hi) {
            next = None;
        }
    }
    if let Some(from) = next {
        if from <= hi {
            out.push((from, hi));
        }
    }
    out
}

/// Narrows `selected` to rows satisfying every restriction of `scan` (their columns are in
/// `columns`, in `ids` order).
pub(crate) fn apply_restrictions(
    selected: &mut Option<Bitmap>,
    rows: usize,
    columns: &[Column],
    ids: &[ColumnId],
    scan: &ColumnScan,
) {
    for r in &scan.restrictions {
        let col = ids
            .iter()
            .position(|c| *c == r.column.id)
            .and_then(|j| columns.get(j));
        narrow(selected, restriction_rows(r, col, rows));
    }
}

/// `selected` and `rows` (None stands for every row).
pub(crate) fn narrow(selected: &mut Option<Bitmap>, rows: Bitmap) {
    match selected {
        Some(s) => s.and_with(&rows),
        None => *selected = Some(rows),
    }
}

/// The rows of `col` (None: a column not read, null everywhere) that satisfy `r`.
pub(crate) fn restriction_rows(r: &ColumnRestriction, col: Option<&Column>, rows: usize) -> Bitmap {
    // The comparison rule is the one restrictions on encoded chunks use (columnar/select.rs).
    let p = ValuePredicate::new(r.column.value_type, r.op, &r.value);
    let Some(col) = col.filter(|_| p.operand.is_some()) else {
        // A value that is not of the column's type matches no row.
        return Bitmap::filled(rows, false);
    };
    let valid = |i: usize| col.is_valid(i);
    // One loop per vector type: the comparison inlines, with no dispatch per row. A short
    // vector (it never is) leaves its missing rows unselected.
    match &col.values {
        ColumnValues::Int(v) => Bitmap::from_bools(
            v.iter().enumerate().map(|(i, a)| valid(i) && p.on_int(*a)),
            rows,
        ),
        ColumnValues::Float32(v) => Bitmap::from_bools(
            v.iter()
                .enumerate()
                .map(|(i, a)| valid(i) && p.on_float(f64::from(*a))),
            rows,
        ),
        ColumnValues::Float64(v) => Bitmap::from_bools(
            v.iter()
                .enumerate()
                .map(|(i, a)| valid(i) && p.on_float(*a)),
            rows,
        ),
        ColumnValues::Bytes(v) => {
            Bitmap::from_bools((0..rows).map(|i| valid(i) && p.on_bytes(v.get(i))), rows)
        }
    }
}

/// The value type of column `id`, from the columns or restrictions of `scan`.
fn column_type(scan: &ColumnScan, id: ColumnId) -> ValueType {
    scan.columns
        .iter()
        .chain(scan.restrictions.iter().map(|r| &r.column))
        .find(|c| c.id == id)
        .map_or(ValueType::Opaque, |c| c.value_type)
}

/// Live rows of the row path as a batch (static rows are not rows of a column scan).
pub(crate) fn rows_batch(
    partitions: &[PartitionData],
    ids: &[ColumnId],
    scan: &ColumnScan,
) -> ScanBatch {
    let rows: usize = partitions.iter().map(|p| p.rows.len()).sum();
    let mut raw: Vec<(BytesVec, Bitmap)> = ids
        .iter()
        .map(|_| (BytesVec::default(), Bitmap::with_capacity(rows)))
        .collect();
    for row in partitions.iter().flat_map(|p| p.rows.iter()) {
        for (j, id) in ids.iter().enumerate() {
            // Cells are sorted by column id; a simple column has one.
            let cell = row
                .cells
                .iter()
                .find(|c| c.column == *id && c.path.is_none());
            if let Some((values, valid)) = raw.get_mut(j) {
                values.push(cell.map_or(&[][..], |c| c.value.as_ref()));
                valid.push(cell.is_some());
            }
        }
    }
    let types: Vec<ValueType> = ids.iter().map(|id| column_type(scan, *id)).collect();
    let columns: Vec<Column> = raw
        .into_iter()
        .zip(types)
        .map(|((values, valid), t)| crate::columnar::typed_column(values, Some(valid), t))
        .collect();
    let mut selected = None;
    apply_restrictions(&mut selected, rows, &columns, ids, scan);
    let mut runs = Vec::new();
    if let Some(n) = scan.group_runs {
        let rows = partitions
            .iter()
            .flat_map(|p| p.rows.iter().map(move |r| (p, r)));
        for (i, (p, row)) in rows.enumerate() {
            let prefix: Vec<&[u8]> = row.clustering.iter().take(n).map(Bytes::as_ref).collect();
            extend_runs(&mut runs, i, (p.token, &p.key), &prefix);
        }
    }
    ScanBatch {
        rows,
        selected,
        columns,
        partitions: runs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token_bound(token: i64, inclusive: bool) -> PartitionBound {
        PartitionBound::Token { token, inclusive }
    }

    #[test]
    fn stashed_values_outlive_the_arena_chunks_they_were_cut_from() {
        let mut page = ColumnPage::default();
        let values: Vec<Vec<u8>> = (0..3000u32)
            .map(|i| vec![(i % 251) as u8; (i as usize * 37) % 300])
            .chain([vec![7u8; ARENA_CHUNK + 5], Vec::new()])
            .collect();
        let stashed: Vec<Bytes> = values.iter().map(|v| page.stash(v)).collect();
        drop(page);
        for (v, b) in values.iter().zip(&stashed) {
            assert_eq!(v.as_slice(), b.as_ref());
        }
    }

    #[test]
    fn gaps_are_the_range_less_the_covered_spans() {
        assert_eq!(gaps(0, 100, vec![]), vec![(0, 100)]);
        assert_eq!(
            gaps(0, 100, vec![(10, 20), (15, 30), (31, 40), (90, 200)]),
            vec![(0, 9), (41, 89)]
        );
        assert_eq!(gaps(0, 100, vec![(-5, 100)]), vec![]);
        assert_eq!(
            gaps(i64::MIN, i64::MAX, vec![(i64::MIN, 0), (5, i64::MAX)]),
            vec![(1, 4)]
        );
    }

    #[test]
    fn token_bounds_become_an_inclusive_span() {
        let span = |s, e| token_span(&s, &e).ok().flatten();
        assert_eq!(
            span(token_bound(5, false), token_bound(9, true)),
            Some((6, 9))
        );
        assert_eq!(
            span(PartitionBound::Unbounded, token_bound(i64::MIN, false)),
            None
        );
        assert_eq!(
            span(token_bound(i64::MAX, false), PartitionBound::Unbounded),
            None
        );
    }
}
