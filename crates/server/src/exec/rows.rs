//! Turning the storage engine's partitions into CQL rows (one serialized cell per table column, in
//! the table's column order), assembling multi-cell collections and UDTs from their cells.

use bytes::{BufMut, Bytes, BytesMut};
use helenus_schema::{ColumnKind, TableMeta};
use helenus_storage as st;
use helenus_types::CqlType;

/// Write time and TTL of a simple cell, for `writetime()` and `ttl()`.
#[derive(Debug, Clone, Copy)]
pub struct CellMeta {
    pub timestamp_us: i64,
    pub ttl_s: u32,
    pub expires_at_s: i64,
}

/// One element of a multi-cell column: its path (set element, map key, list cell id or UDT
/// field number) and its cell's write time and TTL.
#[derive(Debug, Clone)]
pub struct ElementMeta {
    pub path: Bytes,
    pub meta: CellMeta,
}

/// A CQL row with everything about it the selectors may need.
#[derive(Debug, Clone, Default)]
pub struct Row {
    pub cells: Vec<Option<Bytes>>,
    pub meta: Vec<Option<CellMeta>>,
    /// Per-element write times and TTLs of multi-cell columns (`writetime(l)` is a list in 5.0).
    pub element_meta: Vec<Option<Vec<ElementMeta>>>,
    /// The token of the row's partition key.
    pub token: i64,
    /// The serialized partition key (for paging).
    pub partition_key: Bytes,
    /// Clustering values (for paging); empty for static-only rows.
    pub clustering: Vec<Bytes>,
}

/// Where each storage column id lands in the CQL row.
pub struct ColumnLayout {
    /// (column id, position) sorted by id: a lookup per cell costs a few comparisons, not a
    /// hash.
    by_id: Vec<(u32, usize)>,
    pk: Vec<usize>,
    ck: Vec<usize>,
    /// Whether rows carry their cells' write times and TTLs (`Row::meta`, `element_meta`);
    /// without them those are empty and cost nothing per row.
    cell_meta: bool,
    /// Slots per row: the table's columns, or up to the last column a query reads (a later
    /// slot reads as null through `cells.get`). A row's slots are allocated and dropped per
    /// row; one column of a 61-column table read in 61 slots cost more than the column.
    width: usize,
}

impl ColumnLayout {
    pub fn new(t: &TableMeta) -> Self {
        let mut by_id = Vec::new();
        let mut pk = Vec::new();
        let mut ck = Vec::new();
        for (i, c) in t.columns.iter().enumerate() {
            match c.kind {
                ColumnKind::PartitionKey => pk.push(i),
                ColumnKind::Clustering => ck.push(i),
                _ => {
                    by_id.push((c.id, i));
                }
            }
        }
        by_id.sort_unstable();
        ColumnLayout {
            by_id,
            pk,
            ck,
            cell_meta: true,
            width: t.columns.len(),
        }
    }

    /// Rows with slots only up to the last key column or column of `read` (storage ids of the
    /// non-key columns a query reads; None: all), whose cells are the only ones placed.
    pub fn narrowed_to(self, read: Option<&[u32]>) -> Self {
        let Some(read) = read else {
            return self;
        };
        let by_id: Vec<(u32, usize)> = self
            .by_id
            .into_iter()
            .filter(|(id, _)| read.binary_search(id).is_ok())
            .collect();
        let last = by_id
            .iter()
            .map(|(_, i)| *i)
            .chain(self.pk.iter().copied())
            .chain(self.ck.iter().copied())
            .max();
        ColumnLayout {
            width: last.map_or(0, |i| i + 1).min(self.width),
            by_id,
            ..self
        }
    }

    fn position_of(&self, column: u32) -> Option<usize> {
        let at = self
            .by_id
            .binary_search_by_key(&column, |(id, _)| *id)
            .ok()?;
        self.by_id.get(at).map(|(_, i)| *i)
    }

    /// Rows built without write times and TTLs, for a selection that reads none.
    pub fn without_cell_meta(self) -> Self {
        ColumnLayout {
            cell_meta: false,
            ..self
        }
    }
}

/// Serializes a multi-cell column's live cells as the value of the whole column.
fn assemble_complex(t: &CqlType, cells: &[&st::LiveCell]) -> Option<Bytes> {
    if cells.is_empty() {
        return None;
    }
    let mut out = BytesMut::new();
    let put = |out: &mut BytesMut, b: &[u8]| {
        out.put_i32(b.len() as i32);
        out.put_slice(b);
    };
    match t {
        CqlType::List { .. } => {
            out.put_i32(cells.len() as i32);
            for c in cells {
                put(&mut out, &c.value);
            }
        }
        CqlType::Set { .. } => {
            out.put_i32(cells.len() as i32);
            for c in cells {
                put(&mut out, c.path.as_deref().unwrap_or_default());
            }
        }
        CqlType::Map { .. } => {
            out.put_i32(cells.len() as i32);
            for c in cells {
                put(&mut out, c.path.as_deref().unwrap_or_default());
                put(&mut out, &c.value);
            }
        }
        CqlType::Udt { def, .. } => {
            for i in 0..def.fields.len() {
                let field = cells.iter().find(|c| {
                    c.path
                        .as_deref()
                        .map(|p| p.len() == 2 && i16::from_be_bytes([p[0], p[1]]) as usize == i)
                        == Some(true)
                });
                match field {
                    Some(c) => put(&mut out, &c.value),
                    None => out.put_i32(-1),
                }
            }
        }
        _ => return cells.last().map(|c| c.value.clone()),
    }
    Some(out.freeze())
}

/// Sets slot `idx` of `row` (every slot a layout places is within its width).
fn put(row: &mut Row, idx: usize, value: Option<Bytes>) {
    if let Some(slot) = row.cells.get_mut(idx) {
        *slot = value;
    }
}

/// Puts a row's live cells in their columns' places; simple columns' values are moved out of
/// `cells`, not copied.
fn fill_cells(t: &TableMeta, layout: &ColumnLayout, cells: &mut [st::LiveCell], row: &mut Row) {
    let meta_of = |cell: &st::LiveCell| CellMeta {
        timestamp_us: cell.timestamp_us,
        ttl_s: cell.ttl_s,
        expires_at_s: cell.expires_at_s,
    };
    let mut i = 0;
    while i < cells.len() {
        let col = cells[i].column;
        let mut j = i;
        while j < cells.len() && cells[j].column == col {
            j += 1;
        }
        if let Some(idx) = layout.position_of(col) {
            if let Some(c) = t.columns.get(idx) {
                if c.cql_type.is_multi_cell() {
                    let group: Vec<&st::LiveCell> = cells[i..j].iter().collect();
                    put(row, idx, assemble_complex(&c.cql_type, &group));
                    if let Some(element_meta) = row.element_meta.get_mut(idx) {
                        *element_meta = Some(
                            group
                                .iter()
                                .map(|cell| ElementMeta {
                                    path: cell.path.clone().unwrap_or_default(),
                                    meta: meta_of(cell),
                                })
                                .collect(),
                        );
                    }
                } else if let Some(cell) = cells.get_mut(j - 1) {
                    if let Some(meta) = row.meta.get_mut(idx) {
                        *meta = Some(meta_of(cell));
                    }
                    put(row, idx, Some(std::mem::take(&mut cell.value)));
                }
            }
        }
        i = j;
    }
}

/// Splits a serialized partition key into its components.
pub fn key_components(t: &TableMeta, key: &Bytes) -> Vec<Bytes> {
    let n = t.partition_key_len();
    if n <= 1 {
        return vec![key.clone()];
    }
    helenus_types::split_composite_key(key, n).unwrap_or_default()
}

/// The CQL rows of one partition. A partition with live static cells and no live rows yields one
/// row with null clustering and regular columns, as Cassandra returns it — unless the query
/// restricts clustering columns (`statics_alone` false): then no row matched.
pub fn partition_rows(
    t: &TableMeta,
    layout: &ColumnLayout,
    p: st::PartitionData,
    statics_alone: bool,
    out: &mut Vec<Row>,
) {
    let n = layout.width;
    let meta_len = if layout.cell_meta { n } else { 0 };
    let mut base = Row {
        cells: vec![None; n],
        meta: vec![None; meta_len],
        element_meta: vec![None; meta_len],
        token: p.token,
        partition_key: p.key.clone(),
        clustering: Vec::new(),
    };
    match layout.pk.as_slice() {
        // One key column, the commonest: its value is the key, with no list to split it into.
        [idx] => put(&mut base, *idx, Some(p.key.clone())),
        _ => {
            for (i, comp) in key_components(t, &p.key).into_iter().enumerate() {
                if let Some(&idx) = layout.pk.get(i) {
                    put(&mut base, idx, Some(comp));
                }
            }
        }
    }
    let has_statics = p.static_row.as_ref().is_some_and(|s| !s.cells.is_empty());
    if let Some(mut s) = p.static_row {
        fill_cells(t, layout, &mut s.cells, &mut base);
    }
    if p.rows.is_empty() {
        if statics_alone && has_statics {
            out.push(base);
        }
        return;
    }
    let last = p.rows.len().saturating_sub(1);
    for (n, mut r) in p.rows.into_iter().enumerate() {
        // The last row takes the partition's values instead of a copy (a one-row partition,
        // the commonest, then copies nothing).
        let mut row = if n == last {
            std::mem::take(&mut base)
        } else {
            base.clone()
        };
        for (i, v) in r.clustering.iter().enumerate() {
            if let Some(&idx) = layout.ck.get(i) {
                put(&mut row, idx, Some(v.clone()));
            }
        }
        fill_cells(t, layout, &mut r.cells, &mut row);
        row.clustering = r.clustering;
        out.push(row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::exec::ddl::table_for_test as table;

    fn cell(column: u32, value: &'static [u8]) -> st::LiveCell {
        st::LiveCell {
            column,
            path: None,
            value: Bytes::from_static(value),
            timestamp_us: 1,
            ttl_s: 0,
            expires_at_s: 0,
        }
    }

    /// A layout narrowed to the columns a query reads gives every read column (and the key)
    /// the value a full-width row has, in fewer slots.
    #[test]
    fn narrowed_rows_hold_the_read_columns_as_full_rows_do() {
        let t = table("CREATE TABLE t (k int, c int, a text, b text, d text, PRIMARY KEY (k, c))");
        let id = |name: &str| t.column(name).unwrap().id;
        let pos = |name: &str| t.columns.iter().position(|c| c.name == name).unwrap();
        let data = || st::PartitionData {
            key: Bytes::from_static(&[0, 0, 0, 1]),
            token: 7,
            static_row: None,
            rows: vec![st::LiveRow {
                clustering: vec![Bytes::from_static(&[0, 0, 0, 2])],
                cells: vec![
                    cell(id("a"), b"x"),
                    cell(id("b"), b"y"),
                    cell(id("d"), b"z"),
                ],
                row_timestamp_us: Some(1),
            }],
        };
        let mut full = Vec::new();
        partition_rows(&t, &ColumnLayout::new(&t), data(), true, &mut full);
        let read = [id("a")];
        let narrow_layout = ColumnLayout::new(&t).narrowed_to(Some(&read));
        let mut narrow = Vec::new();
        partition_rows(&t, &narrow_layout, data(), true, &mut narrow);
        assert_eq!((full.len(), narrow.len()), (1, 1));
        assert_eq!(full[0].cells.len(), t.columns.len());
        assert!(narrow[0].cells.len() < full[0].cells.len());
        for name in ["k", "c", "a"] {
            assert_eq!(
                narrow[0].cells.get(pos(name)),
                full[0].cells.get(pos(name)),
                "{name}"
            );
            assert!(full[0].cells[pos(name)].is_some(), "{name}");
        }
        for name in ["b", "d"] {
            assert_eq!(
                narrow[0].cells.get(pos(name)).cloned().flatten(),
                None,
                "{name}"
            );
        }
        assert_eq!(narrow[0].clustering, full[0].clustering);
    }
}
