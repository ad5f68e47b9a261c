//! Column scans of columnar tables (issue 15), the engine's side: `scan_columns` (batches in no
//! order, for aggregates) and `scan_column_page` (rows in token order, resumable, for paged
//! projections). How a range splits into plain row groups read from their chunks and spans
//! read through the row path is read/columnar_scan.rs's.
//!
//! A page visits the pieces (plain groups and row-path spans: disjoint token spans) in token
//! order, so its rows come out in (token, key) order as a row scan's do, and the next page
//! resumes after the last partition key. Pages are for tables without clustering columns (one
//! row per partition).

use crate::clustering::ClusteringComparator;
use crate::columnar::{
    Bitmap, Column, ColumnValues, KeyColumns, ScanRequest, SegmentReader, ValuePredicate, ValueType,
};
use crate::engine::Engine;
use crate::read::columnar_scan::{
    apply_restrictions, extend_runs, narrow, plain_groups, restriction_rows, rows_batch, stash_in,
    token_span, ColumnPage, ColumnScan, ColumnScanStats, PartitionRun, Piece, Pieces, ResumeAt,
    ScanBatch, WireCell,
};
use crate::types::*;
use bytes::Bytes;
use std::sync::Arc;

/// Partitions one row-path read returns at most (a batch's worth of small partitions).
const ROW_PATH_PARTITIONS: usize = 4096;

/// A row group's scan columns are decoded only at the selected rows when fewer than one row in
/// this many is selected (else whole: a vector decode beats lookups one by one).
const SPARSE_SELECTION: usize = 8;

/// Row groups a scan decodes at once, spread over the machine's cores (decompressing and
/// decoding chunks is a scan's work; folding the batches is little), handed on in order.
const PARALLEL_GROUPS: usize = 32;

impl Engine {
    /// Calls `f` with batches of the live rows of `scan`'s range, in no particular order.
    pub fn scan_columns(
        &self,
        table: TableId,
        scan: &ColumnScan,
        f: &mut dyn FnMut(ScanBatch) -> Result<(), StorageError>,
    ) -> Result<ColumnScanStats, StorageError> {
        let t = self.table(table)?;
        let mut stats = ColumnScanStats::default();
        let Some((lo, hi)) = token_span(&scan.start, &scan.end)? else {
            return Ok(stats);
        };
        let pieces = plain_groups(&t, scan, lo, hi)?;
        stats.groups_skipped = pieces.groups.iter().filter(|g| g.4).count() as u64;
        // Windows of pieces holding up to PARALLEL_GROUPS groups: the window's groups are
        // decoded at once, then the window is handed on in order (gaps through the row path).
        let order = pieces.in_order(lo, hi);
        let mut rest = order.as_slice();
        while !rest.is_empty() {
            let mut groups = 0;
            let end = rest
                .iter()
                .position(|p| {
                    groups += usize::from(matches!(p, Piece::Group(..)));
                    groups > PARALLEL_GROUPS
                })
                .unwrap_or(rest.len());
            let (window, next) = rest.split_at(end);
            rest = next;
            let wanted: Vec<(usize, usize)> = window
                .iter()
                .filter_map(|p| match p {
                    Piece::Group(si, g) => Some((*si, *g)),
                    Piece::Gap(..) => None,
                })
                .collect();
            let mut decoded = decode_groups(&wanted, &pieces, scan, (lo, hi)).into_iter();
            for piece in window {
                match piece {
                    Piece::Group(..) => {
                        if let Some(batch) = decoded.next().transpose()?.flatten() {
                            stats.groups_read += 1;
                            f(batch)?;
                        }
                    }
                    Piece::Gap(a, b) => {
                        stats.spans_from_row_path += 1;
                        self.scan_rows(table, (*a, *b), scan, &pieces, &mut stats, f)?;
                    }
                }
            }
        }
        Ok(stats)
    }

    /// The live rows of tokens `lo..=hi` read through the row path, as batches.
    fn scan_rows(
        &self,
        table: TableId,
        (lo, hi): (i64, i64),
        scan: &ColumnScan,
        pieces: &Pieces,
        stats: &mut ColumnScanStats,
        f: &mut dyn FnMut(ScanBatch) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        let mut start = PartitionBound::Token {
            token: lo,
            inclusive: true,
        };
        loop {
            let (r, scanned) = self.row_path_read(
                table,
                (start.clone(), hi),
                ROW_PATH_PARTITIONS,
                scan,
                pieces,
                stats.tombstones_scanned,
            )?;
            stats.tombstones_scanned += scanned;
            let Some(last) = r.partitions.last() else {
                return Ok(());
            };
            start = PartitionBound::Key {
                token: last.token,
                key: last.key.clone(),
                inclusive: false,
            };
            let full = r.partitions.len() >= ROW_PATH_PARTITIONS;
            let batch = rows_batch(&r.partitions, &pieces.read_ids, scan);
            stats.rows_from_row_path += batch.rows as u64;
            let ids = scan.columns.len();
            f(ScanBatch {
                columns: batch.columns.into_iter().take(ids).collect(),
                ..batch
            })?;
            if !full {
                return Ok(());
            }
        }
    }
    /// Up to `limit` live rows of `scan`'s range after `after`, in (token, key, clustering)
    /// order: a page resumes after the last row of the page before it (`ResumeAt`).
    pub fn scan_column_page(
        &self,
        table: TableId,
        scan: &ColumnScan,
        after: Option<ResumeAt>,
        limit: usize,
    ) -> Result<ColumnPage, StorageError> {
        let t = self.table(table)?;
        let cmp = ClusteringComparator::new(t.def.read().clustering.clone());
        let mut page = ColumnPage {
            cells: vec![Vec::new(); scan.columns.len()],
            ..ColumnPage::default()
        };
        let Some((lo, hi)) = token_span(&scan.start, &scan.end)? else {
            return Ok(page);
        };
        let lo = after.as_ref().map_or(lo, |a| lo.max(a.token));
        if lo > hi || limit == 0 {
            return Ok(page);
        }
        let pieces = plain_groups(&t, scan, lo, hi)?;
        let past = |token: i64, key: &Bytes, clustering: &[Bytes]| {
            after
                .as_ref()
                .is_none_or(|a| a.is_before(&cmp, token, key, clustering))
        };
        for piece in pieces.in_order(lo, hi) {
            let full = match piece {
                Piece::Group(si, g) => {
                    let Some(seg) = pieces.sstables.get(si).and_then(|s| s.segment()) else {
                        continue;
                    };
                    page_group(&mut page, (seg, g), &pieces, scan, (lo, hi, limit), &past)?
                }
                Piece::Gap(a, b) => {
                    let start = match &after {
                        // Resuming inside a partition: it is read again, its rows up to the
                        // last one returned skipped.
                        Some(at) if at.token >= a => PartitionBound::Key {
                            token: at.token,
                            key: at.key.clone(),
                            inclusive: !at.clustering.is_empty(),
                        },
                        _ => PartitionBound::Token {
                            token: a,
                            inclusive: true,
                        },
                    };
                    // Partitions a restriction leaves out still count against what is read: a
                    // short page only says "more may follow", as a row scan's pages do.
                    let want = limit - page.keys.len();
                    let (r, scanned) = self.row_path_read(
                        table,
                        (start, b),
                        want,
                        scan,
                        &pieces,
                        page.tombstones_scanned,
                    )?;
                    page.tombstones_scanned += scanned;
                    if page_rows(&mut page, &r.partitions, &pieces, scan, limit, &past) {
                        true
                    } else if r.partitions.len() >= want {
                        page.stopped_after = r.partitions.last().map(|p| (p.token, p.key.clone()));
                        true
                    } else {
                        false
                    }
                }
            };
            if full {
                page.more = true;
                return Ok(page);
            }
        }
        Ok(page)
    }
    /// Up to `partitions` partitions of `start..=hi` through the row path, with only the
    /// scan's columns, within what is left of its tombstone threshold after `scanned`;
    /// returns them and the tombstones the read scanned.
    fn row_path_read(
        &self,
        table: TableId,
        (start, hi): (PartitionBound, i64),
        partitions: usize,
        scan: &ColumnScan,
        pieces: &Pieces,
        scanned: u64,
    ) -> Result<(ReadResult, u64), StorageError> {
        let q = ReadQuery {
            partitions: PartitionRange::Range {
                start,
                end: PartitionBound::Token {
                    token: hi,
                    inclusive: true,
                },
            },
            slices: Vec::new(),
            reversed: false,
            row_limit: None,
            per_partition_limit: None,
            partition_limit: Some(partitions),
            now_s: scan.now_s,
            resume_after: None,
            columns: Some(Arc::from(pieces.sorted_ids.as_slice())),
        };
        let left = scan.tombstone_failure_threshold.saturating_sub(scanned);
        let r = self.read_bounded(table, &q, left)?;
        let n = r.stats.tombstones_scanned;
        Ok((r, n))
    }
}

/// Decodes the plain row groups `groups` (SSTable index, group) into batches of the rows
/// inside `lo..=hi` that pass the scan's restrictions, on up to one thread per core; one
/// result per group, in the order given (None for a group of no segment).
fn decode_groups(
    groups: &[(usize, usize)],
    pieces: &Pieces,
    scan: &ColumnScan,
    (lo, hi): (i64, i64),
) -> Vec<Result<Option<ScanBatch>, StorageError>> {
    let decode = |&(si, g): &(usize, usize)| -> Result<Option<ScanBatch>, StorageError> {
        match pieces.sstables.get(si).and_then(|s| s.segment()) {
            Some(seg) => group_batch(seg, g, scan, (lo, hi)).map(Some),
            None => Ok(None),
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads < 2 || groups.len() < 2 {
        return groups.iter().map(decode).collect();
    }
    let per = groups.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = groups
            .chunks(per)
            .map(|part| scope.spawn(move || part.iter().map(decode).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join().unwrap_or_else(|_| {
                    vec![Err(StorageError::InvalidRequest(
                        "a column scan thread failed".into(),
                    ))]
                })
            })
            .collect()
    })
}

/// Row group `g` of `seg` as a batch: the rows inside `lo..=hi` (the token bounds matter only
/// to a group that straddles one) that pass the scan's restrictions, with group runs when
/// the scan asks for them.
fn group_batch(
    seg: &SegmentReader,
    g: usize,
    scan: &ColumnScan,
    (lo, hi): (i64, i64),
) -> Result<ScanBatch, StorageError> {
    let (glo, ghi) = seg.group_token_range(g).unwrap_or((lo, hi));
    let straddles = glo < lo || ghi > hi;
    let need_keys = straddles || scan.group_runs.is_some();
    // Only the scan's own columns are decoded; a restriction on another column is evaluated
    // first, on its chunk's encoding (`select_rows`), which never builds its vector.
    let ids: Vec<ColumnId> = scan.columns.iter().map(|c| c.id).collect();
    let (on_others, on_scanned): (Vec<_>, Vec<_>) = scan
        .restrictions
        .iter()
        .partition(|r| !ids.contains(&r.column.id));
    let mut selected = None;
    for r in on_others {
        let p = ValuePredicate::new(r.column.value_type, r.op, &r.value);
        narrow(&mut selected, seg.select_rows(g, r.column.id, &p)?);
    }
    // When those leave few rows (a month of six years), only their values are decoded.
    let rows = seg.group_rows(g);
    let few = selected.as_ref().filter(|s| {
        !need_keys && on_scanned.is_empty() && s.count_ones() * SPARSE_SELECTION < rows
    });
    let (rows, keys, columns) = match few {
        Some(s) => {
            let columns = ids
                .iter()
                .map(|id| seg.read_selected(g, *id, s))
                .collect::<Result<Vec<_>, _>>()?;
            (rows, None, columns)
        }
        None => group_columns(seg, g, &ids, need_keys)?,
    };
    let partitions = match (&keys, scan.group_runs) {
        (Some(k), Some(n)) => group_runs(k, rows, seg, n),
        _ => Vec::new(),
    };
    if let Some(k) = keys.filter(|_| straddles) {
        let in_range = Bitmap::from_bools(
            (0..rows).map(|i| k.tokens.int(i).is_some_and(|tk| lo <= tk && tk <= hi)),
            rows,
        );
        narrow(&mut selected, in_range);
    }
    for r in on_scanned {
        let j = ids.iter().position(|id| *id == r.column.id);
        narrow(
            &mut selected,
            restriction_rows(r, j.and_then(|j| columns.get(j)), rows),
        );
    }
    Ok(ScanBatch {
        rows,
        selected,
        columns,
        partitions,
    })
}

/// The runs of a row group's `rows` rows by partition and first `n` clustering values, from
/// its key columns.
fn group_runs(k: &KeyColumns, rows: usize, seg: &SegmentReader, n: usize) -> Vec<PartitionRun> {
    let mut runs = Vec::new();
    let mut key = Vec::new();
    let types: Vec<ValueType> = seg.clustering_types().iter().take(n).copied().collect();
    let mut values: Vec<Vec<u8>> = vec![Vec::new(); types.len()];
    for i in 0..rows {
        key.clear();
        let Some(token) = k.tokens.int(i) else {
            continue;
        };
        if !k.keys.serialize_into(i, seg.key_type(), &mut key) {
            continue;
        }
        for ((v, t), c) in values.iter_mut().zip(&types).zip(&k.clustering) {
            v.clear();
            c.serialize_into(i, *t, v);
        }
        let prefix: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        extend_runs(&mut runs, i, (token, &key), &prefix);
    }
    runs
}

/// Row group `g` of `seg`: its rows, its key columns when `keys`, and the values of columns
/// `ids` (in that order).
fn group_columns(
    seg: &SegmentReader,
    g: usize,
    ids: &[ColumnId],
    keys: bool,
) -> Result<(usize, Option<KeyColumns>, Vec<Column>), StorageError> {
    let req = ScanRequest {
        columns: ids.to_vec(),
        restrictions: Vec::new(),
        keys,
        metadata: false,
    };
    let b = seg.read_group(g, &req)?;
    Ok((
        b.rows,
        b.keys,
        b.columns.into_iter().map(|c| c.values).collect(),
    ))
}

/// Adds the selected rows of plain row group `g` of `seg` inside `lo..=hi` and `past` the
/// resume point to `page`, up to `limit` rows; whether the page is full.
fn page_group(
    page: &mut ColumnPage,
    (seg, g): (&SegmentReader, usize),
    pieces: &Pieces,
    scan: &ColumnScan,
    (lo, hi, limit): (i64, i64, usize),
    past: &dyn Fn(i64, &Bytes, &[Bytes]) -> bool,
) -> Result<bool, StorageError> {
    let (rows, keys, columns) = group_columns(seg, g, &pieces.read_ids, true)?;
    let Some(k) = keys else {
        return Ok(false);
    };
    let mut selected = None;
    apply_restrictions(&mut selected, rows, &columns, &pieces.read_ids, scan);
    // Entries are in token order: a page resuming inside the group starts at its first
    // token, not at the group's first row.
    let first = match &k.tokens.values {
        ColumnValues::Int(v) => v.partition_point(|t| *t < lo),
        _ => 0,
    };
    let types = seg.clustering_types();
    for i in first..rows {
        let Some(token) = k.tokens.int(i) else {
            continue;
        };
        if token > hi {
            break;
        }
        if selected.as_ref().is_some_and(|s| !s.get(i)) {
            continue;
        }
        let Some(key) = k.keys.serialized(i, seg.key_type()) else {
            continue;
        };
        let key = page.stash(&key);
        let clustering: Vec<Bytes> = k
            .clustering
            .iter()
            .zip(types)
            .map(|(c, t)| page.stash(&c.serialized(i, *t).unwrap_or_default()))
            .collect();
        if !past(token, &key, &clustering) {
            continue;
        }
        push_row(page, (token, key, clustering), &columns, scan, i);
        if page.full(limit) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Adds the selected rows of row-path `partitions` `past` the resume point to `page`, up to
/// `limit` rows; whether the page is full.
fn page_rows(
    page: &mut ColumnPage,
    partitions: &[PartitionData],
    pieces: &Pieces,
    scan: &ColumnScan,
    limit: usize,
    past: &dyn Fn(i64, &Bytes, &[Bytes]) -> bool,
) -> bool {
    let batch = rows_batch(partitions, &pieces.read_ids, scan);
    let rows = partitions
        .iter()
        .flat_map(|p| p.rows.iter().map(move |r| (p, r)));
    for (i, (p, row)) in rows.enumerate() {
        if !batch.is_selected(i) || !past(p.token, &p.key, &row.clustering) {
            continue;
        }
        let at = (p.token, p.key.clone(), row.clustering.clone());
        push_row(page, at, &batch.columns, scan, i);
        if page.full(limit) {
            return true;
        }
    }
    false
}

/// Appends row `i` of `columns` (in `read_ids` order: the scan's columns first).
fn push_row(
    page: &mut ColumnPage,
    (token, key, clustering): (i64, Bytes, Vec<Bytes>),
    columns: &[Column],
    scan: &ColumnScan,
    i: usize,
) {
    if let Some(cells) = &scan.wire {
        for cell in cells {
            let value = match *cell {
                WireCell::PartitionKey => Some(key.as_ref()),
                WireCell::Clustering(c) => clustering.get(c).map(|v| v.as_ref()),
                WireCell::Column(j) => {
                    page.scratch.clear();
                    let present =
                        columns
                            .get(j)
                            .zip(scan.columns.get(j))
                            .is_some_and(|(col, spec)| {
                                col.serialize_into(i, spec.value_type, &mut page.scratch)
                            });
                    present.then_some(page.scratch.as_slice())
                }
            };
            put_wire_cell(&mut page.wire, value);
        }
    } else {
        for (j, (col, spec)) in columns.iter().zip(&scan.columns).enumerate() {
            page.scratch.clear();
            let present = col.serialize_into(i, spec.value_type, &mut page.scratch);
            let v = present.then(|| stash_in(&mut page.arena, &page.scratch));
            if let Some(out) = page.cells.get_mut(j) {
                out.push(v);
            }
        }
    }
    page.keys.push((token, key));
    page.clustering.push(clustering);
}

/// A cell as a ROWS result body holds it: `[int]` length, -1 for null, then the bytes.
fn put_wire_cell(out: &mut bytes::BytesMut, value: Option<&[u8]>) {
    use bytes::BufMut;
    match value {
        Some(v) => {
            out.put_i32(i32::try_from(v.len()).unwrap_or(i32::MAX));
            out.put_slice(v);
        }
        None => out.put_i32(-1),
    }
}
