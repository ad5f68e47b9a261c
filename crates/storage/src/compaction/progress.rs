//! Running flushes and compactions with the bytes they have done, for compactionstats.

use crate::types::{CompactionProgress, TableDef};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) struct Progress {
    tasks: Mutex<HashMap<u64, CompactionProgress>>,
    next_id: AtomicU64,
}

impl Default for Progress {
    fn default() -> Self {
        Progress {
            tasks: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        }
    }
}

impl Progress {
    pub(crate) fn start(&self, def: &TableDef, kind: &str, total_bytes: u64) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.tasks.lock().insert(
            id,
            CompactionProgress {
                id,
                keyspace: def.keyspace.clone(),
                table: def.name.clone(),
                kind: kind.to_string(),
                completed_bytes: 0,
                total_bytes,
            },
        );
        id
    }

    pub(crate) fn update(&self, id: u64, completed_bytes: u64) {
        if let Some(p) = self.tasks.lock().get_mut(&id) {
            p.completed_bytes = completed_bytes;
        }
    }

    pub(crate) fn end(&self, id: u64) {
        self.tasks.lock().remove(&id);
    }

    /// The running tasks, oldest first.
    pub(crate) fn snapshot(&self) -> Vec<CompactionProgress> {
        let mut v: Vec<_> = self.tasks.lock().values().cloned().collect();
        v.sort_by_key(|p| p.id);
        v
    }
}
