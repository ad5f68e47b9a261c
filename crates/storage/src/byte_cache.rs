//! Byte-budgeted caches: decompressed SSTable chunks, partition index positions (the key cache)
//! and merged partitions (the row cache). Sharded to
//! keep lock hold times short; eviction is FIFO within a shard (cheap, scan-resistant enough for
//! chunk-sized entries, and with no per-hit bookkeeping).

use foldhash::fast::RandomState;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const SHARDS: usize = 16;

pub use crate::types::CacheCounters;

struct Shard<K, V> {
    map: HashMap<K, (Arc<V>, u64), RandomState>,
    order: VecDeque<K>,
    bytes: u64,
}

/// A sharded cache bounded by total bytes.
pub struct ByteCache<K, V> {
    shards: Vec<Mutex<Shard<K, V>>>,
    shard_budget_bytes: u64,
    hasher: RandomState,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
}

impl<K: Hash + Eq + Clone, V> ByteCache<K, V> {
    pub fn new(budget_bytes: u64) -> Self {
        ByteCache {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        map: HashMap::default(),
                        order: VecDeque::new(),
                        bytes: 0,
                    })
                })
                .collect(),
            shard_budget_bytes: budget_bytes / SHARDS as u64,
            hasher: RandomState::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn shard(&self, k: &K) -> Option<&Mutex<Shard<K, V>>> {
        // Middle bits: a shard's map indexes by the low bits and tags by the top ones, and its
        // hasher may share this one's seed.
        self.shards
            .get((self.hasher.hash_one(k) >> 32) as usize % SHARDS)
    }

    pub fn get(&self, k: &K) -> Option<Arc<V>> {
        let r = self
            .shard(k)
            .and_then(|s| s.lock().map.get(k).map(|(v, _)| v.clone()));
        if r.is_some() {
            self.hits.fetch_add(1, Ordering::Relaxed);
        } else {
            self.misses.fetch_add(1, Ordering::Relaxed);
        }
        r
    }

    pub fn insert(&self, k: K, v: Arc<V>, size_bytes: u64) {
        if size_bytes > self.shard_budget_bytes {
            return;
        }
        let Some(shard) = self.shard(&k) else { return };
        let mut s = shard.lock();
        if let Some((_, old)) = s.map.insert(k.clone(), (v, size_bytes)) {
            s.bytes -= old;
        } else {
            s.order.push_back(k);
        }
        s.bytes += size_bytes;
        while s.bytes > self.shard_budget_bytes {
            let Some(old) = s.order.pop_front() else {
                break;
            };
            if let Some((_, sz)) = s.map.remove(&old) {
                s.bytes -= sz;
            }
        }
    }

    /// Removes one entry (row cache invalidation on write).
    pub fn remove(&self, k: &K) {
        let Some(shard) = self.shard(k) else { return };
        let mut s = shard.lock();
        if let Some((_, sz)) = s.map.remove(k) {
            s.bytes -= sz;
            // The FIFO order keeps the key until it reaches the front; `insert` and eviction
            // skip keys that are no longer mapped.
            if s.order.len() > 2 * s.map.len() + 64 {
                let Shard { map, order, .. } = &mut *s;
                order.retain(|k| map.contains_key(k));
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
            capacity_bytes: self.shard_budget_bytes * SHARDS as u64,
        }
    }

    /// Drops every entry matching `pred` (e.g. of a deleted SSTable).
    pub fn retain(&self, pred: impl Fn(&K) -> bool) {
        for shard in &self.shards {
            let mut s = shard.lock();
            let Shard { map, order, bytes } = &mut *s;
            map.retain(|k, (_, sz)| {
                let keep = pred(k);
                if !keep {
                    *bytes -= *sz;
                }
                keep
            });
            order.retain(|k| map.contains_key(k));
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
    fn cache_stays_within_budget_and_counts_hits() {
        let c: ByteCache<u64, Vec<u8>> = ByteCache::new(16 * 100);
        for i in 0..1000u64 {
            c.insert(i, Arc::new(vec![0; 10]), 10);
        }
        let total: u64 = c.shards.iter().map(|s| s.lock().bytes).sum();
        assert!(total <= 1600);
        assert!(c.get(&999).is_some());
        assert!(c.get(&0).is_none());
        assert!((c.hit_rate() - 0.5).abs() < 1e-9);
    }
}
