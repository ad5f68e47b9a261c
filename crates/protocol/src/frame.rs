//! The envelope (frame) header and the frame types the codecs exchange (opcodes are in `opcode`,
//! the versions spoken in `version`).
//!
//! Header layout, v3-v5 (9 bytes, big-endian):
//! `version: u8` (bit 0x80 set on responses) | `flags: u8` | `stream: i16` | `opcode: u8` |
//! `length: u32` (body bytes). v1/v2 used an 8-byte header with a 1-byte stream; we only ever
//! *write* that layout, for the "unsupported version" ERROR sent back to a v1/v2 client.
//!
//! Body prefixes driven by flags: a response with TRACING starts with a [uuid]; WARNING adds a
//! [string list]; CUSTOM_PAYLOAD adds a [bytes map] (in that order), then the message body.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::{DecodeError, DecodeErrorKind, EncodeError, WireError};
use crate::primitives::{write_bytes_map, write_string_list, BytesMap, Reader};
use crate::request::Request;
use crate::response::{ErrorBody, ErrorCode, Response};
use crate::version::MAX_SUPPORTED_VERSION;

/// v3+ envelope header size.
pub const HEADER_LEN: usize = 9;
/// Direction bit in the version byte: set on responses.
pub const RESPONSE_BIT: u8 = 0x80;

/// Body is compressed (v3/v4 only; v5 compresses segments instead).
pub const FLAG_COMPRESSION: u8 = 0x01;
/// Request: trace this query. Response: body starts with the tracing session [uuid].
pub const FLAG_TRACING: u8 = 0x02;
/// Body starts with a custom payload [bytes map] (v4+).
pub const FLAG_CUSTOM_PAYLOAD: u8 = 0x04;
/// Response body starts with a warnings [string list] (v4+).
pub const FLAG_WARNING: u8 = 0x08;
/// Client opts in to a beta protocol version.
pub const FLAG_USE_BETA: u8 = 0x10;

/// A parsed v3+ envelope header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Version without the direction bit.
    pub version: u8,
    pub is_response: bool,
    pub flags: u8,
    pub stream: i16,
    pub opcode: u8,
    pub body_len: u32,
}

impl FrameHeader {
    /// Parses the 9 header bytes; `None` when fewer are given.
    pub fn parse(b: &[u8]) -> Option<FrameHeader> {
        let h: &[u8; HEADER_LEN] = b.get(..HEADER_LEN)?.try_into().ok()?;
        Some(FrameHeader {
            version: h[0] & !RESPONSE_BIT,
            is_response: h[0] & RESPONSE_BIT != 0,
            flags: h[1],
            stream: i16::from_be_bytes([h[2], h[3]]),
            opcode: h[4],
            body_len: u32::from_be_bytes([h[5], h[6], h[7], h[8]]),
        })
    }

    /// Appends the header. v1/v2 use the old 8-byte layout (1-byte stream).
    pub fn write(&self, out: &mut BytesMut) {
        let v = self.version | if self.is_response { RESPONSE_BIT } else { 0 };
        out.put_u8(v);
        out.put_u8(self.flags);
        if self.version < 3 {
            // Old clients only had 128 streams; truncation is what the old layout implies.
            out.put_i8(self.stream as i8);
        } else {
            out.put_i16(self.stream);
        }
        out.put_u8(self.opcode);
        out.put_u32(self.body_len);
    }

    /// Header size for a version.
    pub fn len_for(version: u8) -> usize {
        if version < 3 {
            8
        } else {
            HEADER_LEN
        }
    }
}

/// A request as the server receives it (or a client sends it).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestFrame {
    pub version: u8,
    pub stream: i16,
    /// Envelope flags: tracing, custom payload, warning, beta (compression is the codec's business).
    pub flags: u8,
    /// Custom payload (v4+), present iff FLAG_CUSTOM_PAYLOAD.
    pub custom_payload: Option<BytesMap>,
    pub request: Request,
}

impl RequestFrame {
    /// A frame with no flags.
    pub fn new(version: u8, stream: i16, request: Request) -> Self {
        RequestFrame {
            version,
            stream,
            flags: 0,
            custom_payload: None,
            request,
        }
    }

    /// True when the client asked for tracing.
    pub fn tracing(&self) -> bool {
        self.flags & FLAG_TRACING != 0
    }

    pub(crate) fn header_flags(&self) -> u8 {
        let mut f = self.flags & (FLAG_TRACING | FLAG_USE_BETA);
        if self.custom_payload.is_some() {
            f |= FLAG_CUSTOM_PAYLOAD;
        }
        f
    }

    pub(crate) fn write_body(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        if let Some(p) = &self.custom_payload {
            require_v4(self.version, "custom payload")?;
            write_bytes_map(out, p)?;
        }
        self.request.encode(self.version, out)
    }

    pub(crate) fn decode(header: &FrameHeader, body: Bytes) -> Result<Self, WireError> {
        let mut r = Reader::new(body);
        let custom_payload = if header.flags & FLAG_CUSTOM_PAYLOAD != 0 {
            Some(r.read_bytes_map()?)
        } else {
            None
        };
        let request = Request::decode(header.opcode, header.version, &mut r)?;
        Ok(RequestFrame {
            version: header.version,
            stream: header.stream,
            flags: header.flags & !FLAG_COMPRESSION,
            custom_payload,
            request,
        })
    }
}

/// A response as the server sends it (or a client receives it).
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseFrame {
    pub version: u8,
    pub stream: i16,
    /// Tracing session id; sets FLAG_TRACING.
    pub tracing_id: Option<[u8; 16]>,
    /// Client warnings (v4+); non-empty sets FLAG_WARNING.
    pub warnings: Vec<String>,
    /// Custom payload (v4+); sets FLAG_CUSTOM_PAYLOAD.
    pub custom_payload: Option<BytesMap>,
    pub response: Response,
}

impl ResponseFrame {
    /// A plain response with no tracing, warnings or payload.
    pub fn new(version: u8, stream: i16, response: Response) -> Self {
        ResponseFrame {
            version,
            stream,
            tracing_id: None,
            warnings: Vec::new(),
            custom_payload: None,
            response,
        }
    }

    pub(crate) fn header_flags(&self) -> u8 {
        let mut f = 0;
        if self.tracing_id.is_some() {
            f |= FLAG_TRACING;
        }
        if !self.warnings.is_empty() {
            f |= FLAG_WARNING;
        }
        if self.custom_payload.is_some() {
            f |= FLAG_CUSTOM_PAYLOAD;
        }
        f
    }

    pub(crate) fn write_prefix(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        if let Some(id) = &self.tracing_id {
            out.put_slice(id);
        }
        if !self.warnings.is_empty() {
            require_v4(self.version, "warnings")?;
            write_string_list(out, &self.warnings)?;
        }
        if let Some(p) = &self.custom_payload {
            require_v4(self.version, "custom payload")?;
            write_bytes_map(out, p)?;
        }
        Ok(())
    }

    pub(crate) fn decode(header: &FrameHeader, body: Bytes) -> Result<Self, WireError> {
        let mut r = Reader::new(body);
        let tracing_id = if header.flags & FLAG_TRACING != 0 {
            Some(r.read_uuid()?)
        } else {
            None
        };
        let warnings = if header.flags & FLAG_WARNING != 0 {
            r.read_string_list()?
        } else {
            Vec::new()
        };
        let custom_payload = if header.flags & FLAG_CUSTOM_PAYLOAD != 0 {
            Some(r.read_bytes_map()?)
        } else {
            None
        };
        let response = Response::decode(header.opcode, header.version, &mut r)?;
        Ok(ResponseFrame {
            version: header.version,
            stream: header.stream,
            tracing_id,
            warnings,
            custom_payload,
            response,
        })
    }
}

pub(crate) fn require_v4(version: u8, what: &'static str) -> Result<(), EncodeError> {
    if version < 4 {
        return Err(EncodeError::UnsupportedInVersion { what, version });
    }
    Ok(())
}

impl DecodeError {
    /// The ERROR response (PROTOCOL_ERROR) a server should send for this failure, if any.
    /// `None` only for [`DecodeErrorKind::Closed`].
    pub fn to_error_frame(&self) -> Option<ResponseFrame> {
        if self.kind == DecodeErrorKind::Closed {
            return None;
        }
        let body = ErrorBody::new(ErrorCode::PROTOCOL, self.to_string());
        Some(ResponseFrame::new(
            self.version.unwrap_or(MAX_SUPPORTED_VERSION),
            self.stream.unwrap_or(0),
            Response::Error(body),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opcode::Opcode;
    use crate::version::{invalid_version_message, version_for_unsupported};

    #[test]
    fn header_round_trips_and_keeps_direction_bit() {
        let h = FrameHeader {
            version: 4,
            is_response: true,
            flags: FLAG_TRACING,
            stream: -2,
            opcode: Opcode::Result as u8,
            body_len: 77,
        };
        let mut out = BytesMut::new();
        h.write(&mut out);
        assert_eq!(&out[..], &[0x84, 0x02, 0xff, 0xfe, 0x08, 0, 0, 0, 77]);
        assert_eq!(FrameHeader::parse(&out), Some(h));
    }

    #[test]
    fn unsupported_version_message_matches_cassandra() {
        assert_eq!(
            invalid_version_message(66),
            "Invalid or unsupported protocol version (66); supported versions are (3/v3, 4/v4, 5/v5)"
        );
        assert_eq!(version_for_unsupported(66), 5);
        assert_eq!(version_for_unsupported(2), 2);
    }
}
