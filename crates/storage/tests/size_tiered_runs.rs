//! Size-tiered outputs end at the ring's tokens once they hold a few MiB: the pieces of one
//! compaction form a run, which the strategy buckets as one SSTable (before runs, four similar
//! pieces formed a bucket of their own and were merged into the same pieces forever), and a
//! garbagecollect rewrites only the pieces that hold what it drops.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

mod common;
use common::*;
use helenus_storage::*;

/// About 24 MiB of 1 KiB values: four ring ranges of about 6 MiB, each past the 4 MiB an
/// output holds before it ends at a ring token.
const KEYS: usize = 24_000;

fn key(k: usize) -> Vec<u8> {
    format!("k{k}").into_bytes()
}

/// The keys' tokens at `fractions` of them, in token order.
fn tokens_at(fractions: &[f64]) -> Vec<i64> {
    let mut t: Vec<i64> = (0..KEYS).map(|k| token(&key(k))).collect();
    t.sort_unstable();
    fractions
        .iter()
        .map(|f| t[(KEYS as f64 * f) as usize])
        .collect()
}

/// Ring tokens at the quarters of the keys' tokens.
fn quarter_tokens() -> Vec<i64> {
    tokens_at(&[0.25, 0.5, 0.75])
}

/// 1 KiB that does not compress (a compressed run of one byte would leave the sizes tiny).
fn value(k: usize) -> Vec<u8> {
    noise(1024, k as u64)
}

fn write(e: &Engine, keys: std::ops::Range<usize>) {
    let ms: Vec<_> = keys
        .map(|k| {
            let mut m = mutation(&key(k));
            m.rows.push(row(b"c", vec![set(1, 10, &value(k))]));
            m
        })
        .collect();
    for batch in ms.chunks(500) {
        e.apply_blocking(batch).unwrap();
    }
}

/// A size-tiered table of `KEYS` partitions in two flushes, compacted with the ring at the
/// quarter tokens.
fn split_table(name: &str) -> (std::path::PathBuf, std::sync::Arc<Engine>, Vec<i64>) {
    let d = tempdir(name);
    let e = open(&d, 864000);
    let tokens = quarter_tokens();
    e.set_ring_tokens(tokens.clone());
    write(&e, 0..KEYS / 2);
    e.flush(None).unwrap();
    write(&e, KEYS / 2..KEYS);
    e.flush(None).unwrap();
    e.compact(TABLE).unwrap();
    (d, e, tokens)
}

#[test]
fn a_large_size_tiered_compaction_writes_one_run_of_pieces_within_ring_ranges() {
    let (d, e, tokens) = split_table("stcs-run-split");
    let count = e.table_stats(TABLE).sstable_count;
    assert_eq!(count, 4, "one output per ring range");
    assert_eq!(
        staged_per_range(&e, &tokens),
        4,
        "each wholly inside its range"
    );
    // Each piece's bloom filter keeps the blocks of its range: together about one filter for
    // the table's keys (about 9.6 bits a key at 1% plus the blocked layout's fifth), not four.
    let bloom = e.table_stats(TABLE).bloom_filter_space_bytes;
    assert!(bloom < KEYS as u64 * 2, "bloom filters: {bloom} bytes");
    assert_eq!(
        e.read(TABLE, &scan_all(now())).unwrap().partitions.len(),
        KEYS
    );
    // Four pieces of similar size, at min_threshold: one run, so nothing to compact.
    assert!(e.run_background_compaction(TABLE).unwrap().is_none());
    e.shutdown().unwrap();
    drop(e);
    // The run survives a restart (its id is in each piece's statistics).
    let e = open(&d, 864000);
    assert_eq!(e.table_stats(TABLE).sstable_count, 4);
    assert!(e.run_background_compaction(TABLE).unwrap().is_none());
    // A major compaction merges the run again into the same shape.
    e.set_ring_tokens(tokens.clone());
    let cs = e.compact(TABLE).unwrap();
    assert_eq!((cs.input_sstables, cs.output_sstables), (4, 4));
    e.shutdown().unwrap();
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn garbagecollect_rewrites_only_the_pieces_holding_deleted_partitions() {
    let (d, e, tokens) = split_table("stcs-run-gc");
    assert_eq!(e.table_stats(TABLE).sstable_count, 4);
    // Partitions of the first and the last ring range deleted (away from the middle ranges:
    // the statistics place deletions in 1/1024ths of the ring), and rows written all over
    // the ring meanwhile, flushed together: the SSTable spans the ring by its bounds and
    // holds partitions everywhere, yet no deletion in the two middle pieces.
    let in_outer_ranges = |k: usize| {
        let t = token(&key(k));
        t <= tokens[0] || t > tokens[2]
    };
    let eighths = tokens_at(&[0.125, 0.875]);
    let deleted: Vec<usize> = (0..KEYS)
        .filter(|k| {
            let t = token(&key(*k));
            t <= eighths[0] || t > eighths[1]
        })
        .step_by(10)
        .collect();
    write(&e, KEYS..KEYS + 2000);
    let ms: Vec<_> = deleted
        .iter()
        .map(|k| {
            let mut m = mutation(&key(*k));
            m.partition_deletion = Some(DeletionTime {
                marked_for_delete_at_us: 20,
                local_deletion_time_s: 1,
            });
            m
        })
        .collect();
    e.apply_blocking(&ms).unwrap();
    e.flush(None).unwrap();
    let gc = e.garbage_collect(TABLE, false).unwrap();
    // The first and last pieces, then the tombstones' SSTable (its own tombstones).
    assert_eq!((gc.rewritten, gc.skipped), (3, 2));
    // The pieces lost the deleted partitions; the tombstones, past gc_grace_seconds and with
    // nothing left for them to shadow, went last.
    let outer = (0..KEYS).filter(|k| in_outer_ranges(*k)).count() as u64;
    let deleted = deleted.len() as u64;
    assert_eq!(gc.compaction.partitions_written, outer - deleted + 2000);
    assert_eq!(gc.compaction.tombstones_purged, deleted);
    let live = e.read(TABLE, &scan_all(now())).unwrap().partitions.len() as u64;
    assert_eq!(live, KEYS as u64 + 2000 - deleted);
    e.shutdown().unwrap();
    let _ = std::fs::remove_dir_all(&d);
}
