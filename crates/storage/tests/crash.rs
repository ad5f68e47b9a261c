//! Crash test: a child process writes with Batch commitlog sync and prints each acknowledged key;
//! we SIGKILL it at random times, reopen, and check every acknowledged key is readable.
//! 50 cycles; override with HELENUS_CRASH_CYCLES.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

mod common;
use common::*;
use helenus_storage::*;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn reopen(dir: &std::path::Path, layout: &str) -> Arc<Engine> {
    let e = Engine::open(config(dir, CommitlogSync::Batch)).unwrap();
    let layout = match layout {
        "columnar" => DataLayout::Columnar(ColumnarTypes {
            partition_key: columnar::ValueType::BigInt,
            clustering: vec![columnar::ValueType::Blob],
            columns: vec![columnar::ColumnSpec {
                id: 1,
                value_type: columnar::ValueType::Blob,
            }],
        }),
        _ => DataLayout::Rows,
    };
    e.create_table(TableDef {
        id: [1; 16],
        keyspace: "ks".into(),
        name: "crash".into(),
        clustering: vec![ClusteringColumn {
            cmp: Arc::new(Bytewise),
            descending: false,
        }],
        columns: vec![ColumnDef {
            id: 1,
            is_static: false,
            multi_cell: None,
            is_counter: false,
        }],
        options: TableOptions {
            layout,
            ..TableOptions::default()
        },
    })
    .unwrap();
    e.replay_commitlog().unwrap();
    e
}

#[test]
fn every_acknowledged_write_survives_sigkill() {
    crash_cycles("rows", 50);
}

/// The same with the table in the columnar layout (issue 15): the writer's memtable flushes
/// every few thousand writes, so kills land in segment writes and compactions too.
#[test]
fn every_acknowledged_write_to_a_columnar_table_survives_sigkill() {
    crash_cycles("columnar", 25);
}

fn crash_cycles(layout: &str, default_cycles: usize) {
    let cycles: usize = std::env::var("HELENUS_CRASH_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_cycles);
    let dir = tempdir("crash");
    let mut rng = Rng(rand_u64() | 1);
    let mut acked: Vec<u64> = Vec::new();
    let started = Instant::now();
    for cycle in 0..cycles {
        let start = acked.last().map_or(0, |k| k + 1);
        let mut child = Command::new(env!("CARGO_BIN_EXE_storage_crash_writer"))
            .arg(&dir)
            .arg(start.to_string())
            .arg(layout)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(20 + rng.below(150)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        let keys: Vec<u64> = out.lines().filter_map(|l| l.trim().parse().ok()).collect();
        acked.extend(keys);
        // Verify everything acknowledged so far.
        let e = reopen(&dir, layout);
        for k in &acked {
            let key = bytes::Bytes::copy_from_slice(&k.to_be_bytes());
            let q = ReadQuery {
                columns: None,
                partitions: PartitionRange::Single {
                    key: key.clone(),
                    token: (k.wrapping_mul(0x9E37_79B9_7F4A_7C15)) as i64,
                },
                ..point(b"", now())
            };
            let r = e.read([1; 16], &q).unwrap();
            assert_eq!(
                r.partitions.len(),
                1,
                "cycle {cycle}: acknowledged key {k} lost"
            );
        }
        e.shutdown().unwrap();
    }
    assert!(
        acked.len() > cycles,
        "the writer made progress ({} keys)",
        acked.len()
    );
    let segments = files_ending(&dir, "-Columns.db").len();
    assert_eq!(
        segments > 0,
        layout == "columnar",
        "{segments} columnar segments"
    );
    eprintln!(
        "{cycles} crash cycles ({layout}, {segments} segments at the end), {} acknowledged keys, {:?}",
        acked.len(),
        started.elapsed()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
