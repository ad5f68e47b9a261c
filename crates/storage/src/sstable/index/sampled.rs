//! The sampled Index.db of a columnar SSTable (`EntryShape::Sampled`, magic `hl-s`).
//!
//! A columnar segment stores every entry's key in its key stream (6% of a GDELT segment), so
//! an index repeating each key (10 bytes an entry for a bigint key: a fifth of the segment's
//! size) holds nothing the segment lacks but the partition boundaries. This shape keeps those
//! and the summary's samples only:
//!
//! ```text
//! "hl-s" | uv count | uv interval | entries | crc32c (BE, of everything before)
//! entry i, i % interval == 0:  vbytes key | uv (length << 1 | token stored) | [i64 token]
//! entry i, otherwise:          uv length
//! ```
//!
//! When every unsampled entry has the same length (a table of one-row partitions: every
//! partition is one segment entry), the writer states it once and writes the samples only:
//! `"hl-u" | uv count | uv interval | uv length | samples | crc32c`. On 1M GDELT events that
//! is 1.07 MB of a 38 MB SSTable.
//!
//! `length` is the partition's number of segment entries, so positions follow from the lengths
//! as in every format-2 index. Opening reads the samples as before (nothing of the segment);
//! reading a page resolves its entries' tokens and keys from the segment's key stream at their
//! positions (one row group's keys decoded, which a point read decodes anyway), and checks the
//! samples' against it, so an index that does not match its segment is reported as corrupt.

use super::{raw_entry as raw_indexed, EntryShape, PartitionIndex, RawEntry};
use crate::codec::compact::Enc;
use crate::codec::Reader;
use crate::error::StorageError;
use crate::sstable::IndexEntry;

/// The largest sampling interval a sampled index may declare (a page is decoded whole).
pub(crate) const MAX_SAMPLED_INTERVAL: usize = 1 << 16;

/// Entry `index` of a sampled Index.db (entries in partition order, `interval` apart samples).
pub(crate) fn encode_sampled_entry(
    out: &mut Vec<u8>,
    e: &IndexEntry,
    index: usize,
    interval: usize,
) {
    if index.is_multiple_of(interval) {
        crate::sstable::format::encode_keyed_index_entry(out, e);
    } else {
        Enc { out, base_us: 0 }.uv(u64::from(e.length));
    }
}

/// A sampled Index.db being written: every entry, and the samples alone with the one length
/// all other entries share, if they do.
#[derive(Default)]
pub(crate) struct SampledIndexBody {
    all: Vec<u8>,
    samples: Vec<u8>,
    /// None before the first unsampled entry; Some(None) once two lengths differ.
    unsampled_length: Option<Option<u32>>,
}

impl SampledIndexBody {
    /// Appends entry `index` (entries in partition order, `interval` apart samples).
    pub fn push(&mut self, e: &IndexEntry, index: usize, interval: usize) {
        encode_sampled_entry(&mut self.all, e, index, interval);
        if index.is_multiple_of(interval) {
            encode_sampled_entry(&mut self.samples, e, index, interval);
            return;
        }
        self.unsampled_length = match self.unsampled_length {
            None => Some(Some(e.length)),
            Some(Some(l)) if l == e.length => Some(Some(l)),
            _ => Some(None),
        };
    }

    /// The magic, header and body of the file for `count` entries.
    pub fn finish(self, count: usize, interval: usize) -> (Vec<u8>, Vec<u8>) {
        match self.unsampled_length {
            Some(Some(length)) => {
                let mut head = super::UNIFORM_MAGIC.to_vec();
                encode_sampled_header(&mut head, count, interval);
                Enc {
                    out: &mut head,
                    base_us: 0,
                }
                .uv(u64::from(length));
                (head, self.samples)
            }
            _ => {
                let mut head = super::SAMPLED_MAGIC.to_vec();
                encode_sampled_header(&mut head, count, interval);
                (head, self.all)
            }
        }
    }
}

/// The header after the magic: the entry count and the sampling interval.
pub(crate) fn encode_sampled_header(out: &mut Vec<u8>, count: usize, interval: usize) {
    let mut w = Enc { out, base_us: 0 };
    w.uv(count as u64);
    w.uv(interval as u64);
}

/// Parses one entry of a sampled index; an unsampled one has no key or token yet.
pub(super) fn raw_entry<'a>(
    r: &mut Reader<'a>,
    position: u64,
    sampled: bool,
    uniform_length: Option<u32>,
) -> Result<RawEntry<'a>, StorageError> {
    if sampled {
        return raw_indexed(EntryShape::Keyed, r, position);
    }
    let length = match uniform_length {
        Some(length) => length,
        None => {
            let buf = r.rest();
            let mut p = 0;
            let length = super::uv(buf, &mut p)
                .and_then(|l| u32::try_from(l).ok())
                .ok_or(StorageError::Decode { what: "index" })?;
            r.take(p)?;
            length
        }
    };
    Ok(RawEntry {
        key: &[],
        token: 0,
        position,
        length,
        header_len: 0,
        blocks: &[],
    })
}

impl PartitionIndex {
    /// The entries of pages `first..last`, their keys and tokens read from the segment.
    pub(super) fn sampled_pages(
        &self,
        first: usize,
        last: usize,
    ) -> Result<Vec<IndexEntry>, StorageError> {
        let keys = self
            .keys
            .as_ref()
            .ok_or_else(|| self.corrupt("a sampled index without its segment"))?;
        let (start, end) = self
            .pages_range(first, last)
            .ok_or_else(|| self.corrupt("summary"))?;
        let buf = self.read_range(start, end)?;
        let mut r = Reader::new(&buf, "index page");
        let mut position = self.samples.get(first).map_or(0, |s| s.position);
        let from = first * self.interval;
        let to = (last * self.interval).min(self.count);
        let mut entries = Vec::with_capacity(to.saturating_sub(from));
        for i in from..to {
            let sampled = i.is_multiple_of(self.interval);
            let e = raw_entry(&mut r, position, sampled, self.uniform_length)?;
            position = e.position + u64::from(e.length);
            entries.push(e.to_entry(EntryShape::Sampled)?);
        }
        if r.remaining() != 0 {
            return Err(self.corrupt("page length"));
        }
        let positions: Vec<u64> = entries.iter().map(|e| e.position).collect();
        let resolved = keys.keys_at(&positions)?;
        if resolved.len() != entries.len() {
            return Err(self.corrupt("segment keys"));
        }
        for (i, (e, (token, key))) in entries.iter_mut().zip(resolved).enumerate() {
            if (from + i).is_multiple_of(self.interval) {
                // A sample's key is in both files: they must agree.
                if e.token != token || e.key != key {
                    return Err(self.corrupt("sample key not in the segment"));
                }
            } else {
                e.token = token;
                e.key = key;
            }
        }
        Ok(entries)
    }
}

impl RawEntry<'_> {
    /// A decoded entry seen as a raw one (for the page walks shared with the other shapes).
    pub(super) fn of(e: &IndexEntry) -> RawEntry<'_> {
        RawEntry {
            key: &e.key,
            token: e.token,
            position: e.position,
            length: e.length,
            header_len: e.header_len,
            blocks: &[],
        }
    }
}
