//! Where an SSTable writer's chunks go: compressed, checksummed and written by a thread of their
//! own, so that encoding the next chunk (flush) or merging the next partitions (compaction)
//! overlaps with compressing and writing this one. On two cores that hides most of LZ4 and the
//! write system calls behind the encoder.

use super::{component_path, STORED_LEN_MASK};
use crate::codec::crc32c;
use crate::compression::ChunkCodec;
use crate::error::StorageError;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Batches in flight between the encoder and the writing thread (bounds the memory it holds).
const BATCHES_IN_FLIGHT: usize = 4;
/// Chunks go over in batches of about this many bytes: one wake-up of the writing thread per
/// 16 KiB chunk cost more than compressing it.
const BATCH_BYTES: usize = 256 << 10;

/// What the Data component looks like once written.
pub(crate) struct DataFile {
    pub chunk_offsets: Vec<u64>,
    pub bytes: u64,
}

/// Compresses and appends chunks to a Data component.
pub(crate) struct ChunkFile {
    path: PathBuf,
    codec: ChunkCodec,
    out: BufWriter<File>,
    written: DataFile,
}

impl ChunkFile {
    fn write_chunk(&mut self, chunk: &[u8]) -> Result<(), StorageError> {
        let (code, stored) = self.codec.compress(chunk);
        // Chunks are at most 4 MiB and stored raw when compression does not shrink them, so the
        // length always fits below the code byte.
        debug_assert!(stored.len() as u32 <= STORED_LEN_MASK);
        let word = (u32::from(code) << 24) | (stored.len() as u32 & STORED_LEN_MASK);
        let mut hdr = [0u8; 12];
        hdr[..4].copy_from_slice(&word.to_be_bytes());
        hdr[4..8].copy_from_slice(&(chunk.len() as u32).to_be_bytes());
        hdr[8..].copy_from_slice(&crc32c(&stored).to_be_bytes());
        self.written.chunk_offsets.push(self.written.bytes);
        self.out
            .write_all(&hdr)
            .and_then(|_| self.out.write_all(&stored))
            .map_err(|e| StorageError::io(&self.path, e))?;
        self.written.bytes += (hdr.len() + stored.len()) as u64;
        Ok(())
    }

    /// Flushes and fsyncs: an SSTable is durable before the commitlog that covered it goes.
    fn finish(mut self) -> Result<DataFile, StorageError> {
        self.out
            .flush()
            .map_err(|e| StorageError::io(&self.path, e))?;
        self.out
            .get_ref()
            .sync_all()
            .map_err(|e| StorageError::io(&self.path, e))?;
        Ok(self.written)
    }

    fn run(mut self, rx: Receiver<Vec<Vec<u8>>>) -> Result<DataFile, StorageError> {
        for batch in rx {
            for chunk in batch {
                self.write_chunk(&chunk)?;
            }
        }
        self.finish()
    }
}

/// The writer's end: a thread when one could be started, else the calling thread.
pub(crate) enum ChunkSink {
    Thread {
        tx: SyncSender<Vec<Vec<u8>>>,
        handle: JoinHandle<Result<DataFile, StorageError>>,
        batch: Vec<Vec<u8>>,
        batch_bytes: usize,
    },
    Inline(ChunkFile),
}

impl ChunkSink {
    pub(crate) fn create(
        dir: &Path,
        gen: u64,
        codec: ChunkCodec,
    ) -> Result<ChunkSink, StorageError> {
        let path = component_path(dir, gen, "Data.db");
        let f = File::create(&path).map_err(|e| StorageError::io(&path, e))?;
        let file = ChunkFile {
            path,
            codec,
            out: BufWriter::with_capacity(1 << 16, f),
            written: DataFile {
                chunk_offsets: Vec::new(),
                bytes: 0,
            },
        };
        let (tx, rx) = sync_channel(BATCHES_IN_FLIGHT);
        // The file moves into the thread only if it starts; a failed spawn hands it back
        // through this slot so the writer carries on inline.
        let slot = std::sync::Arc::new(parking_lot::Mutex::new(Some(file)));
        let theirs = slot.clone();
        let spawned = std::thread::Builder::new()
            .name("sstable-write".into())
            .spawn(move || match theirs.lock().take() {
                Some(file) => file.run(rx),
                None => Err(StorageError::InvalidRequest("sstable sink taken".into())),
            });
        match spawned {
            Ok(handle) => Ok(ChunkSink::Thread {
                tx,
                handle,
                batch: Vec::new(),
                batch_bytes: 0,
            }),
            Err(_) => match slot.lock().take() {
                Some(file) => Ok(ChunkSink::Inline(file)),
                None => Err(StorageError::InvalidRequest("sstable sink lost".into())),
            },
        }
    }

    /// Hands a full chunk over.
    pub(crate) fn write_chunk(&mut self, chunk: Vec<u8>) -> Result<(), StorageError> {
        match self {
            ChunkSink::Inline(f) => f.write_chunk(&chunk),
            // A closed channel means the thread stopped on an error, which `finish` reports.
            ChunkSink::Thread {
                tx,
                batch,
                batch_bytes,
                ..
            } => {
                *batch_bytes += chunk.len();
                batch.push(chunk);
                if *batch_bytes >= BATCH_BYTES {
                    *batch_bytes = 0;
                    let _ = tx.send(std::mem::take(batch));
                }
                Ok(())
            }
        }
    }

    /// Waits for every chunk to be on disk.
    pub(crate) fn finish(self) -> Result<DataFile, StorageError> {
        match self {
            ChunkSink::Inline(f) => f.finish(),
            ChunkSink::Thread {
                tx, handle, batch, ..
            } => {
                if !batch.is_empty() {
                    let _ = tx.send(batch);
                }
                drop(tx);
                handle.join().map_err(|_| {
                    StorageError::InvalidRequest("sstable writer thread died".into())
                })?
            }
        }
    }
}
