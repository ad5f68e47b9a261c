//! How partitions map onto column streams. Every entry (a row, a static row, or a partition
//! with only deletions) is one position in every stream of its row group:
//!
//! ```text
//! token, key, kind (0 row, 1 static row, 2 partition without rows)
//! base_ts                 the row's reference timestamp (liveness, else first cell, else deletion)
//! live_ts, live_ttl, live_ldt     primary-key liveness (ts as a delta from base_ts)
//! row_del_ts, row_del_ldt         row deletion (ts as a delta from base_ts)
//! part_del_ts, part_del_ldt       partition deletion, on the partition's first entry of a group
//! extras                  what has no column of its own: range tombstones (with the partition
//!                         deletion), cells of collections, counters and columns not in the
//!                         schema, complex deletions: data format 1 of a keyless partition
//! clustering[i]           one stream per clustering column (null past a prefix)
//! per regular column: value, ts (delta from base_ts), ttl, ldt (TTL expiry or tombstone time)
//! ```
//!
//! Cell timestamps are deltas from the row's own, stored only where not 0 or where the cell is a
//! tombstone: a live cell without one has its row's timestamp. Every cell an INSERT wrote is
//! such a cell, so those streams are all null and cost nothing rather than a null bitmap each.
//! TTL and deletion-time streams are all null without TTLs and cost nothing too (chunk.rs). A partition's deletion and range tombstones are repeated on its first
//! entry in each row group, so a row group read alone has every deletion covering its rows.

use super::chunk::typed_column;
use super::vector::{Bitmap, BytesVec, Column, ValueType};
use super::ColumnarError;
use crate::clustering::{CKey, ClusteringComparator};
use crate::codec::{decode_partition, encode_partition, Reader};
use crate::partition::{CellMap, Partition, Row};
use crate::reconcile::{Cell, CellKind};
use crate::types::{ClusteringColumn, ColumnId, DeletionTime, Liveness};
use bytes::Bytes;
use std::sync::Arc;

/// The columnar shape of a table: the types of its key, clustering and regular columns. Storage
/// knows no CQL types: the caller maps each CQL type to a `ValueType`.
#[derive(Clone)]
pub struct ColumnarSchema {
    pub partition_key: ValueType,
    pub clustering: Vec<ClusteringSpec>,
    /// Simple (not collection, not counter) regular and static columns stored as columns; a
    /// row with a collection or counter cell of one of these is refused. Cells of columns not
    /// listed (collections, counters, dropped columns) go to the extras stream.
    pub columns: Vec<ColumnSpec>,
}

#[derive(Clone)]
pub struct ClusteringSpec {
    pub column: ClusteringColumn,
    pub value_type: ValueType,
}

pub use crate::types::ColumnSpec;

pub(super) const S_TOKEN: usize = 0;
pub(super) const S_KEY: usize = 1;
pub(super) const S_KIND: usize = 2;
pub(super) const S_BASE_TS: usize = 3;
pub(super) const S_LIVE_TS: usize = 4;
pub(super) const S_LIVE_TTL: usize = 5;
const S_LIVE_LDT: usize = 6;
pub(super) const S_ROW_DEL_TS: usize = 7;
const S_ROW_DEL_LDT: usize = 8;
pub(super) const S_PART_DEL_TS: usize = 9;
const S_PART_DEL_LDT: usize = 10;
pub(super) const S_EXTRAS: usize = 11;
const SYSTEM_STREAMS: usize = 12;
/// Streams per regular column: value, ts, ttl, ldt.
pub(super) const PER_COLUMN: usize = 4;

pub(super) const KIND_ROW: i64 = 0;
pub(super) const KIND_STATIC: i64 = 1;
pub(super) const KIND_PARTITION: i64 = 2;

/// The stream types of a segment (what the footer records of its schema).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct StreamLayout {
    pub key: ValueType,
    pub clustering: Vec<ValueType>,
    pub columns: Vec<ColumnSpec>,
}

impl StreamLayout {
    pub fn of(schema: &ColumnarSchema) -> Self {
        StreamLayout {
            key: schema.partition_key,
            clustering: schema.clustering.iter().map(|c| c.value_type).collect(),
            columns: schema.columns.clone(),
        }
    }

    pub fn streams(&self) -> usize {
        SYSTEM_STREAMS + self.clustering.len() + PER_COLUMN * self.columns.len()
    }

    pub fn clustering_stream(&self, i: usize) -> usize {
        SYSTEM_STREAMS + i
    }

    /// The first (value) stream of the column at schema position `j`.
    pub fn column_stream(&self, j: usize) -> usize {
        SYSTEM_STREAMS + self.clustering.len() + PER_COLUMN * j
    }

    pub fn column_index(&self, id: ColumnId) -> Option<usize> {
        self.columns.iter().position(|c| c.id == id)
    }

    /// Whether stream `s` is the value stream of a regular column.
    pub fn is_column_value(&self, s: usize) -> bool {
        let first = self.column_stream(0);
        s >= first && s < self.streams() && (s - first).is_multiple_of(PER_COLUMN)
    }

    /// Whether stream `s` holds serialized values (keys, clustering, column values, extras)
    /// rather than the writer's own integers.
    pub fn is_raw(&self, s: usize) -> bool {
        let first_column = self.column_stream(0);
        s == S_KEY
            || s == S_EXTRAS
            || (SYSTEM_STREAMS..first_column).contains(&s)
            || (s >= first_column && (s - first_column).is_multiple_of(PER_COLUMN))
    }

    /// The declared type of stream `s`.
    pub fn stream_type(&self, s: usize) -> ValueType {
        match s {
            S_KEY => self.key,
            S_KIND => ValueType::TinyInt,
            S_LIVE_TTL => ValueType::Int,
            S_EXTRAS => ValueType::Opaque,
            _ if s < SYSTEM_STREAMS => ValueType::BigInt,
            _ => {
                let c = s - SYSTEM_STREAMS;
                match self.clustering.get(c) {
                    Some(t) => *t,
                    None => {
                        let k = c - self.clustering.len();
                        match (k % PER_COLUMN, self.columns.get(k / PER_COLUMN)) {
                            (0, Some(spec)) => spec.value_type,
                            (2, _) => ValueType::Int,
                            _ => ValueType::BigInt,
                        }
                    }
                }
            }
        }
    }

    /// A name for reports ("token", "col 7 value", ...).
    pub fn stream_name(&self, s: usize) -> String {
        const SYSTEM: [&str; SYSTEM_STREAMS] = [
            "token",
            "key",
            "kind",
            "base_ts",
            "live_ts",
            "live_ttl",
            "live_ldt",
            "row_del_ts",
            "row_del_ldt",
            "part_del_ts",
            "part_del_ldt",
            "extras",
        ];
        if let Some(n) = SYSTEM.get(s) {
            return (*n).to_string();
        }
        let c = s - SYSTEM_STREAMS;
        if c < self.clustering.len() {
            return format!("clustering {c}");
        }
        let k = c - self.clustering.len();
        let id = self.columns.get(k / PER_COLUMN).map_or(0, |c| c.id);
        let part = ["value", "ts", "ttl", "ldt"]
            .get(k % PER_COLUMN)
            .unwrap_or(&"");
        format!("col {id} {part}")
    }
}

/// One stream's values of the row group being built.
enum Builder {
    Ints {
        vals: Vec<i64>,
        valid: Bitmap,
        nulls: usize,
    },
    Raw {
        vals: BytesVec,
        valid: Bitmap,
        nulls: usize,
    },
}

impl Builder {
    fn int(&mut self, v: Option<i64>) {
        if let Builder::Ints { vals, valid, nulls } = self {
            vals.push(v.unwrap_or(0));
            valid.push(v.is_some());
            *nulls += usize::from(v.is_none());
        }
    }

    fn raw(&mut self, v: Option<&[u8]>) {
        if let Builder::Raw { vals, valid, nulls } = self {
            vals.push(v.unwrap_or_default());
            valid.push(v.is_some());
            *nulls += usize::from(v.is_none());
        }
    }

    fn take(&mut self, t: ValueType) -> Column {
        match self {
            Builder::Ints { vals, valid, nulls } => {
                let validity = std::mem::take(valid);
                // The next group is as long: keep its vectors from growing by doubling.
                let next = Vec::with_capacity(vals.len());
                let c = Column {
                    values: super::vector::ColumnValues::Int(std::mem::replace(vals, next)),
                    validity: (*nulls > 0).then_some(validity),
                };
                *nulls = 0;
                c
            }
            Builder::Raw { vals, valid, nulls } => {
                let validity = std::mem::take(valid);
                let c = typed_column(std::mem::take(vals), (*nulls > 0).then_some(validity), t);
                *nulls = 0;
                c
            }
        }
    }
}

/// The row group being built: one builder per stream.
pub(super) struct GroupBuilder {
    pub layout: StreamLayout,
    builders: Vec<Builder>,
    pub rows: usize,
    /// Value bytes (keys, clustering, values, extras) held, for the writer's memory bound.
    pub raw_bytes: usize,
    /// (column id, schema position), sorted by id: cells are looked up per row.
    by_id: Vec<(ColumnId, usize)>,
}

impl GroupBuilder {
    pub fn new(layout: StreamLayout) -> Self {
        let builders = (0..layout.streams())
            .map(|s| {
                let raw = layout.is_raw(s);
                if raw {
                    Builder::Raw {
                        vals: BytesVec::default(),
                        valid: Bitmap::default(),
                        nulls: 0,
                    }
                } else {
                    Builder::Ints {
                        vals: Vec::new(),
                        valid: Bitmap::default(),
                        nulls: 0,
                    }
                }
            })
            .collect();
        let mut by_id: Vec<(ColumnId, usize)> = layout
            .columns
            .iter()
            .enumerate()
            .map(|(j, c)| (c.id, j))
            .collect();
        by_id.sort_unstable();
        GroupBuilder {
            layout,
            builders,
            rows: 0,
            raw_bytes: 0,
            by_id,
        }
    }

    /// Takes the columns of every stream, leaving the builder empty for the next group.
    pub fn take(&mut self) -> Vec<Column> {
        self.rows = 0;
        self.raw_bytes = 0;
        let layout = &self.layout;
        self.builders
            .iter_mut()
            .enumerate()
            .map(|(s, b)| b.take(layout.stream_type(s)))
            .collect()
    }

    fn put_int(&mut self, s: usize, v: Option<i64>) {
        if let Some(b) = self.builders.get_mut(s) {
            b.int(v);
        }
    }

    fn put_raw(&mut self, s: usize, v: Option<&[u8]>) {
        self.raw_bytes += v.map_or(0, |v| v.len());
        if let Some(b) = self.builders.get_mut(s) {
            b.raw(v);
        }
    }

    /// Adds one entry. `header`: the partition deletion and range tombstones, given on the
    /// partition's first entry of each row group.
    pub fn push(
        &mut self,
        p: &Partition,
        kind: i64,
        clustering: &[Bytes],
        row: &Row,
        header: bool,
    ) -> Result<(), ColumnarError> {
        self.rows += 1;
        self.push_keys(p, kind, clustering)?;
        let (slots, extras) = self.split_cells(row)?;
        let base = row
            .liveness
            .map(|l| l.timestamp_us)
            .or_else(|| slots.iter().flatten().map(|c| c.timestamp_us).next())
            .or(row.deletion.map(|d| d.marked_for_delete_at_us));
        let rel = |t: i64| base.map(|b| t.wrapping_sub(b));
        let l = row.liveness;
        let ints: [(usize, Option<i64>); 7] = [
            (S_BASE_TS, base),
            (S_LIVE_TS, l.and_then(|l| rel(l.timestamp_us))),
            (
                S_LIVE_TTL,
                l.filter(|l| l.ttl_s > 0).map(|l| i64::from(l.ttl_s)),
            ),
            (
                S_LIVE_LDT,
                l.filter(|l| l.ttl_s > 0 || l.expires_at_s != 0)
                    .map(|l| l.expires_at_s),
            ),
            (
                S_ROW_DEL_TS,
                row.deletion.and_then(|d| rel(d.marked_for_delete_at_us)),
            ),
            (S_ROW_DEL_LDT, row.deletion.map(|d| d.local_deletion_time_s)),
            (
                S_PART_DEL_TS,
                p.deletion
                    .filter(|_| header)
                    .map(|d| d.marked_for_delete_at_us),
            ),
        ];
        for (s, v) in ints {
            self.put_int(s, v);
        }
        let pd_ldt = p
            .deletion
            .filter(|_| header)
            .map(|d| d.local_deletion_time_s);
        self.put_int(S_PART_DEL_LDT, pd_ldt);
        let rts = if header { &p.range_tombstones[..] } else { &[] };
        let extras = encode_extras(rts, row, extras);
        self.put_raw(S_EXTRAS, extras.as_deref());
        self.push_cells(base, &slots)
    }

    fn push_keys(&mut self, p: &Partition, kind: i64, ck: &[Bytes]) -> Result<(), ColumnarError> {
        if ck.len() > self.layout.clustering.len() {
            return Err(ColumnarError::Invalid(format!(
                "row has {} clustering values, schema has {}",
                ck.len(),
                self.layout.clustering.len()
            )));
        }
        self.put_int(S_TOKEN, Some(p.token));
        self.put_raw(S_KEY, Some(&p.key));
        self.put_int(S_KIND, Some(kind));
        for i in 0..self.layout.clustering.len() {
            let s = self.layout.clustering_stream(i);
            let v = ck.get(i).map(|v| &v[..]);
            self.put_raw(s, v);
        }
        Ok(())
    }

    /// The row's native cell of each schema column (simple columns, live or tombstone), and
    /// the cells that go to extras.
    fn split_cells<'r>(
        &self,
        row: &'r Row,
    ) -> Result<(Vec<Option<&'r Cell>>, CellMap), ColumnarError> {
        let mut slots = vec![None; self.layout.columns.len()];
        let mut extras = CellMap::new();
        for ((col, path), c) in &row.cells {
            let j = match self.by_id.binary_search_by_key(col, |(id, _)| *id) {
                Ok(i) => self.by_id.get(i).map(|(_, j)| *j),
                Err(_) => None,
            };
            let native = path.is_none() && !matches!(c.kind, CellKind::Counter { .. });
            match (j.and_then(|j| slots.get_mut(j)), native) {
                (Some(s), true) => *s = Some(c),
                // Its chunk statistics would claim no values where the column has some.
                (Some(_), false) => {
                    return Err(ColumnarError::Invalid(format!(
                        "column {col} is declared as a simple column but has collection or \
                         counter cells"
                    )))
                }
                (None, _) => {
                    extras.insert((*col, path.clone()), c.clone());
                }
            }
        }
        Ok((slots, extras))
    }

    fn push_cells(
        &mut self,
        base: Option<i64>,
        slots: &[Option<&Cell>],
    ) -> Result<(), ColumnarError> {
        for (j, slot) in slots.iter().enumerate() {
            let s = self.layout.column_stream(j);
            let (value, ts, ttl, ldt) = match slot {
                None => (None, None, None, None),
                Some(c) => {
                    let ts = base.map(|b| c.timestamp_us.wrapping_sub(b));
                    match &c.kind {
                        CellKind::Live {
                            value,
                            ttl_s,
                            expires_at_s,
                        } => (
                            Some(&value[..]),
                            // The row's own timestamp is implied by the value (see the doc).
                            ts.filter(|d| *d != 0),
                            (*ttl_s > 0).then_some(i64::from(*ttl_s)),
                            (*ttl_s > 0 || *expires_at_s != 0).then_some(*expires_at_s),
                        ),
                        CellKind::Tombstone {
                            local_deletion_time_s,
                        } => (None, ts, None, Some(*local_deletion_time_s)),
                        CellKind::Counter { .. } => (None, None, None, None),
                    }
                }
            };
            self.put_raw(s, value);
            self.put_int(s + 1, ts);
            self.put_int(s + 2, ttl);
            self.put_int(s + 3, ldt);
        }
        Ok(())
    }
}

/// Data format 1 of a keyless partition holding `rts` and, as its static row, the row's complex
/// deletions and non-native cells; None when there is nothing to hold.
fn encode_extras(rts: &[(CKey, CKey, DeletionTime)], row: &Row, cells: CellMap) -> Option<Vec<u8>> {
    if rts.is_empty() && row.complex_deletions.is_empty() && cells.is_empty() {
        return None;
    }
    let mut p = Partition::new(Bytes::new(), 0);
    p.range_tombstones = rts.to_vec();
    p.static_row = Row {
        complex_deletions: row.complex_deletions.clone(),
        cells,
        ..Row::default()
    };
    let mut out = Vec::new();
    encode_partition(&mut out, &p);
    Some(out)
}

/// The decoded streams of one row group, turned back into entries.
pub(super) struct GroupColumns<'a> {
    layout: &'a StreamLayout,
    cols: &'a [Column],
    cmp: &'a Arc<ClusteringComparator>,
    /// Serialized values of the raw streams, one buffer per stream: a rebuilt cell's value is
    /// a slice of it, not an allocation of its own.
    serialized: Serialized,
}

/// Per stream, the serialized values of a raw stream and their offsets (None for others).
/// Shared, so that the partitions of a group read one at a time slice one buffer: a buffer
/// per partition would each hold the whole group's values for as long as a value lives.
pub(super) type Serialized = Arc<Vec<Option<(Bytes, Vec<u32>)>>>;

/// One entry rebuilt from the streams.
pub(super) struct Entry {
    pub token: i64,
    pub key: Bytes,
    pub kind: i64,
    pub clustering: Vec<Bytes>,
    pub row: Row,
    pub partition_deletion: Option<DeletionTime>,
    pub range_tombstones: Vec<(CKey, CKey, DeletionTime)>,
}

fn corrupt(what: &'static str) -> ColumnarError {
    ColumnarError::corrupt(what)
}

impl<'a> GroupColumns<'a> {
    pub fn new(
        layout: &'a StreamLayout,
        cols: &'a [Column],
        cmp: &'a Arc<ClusteringComparator>,
    ) -> Self {
        Self::with_serialized(layout, cols, cmp, Self::serialize_all(layout, cols))
    }

    /// The raw streams of `cols` serialized, for `with_serialized`.
    pub fn serialize_all(layout: &StreamLayout, cols: &[Column]) -> Serialized {
        Arc::new(
            cols.iter()
                .enumerate()
                .map(|(s, c)| {
                    layout
                        .is_raw(s)
                        .then(|| serialize(c, layout.stream_type(s)))
                })
                .collect(),
        )
    }

    /// Over streams whose raw ones `serialized` already holds (`serialize_all` of `cols`).
    pub fn with_serialized(
        layout: &'a StreamLayout,
        cols: &'a [Column],
        cmp: &'a Arc<ClusteringComparator>,
        serialized: Serialized,
    ) -> Self {
        GroupColumns {
            layout,
            cols,
            cmp,
            serialized,
        }
    }

    fn col(&self, s: usize) -> Result<&Column, ColumnarError> {
        self.cols.get(s).ok_or(corrupt("missing stream"))
    }

    fn int(&self, s: usize, i: usize) -> Result<Option<i64>, ColumnarError> {
        Ok(self.col(s)?.int(i))
    }

    fn raw(&self, s: usize, i: usize) -> Result<Option<Bytes>, ColumnarError> {
        if !self.col(s)?.is_valid(i) {
            return Ok(None);
        }
        let Some(Some((data, offsets))) = self.serialized.get(s) else {
            return Err(corrupt("not a value stream"));
        };
        match (offsets.get(i), offsets.get(i + 1)) {
            (Some(a), Some(b)) if a <= b && *b as usize <= data.len() => {
                Ok(Some(data.slice(*a as usize..*b as usize)))
            }
            _ => Err(corrupt("value offsets")),
        }
    }

    fn dt(
        &self,
        ts: Option<i64>,
        ldt_stream: usize,
        i: usize,
    ) -> Result<Option<DeletionTime>, ColumnarError> {
        let Some(ts) = ts else { return Ok(None) };
        Ok(Some(DeletionTime {
            marked_for_delete_at_us: ts,
            local_deletion_time_s: self.int(ldt_stream, i)?.ok_or(corrupt("deletion time"))?,
        }))
    }

    /// Rebuilds entry `i`.
    pub fn entry(&self, i: usize) -> Result<Entry, ColumnarError> {
        let token = self.int(S_TOKEN, i)?.ok_or(corrupt("token"))?;
        let key = self.raw(S_KEY, i)?.ok_or(corrupt("key"))?;
        let kind = self.int(S_KIND, i)?.ok_or(corrupt("kind"))?;
        let mut clustering = Vec::new();
        for c in 0..self.layout.clustering.len() {
            match self.raw(self.layout.clustering_stream(c), i)? {
                Some(v) => clustering.push(v),
                None => break,
            }
        }
        let base = self.int(S_BASE_TS, i)?;
        let abs = |d: Option<i64>| -> Result<Option<i64>, ColumnarError> {
            match (d, base) {
                (None, _) => Ok(None),
                (Some(d), Some(b)) => Ok(Some(b.wrapping_add(d))),
                (Some(_), None) => Err(corrupt("timestamp without base")),
            }
        };
        let liveness = match abs(self.int(S_LIVE_TS, i)?)? {
            Some(ts) => Some(Liveness {
                timestamp_us: ts,
                ttl_s: ttl(self.int(S_LIVE_TTL, i)?)?,
                expires_at_s: self.int(S_LIVE_LDT, i)?.unwrap_or(0),
            }),
            None => None,
        };
        let mut row = Row {
            liveness,
            deletion: self.dt(abs(self.int(S_ROW_DEL_TS, i)?)?, S_ROW_DEL_LDT, i)?,
            ..Row::default()
        };
        for j in 0..self.layout.columns.len() {
            let s = self.layout.column_stream(j);
            let value = self.raw(s, i)?;
            // A live cell without a ts value has its row's timestamp (format version 3).
            let delta = match (self.int(s + 1, i)?, &value) {
                (Some(d), _) => Some(d),
                (None, Some(_)) => Some(0),
                (None, None) => None,
            };
            let Some(ts) = abs(delta)? else {
                continue;
            };
            let kind = match value {
                Some(value) => CellKind::Live {
                    value,
                    ttl_s: ttl(self.int(s + 2, i)?)?,
                    expires_at_s: self.int(s + 3, i)?.unwrap_or(0),
                },
                None => CellKind::Tombstone {
                    local_deletion_time_s: self
                        .int(s + 3, i)?
                        .ok_or(corrupt("cell deletion time"))?,
                },
            };
            let id = self.layout.columns.get(j).map_or(0, |c| c.id);
            row.cells.insert(
                (id, None),
                Cell {
                    timestamp_us: ts,
                    kind,
                },
            );
        }
        let partition_deletion = self.dt(self.int(S_PART_DEL_TS, i)?, S_PART_DEL_LDT, i)?;
        let mut range_tombstones = Vec::new();
        if let Some(x) = self.raw(S_EXTRAS, i)? {
            let p = decode_partition(&mut Reader::new(&x, "columnar extras"), self.cmp)
                .map_err(|_| corrupt("extras"))?;
            range_tombstones = p.range_tombstones;
            row.complex_deletions = p.static_row.complex_deletions;
            for (k, c) in p.static_row.cells {
                row.cells.insert(k, c);
            }
        }
        Ok(Entry {
            token,
            key,
            kind,
            clustering,
            row,
            partition_deletion,
            range_tombstones,
        })
    }
}

/// Every row of `c` in Cassandra's serialized form for type `t`, in one buffer (nulls empty).
fn serialize(c: &Column, t: ValueType) -> (Bytes, Vec<u32>) {
    if let super::vector::ColumnValues::Bytes(b) = &c.values {
        return (Bytes::from(b.data.clone()), b.offsets.clone());
    }
    let mut data = Vec::new();
    let mut offsets = Vec::with_capacity(c.len() + 1);
    offsets.push(0);
    for i in 0..c.len() {
        c.serialize_into(i, t, &mut data);
        offsets.push(data.len() as u32);
    }
    (Bytes::from(data), offsets)
}

fn ttl(v: Option<i64>) -> Result<u32, ColumnarError> {
    v.map_or(Ok(0), |t| u32::try_from(t).map_err(|_| corrupt("ttl")))
}
