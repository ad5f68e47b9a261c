//! The storage side of incremental repair (Cassandra 4.0+): each SSTable is unrepaired, pending
//! for one repair session, or repaired (sstable/repair.rs). A session anticompacts the ranges
//! it repairs into its pending set, hashes that set alone for its Merkle trees, and at the end
//! either finalizes it (repaired) or releases it (unrepaired again). Pending SSTables survive a
//! restart as they are: the server releases the sessions it no longer knows.

use crate::compaction::{self, TokenRange};
use crate::engine::Engine;
use crate::read::scan::{scan_digest_bytes, ScanSources};
use crate::sstable::repair::RepairState;
use crate::sstable::SSTableReader;
use crate::table::Table;
use crate::types::*;
use std::sync::Arc;

impl Engine {
    /// Moves the partitions of `ranges` (sorted, disjoint `[lo, hi)` token ranges, None
    /// unbounded, as for `cleanup`) held by the table's unrepaired SSTables to the pending set
    /// of `session`. The table is flushed first, so every write acknowledged before the call is
    /// in an SSTable the session covers. An SSTable with all its partitions in the ranges is
    /// marked without a rewrite, one with some is split into a pending and an unrepaired part;
    /// repaired and pending SSTables (of any session) are left as they are. Waits for the
    /// background compactions holding the SSTables it needs, for up to a minute, then fails
    /// (leaving what it marked pending: release the session).
    pub fn anticompact(
        &self,
        table: TableId,
        ranges: &[(Option<i64>, Option<i64>)],
        session: [u8; 16],
    ) -> Result<AntiCompactionStats, StorageError> {
        let t = self.table(table)?;
        compaction::flush_table(&self.background, &t)?;
        let ranges: Vec<TokenRange> = ranges
            .iter()
            .map(|&(lo, hi)| TokenRange { lo, hi })
            .collect();
        compaction::anticompact(&self.background, &t, &ranges, session)
    }

    /// Marks every SSTable pending for `session`, in every table, repaired at `repaired_at_ms`;
    /// returns how many. Idempotent: a second call finds none.
    pub fn finalize_repair(
        &self,
        session: [u8; 16],
        repaired_at_ms: i64,
    ) -> Result<usize, StorageError> {
        self.move_pending(
            session,
            RepairState::Repaired {
                at_ms: repaired_at_ms,
            },
        )
    }

    /// Returns every SSTable pending for `session` to the unrepaired set (a failed or
    /// cancelled session); returns how many. Idempotent.
    pub fn release_repair(&self, session: [u8; 16]) -> Result<usize, StorageError> {
        self.move_pending(session, RepairState::Unrepaired)
    }

    /// Each table's SSTables pending for `session` moved to `to`, under the table's repair lock
    /// so that a compaction of them installs outputs in the new state.
    fn move_pending(&self, session: [u8; 16], to: RepairState) -> Result<usize, StorageError> {
        let pending = RepairState::Pending { session };
        let tables: Vec<_> = self.tables.read().values().cloned().collect();
        let mut moved = 0;
        for t in tables {
            let _repair = t.repair_lock.lock();
            let sstables = t.sstables.read().clone();
            for s in sstables.iter().filter(|s| s.repair_state() == pending) {
                s.set_repair_state(to)?;
                moved += 1;
            }
        }
        Ok(moved)
    }

    /// The SSTables pending for a repair session, one entry per table and session.
    pub fn pending_repairs(&self) -> Vec<PendingRepair> {
        let tables: Vec<_> = self.tables.read().values().cloned().collect();
        let mut out: Vec<PendingRepair> = Vec::new();
        for t in tables {
            let table = t.id();
            let first = out.len();
            for s in t.sstables.read().iter() {
                let RepairState::Pending { session } = s.repair_state() else {
                    continue;
                };
                let bytes = s.disk_bytes();
                match out
                    .get_mut(first..)
                    .and_then(|o| o.iter_mut().find(|p| p.session == session))
                {
                    Some(p) => {
                        p.sstables += 1;
                        p.bytes += bytes;
                    }
                    None => out.push(PendingRepair {
                        table,
                        session,
                        sstables: 1,
                        bytes,
                    }),
                }
            }
        }
        out
    }

    /// `read_unfiltered` over the table's SSTables pending for `session` alone, no memtable
    /// and no other SSTable: what the session's Merkle tree hashes on this replica.
    pub fn read_unfiltered_pending(
        &self,
        table: TableId,
        session: [u8; 16],
        q: &ReadQuery,
        tombstone_failure_threshold: u64,
    ) -> Result<UnfilteredResult, StorageError> {
        let t = self.table(table)?;
        let sstables = pending_sstables(&t, session);
        crate::exclusion::reading_pinned(&sstables, || {
            self.read_unfiltered(table, q, tombstone_failure_threshold)
        })
    }

    /// Every partition of `table` from `start` to `end`, in token order, as its token, key and
    /// the bytes a repair hashes for it (partition/digest.rs) in the canonical unfiltered form
    /// `read_unfiltered` gives: over the live data, or with `pending` over that repair session's
    /// SSTables alone (as `read_unfiltered_pending`). One sequential pass over each source
    /// (read/scan.rs); `visit` answers false to stop.
    pub fn scan_digest_bytes(
        &self,
        table: TableId,
        (start, end): (&PartitionBound, &PartitionBound),
        now_s: i64,
        pending: Option<[u8; 16]>,
        visit: &mut dyn FnMut(i64, &bytes::Bytes, &[u8]) -> bool,
    ) -> Result<(), StorageError> {
        let t = self.table(table)?;
        let sources = match pending {
            Some(session) => ScanSources {
                sstables: pending_sstables(&t, session),
                memtables: Vec::new(),
            },
            // Memtables first: a flush adds its SSTable before it retires the memtable, so
            // data on its way from one to the other is seen at least once.
            None => {
                let memtables = crate::read::live_memtables(&t);
                ScanSources {
                    sstables: crate::exclusion::visible(t.sstables.read().clone()),
                    memtables,
                }
            }
        };
        let gc_before_s = crate::read::unfiltered_gc_before(&t, now_s);
        scan_digest_bytes(&sources, (start, end), (gc_before_s, now_s), visit)
    }
}

/// The table's SSTables pending for `session`.
fn pending_sstables(t: &Table, session: [u8; 16]) -> Vec<Arc<SSTableReader>> {
    let pending = RepairState::Pending { session };
    t.sstables
        .read()
        .iter()
        .filter(|s| s.repair_state() == pending)
        .cloned()
        .collect()
}
