//! Sequential scans of canonical unfiltered partitions over a partition range, handed out as the
//! bytes a repair's Merkle tree and row-level digests hash (partition/digest.rs).
//!
//! The paged range read (range.rs) locates every partition in each SSTable's index, reads it as a
//! single-partition read does and builds its live view beside the kept one; over a whole token
//! range that cost several times the merge itself (measured: a full repair of in-sync replicas
//! spent most of its time there). A scan walks each source once in key order instead, as
//! compaction does: every SSTable's index entries and data chunks in file order (each chunk
//! decompressed once), the memtables' partitions of the range copied up front, and the versions
//! of one key merged and put in the canonical form of `read_unfiltered` (unfiltered.rs), so a
//! replica's digests do not depend on which of the two paths read it.

use super::unfiltered::canonical;
use crate::error::StorageError;
use crate::memtable::{self, Memtable, PKey};
use crate::partition::{digest_bytes, Partition};
use crate::sstable::{IndexEntry, IndexIter, SSTableReader};
use crate::types::*;
use bytes::Bytes;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

/// What a scan reads: SSTables and memtables (none for a pinned or pending set).
pub(crate) struct ScanSources {
    pub sstables: Vec<Arc<SSTableReader>>,
    pub memtables: Vec<Arc<Memtable>>,
}

/// One SSTable's index walked from the scan's start, with the chunk it decompressed last.
struct SSTableWalk<'a> {
    s: &'a SSTableReader,
    entries: IndexIter<'a>,
    head: Option<IndexEntry>,
    last_chunk: Option<(usize, Arc<Vec<u8>>)>,
}

impl<'a> SSTableWalk<'a> {
    fn open(
        s: &'a SSTableReader,
        start: &Bound<PKey>,
        end: &Bound<PKey>,
    ) -> Result<Self, StorageError> {
        let first = match start {
            Bound::Unbounded => 0,
            Bound::Included((token, _)) | Bound::Excluded((token, _)) => {
                s.first_at_or_after_token(*token)?
            }
        };
        let mut walk = SSTableWalk {
            s,
            entries: s.entries_from(first),
            head: None,
            last_chunk: None,
        };
        // The seek went to the start's token: keys of that token before the start are skipped.
        loop {
            walk.advance(end)?;
            match &walk.head {
                Some(e) if !memtable::is_after_start(start, e.token, &e.key) => {}
                _ => return Ok(walk),
            }
        }
    }

    /// The next index entry up to `end` as the head (None past it).
    fn advance(&mut self, end: &Bound<PKey>) -> Result<(), StorageError> {
        self.head = match self.entries.next().transpose()? {
            Some(e) if memtable::is_before_end(end, e.token, &e.key) => Some(e),
            _ => None,
        };
        Ok(())
    }

    /// The partition at the head, decoded.
    fn read_head(&mut self) -> Result<Option<Partition>, StorageError> {
        let Some(e) = &self.head else {
            return Ok(None);
        };
        let p = if self.s.is_columnar() {
            self.s.read_partition_at(e, None)?
        } else {
            let bytes = self
                .s
                .read_span(e.position, e.length, &mut self.last_chunk)?;
            self.s.decode_partition_bytes(&bytes, e)?
        };
        Ok(Some(p))
    }
}

/// The memtables' partitions between the bounds, each merged over the memtables holding it.
fn memtable_partitions(
    memtables: &[Arc<Memtable>],
    start: &Bound<PKey>,
    end: &Bound<PKey>,
) -> BTreeMap<PKey, Partition> {
    let mut out: BTreeMap<PKey, Partition> = BTreeMap::new();
    if !memtable::range_is_valid(start, end) {
        return out;
    }
    for m in memtables {
        for shard in m.read_shards() {
            for (k, p) in shard.range((start.clone(), end.clone())) {
                match out.get_mut(k) {
                    Some(cur) => cur.merge((**p).clone()),
                    None => {
                        out.insert(k.clone(), (**p).clone());
                    }
                }
            }
        }
    }
    out
}

/// Visits every partition of `sources` from `start` to `end` in (token, key) order, merged and
/// in canonical unfiltered form (tombstones past `gc_before_s` purged, TTLs expired at `now_s`),
/// as its token, key and digest bytes, until the range ends or `visit` answers false.
pub(crate) fn scan_digest_bytes(
    sources: &ScanSources,
    (start, end): (&PartitionBound, &PartitionBound),
    (gc_before_s, now_s): (i64, i64),
    visit: &mut dyn FnMut(i64, &Bytes, &[u8]) -> bool,
) -> Result<(), StorageError> {
    let Some(start) = memtable::start_bound(start) else {
        return Ok(());
    };
    let end = memtable::end_bound(end);
    if !memtable::range_is_valid(&start, &end) {
        return Ok(());
    }
    let mut in_memory = memtable_partitions(&sources.memtables, &start, &end).into_iter();
    let mut memory_head = in_memory.next();
    let mut walks = Vec::with_capacity(sources.sstables.len());
    for s in &sources.sstables {
        walks.push(SSTableWalk::open(s, &start, &end)?);
    }
    let mut batch: Vec<usize> = Vec::with_capacity(walks.len());
    let mut bytes = Vec::new();
    loop {
        let Some((token, key)) = smallest_key(&walks, memory_head.as_ref(), &mut batch) else {
            return Ok(());
        };
        let mut merged: Option<Partition> = None;
        let mut add = |p: Partition| match &mut merged {
            Some(m) => m.merge(p),
            None => merged = Some(p),
        };
        for &i in &batch {
            if let Some(w) = walks.get_mut(i) {
                if let Some(p) = w.read_head()? {
                    add(p);
                }
                w.advance(&end)?;
            }
        }
        if memory_head
            .as_ref()
            .is_some_and(|((t, k), _)| *t == token && *k == key)
        {
            if let Some((_, p)) = memory_head.take() {
                add(p);
            }
            memory_head = in_memory.next();
        }
        let Some(p) = merged.and_then(|p| canonical(p, gc_before_s, now_s)) else {
            continue;
        };
        digest_bytes(&p, &mut bytes);
        if !visit(p.token, &p.key, &bytes) {
            return Ok(());
        }
    }
}

/// The smallest key at the heads, with the walks holding it in `batch`; None when all ended.
fn smallest_key(
    walks: &[SSTableWalk<'_>],
    memory_head: Option<&(PKey, Partition)>,
    batch: &mut Vec<usize>,
) -> Option<PKey> {
    batch.clear();
    let mut min: Option<(i64, &Bytes)> = memory_head.map(|((t, k), _)| (*t, k));
    for (i, w) in walks.iter().enumerate() {
        let Some(e) = &w.head else { continue };
        match min.map(|m| (e.token, &e.key).cmp(&m)) {
            Some(std::cmp::Ordering::Greater) => {}
            Some(std::cmp::Ordering::Equal) => batch.push(i),
            Some(std::cmp::Ordering::Less) | None => {
                min = Some((e.token, &e.key));
                batch.clear();
                batch.push(i);
            }
        }
    }
    min.map(|(t, k)| (t, k.clone()))
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
