//! Helpers for tests that run a whole engine: the crate's unit tests use it directly, the
//! integration tests (tests/) through the `test-support` feature, so both share one copy.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::should_implement_trait,
    dead_code
)]

use crate::*;
use bytes::Bytes;
use std::path::Path;
use std::sync::Arc;

pub struct Bytewise;
impl ValueComparator for Bytewise {
    fn order(&self) -> crate::types::ValueOrder {
        crate::types::ValueOrder::Bytes
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        a.cmp(b)
    }
}

pub const TABLE: TableId = [7; 16];
pub const COUNTERS: TableId = [9; 16];
/// Regular columns 1 and 2, static column 3, set column 4.
pub const STATIC_COL: ColumnId = 3;
pub const SET_COL: ColumnId = 4;

pub fn config(dir: &Path, sync: CommitlogSync) -> StorageConfig {
    StorageConfig {
        data_dir: dir.join("data"),
        commitlog_dir: dir.join("commitlog"),
        commitlog_sync: sync,
        commitlog_segment_size_bytes: 1 << 20,
        memtable_space_bytes: 64 << 20,
        memtable_cleanup_threshold: 1.0,
        key_cache_bytes: 1 << 20,
        chunk_cache_bytes: 4 << 20,
        row_cache_bytes: 0,
        concurrent_compactors: 1,
        compaction_throughput_mib_per_s: 0,
        flush_throughput_mib_per_s: 0,
        parallel_major_compaction_min_bytes: crate::DEFAULT_PARALLEL_MAJOR_COMPACTION_MIN_BYTES,
        clock: helenus_types::SystemClock::shared(),
    }
}

pub fn table_def(gc_grace_seconds: u32) -> TableDef {
    let col = |id, is_static, multi: bool| ColumnDef {
        id,
        is_static,
        multi_cell: multi.then(|| Arc::new(Bytewise) as Arc<dyn ValueComparator>),
        is_counter: false,
    };
    TableDef {
        id: TABLE,
        keyspace: "ks".into(),
        name: "t".into(),
        clustering: vec![ClusteringColumn {
            cmp: Arc::new(Bytewise),
            descending: false,
        }],
        columns: vec![
            col(1, false, false),
            col(2, false, false),
            col(STATIC_COL, true, false),
            col(SET_COL, false, true),
        ],
        options: TableOptions {
            gc_grace_seconds,
            compression: CompressionOptions {
                algorithm: CompressionAlgorithm::Lz4,
                chunk_length_in_kb: 4,
            },
            ..TableOptions::default()
        },
    }
}

/// `table_def` in the columnar layout: columns 1, 2 and the static column as columns of blobs,
/// the set column's cells in the segments' extras.
pub fn columnar_table_def(gc_grace_seconds: u32) -> TableDef {
    let mut def = table_def(gc_grace_seconds);
    def.options.layout = DataLayout::Columnar(ColumnarTypes {
        partition_key: ValueType::Blob,
        clustering: vec![ValueType::Blob],
        columns: [1, 2, STATIC_COL]
            .into_iter()
            .map(|id| ColumnSpec {
                id,
                value_type: ValueType::Blob,
            })
            .collect(),
    });
    def
}

/// A table shaped like bench/storage_client.py's GDELT events: one row per partition, no
/// clustering, `columns` regular columns numbered from 1.
pub fn gdelt_def(id: TableId, columns: u32) -> TableDef {
    TableDef {
        id,
        keyspace: "bench_gdelt".into(),
        name: "events".into(),
        clustering: Vec::new(),
        columns: (1..=columns)
            .map(|id| ColumnDef {
                id,
                is_static: false,
                multi_cell: None,
                is_counter: false,
            })
            .collect(),
        options: TableOptions::default(),
    }
}

pub fn counter_def() -> TableDef {
    TableDef {
        id: COUNTERS,
        keyspace: "ks".into(),
        name: "c".into(),
        clustering: Vec::new(),
        columns: vec![ColumnDef {
            id: 1,
            is_static: false,
            multi_cell: None,
            is_counter: true,
        }],
        options: TableOptions::default(),
    }
}

pub fn open(dir: &Path, gc: u32) -> Arc<Engine> {
    open_with(dir, table_def(gc))
}

/// `open` with `def` for the `TABLE` table (its layout, say).
pub fn open_with(dir: &Path, def: TableDef) -> Arc<Engine> {
    let e = Engine::open(config(dir, CommitlogSync::Batch)).unwrap();
    e.create_table(def).unwrap();
    e.create_table(counter_def()).unwrap();
    e.replay_commitlog().unwrap();
    e
}

/// A stable fake token (the engine never hashes keys itself).
pub fn token(pk: &[u8]) -> i64 {
    let mut h: i64 = 1469598103934665603;
    for b in pk {
        h = (h ^ i64::from(*b)).wrapping_mul(1099511628211);
    }
    h
}

pub fn b(v: &[u8]) -> Bytes {
    Bytes::copy_from_slice(v)
}

/// One operation on the counter column of the `counter_def` table's partition `c` (`path`:
/// the replica shard, `None` on a node alone).
pub fn counter_cell(path: Option<Bytes>, ts: i64, op: CellOp) -> Mutation {
    Mutation {
        table: COUNTERS,
        key: b(b"c"),
        token: token(b"c"),
        partition_deletion: None,
        range_tombstones: Vec::new(),
        static_row: None,
        rows: vec![RowUpdate {
            clustering: Vec::new(),
            liveness: None,
            deletion: None,
            cells: vec![CellUpdate {
                column: 1,
                path,
                timestamp_us: ts,
                op,
            }],
        }],
    }
}

pub fn mutation(pk: &[u8]) -> Mutation {
    Mutation {
        table: TABLE,
        key: b(pk),
        token: token(pk),
        partition_deletion: None,
        range_tombstones: Vec::new(),
        static_row: None,
        rows: Vec::new(),
    }
}

pub fn set(col: ColumnId, ts: i64, v: &[u8]) -> CellUpdate {
    CellUpdate {
        column: col,
        path: None,
        timestamp_us: ts,
        op: CellOp::Set {
            value: b(v),
            ttl_s: 0,
        },
    }
}

pub fn row(ck: &[u8], cells: Vec<CellUpdate>) -> RowUpdate {
    RowUpdate {
        clustering: vec![b(ck)],
        liveness: None,
        deletion: None,
        cells,
    }
}

pub fn point(pk: &[u8], now_s: i64) -> ReadQuery {
    ReadQuery::whole_partition(b(pk), token(pk), now_s)
}

pub fn scan_all(now_s: i64) -> ReadQuery {
    ReadQuery {
        partitions: PartitionRange::Range {
            start: PartitionBound::Unbounded,
            end: PartitionBound::Unbounded,
        },
        ..point(b"", now_s)
    }
}

pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Unique temp dir under the target dir (no tempfile dependency needed).
pub fn tempdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "helenus-storage-{name}-{}-{}",
        std::process::id(),
        rand_u64()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::Instant::now())
}

/// xorshift64*: deterministic test RNG.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// `n` bytes no codec can shrink, the same for the same `seed`.
pub fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut r = Rng(seed | 1);
    (0..n).map(|_| r.next() as u8).collect()
}

/// Names of the files under `dir` (at any depth) that end with `suffix`.
pub fn files_ending(dir: &Path, suffix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for ent in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = ent.path();
            if p.is_dir() {
                todo.push(p);
            } else if let Some(name) = p.file_name().and_then(|n| n.to_str()) {
                if name.ends_with(suffix) {
                    out.push(name.to_string());
                }
            }
        }
    }
    out
}

/// SSTables of `e`'s `TABLE` that lie wholly inside one of the ring ranges `tokens` (sorted)
/// bound, the wrapping one included: what whole-SSTable streaming would send as files.
pub fn staged_per_range(e: &Engine, tokens: &[i64]) -> usize {
    let mut ranges: Vec<(i64, i64)> = tokens.windows(2).map(|w| (w[0], w[1])).collect();
    ranges.push((tokens[tokens.len() - 1], tokens[0]));
    let mut staged = 0;
    for (i, (start, end)) in ranges.into_iter().enumerate() {
        let session = format!("6f1c1f3e-2b7a-4c59-9a39-3a1f0d7c2e{i:02}");
        staged += e
            .stage_whole_sstables(TABLE, start, end, &session)
            .unwrap()
            .len();
        e.release_staged(TABLE, &session).unwrap();
    }
    staged
}

/// Bytes the process's heap holds, as `CountingAllocator` counts them.
pub static LIVE_HEAP_BYTES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A global allocator that counts the bytes it was asked for, for tests that check what a
/// structure's own accounting says it holds (memtables, caches). A test binary installs it with
/// `#[global_allocator]`; its tests then take turns, since the count is the whole process's.
pub struct CountingAllocator;

// SAFETY: every call goes straight to the system allocator with the caller's arguments.
unsafe impl std::alloc::GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract, which `System.alloc` shares.
        let p = unsafe { std::alloc::System.alloc(l) };
        if !p.is_null() {
            LIVE_HEAP_BYTES.fetch_add(l.size(), std::sync::atomic::Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        // SAFETY: `p` came from `alloc` above, that is from `System.alloc`, with layout `l`.
        unsafe { std::alloc::System.dealloc(p, l) };
        LIVE_HEAP_BYTES.fetch_sub(l.size(), std::sync::atomic::Ordering::Relaxed);
    }
}
