//! The frozen form of mutations: the compact, versioned bytes replicas exchange (and digest).
//!
//! ```text
//! frozen      = version:u8 (FORMAT_VERSION) count:varint mutation*
//! mutation    = table:[16] key:bytes token:zigzag flags:u8 (1 = partition deletion, 2 = static row)
//!               [deletion] rts:varint (start:bound end:bound deletion)* [row] rows:varint row*
//! bound       = kind:u8 (0 inclusive, 1 exclusive) n:varint bytes*
//! deletion    = marked_for_delete_at_us:zigzag local_deletion_time_s:zigzag
//! row         = n:varint bytes* flags:u8 (1 = liveness, 2 = deletion)
//!               [timestamp_us:zigzag ttl_s:varint expires_at_s:zigzag] [deletion] cells:varint cell*
//! cell        = column:varint tag:u8 (op in the low nibble, 0x10 = has path) [path:bytes]
//!               timestamp_us:zigzag payload
//! bytes       = len:varint byte*
//! ```
//!
//! Payloads by op: Set value ttl_s:varint; Delete, DeleteComplex nothing; CounterAdd delta:zigzag;
//! SetExpiring value ttl_s:varint expires_at_s:zigzag; Tombstone and ComplexDeletion
//! local_deletion_time_s:zigzag; CounterState clock:zigzag total:zigzag.
//!
//! Every field has one encoding, so equal mutations give equal bytes (what `digest` relies on).
//! Decoding trusts nothing: every count and length is checked against the bytes left before
//! anything is allocated for it (each element takes at least one byte), so a forged prefix
//! cannot make it allocate more than the input's size.

use crate::types::*;
use bytes::Bytes;

/// The first byte of every frozen encoding; a decoder refuses versions it does not know.
pub const FORMAT_VERSION: u8 = 1;

const MUTATION_PARTITION_DELETION: u8 = 1;
const MUTATION_STATIC_ROW: u8 = 2;
const ROW_LIVENESS: u8 = 1;
const ROW_DELETION: u8 = 2;
const CELL_HAS_PATH: u8 = 0x10;
const CELL_OP_MASK: u8 = 0x0f;

// The fewest bytes each element can take, which bounds how many a count may claim.
const MIN_MUTATION_BYTES: usize = 16 + 5;
const MIN_RANGE_TOMBSTONE_BYTES: usize = 2 + 2 + 2;
const MIN_ROW_BYTES: usize = 3;
const MIN_CELL_BYTES: usize = 3;

const OP_SET: u8 = 0;
const OP_DELETE: u8 = 1;
const OP_DELETE_COMPLEX: u8 = 2;
const OP_COUNTER_ADD: u8 = 3;
const OP_SET_EXPIRING: u8 = 4;
const OP_TOMBSTONE: u8 = 5;
const OP_COMPLEX_DELETION: u8 = 6;
const OP_COUNTER_STATE: u8 = 7;

/// Why bytes are not a frozen encoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("empty input: no format version")]
    Empty,
    #[error("unsupported frozen mutation format version {0}")]
    UnsupportedVersion(u8),
    #[error("input ends at byte {at} inside {what}")]
    Truncated { what: &'static str, at: usize },
    #[error("malformed varint at byte {at}")]
    BadVarint { at: usize },
    #[error("{what} of {value} at byte {at} is more than the {remaining} bytes left")]
    TooLong {
        what: &'static str,
        value: u64,
        remaining: usize,
        at: usize,
    },
    #[error("invalid {what} {value:#x} at byte {at}")]
    InvalidTag {
        what: &'static str,
        value: u8,
        at: usize,
    },
    #[error("{what} {value} at byte {at} is out of range")]
    OutOfRange {
        what: &'static str,
        value: u64,
        at: usize,
    },
    #[error("{0} bytes follow the last mutation")]
    TrailingBytes(usize),
}

/// Encodes `ms` in the frozen form (layout in the module doc).
pub fn encode_mutations(ms: &[Mutation]) -> Bytes {
    let mut out = Vec::with_capacity(64 * ms.len() + 8);
    encode_into(&mut out, ms);
    Bytes::from(out)
}

/// Appends the frozen form of `ms` to `out`.
pub fn encode_into(out: &mut Vec<u8>, ms: &[Mutation]) {
    out.push(FORMAT_VERSION);
    put_varint(out, ms.len() as u64);
    for m in ms {
        encode_mutation(out, m);
    }
}

fn encode_mutation(out: &mut Vec<u8>, m: &Mutation) {
    out.extend_from_slice(&m.table);
    put_bytes(out, &m.key);
    put_zigzag(out, m.token);
    let mut flags = 0u8;
    if m.partition_deletion.is_some() {
        flags |= MUTATION_PARTITION_DELETION;
    }
    if m.static_row.is_some() {
        flags |= MUTATION_STATIC_ROW;
    }
    out.push(flags);
    if let Some(d) = &m.partition_deletion {
        put_deletion(out, d);
    }
    put_varint(out, m.range_tombstones.len() as u64);
    for (s, e, d) in &m.range_tombstones {
        put_bound(out, s);
        put_bound(out, e);
        put_deletion(out, d);
    }
    if let Some(r) = &m.static_row {
        put_row(out, r);
    }
    put_varint(out, m.rows.len() as u64);
    for r in &m.rows {
        put_row(out, r);
    }
}

fn put_row(out: &mut Vec<u8>, r: &RowUpdate) {
    put_varint(out, r.clustering.len() as u64);
    for v in &r.clustering {
        put_bytes(out, v);
    }
    let mut flags = 0u8;
    if r.liveness.is_some() {
        flags |= ROW_LIVENESS;
    }
    if r.deletion.is_some() {
        flags |= ROW_DELETION;
    }
    out.push(flags);
    if let Some(l) = &r.liveness {
        put_zigzag(out, l.timestamp_us);
        put_varint(out, u64::from(l.ttl_s));
        put_zigzag(out, l.expires_at_s);
    }
    if let Some(d) = &r.deletion {
        put_deletion(out, d);
    }
    put_varint(out, r.cells.len() as u64);
    for c in &r.cells {
        put_cell(out, c);
    }
}

fn put_cell(out: &mut Vec<u8>, c: &CellUpdate) {
    put_varint(out, u64::from(c.column));
    let op = match &c.op {
        CellOp::Set { .. } => OP_SET,
        CellOp::Delete => OP_DELETE,
        CellOp::DeleteComplex => OP_DELETE_COMPLEX,
        CellOp::CounterAdd(_) => OP_COUNTER_ADD,
        CellOp::SetExpiring { .. } => OP_SET_EXPIRING,
        CellOp::Tombstone { .. } => OP_TOMBSTONE,
        CellOp::ComplexDeletion { .. } => OP_COMPLEX_DELETION,
        CellOp::CounterState { .. } => OP_COUNTER_STATE,
    };
    out.push(if c.path.is_some() {
        op | CELL_HAS_PATH
    } else {
        op
    });
    if let Some(p) = &c.path {
        put_bytes(out, p);
    }
    put_zigzag(out, c.timestamp_us);
    match &c.op {
        CellOp::Set { value, ttl_s } => {
            put_bytes(out, value);
            put_varint(out, u64::from(*ttl_s));
        }
        CellOp::Delete | CellOp::DeleteComplex => {}
        CellOp::CounterAdd(d) => put_zigzag(out, *d),
        CellOp::SetExpiring {
            value,
            ttl_s,
            expires_at_s,
        } => {
            put_bytes(out, value);
            put_varint(out, u64::from(*ttl_s));
            put_zigzag(out, *expires_at_s);
        }
        CellOp::Tombstone {
            local_deletion_time_s,
        }
        | CellOp::ComplexDeletion {
            local_deletion_time_s,
        } => put_zigzag(out, *local_deletion_time_s),
        CellOp::CounterState { clock, total } => {
            put_zigzag(out, *clock);
            put_zigzag(out, *total);
        }
    }
}

fn put_bound(out: &mut Vec<u8>, b: &ClusteringBound) {
    out.push(match b.kind {
        BoundKind::Inclusive => 0,
        BoundKind::Exclusive => 1,
    });
    put_varint(out, b.prefix.len() as u64);
    for v in &b.prefix {
        put_bytes(out, v);
    }
}

fn put_deletion(out: &mut Vec<u8>, d: &DeletionTime) {
    put_zigzag(out, d.marked_for_delete_at_us);
    put_zigzag(out, d.local_deletion_time_s);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn put_zigzag(out: &mut Vec<u8>, v: i64) {
    put_varint(out, ((v << 1) ^ (v >> 63)) as u64);
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Decodes the frozen form; values share `input`'s buffer (no copies).
pub fn decode_mutations(input: Bytes) -> Result<Vec<Mutation>, DecodeError> {
    let mut r = Reader { buf: input, pos: 0 };
    let version = *r.buf.first().ok_or(DecodeError::Empty)?;
    if version != FORMAT_VERSION {
        return Err(DecodeError::UnsupportedVersion(version));
    }
    r.pos = 1;
    let n = r.count_of("mutation count", MIN_MUTATION_BYTES)?;
    let mut ms = Vec::with_capacity(n);
    for _ in 0..n {
        ms.push(r.mutation()?);
    }
    match r.remaining() {
        0 => Ok(ms),
        extra => Err(DecodeError::TrailingBytes(extra)),
    }
}

struct Reader {
    buf: Bytes,
    pos: usize,
}

impl Reader {
    fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or(DecodeError::Truncated { what, at: self.pos })?;
        self.pos += 1;
        Ok(b)
    }

    fn varint(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        let at = self.pos;
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8(what)?;
            // The tenth byte holds the top bit only.
            if shift == 63 && b > 1 {
                return Err(DecodeError::BadVarint { at });
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(DecodeError::BadVarint { at })
    }

    fn zigzag(&mut self, what: &'static str) -> Result<i64, DecodeError> {
        let v = self.varint(what)?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        let at = self.pos;
        let v = self.varint(what)?;
        u32::try_from(v).map_err(|_| DecodeError::OutOfRange { what, value: v, at })
    }

    /// A count of elements that take at least `min_bytes` each, so never more than the bytes
    /// left allow: what is allocated for them stays proportional to the input.
    fn count_of(&mut self, what: &'static str, min_bytes: usize) -> Result<usize, DecodeError> {
        let at = self.pos;
        let v = self.varint(what)?;
        let remaining = self.remaining();
        match usize::try_from(v) {
            Ok(n) if n <= remaining / min_bytes.max(1) => Ok(n),
            _ => Err(DecodeError::TooLong {
                what,
                value: v,
                remaining,
                at,
            }),
        }
    }

    fn count(&mut self, what: &'static str) -> Result<usize, DecodeError> {
        self.count_of(what, 1)
    }

    fn bytes(&mut self, what: &'static str) -> Result<Bytes, DecodeError> {
        let n = self.count(what)?;
        let b = self.buf.slice(self.pos..self.pos + n);
        self.pos += n;
        Ok(b)
    }

    fn table(&mut self) -> Result<TableId, DecodeError> {
        let mut id = [0u8; 16];
        let src = self
            .buf
            .get(self.pos..self.pos + 16)
            .ok_or(DecodeError::Truncated {
                what: "table id",
                at: self.pos,
            })?;
        id.copy_from_slice(src);
        self.pos += 16;
        Ok(id)
    }

    fn flags(&mut self, what: &'static str, known: u8) -> Result<u8, DecodeError> {
        let at = self.pos;
        let f = self.u8(what)?;
        if f & !known != 0 {
            return Err(DecodeError::InvalidTag { what, value: f, at });
        }
        Ok(f)
    }

    fn mutation(&mut self) -> Result<Mutation, DecodeError> {
        let table = self.table()?;
        let key = self.bytes("partition key")?;
        let token = self.zigzag("token")?;
        let flags = self.flags(
            "mutation flags",
            MUTATION_PARTITION_DELETION | MUTATION_STATIC_ROW,
        )?;
        let partition_deletion = if flags & MUTATION_PARTITION_DELETION != 0 {
            Some(self.deletion()?)
        } else {
            None
        };
        let n = self.count_of("range tombstone count", MIN_RANGE_TOMBSTONE_BYTES)?;
        let mut range_tombstones = Vec::with_capacity(n);
        for _ in 0..n {
            let s = self.bound()?;
            let e = self.bound()?;
            range_tombstones.push((s, e, self.deletion()?));
        }
        let static_row = if flags & MUTATION_STATIC_ROW != 0 {
            Some(self.row()?)
        } else {
            None
        };
        let n = self.count_of("row count", MIN_ROW_BYTES)?;
        let mut rows = Vec::with_capacity(n);
        for _ in 0..n {
            rows.push(self.row()?);
        }
        Ok(Mutation {
            table,
            key,
            token,
            partition_deletion,
            range_tombstones,
            static_row,
            rows,
        })
    }

    fn values(&mut self, what: &'static str) -> Result<Vec<Bytes>, DecodeError> {
        let n = self.count(what)?;
        let mut vs = Vec::with_capacity(n);
        for _ in 0..n {
            vs.push(self.bytes(what)?);
        }
        Ok(vs)
    }

    fn bound(&mut self) -> Result<ClusteringBound, DecodeError> {
        let at = self.pos;
        let kind = match self.u8("bound kind")? {
            0 => BoundKind::Inclusive,
            1 => BoundKind::Exclusive,
            value => {
                return Err(DecodeError::InvalidTag {
                    what: "bound kind",
                    value,
                    at,
                })
            }
        };
        let prefix = self.values("bound prefix")?;
        Ok(ClusteringBound { prefix, kind })
    }

    fn deletion(&mut self) -> Result<DeletionTime, DecodeError> {
        Ok(DeletionTime {
            marked_for_delete_at_us: self.zigzag("deletion timestamp")?,
            local_deletion_time_s: self.zigzag("local deletion time")?,
        })
    }

    fn row(&mut self) -> Result<RowUpdate, DecodeError> {
        let clustering = self.values("clustering")?;
        let flags = self.flags("row flags", ROW_LIVENESS | ROW_DELETION)?;
        let liveness = if flags & ROW_LIVENESS != 0 {
            Some(Liveness {
                timestamp_us: self.zigzag("liveness timestamp")?,
                ttl_s: self.u32("liveness ttl")?,
                expires_at_s: self.zigzag("liveness expiry")?,
            })
        } else {
            None
        };
        let deletion = if flags & ROW_DELETION != 0 {
            Some(self.deletion()?)
        } else {
            None
        };
        let n = self.count_of("cell count", MIN_CELL_BYTES)?;
        let mut cells = Vec::with_capacity(n);
        for _ in 0..n {
            cells.push(self.cell()?);
        }
        Ok(RowUpdate {
            clustering,
            liveness,
            deletion,
            cells,
        })
    }

    fn cell(&mut self) -> Result<CellUpdate, DecodeError> {
        let column = self.u32("column id")?;
        let at = self.pos;
        let tag = self.flags("cell tag", CELL_HAS_PATH | CELL_OP_MASK)?;
        let path = if tag & CELL_HAS_PATH != 0 {
            Some(self.bytes("cell path")?)
        } else {
            None
        };
        let timestamp_us = self.zigzag("cell timestamp")?;
        let op = match tag & CELL_OP_MASK {
            OP_SET => CellOp::Set {
                value: self.bytes("cell value")?,
                ttl_s: self.u32("cell ttl")?,
            },
            OP_DELETE => CellOp::Delete,
            OP_DELETE_COMPLEX => CellOp::DeleteComplex,
            OP_COUNTER_ADD => CellOp::CounterAdd(self.zigzag("counter delta")?),
            OP_SET_EXPIRING => CellOp::SetExpiring {
                value: self.bytes("cell value")?,
                ttl_s: self.u32("cell ttl")?,
                expires_at_s: self.zigzag("cell expiry")?,
            },
            OP_TOMBSTONE => CellOp::Tombstone {
                local_deletion_time_s: self.zigzag("local deletion time")?,
            },
            OP_COMPLEX_DELETION => CellOp::ComplexDeletion {
                local_deletion_time_s: self.zigzag("local deletion time")?,
            },
            OP_COUNTER_STATE => CellOp::CounterState {
                clock: self.zigzag("counter clock")?,
                total: self.zigzag("counter total")?,
            },
            _ => {
                return Err(DecodeError::InvalidTag {
                    what: "cell op",
                    value: tag,
                    at,
                })
            }
        };
        Ok(CellUpdate {
            column,
            path,
            timestamp_us,
            op,
        })
    }
}

/// Cassandra-style read digest: MD5 of the frozen encoding, so replicas holding the same data in
/// the same (storage) order agree. MD5 as in Cassandra: 128 bits make an accidental match
/// negligible, and no adversary chooses a replica's data to collide with another's.
pub fn digest(ms: &[Mutation]) -> [u8; 16] {
    let mut buf = Vec::with_capacity(64 * ms.len() + 8);
    encode_into(&mut buf, ms);
    md5::compute(&buf).0
}
