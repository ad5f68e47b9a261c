//! The prepared-statement cache, keyed as Cassandra keys it: MD5 of the keyspace (when the statement
//! is not fully qualified it depends on the session's keyspace) followed by the query text.
//!
//! Bounded by an estimate of the memory its statements hold (`prepared_statements_cache_size`),
//! not only by their count: a client preparing a few huge statements must not make the node keep
//! gigabytes of plans.
//!
//! The cache stores statements through the [`CachedStatement`] trait rather than as `exec::Prepared`:
//! `NodeState` owns the cache and every exec module takes `&NodeState`, so naming exec's plan type
//! here would tie node, prepared and exec into one knot. exec implements the trait and downcasts.

use parking_lot::RwLock;
use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

/// Bound on cached statements whatever their size; past it, or past the byte budget, the oldest
/// half is dropped (drivers re-prepare on UNPREPARED).
const MAX_PREPARED_STATEMENTS: usize = 100_000;
/// Fixed cost of a cached statement (the entry, its plan's containers, bind specs).
const STATEMENT_OVERHEAD_BYTES: u64 = 512;
/// Plan and AST bytes per byte of query text: a hostile-input probe saw about 17 (1.7 GiB held
/// for 30 statements of 3.3 MB), so 24 leaves a margin (an estimate, not an allocator count).
const PLAN_BYTES_PER_QUERY_BYTE: u64 = 24;

pub type PreparedId = [u8; 16];

pub fn prepared_id(keyspace: Option<&str>, query: &str) -> PreparedId {
    let mut ctx = md5::Context::new();
    if let Some(ks) = keyspace {
        ctx.consume(ks.as_bytes());
    }
    ctx.consume(query.as_bytes());
    ctx.compute().0
}

/// The estimated memory a cached statement holds.
pub fn statement_weight_bytes(query: &str) -> u64 {
    STATEMENT_OVERHEAD_BYTES + PLAN_BYTES_PER_QUERY_BYTE * query.len() as u64
}

/// A statement too large for the cache (Cassandra refuses to prepare it).
#[derive(Debug)]
pub struct TooLarge {
    pub weight_bytes: u64,
    pub capacity_bytes: u64,
}

/// What the cache needs of a statement: its text (for its weight) and the keyspaces it depends on
/// (for invalidation). `Any` lets the executor get its own plan type back.
pub trait CachedStatement: Any + Send + Sync {
    fn query(&self) -> &str;
    /// Whether the statement reads or writes a table of `keyspace`, or was prepared with it as
    /// the session keyspace.
    fn depends_on_keyspace(&self, keyspace: &str) -> bool;
}

struct Entry<S: ?Sized> {
    inserted: u64,
    weight_bytes: u64,
    statement: Arc<S>,
}

struct Entries<S: ?Sized> {
    map: HashMap<PreparedId, Entry<S>>,
    weight_bytes: u64,
}

impl<S: ?Sized> Default for Entries<S> {
    fn default() -> Self {
        Entries {
            map: HashMap::new(),
            weight_bytes: 0,
        }
    }
}

impl<S: ?Sized> Entries<S> {
    fn remove(&mut self, id: &PreparedId) {
        if let Some(e) = self.map.remove(id) {
            self.weight_bytes -= e.weight_bytes;
        }
    }

    fn retain(&mut self, mut keep: impl FnMut(&Entry<S>) -> bool) {
        let mut freed = 0;
        self.map.retain(|_, e| {
            let k = keep(e);
            if !k {
                freed += e.weight_bytes;
            }
            k
        });
        self.weight_bytes -= freed;
    }
}

pub struct PreparedCache<S: ?Sized + CachedStatement = dyn CachedStatement> {
    entries: RwLock<Entries<S>>,
    capacity_bytes: u64,
    clock: std::sync::atomic::AtomicU64,
}

impl<S: ?Sized + CachedStatement> PreparedCache<S> {
    pub fn new(capacity_bytes: u64) -> Self {
        PreparedCache {
            entries: RwLock::new(Entries::default()),
            capacity_bytes,
            clock: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The cached statement under `id`, if it is still valid: `is_current` says whether the
    /// schema it was planned against still holds. A stale statement is evicted and reported
    /// absent, so QUERY re-plans it and EXECUTE answers UNPREPARED (drivers then re-prepare), as
    /// Cassandra evicts statements whose table, keyspace, type or function changed.
    pub fn get(&self, id: &[u8], is_current: impl FnOnce(&S) -> bool) -> Option<Arc<S>> {
        let key: PreparedId = id.try_into().ok()?;
        let p = self
            .entries
            .read()
            .map
            .get(&key)
            .map(|e| e.statement.clone())?;
        if is_current(&p) {
            return Some(p);
        }
        let mut entries = self.entries.write();
        // Only evict the entry we judged: a fresh one may have replaced it meanwhile.
        if entries
            .map
            .get(&key)
            .is_some_and(|e| Arc::ptr_eq(&e.statement, &p))
        {
            entries.remove(&key);
        }
        None
    }

    /// Caches `p`, dropping the oldest half of the cache first when it is full by count or by
    /// bytes. A statement heavier than the whole budget is not cached.
    pub fn insert(&self, id: PreparedId, p: Arc<S>) -> Result<(), TooLarge> {
        let weight_bytes = statement_weight_bytes(p.query());
        if weight_bytes > self.capacity_bytes {
            return Err(TooLarge {
                weight_bytes,
                capacity_bytes: self.capacity_bytes,
            });
        }
        let inserted = self
            .clock
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut entries = self.entries.write();
        entries.remove(&id);
        if entries.map.len() >= MAX_PREPARED_STATEMENTS
            || entries.weight_bytes + weight_bytes > self.capacity_bytes
        {
            let mut ticks: Vec<u64> = entries.map.values().map(|e| e.inserted).collect();
            ticks.sort_unstable();
            let cutoff = ticks.get(ticks.len() / 2).copied().unwrap_or(0);
            entries.retain(|e| e.inserted > cutoff);
            // Halving by count may not free enough bytes when the newest entries are the heavy ones.
            while entries.weight_bytes + weight_bytes > self.capacity_bytes {
                let Some(oldest) = entries
                    .map
                    .iter()
                    .min_by_key(|(_, e)| e.inserted)
                    .map(|(id, _)| *id)
                else {
                    break;
                };
                entries.remove(&oldest);
            }
        }
        entries.weight_bytes += weight_bytes;
        entries.map.insert(
            id,
            Entry {
                inserted,
                weight_bytes,
                statement: p,
            },
        );
        Ok(())
    }

    /// Drops every statement that reads or writes a table of `keyspace`, or that was prepared
    /// with it as the session keyspace: a type or function of it may have changed under them.
    pub fn invalidate_keyspace(&self, keyspace: &str) {
        self.entries
            .write()
            .retain(|e| !e.statement.depends_on_keyspace(keyspace));
    }

    pub fn len(&self) -> usize {
        self.entries.read().map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The estimated bytes the cached statements hold.
    pub fn weight_bytes(&self) -> u64 {
        self.entries.read().weight_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Statement(String);

    impl CachedStatement for Statement {
        fn query(&self) -> &str {
            &self.0
        }
        fn depends_on_keyspace(&self, keyspace: &str) -> bool {
            self.0.contains(keyspace)
        }
    }

    type Cache = PreparedCache<Statement>;

    fn put(cache: &Cache, query: &str) -> Result<PreparedId, TooLarge> {
        let id = prepared_id(None, query);
        cache
            .insert(id, Arc::new(Statement(query.to_string())))
            .map(|()| id)
    }

    #[test]
    fn the_byte_budget_bounds_what_is_kept() {
        let query = "x".repeat(10_000);
        let weight = statement_weight_bytes(&query);
        let cache = Cache::new(weight * 10);
        for i in 0..100 {
            assert!(put(&cache, &format!("{query}{i:03}")).is_ok());
            assert!(cache.weight_bytes() <= weight * 10 + 100 * PLAN_BYTES_PER_QUERY_BYTE);
        }
        assert!(cache.len() <= 10 && !cache.is_empty());
        let newest = put(&cache, &format!("{query}new")).ok();
        assert!(newest.is_some_and(|id| cache.get(&id, |_| true).is_some()));
    }

    #[test]
    fn a_statement_larger_than_the_budget_is_refused() {
        let cache = Cache::new(1024 * 1024);
        let huge = "x".repeat(1024 * 1024);
        let err = put(&cache, &huge).err();
        assert!(err.is_some_and(|e| e.weight_bytes > e.capacity_bytes));
        assert!(cache.is_empty() && cache.weight_bytes() == 0);
    }

    #[test]
    fn stale_statements_are_evicted_on_lookup() {
        let cache = Cache::new(1024 * 1024);
        let id = put(&cache, "SELECT 1").ok();
        let Some(id) = id else {
            panic!("statement cached");
        };
        assert!(cache.get(&id, |_| false).is_none());
        assert!(cache.is_empty() && cache.weight_bytes() == 0);
        assert!(cache.get(&id, |_| true).is_none());
    }

    #[test]
    fn reinserting_a_statement_does_not_count_it_twice() {
        let cache = Cache::new(1024 * 1024);
        assert!(put(&cache, "SELECT 1").is_ok());
        assert!(put(&cache, "SELECT 1").is_ok());
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.weight_bytes(), statement_weight_bytes("SELECT 1"));
    }

    #[test]
    fn invalidating_a_keyspace_drops_only_its_statements() {
        let cache = Cache::new(1024 * 1024);
        let (Ok(a), Ok(b)) = (
            put(&cache, "SELECT * FROM ks1.t"),
            put(&cache, "SELECT * FROM ks2.t"),
        ) else {
            panic!("statements cached");
        };
        cache.invalidate_keyspace("ks1");
        assert!(cache.get(&a, |_| true).is_none());
        assert!(cache.get(&b, |_| true).is_some());
        assert_eq!(
            cache.weight_bytes(),
            statement_weight_bytes("SELECT * FROM ks2.t")
        );
    }
}
