//! A whole collection value turned into the cells of a multi-cell column, straight from its
//! serialized form: elements are sliced out of the request's bytes rather than decoded into
//! values and serialized again. Decoding a 15 MB `list<tinyint>` of 3M elements into values cost
//! a heap object per element (+1.5 GiB of RSS at its peak); this way the cells are the only
//! per-element memory, and the mutation size bound is checked before any is made.

use crate::exec::error::{ExecError, ExecResult};
use crate::exec::values;
use crate::exec::write_checks::CELL_OVERHEAD_BYTES;
use bytes::{Bytes, BytesMut};
use helenus_storage as st;
use helenus_types::{CqlType, NativeType};

/// Bytes of a list element's cell path (a time UUID).
const LIST_PATH_BYTES: u64 = 16;

/// The cells a list, set or map column's cells for `value` (already validated) would add to a
/// mutation's serialized size; `None` for types whose cells are not one per entry.
pub(super) fn cells_size(ty: &CqlType, value: &[u8]) -> Option<u64> {
    let n = helenus_types::collection_len(value) as u64;
    // The serialized form holds the count and a 4-byte length before every entry component.
    let (lengths, paths) = match ty {
        CqlType::List { .. } => (4 * n, LIST_PATH_BYTES * n),
        CqlType::Set { .. } => (4 * n, 0),
        CqlType::Map { .. } => (8 * n, 0),
        _ => return None,
    };
    let payload = (value.len() as u64).saturating_sub(4 + lengths);
    Some(n * CELL_OVERHEAD_BYTES + paths + payload)
}

/// Whether a value of `ty` re-serializes to exactly its input, so a cell may keep the input's
/// bytes. Booleans, varints, decimals and durations have several encodings of one value, and
/// nested values are normalized, so those go through a decode as before.
fn keeps_bytes(ty: &CqlType) -> bool {
    use NativeType::*;
    matches!(
        ty,
        CqlType::Native(
            Ascii
                | Bigint
                | Blob
                | Counter
                | Double
                | Float
                | Int
                | Timestamp
                | Uuid
                | Varchar
                | Timeuuid
                | Inet
                | Date
                | Time
                | Smallint
                | Tinyint
        )
    )
}

/// One element as a cell stores it: a slice of `whole` (no copy) where the bytes are kept.
fn element(ty: &CqlType, raw: &[u8], whole: &Bytes) -> ExecResult<Bytes> {
    if keeps_bytes(ty) {
        return Ok(whole.slice_ref(raw));
    }
    let v = helenus_types::deserialize(ty, raw).map_err(|e| ExecError::Invalid(e.to_string()))?;
    Ok(values::serialize(&v))
}

/// Where the cells go and what they carry besides path and value.
pub(super) struct CellSink<'o> {
    pub column: u32,
    pub timestamp_us: i64,
    pub ttl_s: u32,
    pub out: &'o mut Vec<st::CellUpdate>,
}

impl CellSink<'_> {
    fn set(&mut self, path: Bytes, value: Bytes) {
        self.out.push(st::CellUpdate {
            column: self.column,
            path: Some(path),
            timestamp_us: self.timestamp_us,
            op: st::CellOp::Set {
                value,
                ttl_s: self.ttl_s,
            },
        });
    }
}

/// Pushes the cells of list, set or map `value` of type `ty`. List elements get the time UUIDs
/// `next_path` gives, written into one buffer (one allocation for all the paths, not one each).
pub(super) fn collection_cells(
    ty: &CqlType,
    value: &Bytes,
    mut next_path: impl FnMut() -> [u8; 16],
    sink: &mut CellSink<'_>,
) -> ExecResult<()> {
    let n = helenus_types::collection_len(value);
    sink.out.reserve(n.min(value.len() / 4));
    let bad = |e: helenus_types::TypeError| ExecError::Invalid(e.to_string());
    let mut failed = None;
    match ty {
        CqlType::List { element: et, .. } => {
            // A validated list has exactly `n` elements, each at least its 4-byte length.
            let count = n.min(value.len() / 4);
            let mut paths = BytesMut::with_capacity(16 * count);
            for _ in 0..count {
                paths.extend_from_slice(&next_path());
            }
            let paths = paths.freeze();
            let mut at = 0;
            helenus_types::for_each_entry(ty, value, |raw, _| {
                if failed.is_some() {
                    return;
                }
                match (paths.get(at..at + 16), element(et, raw, value)) {
                    (Some(_), Ok(v)) => sink.set(paths.slice(at..at + 16), v),
                    (_, Err(e)) => failed = Some(e),
                    (None, _) => failed = Some(ExecError::Invalid("Malformed list value".into())),
                }
                at += 16;
            })
            .map_err(bad)?;
        }
        CqlType::Set { element: et, .. } => {
            helenus_types::for_each_entry(ty, value, |raw, _| {
                match (failed.is_none(), element(et, raw, value)) {
                    (true, Ok(path)) => sink.set(path, Bytes::new()),
                    (true, Err(e)) => failed = Some(e),
                    _ => {}
                }
            })
            .map_err(bad)?;
        }
        CqlType::Map { key, value: vt, .. } => {
            helenus_types::for_each_entry(ty, value, |k, v| {
                if failed.is_some() {
                    return;
                }
                let cell = element(key, k, value)
                    .and_then(|k| Ok((k, element(vt, v.unwrap_or_default(), value)?)));
                match cell {
                    Ok((k, v)) => sink.set(k, v),
                    Err(e) => failed = Some(e),
                }
            })
            .map_err(bad)?;
        }
        _ => {}
    }
    failed.map_or(Ok(()), Err)
}
