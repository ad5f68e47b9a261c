//! A partition's bytes for digests: one encoding of everything that decides what a partition
//! holds (deletions with their times, clusterings, cells with timestamps and TTLs), written
//! straight from the merged partition. Repairs hash it per partition; building a mutation and
//! encoding that instead (as the wire does) took a third of a repair's scan in copies and
//! reference counts. Only equal partitions give equal bytes: every length is written before
//! what it measures and every optional part behind a tag, so no two partitions run together.
//! Times a partition does not use (an expiry without a TTL) are left out.

use super::{Partition, Row};
use crate::clustering::CKey;
use crate::reconcile::CellKind;
use crate::types::*;

/// `p` encoded for a digest into `out` (cleared first).
pub(crate) fn digest_bytes(p: &Partition, out: &mut Vec<u8>) {
    out.clear();
    put_bytes(out, &p.key);
    out.extend_from_slice(&p.token.to_le_bytes());
    put_deletion(out, p.deletion.as_ref());
    put_len(out, p.range_tombstones.len());
    for (start, end, d) in &p.range_tombstones {
        put_ckey(out, start);
        put_ckey(out, end);
        put_deletion(out, Some(d));
    }
    put_row(out, &p.static_row);
    put_len(out, p.rows.len());
    for (k, r) in &p.rows {
        put_ckey(out, k);
        put_row(out, r);
    }
}

fn put_len(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n as u64).to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_len(out, b.len());
    out.extend_from_slice(b);
}

fn put_ckey(out: &mut Vec<u8>, k: &CKey) {
    put_len(out, k.values.len());
    for v in &k.values {
        put_bytes(out, v);
    }
    out.push(k.weight as u8);
}

fn put_deletion(out: &mut Vec<u8>, d: Option<&DeletionTime>) {
    match d {
        None => out.push(0),
        Some(d) => {
            out.push(1);
            out.extend_from_slice(&d.marked_for_delete_at_us.to_le_bytes());
            out.extend_from_slice(&d.local_deletion_time_s.to_le_bytes());
        }
    }
}

fn put_expiry(out: &mut Vec<u8>, ttl_s: u32, expires_at_s: i64) {
    out.extend_from_slice(&ttl_s.to_le_bytes());
    if ttl_s > 0 {
        out.extend_from_slice(&expires_at_s.to_le_bytes());
    }
}

fn put_row(out: &mut Vec<u8>, r: &Row) {
    match &r.liveness {
        None => out.push(0),
        Some(l) => {
            out.push(1);
            out.extend_from_slice(&l.timestamp_us.to_le_bytes());
            put_expiry(out, l.ttl_s, l.expires_at_s);
        }
    }
    put_deletion(out, r.deletion.as_ref());
    put_len(out, r.complex_deletions.len());
    for (column, d) in &r.complex_deletions {
        out.extend_from_slice(&column.to_le_bytes());
        put_deletion(out, Some(d));
    }
    put_len(out, r.cells.len());
    for ((column, path), c) in &r.cells {
        out.extend_from_slice(&column.to_le_bytes());
        match path {
            None => out.push(0),
            Some(path) => {
                out.push(1);
                put_bytes(out, path);
            }
        }
        out.extend_from_slice(&c.timestamp_us.to_le_bytes());
        match &c.kind {
            CellKind::Live {
                value,
                ttl_s,
                expires_at_s,
            } => {
                out.push(0);
                put_expiry(out, *ttl_s, *expires_at_s);
                put_bytes(out, value);
            }
            CellKind::Tombstone {
                local_deletion_time_s,
            } => {
                out.push(1);
                out.extend_from_slice(&local_deletion_time_s.to_le_bytes());
            }
            CellKind::Counter { clock, total } => {
                out.push(2);
                out.extend_from_slice(&clock.to_le_bytes());
                out.extend_from_slice(&total.to_le_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::codec::compact::tests::live;
    use crate::reconcile::Cell;
    use bytes::Bytes;

    fn digest(p: &Partition) -> Vec<u8> {
        let mut out = Vec::new();
        digest_bytes(p, &mut out);
        out
    }

    fn with_cell(value: &'static [u8], ts: i64, ttl_s: u32, expires_at_s: i64) -> Partition {
        let mut p = Partition::new(Bytes::from_static(b"k"), 7);
        p.static_row.cells.insert(
            (3, None),
            Cell {
                timestamp_us: ts,
                kind: CellKind::Live {
                    value: Bytes::from_static(value),
                    ttl_s,
                    expires_at_s,
                },
            },
        );
        p
    }

    #[test]
    fn what_a_partition_holds_changes_its_bytes_and_an_unused_expiry_does_not() {
        let base = digest(&with_cell(b"ab", 10, 0, 0));
        assert_eq!(base, digest(&with_cell(b"ab", 10, 0, 99)));
        assert_ne!(base, digest(&with_cell(b"ab", 11, 0, 0)));
        assert_ne!(base, digest(&with_cell(b"ac", 10, 0, 0)));
        assert_ne!(base, digest(&with_cell(b"ab", 10, 5, 99)));
        assert_ne!(
            digest(&with_cell(b"ab", 10, 5, 99)),
            digest(&with_cell(b"ab", 10, 5, 98))
        );
        let mut deleted = with_cell(b"ab", 10, 0, 0);
        deleted.deletion = Some(DeletionTime {
            marked_for_delete_at_us: 5,
            local_deletion_time_s: 1,
        });
        assert_ne!(base, digest(&deleted));
    }

    #[test]
    fn lengths_keep_neighbouring_values_apart() {
        let with_path = |path: &'static [u8], value: &'static [u8]| {
            let mut p = Partition::new(Bytes::from_static(b"k"), 7);
            p.static_row
                .cells
                .insert((1, Some(Bytes::from_static(path))), live(1, value));
            digest(&p)
        };
        assert_ne!(with_path(b"xy", b"z"), with_path(b"x", b"yz"));
    }
}
