//! Requests (client -> server): STARTUP, OPTIONS, QUERY, PREPARE, EXECUTE, BATCH, REGISTER,
//! AUTH_RESPONSE.
//!
//! Query parameters: `<consistency>[short] <flags>` (a [byte] before v5, an [int] in v5), then in
//! this order, each only when its flag is set: values (0x01; with 0x40 each value is preceded by
//! a [string] name), page size [int] (0x04), paging state [bytes] (0x08), serial consistency
//! (0x10), default timestamp [long] (0x20), v5 keyspace [string] (0x80), v5 now_in_seconds [int]
//! (0x100). 0x02 = skip result metadata.

use bytes::{BufMut, Bytes, BytesMut};

use crate::consistency::Consistency;
use crate::error::require_v5;
use crate::error::{EncodeError, WireError};
use crate::opcode::Opcode;
use crate::primitives::{
    write_bytes, write_consistency, write_long_string, write_short_bytes, write_string,
    write_string_list, write_string_map, write_value, Reader, StringMap,
};
use crate::value::Value;

const Q_VALUES: u32 = 0x01;
const Q_SKIP_METADATA: u32 = 0x02;
const Q_PAGE_SIZE: u32 = 0x04;
const Q_PAGING_STATE: u32 = 0x08;
const Q_SERIAL_CONSISTENCY: u32 = 0x10;
const Q_DEFAULT_TIMESTAMP: u32 = 0x20;
const Q_NAMES_FOR_VALUES: u32 = 0x40;
const Q_KEYSPACE: u32 = 0x80;
const Q_NOW_IN_SECONDS: u32 = 0x100;

/// Bound values: by position or by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryValues {
    Positional(Vec<Value>),
    Named(Vec<(String, Value)>),
}

impl Default for QueryValues {
    fn default() -> Self {
        QueryValues::Positional(Vec::new())
    }
}

impl QueryValues {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            QueryValues::Positional(v) => v.len(),
            QueryValues::Named(v) => v.len(),
        }
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn write(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        let n = u16::try_from(self.len()).map_err(|_| EncodeError::TooLong {
            what: "values",
            len: self.len(),
        })?;
        out.put_u16(n);
        match self {
            QueryValues::Positional(v) => {
                for x in v {
                    write_value(out, x)?;
                }
            }
            QueryValues::Named(v) => {
                for (name, x) in v {
                    write_string(out, name)?;
                    write_value(out, x)?;
                }
            }
        }
        Ok(())
    }

    fn read(r: &mut Reader, named: bool) -> Result<QueryValues, WireError> {
        let n = r.read_u16()? as usize;
        // A value is at least its 4-byte length; a name adds at least 2.
        let min = if named { 6 } else { 4 };
        let mut cap = r.capped(n) / min;
        cap = cap.min(n);
        if named {
            let mut v = Vec::with_capacity(cap);
            for _ in 0..n {
                let name = r.read_string()?;
                v.push((name, r.read_value()?));
            }
            Ok(QueryValues::Named(v))
        } else {
            let mut v = Vec::with_capacity(cap);
            for _ in 0..n {
                v.push(r.read_value()?);
            }
            Ok(QueryValues::Positional(v))
        }
    }
}

/// The parameters of QUERY and EXECUTE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryParameters {
    pub consistency: Consistency,
    pub values: QueryValues,
    pub skip_metadata: bool,
    pub page_size: Option<i32>,
    pub paging_state: Option<Bytes>,
    pub serial_consistency: Option<Consistency>,
    /// Microseconds since the epoch.
    pub default_timestamp: Option<i64>,
    /// v5: keyspace to run in.
    pub keyspace: Option<String>,
    /// v5: "now" for TTL/expiry computations (testing aid).
    pub now_in_seconds: Option<i32>,
}

impl Default for QueryParameters {
    fn default() -> Self {
        QueryParameters {
            consistency: Consistency::One,
            values: QueryValues::default(),
            skip_metadata: false,
            page_size: None,
            paging_state: None,
            serial_consistency: None,
            default_timestamp: None,
            keyspace: None,
            now_in_seconds: None,
        }
    }
}

fn write_flags(out: &mut BytesMut, version: u8, flags: u32) {
    if version >= 5 {
        out.put_u32(flags);
    } else {
        // Only flags below 0x80 exist before v5; callers checked.
        out.put_u8(flags as u8);
    }
}

fn read_flags(r: &mut Reader, version: u8) -> Result<u32, WireError> {
    if version >= 5 {
        Ok(r.read_i32()? as u32)
    } else {
        Ok(u32::from(r.read_u8()?))
    }
}

impl QueryParameters {
    /// Encodes `<consistency><flags>...` for `version`.
    pub fn encode(&self, version: u8, out: &mut BytesMut) -> Result<(), EncodeError> {
        let mut flags = 0u32;
        if !self.values.is_empty() {
            flags |= Q_VALUES;
            if matches!(self.values, QueryValues::Named(_)) {
                flags |= Q_NAMES_FOR_VALUES;
            }
        }
        if self.skip_metadata {
            flags |= Q_SKIP_METADATA;
        }
        if self.page_size.is_some() {
            flags |= Q_PAGE_SIZE;
        }
        if self.paging_state.is_some() {
            flags |= Q_PAGING_STATE;
        }
        if self.serial_consistency.is_some() {
            flags |= Q_SERIAL_CONSISTENCY;
        }
        if self.default_timestamp.is_some() {
            flags |= Q_DEFAULT_TIMESTAMP;
        }
        if self.keyspace.is_some() {
            require_v5(version, "per-query keyspace")?;
            flags |= Q_KEYSPACE;
        }
        if self.now_in_seconds.is_some() {
            require_v5(version, "now_in_seconds")?;
            flags |= Q_NOW_IN_SECONDS;
        }
        write_consistency(out, self.consistency);
        write_flags(out, version, flags);
        if flags & Q_VALUES != 0 {
            self.values.write(out)?;
        }
        if let Some(p) = self.page_size {
            out.put_i32(p);
        }
        if let Some(s) = &self.paging_state {
            write_bytes(out, Some(s))?;
        }
        if let Some(c) = self.serial_consistency {
            write_consistency(out, c);
        }
        if let Some(t) = self.default_timestamp {
            out.put_i64(t);
        }
        if let Some(k) = &self.keyspace {
            write_string(out, k)?;
        }
        if let Some(n) = self.now_in_seconds {
            out.put_i32(n);
        }
        Ok(())
    }

    /// Decodes query parameters for `version`.
    pub fn decode(r: &mut Reader, version: u8) -> Result<Self, WireError> {
        let consistency = r.read_consistency()?;
        let flags = read_flags(r, version)?;
        let values = if flags & Q_VALUES != 0 {
            QueryValues::read(r, flags & Q_NAMES_FOR_VALUES != 0)?
        } else {
            QueryValues::default()
        };
        let page_size = if flags & Q_PAGE_SIZE != 0 {
            Some(r.read_i32()?)
        } else {
            None
        };
        let paging_state = if flags & Q_PAGING_STATE != 0 {
            r.read_bytes()?
        } else {
            None
        };
        let serial_consistency = if flags & Q_SERIAL_CONSISTENCY != 0 {
            Some(r.read_consistency()?)
        } else {
            None
        };
        let default_timestamp = if flags & Q_DEFAULT_TIMESTAMP != 0 {
            Some(r.read_i64()?)
        } else {
            None
        };
        let v5 = version >= 5;
        let keyspace = if v5 && flags & Q_KEYSPACE != 0 {
            Some(r.read_string()?)
        } else {
            None
        };
        let now_in_seconds = if v5 && flags & Q_NOW_IN_SECONDS != 0 {
            Some(r.read_i32()?)
        } else {
            None
        };
        Ok(QueryParameters {
            consistency,
            values,
            skip_metadata: flags & Q_SKIP_METADATA != 0,
            page_size,
            paging_state,
            serial_consistency,
            default_timestamp,
            keyspace,
            now_in_seconds,
        })
    }
}

/// LOGGED (0), UNLOGGED (1) or COUNTER (2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum BatchType {
    Logged = 0,
    Unlogged = 1,
    Counter = 2,
}

/// One statement of a batch: query text or prepared id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchQuery {
    Query(String),
    Prepared(Bytes),
}

/// A batch statement and its values (always positional in a BATCH).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchStatement {
    pub query: BatchQuery,
    pub values: Vec<Value>,
}

/// A BATCH request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub batch_type: BatchType,
    pub statements: Vec<BatchStatement>,
    pub consistency: Consistency,
    pub serial_consistency: Option<Consistency>,
    pub default_timestamp: Option<i64>,
    /// v5
    pub keyspace: Option<String>,
    /// v5
    pub now_in_seconds: Option<i32>,
}

/// A request message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Options such as CQL_VERSION, COMPRESSION, DRIVER_NAME.
    Startup(StringMap),
    Options,
    Query {
        query: String,
        params: QueryParameters,
    },
    /// `keyspace` is v5 only.
    Prepare {
        query: String,
        keyspace: Option<String>,
    },
    /// `result_metadata_id` is required in v5 and absent before.
    Execute {
        id: Bytes,
        result_metadata_id: Option<Bytes>,
        params: QueryParameters,
    },
    Batch(Batch),
    Register {
        events: Vec<String>,
    },
    AuthResponse {
        token: Option<Bytes>,
    },
}

impl Request {
    /// This request's opcode.
    pub fn opcode(&self) -> Opcode {
        match self {
            Request::Startup(_) => Opcode::Startup,
            Request::Options => Opcode::Options,
            Request::Query { .. } => Opcode::Query,
            Request::Prepare { .. } => Opcode::Prepare,
            Request::Execute { .. } => Opcode::Execute,
            Request::Batch(_) => Opcode::Batch,
            Request::Register { .. } => Opcode::Register,
            Request::AuthResponse { .. } => Opcode::AuthResponse,
        }
    }

    /// Appends the body for `version`.
    pub fn encode(&self, version: u8, out: &mut BytesMut) -> Result<(), EncodeError> {
        match self {
            Request::Startup(m) => write_string_map(out, m),
            Request::Options => Ok(()),
            Request::Query { query, params } => {
                write_long_string(out, query)?;
                params.encode(version, out)
            }
            Request::Prepare { query, keyspace } => {
                write_long_string(out, query)?;
                if version >= 5 {
                    out.put_u32(if keyspace.is_some() { 0x01 } else { 0 });
                    if let Some(k) = keyspace {
                        write_string(out, k)?;
                    }
                } else if keyspace.is_some() {
                    return Err(EncodeError::UnsupportedInVersion {
                        what: "PREPARE keyspace",
                        version,
                    });
                }
                Ok(())
            }
            Request::Execute {
                id,
                result_metadata_id,
                params,
            } => {
                write_short_bytes(out, id)?;
                if version >= 5 {
                    let rid = result_metadata_id
                        .as_ref()
                        .ok_or(EncodeError::Invalid("v5 EXECUTE needs result_metadata_id"))?;
                    write_short_bytes(out, rid)?;
                }
                params.encode(version, out)
            }
            Request::Batch(b) => encode_batch(b, version, out),
            Request::Register { events } => write_string_list(out, events),
            Request::AuthResponse { token } => write_bytes(out, token.as_deref()),
        }
    }

    /// Decodes a request body; `opcode` must be a request opcode.
    pub fn decode(opcode: u8, version: u8, r: &mut Reader) -> Result<Request, WireError> {
        let op = Opcode::from_u8(opcode).ok_or(WireError::UnexpectedOpcode(opcode))?;
        Ok(match op {
            Opcode::Startup => Request::Startup(r.read_string_map()?),
            Opcode::Options => Request::Options,
            Opcode::Query => {
                let query = r.read_long_string()?;
                Request::Query {
                    query,
                    params: QueryParameters::decode(r, version)?,
                }
            }
            Opcode::Prepare => {
                let query = r.read_long_string()?;
                let mut keyspace = None;
                if version >= 5 {
                    let flags = r.read_i32()?;
                    if flags & 0x01 != 0 {
                        keyspace = Some(r.read_string()?);
                    }
                }
                Request::Prepare { query, keyspace }
            }
            Opcode::Execute => {
                let id = r.read_short_bytes()?;
                let result_metadata_id = if version >= 5 {
                    Some(r.read_short_bytes()?)
                } else {
                    None
                };
                let params = QueryParameters::decode(r, version)?;
                Request::Execute {
                    id,
                    result_metadata_id,
                    params,
                }
            }
            Opcode::Batch => Request::Batch(decode_batch(r, version)?),
            Opcode::Register => Request::Register {
                events: r.read_string_list()?,
            },
            Opcode::AuthResponse => Request::AuthResponse {
                token: r.read_bytes()?,
            },
            other => return Err(WireError::UnexpectedOpcode(other as u8)),
        })
    }
}

fn encode_batch(b: &Batch, version: u8, out: &mut BytesMut) -> Result<(), EncodeError> {
    out.put_u8(b.batch_type as u8);
    let n = u16::try_from(b.statements.len()).map_err(|_| EncodeError::TooLong {
        what: "batch",
        len: b.statements.len(),
    })?;
    out.put_u16(n);
    for s in &b.statements {
        match &s.query {
            BatchQuery::Query(q) => {
                out.put_u8(0);
                write_long_string(out, q)?;
            }
            BatchQuery::Prepared(id) => {
                out.put_u8(1);
                write_short_bytes(out, id)?;
            }
        }
        let n = u16::try_from(s.values.len()).map_err(|_| EncodeError::TooLong {
            what: "values",
            len: s.values.len(),
        })?;
        out.put_u16(n);
        for v in &s.values {
            write_value(out, v)?;
        }
    }
    let mut flags = 0u32;
    if b.serial_consistency.is_some() {
        flags |= Q_SERIAL_CONSISTENCY;
    }
    if b.default_timestamp.is_some() {
        flags |= Q_DEFAULT_TIMESTAMP;
    }
    if b.keyspace.is_some() {
        require_v5(version, "batch keyspace")?;
        flags |= Q_KEYSPACE;
    }
    if b.now_in_seconds.is_some() {
        require_v5(version, "batch now_in_seconds")?;
        flags |= Q_NOW_IN_SECONDS;
    }
    write_consistency(out, b.consistency);
    write_flags(out, version, flags);
    if let Some(c) = b.serial_consistency {
        write_consistency(out, c);
    }
    if let Some(t) = b.default_timestamp {
        out.put_i64(t);
    }
    if let Some(k) = &b.keyspace {
        write_string(out, k)?;
    }
    if let Some(n) = b.now_in_seconds {
        out.put_i32(n);
    }
    Ok(())
}

/// Statement values are always positional: the spec's 0x40 "names for values" flag is marked
/// unsupported for BATCH and Cassandra reads the values positionally regardless, so we do too.
fn decode_batch(r: &mut Reader, version: u8) -> Result<Batch, WireError> {
    let batch_type = match r.read_u8()? {
        0 => BatchType::Logged,
        1 => BatchType::Unlogged,
        2 => BatchType::Counter,
        other => {
            return Err(WireError::UnknownName {
                what: "batch type",
                value: other.to_string(),
            })
        }
    };
    let n = r.read_u16()? as usize;
    // Each statement is at least kind(1) + [short bytes](2) + value count(2).
    let mut statements = Vec::with_capacity(r.capped(n) / 5);
    for _ in 0..n {
        let query = match r.read_u8()? {
            0 => BatchQuery::Query(r.read_long_string()?),
            1 => BatchQuery::Prepared(r.read_short_bytes()?),
            _ => return Err(WireError::Invalid("batch statement kind must be 0 or 1")),
        };
        let values = match QueryValues::read(r, false)? {
            QueryValues::Positional(v) => v,
            QueryValues::Named(_) => Vec::new(),
        };
        statements.push(BatchStatement { query, values });
    }
    let consistency = r.read_consistency()?;
    let flags = read_flags(r, version)?;
    let serial_consistency = if flags & Q_SERIAL_CONSISTENCY != 0 {
        Some(r.read_consistency()?)
    } else {
        None
    };
    let default_timestamp = if flags & Q_DEFAULT_TIMESTAMP != 0 {
        Some(r.read_i64()?)
    } else {
        None
    };
    let v5 = version >= 5;
    let keyspace = if v5 && flags & Q_KEYSPACE != 0 {
        Some(r.read_string()?)
    } else {
        None
    };
    let now_in_seconds = if v5 && flags & Q_NOW_IN_SECONDS != 0 {
        Some(r.read_i32()?)
    } else {
        None
    };
    Ok(Batch {
        batch_type,
        statements,
        consistency,
        serial_consistency,
        default_timestamp,
        keyspace,
        now_in_seconds,
    })
}
