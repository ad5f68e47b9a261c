//! Secondary indexes kept by the engine, as Cassandra's legacy ("local table") indexes are.
//!
//! Why this design: every write that reaches a node — a client write, a replica write, a hint,
//! read repair, a batchlog replay — goes through `Engine::apply*`, so deriving index entries
//! there keeps the index in step with the base table on every path, in the same commitlog
//! entry (a crash leaves both or neither), and commitlog replay restores both without knowing
//! about indexes. The entries live in an ordinary engine table, so memtables, flush,
//! compaction, TTL expiry and restarts need nothing new.
//!
//! # Index table layout
//!
//! One hidden table per index, named `<table>.<index>` in the base table's keyspace directory:
//!
//! ```text
//! partition key   the indexed value (token: Murmur3 of the value)
//! clustering      [ token of the base partition (8 bytes, big-endian, sign bit flipped so
//!                   byte order is signed order),
//!                   base partition key (bytes),
//!                   base clustering columns (the base table's comparators and directions) ]
//! cells           none: a row's liveness (timestamp and TTL of the indexed cell) is the entry
//! ```
//!
//! Entries of one value are thus in the order a full scan of the base table returns its rows
//! (token, key, clustering), so a query served by the index returns rows in the same order as
//! one that scans and filters, and a paging state (token, key, clustering of the last row)
//! is a position inside the index partition.
//!
//! Writes only add entries: an update that moves a row to another value, a deletion or an
//! expiry leaves the old entry behind, and the reader checks each base row against the
//! restriction, then deletes the stale entry (`stale_entry_deletion`), as Cassandra's legacy
//! index does.
//! Indexed: regular, single-cell columns (including frozen collections as a whole); other
//! targets (collection elements, static, key columns) are served by scanning.

use crate::types::*;
use bytes::Bytes;
use std::sync::Arc;

/// One index of a base table: the hidden table that holds its entries and the column it
/// indexes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDef {
    pub index_table: TableId,
    pub column: ColumnId,
}

/// Name of the file in an index table's directory that says its build over the data written
/// before the index existed completed.
pub(crate) const BUILT_MARKER: &str = "index-built";

/// Partitions a build reads from the base table per read.
pub(crate) const BUILD_BATCH_PARTITIONS: usize = 256;

/// Raw byte order (the token component is encoded so that byte order is token order).
struct ByteOrder;

impl ValueComparator for ByteOrder {
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        a.cmp(b)
    }
}

/// The definition of the table holding the entries of index `index_name` of `base`.
pub fn index_table_def(base: &TableDef, index_table: TableId, index_name: &str) -> TableDef {
    let bytes = ClusteringColumn {
        cmp: Arc::new(ByteOrder),
        descending: false,
    };
    let mut clustering = vec![bytes.clone(), bytes];
    clustering.extend(base.clustering.iter().cloned());
    let options = TableOptions {
        default_time_to_live: 0,
        rows_per_partition_to_cache: 0,
        ..base.options.clone()
    };
    TableDef {
        id: index_table,
        keyspace: base.keyspace.clone(),
        name: format!("{}.{}", base.name, index_name),
        clustering,
        columns: Vec::new(),
        options,
    }
}

/// The token of a base partition as the first clustering component of an entry.
pub fn token_component(token: i64) -> Bytes {
    Bytes::copy_from_slice(&((token as u64) ^ (1 << 63)).to_be_bytes())
}

/// The clustering of the entry for base row (`token`, `key`, `clustering`).
pub fn entry_clustering(token: i64, key: &Bytes, clustering: &[Bytes]) -> Vec<Bytes> {
    let mut out = Vec::with_capacity(2 + clustering.len());
    out.push(token_component(token));
    out.push(key.clone());
    out.extend(clustering.iter().cloned());
    out
}

/// The base row an entry points at: (token, partition key, clustering); None for an entry that
/// is not one this module wrote.
pub fn entry_target(entry: &[Bytes]) -> Option<(i64, Bytes, Vec<Bytes>)> {
    let (token, rest) = entry.split_first()?;
    let (key, clustering) = rest.split_first()?;
    let raw: [u8; 8] = token.as_ref().try_into().ok()?;
    let token = (u64::from_be_bytes(raw) ^ (1 << 63)) as i64;
    Some((token, key.clone(), clustering.to_vec()))
}

/// The partition of the index table holding the entries of `value`.
pub fn value_partition(value: &Bytes) -> PartitionRange {
    PartitionRange::Single {
        key: value.clone(),
        token: helenus_types::murmur3_token(value),
    }
}

/// Deletes the entry `entry` of `value`, found stale (its base row gone or changed), as of its
/// own write: an entry written again since, by a write that set the value back, stays.
pub fn stale_entry_deletion(
    index_table: TableId,
    value: &Bytes,
    entry: Vec<Bytes>,
    written_at_us: i64,
    now_s: i64,
) -> Mutation {
    Mutation {
        table: index_table,
        key: value.clone(),
        token: helenus_types::murmur3_token(value),
        partition_deletion: None,
        range_tombstones: Vec::new(),
        static_row: None,
        rows: vec![RowUpdate {
            clustering: entry,
            liveness: None,
            deletion: Some(DeletionTime {
                marked_for_delete_at_us: written_at_us,
                local_deletion_time_s: now_s,
            }),
            cells: Vec::new(),
        }],
    }
}

/// One entry: base row (`token`, `key`, `clustering`) has `value`, written as `liveness` says.
pub(crate) fn entry_mutation(
    def: &IndexDef,
    value: &Bytes,
    (token, key, clustering): (i64, &Bytes, &[Bytes]),
    liveness: Liveness,
) -> Mutation {
    Mutation {
        table: def.index_table,
        key: value.clone(),
        token: helenus_types::murmur3_token(value),
        partition_deletion: None,
        range_tombstones: Vec::new(),
        static_row: None,
        rows: vec![RowUpdate {
            clustering: entry_clustering(token, key, clustering),
            liveness: Some(liveness),
            deletion: None,
            cells: Vec::new(),
        }],
    }
}

/// The entries a base mutation adds to `defs`: one per row that sets an indexed cell, living
/// as long as the cell does. Empty values are not indexed (they cannot be a partition key);
/// a query for one scans.
pub(crate) fn entries(m: &Mutation, defs: &[IndexDef], now_s: i64) -> Vec<Mutation> {
    let mut out = Vec::new();
    for def in defs {
        for row in &m.rows {
            for cell in row
                .cells
                .iter()
                .filter(|c| c.column == def.column && c.path.is_none())
            {
                let (value, liveness) = match &cell.op {
                    CellOp::Set { value, ttl_s } => (
                        value,
                        Liveness {
                            timestamp_us: cell.timestamp_us,
                            ttl_s: *ttl_s,
                            expires_at_s: if *ttl_s > 0 {
                                now_s + i64::from(*ttl_s)
                            } else {
                                0
                            },
                        },
                    ),
                    CellOp::SetExpiring {
                        value,
                        ttl_s,
                        expires_at_s,
                    } => (
                        value,
                        Liveness {
                            timestamp_us: cell.timestamp_us,
                            ttl_s: *ttl_s,
                            expires_at_s: *expires_at_s,
                        },
                    ),
                    _ => continue,
                };
                if value.is_empty() {
                    continue;
                }
                out.push(entry_mutation(
                    def,
                    value,
                    (m.token, &m.key, &row.clustering),
                    liveness,
                ));
            }
        }
    }
    out
}

/// The entries of the rows of one base partition read back (an index build).
pub(crate) fn entries_of_partition(def: &IndexDef, p: &PartitionData) -> Vec<Mutation> {
    let mut out = Vec::new();
    for row in &p.rows {
        let Some(cell) = row
            .cells
            .iter()
            .find(|c| c.column == def.column && c.path.is_none())
        else {
            continue;
        };
        if cell.value.is_empty() {
            continue;
        }
        let liveness = Liveness {
            timestamp_us: cell.timestamp_us,
            ttl_s: cell.ttl_s,
            expires_at_s: cell.expires_at_s,
        };
        out.push(entry_mutation(
            def,
            &cell.value,
            (p.token, &p.key, &row.clustering),
            liveness,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_component_orders_as_tokens() {
        let tokens = [i64::MIN, -5, -1, 0, 1, 7, i64::MAX];
        for w in tokens.windows(2) {
            assert!(token_component(w[0]) < token_component(w[1]));
        }
        let key = Bytes::from_static(b"k");
        let e = entry_clustering(-42, &key, &[Bytes::from_static(b"c")]);
        assert_eq!(
            entry_target(&e),
            Some((-42, key, vec![Bytes::from_static(b"c")]))
        );
    }
}
