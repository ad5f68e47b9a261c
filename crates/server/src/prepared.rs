//! The prepared-statement cache, keyed as Cassandra keys it: MD5 of the keyspace (when the statement
//! is not fully qualified it depends on the session's keyspace) followed by the query text.

use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::Arc;

/// Bound on cached statements; past it the oldest half is dropped (drivers re-prepare on UNPREPARED).
const MAX_PREPARED_STATEMENTS: usize = 100_000;

pub type PreparedId = [u8; 16];

pub fn prepared_id(keyspace: Option<&str>, query: &str) -> PreparedId {
    let mut ctx = md5::Context::new();
    if let Some(ks) = keyspace {
        ctx.consume(ks.as_bytes());
    }
    ctx.consume(query.as_bytes());
    ctx.compute().0
}

pub struct PreparedCache {
    entries: RwLock<HashMap<PreparedId, (u64, Arc<crate::exec::Prepared>)>>,
    clock: std::sync::atomic::AtomicU64,
}

impl Default for PreparedCache {
    fn default() -> Self {
        Self::new()
    }
}

impl PreparedCache {
    pub fn new() -> Self {
        PreparedCache {
            entries: RwLock::new(HashMap::new()),
            clock: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The cached statement under `id`, if it is still valid: `is_current` says whether the
    /// schema it was planned against still holds. A stale statement is evicted and reported
    /// absent, so QUERY re-plans it and EXECUTE answers UNPREPARED (drivers then re-prepare), as
    /// Cassandra evicts statements whose table, keyspace, type or function changed.
    pub fn get(
        &self,
        id: &[u8],
        is_current: impl FnOnce(&crate::exec::Prepared) -> bool,
    ) -> Option<Arc<crate::exec::Prepared>> {
        let key: PreparedId = id.try_into().ok()?;
        let p = self.entries.read().get(&key).map(|(_, p)| p.clone())?;
        if is_current(&p) {
            return Some(p);
        }
        let mut map = self.entries.write();
        // Only evict the entry we judged: a fresh one may have replaced it meanwhile.
        if map.get(&key).is_some_and(|(_, cur)| Arc::ptr_eq(cur, &p)) {
            map.remove(&key);
        }
        None
    }

    pub fn insert(&self, id: PreparedId, p: Arc<crate::exec::Prepared>) {
        let tick = self
            .clock
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut map = self.entries.write();
        if map.len() >= MAX_PREPARED_STATEMENTS {
            let mut ticks: Vec<u64> = map.values().map(|(t, _)| *t).collect();
            ticks.sort_unstable();
            let cutoff = ticks.get(ticks.len() / 2).copied().unwrap_or(0);
            map.retain(|_, (t, _)| *t > cutoff);
        }
        map.insert(id, (tick, p));
    }

    /// Drops every statement that reads or writes a table of `keyspace`, or that was prepared
    /// with it as the session keyspace: a type or function of it may have changed under them.
    pub fn invalidate_keyspace(&self, keyspace: &str) {
        self.entries.write().retain(|_, (_, p)| {
            p.keyspace.as_deref() != Some(keyspace)
                && !p.tables.iter().any(|t| t.keyspace == keyspace)
        });
    }

    pub fn len(&self) -> usize {
        self.entries.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
