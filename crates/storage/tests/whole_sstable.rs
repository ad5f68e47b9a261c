//! Whole-SSTable streaming's storage side: staging on the sender, receipt with checksums and
//! import on the receiver, and the partition read that leaves the sent generations out.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

mod common;
use common::*;
use helenus_storage::*;

const SESSION: &str = "6f1c1f3e-2b7a-4c59-9a39-3a1f0d7c2e11";

fn write_rows(e: &Engine, keys: std::ops::Range<u32>) {
    for k in keys {
        let mut m = mutation(format!("k{k}").as_bytes());
        m.rows.push(row(b"c", vec![set(1, 10, b"v")]));
        e.apply_blocking(&[m]).unwrap();
    }
}

/// Copies every staged component of `w` from `sender` into the receiver's staging, in small
/// pieces as the network does; `corrupt` flips one byte of Data.db on the way.
fn transfer(
    sender: &Engine,
    receiver: &Engine,
    w: &WholeSSTable,
    corrupt: bool,
) -> std::path::PathBuf {
    let dir = receiver.receive_dir(TABLE, SESSION, w.gen).unwrap();
    for c in &w.components {
        let mut offset = 0u64;
        loop {
            let mut chunk = sender
                .read_staged(TABLE, SESSION, w.gen, &c.name, offset, 1000)
                .unwrap();
            if chunk.is_empty() {
                break;
            }
            if corrupt && offset == 0 && c.name == "Data.db" {
                let mid = chunk.len() / 2;
                chunk[mid] ^= 0x40;
            }
            append_received(&dir, w.gen, &c.name, &chunk).unwrap();
            offset += chunk.len() as u64;
        }
        assert_eq!(offset, c.size);
    }
    dir
}

fn scan_count(e: &Engine) -> usize {
    e.read(TABLE, &scan_all(now())).unwrap().partitions.len()
}

#[test]
fn an_sstable_inside_the_range_moves_whole_and_reads_back() {
    let (sd, rd) = (tempdir("whole-send"), tempdir("whole-recv"));
    let (sender, receiver) = (open(&sd, 864000), open(&rd, 864000));
    write_rows(&sender, 0..50);
    sender.flush(None).unwrap();
    // The whole ring, (MIN, MAX]: every SSTable is inside (no key hashes to MIN).
    let staged = sender
        .stage_whole_sstables(TABLE, i64::MIN, i64::MAX, SESSION)
        .unwrap();
    assert_eq!(staged.len(), 1);
    // Newer data in the memtable is what the partition stream still carries.
    write_rows(&sender, 50..60);
    let gens: Vec<u64> = staged.iter().map(|w| w.gen).collect();
    let rest = sender
        .read_unfiltered_excluding(TABLE, &scan_all(now()), u64::MAX, &gens)
        .unwrap();
    assert_eq!(rest.partitions.len(), 10);
    // Without the exclusion every partition is read (the thread's exclusion was cleared).
    let all = sender
        .read_unfiltered(TABLE, &scan_all(now()), u64::MAX)
        .unwrap();
    assert_eq!(all.partitions.len(), 60);

    let dir = transfer(&sender, &receiver, &staged[0], false);
    receiver.import_received(TABLE, &dir, &staged[0]).unwrap();
    assert!(!dir.exists());
    assert_eq!(scan_count(&receiver), 50);
    sender.release_staged(TABLE, SESSION).unwrap();
    // The sender still has its own files, and the receiver's survive a restart.
    assert_eq!(scan_count(&sender), 60);
    drop(receiver);
    let receiver = open(&rd, 864000);
    assert_eq!(scan_count(&receiver), 50);
}

#[test]
fn a_corrupted_byte_fails_the_import_and_leaves_nothing() {
    let (sd, rd) = (tempdir("whole-bad-send"), tempdir("whole-bad-recv"));
    let (sender, receiver) = (open(&sd, 864000), open(&rd, 864000));
    write_rows(&sender, 0..50);
    sender.flush(None).unwrap();
    let staged = sender
        .stage_whole_sstables(TABLE, i64::MIN, i64::MAX, SESSION)
        .unwrap();
    let dir = transfer(&sender, &receiver, &staged[0], true);
    let err = receiver
        .import_received(TABLE, &dir, &staged[0])
        .unwrap_err();
    assert!(err.to_string().contains("differs from the sender"), "{err}");
    assert!(!dir.exists());
    assert_eq!(scan_count(&receiver), 0);
}

#[test]
fn only_sstables_wholly_inside_the_range_are_staged() {
    assert!(span_inside(5, 10, 0, 10));
    assert!(!span_inside(0, 10, 0, 10));
    assert!(!span_inside(5, 11, 0, 10));
    // Wrapping (100, MAX] + [MIN, -100].
    assert!(span_inside(200, 300, 100, -100));
    assert!(span_inside(-500, -100, 100, -100));
    assert!(!span_inside(-500, 300, 100, -100));
    let sd = tempdir("whole-partial");
    let sender = open(&sd, 864000);
    write_rows(&sender, 0..50);
    sender.flush(None).unwrap();
    let staged = sender.stage_whole_sstables(TABLE, 0, 1, SESSION).unwrap();
    assert!(staged.is_empty());
    assert!(sender
        .read_staged(TABLE, "../../etc", 1, "Data.db", 0, 10)
        .is_err());
    assert!(sender
        .read_staged(TABLE, SESSION, 1, "../x", 0, 10)
        .is_err());
}

#[test]
fn a_page_without_the_sent_sstables_keeps_tombstones_past_gc_grace() {
    // gc_grace 0: a plain unfiltered read purges the deletion with the row it shadows.
    let sd = tempdir("whole-tombstone");
    let e = open(&sd, 0);
    write_rows(&e, 0..1);
    e.flush(None).unwrap();
    let staged = e
        .stage_whole_sstables(TABLE, i64::MIN, i64::MAX, SESSION)
        .unwrap();
    let mut m = mutation(b"k0");
    m.partition_deletion = Some(DeletionTime {
        marked_for_delete_at_us: 20,
        local_deletion_time_s: now() - 10,
    });
    e.apply_blocking(&[m]).unwrap();
    let all = e
        .read_unfiltered(TABLE, &scan_all(now()), u64::MAX)
        .unwrap();
    assert!(all.partitions.is_empty());
    // Without the SSTable (sent whole, holding the row) the deletion must still go.
    let gens: Vec<u64> = staged.iter().map(|w| w.gen).collect();
    let rest = e
        .read_unfiltered_excluding(TABLE, &scan_all(now()), u64::MAX, &gens)
        .unwrap();
    assert_eq!(rest.partitions.len(), 1);
    assert!(rest.partitions[0].partition_deletion.is_some());
}

#[test]
fn a_leveled_compaction_ends_its_outputs_at_the_ring_tokens() {
    let tokens = [-6_000_000_000_000_000_000, 0, 3_000_000_000_000_000_000];
    for (split, leveled) in [(true, true), (false, true), (true, false)] {
        let d = tempdir("whole-ring-split");
        let mut def = table_def(864000);
        if leveled {
            def.options.compaction = CompactionOptions::Leveled {
                sstable_size_in_mb: 160,
                fanout_size: 10,
            };
        }
        let e = open_with(&d, def);
        if split {
            e.set_ring_tokens(tokens.to_vec());
        }
        write_rows(&e, 0..300);
        e.flush(None).unwrap();
        write_rows(&e, 300..600);
        e.flush(None).unwrap();
        e.compact(TABLE).unwrap();
        let count = e.table_stats(TABLE).sstable_count;
        let whole = staged_per_range(&e, &tokens);
        assert_eq!(scan_count(&e), 600);
        if split && leveled {
            // An output per ring range holding keys, each wholly inside it.
            assert!(
                count >= 2 && whole == count,
                "split: {count} SSTables, {whole} whole"
            );
        } else {
            assert_eq!((count, whole), (1, 0), "{count} SSTables, {whole} whole");
        }
    }
}
