//! RESULT bodies: Void, Rows (with metadata), Set_keyspace, Prepared, Schema_change; and
//! [`RowsWriter`], which streams rows straight into the output buffer.
//!
//! Rows metadata: `<flags [int]><columns_count [int]>` then `[paging_state [bytes]]` if
//! HAS_MORE_PAGES (0x02), `[new_metadata_id [short bytes]]` if METADATA_CHANGED (0x08, v5), and,
//! unless NO_METADATA (0x04): `[keyspace][table]` if GLOBAL_TABLES_SPEC (0x01), then per column
//! `[keyspace][table]` (only without the global spec), `name [string]`, `type [option]`.
//! Rows content: `rows_count [int]`, then rows_count x columns_count cells as [bytes].

use bytes::{BufMut, Bytes, BytesMut};
use helenus_types::CqlType;

use crate::error::{EncodeError, WireError};
use crate::event::SchemaChange;
use crate::primitives::{write_bytes, write_short_bytes, write_string, Reader};
use crate::types::{read_type, write_type};

const KIND_VOID: i32 = 0x0001;
const KIND_ROWS: i32 = 0x0002;
const KIND_SET_KEYSPACE: i32 = 0x0003;
const KIND_PREPARED: i32 = 0x0004;
const KIND_SCHEMA_CHANGE: i32 = 0x0005;

const M_GLOBAL_TABLES_SPEC: i32 = 0x0001;
const M_HAS_MORE_PAGES: i32 = 0x0002;
const M_NO_METADATA: i32 = 0x0004;
const M_METADATA_CHANGED: i32 = 0x0008;

/// (keyspace, table).
pub type TableSpec = (String, String);

/// One result or bind column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnSpec {
    pub keyspace: String,
    pub table: String,
    pub name: String,
    pub typ: CqlType,
}

impl ColumnSpec {
    /// The specs of `columns` ((name, type) each), all of `keyspace`.`table`.
    pub fn of_table(keyspace: &str, table: &str, columns: &[(String, CqlType)]) -> Vec<ColumnSpec> {
        columns
            .iter()
            .map(|(name, typ)| ColumnSpec {
                keyspace: keyspace.to_string(),
                table: table.to_string(),
                name: name.clone(),
                typ: typ.clone(),
            })
            .collect()
    }
}

/// The keyspace/table shared by all columns, if they share one.
fn common_table(columns: &[ColumnSpec]) -> Option<(String, String)> {
    let first = columns.first()?;
    columns
        .iter()
        .all(|c| c.keyspace == first.keyspace && c.table == first.table)
        .then(|| (first.keyspace.clone(), first.table.clone()))
}

fn write_columns(
    out: &mut BytesMut,
    global: &Option<(String, String)>,
    columns: &[ColumnSpec],
) -> Result<(), EncodeError> {
    if let Some((ks, t)) = global {
        write_string(out, ks)?;
        write_string(out, t)?;
    }
    for c in columns {
        if global.is_none() {
            write_string(out, &c.keyspace)?;
            write_string(out, &c.table)?;
        }
        write_string(out, &c.name)?;
        write_type(out, &c.typ)?;
    }
    Ok(())
}

fn read_columns(
    r: &mut Reader,
    global: bool,
    count: usize,
) -> Result<(Option<TableSpec>, Vec<ColumnSpec>), WireError> {
    let global = if global {
        Some((r.read_string()?, r.read_string()?))
    } else {
        None
    };
    // Smallest column: name(2) + type(2), plus keyspace(2) + table(2) without the global spec.
    let min = if global.is_some() { 4 } else { 8 };
    if count.saturating_mul(min) > r.remaining() {
        return Err(WireError::Truncated {
            needed: count.saturating_mul(min),
            remaining: r.remaining(),
        });
    }
    let mut columns = Vec::with_capacity(count);
    for _ in 0..count {
        let (keyspace, table) = match &global {
            Some((k, t)) => (k.clone(), t.clone()),
            None => (r.read_string()?, r.read_string()?),
        };
        let name = r.read_string()?;
        let typ = read_type(r)?;
        columns.push(ColumnSpec {
            keyspace,
            table,
            name,
            typ,
        });
    }
    Ok((global, columns))
}

/// Metadata of a Rows result (also the result metadata of a PREPARED).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowsMetadata {
    /// Number of columns in each row; equals `columns.len()` unless `no_metadata`.
    pub columns_count: usize,
    /// Set when every column belongs to this (keyspace, table); written once instead of per column.
    pub global_table_spec: Option<(String, String)>,
    /// Empty when `no_metadata`.
    pub columns: Vec<ColumnSpec>,
    /// The client asked to skip metadata (EXECUTE with skip_metadata): only the count is sent.
    pub no_metadata: bool,
    /// Present iff there are more pages.
    pub paging_state: Option<Bytes>,
    /// v5: the result metadata changed since PREPARE; the client must update to this id.
    pub new_metadata_id: Option<Bytes>,
    /// The column specs already in wire form, written in place of `columns` (then empty) and
    /// `global_table_spec`. Never set by [`RowsMetadata::decode`].
    pub encoded_columns: Option<std::sync::Arc<EncodedColumnSpecs>>,
}

/// A statement's result column specs encoded once, when it is planned, and copied into every
/// ROWS result it answers: building and encoding a [`ColumnSpec`] per column per response (three
/// strings each) cost a point read about as much as reading its row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedColumnSpecs {
    count: usize,
    global: bool,
    bytes: Box<[u8]>,
}

impl EncodedColumnSpecs {
    /// `columns` in wire form, with the global table spec when they share a table (as
    /// Cassandra writes a SELECT's result metadata).
    pub fn new(columns: &[ColumnSpec]) -> Result<std::sync::Arc<Self>, EncodeError> {
        let global = common_table(columns);
        let mut out = BytesMut::new();
        write_columns(&mut out, &global, columns)?;
        Ok(std::sync::Arc::new(EncodedColumnSpecs {
            count: columns.len(),
            global: global.is_some(),
            bytes: out.to_vec().into_boxed_slice(),
        }))
    }
}

impl RowsMetadata {
    /// Full metadata for `columns`, using the global table spec when they share a table.
    pub fn new(columns: Vec<ColumnSpec>) -> Self {
        RowsMetadata {
            columns_count: columns.len(),
            global_table_spec: common_table(&columns),
            columns,
            ..RowsMetadata::default()
        }
    }

    /// Metadata that only carries the column count (NO_METADATA).
    pub fn without_metadata(columns_count: usize) -> Self {
        RowsMetadata {
            columns_count,
            no_metadata: true,
            ..RowsMetadata::default()
        }
    }

    /// Appends the metadata.
    pub fn encode(&self, version: u8, out: &mut BytesMut) -> Result<(), EncodeError> {
        let described = match &self.encoded_columns {
            Some(e) => e.count,
            None => self.columns.len(),
        };
        if !self.no_metadata && self.columns_count != described {
            return Err(EncodeError::Invalid("columns_count differs from columns"));
        }
        let global = match &self.encoded_columns {
            Some(e) => e.global,
            None => self.global_table_spec.is_some(),
        };
        let mut flags = 0;
        if global && !self.no_metadata {
            flags |= M_GLOBAL_TABLES_SPEC;
        }
        if self.paging_state.is_some() {
            flags |= M_HAS_MORE_PAGES;
        }
        if self.no_metadata {
            flags |= M_NO_METADATA;
        }
        if self.new_metadata_id.is_some() {
            crate::error::require_v5(version, "new_metadata_id")?;
            flags |= M_METADATA_CHANGED;
        }
        let count = i32::try_from(self.columns_count).map_err(|_| EncodeError::TooLong {
            what: "columns",
            len: self.columns_count,
        })?;
        out.put_i32(flags);
        out.put_i32(count);
        if let Some(p) = &self.paging_state {
            write_bytes(out, Some(p))?;
        }
        if let Some(id) = &self.new_metadata_id {
            write_short_bytes(out, id)?;
        }
        if let (false, Some(e)) = (self.no_metadata, &self.encoded_columns) {
            out.put_slice(&e.bytes);
        } else if !self.no_metadata {
            let global = if flags & M_GLOBAL_TABLES_SPEC != 0 {
                &self.global_table_spec
            } else {
                &None
            };
            write_columns(out, global, &self.columns)?;
        }
        Ok(())
    }

    /// Reads rows metadata.
    pub fn decode(r: &mut Reader, version: u8) -> Result<Self, WireError> {
        let flags = r.read_i32()?;
        let count = r.read_i32()?;
        let columns_count =
            usize::try_from(count).map_err(|_| WireError::NegativeLength(count.into()))?;
        let paging_state = if flags & M_HAS_MORE_PAGES != 0 {
            r.read_bytes()?
        } else {
            None
        };
        let new_metadata_id = if version >= 5 && flags & M_METADATA_CHANGED != 0 {
            Some(r.read_short_bytes()?)
        } else {
            None
        };
        let no_metadata = flags & M_NO_METADATA != 0;
        let (global_table_spec, columns) = if no_metadata {
            (None, Vec::new())
        } else {
            read_columns(r, flags & M_GLOBAL_TABLES_SPEC != 0, columns_count)?
        };
        Ok(RowsMetadata {
            columns_count,
            global_table_spec,
            columns,
            no_metadata,
            paging_state,
            new_metadata_id,
            encoded_columns: None,
        })
    }
}

/// A materialised Rows result (the client side and tests; the server hot path uses [`RowsWriter`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rows {
    pub metadata: RowsMetadata,
    /// Each row has `metadata.columns_count` cells; `None` is null.
    pub rows: Vec<Vec<Option<Bytes>>>,
}

/// `count` rows whose cells are already in `body` as a ROWS result holds them: each cell an
/// `[int]` length (-1 for null) and its bytes, `metadata.columns_count` cells per row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedRows {
    pub metadata: RowsMetadata,
    pub count: u32,
    pub body: Bytes,
}

/// Bind-variable metadata of a PREPARED result.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PreparedMetadata {
    /// Indexes of bind variables that form the partition key (v4+; empty in v3).
    pub pk_indexes: Vec<u16>,
    pub global_table_spec: Option<(String, String)>,
    pub columns: Vec<ColumnSpec>,
}

impl PreparedMetadata {
    /// Metadata for `columns`, using the global table spec when they share a table.
    pub fn new(columns: Vec<ColumnSpec>, pk_indexes: Vec<u16>) -> Self {
        PreparedMetadata {
            pk_indexes,
            global_table_spec: common_table(&columns),
            columns,
        }
    }

    fn encode(&self, version: u8, out: &mut BytesMut) -> Result<(), EncodeError> {
        let flags = if self.global_table_spec.is_some() {
            M_GLOBAL_TABLES_SPEC
        } else {
            0
        };
        let count = i32::try_from(self.columns.len()).map_err(|_| EncodeError::TooLong {
            what: "bind columns",
            len: self.columns.len(),
        })?;
        out.put_i32(flags);
        out.put_i32(count);
        if version >= 4 {
            out.put_i32(self.pk_indexes.len() as i32);
            for i in &self.pk_indexes {
                out.put_u16(*i);
            }
        }
        write_columns(out, &self.global_table_spec, &self.columns)
    }

    fn decode(r: &mut Reader, version: u8) -> Result<Self, WireError> {
        let flags = r.read_i32()?;
        let count = r.read_i32()?;
        let count = usize::try_from(count).map_err(|_| WireError::NegativeLength(count.into()))?;
        let mut pk_indexes = Vec::new();
        if version >= 4 {
            let n = r.read_int_count(2)?;
            pk_indexes.reserve(n);
            for _ in 0..n {
                pk_indexes.push(r.read_u16()?);
            }
        }
        let (global_table_spec, columns) =
            read_columns(r, flags & M_GLOBAL_TABLES_SPEC != 0, count)?;
        Ok(PreparedMetadata {
            pk_indexes,
            global_table_spec,
            columns,
        })
    }
}

/// A PREPARED result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub id: Bytes,
    /// v5: id of the result metadata (clients send it back in EXECUTE).
    pub result_metadata_id: Option<Bytes>,
    pub metadata: PreparedMetadata,
    pub result_metadata: RowsMetadata,
}

/// The body of a RESULT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultBody {
    Void,
    Rows(Rows),
    /// Rows a server wrote in their wire form as it read them (column by column, with no
    /// value of their own); sent as `Rows` is, and never produced by decoding.
    EncodedRows(EncodedRows),
    SetKeyspace(String),
    /// Boxed: the largest body by far, and rare (one per PREPARE) next to the rows every
    /// read moves around.
    Prepared(Box<Prepared>),
    SchemaChange(SchemaChange),
}

impl ResultBody {
    /// Appends the RESULT body.
    pub fn encode(&self, version: u8, out: &mut BytesMut) -> Result<(), EncodeError> {
        match self {
            ResultBody::Void => out.put_i32(KIND_VOID),
            ResultBody::Rows(rows) => {
                let mut w = RowsWriter::begin(out, version, &rows.metadata)?;
                for row in &rows.rows {
                    w.row(row.iter().map(|c| c.as_deref()))?;
                }
                w.finish()?;
            }
            ResultBody::EncodedRows(rows) => {
                out.put_i32(KIND_ROWS);
                rows.metadata.encode(version, out)?;
                out.put_i32(i32::try_from(rows.count).map_err(|_| EncodeError::TooLong {
                    what: "rows",
                    len: rows.count as usize,
                })?);
                out.extend_from_slice(&rows.body);
            }
            ResultBody::SetKeyspace(ks) => {
                out.put_i32(KIND_SET_KEYSPACE);
                write_string(out, ks)?;
            }
            ResultBody::Prepared(p) => {
                out.put_i32(KIND_PREPARED);
                write_short_bytes(out, &p.id)?;
                if version >= 5 {
                    let rid = p
                        .result_metadata_id
                        .as_ref()
                        .ok_or(EncodeError::Invalid("v5 PREPARED needs result_metadata_id"))?;
                    write_short_bytes(out, rid)?;
                }
                p.metadata.encode(version, out)?;
                p.result_metadata.encode(version, out)?;
            }
            ResultBody::SchemaChange(sc) => {
                out.put_i32(KIND_SCHEMA_CHANGE);
                sc.encode(out)?;
            }
        }
        Ok(())
    }

    /// Reads a RESULT body.
    pub fn decode(r: &mut Reader, version: u8) -> Result<Self, WireError> {
        let kind = r.read_i32()?;
        Ok(match kind {
            KIND_VOID => ResultBody::Void,
            KIND_ROWS => ResultBody::Rows(decode_rows(r, version)?),
            KIND_SET_KEYSPACE => ResultBody::SetKeyspace(r.read_string()?),
            KIND_PREPARED => {
                let id = r.read_short_bytes()?;
                let result_metadata_id = if version >= 5 {
                    Some(r.read_short_bytes()?)
                } else {
                    None
                };
                let metadata = PreparedMetadata::decode(r, version)?;
                let result_metadata = RowsMetadata::decode(r, version)?;
                ResultBody::Prepared(Box::new(Prepared {
                    id,
                    result_metadata_id,
                    metadata,
                    result_metadata,
                }))
            }
            KIND_SCHEMA_CHANGE => ResultBody::SchemaChange(SchemaChange::decode(r)?),
            other => return Err(WireError::UnknownResultKind(other)),
        })
    }
}

fn decode_rows(r: &mut Reader, version: u8) -> Result<Rows, WireError> {
    let metadata = RowsMetadata::decode(r, version)?;
    let n = r.read_i32()?;
    let n = usize::try_from(n).map_err(|_| WireError::NegativeLength(n.into()))?;
    let cols = metadata.columns_count;
    if n > 0 && cols == 0 {
        // Rows without cells take no input bytes, so their count cannot be bounded by the input.
        return Err(WireError::Invalid("rows without columns"));
    }
    let needed = n.saturating_mul(cols).saturating_mul(4);
    if needed > r.remaining() {
        return Err(WireError::Truncated {
            needed,
            remaining: r.remaining(),
        });
    }
    let mut rows = Vec::with_capacity(n);
    for _ in 0..n {
        let mut row = Vec::with_capacity(cols);
        for _ in 0..cols {
            row.push(r.read_bytes()?);
        }
        rows.push(row);
    }
    Ok(Rows { metadata, rows })
}

/// Streams a Rows RESULT body into a buffer: writes kind + metadata on [`RowsWriter::begin`],
/// cells as they come, and patches the row count on [`RowsWriter::finish`]. No per-row `Vec`.
#[derive(Debug)]
pub struct RowsWriter<'a> {
    out: &'a mut BytesMut,
    count_at: usize,
    columns: usize,
    rows: u32,
    cell_in_row: usize,
}

impl<'a> RowsWriter<'a> {
    /// Writes the RESULT kind, the metadata and a placeholder row count.
    pub fn begin(
        out: &'a mut BytesMut,
        version: u8,
        metadata: &RowsMetadata,
    ) -> Result<Self, EncodeError> {
        out.put_i32(KIND_ROWS);
        metadata.encode(version, out)?;
        let count_at = out.len();
        out.put_i32(0);
        Ok(RowsWriter {
            out,
            count_at,
            columns: metadata.columns_count,
            rows: 0,
            cell_in_row: 0,
        })
    }

    fn advance(&mut self) -> Result<(), EncodeError> {
        if self.columns == 0 {
            return Err(EncodeError::RowShape {
                expected: 0,
                got: 1,
            });
        }
        self.cell_in_row += 1;
        if self.cell_in_row == self.columns {
            self.cell_in_row = 0;
            self.rows = self
                .rows
                .checked_add(1)
                .ok_or(EncodeError::Invalid("too many rows"))?;
        }
        Ok(())
    }

    /// Appends the next cell (`None` = null). Rows are complete after `columns_count` cells.
    pub fn cell(&mut self, value: Option<&[u8]>) -> Result<(), EncodeError> {
        write_bytes(self.out, value)?;
        self.advance()
    }

    /// Appends a non-null cell serialized in place by `f`, patching its length afterwards.
    pub fn cell_with(&mut self, f: impl FnOnce(&mut BytesMut)) -> Result<(), EncodeError> {
        let at = self.out.len();
        self.out.put_i32(0);
        f(self.out);
        let len = self.out.len() - at - 4;
        let len = i32::try_from(len).map_err(|_| EncodeError::TooLong { what: "cell", len })?;
        if let Some(slot) = self.out.get_mut(at..at + 4) {
            slot.copy_from_slice(&len.to_be_bytes());
        }
        self.advance()
    }

    /// Appends a whole row; it must have exactly `columns_count` cells.
    pub fn row<'b>(
        &mut self,
        cells: impl IntoIterator<Item = Option<&'b [u8]>>,
    ) -> Result<(), EncodeError> {
        if self.cell_in_row != 0 {
            return Err(EncodeError::Invalid("row() after a partial row"));
        }
        let before = self.rows;
        let mut got = 0;
        for c in cells {
            if got == self.columns {
                return Err(EncodeError::RowShape {
                    expected: self.columns,
                    got: got + 1,
                });
            }
            self.cell(c)?;
            got += 1;
        }
        if got != self.columns || (self.columns > 0 && self.rows != before + 1) {
            return Err(EncodeError::RowShape {
                expected: self.columns,
                got,
            });
        }
        Ok(())
    }

    /// Rows completed so far.
    pub fn rows_written(&self) -> u32 {
        self.rows
    }

    /// Bytes written to the buffer so far (for page-size-in-bytes limits).
    pub fn buffer_len(&self) -> usize {
        self.out.len()
    }

    /// Patches the row count. Fails if the last row is incomplete.
    pub fn finish(self) -> Result<u32, EncodeError> {
        if self.cell_in_row != 0 {
            return Err(EncodeError::RowShape {
                expected: self.columns,
                got: self.cell_in_row,
            });
        }
        let n = i32::try_from(self.rows).map_err(|_| EncodeError::Invalid("too many rows"))?;
        if let Some(slot) = self.out.get_mut(self.count_at..self.count_at + 4) {
            slot.copy_from_slice(&n.to_be_bytes());
        }
        Ok(self.rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use helenus_types::NativeType;

    fn col(name: &str) -> ColumnSpec {
        ColumnSpec {
            keyspace: "ks".into(),
            table: "t".into(),
            name: name.into(),
            typ: CqlType::Native(NativeType::Int),
        }
    }

    #[test]
    fn rows_writer_output_equals_materialised_rows_encoding() {
        let md = RowsMetadata::new(vec![col("a"), col("b")]);
        let mut streamed = BytesMut::new();
        let mut w = RowsWriter::begin(&mut streamed, 4, &md).unwrap();
        w.cell(Some(&[0, 0, 0, 1])).unwrap();
        w.cell_with(|b| b.put_i32(2)).unwrap();
        w.row([None, Some(&[0, 0, 0, 3][..])]).unwrap();
        assert_eq!(w.finish().unwrap(), 2);
        let rows = Rows {
            metadata: md,
            rows: vec![
                vec![
                    Some(Bytes::from_static(&[0, 0, 0, 1])),
                    Some(Bytes::from_static(&[0, 0, 0, 2])),
                ],
                vec![None, Some(Bytes::from_static(&[0, 0, 0, 3]))],
            ],
        };
        let mut whole = BytesMut::new();
        ResultBody::Rows(rows.clone())
            .encode(4, &mut whole)
            .unwrap();
        assert_eq!(streamed, whole);
        let back = ResultBody::decode(&mut Reader::new(whole.freeze()), 4).unwrap();
        assert_eq!(back, ResultBody::Rows(rows));
    }

    #[test]
    fn encoded_rows_are_sent_as_the_rows_they_hold() {
        let md = RowsMetadata::new(vec![col("a"), col("b")]);
        let rows = Rows {
            metadata: md.clone(),
            rows: vec![
                vec![Some(Bytes::from_static(&[0, 0, 0, 1])), None],
                vec![Some(Bytes::new()), Some(Bytes::from_static(&[7]))],
            ],
        };
        let mut body = BytesMut::new();
        for cell in rows.rows.iter().flatten() {
            match cell {
                Some(v) => {
                    body.put_i32(v.len() as i32);
                    body.put_slice(v);
                }
                None => body.put_i32(-1),
            }
        }
        let encoded = ResultBody::EncodedRows(EncodedRows {
            metadata: md,
            count: 2,
            body: body.freeze(),
        });
        let (mut a, mut b) = (BytesMut::new(), BytesMut::new());
        encoded.encode(4, &mut a).unwrap();
        ResultBody::Rows(rows.clone()).encode(4, &mut b).unwrap();
        assert_eq!(a, b);
        let back = ResultBody::decode(&mut Reader::new(a.freeze()), 4).unwrap();
        assert_eq!(back, ResultBody::Rows(rows));
    }

    #[test]
    fn column_specs_encoded_once_are_written_as_the_specs_themselves() {
        let other_table = ColumnSpec {
            table: "u".into(),
            ..col("c")
        };
        for columns in [
            vec![col("a"), col("b")],
            vec![col("a"), other_table],
            vec![],
        ] {
            let plain = RowsMetadata::new(columns.clone());
            let paged = RowsMetadata {
                paging_state: Some(Bytes::from_static(b"next")),
                ..plain.clone()
            };
            for md in [plain, paged] {
                let pre = RowsMetadata {
                    columns: Vec::new(),
                    global_table_spec: None,
                    encoded_columns: Some(EncodedColumnSpecs::new(&columns).unwrap()),
                    ..md.clone()
                };
                let (mut a, mut b) = (BytesMut::new(), BytesMut::new());
                md.encode(5, &mut a).unwrap();
                pre.encode(5, &mut b).unwrap();
                assert_eq!(a, b, "{columns:?}");
                let back = RowsMetadata::decode(&mut Reader::new(b.freeze()), 5).unwrap();
                assert_eq!(back, md);
            }
        }
        let skip = RowsMetadata {
            columns_count: 2,
            no_metadata: true,
            encoded_columns: Some(EncodedColumnSpecs::new(&[col("a"), col("b")]).unwrap()),
            ..RowsMetadata::default()
        };
        let (mut a, mut b) = (BytesMut::new(), BytesMut::new());
        skip.encode(4, &mut a).unwrap();
        RowsMetadata::without_metadata(2).encode(4, &mut b).unwrap();
        assert_eq!(a, b);
        let miscounted = RowsMetadata {
            columns_count: 3,
            encoded_columns: Some(EncodedColumnSpecs::new(&[col("a")]).unwrap()),
            ..RowsMetadata::default()
        };
        assert!(miscounted.encode(4, &mut BytesMut::new()).is_err());
    }

    #[test]
    fn rows_writer_rejects_partial_row() {
        let md = RowsMetadata::new(vec![col("a"), col("b")]);
        let mut out = BytesMut::new();
        let mut w = RowsWriter::begin(&mut out, 4, &md).unwrap();
        w.cell(None).unwrap();
        assert!(w.finish().is_err());
    }

    #[test]
    fn huge_row_count_is_rejected_before_allocating() {
        let md = RowsMetadata::without_metadata(3);
        let mut out = BytesMut::new();
        out.put_i32(KIND_ROWS);
        md.encode(4, &mut out).unwrap();
        out.put_i32(i32::MAX);
        assert!(ResultBody::decode(&mut Reader::new(out.freeze()), 4).is_err());
    }
}
