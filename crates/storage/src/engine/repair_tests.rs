//! Tests of the storage side of incremental repair (engine/repair.rs, compaction/anticompaction.rs,
//! sstable/repair.rs).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::compaction::{self, CompactionKind};
use crate::sstable::SSTableReader;
use crate::test_support::*;
use crate::types::*;
use crate::{Engine, RepairState};
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

const S1: [u8; 16] = [1; 16];
const S2: [u8; 16] = [2; 16];

/// A table whose size-tiered threshold no test reaches, so background compactions only run
/// when a test asks for them.
fn quiet_def() -> TableDef {
    let mut d = table_def(864_000);
    d.options.compaction = CompactionOptions::SizeTiered {
        min_threshold: 32,
        max_threshold: 32,
    };
    d
}

/// `n` keys, in token order.
fn keys_by_token(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = (0..n)
        .map(|i| format!("{prefix}{i}").into_bytes())
        .collect();
    keys.sort_by_key(|k| token(k));
    keys
}

fn write(e: &Engine, keys: &[Vec<u8>], value: &[u8]) {
    let muts: Vec<Mutation> = keys
        .iter()
        .map(|k| {
            let mut m = mutation(k);
            m.rows.push(row(b"c", vec![set(1, 1, value)]));
            m
        })
        .collect();
    e.apply_blocking(&muts).unwrap();
}

/// Writes `keys` and flushes them into an SSTable; returns it.
fn flushed(e: &Engine, keys: &[Vec<u8>], value: &[u8]) -> Arc<SSTableReader> {
    let before: Vec<u64> = live(e).iter().map(|s| s.gen).collect();
    write(e, keys, value);
    e.flush(Some(TABLE)).unwrap();
    live(e)
        .into_iter()
        .find(|s| !before.contains(&s.gen))
        .unwrap()
}

fn live(e: &Engine) -> Vec<Arc<SSTableReader>> {
    e.table(TABLE).unwrap().sstables.read().to_vec()
}

fn set_state(e: &Engine, s: &SSTableReader, state: RepairState) {
    let t = e.table(TABLE).unwrap();
    let _repair = t.repair_lock.lock();
    s.set_repair_state(state).unwrap();
}

fn keys(r: &ReadResult) -> BTreeSet<Vec<u8>> {
    r.partitions.iter().map(|p| p.key.to_vec()).collect()
}

fn unfiltered_keys(r: &UnfilteredResult) -> BTreeSet<Vec<u8>> {
    r.partitions.iter().map(|m| m.key.to_vec()).collect()
}

/// A read over `sstables` alone.
fn read_over(e: &Engine, sstables: &[Arc<SSTableReader>], q: &ReadQuery) -> ReadResult {
    crate::exclusion::reading_pinned(sstables, || e.read(TABLE, q)).unwrap()
}

fn in_state(e: &Engine, want: RepairState) -> Vec<Arc<SSTableReader>> {
    live(e)
        .into_iter()
        .filter(|s| s.repair_state() == want)
        .collect()
}

fn set_of(keys: &[Vec<u8>]) -> BTreeSet<Vec<u8>> {
    keys.iter().cloned().collect()
}

/// `[token of first, token of last + 1)`.
fn span(keys: &[Vec<u8>]) -> (Option<i64>, Option<i64>) {
    let first = keys.first().map(|k| token(k));
    let last = keys.last().map(|k| token(k) + 1);
    (first, last)
}

#[test]
fn anticompaction_marks_splits_and_leaves_sstables_and_reads_see_the_parts() {
    let dir = tempdir("anticompact");
    let e = open_with(&dir, quiet_def());
    let k = keys_by_token("k", 400);
    let a = flushed(&e, &k[0..20], b"a");
    let b = flushed(&e, &k[20..200], b"b");
    let c = flushed(&e, &k[200..300], b"c");
    set_state(&e, &c, RepairState::Repaired { at_ms: 7 });
    // Left in the memtable: the anticompaction's flush must take it.
    write(&e, &k[300..400], b"m");
    let now = now();
    let before = e.read(TABLE, &scan_all(now)).unwrap();
    assert_eq!(before.partitions.len(), 400);

    // B's pending part is two adjacent ranges, written as one output.
    let ranges = [
        span(&k[0..20]),
        (Some(token(&k[50])), Some(token(&k[100]))),
        (Some(token(&k[100])), Some(token(&k[120]))),
        (Some(token(&k[250])), Some(token(&k[260]))),
        span(&k[300..400]),
    ];
    let st = e.anticompact(TABLE, &ranges, S1).unwrap();
    assert_eq!(st.sstables_marked, 2, "A and the flushed memtable: {st:?}");
    assert_eq!(st.sstables_split, 1, "B: {st:?}");
    assert_eq!(st.bytes_rewritten, b.stats.uncompressed_bytes);

    let gens: HashMap<u64, RepairState> =
        live(&e).iter().map(|s| (s.gen, s.repair_state())).collect();
    assert_eq!(
        gens.get(&a.gen),
        Some(&RepairState::Pending { session: S1 })
    );
    assert_eq!(gens.get(&b.gen), None, "B was rewritten");
    assert_eq!(gens.get(&c.gen), Some(&RepairState::Repaired { at_ms: 7 }));
    let pending = in_state(&e, RepairState::Pending { session: S1 });
    assert_eq!(pending.len(), 3, "A, the flush and B's pending part");
    let unrepaired = in_state(&e, RepairState::Unrepaired);
    assert_eq!(unrepaired.len(), 1, "B's other part");

    let want_pending: BTreeSet<Vec<u8>> = [&k[0..20], &k[50..120], &k[300..400]]
        .into_iter()
        .flat_map(|s| s.iter().cloned())
        .collect();
    let got = e
        .read_unfiltered_pending(TABLE, S1, &scan_all(now), u64::MAX)
        .unwrap();
    assert_eq!(unfiltered_keys(&got), want_pending);
    let rest: BTreeSet<Vec<u8>> = set_of(&k[20..50])
        .into_iter()
        .chain(set_of(&k[120..200]))
        .collect();
    assert_eq!(keys(&read_over(&e, &unrepaired, &scan_all(now))), rest);
    assert_eq!(
        e.read(TABLE, &scan_all(now)).unwrap().partitions,
        before.partitions
    );
    assert!(e
        .read_unfiltered_pending(TABLE, S2, &scan_all(now), u64::MAX)
        .unwrap()
        .partitions
        .is_empty());

    // A second session takes what is left unrepaired of its ranges: B's other part, whole.
    let st = e.anticompact(TABLE, &[span(&k[0..200])], S2).unwrap();
    assert_eq!((st.sstables_marked, st.sstables_split), (1, 0), "{st:?}");
    assert_eq!(
        e.pending_repairs()
            .iter()
            .map(|p| (p.session, p.sstables))
            .collect::<BTreeSet<_>>(),
        [(S1, 3), (S2, 1)].into_iter().collect()
    );

    // Writes after the anticompaction are not the session's: the pin leaves memtables out, on
    // the range and the single-partition paths.
    write(&e, &k[0..1], b"new");
    write(&e, &[b"fresh".to_vec()], b"new");
    let got = e
        .read_unfiltered_pending(TABLE, S1, &scan_all(now), u64::MAX)
        .unwrap();
    assert_eq!(unfiltered_keys(&got), want_pending);
    let one = e
        .read_unfiltered_pending(TABLE, S1, &point(&k[0], now), u64::MAX)
        .unwrap();
    let value = &one.partitions[0].rows[0].cells[0];
    assert_eq!(
        value.op,
        CellOp::Set {
            value: crate::test_support::b(b"a"),
            ttl_s: 0
        }
    );
    let fresh = e
        .read_unfiltered_pending(TABLE, S1, &point(b"fresh", now), u64::MAX)
        .unwrap();
    assert!(fresh.partitions.is_empty());
}

/// The repair set each key prefix was written in.
fn prefix_state(key: &[u8]) -> char {
    char::from(key[0])
}

#[test]
fn compactions_never_mix_repair_sets_and_outputs_keep_the_state() {
    let dir = tempdir("repair-sets");
    let e = open_with(&dir, quiet_def());
    // u: unrepaired, p: pending for S1, q: pending for S2, r: repaired (differing times).
    for (prefix, state) in [
        ('u', RepairState::Unrepaired),
        ('p', RepairState::Pending { session: S1 }),
        ('q', RepairState::Pending { session: S2 }),
        ('r', RepairState::Repaired { at_ms: 0 }),
    ] {
        for i in 0..5i64 {
            let keys = keys_by_token(&format!("{prefix}{i}-"), 20);
            let s = flushed(&e, &keys, b"v");
            let state = match state {
                RepairState::Repaired { .. } => RepairState::Repaired { at_ms: 100 + i },
                s => s,
            };
            set_state(&e, &s, state);
        }
    }
    let t = e.table(TABLE).unwrap();
    t.def.write().options.compaction = CompactionOptions::SizeTiered {
        min_threshold: 4,
        max_threshold: 32,
    };
    let now = now();
    let check = |what: &str| {
        for s in live(&e) {
            let want = match s.repair_state() {
                RepairState::Unrepaired => 'u',
                RepairState::Pending { session: S1 } => 'p',
                RepairState::Pending { .. } => 'q',
                RepairState::Repaired { .. } => 'r',
            };
            for key in keys(&read_over(&e, std::slice::from_ref(&s), &scan_all(now))) {
                assert_eq!(prefix_state(&key), want, "{what}: gen {}", s.gen);
            }
        }
    };
    // The background threads may take some of these compactions (flushes asked for them).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while live(&e).len() > 4 {
        assert!(std::time::Instant::now() < deadline, "one SSTable per set");
        if e.run_background_compaction(TABLE).unwrap().is_none() {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        check("background");
    }
    assert_eq!(e.run_background_compaction(TABLE).unwrap(), None);
    assert_eq!(
        in_state(&e, RepairState::Repaired { at_ms: 100 }).len(),
        1,
        "the earliest repair time"
    );

    flushed(&e, &keys_by_token("u9-", 5), b"v");
    let p = flushed(&e, &keys_by_token("p9-", 5), b"v");
    set_state(&e, &p, RepairState::Pending { session: S1 });
    let st = e.compact(TABLE).unwrap();
    assert_eq!(st.input_sstables, 6);
    check("major");
    assert_eq!(live(&e).len(), 4);
    assert_eq!(e.read(TABLE, &scan_all(now)).unwrap().partitions.len(), 410);

    e.garbage_collect(TABLE, false).unwrap();
    check("garbagecollect");
    assert_eq!(in_state(&e, RepairState::Pending { session: S2 }).len(), 1);
}

#[test]
fn a_repair_finalized_while_its_sstables_compact_leaves_the_outputs_repaired() {
    let dir = tempdir("finalize-during-compaction");
    let e = open_with(&dir, quiet_def());
    let k = keys_by_token("k", 40);
    flushed(&e, &k[..20], b"v");
    flushed(&e, &k[20..], b"v");
    e.anticompact(TABLE, &[(None, None)], S1).unwrap();
    let t = e.table(TABLE).unwrap();
    // The compaction has its inputs (and would have chosen them as pending) when the session
    // finalizes: the outputs take the state the inputs have when they are installed.
    let inputs = compaction::reserve(&t, live(&e));
    assert_eq!(e.finalize_repair(S1, 42).unwrap(), 2);
    let st = compaction::compact_sstables(
        &e.background,
        &t,
        inputs,
        CompactionKind::Background,
        0,
        u64::MAX,
    )
    .unwrap();
    assert_eq!(st.output_sstables, 1);
    assert_eq!(
        live(&e)[0].repair_state(),
        RepairState::Repaired { at_ms: 42 }
    );
    assert!(e.pending_repairs().is_empty());
}

#[test]
fn anticompaction_waits_for_a_compaction_holding_its_sstables_and_takes_the_outputs() {
    let dir = tempdir("anticompact-waits");
    let e = open_with(&dir, quiet_def());
    let k = keys_by_token("k", 40);
    flushed(&e, &k[..20], b"v");
    flushed(&e, &k[20..], b"v");
    let t = e.table(TABLE).unwrap();
    let held = compaction::reserve(&t, live(&e));
    assert_eq!(held.len(), 2);
    let compactor = {
        let (e, t) = (e.clone(), t.clone());
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            compaction::compact_sstables(
                &e.background,
                &t,
                held,
                CompactionKind::Background,
                0,
                u64::MAX,
            )
            .unwrap()
        })
    };
    let st = e.anticompact(TABLE, &[(None, None)], S1).unwrap();
    let compacted = compactor.join().unwrap();
    assert_eq!(st.sstables_marked, 1, "{st:?}");
    let pending = in_state(&e, RepairState::Pending { session: S1 });
    assert_eq!(pending.len(), 1);
    assert_eq!(compacted.output_generations, vec![pending[0].gen]);
    assert_eq!(live(&e).len(), 1);
}

fn sidecars(dir: &Path) -> BTreeSet<String> {
    files_ending(dir, "-Repair.txt")
        .into_iter()
        .chain(files_ending(dir, "-Repair.txt.tmp"))
        .collect()
}

#[test]
fn finalize_and_release_touch_one_session_are_idempotent_and_survive_a_restart() {
    let dir = tempdir("finalize-release");
    let k = keys_by_token("k", 60);
    let (a, b, c) = {
        let e = open_with(&dir, quiet_def());
        let a = flushed(&e, &k[..20], b"a");
        let b = flushed(&e, &k[20..40], b"b");
        let c = flushed(&e, &k[40..], b"c");
        e.anticompact(TABLE, &[span(&k[..20])], S1).unwrap();
        e.anticompact(TABLE, &[span(&k[20..40])], S2).unwrap();
        assert_eq!(e.pending_repairs().len(), 2);
        assert_eq!(e.finalize_repair(S1, 1234).unwrap(), 1);
        assert_eq!(e.finalize_repair(S1, 1234).unwrap(), 0);
        assert_eq!(b.repair_state(), RepairState::Pending { session: S2 });
        assert_eq!(c.repair_state(), RepairState::Unrepaired);
        let pending = e.pending_repairs();
        assert_eq!(pending.len(), 1);
        assert_eq!((pending[0].table, pending[0].session), (TABLE, S2));
        assert_eq!(pending[0].sstables, 1);
        assert_eq!(pending[0].bytes, b.disk_bytes());
        e.shutdown().unwrap();
        (a.gen, b.gen, c.gen)
    };
    let e = open_with(&dir, quiet_def());
    let states: HashMap<u64, RepairState> =
        live(&e).iter().map(|s| (s.gen, s.repair_state())).collect();
    assert_eq!(states[&a], RepairState::Repaired { at_ms: 1234 });
    assert_eq!(states[&b], RepairState::Pending { session: S2 });
    assert_eq!(states[&c], RepairState::Unrepaired);
    assert_eq!(
        sidecars(&dir),
        [
            format!("hl-1-{a}-Repair.txt"),
            format!("hl-1-{b}-Repair.txt")
        ]
        .into_iter()
        .collect()
    );

    // The repaired SSTable's dump shows its state.
    let data = live(&e)
        .into_iter()
        .find(|s| s.gen == a)
        .unwrap()
        .component_paths()[1]
        .clone();
    let mut out = Vec::new();
    crate::dump_sstable(&data, &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains("Repaired at: 1234\nPending repair: --\n"),
        "{out}"
    );

    assert_eq!(e.release_repair(S2).unwrap(), 1);
    assert_eq!(e.release_repair(S2).unwrap(), 0);
    assert_eq!(e.finalize_repair(S2, 9).unwrap(), 0);
    assert_eq!(in_state(&e, RepairState::Unrepaired).len(), 2);
    assert_eq!(
        sidecars(&dir),
        [format!("hl-1-{a}-Repair.txt")].into_iter().collect()
    );

    // A compaction deletes its input's sidecar with it; its output has its own.
    let st = e.compact(TABLE).unwrap();
    let repaired = in_state(&e, RepairState::Repaired { at_ms: 1234 });
    assert_eq!(repaired.len(), 1);
    assert!(st.output_generations.contains(&repaired[0].gen));
    assert_eq!(
        sidecars(&dir),
        [format!("hl-1-{}-Repair.txt", repaired[0].gen)]
            .into_iter()
            .collect()
    );
}

#[test]
fn repaired_bytes_and_percent_repaired_follow_the_states() {
    let dir = tempdir("percent-repaired");
    let e = open_with(&dir, quiet_def());
    let st = e.table_stats(TABLE);
    assert_eq!(st.percent_repaired, 100.0, "no SSTable");
    let k = keys_by_token("k", 40);
    let a = flushed(&e, &k[..10], b"a");
    let b = flushed(&e, &k[10..], b"b");
    let (a_bytes, b_bytes) = (a.stats.uncompressed_bytes, b.stats.uncompressed_bytes);
    let st = e.table_stats(TABLE);
    assert_eq!(
        (
            st.unrepaired_bytes,
            st.pending_repair_bytes,
            st.repaired_bytes
        ),
        (a_bytes + b_bytes, 0, 0)
    );
    assert_eq!(st.percent_repaired, 0.0);
    e.anticompact(TABLE, &[span(&k[..10])], S1).unwrap();
    let st = e.table_stats(TABLE);
    assert_eq!(
        (
            st.unrepaired_bytes,
            st.pending_repair_bytes,
            st.repaired_bytes
        ),
        (b_bytes, a_bytes, 0)
    );
    assert_eq!(st.percent_repaired, 0.0);
    e.finalize_repair(S1, 5).unwrap();
    let st = e.table_stats(TABLE);
    assert_eq!(
        (
            st.unrepaired_bytes,
            st.pending_repair_bytes,
            st.repaired_bytes
        ),
        (b_bytes, 0, a_bytes)
    );
    let want = a_bytes as f64 / (a_bytes + b_bytes) as f64 * 100.0;
    assert!((st.percent_repaired - want).abs() < 1e-9, "{st:?}");
}

/// Flushes one partition deletion of `key`, past gc grace (the table's is 0). Where purging is
/// allowed, a background tombstone compaction may already have dropped it when this returns.
fn flush_deletion(e: &Engine, key: &[u8]) {
    let mut m = mutation(key);
    m.partition_deletion = Some(DeletionTime {
        marked_for_delete_at_us: 2,
        local_deletion_time_s: now() - 10,
    });
    e.apply_blocking(&[m]).unwrap();
    e.flush(Some(TABLE)).unwrap();
}

#[test]
fn only_purge_repaired_tombstones_keeps_them_until_their_sstable_is_repaired() {
    let dir = tempdir("only-purge-repaired");
    let mut def = table_def(0);
    def.options.only_purge_repaired_tombstones = true;
    let e = crate::test_support::open_with(&dir, def);
    flush_deletion(&e, b"p");
    e.garbage_collect(TABLE, false).unwrap();
    e.compact(TABLE).unwrap();
    let unrepaired = live(&e);
    assert_eq!(unrepaired.len(), 1);
    assert_eq!(unrepaired[0].stats.tombstones, 1, "purged while unrepaired");
    e.anticompact(TABLE, &[(None, None)], S1).unwrap();
    e.finalize_repair(S1, 1234).unwrap();
    e.garbage_collect(TABLE, false).unwrap();
    assert!(
        live(&e).iter().all(|s| s.stats.tombstones == 0),
        "a repaired tombstone past gc grace is purged"
    );
    // Without the option, an unrepaired one goes at once, as before.
    let dir = tempdir("purge-unrepaired");
    let e = crate::test_support::open_with(&dir, table_def(0));
    flush_deletion(&e, b"p");
    e.garbage_collect(TABLE, false).unwrap();
    assert!(live(&e).iter().all(|s| s.stats.tombstones == 0));
}
