//! Which SSTables each strategy picks, on descriptions alone.

use super::*;

const MIB: u64 = 1 << 20;

fn sst(gen: u64, data_bytes: u64) -> SSTableInfo {
    SSTableInfo {
        gen,
        data_bytes,
        level: 0,
        min_token: i64::MIN,
        max_token: i64::MAX,
        max_timestamp_us: 0,
        run: 0,
    }
}

fn at_level(gen: u64, level: u32, data_bytes: u64, tokens: (i64, i64)) -> SSTableInfo {
    SSTableInfo {
        level,
        min_token: tokens.0,
        max_token: tokens.1,
        ..sst(gen, data_bytes)
    }
}

fn written_at(gen: u64, max_timestamp_us: i64) -> SSTableInfo {
    SSTableInfo {
        max_timestamp_us,
        ..sst(gen, 10 * MIB)
    }
}

fn stcs(min_threshold: usize, max_threshold: usize) -> SizeTiered {
    SizeTiered {
        min_threshold,
        max_threshold,
    }
}

#[test]
fn size_tiered_waits_for_min_threshold_similar_sstables() {
    let three: Vec<_> = (1..=3).map(|g| sst(g, 100 * MIB)).collect();
    assert!(stcs(4, 32).choose(&three, &three).inputs.is_empty());
    let mut four = three.clone();
    four.push(sst(4, 110 * MIB));
    let c = stcs(4, 32).choose(&four, &four);
    assert_eq!(c.inputs, vec![1, 2, 3, 4]);
    assert_eq!((c.level, c.max_output_bytes), (0, UNSPLIT));
}

#[test]
fn size_tiered_buckets_by_size_and_prefers_the_smallest_bucket() {
    // Two buckets: around 100 MiB and around 1 GiB; under 50 MiB everything is one bucket.
    let set = vec![
        sst(1, 1000 * MIB),
        sst(2, 100 * MIB),
        sst(3, 1100 * MIB),
        sst(4, 120 * MIB),
        sst(5, 900 * MIB),
        sst(6, 90 * MIB),
    ];
    assert_eq!(stcs(2, 32).choose(&set, &set).inputs, vec![6, 2, 4]);
    // A size outside every bucket's range starts its own: 100 and 300 MiB never group.
    let apart = vec![sst(1, 100 * MIB), sst(2, 300 * MIB)];
    assert!(stcs(2, 32).choose(&apart, &apart).inputs.is_empty());
    let small = vec![sst(1, MIB), sst(2, 40 * MIB)];
    assert_eq!(stcs(2, 32).choose(&small, &small).inputs, vec![1, 2]);
}

#[test]
fn size_tiered_takes_at_most_max_threshold() {
    let set: Vec<_> = (1..=10).map(|g| sst(g, MIB + g)).collect();
    assert_eq!(stcs(4, 6).choose(&set, &set).inputs, vec![1, 2, 3, 4, 5, 6]);
    // Thresholds below two still need a pair.
    let one = vec![sst(1, MIB)];
    assert!(stcs(0, 0).choose(&one, &one).inputs.is_empty());
}

/// Pending tasks as `nodetool compactionstats` counts them: Cassandra's size-tiered estimate is
/// ceil(bucket / max_threshold) per bucket of at least min_threshold, and so is this.
#[test]
fn startable_now_counts_what_the_strategy_would_run_at_once() {
    let small: Vec<_> = (1..=10).map(|g| sst(g, MIB + g)).collect();
    assert_eq!(startable_now(&stcs(4, 32), small.clone(), &small), 1);
    assert_eq!(
        startable_now(&stcs(4, 4), small.clone(), &small),
        2,
        "4 + 4, two left over"
    );
    assert_eq!(
        startable_now(&stcs(4, 5), small.clone(), &small),
        2,
        "5 + 5"
    );
    let three = small[..3].to_vec();
    assert_eq!(startable_now(&stcs(4, 32), three.clone(), &three), 0);
    // Two buckets (about 1 and 100 MiB), each over min_threshold: two tasks.
    let mut two: Vec<_> = small[..4].to_vec();
    two.extend((11..=14).map(|g| sst(g, 100 * MIB + g)));
    assert_eq!(startable_now(&stcs(4, 32), two.clone(), &two), 2);
    // What a running compaction holds is not pending: with four of the small ones taken, only
    // the large bucket is left.
    let free: Vec<_> = two[4..].to_vec();
    assert_eq!(startable_now(&stcs(4, 32), free, &two), 1);
    let l = Leveled {
        sstable_bytes: 160 * MIB,
        fanout: 10,
    };
    let l0: Vec<_> = (1..=3).map(|g| at_level(g, 0, MIB, (0, 100))).collect();
    assert_eq!(
        startable_now(&l, l0.clone(), &l0),
        0,
        "under the L0 trigger"
    );
    let mut l0 = l0;
    l0.push(at_level(4, 0, MIB, (0, 10)));
    assert_eq!(startable_now(&l, l0.clone(), &l0), 1);
}

#[test]
fn leveled_moves_l0_to_l1_with_the_l1_sstables_it_overlaps() {
    let l = Leveled {
        sstable_bytes: 160 * MIB,
        fanout: 10,
    };
    let mut set: Vec<_> = (1..=3).map(|g| at_level(g, 0, MIB, (0, 100))).collect();
    set.push(at_level(10, 1, MIB, (50, 60)));
    set.push(at_level(11, 1, MIB, (200, 300)));
    // Under the L0 trigger and no level over budget: nothing.
    assert_eq!(l.choose(&set, &set).inputs, Vec::<u64>::new());
    set.push(at_level(4, 0, MIB, (0, 10)));
    let c = l.choose(&set, &set);
    assert_eq!(c.inputs, vec![1, 2, 3, 4, 10]);
    assert_eq!((c.level, c.max_output_bytes), (1, 160 * MIB));
    assert_eq!(l.min_inputs(), 1);
}

#[test]
fn leveled_promotes_the_oldest_sstable_of_a_level_over_budget() {
    let l = Leveled {
        sstable_bytes: MIB,
        fanout: 10,
    };
    // L1's budget is 10 MiB: 12 MiB is over it.
    let set = vec![
        at_level(7, 1, 6 * MIB, (0, 100)),
        at_level(5, 1, 6 * MIB, (200, 300)),
        at_level(8, 2, MIB, (250, 260)),
        at_level(9, 2, MIB, (0, 50)),
    ];
    let c = l.choose(&set, &set);
    assert_eq!((c.inputs, c.level), (vec![5, 8], 2));
    // The level's size counts SSTables a running compaction holds, but only free ones move.
    let free: Vec<_> = set.iter().filter(|s| s.gen != 5).cloned().collect();
    assert_eq!(l.choose(&free, &set).inputs, vec![7, 9]);
}

#[test]
fn time_window_compacts_old_windows_whole_and_the_newest_size_tiered() {
    let t = TimeWindow::new("HOURS", 1);
    let hour = 3_600_000_000i64;
    // Newest window (hour 5) has three SSTables: under the size-tiered minimum of four.
    let mut set = vec![
        written_at(1, 2 * hour + 1),
        written_at(2, 2 * hour + 2),
        written_at(3, 3 * hour),
        written_at(4, 5 * hour),
        written_at(5, 5 * hour + 1),
        written_at(6, 5 * hour + 2),
    ];
    assert_eq!(t.choose(&set, &set).inputs, vec![1, 2]);
    set.push(written_at(7, 5 * hour + 3));
    assert_eq!(t.choose(&set, &set).inputs, vec![4, 5, 6, 7]);
    // A window with one SSTable has nothing to merge.
    let lone = vec![written_at(1, hour), written_at(2, 3 * hour)];
    assert!(t.choose(&lone, &lone).inputs.is_empty());
}

#[test]
fn time_window_units() {
    assert_eq!(TimeWindow::new("MINUTES", 5).window_us, 300_000_000);
    assert_eq!(TimeWindow::new("hours", 2).window_us, 7_200_000_000);
    assert_eq!(TimeWindow::new("DAYS", 0).window_us, 86_400_000_000);
}

fn piece(gen: u64, run: u64, data_bytes: u64) -> SSTableInfo {
    SSTableInfo {
        run,
        ..sst(gen, data_bytes)
    }
}

#[test]
fn size_tiered_buckets_the_pieces_of_a_run_as_one_sstable() {
    // Four 100 MiB pieces of one run and three 100 MiB SSTables alone: the run is one 400 MiB
    // SSTable, so the three wait for a fourth.
    let mut set: Vec<_> = (1..=4).map(|g| piece(g, 77, 100 * MIB)).collect();
    set.extend((5..=7).map(|g| sst(g, 100 * MIB)));
    assert!(stcs(4, 32).choose(&set, &set).inputs.is_empty());
    set.push(sst(8, 100 * MIB));
    let mut c = stcs(4, 32).choose(&set, &set).inputs;
    c.sort_unstable();
    assert_eq!(c, vec![5, 6, 7, 8]);
    // Three runs near 400 MiB beside it: the bucket takes every piece of each.
    let mut set: Vec<_> = (1..=4).map(|g| piece(g, 77, 100 * MIB)).collect();
    set.extend((5..=6).map(|g| piece(g, 78, 200 * MIB)));
    set.extend([sst(7, 380 * MIB), sst(8, 420 * MIB)]);
    let mut c = stcs(4, 32).choose(&set, &set).inputs;
    c.sort_unstable();
    assert_eq!(c, (1..=8).collect::<Vec<_>>());
    // max_threshold counts runs, not pieces.
    let mut c = stcs(2, 2).choose(&set, &set).inputs;
    c.sort_unstable();
    assert!(c.len() >= 3, "two runs, one of them split: {c:?}");
}
