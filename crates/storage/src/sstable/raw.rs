//! Compaction's fast path: a partition that only one input SSTable holds (or several whose rows
//! do not interleave), and that holds nothing compaction could purge or reconcile (no partition,
//! range, row or collection deletion; cell tombstones still within gc_grace_seconds and TTL data
//! not yet expired are fine), moves to the output in its encoded form. Only its timestamps are
//! rewritten: format-2 timestamps are deltas from a base each SSTable picks for itself
//! (codec/compact.rs). Decoding into a `Partition` (a BTreeMap of rows, each a BTreeMap of
//! cells) and encoding it again costs several times this walk over the bytes, and most
//! partitions of a SizeTiered or major compaction are in one input only.

use super::{block_spans, format::DataFormat, RowBlock, SSTableWriter};
use crate::clustering::{CKey, ClusteringComparator};
use crate::codec::compact::*;
use crate::codec::Reader;
use crate::error::StorageError;
use bytes::Bytes;
use std::sync::Arc;

/// A partition re-encoded for the output by [`rebase`], with what its index entry and the
/// output's statistics need.
#[derive(Debug)]
pub(crate) struct EncodedPartition {
    pub token: i64,
    pub key: Bytes,
    pub bytes: Vec<u8>,
    pub header_len: usize,
    /// Start of each row, relative to the partition's first byte.
    pub row_starts: Vec<usize>,
    pub static_row: bool,
    /// Row markers plus cells (the statistics' cell count).
    pub cells: u64,
    /// Smallest and largest timestamp (None when the partition has none).
    pub timestamps: Option<(i64, i64)>,
    /// The timestamp base `bytes` are encoded for.
    pub base_us: i64,
    /// Tombstones and expiring data in it, for the output's statistics.
    pub deaths: Vec<Death>,
}

/// A partition's first and last row clustering.
pub(crate) type ClusteringSpan = (CKey, CKey);

/// Something in a copied partition that the statistics' tombstone and TTL histograms count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Death {
    /// A cell tombstone and its local deletion time.
    Tombstone(i64),
    /// A cell with a TTL: (ttl, expiry).
    ExpiringCell(u32, i64),
    /// A row marker with a TTL: (ttl, expiry).
    ExpiringRow(u32, i64),
}

/// What a copy may carry unchanged: tombstones that are not yet purgeable (deleted after
/// `gc_before_s`) and TTL data not yet expired at `now_s`. Anything else needs the decoding
/// merge, which purges and converts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Horizon {
    pub gc_before_s: i64,
    pub now_s: i64,
}

impl Horizon {
    /// Carries no tombstone and no TTL data.
    #[cfg(test)]
    pub(crate) const NONE: Horizon = Horizon {
        gc_before_s: i64::MAX,
        now_s: i64::MAX,
    };
    /// Carries everything (for partitions a walk has checked already).
    pub(crate) const ALL: Horizon = Horizon {
        gc_before_s: i64::MIN,
        now_s: i64::MIN,
    };
}

fn decode_err() -> StorageError {
    StorageError::Decode {
        what: "partition (raw copy)",
    }
}

fn put_uv(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A walk over one encoded partition that splices rewritten timestamps into a copy of it: the
/// bytes between timestamps are copied in runs, not parsed into the output.
struct Walk<'a, 'b> {
    src: &'a [u8],
    pos: usize,
    /// `src[..copied]` is in `out` already (with its timestamps rewritten).
    copied: usize,
    out: &'b mut Vec<u8>,
    from_base: i64,
    to_base: i64,
    timestamps: Option<(i64, i64)>,
    cells: u64,
    horizon: Horizon,
    deaths: Vec<Death>,
}

impl Walk<'_, '_> {
    fn byte(&mut self) -> Result<u8, StorageError> {
        let b = *self.src.get(self.pos).ok_or_else(decode_err)?;
        self.pos += 1;
        Ok(b)
    }

    fn uv(&mut self) -> Result<u64, StorageError> {
        let b = self.byte()?;
        if b < 0x80 {
            return Ok(u64::from(b));
        }
        let mut v = u64::from(b & 0x7f);
        for i in 1..10 {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(decode_err())
    }

    fn vbytes(&mut self) -> Result<(), StorageError> {
        let n = usize::try_from(self.uv()?).map_err(|_| decode_err())?;
        match self.pos.checked_add(n) {
            Some(end) if end <= self.src.len() => {
                self.pos = end;
                Ok(())
            }
            _ => Err(decode_err()),
        }
    }

    fn sv(&mut self) -> Result<i64, StorageError> {
        let u = self.uv()?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }

    /// A TTL and expiry; None when the data expired (the merge turns it into a tombstone).
    fn expiry(&mut self) -> Result<Option<(u32, i64)>, StorageError> {
        let ttl = u32::try_from(self.uv()?).map_err(|_| decode_err())?;
        let expires_at = self.sv()?;
        Ok((ttl == 0 || expires_at > self.horizon.now_s).then_some((ttl, expires_at)))
    }

    /// Where the byte at `pos` lands in the output.
    fn out_pos(&self) -> usize {
        self.out.len() + (self.pos - self.copied)
    }

    fn timestamp(&mut self) -> Result<(), StorageError> {
        let at = self.pos;
        let u = self.uv()?;
        let delta = ((u >> 1) as i64) ^ -((u & 1) as i64);
        let ts = self.from_base.wrapping_add(delta);
        self.timestamps = Some(match self.timestamps {
            Some((lo, hi)) => (lo.min(ts), hi.max(ts)),
            None => (ts, ts),
        });
        if self.from_base != self.to_base {
            let run = self.src.get(self.copied..at).ok_or_else(decode_err)?;
            self.out.extend_from_slice(run);
            let d = ts.wrapping_sub(self.to_base);
            put_uv(self.out, ((d << 1) ^ (d >> 63)) as u64);
            self.copied = self.pos;
        }
        Ok(())
    }

    /// Copies what is left after the last rewritten timestamp.
    fn finish(&mut self) -> Result<(), StorageError> {
        let run = self.src.get(self.copied..).ok_or_else(decode_err)?;
        self.out.extend_from_slice(run);
        self.copied = self.src.len();
        Ok(())
    }

    /// A row body (flags already read); false when the row holds something only a decoding
    /// compaction may handle.
    fn row_body(&mut self, flags: u8) -> Result<bool, StorageError> {
        if flags & (R_DELETION | R_COMPLEX) != 0 {
            return Ok(false);
        }
        if flags & R_LIVENESS != 0 {
            self.timestamp()?;
            self.cells += 1;
            if flags & R_LIVENESS_EXPIRING != 0 {
                match self.expiry()? {
                    Some((0, _)) => {}
                    Some((ttl, at)) => self.deaths.push(Death::ExpiringRow(ttl, at)),
                    None => return Ok(false),
                }
            }
        }
        let n = self.uv()?;
        if flags & R_SIMPLE != 0 {
            self.uv()?;
            if flags & R_SPARSE != 0 {
                self.uv()?;
            }
            for _ in 0..n {
                self.vbytes()?;
            }
            self.cells += n;
            return Ok(true);
        }
        for _ in 0..n {
            let f = self.byte()?;
            if f & (C_NEXT_COLUMN | C_SAME_COLUMN) == 0 {
                self.uv()?;
            }
            if f & C_PATH != 0 {
                self.vbytes()?;
            }
            if f & C_ROW_TIMESTAMP == 0 {
                self.timestamp()?;
            }
            match f & (C_TOMBSTONE | C_COUNTER) {
                0 => {
                    self.vbytes()?;
                    if f & C_EXPIRING != 0 {
                        match self.expiry()? {
                            Some((0, _)) => {}
                            Some((ttl, at)) => self.deaths.push(Death::ExpiringCell(ttl, at)),
                            None => return Ok(false),
                        }
                    }
                    self.cells += 1;
                }
                C_TOMBSTONE => {
                    // Counted as a cell by the statistics' tombstone note.
                    let deleted_at = self.sv()?;
                    if deleted_at < self.horizon.gc_before_s {
                        return Ok(false);
                    }
                    self.deaths.push(Death::Tombstone(deleted_at));
                }
                C_COUNTER => {
                    self.uv()?;
                    self.uv()?;
                    self.cells += 1;
                }
                _ => return Err(decode_err()),
            }
        }
        Ok(true)
    }

    fn keyed_row(&mut self) -> Result<bool, StorageError> {
        let flags = self.byte()?;
        let mut n = u64::from(flags >> R_CLUSTERING_SHIFT);
        if n == R_CLUSTERING_COUNTED as u64 {
            n = self.uv()?;
        }
        for _ in 0..n {
            self.vbytes()?;
        }
        self.row_body(flags)
    }
}

/// Re-encodes the format-2 partition `src` (timestamps relative to `from_base`) with timestamps
/// relative to `to_base`. `Ok(None)` when the partition has a deletion, a tombstone or TTL data
/// of any kind: purging and shadowing need the decoded form.
#[cfg(test)]
pub(crate) fn rebase(
    token: i64,
    key: Bytes,
    src: &[u8],
    from_base: i64,
    to_base: i64,
) -> Result<Option<EncodedPartition>, StorageError> {
    rebase_within(token, key, src, from_base, to_base, Horizon::NONE)
}

/// [`rebase`] for a partition that may carry the cell tombstones and TTL data `horizon` allows;
/// partition, range, row and collection deletions still need the decoded form.
pub(crate) fn rebase_within(
    token: i64,
    key: Bytes,
    src: &[u8],
    from_base: i64,
    to_base: i64,
    horizon: Horizon,
) -> Result<Option<EncodedPartition>, StorageError> {
    let mut out = Vec::with_capacity(src.len() + 8);
    let mut w = Walk {
        src,
        pos: 0,
        copied: 0,
        out: &mut out,
        from_base,
        to_base,
        timestamps: None,
        cells: 0,
        horizon,
        deaths: Vec::new(),
    };
    let flags = w.byte()?;
    if flags & (P_DELETION | P_RANGE_TOMBSTONES) != 0 {
        return Ok(None);
    }
    let static_row = flags & P_STATIC != 0;
    if static_row {
        let row_flags = w.byte()?;
        if !w.row_body(row_flags)? {
            return Ok(None);
        }
    }
    let rows = w.uv()?;
    let header_len = w.out_pos();
    let mut row_starts = Vec::with_capacity(usize::try_from(rows).unwrap_or(0).min(1 << 16));
    for _ in 0..rows {
        row_starts.push(w.out_pos());
        if !w.keyed_row()? {
            return Ok(None);
        }
    }
    if w.pos != src.len() {
        return Err(decode_err());
    }
    w.finish()?;
    let (timestamps, cells, deaths) = (w.timestamps, w.cells, std::mem::take(&mut w.deaths));
    Ok(Some(EncodedPartition {
        token,
        key,
        bytes: out,
        header_len,
        row_starts,
        static_row,
        cells,
        timestamps,
        base_us: to_base,
        deaths,
    }))
}

/// Joins one partition's encodings from several inputs (each from [`rebase`], same base) whose
/// rows do not interleave, as appending to a partition across flushes leaves them: the rows of
/// each, in clustering order, behind one header. `Ok(None)` when rows interleave or a static
/// row would need merging. Returns the joined partition and its first and last clustering.
pub(crate) fn concat(
    mut parts: Vec<EncodedPartition>,
    cmp: &Arc<ClusteringComparator>,
) -> Result<Option<(EncodedPartition, Option<ClusteringSpan>)>, StorageError> {
    let mut spans = Vec::with_capacity(parts.len());
    for p in &parts {
        // With no deletion and no static row, the header is the flags byte and the row count.
        if p.static_row || p.bytes.first() != Some(&0) {
            return Ok(None);
        }
        let (Some(&first), Some(&last)) = (p.row_starts.first(), p.row_starts.last()) else {
            spans.push(None);
            continue;
        };
        let key = |at: usize| -> Result<CKey, StorageError> {
            let row = p.bytes.get(at..).ok_or_else(decode_err)?;
            Ok(CKey::row(row_clustering(row)?, cmp))
        };
        spans.push(Some((key(first)?, key(last)?)));
    }
    let mut order: Vec<usize> = (0..parts.len()).filter(|i| spans[*i].is_some()).collect();
    order.sort_by(|a, b| match (&spans[*a], &spans[*b]) {
        (Some((x, _)), Some((y, _))) => x.cmp(y),
        _ => std::cmp::Ordering::Equal,
    });
    let mut bounds: Option<(CKey, CKey)> = None;
    for i in &order {
        let Some((first, last)) = spans[*i].take() else {
            continue;
        };
        bounds = match bounds {
            Some((lo, prev_last)) if prev_last < first => Some((lo, last)),
            Some(_) => return Ok(None),
            None => Some((first, last)),
        };
    }
    let Some(head) = parts.first() else {
        return Ok(None);
    };
    let (token, key, base_us) = (head.token, head.key.clone(), head.base_us);
    let rows: usize = parts.iter().map(|p| p.row_starts.len()).sum();
    let mut bytes = vec![0u8];
    put_uv(&mut bytes, rows as u64);
    let header_len = bytes.len();
    let mut row_starts = Vec::with_capacity(rows);
    let (mut cells, mut timestamps, mut deaths) = (0, None::<(i64, i64)>, Vec::new());
    for i in order {
        let Some(p) = parts.get_mut(i) else { continue };
        let shift = bytes.len() - p.header_len;
        row_starts.extend(p.row_starts.iter().map(|s| s + shift));
        bytes.extend_from_slice(p.bytes.get(p.header_len..).ok_or_else(decode_err)?);
        cells += p.cells;
        deaths.append(&mut p.deaths);
        timestamps = match (timestamps, p.timestamps) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (t, None) | (None, t) => t,
        };
    }
    let joined = EncodedPartition {
        token,
        key,
        bytes,
        header_len,
        row_starts,
        static_row: false,
        cells,
        timestamps,
        base_us,
        deaths,
    };
    Ok(Some((joined, bounds)))
}

/// The clustering values of the encoded row at the start of `row`.
fn row_clustering(row: &[u8]) -> Result<Vec<Bytes>, StorageError> {
    let mut r = Reader::new(row, "row clustering");
    Dec::new(&mut r, 0)
        .row_clustering()
        .map(|(_, values)| values)
}

impl SSTableWriter {
    /// Fixes the timestamp base of a format-2 output before its first partition, so that a
    /// compaction can re-encode inputs for it ahead of time. False when the base is already
    /// chosen or this writer does not write format 2.
    pub(crate) fn set_timestamp_base(&mut self, base_us: i64) -> bool {
        if self.base_chosen
            || self.is_columnar()
            || !matches!(self.format, DataFormat::Compact { .. })
        {
            return false;
        }
        self.base_chosen = true;
        self.format = DataFormat::Compact { base_us };
        true
    }

    /// The timestamp base of a format-2 writer whose base is chosen.
    pub(crate) fn timestamp_base(&self) -> Option<i64> {
        match self.format {
            DataFormat::Compact { base_us } if self.base_chosen => Some(base_us),
            _ => None,
        }
    }

    /// Appends a partition that [`rebase`] encoded for this writer's timestamp base;
    /// `clustering_bounds` are its input's (the output's bounds stay a superset of its rows').
    pub(crate) fn append_encoded(
        &mut self,
        p: &EncodedPartition,
        clustering_bounds: Option<&(CKey, CKey)>,
    ) -> Result<(), StorageError> {
        self.refuse_if_columnar()?;
        self.check_order(p.token, &p.key)?;
        let mut blocks = Vec::new();
        for (row, offset, length, rows) in block_spans(&p.row_starts, p.bytes.len()) {
            let start = p.row_starts.get(row).copied().ok_or_else(decode_err)?;
            let first = row_clustering(p.bytes.get(start..).ok_or_else(decode_err)?)?;
            blocks.push(RowBlock {
                first,
                offset,
                length,
                rows,
            });
        }
        let s = &mut self.stats;
        s.rows += p.row_starts.len() as u64;
        s.cells += p.cells;
        if p.static_row {
            s.static_rows += 1;
        }
        if let Some((lo, hi)) = p.timestamps {
            s.min_timestamp_us = s.min_timestamp_us.min(lo);
            s.max_timestamp_us = s.max_timestamp_us.max(hi);
        }
        for d in &p.deaths {
            match *d {
                Death::Tombstone(at) => {
                    s.note_tombstones_at(p.token, 1);
                    s.note_tombstone(at);
                    s.max_local_deletion_time_s = s.max_local_deletion_time_s.max(at);
                }
                Death::ExpiringCell(ttl, at) => {
                    s.note_expiring(ttl, at);
                    s.max_local_deletion_time_s = s.max_local_deletion_time_s.max(at);
                }
                Death::ExpiringRow(ttl, at) => s.note_expiring(ttl, at),
            }
        }
        if let (Some((lo, hi)), false) = (clustering_bounds, p.row_starts.is_empty()) {
            if self.min_ck.as_ref().is_none_or(|m| lo < m) {
                self.min_ck = Some(lo.clone());
            }
            if self.max_ck.as_ref().is_none_or(|m| hi > m) {
                self.max_ck = Some(hi.clone());
            }
        }
        self.push_partition(p.token, &p.key, &p.bytes, p.header_len, blocks)
    }
}
