//! Memory a memtable really holds: values copied into per-shard arena chunks, and an estimate of
//! the structures around them that the memtable budget counts.
//!
//! Why copy values: a decoded request's values are `Bytes` slices of the connection's 64 KiB
//! read buffer (zero-copy decoding), and a commitlog replay's are slices of a segment; a cell
//! kept as such a slice keeps the whole buffer alive for as long as the memtable lives. Copied
//! into arena chunks, a memtable's values cost their own length plus a few large allocations,
//! which are freed together when the flushed memtable is dropped.
//!
//! Why an estimate: counting every allocation exactly would need a hook in the allocator; the
//! structure sizes below come from `size_of` of the real types and the B-tree node layout, and
//! `tests/memory.rs` checks the total against a counting allocator.

use crate::clustering::CKey;
use crate::partition::cellmap::CellKey;
use crate::partition::{MergeGrowth, Partition, Row};
use crate::reconcile::{Cell, CellKind};
use bytes::{Bytes, BytesMut};
use std::mem::size_of;

/// Smallest arena chunk: a memtable of a small table (system tables) stays small.
const MIN_CHUNK_BYTES: usize = 4 << 10;
/// Largest arena chunk: each shard wastes at most the unused tail of one chunk.
const MAX_CHUNK_BYTES: usize = 256 << 10;
/// Values at least this long get an allocation of their own rather than a chunk's tail.
const OWN_ALLOCATION_BYTES: usize = 16 << 10;
/// Entries of one B-tree node in std's `BTreeMap` (its `CAPACITY`, 2 * B - 1 with B = 6).
const BTREE_NODE_ENTRIES: usize = 11;
/// Allocator bookkeeping and size-class rounding per allocation (mimalloc rounds up to at most
/// 1/8 of the size; 16 bytes covers small objects' classes).
const PER_ALLOCATION_BYTES: u64 = 16;

/// Bump-allocated storage for one memtable shard's values.
#[derive(Default)]
pub struct Arena {
    chunk: BytesMut,
    next_chunk_bytes: usize,
    /// Bytes this arena has allocated (chunks and values of their own), ever.
    allocated: u64,
}

/// What copying an update into a memtable costs: arena bytes its values took, and the
/// structures it would hold as a new partition.
#[derive(Debug, Clone, Copy)]
pub struct Copied {
    pub arena: u64,
    pub structures: u64,
}

impl Arena {
    /// A copy of `v` in this arena; returns it and the bytes newly allocated for it.
    fn copy(&mut self, v: &Bytes) -> (Bytes, u64) {
        if v.is_empty() {
            return (Bytes::new(), 0);
        }
        if v.len() >= OWN_ALLOCATION_BYTES {
            return (
                Bytes::copy_from_slice(v),
                v.len() as u64 + PER_ALLOCATION_BYTES,
            );
        }
        let mut allocated = 0;
        if self.chunk.capacity() - self.chunk.len() < v.len() {
            let size = self
                .next_chunk_bytes
                .clamp(MIN_CHUNK_BYTES, MAX_CHUNK_BYTES);
            self.next_chunk_bytes = size.saturating_mul(2);
            // The old chunk lives on in the slices already handed out; it is freed with them.
            self.chunk = BytesMut::with_capacity(size);
            allocated = size as u64 + PER_ALLOCATION_BYTES;
        }
        self.chunk.extend_from_slice(v);
        (self.chunk.split().freeze(), allocated)
    }

    fn copy_in_place(&mut self, v: &mut Bytes) -> u64 {
        let (copy, allocated) = self.copy(v);
        *v = copy;
        self.allocated += allocated;
        allocated
    }

    fn copy_ckey(&mut self, k: &mut CKey) -> u64 {
        let mut n = vec_bytes::<Bytes>(k.values.capacity());
        for v in &mut k.values {
            n += self.copy_in_place(v);
        }
        n
    }

    fn copy_row(&mut self, r: &mut Row) -> u64 {
        r.cells.shrink_to_fit();
        let mut n = vec_bytes::<(CellKey, Cell)>(r.cells.capacity());
        n += btree_bytes::<u32, crate::types::DeletionTime>(r.complex_deletions.len());
        for ((_, path), c) in r.cells.iter_mut_for_copy() {
            if let Some(p) = path {
                n += self.copy_in_place(p);
            }
            if let CellKind::Live { value, .. } = &mut c.kind {
                n += self.copy_in_place(value);
            }
        }
        n
    }

    /// Copies every value of `p` into this arena (so `p` no longer points into request or
    /// commitlog buffers) and returns the bytes `p` takes in a memtable: arena chunks it
    /// started, and its structures as a new partition. Merged into an existing partition it
    /// holds its values and only what [`merge_growth_bytes`] counts: counting its structures
    /// there too made an overwrite cost ~10x its bytes, and a memtable of overwrites flush
    /// (and compact) ~10x too often.
    pub fn copy_partition(&mut self, p: &mut Partition) -> Copied {
        let before = self.allocated;
        let total = self.copy_partition_counting(p);
        let arena = self.allocated - before;
        Copied {
            arena,
            structures: total.saturating_sub(arena),
        }
    }

    fn copy_partition_counting(&mut self, p: &mut Partition) -> u64 {
        let mut n = self.copy_in_place(&mut p.key);
        // The key is held twice: in the shard map's key and in the partition.
        n += btree_entry_bytes::<(i64, Bytes), Box<Partition>>()
            + size_of::<Partition>() as u64
            + PER_ALLOCATION_BYTES;
        n += vec_bytes::<(CKey, CKey, crate::types::DeletionTime)>(p.range_tombstones.capacity());
        for (s, e, _) in &mut p.range_tombstones {
            n += self.copy_ckey(s) + self.copy_ckey(e);
        }
        n += self.copy_row(&mut p.static_row);
        // Rows are boxed, and one row is held inline (partition/rows.rs): a map, with B-tree
        // leaves holding pointers, only from the second row on.
        n += rows_map_bytes(p.rows.len())
            + p.rows.len() as u64 * (size_of::<Row>() as u64 + PER_ALLOCATION_BYTES);
        if p.rows.keys().all(|k| k.values.iter().all(Bytes::is_empty)) {
            // No clustering values to copy (a table without clustering columns): the map stays.
            for (k, r) in p.rows.iter_mut() {
                n += vec_bytes::<Bytes>(k.values.capacity()) + self.copy_row(r);
            }
            return n;
        }
        // Row keys cannot be changed in place (they order the map): rebuild it with copied keys.
        let rows = std::mem::take(&mut p.rows);
        for (mut k, mut r) in rows {
            n += self.copy_ckey(&mut k) + self.copy_row(&mut r);
            p.rows.insert(k, r);
        }
        n
    }
}

/// Heap bytes a merge into a memtable partition added besides values (see [`MergeGrowth`]).
pub fn merge_growth_bytes(g: &MergeGrowth) -> u64 {
    let cell = size_of::<(CellKey, Cell)>() as u64;
    let new_rows = g.rows + g.adopted_rows;
    // A new row: its box, its cell vector (sized to its cells) and its key's value vector.
    let row = size_of::<Row>() as u64 + 3 * PER_ALLOCATION_BYTES;
    rows_map_bytes(g.adopted_rows as usize)
        + g.row_maps * rows_map_bytes(2)
        + g.rows * btree_entry_bytes::<CKey, Box<Row>>()
        + new_rows * row
        + g.row_key_values * size_of::<Bytes>() as u64
        + g.new_row_cells * cell
        // A cell added beside others may double its row's vector: counted twice.
        + g.added_cells * cell * 2
        + g.deletions * size_of::<(CKey, CKey, crate::types::DeletionTime)>() as u64
}

/// Heap bytes of a partition's row map of `len` rows (none for one row, held inline).
fn rows_map_bytes(len: usize) -> u64 {
    if len <= 1 {
        return 0;
    }
    btree_bytes::<CKey, Box<Row>>(len)
}

/// Heap bytes of a `Vec<T>` of this capacity.
fn vec_bytes<T>(capacity: usize) -> u64 {
    if capacity == 0 {
        return 0;
    }
    (capacity * size_of::<T>()) as u64 + PER_ALLOCATION_BYTES
}

/// Heap bytes one more entry adds to a large `BTreeMap<K, V>` (a memtable shard's partitions):
/// leaves about two-thirds full, internal nodes one per seven leaves.
fn btree_entry_bytes<K, V>() -> u64 {
    let entry = (size_of::<K>() + size_of::<V>()) as u64;
    entry * 3 / 2 + entry / 5
}

/// Heap bytes of a `BTreeMap<K, V>` of `len` entries: one leaf of full capacity when small,
/// else leaves about two-thirds full (inserts in key order leave them half full, random ones
/// about 70%), plus one edge array per internal node.
fn btree_bytes<K, V>(len: usize) -> u64 {
    if len == 0 {
        return 0;
    }
    let leaf = (BTREE_NODE_ENTRIES * (size_of::<K>() + size_of::<V>()) + 16) as u64;
    let internal = leaf + ((BTREE_NODE_ENTRIES + 1) * size_of::<usize>()) as u64;
    if len <= BTREE_NODE_ENTRIES {
        return leaf + PER_ALLOCATION_BYTES;
    }
    let per_leaf = (BTREE_NODE_ENTRIES * 2 / 3) as u64;
    let leaves = (len as u64).div_ceil(per_leaf);
    let internals = leaves.div_ceil(per_leaf);
    leaves * (leaf + PER_ALLOCATION_BYTES) + internals * (internal + PER_ALLOCATION_BYTES)
}
