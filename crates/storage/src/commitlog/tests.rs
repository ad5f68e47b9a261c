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
