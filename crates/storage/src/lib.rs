//! helenus-storage: the node-local storage engine for user data, with Cassandra's semantics.
//!
//! Owns: the commitlog (durability), memtables, SSTables (format "hl-1"), compaction
//! (SizeTiered / Leveled / TimeWindow, major, garbagecollect), caches, snapshots, and the
//! reconciliation rules (`reconcile.rs`) that make every merge order-independent.
//! Does not own: schemas or CQL types (callers pass a `TableDef` with comparators), tokens
//! (callers pass the Murmur3 token), replication or consistency levels.
//!
//! Known gaps: Zstd and Deflate table options are accepted but chunks are stored with LZ4; the
//! whole partition index of an SSTable is kept in memory (no separate Summary, no per-partition row
//! index yet); the key cache is not implemented (its hit rate reads 0).

mod admin;
mod backpressure;
mod bloom;
mod cache;
mod caches;
mod clustering;
mod codec;
mod commitlog;
mod compaction;
mod compression;
mod engine;
mod error;
mod memtable;
mod partition;
mod reconcile;
mod sstable;
mod sstable_tools;
mod stats;
mod types;

pub use backpressure::{WriteStallStats, MAX_WRITE_STALL_MS, MEMTABLE_BACKPRESSURE_FACTOR};
pub use engine::Engine;
pub use error::StorageError;
pub use sstable_tools::{dump_sstable, verify_sstable, VerifyReport};
pub use types::*;
