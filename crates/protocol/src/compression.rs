//! v3/v4 body compression, negotiated by STARTUP's COMPRESSION option and signalled per frame by
//! flag 0x01. lz4 bodies are `[u32 big-endian uncompressed length][lz4 block]`, as Cassandra
//! writes them; snappy bodies are raw snappy blocks (which carry their own length varint).

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::DecodeErrorKind;

/// lz4 can expand at most ~255x; a declared length beyond that cannot be honest.
const LZ4_MAX_RATIO: usize = 255;
/// snappy's best case is a 3-byte copy op producing 64 bytes.
const SNAPPY_MAX_RATIO: usize = 32;

/// A body/segment compression algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Lz4,
    Snappy,
}

impl Compression {
    /// Parses STARTUP's COMPRESSION value (`lz4`, `snappy`; case-insensitive).
    pub fn from_startup_name(name: &str) -> Option<Compression> {
        if name.eq_ignore_ascii_case("lz4") {
            Some(Compression::Lz4)
        } else if name.eq_ignore_ascii_case("snappy") {
            Some(Compression::Snappy)
        } else {
            None
        }
    }

    /// The name used in STARTUP and SUPPORTED.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Lz4 => "lz4",
            Compression::Snappy => "snappy",
        }
    }
}

/// Appends the compressed form of `input`.
pub(crate) fn compress_body(
    c: Compression,
    input: &[u8],
    out: &mut BytesMut,
) -> Result<(), &'static str> {
    match c {
        Compression::Lz4 => {
            let n = u32::try_from(input.len()).map_err(|_| "body too large")?;
            out.put_u32(n);
            out.put_slice(&lz4_flex::block::compress(input));
        }
        Compression::Snappy => {
            let v = snap::raw::Encoder::new()
                .compress_vec(input)
                .map_err(|_| "snappy compress failed")?;
            out.put_slice(&v);
        }
    }
    Ok(())
}

/// Decompresses a body, refusing outputs over `max_len` before allocating them.
pub(crate) fn decompress_body(
    c: Compression,
    input: &[u8],
    max_len: usize,
) -> Result<Bytes, DecodeErrorKind> {
    match c {
        Compression::Lz4 => {
            let (len, block) = match input {
                [a, b, c, d, rest @ ..] => (u32::from_be_bytes([*a, *b, *c, *d]) as usize, rest),
                _ => {
                    return Err(DecodeErrorKind::Decompression(
                        "lz4 body shorter than its length prefix",
                    ))
                }
            };
            lz4_block(block, len, max_len)
        }
        Compression::Snappy => {
            let len = snap::raw::decompress_len(input)
                .map_err(|_| DecodeErrorKind::Decompression("bad snappy length"))?;
            if len > max_len || len > input.len().saturating_mul(SNAPPY_MAX_RATIO) {
                return Err(DecodeErrorKind::Decompression("snappy length out of range"));
            }
            let v = snap::raw::Decoder::new()
                .decompress_vec(input)
                .map_err(|_| DecodeErrorKind::Decompression("corrupt snappy body"))?;
            Ok(Bytes::from(v))
        }
    }
}

/// Decompresses one lz4 block that must expand to exactly `len` bytes.
pub(crate) fn lz4_block(
    block: &[u8],
    len: usize,
    max_len: usize,
) -> Result<Bytes, DecodeErrorKind> {
    if len > max_len || len > block.len().saturating_mul(LZ4_MAX_RATIO).saturating_add(16) {
        return Err(DecodeErrorKind::Decompression("lz4 length out of range"));
    }
    let v = lz4_flex::block::decompress(block, len)
        .map_err(|_| DecodeErrorKind::Decompression("corrupt lz4 block"))?;
    if v.len() != len {
        return Err(DecodeErrorKind::Decompression("lz4 block length mismatch"));
    }
    Ok(Bytes::from(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_algorithms_round_trip() {
        let input: Vec<u8> = (0..5000u32).flat_map(|i| (i % 97).to_be_bytes()).collect();
        for c in [Compression::Lz4, Compression::Snappy] {
            let mut out = BytesMut::new();
            compress_body(c, &input, &mut out).unwrap();
            assert!(out.len() < input.len());
            assert_eq!(&decompress_body(c, &out, 1 << 20).unwrap()[..], &input[..]);
        }
    }

    #[test]
    fn lz4_prefix_is_big_endian_uncompressed_length() {
        let mut out = BytesMut::new();
        compress_body(Compression::Lz4, &[7u8; 300], &mut out).unwrap();
        assert_eq!(&out[..4], &[0, 0, 1, 44]);
    }

    #[test]
    fn lying_lengths_are_rejected_before_allocation() {
        assert!(decompress_body(Compression::Lz4, &[0x7f, 0xff, 0xff, 0xff, 0], 1 << 24).is_err());
        // snappy varint for ~2^32
        assert!(decompress_body(
            Compression::Snappy,
            &[0xff, 0xff, 0xff, 0xff, 0x0f],
            1 << 24
        )
        .is_err());
    }
}
