//! Operator actions (nodetool flush / compact / garbagecollect / snapshot / tablestats /
//! compactionstats) and shutdown.

use crate::compaction::{self, CompactionKind};
use crate::engine::{Engine, Table};
use crate::histogram::{CellCountHistogram, PartitionSizeHistogram};
use crate::path_name::PathName;
use crate::sstable::repair::RepairState;
use crate::sstable::SSTableReader;
use crate::types::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// How long `nodetool compact` and `garbagecollect` wait for the background compactions that
/// hold some of the table's SSTables.
const ADMIN_COMPACTION_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

impl Engine {
    fn tables_for(&self, table: Option<TableId>) -> Result<Vec<Arc<Table>>, StorageError> {
        match table {
            Some(id) => Ok(vec![self.table(id)?]),
            None => Ok(self.tables.read().values().cloned().collect()),
        }
    }

    /// Flushes memtables to SSTables; blocks until written.
    pub fn flush(&self, table: Option<TableId>) -> Result<(), StorageError> {
        for t in self.tables_for(table)? {
            compaction::flush_table(&self.background, &t)?;
        }
        Ok(())
    }

    /// Major compaction: all SSTables of the table into one (split by size for LCS).
    pub fn compact(&self, table: TableId) -> Result<CompactionStats, StorageError> {
        let t = self.table(table)?;
        let inputs = compaction::reserve_all_waiting(&t, ADMIN_COMPACTION_WAIT);
        let (level, max_out) = match t.def.read().options.compaction {
            CompactionOptions::Leveled {
                sstable_size_in_mb, ..
            } => (1, u64::from(sstable_size_in_mb).max(1) << 20),
            _ => (0, u64::MAX),
        };
        // One major compaction per repair set: they never merge.
        let mut groups = compaction::by_repair_group(inputs).into_iter();
        let mut total = CompactionStats::default();
        while let Some(group) = groups.next() {
            let done = compaction::compact_sstables(
                &self.background,
                &t,
                group,
                CompactionKind::Major,
                level,
                max_out,
            );
            match done {
                Ok(st) => total.add(&st),
                Err(e) => {
                    // The sets not compacted yet are still reserved.
                    groups.for_each(|g| compaction::release(&t, &g));
                    return Err(e);
                }
            }
        }
        Ok(total)
    }

    /// Runs the table's compaction strategy once, now (including single-SSTable tombstone
    /// compaction); None when it has nothing to do.
    pub fn run_background_compaction(
        &self,
        table: TableId,
    ) -> Result<Option<CompactionStats>, StorageError> {
        let t = self.table(table)?;
        compaction::background_compaction(&self.background, &t)
    }

    /// nodetool garbagecollect: rewrites each SSTable alone without its purgeable tombstones
    /// and the data the table's other SSTables shadow: their deletions with `cells` false
    /// (Cassandra's `-g ROW`, the default), also their newer cells with `cells` true (`-g
    /// CELL`). An SSTable with nothing of the kind to drop is left as it is (see
    /// `shadow_sources`), where Cassandra rewrites every SSTable.
    pub fn garbage_collect(
        &self,
        table: TableId,
        cells: bool,
    ) -> Result<GarbageCollectStats, StorageError> {
        let t = self.table(table)?;
        let all: Vec<_> = t.sstables.read().to_vec();
        let mut total = GarbageCollectStats::default();
        let deadline = std::time::Instant::now() + ADMIN_COMPACTION_WAIT;
        for s in all {
            // The SSTables rewritten before this one are in the set by now, in their new form.
            let current: Vec<_> = t.sstables.read().to_vec();
            let Some(sources) = shadow_sources(&s, &current, cells) else {
                total.skipped += 1;
                continue;
            };
            let Some(input) = compaction::reserve_one_waiting(&t, &s, deadline) else {
                continue;
            };
            let shadow = compaction::GcShadow {
                sources: &sources,
                cells,
            };
            let st = compaction::garbage_collect_sstable(&self.background, &t, input, shadow)?;
            total.rewritten += 1;
            total.compaction.add(&st);
        }
        Ok(total)
    }

    /// nodetool cleanup: drops the partitions outside `owned`, token ranges `[lo, hi)` (None:
    /// unbounded) that this node replicates. Memtables are flushed first; an SSTable whose
    /// tokens all lie within one owned range is left as it is, any other is rewritten alone
    /// (or removed, when none of its partitions are owned).
    pub fn cleanup(
        &self,
        table: TableId,
        owned: &[(Option<i64>, Option<i64>)],
    ) -> Result<CompactionStats, StorageError> {
        let t = self.table(table)?;
        compaction::flush_table(&self.background, &t)?;
        let owned: Vec<compaction::TokenRange> = owned
            .iter()
            .map(|&(lo, hi)| compaction::TokenRange { lo, hi })
            .collect();
        let within = |lo: i64, hi: i64| {
            owned
                .iter()
                .any(|r| r.lo.is_none_or(|l| l <= lo) && r.hi.is_none_or(|h| hi < h))
        };
        let all: Vec<_> = t.sstables.read().to_vec();
        let mut total = CompactionStats::default();
        for s in all {
            if within(s.stats.min_token, s.stats.max_token) {
                continue;
            }
            let inputs = compaction::reserve(&t, vec![s.clone()]);
            if inputs.is_empty() {
                continue;
            }
            let st =
                compaction::cleanup_sstables(&self.background, &t, inputs, s.stats.level, &owned)?;
            total.add(&st);
        }
        Ok(total)
    }

    /// Flushes, then hard-links every SSTable component into `<table dir>/snapshots/<tag>/`.
    pub fn snapshot(&self, table: Option<TableId>, tag: &str) -> Result<(), StorageError> {
        let tag = PathName::new("snapshot tag", tag)?;
        for t in self.tables_for(table)? {
            compaction::flush_table(&self.background, &t)?;
            let dest = t.dir.join("snapshots").join(&tag);
            std::fs::create_dir_all(&dest).map_err(|e| StorageError::io(&dest, e))?;
            let sstables: Vec<_> = t.sstables.read().to_vec();
            for s in sstables {
                for p in s.component_paths() {
                    let Some(name) = p.file_name() else { continue };
                    let target = dest.join(name);
                    if target.exists() {
                        continue;
                    }
                    std::fs::hard_link(&p, &target).map_err(|e| StorageError::io(&p, e))?;
                }
            }
        }
        Ok(())
    }

    /// Removes snapshots with `tag` (all snapshots when None or empty) of every table on disk.
    pub fn clear_snapshot(&self, tag: Option<&str>) -> Result<(), StorageError> {
        // Validated before anything is touched: the tag is joined to paths that are then
        // deleted recursively.
        let tag = match tag {
            Some(tag) if !tag.is_empty() => Some(PathName::new("snapshot tag", tag)?),
            _ => None,
        };
        let data = &self.config.data_dir;
        let Ok(keyspaces) = std::fs::read_dir(data) else {
            return Ok(());
        };
        for ks in keyspaces.flatten() {
            let Ok(tables) = std::fs::read_dir(ks.path()) else {
                continue;
            };
            for t in tables.flatten() {
                let snaps = t.path().join("snapshots");
                let target = match &tag {
                    Some(tag) => snaps.join(tag),
                    None => snaps,
                };
                if target.exists() {
                    std::fs::remove_dir_all(&target).map_err(|e| StorageError::io(&target, e))?;
                }
            }
        }
        Ok(())
    }

    /// Statistics for nodetool tablestats / tablehistograms.
    pub fn table_stats(&self, table: TableId) -> TableStats {
        let Ok(t) = self.table(table) else {
            return TableStats::default();
        };
        let sstables: Vec<_> = t.sstables.read().to_vec();
        let mt = t.memtable.read().clone();
        let mut s = TableStats {
            sstable_count: sstables.len(),
            memtable_data_size_bytes: mt.size_bytes(),
            memtable_heap_bytes: mt.heap_bytes(),
            memtable_partitions: mt.partition_count(),
            memtable_switch_count: t.counters.memtable_switches.load(Ordering::Relaxed),
            local_read_count: t.counters.reads.load(Ordering::Relaxed),
            local_write_count: t.counters.writes.load(Ordering::Relaxed),
            bloom_filter_false_positives: t.counters.bloom_false_positives.load(Ordering::Relaxed),
            chunk_cache_hit_rate: self.reads.caches.chunk.hit_rate(),
            key_cache_hits: t.counters.key_cache_hits.load(Ordering::Relaxed),
            key_cache_requests: t.counters.key_cache_requests.load(Ordering::Relaxed),
            key_cache_hit_rate: self.reads.caches.key.hit_rate(),
            row_cache_hits: t.counters.row_cache_hits.load(Ordering::Relaxed),
            row_cache_requests: t.counters.row_cache_requests.load(Ordering::Relaxed),
            sstables_per_read_max: t.counters.max_sstables_per_read.load(Ordering::Relaxed),
            sstables_skipped_by_timestamp: t
                .counters
                .sstables_skipped_by_timestamp
                .load(Ordering::Relaxed),
            rows_merged_by_reads: t.counters.rows_merged.load(Ordering::Relaxed),
            tombstones_scanned_by_reads: t.counters.tombstones_scanned.load(Ordering::Relaxed),
            tombstones_scanned_max: t.counters.tombstones_scanned_max.load(Ordering::Relaxed),
            tombstone_failures: t.counters.tombstone_failures.load(Ordering::Relaxed),
            ..TableStats::default()
        };
        let mut uncompressed = 0u64;
        let mut data_bytes = 0u64;
        let mut sizes = PartitionSizeHistogram::default();
        let mut cells = CellCountHistogram::default();
        for r in &sstables {
            sizes.merge(&r.stats.partition_size_histogram);
            cells.merge(&r.stats.cell_count_histogram);
            s.live_disk_space_bytes += r.disk_bytes();
            s.estimated_partitions += r.stats.partitions;
            s.index_summary_bytes += r.summary_bytes() as u64;
            s.max_partition_size_bytes =
                s.max_partition_size_bytes.max(r.stats.max_partition_bytes);
            s.bloom_filter_space_bytes += r.filter.size_bytes();
            s.tombstone_count += r.stats.tombstones;
            uncompressed += r.stats.uncompressed_bytes;
            data_bytes += r.stats.data_file_bytes;
            *match r.repair_state() {
                RepairState::Unrepaired => &mut s.unrepaired_bytes,
                RepairState::Pending { .. } => &mut s.pending_repair_bytes,
                RepairState::Repaired { .. } => &mut s.repaired_bytes,
            } += r.stats.uncompressed_bytes;
        }
        s.percent_repaired = if uncompressed > 0 {
            s.repaired_bytes as f64 / uncompressed as f64 * 100.0
        } else {
            100.0
        };
        s.estimated_partitions += mt.partition_count();
        s.mean_partition_size_bytes = (uncompressed + mt.size_bytes())
            .checked_div(s.estimated_partitions)
            .unwrap_or(0);
        s.compression_ratio = if uncompressed > 0 {
            data_bytes as f64 / uncompressed as f64
        } else {
            0.0
        };
        s.histograms = TableHistograms {
            read_latency_ns: t.counters.read_latency.percentiles(),
            write_latency_ns: t.counters.write_latency.percentiles(),
            sstables_per_read: t.counters.sstables_per_read.percentiles(),
            partition_size_bytes: sizes.percentiles(),
            cell_count: cells.percentiles(),
        };
        s
    }

    /// Running flushes and compactions.
    pub fn compaction_stats(&self) -> Vec<CompactionProgress> {
        self.background.progress.snapshot()
    }

    /// Per table with any, (keyspace, table, background compactions its strategy would start
    /// now): Cassandra's estimated remaining tasks, without the running ones.
    pub fn estimated_pending_compactions(&self) -> Vec<(String, String, usize)> {
        self.tables_for(None)
            .unwrap_or_default()
            .iter()
            .filter_map(|t| {
                let n = compaction::estimated_pending_tasks(t);
                let def = t.def.read();
                (n > 0).then(|| (def.keyspace.clone(), def.name.clone(), n))
            })
            .collect()
    }

    /// `compaction_throughput` now, in MiB/s (0: unthrottled).
    pub fn compaction_throughput_mib_per_s(&self) -> u64 {
        self.background.compaction_cap_mib_s.load(Ordering::Relaxed)
    }

    /// MiB per second compactions wrote over the last 1, 5 and 15 minutes (what Cassandra's
    /// `getcompactionthroughput` prints under the cap).
    pub fn compaction_rates_mib_per_s(&self, now: std::time::Instant) -> [f64; 3] {
        let rates = self.background.compaction_limiter.meter.rates(now);
        rates.map(|r| r / 1048576.0)
    }

    /// `nodetool setcompactionthroughput`: the cap every compaction writes under from now on,
    /// those running included (they look at it every few MiB).
    pub fn set_compaction_throughput_mib_per_s(&self, mib_per_s: u64) {
        self.background
            .compaction_cap_mib_s
            .store(mib_per_s, Ordering::Relaxed);
    }

    /// Clean shutdown: flushes every memtable, lets a running flush or compaction finish,
    /// stops background threads, syncs the commitlog and, when everything was flushed, deletes
    /// its segments so the next start replays nothing. If a flush fails, the commitlog is kept
    /// and replays the unflushed data at the next start; the first error is returned.
    pub fn shutdown(&self) -> Result<(), StorageError> {
        let mut first_err = None;
        let tables: Vec<Arc<Table>> = self.tables.read().values().cloned().collect();
        for t in &tables {
            if let Err(e) = compaction::flush_table(&self.background, t) {
                first_err.get_or_insert(e);
            }
        }
        let synced = self.stop_background();
        if first_err.is_none() && synced.is_ok() {
            self.log.close_clean();
        }
        match first_err {
            Some(e) => Err(e),
            None => synced,
        }
    }

    /// Stops without flushing memtables (as a crash after the last commitlog sync would): the
    /// commitlog replays them at the next start. For tests of replay and for callers that must
    /// stop fast.
    pub fn shutdown_without_flush(&self) -> Result<(), StorageError> {
        self.stop_background()
    }

    /// Stops the flush and compaction threads (letting running work finish) and the commitlog.
    fn stop_background(&self) -> Result<(), StorageError> {
        self.background.stop();
        self.log.shutdown()
    }
}

/// The SSTables whose copies of `s`'s partitions a garbagecollect of `s` must consult, or
/// None when it has nothing to drop: no tombstone or TTL of its own (version 2 statistics and
/// later count them), and no other SSTable overlapping its tokens that may hold something
/// newer than its oldest data shadowing it (a deletion; with `cells`, any write).
fn shadow_sources(
    s: &Arc<SSTableReader>,
    all: &[Arc<SSTableReader>],
    cells: bool,
) -> Option<Vec<Arc<SSTableReader>>> {
    let (lo, hi) = (s.stats.min_token, s.stats.max_token);
    // Not by the statistics' token bounds alone: deletions spread over the ring flush into one
    // SSTable (with whatever else was written meanwhile) whose bounds overlap every piece of a
    // split run, though most pieces hold none of its deletions. With `cells`, any of its
    // partitions there counts (an unreadable index counts as one).
    let may_shadow = |o: &SSTableReader| match cells {
        false => o.stats.may_have_deletions_within(lo, hi),
        true => o.has_partition_within(lo, hi).unwrap_or(true),
    };
    let sources: Vec<_> = all
        .iter()
        .filter(|o| o.gen != s.gen)
        .filter(|o| o.stats.max_timestamp_us >= s.stats.min_timestamp_us)
        .filter(|o| may_shadow(o))
        .cloned()
        .collect();
    let nothing_of_its_own =
        s.stats.version >= 2 && s.stats.tombstones == 0 && s.stats.drop_time_histogram.total() == 0;
    (!(sources.is_empty() && nothing_of_its_own)).then_some(sources)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use crate::compaction;
    use crate::test_support::*;
    use crate::types::*;
    use std::collections::HashSet;
    use std::time::Duration;

    /// Three flushed SSTables, the first two held for 300 ms as a running background compaction
    /// holds its inputs; returns the engine and the thread that lets them go.
    fn three_sstables_two_held(
        name: &str,
    ) -> (std::sync::Arc<crate::Engine>, std::thread::JoinHandle<()>) {
        let e = open(&tempdir(name), 0);
        // One row written three times: each SSTable overwrites the one before.
        for i in 0..3u8 {
            let mut m = mutation(b"p");
            m.rows
                .push(row(b"a", vec![set(1, i64::from(i), &[b'v', i])]));
            e.apply_blocking(&[m]).unwrap();
            e.flush(None).unwrap();
        }
        let t = e.table(TABLE).unwrap();
        let first_two = t.sstables.read()[..2].to_vec();
        let held = compaction::reserve(&t, first_two);
        assert_eq!(held.len(), 2);
        let gens: HashSet<u64> = held.iter().map(|s| s.gen).collect();
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            t.compacting.lock().retain(|g| !gens.contains(g));
        });
        (e, releaser)
    }

    #[test]
    fn a_major_compaction_waits_for_the_background_compaction_holding_its_sstables() {
        let (e, releaser) = three_sstables_two_held("major-waits");
        let st = e.compact(TABLE).unwrap();
        releaser.join().unwrap();
        assert_eq!(st.input_sstables, 3, "the held SSTables were left out");
        assert_eq!(e.table_stats(TABLE).sstable_count, 1);
    }

    #[test]
    fn garbagecollect_waits_for_the_sstables_a_background_compaction_holds() {
        let (e, releaser) = three_sstables_two_held("gc-waits");
        let st = e.garbage_collect(TABLE, true).unwrap();
        releaser.join().unwrap();
        // The two held ones hold overwritten cells; the newest has nothing to drop.
        assert_eq!((st.rewritten, st.skipped), (2, 1), "{st:?}");
        assert_eq!(st.compaction.input_sstables, 2);
        assert_eq!(e.table_stats(TABLE).sstable_count, 1);
        let read = e.read(TABLE, &point(b"p", now())).unwrap();
        assert_eq!(read.partitions.len(), 1);
    }

    fn rows_in_sstables(e: &crate::Engine) -> u64 {
        let t = e.table(TABLE).unwrap();
        let rows = t.sstables.read().iter().map(|s| s.stats.rows).sum();
        rows
    }

    #[test]
    fn what_a_compaction_writes_shows_in_the_recent_compaction_rates() {
        let e = open(&tempdir("compaction-rates"), 0);
        let start = std::time::Instant::now();
        assert_eq!(e.compaction_rates_mib_per_s(start), [0.0; 3]);
        // Two flushed SSTables of 3 MiB each (incompressible values), then a major compaction.
        let mut seed = 0u64;
        let mut value = || {
            seed += 1;
            noise(4096, seed)
        };
        for round in 0..2u32 {
            for i in 0..768u32 {
                let mut m = mutation(format!("k{i}").as_bytes());
                m.rows
                    .push(row(b"a", vec![set(1, i64::from(round) + 1, &value())]));
                e.apply_blocking(&[m]).unwrap();
            }
            e.flush(None).unwrap();
        }
        e.compact(TABLE).unwrap();
        let later = std::time::Instant::now() + std::time::Duration::from_secs(6);
        let [one, five, fifteen] = e.compaction_rates_mib_per_s(later);
        // At least 2 MiB were metered (a MiB at a time) within one 5 s tick.
        assert!(
            one >= 2.0 / 5.0 && five >= 2.0 / 5.0 && fifteen >= 2.0 / 5.0,
            "{one} {five} {fifteen}"
        );
    }

    #[test]
    fn garbagecollect_drops_what_deletions_elsewhere_shadow_and_skips_what_has_nothing_to_drop() {
        // No background compaction: the test counts SSTables' rows.
        let mut def = table_def(864_000);
        def.options.compaction = CompactionOptions::SizeTiered {
            min_threshold: 32,
            max_threshold: 32,
        };
        let e = open_with(&tempdir("gc-shadow"), def);
        let write = |m: Mutation| {
            e.apply_blocking(&[m]).unwrap();
            e.flush(None).unwrap();
        };
        let mut m = mutation(b"p");
        m.rows.push(row(b"a", vec![set(1, 1, b"old")]));
        m.rows.push(row(b"b", vec![set(1, 1, b"kept")]));
        write(m);
        let mut m = mutation(b"p");
        let mut deleted = row(b"a", Vec::new());
        deleted.deletion = Some(DeletionTime {
            marked_for_delete_at_us: 5,
            local_deletion_time_s: now(),
        });
        m.rows.push(deleted);
        write(m);
        let mut m = mutation(b"p");
        m.rows.push(row(b"c", vec![set(1, 10, b"newer")]));
        write(m);
        let before = e.read(TABLE, &point(b"p", now())).unwrap();
        assert_eq!(rows_in_sstables(&e), 4);
        let st = e.garbage_collect(TABLE, false).unwrap();
        // The first loses row a; the deletion stays (gc grace); the newest is left alone.
        assert_eq!((st.rewritten, st.skipped), (2, 1), "{st:?}");
        assert_eq!(rows_in_sstables(&e), 3);
        assert_eq!(e.read(TABLE, &point(b"p", now())).unwrap(), before);
        // Overwrites are not deletions: at row granularity they stay.
        let mut m = mutation(b"p");
        m.rows.push(row(b"b", vec![set(1, 20, b"overwritten")]));
        write(m);
        let st = e.garbage_collect(TABLE, false).unwrap();
        assert_eq!(rows_in_sstables(&e), 4, "{st:?}");
        let st = e.garbage_collect(TABLE, true).unwrap();
        assert_eq!(rows_in_sstables(&e), 3, "{st:?}");
    }
}
