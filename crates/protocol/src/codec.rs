//! Connection-level codecs: [`ServerConnectionCodec`] (decode requests, encode responses) and
//! its mirror [`ClientConnectionCodec`]. Both hold what a connection negotiates: protocol version,
//! body compression (v3/v4), v5 segment mode, and the maximum envelope size.
//!
//! Error policy: anything that leaves the byte stream unsynchronised (unsupported version,
//! wrong direction, oversize length, bad segment) is fatal; the codec refuses further input.
//! A malformed body inside a well-framed envelope is not: the envelope is consumed, the error
//! names its stream, and the caller answers PROTOCOL_ERROR and carries on.

use bytes::{Bytes, BytesMut};

use crate::compression::{compress_body, decompress_body, Compression};
use crate::error::{DecodeError, DecodeErrorKind, EncodeError};
use crate::frame::{
    FrameHeader, RequestFrame, ResponseFrame, FLAG_COMPRESSION, HEADER_LEN, RESPONSE_BIT,
};
use crate::opcode::Opcode;
use crate::result::{RowsMetadata, RowsWriter};
use crate::segment::{
    decode_segment, max_segment_payload, write_envelope_segments, write_segment,
    MAX_SEGMENT_PAYLOAD,
};
use crate::version::{is_supported_version, version_for_unsupported};

/// v5: envelopes up to this size share self-contained segments; larger ones get their own.
/// The Python driver (3.30) takes one envelope out of its reassembly buffer per segment it
/// reads while a partial segment is pending, and copies the rest of that buffer each time:
/// packing large envelopes lets megabytes pile up there for a slow reader and stalls it,
/// while packing small ones is what keeps segment headers (which it cannot survive being
/// split by a TCP read) rare.
pub const SHARED_SEGMENT_MAX_ENVELOPE_BYTES: usize = 4 * 1024;

/// Cassandra 5.0's default `native_transport_max_frame_size`.
pub const DEFAULT_MAX_FRAME_SIZE_BYTES: usize = 16 * 1024 * 1024;

/// Framing state shared by both directions.
#[derive(Debug)]
struct Framing {
    max_frame_size_bytes: usize,
    compression: Option<Compression>,
    segments: bool,
    /// v5: segment payload bytes not yet consumed as envelopes.
    reassembly: BytesMut,
    /// Envelope bytes being built before v3/v4 body compression.
    scratch: BytesMut,
    /// v5 outbound: whole envelopes gathered for the next self-contained segment. Empty
    /// whenever no [`ResponseBatch`] is alive: every public encode closes it before returning.
    open_segment: BytesMut,
    failed: bool,
    /// Bytes of a refused envelope still to drop as they arrive (see `skip_pending`).
    skip: usize,
    /// Incoming envelopes must carry this direction bit.
    incoming_is_response: bool,
}

/// Drops up to `skip` bytes from the front of `src`; true once `skip` is 0.
fn drop_skipped(skip: &mut usize, src: &mut BytesMut) -> bool {
    let n = (*skip).min(src.len());
    let _ = src.split_to(n);
    *skip -= n;
    *skip == 0
}

impl Framing {
    fn new(max_frame_size_bytes: usize, incoming_is_response: bool) -> Self {
        Framing {
            max_frame_size_bytes,
            compression: None,
            segments: false,
            reassembly: BytesMut::new(),
            scratch: BytesMut::new(),
            open_segment: BytesMut::new(),
            failed: false,
            skip: 0,
            incoming_is_response,
        }
    }

    fn fail(
        &mut self,
        kind: DecodeErrorKind,
        stream: Option<i16>,
        version: Option<u8>,
    ) -> DecodeError {
        self.failed = true;
        DecodeError::fatal(kind, stream, version)
    }

    /// Next whole envelope: its header and (still compressed) body.
    fn next_envelope(
        &mut self,
        buf: &mut BytesMut,
    ) -> Result<Option<(FrameHeader, Bytes)>, DecodeError> {
        if self.failed {
            return Err(DecodeError::fatal(DecodeErrorKind::Closed, None, None));
        }
        if !self.segments {
            if !self.drop_skipped(buf) {
                return Ok(None);
            }
            let mut src = std::mem::take(buf);
            let r = self.take_envelope(&mut src);
            *buf = src;
            return r;
        }
        let lz4 = self.compression == Some(Compression::Lz4);
        // Envelopes are taken out of the reassembly buffer, which holds at most one
        // max-size envelope plus one segment, so a peer cannot make it grow without bound.
        let limit = self.max_frame_size_bytes + HEADER_LEN + MAX_SEGMENT_PAYLOAD;
        loop {
            let mut re = std::mem::take(&mut self.reassembly);
            let r = match self.drop_skipped(&mut re) {
                true => self.take_envelope(&mut re),
                false => Ok(None),
            };
            self.reassembly = re;
            if let Some(env) = r? {
                return Ok(Some(env));
            }
            match decode_segment(buf, lz4) {
                Ok(None) => return Ok(None),
                Ok(Some(seg)) => {
                    if self.reassembly.len() + seg.payload.len() > limit {
                        return Err(self.fail(
                            DecodeErrorKind::SegmentMalformed("reassembly overflow"),
                            None,
                            None,
                        ));
                    }
                    self.reassembly.extend_from_slice(&seg.payload);
                }
                Err(kind) => return Err(self.fail(kind, None, None)),
            }
        }
    }

    /// Drops what is buffered of a refused envelope; true once none of it is left to come.
    fn drop_skipped(&mut self, src: &mut BytesMut) -> bool {
        drop_skipped(&mut self.skip, src)
    }

    fn take_envelope(
        &mut self,
        src: &mut BytesMut,
    ) -> Result<Option<(FrameHeader, Bytes)>, DecodeError> {
        let Some(&first) = src.first() else {
            return Ok(None);
        };
        let version = first & !RESPONSE_BIT;
        let stream = match src.get(2..4) {
            Some([a, b]) if version >= 3 => Some(i16::from_be_bytes([*a, *b])),
            _ => None,
        };
        if !is_supported_version(version) {
            let answer = version_for_unsupported(version);
            return Err(self.fail(
                DecodeErrorKind::UnsupportedVersion(version),
                stream,
                Some(answer),
            ));
        }
        if (first & RESPONSE_BIT != 0) != self.incoming_is_response {
            return Err(self.fail(DecodeErrorKind::WrongDirection, stream, Some(version)));
        }
        let Some(h) = FrameHeader::parse(src) else {
            return Ok(None);
        };
        let body_len = h.body_len as usize;
        if body_len > self.max_frame_size_bytes {
            let kind = DecodeErrorKind::FrameTooLarge {
                length_bytes: u64::from(h.body_len),
                max_bytes: self.max_frame_size_bytes,
            };
            return Err(self.fail(kind, Some(h.stream), Some(version)));
        }
        let total = HEADER_LEN + body_len;
        if src.len() < total {
            // No reserve here: memory should follow bytes actually received, not a claimed length.
            return Ok(None);
        }
        let env = src.split_to(total).freeze();
        Ok(Some((h, env.slice(HEADER_LEN..))))
    }

    /// Decompresses the body if the envelope says so (v3/v4 only).
    fn body(&self, h: &FrameHeader, body: Bytes) -> Result<Bytes, DecodeError> {
        if h.flags & FLAG_COMPRESSION == 0 || self.segments {
            return Ok(body);
        }
        let Some(c) = self.compression else {
            return Err(DecodeError::body(
                DecodeErrorKind::CompressionNotNegotiated,
                h.stream,
                h.version,
            ));
        };
        decompress_body(c, &body, self.max_frame_size_bytes)
            .map_err(|k| DecodeError::body(k, h.stream, h.version))
    }

    fn lz4_segments(&self) -> bool {
        self.compression == Some(Compression::Lz4)
    }

    /// Writes one envelope whose body is produced by `write_body`, applying compression or
    /// segmentation. Without either, the body is written straight into `out`. In v5 the
    /// envelope joins the open segment; [`Framing::close_segment`] must follow before `out`
    /// is sent.
    fn encode_with(
        &mut self,
        mut header: FrameHeader,
        out: &mut BytesMut,
        write_body: impl FnOnce(&mut BytesMut) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        if self.segments {
            return self.gather_envelope(header, out, write_body);
        }
        let Some(c) = self
            .compression
            .filter(|_| (3..5).contains(&header.version))
        else {
            return write_envelope(header, out, write_body);
        };
        let mut plain = std::mem::take(&mut self.scratch);
        plain.clear();
        let r = write_body(&mut plain).and_then(|()| {
            header.flags |= FLAG_COMPRESSION;
            write_envelope(header, out, |b| {
                compress_body(c, &plain, b).map_err(EncodeError::Invalid)
            })
        });
        // Keep the scratch allocation for the next frame unless one huge frame inflated it.
        if plain.capacity() <= 1 << 20 {
            self.scratch = plain;
        }
        r
    }

    /// Adds one envelope to the open self-contained segment, as Cassandra's v5 encoder packs
    /// envelopes: segments close only when full or when the batch ends, so a burst of small
    /// responses carries one segment boundary per ~128 KiB rather than one per response.
    /// That matters beyond overhead: the Python driver (3.30) drops a segment header that a
    /// TCP read splits, so every boundary is a chance to lose the connection. An envelope over
    /// [`SHARED_SEGMENT_MAX_ENVELOPE_BYTES`] closes the open segment and goes out alone (in
    /// non-self-contained segments if it does not fit one).
    fn gather_envelope(
        &mut self,
        header: FrameHeader,
        out: &mut BytesMut,
        write_body: impl FnOnce(&mut BytesMut) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        let max = max_segment_payload(self.lz4_segments());
        let mark = self.open_segment.len();
        // On error write_envelope truncates back to `mark`: the open segment stays whole.
        write_envelope(header, &mut self.open_segment, write_body)?;
        let envelope_len = self.open_segment.len() - mark;
        if envelope_len <= SHARED_SEGMENT_MAX_ENVELOPE_BYTES && self.open_segment.len() <= max {
            return Ok(());
        }
        let envelope = self.open_segment.split_off(mark);
        self.close_segment(out);
        if envelope.len() <= SHARED_SEGMENT_MAX_ENVELOPE_BYTES {
            self.open_segment = envelope;
        } else {
            write_envelope_segments(out, &envelope, self.lz4_segments());
        }
        Ok(())
    }

    /// Writes the open segment (if any) to `out`.
    fn close_segment(&mut self, out: &mut BytesMut) {
        if self.open_segment.is_empty() {
            return;
        }
        write_segment(out, &self.open_segment, true, self.lz4_segments());
        self.open_segment.clear();
        if self.open_segment.capacity() > 1 << 20 {
            self.open_segment = BytesMut::new();
        }
    }
}

/// Header placeholder, body, then the length patched in.
fn write_envelope(
    mut header: FrameHeader,
    out: &mut BytesMut,
    write_body: impl FnOnce(&mut BytesMut) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    let start = out.len();
    let hlen = FrameHeader::len_for(header.version);
    header.body_len = 0;
    header.write(out);
    if let Err(e) = write_body(out) {
        out.truncate(start);
        return Err(e);
    }
    let body_len = out.len() - start - hlen;
    let Ok(len) = u32::try_from(body_len) else {
        out.truncate(start);
        return Err(EncodeError::TooLong {
            what: "frame body",
            len: body_len,
        });
    };
    if let Some(slot) = out.get_mut(start + hlen - 4..start + hlen) {
        slot.copy_from_slice(&len.to_be_bytes());
    }
    Ok(())
}

/// The server side of one client connection.
#[derive(Debug)]
pub struct ServerConnectionCodec {
    framing: Framing,
    version: Option<u8>,
    /// Header and body bytes of the last request decoded.
    last_envelope_bytes: usize,
}

impl ServerConnectionCodec {
    /// A fresh connection; `max_frame_size_bytes` is `native_transport_max_frame_size`
    /// ([`DEFAULT_MAX_FRAME_SIZE_BYTES`] in Cassandra 5.0).
    pub fn new(max_frame_size_bytes: usize) -> Self {
        ServerConnectionCodec {
            framing: Framing::new(max_frame_size_bytes, false),
            version: None,
            last_envelope_bytes: 0,
        }
    }

    /// Header and body bytes of the request `decode` returned last: what that request holds
    /// in memory. (The read buffer's shrinkage during the same decode can be larger: it also
    /// counts the dropped tail of a message refused before.)
    pub fn last_envelope_bytes(&self) -> usize {
        self.last_envelope_bytes
    }

    /// Consumes one whole request from `buf` (a read buffer). `Ok(None)`: need more bytes.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<RequestFrame>, DecodeError> {
        let Some((h, body)) = self.framing.next_envelope(buf)? else {
            return Ok(None);
        };
        self.last_envelope_bytes = HEADER_LEN + body.len();
        if let Some(v) = self.version {
            if v != h.version {
                let kind = DecodeErrorKind::VersionMismatch {
                    got: h.version,
                    negotiated: v,
                };
                return Err(DecodeError::body(kind, h.stream, v));
            }
        }
        if Opcode::from_u8(h.opcode).is_none() {
            return Err(DecodeError::body(
                DecodeErrorKind::UnknownOpcode(h.opcode),
                h.stream,
                h.version,
            ));
        }
        let body = self.framing.body(&h, body)?;
        let frame = RequestFrame::decode(&h, body)
            .map_err(|e| DecodeError::body(DecodeErrorKind::Body(e), h.stream, h.version))?;
        self.version.get_or_insert(h.version);
        Ok(Some(frame))
    }

    /// Appends one response (compressed / segmented as negotiated). To send many responses
    /// in one write, encode them through [`ServerConnectionCodec::batch`] instead: in v5 they
    /// then share segments.
    pub fn encode(&mut self, frame: &ResponseFrame, out: &mut BytesMut) -> Result<(), EncodeError> {
        self.batch(out).encode(frame)
    }

    /// A batch of responses appended to `out`. In v5 they are packed into shared
    /// self-contained segments; the last one is closed when the batch is dropped, so `out`
    /// is whole once the batch is gone.
    pub fn batch<'a>(&'a mut self, out: &'a mut BytesMut) -> ResponseBatch<'a> {
        ResponseBatch { codec: self, out }
    }

    fn encode_open(
        &mut self,
        frame: &ResponseFrame,
        out: &mut BytesMut,
    ) -> Result<(), EncodeError> {
        let header = response_header(
            frame.version,
            frame.stream,
            frame.header_flags(),
            frame.response.opcode(),
        );
        self.framing.encode_with(header, out, |b| {
            frame.write_prefix(b)?;
            frame.response.encode(frame.version, b)
        })
    }

    /// Appends a RESULT Rows response whose rows `fill` streams into a [`RowsWriter`]; the rows
    /// go straight into the output (or scratch) buffer without an intermediate `Vec` per row.
    pub fn encode_rows(
        &mut self,
        version: u8,
        stream: i16,
        metadata: &RowsMetadata,
        out: &mut BytesMut,
        fill: impl FnOnce(&mut RowsWriter<'_>) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        let header = response_header(version, stream, 0, Opcode::Result);
        let r = self.framing.encode_with(header, out, |b| {
            let mut w = RowsWriter::begin(b, version, metadata)?;
            fill(&mut w)?;
            w.finish().map(|_| ())
        });
        self.framing.close_segment(out);
        r
    }

    /// Appends a response whose body (including any tracing/warning/payload prefix matching
    /// `flags`) is written by `write_body`.
    pub fn encode_raw(
        &mut self,
        version: u8,
        stream: i16,
        flags: u8,
        opcode: Opcode,
        out: &mut BytesMut,
        write_body: impl FnOnce(&mut BytesMut) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        let header = response_header(version, stream, flags & !FLAG_COMPRESSION, opcode);
        let r = self.framing.encode_with(header, out, write_body);
        self.framing.close_segment(out);
        r
    }

    /// Appends the PROTOCOL_ERROR answer for a decode failure in the framing the client can
    /// read: version-negotiation failures go out as a plain envelope (the client has not agreed
    /// on anything yet); everything else follows the connection's compression/segment mode.
    /// After a fatal error, flush `out` and close the connection.
    pub fn encode_decode_error(
        &mut self,
        err: &DecodeError,
        out: &mut BytesMut,
    ) -> Result<(), EncodeError> {
        self.batch(out).encode_decode_error(err)
    }

    fn encode_decode_error_open(
        &mut self,
        err: &DecodeError,
        out: &mut BytesMut,
    ) -> Result<(), EncodeError> {
        let plain = matches!(
            err.kind,
            DecodeErrorKind::UnsupportedVersion(_) | DecodeErrorKind::WrongDirection
        ) || self.version.is_none() && !self.framing.segments;
        match err.to_error_frame() {
            None => Ok(()),
            Some(_) if plain => encode_fatal_error(err, out),
            Some(frame) => self.encode_open(&frame, out),
        }
    }

    /// Bytes of an incoming envelope held inside the codec (v5 segments being reassembled),
    /// besides what the read buffer holds.
    pub fn buffered_bytes(&self) -> usize {
        self.framing.reassembly.len()
    }

    /// Refuses the envelope whose bytes are arriving: what is buffered of it is dropped now,
    /// the rest as it arrives, so it costs no memory. Returns its version and stream, or
    /// `None` if its header is not complete yet (or an envelope is already being dropped).
    pub fn skip_pending(&mut self, buf: &mut BytesMut) -> Option<(u8, i16)> {
        let f = &mut self.framing;
        if f.skip > 0 || f.failed {
            return None;
        }
        let src = if f.segments { &mut f.reassembly } else { buf };
        let h = FrameHeader::parse(src)?;
        if h.is_response != f.incoming_is_response || !is_supported_version(h.version) {
            return None;
        }
        f.skip = HEADER_LEN + h.body_len as usize;
        drop_skipped(&mut f.skip, src);
        Some((h.version, h.stream))
    }

    /// Sets body compression (after STARTUP asked for it and READY was written). In v5 only
    /// lz4 applies, and only to segments; the server must refuse snappy for v5 at STARTUP.
    pub fn set_compression(&mut self, c: Option<Compression>) {
        debug_assert!(self.framing.open_segment.is_empty());
        self.framing.compression = c;
    }

    /// Switches both directions to v5 segments; call right after writing READY/AUTH_SUCCESS
    /// (and sending everything encoded before it, which stays in the old framing).
    pub fn enable_segments(&mut self) {
        debug_assert!(self.framing.open_segment.is_empty());
        self.framing.segments = true;
    }

    /// True once segments are on.
    pub fn segments_enabled(&self) -> bool {
        self.framing.segments
    }

    /// The negotiated compression.
    pub fn compression(&self) -> Option<Compression> {
        self.framing.compression
    }

    /// The protocol version of the first good frame on this connection.
    pub fn version(&self) -> Option<u8> {
        self.version
    }

    /// The configured maximum envelope body size.
    pub fn max_frame_size_bytes(&self) -> usize {
        self.framing.max_frame_size_bytes
    }
}

/// Responses being appended to one output buffer; see [`ServerConnectionCodec::batch`].
#[derive(Debug)]
pub struct ResponseBatch<'a> {
    codec: &'a mut ServerConnectionCodec,
    out: &'a mut BytesMut,
}

impl ResponseBatch<'_> {
    /// Appends one response.
    pub fn encode(&mut self, frame: &ResponseFrame) -> Result<(), EncodeError> {
        self.codec.encode_open(frame, self.out)
    }

    /// Appends the answer to a decode failure, as
    /// [`ServerConnectionCodec::encode_decode_error`] does.
    pub fn encode_decode_error(&mut self, err: &DecodeError) -> Result<(), EncodeError> {
        self.codec.encode_decode_error_open(err, self.out)
    }

    /// Bytes encoded so far, including those waiting in the open segment.
    pub fn len_bytes(&self) -> usize {
        self.out.len() + self.codec.framing.open_segment.len()
    }
}

impl Drop for ResponseBatch<'_> {
    fn drop(&mut self) {
        self.codec.framing.close_segment(self.out);
    }
}

fn response_header(version: u8, stream: i16, flags: u8, opcode: Opcode) -> FrameHeader {
    FrameHeader {
        version,
        is_response: true,
        flags,
        stream,
        opcode: opcode as u8,
        body_len: 0,
    }
}

/// The client side of a connection (drivers, load generators, tests).
#[derive(Debug)]
pub struct ClientConnectionCodec {
    framing: Framing,
}

impl ClientConnectionCodec {
    /// A fresh connection accepting responses up to `max_frame_size_bytes`.
    pub fn new(max_frame_size_bytes: usize) -> Self {
        ClientConnectionCodec {
            framing: Framing::new(max_frame_size_bytes, true),
        }
    }

    /// Appends one request (compressed / segmented as negotiated).
    pub fn encode(&mut self, frame: &RequestFrame, out: &mut BytesMut) -> Result<(), EncodeError> {
        let header = FrameHeader {
            version: frame.version,
            is_response: false,
            flags: frame.header_flags(),
            stream: frame.stream,
            opcode: frame.request.opcode() as u8,
            body_len: 0,
        };
        // Requests go out one segment each (as the Python driver sends them): a client
        // codec has no batch to close, so the segment closes here.
        let r = self
            .framing
            .encode_with(header, out, |b| frame.write_body(b));
        self.framing.close_segment(out);
        r
    }

    /// Consumes one whole response from `buf`. `Ok(None)`: need more bytes.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<ResponseFrame>, DecodeError> {
        let Some((h, body)) = self.framing.next_envelope(buf)? else {
            return Ok(None);
        };
        if Opcode::from_u8(h.opcode).is_none() {
            return Err(DecodeError::body(
                DecodeErrorKind::UnknownOpcode(h.opcode),
                h.stream,
                h.version,
            ));
        }
        let body = self.framing.body(&h, body)?;
        ResponseFrame::decode(&h, body)
            .map(Some)
            .map_err(|e| DecodeError::body(DecodeErrorKind::Body(e), h.stream, h.version))
    }

    /// Sets compression (after sending STARTUP with COMPRESSION and reading READY).
    pub fn set_compression(&mut self, c: Option<Compression>) {
        self.framing.compression = c;
    }

    /// Switches to v5 segments; call after reading READY/AUTH_SUCCESS.
    pub fn enable_segments(&mut self) {
        self.framing.segments = true;
    }
}

/// Writes a plain (never compressed, never segmented) ERROR envelope: what a server sends for a
/// fatal [`DecodeError`] before closing, including the "unsupported version" answer in the
/// version the client can read (v1/v2 use the old 8-byte header).
pub fn encode_fatal_error(err: &DecodeError, out: &mut BytesMut) -> Result<(), EncodeError> {
    let Some(frame) = err.to_error_frame() else {
        return Ok(());
    };
    let header = response_header(frame.version, frame.stream, 0, Opcode::Error);
    write_envelope(header, out, |b| frame.response.encode(frame.version, b))
}

impl Default for ServerConnectionCodec {
    fn default() -> Self {
        ServerConnectionCodec::new(DEFAULT_MAX_FRAME_SIZE_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Request;
    use crate::response::Response;
    use crate::version::MAX_SUPPORTED_VERSION;
    use bytes::BufMut;

    #[test]
    fn unsupported_version_probe_is_fatal_and_answered_in_v5() {
        let mut s = ServerConnectionCodec::default();
        let mut buf = BytesMut::from(&[0x42u8, 0, 0, 0, 0x05, 0, 0, 0, 0][..]);
        let err = s.decode(&mut buf).unwrap_err();
        assert!(!err.can_continue());
        assert_eq!(err.version, Some(MAX_SUPPORTED_VERSION));
        let mut out = BytesMut::new();
        encode_fatal_error(&err, &mut out).unwrap();
        assert_eq!(out[0], 0x85);
        let mut c = ClientConnectionCodec::new(1 << 20);
        let resp = c.decode(&mut out).unwrap().unwrap();
        let Response::Error(e) = resp.response else {
            panic!("not an error")
        };
        assert_eq!(e.code, crate::ErrorCode::PROTOCOL);
        assert!(e.message.contains(
            "Invalid or unsupported protocol version (66); supported versions are (3/v3, 4/v4, 5/v5)"
        ));
        assert_eq!(
            s.decode(&mut BytesMut::new()).unwrap_err().kind,
            DecodeErrorKind::Closed
        );
    }

    #[test]
    fn a_skipped_envelope_is_dropped_as_it_arrives_and_the_next_decodes() {
        for (version, segments) in [(4u8, false), (5, true)] {
            let mut s = ServerConnectionCodec::default();
            let mut c = ClientConnectionCodec::new(1 << 20);
            if segments {
                s.enable_segments();
                c.enable_segments();
            }
            let big = Request::Query {
                query: "x".repeat(300 * 1024),
                params: Default::default(),
            };
            let mut wire = BytesMut::new();
            c.encode(&crate::RequestFrame::new(version, 3, big), &mut wire)
                .unwrap();
            c.encode(
                &crate::RequestFrame::new(version, 4, Request::Options),
                &mut wire,
            )
            .unwrap();
            let mut buf = wire.split_to(150 * 1024);
            assert!(s.decode(&mut buf).unwrap().is_none());
            assert_eq!(s.skip_pending(&mut buf), Some((version, 3)));
            assert_eq!(s.buffered_bytes(), 0, "v{version}");
            buf.extend_from_slice(&wire);
            let next = s.decode(&mut buf).unwrap().unwrap();
            assert_eq!((next.stream, next.request), (4, Request::Options));
        }
    }

    #[test]
    fn bad_segment_crc_is_fatal_and_answered_inside_a_segment() {
        let mut s = ServerConnectionCodec::default();
        let mut c = ClientConnectionCodec::new(1 << 20);
        s.enable_segments();
        c.enable_segments();
        let mut wire = BytesMut::new();
        c.encode(&crate::RequestFrame::new(5, 3, Request::Options), &mut wire)
            .unwrap();
        let last = wire.len() - 1;
        wire[last] ^= 0xff;
        let err = s.decode(&mut wire).unwrap_err();
        assert_eq!(
            (err.kind.clone(), err.fatal),
            (DecodeErrorKind::SegmentPayloadCrc, true)
        );
        let mut out = BytesMut::new();
        s.encode_decode_error(&err, &mut out).unwrap();
        let Response::Error(e) = c.decode(&mut out).unwrap().unwrap().response else {
            panic!("not an error")
        };
        assert_eq!(e.code, crate::ErrorCode::PROTOCOL);
    }

    #[test]
    fn v2_client_is_answered_with_an_8_byte_v2_header() {
        let mut s = ServerConnectionCodec::default();
        let err = s.decode(&mut BytesMut::from(&[0x02u8][..])).unwrap_err();
        let mut out = BytesMut::new();
        encode_fatal_error(&err, &mut out).unwrap();
        assert_eq!(&out[..4], &[0x82, 0, 0, 0x00]);
        assert_eq!(
            u32::from_be_bytes([out[4], out[5], out[6], out[7]]) as usize,
            out.len() - 8
        );
    }

    #[test]
    fn oversize_length_is_fatal_before_the_body_arrives() {
        let mut s = ServerConnectionCodec::new(1000);
        let mut buf = BytesMut::from(&[0x04u8, 0, 0, 7, 0x07, 0, 0, 0x10, 0][..]);
        let err = s.decode(&mut buf).unwrap_err();
        assert!(!err.can_continue());
        assert_eq!(err.stream, Some(7));
    }

    #[test]
    fn bad_body_is_recoverable_and_the_next_frame_decodes() {
        let mut s = ServerConnectionCodec::default();
        // QUERY with a truncated long string, then a good OPTIONS.
        let mut buf = BytesMut::from(&[0x04u8, 0, 0, 3, 0x07, 0, 0, 0, 2, 0xff, 0xff][..]);
        buf.extend_from_slice(&[0x04, 0, 0, 4, 0x05, 0, 0, 0, 0]);
        let err = s.decode(&mut buf).unwrap_err();
        assert!(err.can_continue());
        assert_eq!((err.stream, err.version), (Some(3), Some(4)));
        let f = s.decode(&mut buf).unwrap().unwrap();
        assert_eq!((f.stream, f.request), (4, Request::Options));
    }

    #[test]
    fn partial_frames_need_more_bytes() {
        let mut s = ServerConnectionCodec::default();
        let full = [0x04u8, 0, 0, 1, 0x05, 0, 0, 0, 0];
        let mut buf = BytesMut::new();
        for b in full {
            assert!(s.decode(&mut buf).unwrap().is_none());
            buf.put_u8(b);
        }
        assert!(s.decode(&mut buf).unwrap().is_some());
    }
}
