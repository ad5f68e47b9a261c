//! `helenus-protocol`: the CQL native protocol (v3, v4, v5) codec, server side and client side.
//!
//! This crate owns the bytes on the wire: envelope headers, every request and response body,
//! v4 body compression (lz4, snappy), v5 segments (CRC24/CRC32, lz4) and version negotiation.
//! It does not know what a query means (`cql`), how to execute it (`server`) or how values are
//! serialized inside cells (`types`); cells travel as opaque `Bytes`.
//!
//! Modules, from the leaves up (no module cycles; `tests/module_cycles.py` checks):
//! - `version`, `opcode`, `consistency`, `value`: the shared wire enums and constants.
//! - `error`: decode/encode errors (`DecodeError`, `EncodeError`, `WireError`).
//! - `primitives`: readers and writers of the spec's notation (`[string]`, `[bytes]`,
//!   `[value]`, ...); `types`: the column type `[option]` tree.
//! - `event` (EVENT bodies and the schema-change body), `result` (RESULT bodies), `request`,
//!   `response`: message bodies.
//! - `frame`: envelope headers and request/response frames; `compression`, `segment` (v5
//!   framing) and `codec`: the connection codecs.
//!
//! Decoding is zero-copy (values, ids and cells are `Bytes` slices of the read buffer) and
//! hardened: every length is bounds-checked before use and no allocation is sized by an
//! unchecked wire length.
//!
//! A server connection loop, roughly:
//!
//! ```
//! use bytes::BytesMut;
//! use helenus_protocol::*;
//!
//! let mut codec = ServerConnectionCodec::new(DEFAULT_MAX_FRAME_SIZE_BYTES);
//! let mut read_buf = BytesMut::from(&[0x04u8, 0, 0, 1, 0x05, 0, 0, 0, 0][..]); // OPTIONS, v4
//! let mut write_buf = BytesMut::new();
//! loop {
//!     match codec.decode(&mut read_buf) {
//!         Ok(None) => break, // read more from the socket
//!         Ok(Some(req)) => {
//!             let resp = Response::Supported(StringMultimap::new());
//!             codec.encode(&ResponseFrame::new(req.version, req.stream, resp), &mut write_buf).unwrap();
//!         }
//!         Err(e) => {
//!             codec.encode_decode_error(&e, &mut write_buf).unwrap();
//!             if !e.can_continue() {
//!                 break; // flush, then close
//!             }
//!         }
//!     }
//! }
//! assert!(!write_buf.is_empty());
//! ```
//!
//! After STARTUP: `set_compression` (v3/v4 body compression; v5 lz4 segments) once READY is
//! written, and for v5 `enable_segments` right after READY / AUTH_SUCCESS is written. Large
//! results can be streamed with [`ServerConnectionCodec::encode_rows`] and a [`RowsWriter`].

mod codec;
mod compression;
mod consistency;
mod error;
mod event;
mod frame;
mod opcode;
mod primitives;
mod request;
mod response;
mod result;
mod segment;
mod types;
mod value;
mod version;

pub use codec::{
    encode_fatal_error, ClientConnectionCodec, ResponseBatch, ServerConnectionCodec,
    DEFAULT_MAX_FRAME_SIZE_BYTES, SHARED_SEGMENT_MAX_ENVELOPE_BYTES,
};
pub use compression::Compression;
pub use consistency::Consistency;
pub use error::{DecodeError, DecodeErrorKind, EncodeError, WireError};
pub use event::{
    Event, SchemaChange, SchemaChangeTarget, SchemaChangeType, StatusChangeType, TopologyChangeType,
};
pub use frame::{
    FrameHeader, RequestFrame, ResponseFrame, FLAG_COMPRESSION, FLAG_CUSTOM_PAYLOAD, FLAG_TRACING,
    FLAG_USE_BETA, FLAG_WARNING, HEADER_LEN,
};
pub use opcode::Opcode;
pub use primitives::{
    write_bytes, write_bytes_map, write_consistency, write_inet, write_inetaddr, write_long_string,
    write_short_bytes, write_string, write_string_list, write_string_map, write_string_multimap,
    write_value, BytesMap, Reader, StringMap, StringMultimap,
};
pub use request::{
    Batch, BatchQuery, BatchStatement, BatchType, QueryParameters, QueryValues, Request,
};
pub use response::{ErrorBody, ErrorCode, ErrorExtra, Failures, Response};
pub use result::{
    ColumnSpec, EncodedColumnSpecs, EncodedRows, Prepared, PreparedMetadata, ResultBody, Rows,
    RowsMetadata, RowsWriter, TableSpec,
};
pub use segment::{
    crc24, crc32, decode_segment, max_segment_payload, write_envelope_segments, write_segment,
    Segment, MAX_LZ4_SEGMENT_PAYLOAD, MAX_SEGMENT_PAYLOAD,
};
pub use types::{read_type, write_type, MAX_TYPE_DEPTH};
pub use value::Value;
pub use version::{
    invalid_version_message, is_supported_version, version_for_unsupported, MAX_SUPPORTED_VERSION,
    MIN_SUPPORTED_VERSION,
};
