//! SSTable data format 2 ("compact"): the encoding of partitions in `Data.db` for SSTables whose
//! statistics say `data_format = 2`. Format 1 (format1.rs, fixed-width fields) stays the
//! commitlog encoding and is still read for SSTables written before format 2.
//!
//! Why: format 1 spends ~30 bytes of fixed-width fields per cell, which LZ4 cannot remove when
//! values are random. Format 2 follows Cassandra's cell layout: varints, a flags byte, and
//! timestamps as deltas, so a cell of a plain CQL row costs its value plus ~1-2 bytes.
//!
//! `uv` = unsigned LEB128 varint, `sv` = zigzag + LEB128 (signed), `vbytes` = `uv` length + data,
//! `ts` = `sv` of (timestamp - the SSTable's timestamp base; statistics hold the base).
//! The key and token are not repeated here: the index entry holds them.
//! ```text
//! header  = flags u8 (1 deletion, 2 range tombstones, 4 static row) | [dt] | [uv n + n * (bound,
//!           bound, dt)] | [row] | uv n_rows
//! keyed   = row flags | clustering: [uv count when flags say 3+] + count * vbytes | row body
//! row     = flags u8 (1 liveness, 2 liveness expiring, 4 deletion, 8 complex deletions,
//!           16 simple, 32 sparse, bits 6-7: clustering value count 0-2, or 3 = a uv count follows)
//!           | row body
//! body    = [ts] | [uv ttl, sv expires] | [dt] | [uv n + n * (uv column, dt)]
//!           | uv n_cells | simple: uv first column + [sparse: uv bitmap] + n_cells * vbytes value
//!                        | else: n_cells * cell
//! bound   = weight i8 | prefix      prefix = uv count + count * vbytes
//! dt      = ts marked_for_delete_at | sv local_deletion_time
//! cell    = flags u8 (1 path, 2 tombstone, 4 expiring, 8 counter, 16 timestamp = row's,
//!           32 column = previous + 1, 64 column = previous) | [uv column] | [vbytes path]
//!           | [ts] | live: vbytes value, expiring: uv ttl, sv expires | tombstone: sv ldt
//!           | counter: sv clock, sv total
//! ```
//! A "simple" row (the common CQL insert: a row marker and live, non-expiring cells of
//! consecutive columns at the marker's timestamp) stores each cell as just its value. A
//! "sparse" simple row (some columns null, as in wide analytic tables) adds one bitmap of the
//! columns present (bit i = first column + i, within 64 columns), as Cassandra's row encoding
//! does, instead of a flags byte and a column id per cell.

use crate::clustering::{CKey, ClusteringComparator};
use crate::error::StorageError;
use crate::partition::cellmap::CellKey;
use crate::partition::{Partition, Row};
use crate::reconcile::{Cell, CellKind};
use crate::types::{ColumnId, DeletionTime, Liveness};
use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::Arc;

use crate::codec::Reader;

pub(crate) const P_DELETION: u8 = 1;
pub(crate) const P_RANGE_TOMBSTONES: u8 = 2;
pub(crate) const P_STATIC: u8 = 4;

pub(crate) const R_LIVENESS: u8 = 1;
pub(crate) const R_LIVENESS_EXPIRING: u8 = 2;
pub(crate) const R_DELETION: u8 = 4;
pub(crate) const R_COMPLEX: u8 = 8;
pub(crate) const R_SIMPLE: u8 = 16;
pub(crate) const R_SPARSE: u8 = 32;
/// Widest column span a sparse row's bitmap covers.
const SPARSE_SPAN: u32 = 64;
/// Bits 6-7 of the row flags: the clustering value count when below 3.
pub(crate) const R_CLUSTERING_SHIFT: u8 = 6;
pub(crate) const R_CLUSTERING_COUNTED: usize = 3;

pub(crate) const C_PATH: u8 = 1;
pub(crate) const C_TOMBSTONE: u8 = 2;
pub(crate) const C_EXPIRING: u8 = 4;
pub(crate) const C_COUNTER: u8 = 8;
pub(crate) const C_ROW_TIMESTAMP: u8 = 16;
pub(crate) const C_NEXT_COLUMN: u8 = 32;
pub(crate) const C_SAME_COLUMN: u8 = 64;

fn err(what: &'static str) -> StorageError {
    StorageError::Decode { what }
}

/// Appends format-2 encodings; `base_us` is the SSTable's timestamp base.
pub struct Enc<'a> {
    pub out: &'a mut Vec<u8>,
    pub base_us: i64,
}

impl Enc<'_> {
    fn u8(&mut self, v: u8) {
        self.out.push(v);
    }
    pub fn uv(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }
    pub fn sv(&mut self, v: i64) {
        self.uv(((v << 1) ^ (v >> 63)) as u64);
    }
    pub fn vbytes(&mut self, b: &[u8]) {
        self.uv(b.len() as u64);
        self.out.extend_from_slice(b);
    }
    /// Wrapping, so any i64 timestamp round-trips whatever the base.
    fn ts(&mut self, t: i64) {
        self.sv(t.wrapping_sub(self.base_us));
    }
    fn dt(&mut self, d: &DeletionTime) {
        self.ts(d.marked_for_delete_at_us);
        self.sv(d.local_deletion_time_s);
    }
    fn prefix(&mut self, values: &[Bytes]) {
        self.uv(values.len() as u64);
        for v in values {
            self.vbytes(v);
        }
    }

    /// The row flags (without the clustering count).
    fn row_flags(r: &Row) -> u8 {
        let live_ts = r.liveness.map(|l| l.timestamp_us);
        let mut flags = 0;
        if let Some(l) = &r.liveness {
            flags |= R_LIVENESS;
            if l.ttl_s != 0 || l.expires_at_s != 0 {
                flags |= R_LIVENESS_EXPIRING;
            }
        }
        if r.deletion.is_some() {
            flags |= R_DELETION;
        }
        if !r.complex_deletions.is_empty() {
            flags |= R_COMPLEX;
        }
        let first_col = r.cells.keys().next().map(|(c, _)| *c);
        let plain = live_ts.is_some()
            && first_col.is_some()
            && r.cells.iter().all(|((_, path), c)| {
                path.is_none()
                    && Some(c.timestamp_us) == live_ts
                    && matches!(
                        c.kind,
                        CellKind::Live {
                            ttl_s: 0,
                            expires_at_s: 0,
                            ..
                        }
                    )
            });
        let consecutive = r
            .cells
            .keys()
            .enumerate()
            .all(|(i, (col, _))| first_col.and_then(|f| f.checked_add(i as u32)) == Some(*col));
        let span_fits = match (first_col, r.cells.keys().last()) {
            (Some(f), Some((l, _))) => l - f < SPARSE_SPAN,
            _ => false,
        };
        if plain && consecutive {
            flags |= R_SIMPLE;
        } else if plain && span_fits {
            flags |= R_SIMPLE | R_SPARSE;
        }
        flags
    }

    fn row(&mut self, r: &Row) {
        let flags = Self::row_flags(r);
        self.u8(flags);
        self.row_body(flags, r);
    }

    fn row_body(&mut self, flags: u8, r: &Row) {
        self.row_header(flags, r);
        self.uv(r.cells.len() as u64);
        if flags & R_SIMPLE != 0 {
            self.simple_cells(flags, r);
            return;
        }
        let live_ts = r.liveness.map(|l| l.timestamp_us);
        let mut prev: i64 = -1;
        for ((col, path), c) in &r.cells {
            self.cell(&mut prev, *col, path.as_ref(), c, live_ts);
        }
    }

    /// Liveness, deletion and complex deletions, as `flags` announce them.
    #[inline]
    fn row_header(&mut self, flags: u8, r: &Row) {
        if let Some(l) = &r.liveness {
            self.ts(l.timestamp_us);
            if flags & R_LIVENESS_EXPIRING != 0 {
                self.uv(u64::from(l.ttl_s));
                self.sv(l.expires_at_s);
            }
        }
        if let Some(d) = &r.deletion {
            self.dt(d);
        }
        if flags & R_COMPLEX != 0 {
            self.uv(r.complex_deletions.len() as u64);
            for (c, d) in &r.complex_deletions {
                self.uv(u64::from(*c));
                self.dt(d);
            }
        }
    }

    /// The cells of a simple row: the first column, the bitmap of a sparse one, the values.
    #[inline]
    fn simple_cells(&mut self, flags: u8, r: &Row) {
        let first = r.cells.keys().next().map_or(0, |(c, _)| *c);
        self.uv(u64::from(first));
        if flags & R_SPARSE != 0 {
            let bitmap = r
                .cells
                .keys()
                .fold(0u64, |m, (c, _)| m | (1u64 << ((c - first) % SPARSE_SPAN)));
            self.uv(bitmap);
        }
        for c in r.cells.values() {
            if let CellKind::Live { value, .. } = &c.kind {
                self.vbytes(value);
            }
        }
    }

    /// One cell of a row that is not simple; `prev` is the previous cell's column.
    #[inline]
    fn cell(
        &mut self,
        prev: &mut i64,
        col: ColumnId,
        path: Option<&Bytes>,
        c: &Cell,
        live_ts: Option<i64>,
    ) {
        let mut f = 0;
        let col64 = i64::from(col);
        if col64 == *prev + 1 {
            f |= C_NEXT_COLUMN;
        } else if col64 == *prev {
            f |= C_SAME_COLUMN;
        }
        *prev = col64;
        if path.is_some() {
            f |= C_PATH;
        }
        if Some(c.timestamp_us) == live_ts {
            f |= C_ROW_TIMESTAMP;
        }
        f |= match &c.kind {
            CellKind::Live {
                ttl_s,
                expires_at_s,
                ..
            } if *ttl_s != 0 || *expires_at_s != 0 => C_EXPIRING,
            CellKind::Live { .. } => 0,
            CellKind::Tombstone { .. } => C_TOMBSTONE,
            CellKind::Counter { .. } => C_COUNTER,
        };
        self.u8(f);
        if f & (C_NEXT_COLUMN | C_SAME_COLUMN) == 0 {
            self.uv(u64::from(col));
        }
        if let Some(p) = path {
            self.vbytes(p);
        }
        if f & C_ROW_TIMESTAMP == 0 {
            self.ts(c.timestamp_us);
        }
        match &c.kind {
            CellKind::Live {
                value,
                ttl_s,
                expires_at_s,
            } => {
                self.vbytes(value);
                if f & C_EXPIRING != 0 {
                    self.uv(u64::from(*ttl_s));
                    self.sv(*expires_at_s);
                }
            }
            CellKind::Tombstone {
                local_deletion_time_s,
            } => self.sv(*local_deletion_time_s),
            CellKind::Counter { clock, total } => {
                self.sv(*clock);
                self.sv(*total);
            }
        }
    }

    /// Everything of `p` but its key, token and rows; returns the bytes written.
    pub fn partition_header(&mut self, p: &Partition, row_count: u32) -> usize {
        let base = self.out.len();
        let mut flags = 0;
        if p.deletion.is_some() {
            flags |= P_DELETION;
        }
        if !p.range_tombstones.is_empty() {
            flags |= P_RANGE_TOMBSTONES;
        }
        if !p.static_row.is_empty() {
            flags |= P_STATIC;
        }
        self.u8(flags);
        if let Some(d) = &p.deletion {
            self.dt(d);
        }
        if flags & P_RANGE_TOMBSTONES != 0 {
            self.uv(p.range_tombstones.len() as u64);
            for (s, e, d) in &p.range_tombstones {
                for b in [s, e] {
                    self.u8(b.weight as u8);
                    self.prefix(&b.values);
                }
                self.dt(d);
            }
        }
        if flags & P_STATIC != 0 {
            self.row(&p.static_row);
        }
        self.uv(u64::from(row_count));
        self.out.len() - base
    }

    /// A row with its clustering. Most tables have at most two clustering columns, so their
    /// value count rides in the flags byte (one byte saved per row); the file stays readable
    /// without the schema (offline tools).
    pub fn keyed_row(&mut self, k: &CKey, r: &Row) {
        let n = k.values.len();
        let inline = n.min(R_CLUSTERING_COUNTED);
        let flags = Self::row_flags(r);
        self.u8(flags | ((inline as u8) << R_CLUSTERING_SHIFT));
        if inline == R_CLUSTERING_COUNTED {
            self.uv(n as u64);
        }
        for v in &k.values {
            self.vbytes(v);
        }
        self.row_body(flags, r);
    }

    /// The whole partition; row starts (relative to its first byte) go to `row_starts`; returns
    /// the header length.
    pub fn partition_indexed(&mut self, p: &Partition, row_starts: &mut Vec<usize>) -> usize {
        let base = self.out.len();
        let header_len = self.partition_header(p, p.rows.len() as u32);
        for (k, r) in &p.rows {
            row_starts.push(self.out.len() - base);
            self.keyed_row(k, r);
        }
        header_len
    }
}

/// Reads format-2 encodings with bounds checks (corrupt input is a `Decode` error).
pub struct Dec<'a, 'b> {
    pub r: &'a mut Reader<'b>,
    pub base_us: i64,
    /// The regular columns a read returns, sorted (None: all). Values of other columns are not
    /// copied (an empty value keeps the cell's timestamp, TTL and liveness, which decide
    /// whether the row is live), and cells of a simple row that its row marker makes redundant
    /// are stepped over: see `simple_cells`.
    columns: Option<&'a [ColumnId]>,
    /// The buffer `r` reads, when values may share it instead of being copied out of it.
    shared: Option<&'a Bytes>,
}

impl<'a, 'b> Dec<'a, 'b> {
    pub fn new(r: &'a mut Reader<'b>, base_us: i64) -> Self {
        Dec {
            r,
            base_us,
            columns: None,
            shared: None,
        }
    }

    /// Values decoded from here on point into `buf` (which `r` must read) instead of being
    /// copied: a read whose result lives briefly saves an allocation and a copy per cell. What
    /// outlives a read (a cached row) must not share, or it would pin the whole buffer.
    pub fn sharing(mut self, buf: Option<&'a Bytes>) -> Self {
        self.shared = buf;
        self
    }

    /// A decoder for a read that returns only `columns` (see the field).
    pub fn projected(r: &'a mut Reader<'b>, base_us: i64, columns: Option<&'a [ColumnId]>) -> Self {
        Dec {
            r,
            base_us,
            columns,
            shared: None,
        }
    }

    fn unwanted(&self, column: ColumnId) -> bool {
        self.columns
            .is_some_and(|w| w.binary_search(&column).is_err())
    }
    pub fn uv(&mut self) -> Result<u64, StorageError> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.r.u8()?;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(err("varint"))
    }
    pub fn sv(&mut self) -> Result<i64, StorageError> {
        let u = self.uv()?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }
    fn u32(&mut self) -> Result<u32, StorageError> {
        u32::try_from(self.uv()?).map_err(|_| err("varint u32"))
    }
    /// A count of items of at least `min_item_bytes` each; bounding it by the bytes left keeps
    /// a corrupt count from triggering a huge allocation or a long loop.
    pub fn count(&mut self, min_item_bytes: usize) -> Result<usize, StorageError> {
        let n = usize::try_from(self.uv()?).map_err(|_| err("count"))?;
        if n.saturating_mul(min_item_bytes) > self.r.remaining() {
            return Err(err("count"));
        }
        Ok(n)
    }
    pub fn vbytes(&mut self) -> Result<Bytes, StorageError> {
        let n = usize::try_from(self.uv()?).map_err(|_| err("length"))?;
        let value = self.r.take(n)?;
        if let Some(buf) = self.shared {
            // Where the value sits in `buf`, checked, so a reader over another buffer copies.
            let offset = (value.as_ptr() as usize).wrapping_sub(buf.as_ptr() as usize);
            if offset.checked_add(n).is_some_and(|end| end <= buf.len()) {
                return Ok(buf.slice(offset..offset + n));
            }
        }
        Ok(Bytes::copy_from_slice(value))
    }
    /// Steps over a length-prefixed value.
    fn skip_vbytes(&mut self) -> Result<(), StorageError> {
        let n = usize::try_from(self.uv()?).map_err(|_| err("length"))?;
        self.r.take(n).map(|_| ())
    }
    fn ts(&mut self) -> Result<i64, StorageError> {
        Ok(self.base_us.wrapping_add(self.sv()?))
    }
    fn dt(&mut self) -> Result<DeletionTime, StorageError> {
        Ok(DeletionTime {
            marked_for_delete_at_us: self.ts()?,
            local_deletion_time_s: self.sv()?,
        })
    }
    fn prefix(&mut self) -> Result<Vec<Bytes>, StorageError> {
        let n = self.count(1)?;
        (0..n).map(|_| self.vbytes()).collect()
    }

    fn row(&mut self) -> Result<Row, StorageError> {
        let flags = self.r.u8()?;
        self.row_body(flags)
    }

    /// A row with its clustering (see `Enc::keyed_row`).
    fn keyed_row(&mut self, cmp: &Arc<ClusteringComparator>) -> Result<(CKey, Row), StorageError> {
        let (flags, k) = self.row_head(cmp)?;
        Ok((k, self.row_body(flags)?))
    }

    /// A row's flags and clustering.
    fn row_head(&mut self, cmp: &Arc<ClusteringComparator>) -> Result<(u8, CKey), StorageError> {
        let (flags, values) = self.row_clustering()?;
        Ok((flags, CKey::row(values, cmp)))
    }

    /// A row's flags and clustering values.
    pub fn row_clustering(&mut self) -> Result<(u8, Vec<Bytes>), StorageError> {
        let flags = self.r.u8()?;
        let mut n = usize::from(flags >> R_CLUSTERING_SHIFT);
        if n == R_CLUSTERING_COUNTED {
            n = self.count(1)?;
        }
        // One clustering column, the commonest: no collecting through a fallible iterator.
        if n == 1 {
            return Ok((flags, vec![self.vbytes()?]));
        }
        let mut values = Vec::with_capacity(n.min(self.r.remaining()));
        for _ in 0..n {
            values.push(self.vbytes()?);
        }
        Ok((flags, values))
    }

    fn row_body(&mut self, flags: u8) -> Result<Row, StorageError> {
        let mut row = self.row_header(flags)?;
        let live_ts = row.liveness.map(|l| l.timestamp_us);
        if flags & R_SIMPLE != 0 {
            self.simple_cells(flags, live_ts, &mut row)?;
            return Ok(row);
        }
        let mut prev: i64 = -1;
        for _ in 0..self.count(2)? {
            let (k, c) = self.cell(&mut prev, live_ts)?;
            row.cells.insert(k, c);
        }
        Ok(row)
    }

    /// A row with its liveness, deletion and complex deletions, as `flags` announce them.
    #[inline]
    fn row_header(&mut self, flags: u8) -> Result<Row, StorageError> {
        let mut row = Row::default();
        if flags & R_LIVENESS != 0 {
            let timestamp_us = self.ts()?;
            let (ttl_s, expires_at_s) = if flags & R_LIVENESS_EXPIRING != 0 {
                (self.u32()?, self.sv()?)
            } else {
                (0, 0)
            };
            row.liveness = Some(Liveness {
                timestamp_us,
                ttl_s,
                expires_at_s,
            });
        }
        if flags & R_DELETION != 0 {
            row.deletion = Some(self.dt()?);
        }
        if flags & R_COMPLEX != 0 {
            for _ in 0..self.count(3)? {
                let c = self.u32()?;
                let d = self.dt()?;
                row.complex_deletions.insert(c, d);
            }
        }
        Ok(row)
    }

    /// The cells of a simple row: live, unexpiring, at the row's timestamp.
    #[inline]
    fn simple_cells(
        &mut self,
        flags: u8,
        live_ts: Option<i64>,
        row: &mut Row,
    ) -> Result<(), StorageError> {
        let n = self.count(1)?;
        let first = self.u32()?;
        let timestamp_us = live_ts.ok_or_else(|| err("simple row without liveness"))?;
        // The cells share the row marker's timestamp and never expire: whatever deletion
        // shadows one shadows the marker, so with an unexpiring marker a cell the read does not
        // return cannot change whether the row is live, and is not built.
        let marker_suffices = row.liveness.is_some_and(|l| l.ttl_s == 0);
        // Column offsets from the first: 0, 1, 2... or the bitmap's set bits.
        let sparse = flags & R_SPARSE != 0;
        let mut bitmap = if sparse { self.uv()? } else { 0 };
        if sparse && bitmap.count_ones() as usize != n {
            return Err(err("sparse row bitmap"));
        }
        for i in 0..n {
            let offset = if sparse {
                let b = bitmap.trailing_zeros();
                bitmap &= bitmap - 1;
                b
            } else {
                u32::try_from(i).map_err(|_| err("column id"))?
            };
            let col = first.checked_add(offset).ok_or_else(|| err("column id"))?;
            if marker_suffices && self.unwanted(col) {
                self.skip_vbytes()?;
                continue;
            }
            let kind = CellKind::Live {
                value: self.vbytes()?,
                ttl_s: 0,
                expires_at_s: 0,
            };
            row.cells.insert((col, None), Cell { timestamp_us, kind });
        }
        Ok(())
    }

    /// One cell of a row that is not simple; `prev` is the previous cell's column.
    #[inline]
    fn cell(
        &mut self,
        prev: &mut i64,
        live_ts: Option<i64>,
    ) -> Result<(CellKey, Cell), StorageError> {
        let f = self.r.u8()?;
        let col64 = if f & C_NEXT_COLUMN != 0 {
            *prev + 1
        } else if f & C_SAME_COLUMN != 0 {
            *prev
        } else {
            i64::from(self.u32()?)
        };
        *prev = col64;
        let col = u32::try_from(col64).map_err(|_| err("column id"))?;
        let path = if f & C_PATH != 0 {
            Some(self.vbytes()?)
        } else {
            None
        };
        let timestamp_us = if f & C_ROW_TIMESTAMP != 0 {
            live_ts.ok_or_else(|| err("row timestamp without liveness"))?
        } else {
            self.ts()?
        };
        let kind = match f & (C_TOMBSTONE | C_COUNTER) {
            0 => {
                let value = if self.unwanted(col) {
                    self.skip_vbytes()?;
                    Bytes::new()
                } else {
                    self.vbytes()?
                };
                let (ttl_s, expires_at_s) = if f & C_EXPIRING != 0 {
                    (self.u32()?, self.sv()?)
                } else {
                    (0, 0)
                };
                CellKind::Live {
                    value,
                    ttl_s,
                    expires_at_s,
                }
            }
            C_TOMBSTONE => CellKind::Tombstone {
                local_deletion_time_s: self.sv()?,
            },
            C_COUNTER => CellKind::Counter {
                clock: self.sv()?,
                total: self.sv()?,
            },
            _ => return Err(err("cell kind")),
        };
        Ok(((col, path), Cell { timestamp_us, kind }))
    }

    /// The partition header; `key` and `token` come from the index entry. Returns the
    /// partition (no rows) and the row count.
    pub fn partition_header(
        &mut self,
        cmp: &Arc<ClusteringComparator>,
        key: Bytes,
        token: i64,
    ) -> Result<(Partition, usize), StorageError> {
        let flags = self.r.u8()?;
        let mut p = Partition::new(key, token);
        if flags & P_DELETION != 0 {
            p.deletion = Some(self.dt()?);
        }
        if flags & P_RANGE_TOMBSTONES != 0 {
            for _ in 0..self.count(6)? {
                let mut bound = || -> Result<CKey, StorageError> {
                    let weight = self.r.u8()? as i8;
                    let values = self.prefix()?;
                    Ok(CKey {
                        values,
                        weight,
                        cmp: cmp.clone(),
                    })
                };
                let s = bound()?;
                let e = bound()?;
                let d = self.dt()?;
                p.range_tombstones.push((s, e, d));
            }
        }
        if flags & P_STATIC != 0 {
            p.static_row = self.row()?;
        }
        // Not bounded by the bytes left: callers may hold only the header. Decoding the rows
        // fails at the first missing byte, so a corrupt count cannot run away.
        let n = usize::try_from(self.uv()?).map_err(|_| err("row count"))?;
        Ok((p, n))
    }

    /// `n` rows with their clusterings, in stored order.
    pub fn keyed_rows(
        &mut self,
        cmp: &Arc<ClusteringComparator>,
        n: usize,
        out: &mut VecDeque<(CKey, Row)>,
    ) -> Result<(), StorageError> {
        for _ in 0..n {
            out.push_back(self.keyed_row(cmp)?);
        }
        Ok(())
    }
    /// Steps over a row body (flags already read) without building it: the bytes a skipped row
    /// takes, checked as `row_body` checks them.
    fn skip_row_body(&mut self, flags: u8) -> Result<(), StorageError> {
        let skip_bytes = |d: &mut Self| -> Result<(), StorageError> {
            let n = usize::try_from(d.uv()?).map_err(|_| err("length"))?;
            d.r.take(n).map(|_| ())
        };
        if flags & R_LIVENESS != 0 {
            self.sv()?;
            if flags & R_LIVENESS_EXPIRING != 0 {
                self.uv()?;
                self.sv()?;
            }
        }
        if flags & R_DELETION != 0 {
            self.sv()?;
            self.sv()?;
        }
        if flags & R_COMPLEX != 0 {
            for _ in 0..self.count(3)? {
                self.uv()?;
                self.sv()?;
                self.sv()?;
            }
        }
        if flags & R_SIMPLE != 0 {
            if flags & R_LIVENESS == 0 {
                return Err(err("simple row without liveness"));
            }
            let n = self.count(1)?;
            self.uv()?;
            if flags & R_SPARSE != 0 {
                self.uv()?;
            }
            for _ in 0..n {
                skip_bytes(self)?;
            }
            return Ok(());
        }
        for _ in 0..self.count(2)? {
            let f = self.r.u8()?;
            if f & (C_NEXT_COLUMN | C_SAME_COLUMN) == 0 {
                self.uv()?;
            }
            if f & C_PATH != 0 {
                skip_bytes(self)?;
            }
            if f & C_ROW_TIMESTAMP == 0 {
                self.sv()?;
            }
            match f & (C_TOMBSTONE | C_COUNTER) {
                0 => {
                    skip_bytes(self)?;
                    if f & C_EXPIRING != 0 {
                        self.uv()?;
                        self.sv()?;
                    }
                }
                C_TOMBSTONE => {
                    self.sv()?;
                }
                C_COUNTER => {
                    self.sv()?;
                    self.sv()?;
                }
                _ => return Err(err("cell kind")),
            }
        }
        Ok(())
    }

    /// `rows`, appended to `out` in clustering order, keeping only rows inside `ranges` (the
    /// others are stepped over, not built), and stopping once `keep` rows are kept. Returns
    /// whether it stopped before the `n`-th row. The caller builds its map once from all the
    /// blocks it reads: merging each block into a map would copy the map per block.
    pub fn rows_in(
        &mut self,
        cmp: &Arc<ClusteringComparator>,
        n: usize,
        out: &mut Vec<(CKey, Row)>,
        ranges: &[(CKey, CKey)],
        keep: usize,
    ) -> Result<bool, StorageError> {
        let mut kept = 0;
        let mut stopped = false;
        // Rows come in clustering order: with one slice, once a row is past its start so are
        // the rest, and only the end is left to compare (none for a slice to the table's end,
        // a page resumed inside a wide partition).
        let mut started = false;
        for _ in 0..n {
            if kept >= keep {
                stopped = true;
                break;
            }
            let (flags, k) = self.row_head(cmp)?;
            let inside = match ranges {
                [(s, e)] => {
                    started = started || s.is_table_start() || *s <= k;
                    started && (e.is_table_end() || k <= *e)
                }
                _ => crate::clustering::in_ranges(ranges, &k),
            };
            if inside {
                out.push((k, self.row_body(flags)?));
                kept += 1;
            } else {
                self.skip_row_body(flags)?;
            }
        }
        Ok(stopped)
    }

    /// `n` rows into `p`.
    pub fn rows(
        &mut self,
        cmp: &Arc<ClusteringComparator>,
        n: usize,
        p: &mut Partition,
    ) -> Result<(), StorageError> {
        // One row, the commonest partition: inserted as it is decoded, with no list first.
        if n == 1 {
            let (k, r) = self.keyed_row(cmp)?;
            p.rows.insert(k, Box::new(r));
            return Ok(());
        }
        let mut rows = Vec::with_capacity(n.min(self.r.remaining()));
        for _ in 0..n {
            rows.push(self.keyed_row(cmp)?);
        }
        add_sorted_rows(p, rows);
        Ok(())
    }
}

/// Adds rows decoded in clustering order: building the map from them in one go compares each
/// row with its neighbour instead of descending the tree per row.
fn add_sorted_rows(p: &mut Partition, rows: Vec<(CKey, Row)>) {
    let mut block: crate::partition::Rows =
        rows.into_iter().map(|(k, r)| (k, Box::new(r))).collect();
    p.rows.append(&mut block);
}

#[cfg(test)]
pub(crate) mod tests;
