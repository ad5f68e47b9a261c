#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use crate::partition::{digest_bytes, Partition, TableLayout};
use crate::test_support::*;
use crate::types::*;
use crate::Engine;

type Scanned = Vec<(i64, Vec<u8>, Vec<u8>)>;

fn scan(e: &Engine, start: PartitionBound, end: PartitionBound, now_s: i64) -> Scanned {
    let mut out = Vec::new();
    e.scan_digest_bytes(TABLE, (&start, &end), now_s, None, &mut |t, k, b| {
        out.push((t, k.to_vec(), b.to_vec()));
        true
    })
    .unwrap();
    out
}

/// What the paged unfiltered read gives for the whole table, as digest bytes.
fn read_all(e: &Engine, layout: &TableLayout, now_s: i64) -> Scanned {
    let r = e
        .read_unfiltered(TABLE, &scan_all(now_s), u64::MAX)
        .unwrap();
    let mut buf = Vec::new();
    r.partitions
        .iter()
        .map(|m| {
            let p = Partition::from_mutation(m, layout).unwrap();
            digest_bytes(&p, &mut buf);
            (m.token, m.key.to_vec(), buf.clone())
        })
        .collect()
}

fn deletion(ts: i64, at: i64) -> DeletionTime {
    DeletionTime {
        marked_for_delete_at_us: ts,
        local_deletion_time_s: at,
    }
}

/// Writes over several flushes and the memtable: overwrites, partition and row deletions, a
/// TTL, and partitions living in one source or several.
fn load(e: &Engine, now_s: i64) {
    let mut rng = Rng(7);
    for round in 0..4i64 {
        let mut batch = Vec::new();
        for i in 0..60u64 {
            let pk = format!("k{}", rng.below(90));
            let mut m = mutation(pk.as_bytes());
            let ts = round * 1000 + i as i64;
            let mut r = row(
                format!("c{}", rng.below(4)).as_bytes(),
                vec![set(1, ts, format!("v{round}-{i}").as_bytes())],
            );
            match rng.below(10) {
                0 => m.partition_deletion = Some(deletion(ts - 1, now_s - 5)),
                1 => r.deletion = Some(deletion(ts - 1, now_s - 5)),
                2 => {
                    r.cells = vec![CellUpdate {
                        column: 2,
                        path: None,
                        timestamp_us: ts,
                        op: CellOp::SetExpiring {
                            value: b(b"t"),
                            ttl_s: 60,
                            expires_at_s: now_s + 60,
                        },
                    }]
                }
                _ => {}
            }
            m.rows.push(r);
            batch.push(m);
        }
        e.apply_blocking(&batch).unwrap();
        if round < 3 {
            e.flush(Some(TABLE)).unwrap();
        }
    }
}

#[test]
fn a_scan_gives_what_the_paged_unfiltered_read_gives() {
    let dir = tempdir("scan-same");
    let e = open(&dir, 864000);
    let now_s = now();
    load(&e, now_s);
    let layout = TableLayout::new(&table_def(864000));
    let scanned = scan(
        &e,
        PartitionBound::Unbounded,
        PartitionBound::Unbounded,
        now_s,
    );
    assert!(scanned.len() > 50, "{} partitions", scanned.len());
    assert_eq!(scanned, read_all(&e, &layout, now_s));
    // Merged into one SSTable, the same partitions give the same bytes.
    e.compact(TABLE).unwrap();
    assert_eq!(
        scan(
            &e,
            PartitionBound::Unbounded,
            PartitionBound::Unbounded,
            now_s
        ),
        scanned
    );
}

#[test]
fn a_scan_keeps_to_its_bounds_and_stops_when_asked() {
    let dir = tempdir("scan-bounds");
    let e = open(&dir, 864000);
    let now_s = now();
    load(&e, now_s);
    let all = scan(
        &e,
        PartitionBound::Unbounded,
        PartitionBound::Unbounded,
        now_s,
    );
    let (lo, hi) = (all[10].clone(), all[30].clone());
    let within = scan(
        &e,
        PartitionBound::Token {
            token: lo.0,
            inclusive: false,
        },
        PartitionBound::Token {
            token: hi.0,
            inclusive: true,
        },
        now_s,
    );
    let expected: Scanned = all
        .iter()
        .filter(|(t, _, _)| *t > lo.0 && *t <= hi.0)
        .cloned()
        .collect();
    assert_eq!(within, expected);
    let from_key = scan(
        &e,
        PartitionBound::Key {
            token: lo.0,
            key: b(&lo.1),
            inclusive: true,
        },
        PartitionBound::Key {
            token: hi.0,
            key: b(&hi.1),
            inclusive: false,
        },
        now_s,
    );
    assert_eq!(from_key, all[10..30].to_vec());
    let mut seen = 0;
    e.scan_digest_bytes(
        TABLE,
        (&PartitionBound::Unbounded, &PartitionBound::Unbounded),
        now_s,
        None,
        &mut |_, _, _| {
            seen += 1;
            seen < 3
        },
    )
    .unwrap();
    assert_eq!(seen, 3);
}
