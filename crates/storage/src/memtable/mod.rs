//! Memtable: partitions in (token, key) order, sharded by contiguous token ranges so writers to
//! different ranges do not contend, and so iterating shards in order yields global token order.

pub(crate) mod budget;
pub(crate) mod memory;

use crate::partition::Partition;
use crate::types::PartitionBound;
use bytes::Bytes;
use memory::Arena;
use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};

/// Partition position: token, then key bytes.
pub type PKey = (i64, Bytes);

const SHARDS: usize = 16;

fn shard_of(token: i64) -> usize {
    // Flip the sign bit so the unsigned order equals the signed order; the top 4 bits pick the shard.
    (((token as u64) ^ (1u64 << 63)) >> 60) as usize % SHARDS
}

/// Converts a start bound to a BTreeMap bound; None if the range is empty.
pub fn start_bound(b: &PartitionBound) -> Option<Bound<PKey>> {
    Some(match b {
        PartitionBound::Unbounded => Bound::Unbounded,
        PartitionBound::Token {
            token,
            inclusive: true,
        } => Bound::Included((*token, Bytes::new())),
        PartitionBound::Token {
            token,
            inclusive: false,
        } => Bound::Included((token.checked_add(1)?, Bytes::new())),
        PartitionBound::Key {
            token,
            key,
            inclusive: true,
        } => Bound::Included((*token, key.clone())),
        PartitionBound::Key {
            token,
            key,
            inclusive: false,
        } => Bound::Excluded((*token, key.clone())),
    })
}

/// Converts an end bound to a BTreeMap bound.
pub fn end_bound(b: &PartitionBound) -> Bound<PKey> {
    match b {
        PartitionBound::Unbounded => Bound::Unbounded,
        PartitionBound::Token {
            token,
            inclusive: true,
        } => match token.checked_add(1) {
            Some(t) => Bound::Excluded((t, Bytes::new())),
            None => Bound::Unbounded,
        },
        PartitionBound::Token {
            token,
            inclusive: false,
        } => Bound::Excluded((*token, Bytes::new())),
        PartitionBound::Key {
            token,
            key,
            inclusive: true,
        } => Bound::Included((*token, key.clone())),
        PartitionBound::Key {
            token,
            key,
            inclusive: false,
        } => Bound::Excluded((*token, key.clone())),
    }
}

/// Whether partition (token, key) lies at or after `start`.
pub(crate) fn is_after_start(start: &Bound<PKey>, token: i64, key: &Bytes) -> bool {
    match start {
        Bound::Unbounded => true,
        Bound::Included(s) => (token, key) >= (s.0, &s.1),
        Bound::Excluded(s) => (token, key) > (s.0, &s.1),
    }
}

/// Whether partition (token, key) lies at or before `end`.
pub(crate) fn is_before_end(end: &Bound<PKey>, token: i64, key: &Bytes) -> bool {
    match end {
        Bound::Unbounded => true,
        Bound::Included(e) => (token, key) <= (e.0, &e.1),
        Bound::Excluded(e) => (token, key) < (e.0, &e.1),
    }
}

impl PartitionBound {
    /// Whether partition (token, key) is inside a range that starts at this bound.
    pub fn admits_as_start(&self, token: i64, key: &Bytes) -> bool {
        start_bound(self).is_some_and(|s| is_after_start(&s, token, key))
    }

    /// Whether partition (token, key) is inside a range that ends at this bound.
    pub fn admits_as_end(&self, token: i64, key: &Bytes) -> bool {
        is_before_end(&end_bound(self), token, key)
    }
}

/// Whether `(start, end)` can contain anything; `BTreeMap::range` panics otherwise.
pub fn range_is_valid(start: &Bound<PKey>, end: &Bound<PKey>) -> bool {
    match (start, end) {
        (Bound::Included(s), Bound::Included(e)) => s <= e,
        (Bound::Included(s), Bound::Excluded(e))
        | (Bound::Excluded(s), Bound::Included(e))
        | (Bound::Excluded(s), Bound::Excluded(e)) => s < e,
        _ => true,
    }
}

/// One memtable of one table.
pub struct Memtable {
    shards: Vec<RwLock<BTreeMap<PKey, Box<Partition>>>>,
    /// Each shard's values, copied out of request and commitlog buffers (memtable/memory.rs).
    arenas: Vec<parking_lot::Mutex<Arena>>,
    /// Encoded size of the updates applied (Cassandra's "memtable data size").
    size_bytes: AtomicU64,
    /// Estimated bytes held in memory, allocator overhead included: what the budget counts.
    heap_bytes: AtomicU64,
    partitions: AtomicU64,
    /// Highest commitlog position (segment id, offset) whose data this memtable holds.
    pub max_log_position: parking_lot::Mutex<Option<(u64, u64)>>,
}

impl Default for Memtable {
    fn default() -> Self {
        Memtable {
            shards: (0..SHARDS).map(|_| RwLock::new(BTreeMap::new())).collect(),
            arenas: (0..SHARDS).map(|_| Default::default()).collect(),
            size_bytes: AtomicU64::new(0),
            heap_bytes: AtomicU64::new(0),
            partitions: AtomicU64::new(0),
            max_log_position: parking_lot::Mutex::new(None),
        }
    }
}

impl Memtable {
    /// Merges an update; `size_bytes` is its encoded size. Its values are copied into the
    /// shard's arena first, so the memtable holds no reference to the caller's buffers.
    /// Returns the memtable's heap bytes before and after.
    pub fn apply(&self, mut p: Partition, size_bytes: u64) -> (u64, u64) {
        let i = shard_of(p.token);
        let (Some(shard), Some(arena)) = (self.shards.get(i), self.arenas.get(i)) else {
            return (0, 0);
        };
        let copied = arena.lock().copy_partition(&mut p);
        let mut map = shard.write();
        let heap = match map.entry((p.token, p.key.clone())) {
            std::collections::btree_map::Entry::Occupied(mut cur) => {
                let grew = cur.get_mut().merge_counting(p);
                copied.arena + memory::merge_growth_bytes(&grew)
            }
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(Box::new(p));
                self.partitions.fetch_add(1, Ordering::Relaxed);
                copied.arena + copied.structures
            }
        };
        drop(map);
        let before = self.heap_bytes.fetch_add(heap, Ordering::Relaxed);
        self.size_bytes.fetch_add(size_bytes, Ordering::Relaxed);
        (before, before + heap)
    }

    /// Runs `f` on the partition, if present.
    pub fn with_partition<R>(
        &self,
        token: i64,
        key: &Bytes,
        f: impl FnOnce(&Partition) -> R,
    ) -> Option<R> {
        let shard = self.shards.get(shard_of(token))?;
        let map = shard.read();
        map.get(&(token, key.clone())).map(|p| f(p))
    }

    /// Up to `limit` partition keys within the bounds, in order.
    pub fn keys_in_range(&self, start: &Bound<PKey>, end: &Bound<PKey>, limit: usize) -> Vec<PKey> {
        let mut out = Vec::new();
        if !range_is_valid(start, end) {
            return out;
        }
        for shard in &self.shards {
            let map = shard.read();
            for k in map.range((start.clone(), end.clone())).map(|(k, _)| k) {
                if out.len() >= limit {
                    return out;
                }
                out.push(k.clone());
            }
        }
        out
    }

    pub fn size_bytes(&self) -> u64 {
        self.size_bytes.load(Ordering::Relaxed)
    }

    /// Bytes this memtable holds in memory (estimated; see memtable/memory.rs).
    pub fn heap_bytes(&self) -> u64 {
        self.heap_bytes.load(Ordering::Relaxed)
    }

    pub fn partition_count(&self) -> u64 {
        self.partitions.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.partition_count() == 0
    }

    /// Read access to every shard, in token order, for flush: iterating them yields all
    /// partitions in order without copying them. The memtable stays readable meanwhile, and
    /// nothing writes to it: writers apply under the table's memtable lock, which the switch to a
    /// new memtable takes first.
    pub fn read_shards(
        &self,
    ) -> Vec<parking_lot::RwLockReadGuard<'_, BTreeMap<PKey, Box<Partition>>>> {
        self.shards.iter().map(|s| s.read()).collect()
    }

    /// Notes that entries up to this commitlog position are in this memtable.
    pub fn note_log_position(&self, pos: (u64, u64)) {
        let mut m = self.max_log_position.lock();
        if !matches!(*m, Some(cur) if cur >= pos) {
            *m = Some(pos);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_follow_token_order() {
        assert_eq!(shard_of(i64::MIN), 0);
        assert_eq!(shard_of(-1), 7);
        assert_eq!(shard_of(0), 8);
        assert_eq!(shard_of(i64::MAX), 15);
    }

    #[test]
    fn range_scan_crosses_shards_in_token_order() {
        let m = Memtable::default();
        for t in [i64::MAX, 0, i64::MIN + 1, -5, 5] {
            m.apply(Partition::new(Bytes::from_static(b"k"), t), 1);
        }
        let keys = m.keys_in_range(&Bound::Unbounded, &Bound::Unbounded, 100);
        let toks: Vec<i64> = keys.iter().map(|k| k.0).collect();
        assert_eq!(toks, vec![i64::MIN + 1, -5, 0, 5, i64::MAX]);
        let s = start_bound(&PartitionBound::Key {
            token: 0,
            key: Bytes::from_static(b"k"),
            inclusive: false,
        })
        .unwrap();
        let keys = m.keys_in_range(&s, &Bound::Unbounded, 100);
        assert_eq!(keys.len(), 2);
    }

    #[test]
    fn inverted_range_is_empty_not_a_panic() {
        let m = Memtable::default();
        m.apply(Partition::new(Bytes::from_static(b"k"), 3), 1);
        let s = Bound::Included((10, Bytes::new()));
        let e = Bound::Excluded((1, Bytes::new()));
        assert!(m.keys_in_range(&s, &e, 10).is_empty());
    }
}
