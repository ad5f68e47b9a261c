//! Test helper for the crash test (tests/crash.rs): opens an engine in `argv[1]` with Batch
//! commitlog sync, replays, then writes sequential keys starting at `argv[2]` forever, printing
//! each key once `apply` has returned (i.e. once it is acknowledged and durable). With
//! `argv[3]` = `columnar`, the table is in the columnar layout (its flushes write segments).

use bytes::Bytes;
use helenus_storage::*;
use std::io::Write;
use std::sync::Arc;

struct Bytewise;
impl ValueComparator for Bytewise {
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        a.cmp(b)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(args.get(1).ok_or("usage: storage_crash_writer DIR START")?);
    let start: u64 = args.get(2).ok_or("missing START")?.parse()?;
    let layout = match args.get(3).map(String::as_str) {
        Some("columnar") => DataLayout::Columnar(ColumnarTypes {
            partition_key: columnar::ValueType::BigInt,
            clustering: vec![columnar::ValueType::Blob],
            columns: vec![columnar::ColumnSpec {
                id: 1,
                value_type: columnar::ValueType::Blob,
            }],
        }),
        _ => DataLayout::Rows,
    };
    let engine = Engine::open(StorageConfig {
        data_dir: dir.join("data"),
        commitlog_dir: dir.join("commitlog"),
        commitlog_sync: CommitlogSync::Batch,
        commitlog_segment_size_bytes: 1 << 20,
        // A columnar table's memtable is flushed every hundred writes or so, so kills land in
        // segment writes and compactions too.
        memtable_space_bytes: if matches!(layout, DataLayout::Rows) {
            2 << 20
        } else {
            16 << 10
        },
        memtable_cleanup_threshold: 1.0,
        key_cache_bytes: 1 << 20,
        chunk_cache_bytes: 1 << 20,
        row_cache_bytes: 0,
        concurrent_compactors: 1,
        compaction_throughput_mib_per_s: 0,
        flush_throughput_mib_per_s: 0,
        parallel_major_compaction_min_bytes:
            helenus_storage::DEFAULT_PARALLEL_MAJOR_COMPACTION_MIN_BYTES,
        clock: helenus_types::SystemClock::shared(),
    })?;
    engine.create_table(TableDef {
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
    })?;
    engine.replay_commitlog()?;
    let out = std::io::stdout();
    for k in start.. {
        let key = Bytes::copy_from_slice(&k.to_be_bytes());
        let m = Mutation {
            table: [1; 16],
            key: key.clone(),
            // Spread keys over the token ring deterministically.
            token: (k.wrapping_mul(0x9E37_79B9_7F4A_7C15)) as i64,
            partition_deletion: None,
            range_tombstones: Vec::new(),
            static_row: None,
            rows: vec![RowUpdate {
                clustering: vec![Bytes::from_static(b"c")],
                liveness: None,
                deletion: None,
                cells: vec![CellUpdate {
                    column: 1,
                    path: None,
                    timestamp_us: k as i64 + 1,
                    op: CellOp::Set {
                        value: Bytes::from(vec![7u8; 100]),
                        ttl_s: 0,
                    },
                }],
            }],
        };
        engine.apply_blocking(&[m])?;
        let mut lock = out.lock();
        writeln!(lock, "{k}")?;
        lock.flush()?;
    }
    Ok(())
}
