use super::*;

const TABLE: TableId = [7; 16];
const SEGMENT_BYTES: u64 = 1 << 20;

fn entry(i: u32) -> Vec<u8> {
    let mut e = vec![(i % 251) as u8; 100 << 10];
    e[..4].copy_from_slice(&i.to_be_bytes());
    e
}

/// `entry(i)` as `append` takes it: behind the room for its header.
fn logged(i: u32) -> Vec<u8> {
    let mut e = Commitlog::new_entry(100 << 10);
    e.extend_from_slice(&entry(i));
    e
}

/// Every entry of every segment in the directory, in segment order.
fn replayed(dir: &Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for id in list_segments(dir).unwrap() {
        let (entries, torn) = read_segment(&segment_path(dir, id)).unwrap();
        assert!(!torn, "segment {id} has a bad tail");
        out.extend(entries);
    }
    out
}

/// Waits (bounded) until the syncer has put a spare segment in place.
fn wait_for_spare(log: &Commitlog) -> u64 {
    for _ in 0..500 {
        if let Some((spare, _, _)) = &log.state.lock().spare {
            return spare.id;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no spare segment after 5 s");
}

#[test]
fn rotations_take_the_prepared_spare_and_every_acknowledged_entry_replays() {
    let dir = crate::test_support::tempdir("commitlog-spare");
    let log = Commitlog::open(&dir, CommitlogSync::Batch, SEGMENT_BYTES).unwrap();
    let mut ids = Vec::new();
    let mut written = Vec::new();
    for i in 0..40u32 {
        if i > 0 && i % 10 == 0 {
            let spare = wait_for_spare(&log);
            let (seq, (segment, _)) = log.append(&mut logged(i), &[TABLE]).unwrap();
            log.wait_durable_blocking(seq).unwrap();
            // 10 entries of 100 KiB fill a 1 MiB segment: the 11th rotates into the spare.
            assert_eq!(segment, spare, "entry {i}");
        } else {
            let (seq, _) = log.append(&mut logged(i), &[TABLE]).unwrap();
            log.wait_durable_blocking(seq).unwrap();
        }
        ids.push(log.position().0);
        written.push(entry(i));
    }
    assert!(ids.windows(2).all(|w| w[0] <= w[1]), "{ids:?}");
    assert_eq!(replayed(&dir), written);
    log.shutdown().unwrap();
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_sync_covers_the_segments_rotated_away_before_it() {
    let dir = crate::test_support::tempdir("commitlog-retired");
    let log = Commitlog::open(
        &dir,
        CommitlogSync::Periodic { period_ms: 60_000 },
        SEGMENT_BYTES,
    )
    .unwrap();
    for i in 0..25u32 {
        log.append(&mut logged(i), &[TABLE]).unwrap();
    }
    // Two rotations; the periodic syncer (woken by each) may or may not have run yet.
    log.sync_now().unwrap();
    assert!(log.state.lock().retired.is_empty());
    assert_eq!(*log.synced_tx.borrow(), 25);
    log.shutdown().unwrap();
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn flushed_segments_are_deleted_and_a_clean_close_leaves_no_spare_behind() {
    let dir = crate::test_support::tempdir("commitlog-clean");
    let log = Commitlog::open(&dir, CommitlogSync::Batch, SEGMENT_BYTES).unwrap();
    for i in 0..25u32 {
        let (seq, _) = log.append(&mut logged(i), &[TABLE]).unwrap();
        log.wait_durable_blocking(seq).unwrap();
    }
    let current = log.position().0;
    wait_for_spare(&log);
    log.discard(TABLE, log.position());
    let left = list_segments(&dir).unwrap();
    assert!(left.iter().all(|id| *id >= current), "{left:?}");
    log.shutdown().unwrap();
    assert!(log.close_clean());
    assert_eq!(list_segments(&dir).unwrap(), Vec::<u64>::new());
    let _ = fs::remove_dir_all(&dir);
}

fn periodic(dir: &Path) -> Arc<Commitlog> {
    Commitlog::open(
        dir,
        CommitlogSync::Periodic { period_ms: 60_000 },
        SEGMENT_BYTES,
    )
    .unwrap()
}

/// A small entry (`logged` makes 100 KiB ones, ten to a segment).
fn small(i: u32) -> Vec<u8> {
    let mut e = Commitlog::new_entry(8);
    e.extend_from_slice(&i.to_be_bytes());
    e
}

#[test]
fn deferred_entries_reach_the_file_only_when_written_and_then_all_in_order() {
    let dir = crate::test_support::tempdir("commitlog-deferred");
    let log = periodic(&dir);
    let current = segment_path(&dir, log.position().0);
    let ((), mut unwritten) = deferring_appends(|| {
        for i in 0..5u32 {
            log.append(&mut small(i), &[TABLE]).unwrap();
        }
    });
    // Still buffered: what a kill -9 now would leave is an empty segment, and nobody was told.
    assert_eq!(read_segment(&current).unwrap().0.len(), 0);
    assert!(!unwritten.is_empty());
    unwritten.write().unwrap();
    let entries = read_segment(&current).unwrap().0;
    let expected: Vec<Vec<u8>> = (0..5u32).map(|i| i.to_be_bytes().to_vec()).collect();
    assert_eq!(entries, expected);
    // Outside `deferring_appends` an append is in the file when it returns.
    log.append(&mut small(5), &[TABLE]).unwrap();
    assert_eq!(read_segment(&current).unwrap().0.len(), 6);
    log.shutdown().unwrap();
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn an_immediate_append_behind_deferred_ones_writes_them_first() {
    let dir = crate::test_support::tempdir("commitlog-deferred-gap");
    let log = periodic(&dir);
    let current = segment_path(&dir, log.position().0);
    let ((), _unwritten) = deferring_appends(|| {
        log.append(&mut small(0), &[TABLE]).unwrap();
        log.append(&mut small(1), &[TABLE]).unwrap();
    });
    // Another request's append, not deferred: written alone, it would follow a gap of zeros
    // that replay reads as the end of the log, and be lost though acknowledged.
    log.append(&mut small(2), &[TABLE]).unwrap();
    let (entries, torn) = read_segment(&current).unwrap();
    assert!(!torn);
    assert_eq!(entries.len(), 3);
    log.shutdown().unwrap();
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_rotation_writes_the_buffered_entries_to_the_segment_they_belong_to() {
    let dir = crate::test_support::tempdir("commitlog-deferred-rotate");
    let log = periodic(&dir);
    let first = log.position().0;
    let ((), mut unwritten) = deferring_appends(|| {
        // Ten 100 KiB entries fill the first segment; the eleventh starts the next.
        for i in 0..11u32 {
            log.append(&mut logged(i), &[TABLE]).unwrap();
        }
    });
    assert_ne!(log.position().0, first);
    assert_eq!(
        read_segment(&segment_path(&dir, first)).unwrap().0.len(),
        10
    );
    unwritten.write().unwrap();
    let written: Vec<Vec<u8>> = (0..11).map(entry).collect();
    assert_eq!(replayed(&dir), written);
    log.shutdown().unwrap();
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn shutdown_writes_what_is_buffered_and_batch_mode_never_defers() {
    let dir = crate::test_support::tempdir("commitlog-deferred-shutdown");
    let log = periodic(&dir);
    let current = segment_path(&dir, log.position().0);
    let (_, _unwritten) = deferring_appends(|| log.append(&mut small(0), &[TABLE]).unwrap());
    log.shutdown().unwrap();
    assert_eq!(read_segment(&current).unwrap().0.len(), 1);
    let _ = fs::remove_dir_all(&dir);

    let dir = crate::test_support::tempdir("commitlog-deferred-batch");
    let log = Commitlog::open(&dir, CommitlogSync::Batch, SEGMENT_BYTES).unwrap();
    let current = segment_path(&dir, log.position().0);
    let (_, unwritten) = deferring_appends(|| log.append(&mut small(0), &[TABLE]).unwrap());
    assert!(unwritten.is_empty());
    assert_eq!(read_segment(&current).unwrap().0.len(), 1);
    log.shutdown().unwrap();
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_panic_inside_deferring_appends_does_not_leave_the_thread_deferring() {
    let outcome = std::panic::catch_unwind(|| deferring_appends(|| panic!("statement failed")));
    assert!(outcome.is_err());
    assert!(!deferred::deferring());
}
