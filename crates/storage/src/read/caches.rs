//! The engine's read caches beyond the chunk cache:
//!
//! * Key cache (`key_cache_size`): (SSTable, partition key) -> decoded index entry, consulted
//!   after the token range and bloom filter say the partition may be there. As in Cassandra, a
//!   hit reads no index at all; a miss binary-searches the SSTable's in-memory partition
//!   summary and reads one Index.db page (sstable/index.rs).
//! * Row cache (`row_cache_size`, off by default): whole merged partitions of tables whose
//!   `caching = {'rows_per_partition': ...}` is not 'NONE'. Unlike Cassandra, which keeps the
//!   head of a partition, a partition is cached only when it has at most `rows_per_partition`
//!   rows, so every slice can be answered from the cached copy. Every write to a partition
//!   invalidates it.

use super::ReadPath;
use crate::byte_cache::ByteCache;
use crate::partition::Partition;
use crate::sstable::ChunkKey;
use crate::sstable::{IndexEntry, RowBlock, SSTableReader};
use crate::table::Table;
use crate::types::{CacheStats, StorageConfig, TableId};
use bytes::Bytes;
use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Key cache key: (SSTable uid, token, partition key); the value is where the partition lies.
pub(crate) type KeyCacheKey = (u64, i64, CachedKey);

/// What the key cache keeps of an index entry. Its token and key are the cache key's, so a hit
/// rebuilds the entry around them instead of every entry holding a second copy: the whole
/// entry was 96 bytes behind its `Arc` plus a copy of the key, this is 32.
pub(crate) struct CachedPosition {
    position: u64,
    length: u32,
    header_len: u32,
    /// The row index (empty, so no allocation, for all but partitions over 64 KiB).
    blocks: Box<[RowBlock]>,
}

impl CachedPosition {
    fn of(e: &IndexEntry) -> CachedPosition {
        CachedPosition {
            position: e.position,
            length: e.length,
            header_len: e.header_len,
            blocks: e.blocks.clone().into_boxed_slice(),
        }
    }

    fn entry(&self, token: i64, key: Bytes) -> IndexEntry {
        IndexEntry {
            token,
            key,
            position: self.position,
            length: self.length,
            header_len: self.header_len,
            blocks: self.blocks.to_vec(),
        }
    }
}

/// Partition keys up to this long are held inside the key cache's entries.
const INLINE_KEY_BYTES: usize = 22;

/// A partition key as the key cache holds it. Short ones inline: a probe compares them in the
/// map's slot instead of through a pointer (one cache miss fewer per lookup). Longer ones as a
/// copy of their own once inserted: the key a read brings is a slice of its connection's 64 KiB
/// read buffer, and an entry holding that slice kept the whole buffer alive while it lived.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum CachedKey {
    Inline {
        len: u8,
        bytes: [u8; INLINE_KEY_BYTES],
    },
    Shared(Bytes),
}

impl CachedKey {
    /// `key` to look up with (a long one shares the caller's bytes).
    fn probe(key: &Bytes) -> CachedKey {
        let mut bytes = [0u8; INLINE_KEY_BYTES];
        match bytes.get_mut(..key.len()) {
            Some(head) => {
                head.copy_from_slice(key);
                CachedKey::Inline {
                    len: key.len() as u8,
                    bytes,
                }
            }
            None => CachedKey::Shared(key.clone()),
        }
    }

    /// This key as an entry keeps it: a long one copied out of whatever buffer it was part of.
    fn kept(self) -> CachedKey {
        match self {
            CachedKey::Shared(key) => CachedKey::Shared(Bytes::copy_from_slice(&key)),
            inline => inline,
        }
    }
}
/// Row cache key: (table, token, partition key).
pub(crate) type RowCacheKey = (TableId, i64, Bytes);

/// Bytes charged per row-index block of a cached entry besides its clustering values.
const KEY_CACHE_BLOCK_OVERHEAD_BYTES: usize = 48;
/// Bytes charged per cell / row of a row-cached partition besides values.
const ROW_CACHE_CELL_OVERHEAD_BYTES: u64 = 64;
const ROW_CACHE_ROW_OVERHEAD_BYTES: u64 = 96;

/// Stripes of the row cache's write epochs.
const ROW_CACHE_EPOCH_STRIPES: usize = 1024;

/// The node's read caches, sized by `StorageConfig`.
pub(crate) struct Caches {
    /// Decompressed SSTable chunks (`file_cache_size`).
    /// Shared with the memtable budget, which shrinks it while memtables hold memory.
    pub chunk: Arc<ByteCache<ChunkKey, Vec<u8>>>,
    pub key: ByteCache<KeyCacheKey, CachedPosition>,
    pub row: ByteCache<RowCacheKey, Partition>,
    /// Bumped (per stripe of partitions) by every write, so a read that merged sources before
    /// the write cannot leave a stale partition in the row cache.
    row_epochs: Vec<AtomicU64>,
    hasher: RandomState,
    key_cache_bytes: u64,
    row_cache_bytes: u64,
}

impl Caches {
    pub(crate) fn new(config: &StorageConfig) -> Self {
        Caches {
            chunk: Arc::new(ByteCache::new(config.chunk_cache_bytes.max(1 << 20))),
            key: ByteCache::new(config.key_cache_bytes),
            row: ByteCache::new(config.row_cache_bytes),
            row_epochs: (0..ROW_CACHE_EPOCH_STRIPES)
                .map(|_| AtomicU64::new(0))
                .collect(),
            hasher: RandomState::new(),
            key_cache_bytes: config.key_cache_bytes,
            row_cache_bytes: config.row_cache_bytes,
        }
    }

    /// The write epoch of the row cache stripe of a partition (see `invalidate_row_cache`).
    fn row_epoch(&self, table: TableId, key: &Bytes) -> Option<u64> {
        self.row_epochs
            .get(self.row_stripe(table, key))
            .map(|e| e.load(Ordering::SeqCst))
    }

    /// Whether tables that ask for the row cache get it.
    pub(crate) fn row_cache_enabled(&self) -> bool {
        self.row_cache_bytes > 0
    }

    /// Hits, requests and sizes of the key, chunk and row caches (engine-wide).
    pub(crate) fn stats(&self) -> CacheStats {
        CacheStats {
            key: self.key.counters(),
            chunk: self.chunk.counters(),
            row: self.row.counters(),
        }
    }

    /// The index entry of a partition in `s`, through the key cache.
    pub(crate) fn find_in_sstable(
        &self,
        t: &Table,
        s: &SSTableReader,
        token: i64,
        key: &Bytes,
    ) -> Result<Option<Arc<IndexEntry>>, crate::StorageError> {
        if !s.may_contain(token, key) {
            return Ok(None);
        }
        if self.key_cache_bytes == 0 {
            return Ok(s.search(token, key)?.map(|(_, e)| Arc::new(e)));
        }
        t.counters
            .key_cache_requests
            .fetch_add(1, Ordering::Relaxed);
        let ck: KeyCacheKey = (s.uid, token, CachedKey::probe(key));
        if let Some(cached) = self.key.get(&ck) {
            t.counters.key_cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(Some(Arc::new(cached.entry(token, key.clone()))));
        }
        let found = s.search(token, key)?.map(|(_, e)| Arc::new(e));
        match &found {
            Some(e) => {
                let (uid, token, probe) = ck;
                let bytes = cached_position_bytes(e);
                self.key.insert(
                    (uid, token, probe.kept()),
                    Arc::new(CachedPosition::of(e)),
                    bytes,
                );
            }
            None => {
                t.counters
                    .bloom_false_positives
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(found)
    }

    fn row_stripe(&self, table: TableId, key: &Bytes) -> usize {
        self.hasher.hash_one((table, key)) as usize % ROW_CACHE_EPOCH_STRIPES
    }

    /// Drops written partitions from the row cache; called after their memtable inserts.
    pub(crate) fn invalidate_row_cache(&self, written: &[(TableId, i64, Bytes)]) {
        if self.row_cache_bytes == 0 {
            return;
        }
        for (table, token, key) in written {
            if let Some(e) = self.row_epochs.get(self.row_stripe(*table, key)) {
                e.fetch_add(1, Ordering::SeqCst);
            }
            self.row.remove(&(*table, *token, key.clone()));
        }
    }

    /// Forgets cached chunks and index positions of SSTables that are gone.
    pub(crate) fn forget_sstables(&self, uids: &HashSet<u64>) {
        self.chunk.retain(|k| !uids.contains(&k.0));
        if self.key_cache_bytes > 0 {
            self.key.retain(|k| !uids.contains(&k.0));
        }
    }
}

/// Heap bytes of a key cache entry besides its structures (which the cache adds): the cache
/// key's own copy of the key when it is too long to be held inline, and the row index.
fn cached_position_bytes(e: &IndexEntry) -> u64 {
    let blocks: usize = e
        .blocks
        .iter()
        .map(|b| KEY_CACHE_BLOCK_OVERHEAD_BYTES + b.first.iter().map(|v| v.len()).sum::<usize>())
        .sum();
    let cache_key_copy = if e.key.len() > INLINE_KEY_BYTES {
        e.key.len()
    } else {
        0
    };
    (cache_key_copy + blocks) as u64
}

/// Approximate heap bytes of a partition (row cache accounting).
fn partition_bytes(p: &Partition) -> u64 {
    let mut n = p.key.len() as u64 + ROW_CACHE_ROW_OVERHEAD_BYTES;
    for r in std::iter::once(&p.static_row).chain(p.rows.values().map(|r| &**r)) {
        n += ROW_CACHE_ROW_OVERHEAD_BYTES;
        for ((_, path), c) in &r.cells {
            n += ROW_CACHE_CELL_OVERHEAD_BYTES
                + path.as_ref().map_or(0, |b| b.len() as u64)
                + c.value_bytes().len() as u64;
        }
    }
    n += p
        .rows
        .keys()
        .map(|k| k.values.iter().map(|v| v.len() as u64).sum::<u64>())
        .sum::<u64>();
    n
}

impl ReadPath {
    /// The whole merged partition, from the row cache or merged and cached when small enough.
    pub(crate) fn merged_partition_cached(
        &self,
        t: &Table,
        token: i64,
        key: &Bytes,
    ) -> Result<Option<Arc<Partition>>, crate::StorageError> {
        let id = t.id();
        let ck: RowCacheKey = (id, token, key.clone());
        t.counters
            .row_cache_requests
            .fetch_add(1, Ordering::Relaxed);
        if let Some(p) = self.caches.row.get(&ck) {
            t.counters.row_cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(Some(p));
        }
        let epoch = self.caches.row_epoch(id, key);
        let Some(mut p) = self.merged_partition(t, token, key, None)? else {
            return Ok(None);
        };
        let max_rows = t.def.read().options.rows_per_partition_to_cache;
        let cached = p.rows.len() as u64 <= u64::from(max_rows);
        if cached {
            // The request's key is a slice of its connection's read buffer: kept, it would
            // hold the whole buffer (see CachedKey).
            p.key = Bytes::copy_from_slice(&p.key);
        }
        let p = Arc::new(p);
        if cached {
            let kept: RowCacheKey = (id, token, p.key.clone());
            self.caches.row.insert(kept, p.clone(), partition_bytes(&p));
            // A write that landed while we merged bumped the epoch after its memtable insert;
            // our copy may predate it, so take it back out (the writer's own removal may have
            // run before our insert).
            let now = self.caches.row_epoch(id, key);
            if now != epoch {
                self.caches.row.remove(&ck);
            }
        }
        Ok(Some(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request-sized buffer with `key` somewhere inside, as a decoded request holds keys.
    fn inside_a_frame(key: &[u8]) -> (Bytes, Bytes) {
        let mut frame = vec![0x11_u8; 64 << 10];
        frame[100..100 + key.len()].copy_from_slice(key);
        let frame = Bytes::from(frame);
        let key = frame.slice(100..100 + key.len());
        (frame, key)
    }

    #[test]
    fn short_keys_are_held_inline_and_compare_by_value() {
        let (_frame, key) = inside_a_frame(b"0000001A2B");
        let probe = CachedKey::probe(&key);
        assert!(matches!(probe, CachedKey::Inline { len: 10, .. }));
        assert_eq!(probe, CachedKey::probe(&Bytes::from_static(b"0000001A2B")));
        assert_ne!(probe, CachedKey::probe(&Bytes::from_static(b"0000001A2C")));
        // A key that is a prefix of another (zero padding must not make them equal).
        assert_ne!(
            CachedKey::probe(&Bytes::from_static(b"ab")),
            CachedKey::probe(&Bytes::from_static(b"ab\0"))
        );
        let longest = [7u8; INLINE_KEY_BYTES];
        assert!(matches!(
            CachedKey::probe(&Bytes::copy_from_slice(&longest)),
            CachedKey::Inline { .. }
        ));
    }

    #[test]
    fn a_kept_long_key_does_not_hold_its_request_buffer() {
        let long = [0x42_u8; INLINE_KEY_BYTES + 1];
        let (frame, key) = inside_a_frame(&long);
        let probe = CachedKey::probe(&key);
        assert!(matches!(probe, CachedKey::Shared(_)));
        let kept = probe.clone().kept();
        assert_eq!(kept, probe);
        let CachedKey::Shared(bytes) = kept else {
            panic!("a long key is not inline");
        };
        let range = frame.as_ptr() as usize..frame.as_ptr() as usize + frame.len();
        assert!(!range.contains(&(bytes.as_ptr() as usize)));
    }
}
