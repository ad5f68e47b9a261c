//! Chunk compression of the SSTable Data component: LZ4 (default), zstd and Deflate, chosen per
//! table from `compression = {'class': ...}`.
//!
//! Why these crates: `lz4_flex` is pure Rust and fast; Deflate uses `flate2` on its pure-Rust
//! `miniz_oxide` backend (no C, already in the build). zstd uses the `zstd` crate (bindings to
//! the reference C libzstd): its C build costs ~33 s once, but it is the only choice that both
//! writes and reads every level Cassandra accepts (`compression_level` -131072..22) at the
//! reference speed; the pure-Rust `ruzstd` decodes well but encodes only its fastest level,
//! so `compression_level` could not be honoured.
//!
//! The algorithm is recorded twice: once per file in CompressionInfo.db (the table's choice when
//! the file was written) and once per chunk, in the top byte of the chunk header's stored length
//! (see `ChunkCodec`), so a chunk that does not shrink is stored raw and files written before the
//! per-chunk code existed (top byte 0) are still read with the per-file algorithm.

use crate::types::{CompressionAlgorithm, CompressionOptions};
use std::io::Write;

/// Per-file algorithm codes in CompressionInfo.db (0 and 1 predate zstd/Deflate).
pub const FILE_NONE: u8 = 0;
pub const FILE_LZ4: u8 = 1;
pub const FILE_ZSTD: u8 = 2;
pub const FILE_DEFLATE: u8 = 3;

/// Per-chunk codes in the top byte of the chunk header's first word. 0 means "the file's
/// algorithm" (files written before per-chunk codes); new files always write a non-zero code.
const CHUNK_AS_FILE: u8 = 0;
pub(crate) const CHUNK_RAW: u8 = 1;
const CHUNK_LZ4: u8 = 2;
const CHUNK_ZSTD: u8 = 3;
const CHUNK_DEFLATE: u8 = 4;

/// Mask of the stored length inside the chunk header's first word (chunks are < 16 MiB).
pub const STORED_LEN_MASK: u32 = 0x00ff_ffff;

/// zstd's default level, used when a table gives none (Cassandra's default is 3 as well).
pub const ZSTD_DEFAULT_LEVEL: i32 = 3;

/// The table's compression choice as the writer applies it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChunkCodec {
    pub algorithm: CompressionAlgorithm,
}

impl ChunkCodec {
    pub fn new(opts: &CompressionOptions) -> Self {
        ChunkCodec {
            algorithm: opts.algorithm,
        }
    }

    /// The per-file code written to CompressionInfo.db.
    pub fn file_code(&self) -> u8 {
        match self.algorithm {
            CompressionAlgorithm::None => FILE_NONE,
            CompressionAlgorithm::Lz4 => FILE_LZ4,
            CompressionAlgorithm::Zstd { .. } => FILE_ZSTD,
            CompressionAlgorithm::Deflate => FILE_DEFLATE,
        }
    }

    /// Compresses one chunk; returns (per-chunk code, stored bytes). A chunk that would not get
    /// smaller is stored raw, which also bounds the stored size by the chunk length.
    #[cfg(test)]
    pub fn compress(&self, chunk: &[u8]) -> (u8, Vec<u8>) {
        match self.pack(chunk) {
            Some((code, v)) => (code, v),
            None => (CHUNK_RAW, chunk.to_vec()),
        }
    }

    /// The chunk compressed, with its per-chunk code; None when it is to be stored raw.
    pub fn pack(&self, chunk: &[u8]) -> Option<(u8, Vec<u8>)> {
        let packed = match self.algorithm {
            CompressionAlgorithm::None => None,
            CompressionAlgorithm::Lz4 => Some((CHUNK_LZ4, lz4_flex::block::compress(chunk))),
            CompressionAlgorithm::Zstd { level } => {
                let level = if level == 0 {
                    ZSTD_DEFAULT_LEVEL
                } else {
                    level
                };
                zstd::bulk::compress(chunk, level)
                    .ok()
                    .map(|v| (CHUNK_ZSTD, v))
            }
            CompressionAlgorithm::Deflate => {
                let mut enc =
                    flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
                enc.write_all(chunk)
                    .and_then(|_| enc.finish())
                    .ok()
                    .map(|v| (CHUNK_DEFLATE, v))
            }
        };
        packed.filter(|(_, v)| v.len() < chunk.len())
    }
}

/// Decompresses one stored chunk to exactly `raw_len` bytes; None when corrupt. `chunk_code` is
/// the header's top byte, `file_code` the CompressionInfo algorithm.
pub fn decompress(
    chunk_code: u8,
    file_code: u8,
    stored: Vec<u8>,
    raw_len: usize,
) -> Option<Vec<u8>> {
    let code = if chunk_code == CHUNK_AS_FILE {
        match file_code {
            FILE_NONE => CHUNK_RAW,
            FILE_LZ4 => CHUNK_LZ4,
            FILE_ZSTD => CHUNK_ZSTD,
            FILE_DEFLATE => CHUNK_DEFLATE,
            _ => return None,
        }
    } else {
        chunk_code
    };
    let raw = match code {
        CHUNK_RAW => stored,
        CHUNK_LZ4 => lz4_flex::block::decompress(&stored, raw_len).ok()?,
        // `bulk::decompress` never allocates more than `raw_len`, so a corrupt frame header
        // cannot ask for a huge buffer.
        CHUNK_ZSTD => zstd::bulk::decompress(&stored, raw_len).ok()?,
        CHUNK_DEFLATE => {
            let mut out = Vec::with_capacity(raw_len);
            let mut d = flate2::Decompress::new(false);
            let status = d
                .decompress_vec(&stored, &mut out, flate2::FlushDecompress::Finish)
                .ok()?;
            if status != flate2::Status::StreamEnd {
                return None;
            }
            out
        }
        _ => return None,
    };
    (raw.len() == raw_len).then_some(raw)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        (0..20_000u32)
            .flat_map(|i| format!("row-{:06} value {}\n", i % 997, i % 13).into_bytes())
            .take(64 << 10)
            .collect()
    }

    fn codec(algorithm: CompressionAlgorithm) -> ChunkCodec {
        ChunkCodec::new(&CompressionOptions {
            algorithm,
            chunk_length_in_kb: 64,
        })
    }

    #[test]
    fn every_algorithm_round_trips_and_shrinks_text() {
        let data = sample();
        for alg in [
            CompressionAlgorithm::Lz4,
            CompressionAlgorithm::Zstd { level: 1 },
            CompressionAlgorithm::Zstd { level: 19 },
            CompressionAlgorithm::Zstd { level: -5 },
            CompressionAlgorithm::Deflate,
            CompressionAlgorithm::None,
        ] {
            let c = codec(alg);
            let (code, stored) = c.compress(&data);
            if alg != CompressionAlgorithm::None {
                assert!(stored.len() < data.len() / 2, "{alg:?} did not compress");
            }
            let back = decompress(code, c.file_code(), stored, data.len());
            assert_eq!(back.as_deref(), Some(data.as_slice()), "{alg:?}");
        }
    }

    /// `n` bytes no codec can shrink.
    pub(crate) fn noise(n: usize) -> Vec<u8> {
        crate::test_support::noise(n, 0x9e37_79b9_7f4a_7c15)
    }

    #[test]
    fn incompressible_chunk_is_stored_raw() {
        let data = noise(4096);
        for alg in [
            CompressionAlgorithm::Deflate,
            CompressionAlgorithm::Zstd { level: 3 },
        ] {
            let (code, stored) = codec(alg).compress(&data);
            assert_eq!(code, CHUNK_RAW);
            assert_eq!(stored, data);
        }
    }

    #[test]
    fn old_chunks_use_the_file_algorithm() {
        let data = sample();
        let stored = lz4_flex::block::compress(&data);
        let back = decompress(CHUNK_AS_FILE, FILE_LZ4, stored, data.len());
        assert_eq!(back.as_deref(), Some(data.as_slice()));
        let back = decompress(CHUNK_AS_FILE, FILE_NONE, data.clone(), data.len());
        assert_eq!(back.as_deref(), Some(data.as_slice()));
    }

    #[test]
    fn corrupt_or_short_chunks_are_rejected() {
        let data = sample();
        for alg in [
            CompressionAlgorithm::Zstd { level: 3 },
            CompressionAlgorithm::Deflate,
        ] {
            let c = codec(alg);
            let (code, mut stored) = c.compress(&data);
            assert!(decompress(code, c.file_code(), stored.clone(), data.len() - 1).is_none());
            stored.truncate(stored.len() / 2);
            assert!(decompress(code, c.file_code(), stored, data.len()).is_none());
        }
        assert!(decompress(9, FILE_LZ4, vec![1, 2, 3], 3).is_none());
    }
}
