//! v5 segments (native_protocol_v5.spec §2.2), the framing Cassandra also uses internode.
//!
//! Uncompressed segment: 6-byte header = 3 bytes little-endian
//! `payload_len (17 bits) | self_contained << 17` (6 bits padding) + 3 bytes little-endian
//! CRC24 of those 3 bytes; then the payload; then the CRC32 of the payload (little-endian).
//! lz4 segment: 8-byte header = 5 bytes little-endian
//! `compressed_len (17) | uncompressed_len << 17 (17) | self_contained << 34` (5 bits padding) +
//! CRC24 of those 5 bytes; then the compressed payload and its CRC32. `uncompressed_len == 0`
//! means the payload was stored uncompressed (it did not shrink).
//! A self-contained segment holds one or more whole envelopes; a larger envelope is split over
//! consecutive non-self-contained segments. Payloads are at most 128 KiB - 1.
//!
//! Helenus writes lz4 segments always compressed, never with the `uncompressed_len == 0`
//! fallback Cassandra uses when a payload does not shrink: the Python driver (3.30) sizes such
//! a segment as if its header were the 3-byte uncompressed one, so a read that ends in the
//! segment's last two bytes fails inside the driver. Uncompressed lz4 payloads are therefore
//! capped at [`MAX_LZ4_SEGMENT_PAYLOAD`], whose worst-case lz4 output still fits 17 bits.

use bytes::{BufMut, Bytes, BytesMut};

use crate::compression::lz4_block;
use crate::error::DecodeErrorKind;

/// Largest segment payload (17-bit length).
pub const MAX_SEGMENT_PAYLOAD: usize = (1 << 17) - 1;
/// Largest uncompressed payload Helenus puts in one lz4 segment: lz4's worst case for `n`
/// incompressible bytes is `n + n / 255 + 16`, which for 127 KiB is 130,574 <= 131,071.
pub const MAX_LZ4_SEGMENT_PAYLOAD: usize = 127 * 1024;
const _: () =
    assert!(MAX_LZ4_SEGMENT_PAYLOAD + MAX_LZ4_SEGMENT_PAYLOAD / 255 + 16 <= MAX_SEGMENT_PAYLOAD);

/// The largest payload the writer puts in one segment of this kind.
pub fn max_segment_payload(lz4: bool) -> usize {
    if lz4 {
        MAX_LZ4_SEGMENT_PAYLOAD
    } else {
        MAX_SEGMENT_PAYLOAD
    }
}
const CRC24_INIT: u32 = 0x875060;
const CRC24_POLY: u32 = 0x1974F0B;
/// Cassandra primes its CRC32 with these bytes so an all-zero segment does not checksum to 0.
const CRC32_INITIAL_BYTES: [u8; 4] = [0xFA, 0x2D, 0x55, 0xCA];

/// Cassandra's CRC24 (`org.apache.cassandra.net.Crc.crc24`) over the low `len` bytes of
/// `bytes`, least significant byte first.
pub fn crc24(mut bytes: u64, len: usize) -> u32 {
    let mut crc = CRC24_INIT;
    for _ in 0..len {
        crc ^= ((bytes & 0xff) as u32) << 16;
        bytes >>= 8;
        for _ in 0..8 {
            crc <<= 1;
            if crc & 0x100_0000 != 0 {
                crc ^= CRC24_POLY;
            }
        }
    }
    crc
}

/// Cassandra's segment CRC32: standard CRC32 primed with 0xFA 0x2D 0x55 0xCA.
pub fn crc32(payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&CRC32_INITIAL_BYTES);
    h.update(payload);
    h.finalize()
}

fn put_le(out: &mut BytesMut, v: u64, n: usize) {
    for i in 0..n {
        out.put_u8((v >> (8 * i)) as u8);
    }
}

fn get_le(b: &[u8]) -> u64 {
    b.iter()
        .rev()
        .fold(0u64, |acc, x| (acc << 8) | u64::from(*x))
}

/// Appends one segment holding `payload` (at most [`MAX_SEGMENT_PAYLOAD`] bytes; lz4 payloads
/// up to [`MAX_LZ4_SEGMENT_PAYLOAD`] always go out compressed, see the module comment).
pub fn write_segment(out: &mut BytesMut, payload: &[u8], self_contained: bool, lz4: bool) {
    debug_assert!(payload.len() <= MAX_SEGMENT_PAYLOAD);
    let sc = u64::from(self_contained);
    if lz4 {
        let compressed = lz4_flex::block::compress(payload);
        // The stored fallback is only for an empty payload (nothing to decompress) or one
        // too large for its lz4 form to fit the 17-bit length, which this crate never writes.
        let store = payload.is_empty() || compressed.len() > MAX_SEGMENT_PAYLOAD;
        let (body, uncompressed_len): (&[u8], usize) = if store {
            (payload, 0)
        } else {
            (&compressed, payload.len())
        };
        let header = body.len() as u64 | ((uncompressed_len as u64) << 17) | (sc << 34);
        put_le(out, header, 5);
        put_le(out, u64::from(crc24(header, 5)), 3);
        out.put_slice(body);
        out.put_u32_le(crc32(body));
    } else {
        let header = payload.len() as u64 | (sc << 17);
        put_le(out, header, 3);
        put_le(out, u64::from(crc24(header, 3)), 3);
        out.put_slice(payload);
        out.put_u32_le(crc32(payload));
    }
}

/// Appends one envelope as segments: one self-contained segment if it fits, otherwise
/// consecutive non-self-contained segments of at most [`max_segment_payload`] bytes.
pub fn write_envelope_segments(out: &mut BytesMut, envelope: &[u8], lz4: bool) {
    let max = max_segment_payload(lz4);
    if envelope.len() <= max {
        write_segment(out, envelope, true, lz4);
        return;
    }
    for chunk in envelope.chunks(max) {
        write_segment(out, chunk, false, lz4);
    }
}

/// A decoded segment payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub payload: Bytes,
    pub self_contained: bool,
}

/// Takes one whole segment off the front of `buf`. `Ok(None)`: need more bytes.
/// Errors are fatal for the connection: the byte stream cannot be trusted after a bad CRC.
pub fn decode_segment(buf: &mut BytesMut, lz4: bool) -> Result<Option<Segment>, DecodeErrorKind> {
    let header_len = if lz4 { 8 } else { 6 };
    let Some(h) = buf.get(..header_len) else {
        return Ok(None);
    };
    let hdr_bytes = header_len - 3;
    let header = get_le(h.get(..hdr_bytes).unwrap_or_default());
    let crc = get_le(h.get(hdr_bytes..).unwrap_or_default()) as u32;
    if crc24(header, hdr_bytes) != crc {
        return Err(DecodeErrorKind::SegmentHeaderCrc);
    }
    let payload_len = (header & 0x1FFFF) as usize;
    let (uncompressed_len, self_contained) = if lz4 {
        (((header >> 17) & 0x1FFFF) as usize, header & (1 << 34) != 0)
    } else {
        (0, header & (1 << 17) != 0)
    };
    let total = header_len + payload_len + 4;
    if buf.len() < total {
        return Ok(None);
    }
    let seg = buf.split_to(total).freeze();
    let payload = seg.slice(header_len..header_len + payload_len);
    let trailer = seg.get(header_len + payload_len..).unwrap_or_default();
    if crc32(&payload) as u64 != get_le(trailer) {
        return Err(DecodeErrorKind::SegmentPayloadCrc);
    }
    let payload = if lz4 && uncompressed_len != 0 {
        lz4_block(&payload, uncompressed_len, MAX_SEGMENT_PAYLOAD)?
    } else {
        payload
    };
    Ok(Some(Segment {
        payload,
        self_contained,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc24_of_empty_input_is_the_init_value() {
        assert_eq!(crc24(0, 0), CRC24_INIT);
        assert!(crc24(0x12345, 3) < (1 << 24));
    }

    #[test]
    fn header_bit_flip_is_detected() {
        let mut out = BytesMut::new();
        write_segment(&mut out, b"hello", true, false);
        for bit in 0..48 {
            let mut b = out.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            let r = decode_segment(&mut b, false);
            assert!(r.is_err() || matches!(r, Ok(None)), "bit {bit}");
        }
    }

    #[test]
    fn uncompressed_header_layout_is_little_endian_with_self_contained_bit_17() {
        let mut out = BytesMut::new();
        write_segment(&mut out, &[1, 2, 3], true, false);
        assert_eq!(&out[..3], &[3, 0, 0x02]);
        assert_eq!(out.len(), 6 + 3 + 4);
        let s = decode_segment(&mut out, false).unwrap().unwrap();
        assert!(s.self_contained);
        assert_eq!(&s.payload[..], &[1, 2, 3]);
        assert!(out.is_empty());
    }

    #[test]
    fn lz4_segments_round_trip_compressible_and_incompressible() {
        let compressible = vec![0u8; 10_000];
        let incompressible: Vec<u8> = (0..200u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        for p in [compressible, incompressible] {
            let mut out = BytesMut::new();
            write_segment(&mut out, &p, false, true);
            let s = decode_segment(&mut out, true).unwrap().unwrap();
            assert!(!s.self_contained);
            assert_eq!(&s.payload[..], &p[..]);
        }
    }

    #[test]
    fn payload_corruption_fails_crc32() {
        let mut out = BytesMut::new();
        write_segment(&mut out, b"payload", true, false);
        out[7] ^= 0x01;
        assert_eq!(
            decode_segment(&mut out, false),
            Err(DecodeErrorKind::SegmentPayloadCrc)
        );
    }
}
