//! Byte-budgeted caches: decompressed SSTable chunks, partition index positions (the key cache)
//! and merged partitions (the row cache). Sharded to
//! keep lock hold times short; eviction is FIFO within a shard (cheap, scan-resistant enough for
//! chunk-sized entries, and with no per-hit bookkeeping).

use foldhash::fast::RandomState;
use hashbrown::HashTable;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const SHARDS: usize = 16;

/// Heap bytes an entry takes besides its value's own heap, charged with it so that the budget
/// bounds what the cache really holds: its table slot (hashbrown keeps a table between 7/16 and
/// 7/8 full, so charged as 3/5 full, with its control byte), its hash in the FIFO order (a ring
/// that only doubles, charged alike) and the value's `Arc` allocation. For the key cache's
/// small entries these are most of the entry; charging the key and index entry alone let a
/// 51 MiB budget hold about twice that.
fn entry_overhead_bytes<K, V>() -> u64 {
    use std::mem::size_of;
    let table_slot = size_of::<Entry<K, V>>() + 1;
    let order_slot = size_of::<u64>();
    let arc = 2 * size_of::<usize>() + size_of::<V>();
    ((table_slot + order_slot) * 5 / 3 + arc) as u64
}

pub use crate::types::CacheCounters;

struct Entry<K, V> {
    key: K,
    value: Arc<V>,
    size_bytes: u64,
}

struct Shard<K, V> {
    table: HashTable<Entry<K, V>>,
    /// Hashes of the entries, oldest first. Hashes rather than keys: a key cache key is 48
    /// bytes, a hash 8, and eviction finds the entry again by its hash.
    order: VecDeque<u64>,
    bytes: u64,
}

/// A sharded cache bounded by total bytes; the bound can move (`set_budget`).
pub struct ByteCache<K, V> {
    shards: Vec<Mutex<Shard<K, V>>>,
    shard_budget_bytes: AtomicU64,
    hasher: RandomState,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
}

impl<K, V> Shard<K, V> {
    /// Removes the entry whose key hashes to `hash` (either one, should two collide), if any.
    fn remove_hashed(&mut self, hash: u64, hash_of: impl Fn(&K) -> u64) {
        if let Ok(found) = self.table.find_entry(hash, |e| hash_of(&e.key) == hash) {
            let (e, _) = found.remove();
            self.bytes -= e.size_bytes;
        }
    }

    /// Evicts oldest first until the shard holds at most `budget` bytes.
    fn evict_to(&mut self, budget: u64, hash_of: impl Fn(&K) -> u64) {
        while self.bytes > budget {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.remove_hashed(oldest, &hash_of);
        }
    }

    /// Drops hashes of entries that are gone from the order (they are skipped when they reach
    /// its front anyway; this bounds the ring when entries are removed faster than evicted).
    fn prune_order(&mut self, hash_of: impl Fn(&K) -> u64) {
        let Shard { table, order, .. } = self;
        order.retain(|h| table.find(*h, |e| hash_of(&e.key) == *h).is_some());
    }
}

impl<K: Hash + Eq + Clone, V> ByteCache<K, V> {
    pub fn new(budget_bytes: u64) -> Self {
        ByteCache {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        table: HashTable::new(),
                        order: VecDeque::new(),
                        bytes: 0,
                    })
                })
                .collect(),
            shard_budget_bytes: AtomicU64::new(budget_bytes / SHARDS as u64),
            hasher: RandomState::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// The key's hash and its shard. The shard is picked by middle bits: the shard's table
    /// indexes by the low bits and tags by the top ones.
    fn shard(&self, k: &K) -> Option<(u64, &Mutex<Shard<K, V>>)> {
        let hash = self.hasher.hash_one(k);
        self.shards
            .get((hash >> 32) as usize % SHARDS)
            .map(|s| (hash, s))
    }

    pub fn get(&self, k: &K) -> Option<Arc<V>> {
        let r = self.shard(k).and_then(|(hash, s)| {
            s.lock()
                .table
                .find(hash, |e| e.key == *k)
                .map(|e| e.value.clone())
        });
        if r.is_some() {
            self.hits.fetch_add(1, Ordering::Relaxed);
        } else {
            self.misses.fetch_add(1, Ordering::Relaxed);
        }
        r
    }

    /// Caches `v` under `k`; `value_heap_bytes` is what `v` holds on the heap beyond its own
    /// struct (the entry's structures are added here).
    pub fn insert(&self, k: K, v: Arc<V>, value_heap_bytes: u64) {
        let size_bytes = value_heap_bytes + entry_overhead_bytes::<K, V>();
        let shard_budget = self.shard_budget_bytes.load(Ordering::Relaxed);
        if size_bytes > shard_budget {
            return;
        }
        let Some((hash, shard)) = self.shard(&k) else {
            return;
        };
        let hash_of = |key: &K| self.hasher.hash_one(key);
        let mut s = shard.lock();
        let s = &mut *s;
        match s.table.find_mut(hash, |e| e.key == k) {
            Some(e) => {
                s.bytes -= e.size_bytes;
                e.value = v;
                e.size_bytes = size_bytes;
            }
            None => {
                let entry = Entry {
                    key: k,
                    value: v,
                    size_bytes,
                };
                s.table.insert_unique(hash, entry, |e| hash_of(&e.key));
                s.order.push_back(hash);
            }
        }
        s.bytes += size_bytes;
        s.evict_to(shard_budget, hash_of);
    }

    /// The total budget now.
    pub fn budget_bytes(&self) -> u64 {
        self.shard_budget_bytes.load(Ordering::Relaxed) * SHARDS as u64
    }

    /// Moves the budget to `budget_bytes`; a smaller one evicts, oldest first, at once (the
    /// point of shrinking is to give the memory to someone else now, not at the next inserts).
    pub fn set_budget(&self, budget_bytes: u64) {
        let shard_budget = budget_bytes / SHARDS as u64;
        let before = self
            .shard_budget_bytes
            .swap(shard_budget, Ordering::Relaxed);
        if shard_budget >= before {
            return;
        }
        for shard in &self.shards {
            shard
                .lock()
                .evict_to(shard_budget, |key| self.hasher.hash_one(key));
        }
    }

    /// Removes one entry (row cache invalidation on write).
    pub fn remove(&self, k: &K) {
        let Some((hash, shard)) = self.shard(k) else {
            return;
        };
        let mut s = shard.lock();
        if let Ok(found) = s.table.find_entry(hash, |e| e.key == *k) {
            let (e, _) = found.remove();
            s.bytes -= e.size_bytes;
            // The FIFO order keeps the hash until it reaches the front; eviction skips hashes
            // whose entry is gone.
            if s.order.len() > 2 * s.table.len() + 64 {
                s.prune_order(|key| self.hasher.hash_one(key));
            }
        }
    }

    /// (hits, requests, bytes held) since start.
    pub fn counters(&self) -> CacheCounters {
        let hits = self.hits.load(Ordering::Relaxed);
        CacheCounters {
            hits,
            requests: hits + self.misses.load(Ordering::Relaxed),
            size_bytes: self.shards.iter().map(|s| s.lock().bytes).sum(),
            capacity_bytes: self.budget_bytes(),
        }
    }

    /// Drops every entry matching `pred` (e.g. of a deleted SSTable).
    pub fn retain(&self, pred: impl Fn(&K) -> bool) {
        for shard in &self.shards {
            let mut s = shard.lock();
            let Shard { table, bytes, .. } = &mut *s;
            table.retain(|e| {
                let keep = pred(&e.key);
                if !keep {
                    *bytes -= e.size_bytes;
                }
                keep
            });
            s.prune_order(|key| self.hasher.hash_one(key));
        }
    }

    /// Hit rate since start (0 when never used).
    pub fn hit_rate(&self) -> f64 {
        let h = self.hits.load(Ordering::Relaxed) as f64;
        let m = self.misses.load(Ordering::Relaxed) as f64;
        if h + m == 0.0 {
            0.0
        } else {
            h / (h + m)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_charged_their_structures() {
        let c: ByteCache<u64, Vec<u8>> = ByteCache::new(1 << 20);
        c.insert(1, Arc::new(vec![0; 10]), 10);
        // Key 8 + Arc 8 + size 8 + control 1 in the table, hash 8 in the order: 33 x 5/3 = 55;
        // the Arc's counts 16 and the Vec 24; then the 10 bytes of the value.
        assert_eq!(c.counters().size_bytes, 55 + 16 + 24 + 10);
    }

    #[test]
    fn cache_stays_within_budget_and_counts_hits() {
        // Room for about three 105-byte entries a shard.
        let c: ByteCache<u64, Vec<u8>> = ByteCache::new(16 * 320);
        for i in 0..1000u64 {
            c.insert(i, Arc::new(vec![0; 10]), 10);
        }
        let total: u64 = c.shards.iter().map(|s| s.lock().bytes).sum();
        assert!(total <= 16 * 320);
        assert!(c.get(&999).is_some());
        assert!(c.get(&0).is_none());
        assert!((c.hit_rate() - 0.5).abs() < 1e-9);
    }

    #[test]
    fn evicts_oldest_first_and_skips_removed_entries() {
        // One entry is 55 + 16 + 24 + 10 = 105 bytes: three fit in a shard, so one shard's
        // eviction order is visible by inserting keys that land in the same shard.
        let c: ByteCache<u64, Vec<u8>> = ByteCache::new(16 * 320);
        let shard_of = |k: u64| c.shard(&k).map(|(h, _)| (h >> 32) as usize % SHARDS);
        let same: Vec<u64> = (0..10_000u64)
            .filter(|k| shard_of(*k) == shard_of(0))
            .take(6)
            .collect();
        for k in &same[..3] {
            c.insert(*k, Arc::new(vec![0; 10]), 10);
        }
        // Re-inserting a key keeps its place and its size counted once.
        c.insert(same[0], Arc::new(vec![1; 10]), 10);
        assert_eq!(c.counters().size_bytes, 3 * 105);
        assert_eq!(c.get(&same[0]).map(|v| v[0]), Some(1));
        // A removed entry's hash stays in the order; eviction passes over it.
        c.remove(&same[1]);
        c.insert(same[3], Arc::new(vec![0; 10]), 10);
        assert_eq!(c.counters().size_bytes, 3 * 105);
        c.insert(same[4], Arc::new(vec![0; 10]), 10);
        assert!(c.get(&same[0]).is_none(), "the oldest goes first");
        assert!(c.get(&same[2]).is_some() && c.get(&same[3]).is_some());
        c.retain(|k| *k != same[2]);
        assert!(c.get(&same[2]).is_none());
        assert_eq!(c.counters().size_bytes, 2 * 105);
    }

    #[test]
    fn a_smaller_budget_evicts_at_once_and_a_larger_one_lets_it_fill_again() {
        let c: ByteCache<u64, Vec<u8>> = ByteCache::new(16 * 1050);
        for i in 0..1000u64 {
            c.insert(i, Arc::new(vec![0; 10]), 10);
        }
        let full = c.counters().size_bytes;
        assert!(full > 16 * 800, "{full}");
        c.set_budget(16 * 320);
        assert_eq!(c.budget_bytes(), 16 * 320);
        assert!(c.counters().size_bytes <= 16 * 320);
        assert!(c.get(&999).is_some(), "the newest entries stay");
        c.set_budget(16 * 1050);
        for i in 1000..2000u64 {
            c.insert(i, Arc::new(vec![0; 10]), 10);
        }
        assert!(c.counters().size_bytes > 16 * 800);
    }
}
