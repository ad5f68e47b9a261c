//! Typed errors for decoding and encoding.

use std::fmt;

/// A malformed body (or primitive) inside a well-framed envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// A read needed more bytes than remain.
    Truncated { needed: usize, remaining: usize },
    /// A length prefix that must not be negative was.
    NegativeLength(i64),
    /// A [string] or [long string] was not UTF-8.
    InvalidUtf8,
    /// An [inet] / [inetaddr] address length other than 4 or 16.
    InvalidInetLength(u8),
    /// A consistency code not in the spec.
    UnknownConsistency(u16),
    /// A RESULT kind not in the spec.
    UnknownResultKind(i32),
    /// A column type [option] id not in the spec.
    UnknownTypeId(u16),
    /// Column types nested deeper than [`crate::types::MAX_TYPE_DEPTH`].
    TypeNestingTooDeep,
    /// An enum-like string or byte (batch type, event type, change type...) not in the spec.
    UnknownName { what: &'static str, value: String },
    /// A value that is structurally wrong for this message.
    Invalid(&'static str),
    /// The opcode cannot appear in this direction (e.g. a RESULT sent to the server).
    UnexpectedOpcode(u8),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Truncated { needed, remaining } => {
                write!(
                    f,
                    "Not enough bytes to read: needed {needed}, {remaining} remaining"
                )
            }
            WireError::NegativeLength(n) => write!(f, "invalid negative length {n}"),
            WireError::InvalidUtf8 => write!(f, "string is not valid UTF-8"),
            WireError::InvalidInetLength(n) => write!(f, "invalid IP address length {n}"),
            WireError::UnknownConsistency(c) => write!(f, "unknown consistency level 0x{c:04x}"),
            WireError::UnknownResultKind(k) => write!(f, "unknown RESULT kind {k}"),
            WireError::UnknownTypeId(t) => write!(f, "unknown column type id 0x{t:04x}"),
            WireError::TypeNestingTooDeep => write!(f, "column type nested too deeply"),
            WireError::UnknownName { what, value } => write!(f, "unknown {what} {value:?}"),
            WireError::Invalid(what) => write!(f, "invalid message: {what}"),
            WireError::UnexpectedOpcode(op) => {
                write!(f, "unexpected opcode 0x{op:02x} for this direction")
            }
        }
    }
}

impl std::error::Error for WireError {}

/// Why a frame could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// The version byte names a protocol version we do not speak.
    UnsupportedVersion(u8),
    /// The direction bit says the frame travels the other way.
    WrongDirection,
    /// The envelope length exceeds the configured maximum.
    FrameTooLarge { length_bytes: u64, max_bytes: usize },
    /// A frame uses a different version from the one negotiated on this connection.
    VersionMismatch { got: u8, negotiated: u8 },
    /// The body of a well-framed envelope is malformed.
    Body(WireError),
    /// The opcode byte is not a known opcode.
    UnknownOpcode(u8),
    /// The compression flag is set but no compression was negotiated.
    CompressionNotNegotiated,
    /// Decompressing a body or segment failed.
    Decompression(&'static str),
    /// A v5 segment header failed its CRC24.
    SegmentHeaderCrc,
    /// A v5 segment payload failed its CRC32.
    SegmentPayloadCrc,
    /// A v5 segment header is inconsistent (sizes out of range).
    SegmentMalformed(&'static str),
    /// The codec already reported a fatal error; the connection must be closed.
    Closed,
}

/// A decode failure. [`DecodeError::fatal`] says whether the connection must close after the
/// error response is sent; `stream`/`version` say where and how to answer, when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    pub kind: DecodeErrorKind,
    /// Stream id of the offending frame, when the header was readable.
    pub stream: Option<i16>,
    /// Protocol version to answer with (for unsupported versions: the one Cassandra uses).
    pub version: Option<u8>,
    /// True when the byte stream cannot be resynchronised: answer, then close.
    pub fatal: bool,
}

impl DecodeError {
    pub(crate) fn fatal(kind: DecodeErrorKind, stream: Option<i16>, version: Option<u8>) -> Self {
        DecodeError {
            kind,
            stream,
            version,
            fatal: true,
        }
    }

    pub(crate) fn body(kind: DecodeErrorKind, stream: i16, version: u8) -> Self {
        DecodeError {
            kind,
            stream: Some(stream),
            version: Some(version),
            fatal: false,
        }
    }

    /// True when the connection can keep reading frames after answering this error.
    pub fn can_continue(&self) -> bool {
        !self.fatal
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            DecodeErrorKind::UnsupportedVersion(v) => {
                write!(f, "{}", crate::version::invalid_version_message(*v))
            }
            DecodeErrorKind::WrongDirection => {
                write!(f, "Wrong protocol direction (expected REQUEST, got RESPONSE)")
            }
            DecodeErrorKind::FrameTooLarge { length_bytes, max_bytes } => write!(
                f,
                "Request is too big: length {length_bytes} exceeds maximum allowed length {max_bytes}."
            ),
            DecodeErrorKind::VersionMismatch { got, negotiated } => write!(
                f,
                "Invalid message version. Got {got}/v{got} but previous messages on this \
                 connection had version {negotiated}/v{negotiated}"
            ),
            DecodeErrorKind::Body(e) => write!(f, "{e}"),
            DecodeErrorKind::UnknownOpcode(op) => write!(f, "Unknown opcode {op}"),
            DecodeErrorKind::CompressionNotNegotiated => write!(
                f,
                "Received frame with compression flag set, but no compressor is set for the connection"
            ),
            DecodeErrorKind::Decompression(what) => write!(f, "decompression failed: {what}"),
            DecodeErrorKind::SegmentHeaderCrc => write!(f, "segment header CRC24 mismatch"),
            DecodeErrorKind::SegmentPayloadCrc => write!(f, "segment payload CRC32 mismatch"),
            DecodeErrorKind::SegmentMalformed(what) => write!(f, "malformed segment: {what}"),
            DecodeErrorKind::Closed => write!(f, "connection already failed"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Why a message could not be encoded (a caller bug or a value the wire cannot carry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodeError {
    /// A [string] longer than 65535 bytes, or a [long string]/[bytes] over i32::MAX.
    TooLong { what: &'static str, len: usize },
    /// A feature the chosen protocol version cannot express.
    UnsupportedInVersion { what: &'static str, version: u8 },
    /// A row had a different number of cells than the metadata has columns.
    RowShape { expected: usize, got: usize },
    /// The message is internally inconsistent.
    Invalid(&'static str),
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::TooLong { what, len } => write!(f, "{what} too long ({len})"),
            EncodeError::UnsupportedInVersion { what, version } => {
                write!(f, "{what} is not supported in protocol v{version}")
            }
            EncodeError::RowShape { expected, got } => {
                write!(f, "row has {got} cells, metadata has {expected} columns")
            }
            EncodeError::Invalid(what) => write!(f, "invalid message: {what}"),
        }
    }
}

impl std::error::Error for EncodeError {}

/// Refuses `what` below protocol v5.
pub(crate) fn require_v5(version: u8, what: &'static str) -> Result<(), EncodeError> {
    if version < 5 {
        return Err(EncodeError::UnsupportedInVersion { what, version });
    }
    Ok(())
}
