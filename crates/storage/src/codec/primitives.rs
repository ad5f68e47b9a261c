//! Big-endian integers and length-prefixed bytes, written to a vector and read back with
//! bounds checks (a truncated input is a decode error, never a panic).

use crate::error::StorageError;
use crate::types::DeletionTime;
use bytes::Bytes;

/// Appends primitives to a byte buffer.
pub struct Writer<'a>(pub &'a mut Vec<u8>);

impl Writer<'_> {
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    pub fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    pub fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    pub(super) fn dt(&mut self, d: &DeletionTime) {
        self.i64(d.marked_for_delete_at_us);
        self.i64(d.local_deletion_time_s);
    }
    pub(super) fn opt_dt(&mut self, d: &Option<DeletionTime>) {
        match d {
            Some(d) => {
                self.u8(1);
                self.dt(d);
            }
            None => self.u8(0),
        }
    }
    pub(super) fn prefix(&mut self, values: &[Bytes]) {
        self.u16(values.len() as u16);
        for v in values {
            self.bytes(v);
        }
    }
}

/// Reads primitives with bounds checks; every failure is a `Decode` error, never a panic.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8], what: &'static str) -> Self {
        Reader { buf, pos: 0, what }
    }
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }
    /// The unread bytes.
    pub fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], StorageError> {
        // No error value is built on the way that succeeds: this runs per field decoded, and
        // dropping an unused `StorageError` is a call to its drop glue.
        let Some((end, s)) = self
            .pos
            .checked_add(n)
            .and_then(|end| Some((end, self.buf.get(self.pos..end)?)))
        else {
            return Err(StorageError::Decode { what: self.what });
        };
        self.pos = end;
        Ok(s)
    }
    fn arr<const N: usize>(&mut self) -> Result<[u8; N], StorageError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    pub fn u8(&mut self) -> Result<u8, StorageError> {
        Ok(self.arr::<1>()?[0])
    }
    pub fn u16(&mut self) -> Result<u16, StorageError> {
        Ok(u16::from_be_bytes(self.arr()?))
    }
    pub fn u32(&mut self) -> Result<u32, StorageError> {
        Ok(u32::from_be_bytes(self.arr()?))
    }
    pub fn i64(&mut self) -> Result<i64, StorageError> {
        Ok(i64::from_be_bytes(self.arr()?))
    }
    pub fn u64(&mut self) -> Result<u64, StorageError> {
        Ok(u64::from_be_bytes(self.arr()?))
    }
    pub fn bytes(&mut self) -> Result<Bytes, StorageError> {
        let n = self.u32()? as usize;
        Ok(Bytes::copy_from_slice(self.take(n)?))
    }
    pub(super) fn dt(&mut self) -> Result<DeletionTime, StorageError> {
        Ok(DeletionTime {
            marked_for_delete_at_us: self.i64()?,
            local_deletion_time_s: self.i64()?,
        })
    }
    pub(super) fn opt_dt(&mut self) -> Result<Option<DeletionTime>, StorageError> {
        Ok(if self.u8()? == 1 {
            Some(self.dt()?)
        } else {
            None
        })
    }
    pub(super) fn prefix(&mut self) -> Result<Vec<Bytes>, StorageError> {
        let n = self.u16()? as usize;
        // Each value needs at least its 4-byte length, which bounds the allocation.
        if n * 4 > self.remaining() {
            return Err(StorageError::Decode { what: self.what });
        }
        (0..n).map(|_| self.bytes()).collect()
    }
    pub(super) fn count(&mut self, min_item_bytes: usize) -> Result<usize, StorageError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_item_bytes) > self.remaining() {
            return Err(StorageError::Decode { what: self.what });
        }
        Ok(n)
    }
}
