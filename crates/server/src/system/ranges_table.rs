//! `system.available_ranges_v2`: the ranges a joining node has received so far
//! (`crate::available_ranges` keeps them), as Cassandra shows them.

use crate::node::NodeState;
use bytes::{BufMut, Bytes, BytesMut};
use helenus_schema::TableMeta;
use helenus_types::CqlValue;

/// A range as Cassandra serializes it in `available_ranges_v2`'s blobs (a Range bounds kind,
/// 0, then each Murmur3 token as its length and 8 big-endian bytes).
fn range_blob(start: i64, end: i64) -> CqlValue {
    let mut b = BytesMut::with_capacity(28);
    b.put_i32(0);
    for token in [start, end] {
        b.put_i32(8);
        b.put_i64(token);
    }
    CqlValue::Blob(b.freeze())
}

/// The rows of `system.available_ranges_v2`: one per keyspace with ranges received (all full
/// ranges: Helenus has no transient replication, so `transient_ranges` is null, an empty set).
pub fn system_rows(state: &NodeState, t: &TableMeta) -> Vec<Vec<Option<Bytes>>> {
    let ranges = crate::available_ranges::AvailableRanges::load(
        &state.config.primary_data_dir().join("system"),
    );
    ranges
        .by_keyspace()
        .iter()
        .map(|(keyspace, ranges)| {
            let blobs = ranges.iter().map(|(s, e)| range_blob(*s, *e)).collect();
            super::RowBuilder::new(t)
                .set("keyspace_name", super::text(keyspace.clone()))
                .set("full_ranges", CqlValue::Set(blobs))
                .build()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn a_range_blob_has_cassandras_layout() {
        let CqlValue::Blob(b) = range_blob(1, -1) else {
            panic!("not a blob");
        };
        let mut want = vec![0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 8];
        want.extend([0xff; 8]);
        assert_eq!(&b[..], &want[..]);
    }
}
