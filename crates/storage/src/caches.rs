//! The engine's read caches beyond the chunk cache:
//!
//! * Key cache (`key_cache_size`): (SSTable, partition key) -> index position, consulted after
//!   the token range and bloom filter say the partition may be there. Helenus holds each
//!   SSTable's partition index in memory, so a hit saves a binary search rather than a disk
//!   read; the cache bounds that work for hot keys and gives operators Cassandra's hit rate.
//! * Row cache (`row_cache_size`, off by default): whole merged partitions of tables whose
//!   `caching = {'rows_per_partition': ...}` is not 'NONE'. Unlike Cassandra, which keeps the
//!   head of a partition, a partition is cached only when it has at most `rows_per_partition`
//!   rows, so every slice can be answered from the cached copy. Every write to a partition
//!   invalidates it.

use crate::engine::{Engine, Table, ROW_CACHE_EPOCH_STRIPES};
use crate::partition::Partition;
use crate::sstable::SSTableReader;
use crate::types::{CacheStats, TableId};
use bytes::Bytes;
use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Key cache key: (SSTable uid, token, partition key).
pub(crate) type KeyCacheKey = (u64, i64, Bytes);
/// Row cache key: (table, token, partition key).
pub(crate) type RowCacheKey = (TableId, i64, Bytes);

/// Bytes charged per key cache entry besides the key (tuple, map slot, FIFO slot).
const KEY_CACHE_ENTRY_OVERHEAD_BYTES: u64 = 64;
/// Bytes charged per cell / row of a row-cached partition besides values.
const ROW_CACHE_CELL_OVERHEAD_BYTES: u64 = 64;
const ROW_CACHE_ROW_OVERHEAD_BYTES: u64 = 96;

impl Engine {
    /// The index position of a partition in `s`, through the key cache.
    pub(crate) fn find_in_sstable(
        &self,
        t: &Table,
        s: &SSTableReader,
        token: i64,
        key: &Bytes,
    ) -> Option<usize> {
        if !s.may_contain(token, key) {
            return None;
        }
        if self.config.key_cache_bytes == 0 {
            return s.search(token, key);
        }
        t.counters
            .key_cache_requests
            .fetch_add(1, Ordering::Relaxed);
        let ck: KeyCacheKey = (s.uid, token, key.clone());
        if let Some(i) = self.key_cache.get(&ck) {
            t.counters.key_cache_hits.fetch_add(1, Ordering::Relaxed);
            return Some(*i);
        }
        let found = s.search(token, key);
        match found {
            Some(i) => self.key_cache.insert(
                ck,
                Arc::new(i),
                key.len() as u64 + KEY_CACHE_ENTRY_OVERHEAD_BYTES,
            ),
            None => {
                t.counters
                    .bloom_false_positives
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
        found
    }

    fn row_cache_stripe(&self, table: TableId, key: &Bytes) -> usize {
        self.lock_hasher.hash_one((table, key)) as usize % ROW_CACHE_EPOCH_STRIPES
    }

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
        if let Some(p) = self.row_cache.get(&ck) {
            t.counters.row_cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(Some(p));
        }
        let epoch = self
            .row_cache_epochs
            .get(self.row_cache_stripe(id, key))
            .map(|e| e.load(Ordering::SeqCst));
        let Some(p) = self.merged_partition(t, token, key, None)? else {
            return Ok(None);
        };
        let p = Arc::new(p);
        let max_rows = t.def.read().options.rows_per_partition_to_cache;
        if p.rows.len() as u64 <= u64::from(max_rows) {
            self.row_cache
                .insert(ck.clone(), p.clone(), partition_bytes(&p));
            // A write that landed while we merged bumped the epoch after its memtable insert;
            // our copy may predate it, so take it back out (the writer's own removal may have
            // run before our insert).
            let now = self
                .row_cache_epochs
                .get(self.row_cache_stripe(id, key))
                .map(|e| e.load(Ordering::SeqCst));
            if now != epoch {
                self.row_cache.remove(&ck);
            }
        }
        Ok(Some(p))
    }

    /// Drops written partitions from the row cache; called after their memtable inserts.
    pub(crate) fn invalidate_row_cache(&self, written: &[(TableId, i64, Bytes)]) {
        if self.config.row_cache_bytes == 0 {
            return;
        }
        for (table, token, key) in written {
            if let Some(e) = self
                .row_cache_epochs
                .get(self.row_cache_stripe(*table, key))
            {
                e.fetch_add(1, Ordering::SeqCst);
            }
            self.row_cache.remove(&(*table, *token, key.clone()));
        }
    }

    /// Forgets cached chunks and index positions of SSTables that are gone.
    pub(crate) fn forget_sstables(&self, uids: &HashSet<u64>) {
        self.chunk_cache.retain(|k| !uids.contains(&k.0));
        if self.config.key_cache_bytes > 0 {
            self.key_cache.retain(|k| !uids.contains(&k.0));
        }
    }

    /// Hits, requests and sizes of the key, chunk and row caches (engine-wide).
    pub fn cache_stats(&self) -> CacheStats {
        CacheStats {
            key: self.key_cache.counters(),
            chunk: self.chunk_cache.counters(),
            row: self.row_cache.counters(),
        }
    }
}

/// Approximate heap bytes of a partition (row cache accounting).
fn partition_bytes(p: &Partition) -> u64 {
    let mut n = p.key.len() as u64 + ROW_CACHE_ROW_OVERHEAD_BYTES;
    for r in std::iter::once(&p.static_row).chain(p.rows.values()) {
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
