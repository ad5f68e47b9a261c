//! Data format 1: partitions with fixed-width fields. The commitlog's encoding of mutations,
//! and the Data.db encoding of SSTables written before format 2 (compact.rs).
//!
//! Layout of an encoded partition (all integers big-endian, `bytes` = u32 length + data):
//! ```text
//! key: bytes | token: i64 | deletion: opt(dt) | n_rt: u32 | n_rt * (start: bound, end: bound, dt)
//! static_row: row | n_rows: u32 | n_rows * (clustering: u16 count + count * bytes, row)
//! dt    = marked_for_delete_at_us: i64, local_deletion_time_s: i64
//! opt(x)= u8 0 | u8 1 x
//! bound = weight: i8, u16 count, count * bytes
//! row   = opt(liveness: ts i64, ttl u32, expires i64) | opt(dt) | u32 n + n * (column u32, dt)
//!         | u32 n_cells + n_cells * cell
//! cell  = column u32 | opt(path bytes) | timestamp i64 | kind u8 then
//!         0 live: value bytes, ttl u32, expires i64 | 1 tombstone: ldt i64 | 2 counter: clock i64, total i64
//! ```

use super::{Reader, Writer};
use crate::clustering::{CKey, ClusteringComparator};
use crate::error::StorageError;
use crate::partition::{Partition, Row};
use crate::reconcile::{Cell, CellKind};
use crate::types::Liveness;
use std::sync::Arc;

fn encode_row(w: &mut Writer<'_>, r: &Row) {
    match &r.liveness {
        Some(l) => {
            w.u8(1);
            w.i64(l.timestamp_us);
            w.u32(l.ttl_s);
            w.i64(l.expires_at_s);
        }
        None => w.u8(0),
    }
    w.opt_dt(&r.deletion);
    w.u32(r.complex_deletions.len() as u32);
    for (c, d) in &r.complex_deletions {
        w.u32(*c);
        w.dt(d);
    }
    w.u32(r.cells.len() as u32);
    for ((col, path), c) in &r.cells {
        w.u32(*col);
        match path {
            Some(p) => {
                w.u8(1);
                w.bytes(p);
            }
            None => w.u8(0),
        }
        w.i64(c.timestamp_us);
        match &c.kind {
            CellKind::Live {
                value,
                ttl_s,
                expires_at_s,
            } => {
                w.u8(0);
                w.bytes(value);
                w.u32(*ttl_s);
                w.i64(*expires_at_s);
            }
            CellKind::Tombstone {
                local_deletion_time_s,
            } => {
                w.u8(1);
                w.i64(*local_deletion_time_s);
            }
            CellKind::Counter { clock, total } => {
                w.u8(2);
                w.i64(*clock);
                w.i64(*total);
            }
        }
    }
}

fn decode_row(r: &mut Reader<'_>) -> Result<Row, StorageError> {
    let mut row = Row::default();
    if r.u8()? == 1 {
        row.liveness = Some(Liveness {
            timestamp_us: r.i64()?,
            ttl_s: r.u32()?,
            expires_at_s: r.i64()?,
        });
    }
    row.deletion = r.opt_dt()?;
    for _ in 0..r.count(20)? {
        let c = r.u32()?;
        row.complex_deletions.insert(c, r.dt()?);
    }
    for _ in 0..r.count(14)? {
        let col = r.u32()?;
        let path = if r.u8()? == 1 { Some(r.bytes()?) } else { None };
        let timestamp_us = r.i64()?;
        let kind = match r.u8()? {
            0 => CellKind::Live {
                value: r.bytes()?,
                ttl_s: r.u32()?,
                expires_at_s: r.i64()?,
            },
            1 => CellKind::Tombstone {
                local_deletion_time_s: r.i64()?,
            },
            2 => CellKind::Counter {
                clock: r.i64()?,
                total: r.i64()?,
            },
            _ => return Err(StorageError::Decode { what: "cell kind" }),
        };
        row.cells.insert((col, path), Cell { timestamp_us, kind });
    }
    Ok(row)
}

/// Appends the encoding of `p` to `out`.
/// About the bytes `encode_partition` appends for `p` (a little over, never far under), so a
/// buffer can be sized once: a partition of a million cells grown by doubling touches about
/// twice its encoding.
pub fn encoded_len_hint(p: &Partition) -> usize {
    // Per cell: column, path flag and length, timestamp, kind, value length, TTL, expiry.
    const CELL: usize = 4 + 1 + 4 + 8 + 1 + 4 + 4 + 8;
    let row = |r: &Row| -> usize {
        let cells: usize = r
            .cells
            .iter()
            .map(|((_, path), c)| {
                let value = match &c.kind {
                    CellKind::Live { value, .. } => value.len(),
                    _ => 16,
                };
                CELL + path.as_ref().map_or(0, |p| p.len()) + value
            })
            .sum();
        64 + 20 * r.complex_deletions.len() + cells
    };
    let clustering: usize = p
        .rows
        .keys()
        .map(|k| 16 + k.values.iter().map(|v| 4 + v.len()).sum::<usize>())
        .sum();
    64 + p.key.len()
        + 48 * p.range_tombstones.len()
        + row(&p.static_row)
        + p.rows.values().map(|r| row(r)).sum::<usize>()
        + clustering
}

pub fn encode_partition(out: &mut Vec<u8>, p: &Partition) {
    encode_partition_indexed(out, p, &mut Vec::new());
}

/// Like `encode_partition`, also recording where each row starts (relative to the partition's
/// first byte) in `row_starts`; returns the header length (everything before the first row).
pub fn encode_partition_indexed(
    out: &mut Vec<u8>,
    p: &Partition,
    row_starts: &mut Vec<usize>,
) -> usize {
    let base = out.len();
    let header_len = encode_partition_header(out, p, p.rows.len() as u32);
    for (k, r) in &p.rows {
        row_starts.push(out.len() - base);
        encode_keyed_row(out, k, r);
    }
    header_len
}

/// Appends everything of `p` but its rows, announcing `row_count` rows to follow; returns the
/// bytes written. With `encode_keyed_row` it writes a partition a row at a time.
pub fn encode_partition_header(out: &mut Vec<u8>, p: &Partition, row_count: u32) -> usize {
    let base = out.len();
    let mut w = Writer(out);
    w.bytes(&p.key);
    w.i64(p.token);
    w.opt_dt(&p.deletion);
    w.u32(p.range_tombstones.len() as u32);
    for (s, e, d) in &p.range_tombstones {
        for b in [s, e] {
            w.u8(b.weight as u8);
            w.prefix(&b.values);
        }
        w.dt(d);
    }
    encode_row(&mut w, &p.static_row);
    w.u32(row_count);
    w.0.len() - base
}

/// Appends one row with its clustering.
pub fn encode_keyed_row(out: &mut Vec<u8>, k: &CKey, r: &Row) {
    let mut w = Writer(out);
    w.prefix(&k.values);
    encode_row(&mut w, r);
}

/// Decodes one partition from `r`.
pub fn decode_partition(
    r: &mut Reader<'_>,
    cmp: &Arc<ClusteringComparator>,
) -> Result<Partition, StorageError> {
    let mut p = decode_head(r, cmp)?;
    let n = r.count(11)?;
    decode_rows(r, cmp, n, &mut p)?;
    Ok(p)
}

/// Decodes the partition header (everything but the rows); returns it and the row count.
pub fn decode_partition_header(
    r: &mut Reader<'_>,
    cmp: &Arc<ClusteringComparator>,
) -> Result<(Partition, usize), StorageError> {
    let p = decode_head(r, cmp)?;
    let n = r.u32()? as usize;
    Ok((p, n))
}

/// Key, token, partition deletion, range tombstones and static row: what precedes the rows.
fn decode_head(
    r: &mut Reader<'_>,
    cmp: &Arc<ClusteringComparator>,
) -> Result<Partition, StorageError> {
    let key = r.bytes()?;
    let token = r.i64()?;
    let mut p = Partition::new(key, token);
    p.deletion = r.opt_dt()?;
    for _ in 0..r.count(22)? {
        let mut bounds = Vec::with_capacity(2);
        for _ in 0..2 {
            let weight = r.u8()? as i8;
            let values = r.prefix()?;
            bounds.push(CKey {
                values,
                weight,
                cmp: cmp.clone(),
            });
        }
        let d = r.dt()?;
        let e = bounds.pop().ok_or(StorageError::Decode {
            what: "range tombstone",
        })?;
        let s = bounds.pop().ok_or(StorageError::Decode {
            what: "range tombstone",
        })?;
        p.range_tombstones.push((s, e, d));
    }
    p.static_row = decode_row(r)?;
    Ok(p)
}

/// Decodes `n` rows in stored (clustering) order.
pub fn decode_keyed_rows(
    r: &mut Reader<'_>,
    cmp: &Arc<ClusteringComparator>,
    n: usize,
    out: &mut std::collections::VecDeque<(CKey, Row)>,
) -> Result<(), StorageError> {
    for _ in 0..n {
        let values = r.prefix()?;
        let row = decode_row(r)?;
        out.push_back((CKey::row(values, cmp), row));
    }
    Ok(())
}

/// Decodes `n` rows into `p`.
pub fn decode_rows(
    r: &mut Reader<'_>,
    cmp: &Arc<ClusteringComparator>,
    n: usize,
    p: &mut Partition,
) -> Result<(), StorageError> {
    for _ in 0..n {
        let values = r.prefix()?;
        let row = decode_row(r)?;
        p.insert_row(CKey::row(values, cmp), row);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn truncated_input_is_a_decode_error() {
        let cmp = crate::clustering::tests::cmp2(false);
        let mut p = Partition::new(Bytes::from_static(b"k"), 7);
        p.insert_row(
            CKey::row(
                vec![Bytes::from_static(b"a"), Bytes::from_static(b"b")],
                &cmp,
            ),
            Row {
                liveness: Some(Liveness {
                    timestamp_us: 1,
                    ttl_s: 0,
                    expires_at_s: 0,
                }),
                ..Row::default()
            },
        );
        let mut buf = Vec::new();
        encode_partition(&mut buf, &p);
        let back = decode_partition(&mut Reader::new(&buf, "t"), &cmp).unwrap();
        assert_eq!(back.rows.len(), 1);
        for cut in 0..buf.len() {
            assert!(decode_partition(&mut Reader::new(&buf[..cut], "t"), &cmp).is_err());
        }
    }
}
