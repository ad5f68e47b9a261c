//! The level a whole-streamed SSTable lands in on the receiver.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

use super::whole::append_received;
use super::Engine;
use crate::test_support::*;
use crate::types::*;

const SESSION: &str = "0b7d6a52-64b9-4f4e-a0a5-3c3a2f9e5d10";

fn leveled() -> TableDef {
    let mut def = table_def(864_000);
    def.options.compaction = CompactionOptions::Leveled {
        sstable_size_in_mb: 160,
        fanout_size: 10,
    };
    def
}

/// (level, min token, max token) of every live SSTable, by generation.
fn levels(e: &Engine) -> Vec<(u32, i64, i64)> {
    let mut live = e.table(TABLE).unwrap().sstables.read().to_vec();
    live.sort_by_key(|s| s.gen);
    live.iter()
        .map(|s| (s.stats.level, s.stats.min_token, s.stats.max_token))
        .collect()
}

/// Stages every SSTable of `sender` and imports each into `receiver`, as a stream does.
fn stream_all(sender: &Engine, receiver: &Engine) -> usize {
    let staged = sender
        .stage_whole_sstables(TABLE, i64::MIN, i64::MAX, SESSION)
        .unwrap();
    for w in &staged {
        let dir = receiver.receive_dir(TABLE, SESSION, w.gen).unwrap();
        for c in &w.components {
            let bytes = sender
                .read_staged(TABLE, SESSION, w.gen, &c.name, 0, c.size as usize)
                .unwrap();
            append_received(&dir, w.gen, &c.name, &bytes).unwrap();
        }
        receiver.import_received(TABLE, &dir, w).unwrap();
    }
    sender.release_staged(TABLE, SESSION).unwrap();
    staged.len()
}

#[test]
fn a_whole_sstable_keeps_its_level_unless_it_overlaps_that_level_here() {
    let (sd, rd) = (tempdir("level-send"), tempdir("level-recv"));
    let (sender, receiver) = (open_with(&sd, leveled()), open_with(&rd, leveled()));
    let keys: Vec<String> = (0..300).map(|k| format!("k{k}")).collect();
    let tokens: Vec<i64> = keys.iter().map(|k| token(k.as_bytes())).collect();
    let (lo, hi) = (*tokens.iter().min().unwrap(), *tokens.iter().max().unwrap());
    // Outputs end at the ring tokens, so the sender's level-1 SSTables do not overlap: two
    // ranges hold every key, the one wrapping around none.
    sender.set_ring_tokens(vec![lo.saturating_sub(1), lo / 2 + hi / 2, hi]);
    for k in &keys {
        let mut m = mutation(k.as_bytes());
        m.rows.push(row(b"c", vec![set(1, 10, b"v")]));
        sender.apply_blocking(&[m]).unwrap();
    }
    sender.flush(None).unwrap();
    sender.compact(TABLE).unwrap();
    let sent = levels(&sender);
    assert!(sent.len() == 2 && sent.iter().all(|l| l.0 == 1), "{sent:?}");

    assert_eq!(stream_all(&sender, &receiver), sent.len());
    assert_eq!(levels(&receiver), sent, "kept: nothing here overlaps them");
    // The same SSTables again overlap the ones now in level 1: they go to level 0.
    stream_all(&sender, &receiver);
    let again = levels(&receiver);
    assert_eq!(&again[..sent.len()], &sent[..]);
    assert!(again[sent.len()..].iter().all(|l| l.0 == 0), "{again:?}");
    assert_eq!(again.len(), 2 * sent.len());
}
