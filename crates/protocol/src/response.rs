//! Responses (server -> client): ERROR, READY, AUTHENTICATE, SUPPORTED, RESULT, EVENT,
//! AUTH_CHALLENGE, AUTH_SUCCESS; plus the schema-change and event bodies.

use std::net::IpAddr;

use bytes::{BufMut, Bytes, BytesMut};

use crate::consistency::Consistency;
use crate::error::{EncodeError, WireError};
use crate::event::Event;
use crate::opcode::Opcode;
use crate::primitives::{
    write_bytes, write_consistency, write_inetaddr, write_short_bytes, write_string,
    write_string_list, write_string_multimap, Reader, StringMultimap,
};
use crate::result::ResultBody;

/// An ERROR code. Constants carry the spec's codes; unknown codes are preserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    pub const SERVER: ErrorCode = ErrorCode(0x0000);
    pub const PROTOCOL: ErrorCode = ErrorCode(0x000A);
    pub const BAD_CREDENTIALS: ErrorCode = ErrorCode(0x0100);
    pub const UNAVAILABLE: ErrorCode = ErrorCode(0x1000);
    pub const OVERLOADED: ErrorCode = ErrorCode(0x1001);
    pub const IS_BOOTSTRAPPING: ErrorCode = ErrorCode(0x1002);
    pub const TRUNCATE: ErrorCode = ErrorCode(0x1003);
    pub const WRITE_TIMEOUT: ErrorCode = ErrorCode(0x1100);
    pub const READ_TIMEOUT: ErrorCode = ErrorCode(0x1200);
    pub const READ_FAILURE: ErrorCode = ErrorCode(0x1300);
    pub const FUNCTION_FAILURE: ErrorCode = ErrorCode(0x1400);
    pub const WRITE_FAILURE: ErrorCode = ErrorCode(0x1500);
    pub const CDC_WRITE_FAILURE: ErrorCode = ErrorCode(0x1600);
    pub const CAS_WRITE_UNKNOWN: ErrorCode = ErrorCode(0x1700);
    pub const SYNTAX: ErrorCode = ErrorCode(0x2000);
    pub const UNAUTHORIZED: ErrorCode = ErrorCode(0x2100);
    pub const INVALID: ErrorCode = ErrorCode(0x2200);
    pub const CONFIG: ErrorCode = ErrorCode(0x2300);
    pub const ALREADY_EXISTS: ErrorCode = ErrorCode(0x2400);
    pub const UNPREPARED: ErrorCode = ErrorCode(0x2500);
}

/// Per-replica failures of READ_FAILURE / WRITE_FAILURE. v4 sends only `num_failures`;
/// v5 sends the reason map (and `num_failures` is then its length).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Failures {
    pub num_failures: i32,
    /// (replica address, RequestFailureReason code)
    pub reason_map: Vec<(IpAddr, u16)>,
}

/// The code-specific fields after an ERROR's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorExtra {
    None,
    Unavailable {
        consistency: Consistency,
        required: i32,
        alive: i32,
    },
    /// `contentions` is v5 only and present iff `write_type == "CAS"`.
    WriteTimeout {
        consistency: Consistency,
        received: i32,
        block_for: i32,
        write_type: String,
        contentions: Option<u16>,
    },
    ReadTimeout {
        consistency: Consistency,
        received: i32,
        block_for: i32,
        data_present: bool,
    },
    ReadFailure {
        consistency: Consistency,
        received: i32,
        block_for: i32,
        failures: Failures,
        data_present: bool,
    },
    WriteFailure {
        consistency: Consistency,
        received: i32,
        block_for: i32,
        failures: Failures,
        write_type: String,
    },
    FunctionFailure {
        keyspace: String,
        function: String,
        arg_types: Vec<String>,
    },
    CasWriteUnknown {
        consistency: Consistency,
        received: i32,
        block_for: i32,
    },
    AlreadyExists {
        keyspace: String,
        table: String,
    },
    Unprepared {
        id: Bytes,
    },
}

/// Longest error message sent: a [string] holds at most 65535 bytes. Messages quote the input
/// (`Invalid FLOAT constant (<3 MB of digits>) ...`), and one that did not fit used to turn a
/// clean InvalidRequest into a "cannot encode the response" server error.
const MAX_ERROR_MESSAGE_BYTES: usize = 8 * 1024;

/// `message` cut at a character boundary to at most [`MAX_ERROR_MESSAGE_BYTES`].
fn truncated_message(message: &str) -> &str {
    if message.len() <= MAX_ERROR_MESSAGE_BYTES {
        return message;
    }
    let mut end = MAX_ERROR_MESSAGE_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    message.get(..end).unwrap_or_default()
}

/// An ERROR body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorBody {
    pub code: ErrorCode,
    pub message: String,
    pub extra: ErrorExtra,
}

impl ErrorBody {
    /// An error without extra fields.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorBody {
            code,
            message: message.into(),
            extra: ErrorExtra::None,
        }
    }

    fn encode(&self, version: u8, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_i32(self.code.0);
        write_string(out, truncated_message(&self.message))?;
        self.extra.encode(version, out)
    }

    fn decode(r: &mut Reader, version: u8) -> Result<Self, WireError> {
        let code = ErrorCode(r.read_i32()?);
        let message = r.read_string()?;
        let extra = match code {
            ErrorCode::UNAVAILABLE => ErrorExtra::Unavailable {
                consistency: r.read_consistency()?,
                required: r.read_i32()?,
                alive: r.read_i32()?,
            },
            ErrorCode::WRITE_TIMEOUT => {
                let consistency = r.read_consistency()?;
                let received = r.read_i32()?;
                let block_for = r.read_i32()?;
                let write_type = r.read_string()?;
                let contentions = if version >= 5 && write_type == "CAS" {
                    Some(r.read_u16()?)
                } else {
                    None
                };
                ErrorExtra::WriteTimeout {
                    consistency,
                    received,
                    block_for,
                    write_type,
                    contentions,
                }
            }
            ErrorCode::READ_TIMEOUT => ErrorExtra::ReadTimeout {
                consistency: r.read_consistency()?,
                received: r.read_i32()?,
                block_for: r.read_i32()?,
                data_present: r.read_u8()? != 0,
            },
            ErrorCode::READ_FAILURE => ErrorExtra::ReadFailure {
                consistency: r.read_consistency()?,
                received: r.read_i32()?,
                block_for: r.read_i32()?,
                failures: read_failures(r, version)?,
                data_present: r.read_u8()? != 0,
            },
            ErrorCode::WRITE_FAILURE => ErrorExtra::WriteFailure {
                consistency: r.read_consistency()?,
                received: r.read_i32()?,
                block_for: r.read_i32()?,
                failures: read_failures(r, version)?,
                write_type: r.read_string()?,
            },
            ErrorCode::FUNCTION_FAILURE => ErrorExtra::FunctionFailure {
                keyspace: r.read_string()?,
                function: r.read_string()?,
                arg_types: r.read_string_list()?,
            },
            ErrorCode::CAS_WRITE_UNKNOWN => ErrorExtra::CasWriteUnknown {
                consistency: r.read_consistency()?,
                received: r.read_i32()?,
                block_for: r.read_i32()?,
            },
            ErrorCode::ALREADY_EXISTS => ErrorExtra::AlreadyExists {
                keyspace: r.read_string()?,
                table: r.read_string()?,
            },
            ErrorCode::UNPREPARED => ErrorExtra::Unprepared {
                id: r.read_short_bytes()?,
            },
            _ => ErrorExtra::None,
        };
        Ok(ErrorBody {
            code,
            message,
            extra,
        })
    }
}

impl ErrorExtra {
    /// The code-specific part of an ERROR body, after code and message.
    fn encode(&self, version: u8, out: &mut BytesMut) -> Result<(), EncodeError> {
        match self {
            ErrorExtra::None => {}
            ErrorExtra::Unavailable {
                consistency,
                required,
                alive,
            } => {
                write_consistency(out, *consistency);
                out.put_i32(*required);
                out.put_i32(*alive);
            }
            ErrorExtra::WriteTimeout {
                consistency,
                received,
                block_for,
                write_type,
                contentions,
            } => {
                write_progress(out, *consistency, *received, *block_for);
                write_string(out, write_type)?;
                if version >= 5 && write_type == "CAS" {
                    out.put_u16(contentions.unwrap_or(0));
                }
            }
            ErrorExtra::ReadTimeout {
                consistency,
                received,
                block_for,
                data_present,
            } => {
                write_progress(out, *consistency, *received, *block_for);
                out.put_u8(u8::from(*data_present));
            }
            ErrorExtra::ReadFailure {
                consistency,
                received,
                block_for,
                failures,
                data_present,
            } => {
                write_progress(out, *consistency, *received, *block_for);
                write_failures(out, version, failures)?;
                out.put_u8(u8::from(*data_present));
            }
            ErrorExtra::WriteFailure {
                consistency,
                received,
                block_for,
                failures,
                write_type,
            } => {
                write_progress(out, *consistency, *received, *block_for);
                write_failures(out, version, failures)?;
                write_string(out, write_type)?;
            }
            ErrorExtra::FunctionFailure {
                keyspace,
                function,
                arg_types,
            } => {
                write_string(out, keyspace)?;
                write_string(out, function)?;
                write_string_list(out, arg_types)?;
            }
            ErrorExtra::CasWriteUnknown {
                consistency,
                received,
                block_for,
            } => {
                write_progress(out, *consistency, *received, *block_for);
            }
            ErrorExtra::AlreadyExists { keyspace, table } => {
                write_string(out, keyspace)?;
                write_string(out, table)?;
            }
            ErrorExtra::Unprepared { id } => write_short_bytes(out, id)?,
        }
        Ok(())
    }
}

/// The consistency, responses received and responses required that every timeout and failure
/// error starts with.
fn write_progress(out: &mut BytesMut, consistency: Consistency, received: i32, block_for: i32) {
    write_consistency(out, consistency);
    out.put_i32(received);
    out.put_i32(block_for);
}

fn write_failures(out: &mut BytesMut, version: u8, f: &Failures) -> Result<(), EncodeError> {
    if version >= 5 {
        let n = i32::try_from(f.reason_map.len()).map_err(|_| EncodeError::TooLong {
            what: "reason map",
            len: f.reason_map.len(),
        })?;
        out.put_i32(n);
        for (addr, code) in &f.reason_map {
            write_inetaddr(out, addr);
            out.put_u16(*code);
        }
    } else {
        out.put_i32(f.num_failures);
    }
    Ok(())
}

fn read_failures(r: &mut Reader, version: u8) -> Result<Failures, WireError> {
    if version < 5 {
        return Ok(Failures {
            num_failures: r.read_i32()?,
            reason_map: Vec::new(),
        });
    }
    // An entry is at least a 5-byte IPv4 [inetaddr] and a 2-byte code.
    let n = r.read_int_count(7)?;
    let mut reason_map = Vec::with_capacity(n);
    for _ in 0..n {
        let addr = r.read_inetaddr()?;
        reason_map.push((addr, r.read_u16()?));
    }
    Ok(Failures {
        num_failures: n as i32,
        reason_map,
    })
}

/// A response message.
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    Error(ErrorBody),
    Ready,
    Authenticate {
        authenticator: String,
    },
    /// e.g. CQL_VERSION, COMPRESSION, PROTOCOL_VERSIONS.
    Supported(StringMultimap),
    Result(ResultBody),
    Event(Event),
    AuthChallenge {
        token: Option<Bytes>,
    },
    AuthSuccess {
        token: Option<Bytes>,
    },
}

impl Response {
    /// This response's opcode.
    pub fn opcode(&self) -> Opcode {
        match self {
            Response::Error(_) => Opcode::Error,
            Response::Ready => Opcode::Ready,
            Response::Authenticate { .. } => Opcode::Authenticate,
            Response::Supported(_) => Opcode::Supported,
            Response::Result(_) => Opcode::Result,
            Response::Event(_) => Opcode::Event,
            Response::AuthChallenge { .. } => Opcode::AuthChallenge,
            Response::AuthSuccess { .. } => Opcode::AuthSuccess,
        }
    }

    /// Appends the body for `version`.
    pub fn encode(&self, version: u8, out: &mut BytesMut) -> Result<(), EncodeError> {
        match self {
            Response::Error(e) => e.encode(version, out),
            Response::Ready => Ok(()),
            Response::Authenticate { authenticator } => write_string(out, authenticator),
            Response::Supported(m) => write_string_multimap(out, m),
            Response::Result(r) => r.encode(version, out),
            Response::Event(e) => e.encode(out),
            Response::AuthChallenge { token } | Response::AuthSuccess { token } => {
                write_bytes(out, token.as_deref())
            }
        }
    }

    /// Decodes a response body; `opcode` must be a response opcode.
    pub fn decode(opcode: u8, version: u8, r: &mut Reader) -> Result<Response, WireError> {
        let op = Opcode::from_u8(opcode).ok_or(WireError::UnexpectedOpcode(opcode))?;
        Ok(match op {
            Opcode::Error => Response::Error(ErrorBody::decode(r, version)?),
            Opcode::Ready => Response::Ready,
            Opcode::Authenticate => Response::Authenticate {
                authenticator: r.read_string()?,
            },
            Opcode::Supported => Response::Supported(r.read_string_multimap()?),
            Opcode::Result => Response::Result(ResultBody::decode(r, version)?),
            Opcode::Event => Response::Event(Event::decode(r)?),
            Opcode::AuthChallenge => Response::AuthChallenge {
                token: r.read_bytes()?,
            },
            Opcode::AuthSuccess => Response::AuthSuccess {
                token: r.read_bytes()?,
            },
            other => return Err(WireError::UnexpectedOpcode(other as u8)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 11: an InvalidRequest quoting a 3 MB literal could not be encoded at all.
    #[test]
    fn an_error_message_longer_than_a_string_is_cut_not_refused() {
        let long = format!("Invalid FLOAT constant ({}é.5)", "7".repeat(3_000_000));
        let body = ErrorBody::new(ErrorCode::INVALID, long.clone());
        let mut out = BytesMut::new();
        Response::Error(body).encode(4, &mut out).unwrap();
        let mut r = Reader::new(out.freeze());
        match Response::decode(Opcode::Error as u8, 4, &mut r).unwrap() {
            Response::Error(e) => {
                assert_eq!(e.code, ErrorCode::INVALID);
                assert!(e.message.len() <= MAX_ERROR_MESSAGE_BYTES);
                assert!(long.starts_with(&e.message));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(truncated_message("short"), "short");
        let accents = "é".repeat(MAX_ERROR_MESSAGE_BYTES);
        assert!(truncated_message(&accents).len() <= MAX_ERROR_MESSAGE_BYTES);
    }
}
