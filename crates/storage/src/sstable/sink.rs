//! Where an SSTable writer's chunks go: compressed, checksummed and written by a thread of their
//! own, so that encoding the next chunk (flush) or merging the next partitions (compaction)
//! overlaps with compressing and writing this one. On two cores that hides most of LZ4 and the
//! write system calls behind the encoder.

use super::{component_path, STORED_LEN_MASK};
use crate::codec::crc32c;
use crate::error::StorageError;
use crate::sstable::compression::{ChunkCodec, CHUNK_RAW};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Batches in flight between the encoder and the writing thread (bounds the memory it holds).
const BATCHES_IN_FLIGHT: usize = 4;
/// Failed compression attempts in a row after which chunks are stored raw without trying...
const INCOMPRESSIBLE_RUN: u32 = 8;
/// ...except every this many chunks.
const PROBE_EVERY: usize = 16;
/// Written data is handed to the disk in steps of this many bytes (like RocksDB's bytes_per_sync).
const WRITEBACK_STEP_BYTES: u64 = 8 << 20;
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
    /// Where the data not yet handed to writeback starts.
    writeback_from: u64,
    /// Compression attempts in a row that did not shrink their chunk.
    incompressible_run: u32,
}

impl ChunkFile {
    fn write_chunk(&mut self, chunk: &[u8]) -> Result<(), StorageError> {
        // After a run of chunks that did not compress (random or already compressed values),
        // only every PROBE_EVERY-th chunk tries again: a failed attempt costs as much as a
        // successful one and saves nothing.
        let probe = self.incompressible_run < INCOMPRESSIBLE_RUN
            || self.written.chunk_offsets.len().is_multiple_of(PROBE_EVERY);
        let packed = if probe { self.codec.pack(chunk) } else { None };
        self.incompressible_run = match packed {
            Some(_) => 0,
            None => self.incompressible_run.saturating_add(u32::from(probe)),
        };
        let (code, stored) = match &packed {
            Some((code, v)) => (*code, v.as_slice()),
            None => (CHUNK_RAW, chunk),
        };
        // Chunks are at most 4 MiB and stored raw when compression does not shrink them, so the
        // length always fits below the code byte.
        debug_assert!(stored.len() as u32 <= STORED_LEN_MASK);
        let word = (u32::from(code) << 24) | (stored.len() as u32 & STORED_LEN_MASK);
        let mut hdr = [0u8; 12];
        hdr[..4].copy_from_slice(&word.to_be_bytes());
        hdr[4..8].copy_from_slice(&(chunk.len() as u32).to_be_bytes());
        hdr[8..].copy_from_slice(&crc32c(stored).to_be_bytes());
        self.written.chunk_offsets.push(self.written.bytes);
        self.out
            .write_all(&hdr)
            .and_then(|_| self.out.write_all(stored))
            .map_err(|e| StorageError::io(&self.path, e))?;
        self.written.bytes += (hdr.len() + stored.len()) as u64;
        if self.written.bytes - self.writeback_from >= WRITEBACK_STEP_BYTES {
            self.start_writeback()?;
        }
        Ok(())
    }

    /// Starts writing back what is written so far without waiting for it, so the disk works
    /// while the next chunks are encoded and the closing fsync finds little left to do.
    fn start_writeback(&mut self) -> Result<(), StorageError> {
        self.out
            .flush()
            .map_err(|e| StorageError::io(&self.path, e))?;
        let (from, to) = (self.writeback_from, self.written.bytes);
        super::writeback::start(self.out.get_ref(), from, to - from);
        self.writeback_from = to;
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
            writeback_from: 0,
            incompressible_run: 0,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{CompressionAlgorithm, CompressionOptions};

    #[test]
    fn incompressible_runs_skip_compression_until_a_probe_succeeds() {
        let dir = std::env::temp_dir().join(format!("helenus-sink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let opts = CompressionOptions {
            algorithm: CompressionAlgorithm::Lz4,
            chunk_length_in_kb: 4,
        };
        let path = dir.join("chunks");
        let mut f = ChunkFile {
            path: path.clone(),
            codec: ChunkCodec::new(&opts),
            out: BufWriter::new(File::create(&path).unwrap()),
            written: DataFile {
                chunk_offsets: Vec::new(),
                bytes: 0,
            },
            writeback_from: 0,
            incompressible_run: 0,
        };
        let random = crate::sstable::compression::tests::noise(4096);
        for _ in 0..INCOMPRESSIBLE_RUN + 3 {
            f.write_chunk(&random).unwrap();
        }
        assert_eq!(f.incompressible_run, INCOMPRESSIBLE_RUN);
        let zeros = vec![0u8; 4096];
        let before = f.written.bytes;
        for _ in 0..PROBE_EVERY {
            f.write_chunk(&zeros).unwrap();
        }
        // Chunks before the probe went raw; the probe compressed and ended the run.
        assert_eq!(f.incompressible_run, 0);
        assert!(f.written.bytes - before < (PROBE_EVERY * 4096) as u64);
        let after = f.written.bytes;
        f.write_chunk(&zeros).unwrap();
        assert!(f.written.bytes - after < 1024, "compressed again at once");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
