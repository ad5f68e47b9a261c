//! Whole-SSTable streaming's storage side (issue 13): the SSTables of a table that lie wholly
//! inside a token range are sent as their files, unchanged, and the receiver adds them to its
//! live set under a generation of its own, without rewriting them.
//!
//! The sender hard-links the chosen generations into `<table dir>/streaming/out-<session>/`
//! (as a snapshot does) before it lists them: a compaction that deletes an input later removes
//! only the table's own links, so the files being sent stay whole until the session releases
//! them. The receiver writes what it gets to `<table dir>/streaming/in-<session>-<gen>/`,
//! checks every component's size and CRC32C against the sender's, opens the SSTable there, and
//! only then renames the components into the table directory, TOC last (a crash before the TOC
//! leaves an incomplete generation that the next load discards).
//!
//! The partitions of the range the whole files do not hold are streamed as pages read with the
//! sent generations left out ([`Engine::read_unfiltered_excluding`]), so each byte goes once.

use super::Engine;
use crate::codec::crc32c_update;
use crate::error::StorageError;
use crate::sstable::{self, SSTableReader};
use crate::table::Table;
use crate::types::*;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Staging left behind by a session that never ended (a peer died mid-stream) is removed once
/// this old, the next time a session starts on the table.
const STALE_STAGING: Duration = Duration::from_secs(6 * 3600);
/// Read size when checksumming a component.
const READ_BUF: usize = 1 << 20;

/// One component of a generation as the sender has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentInfo {
    pub name: String,
    pub size: u64,
    pub crc32c: u32,
}

/// A generation sent whole: the sender's generation number and its components (TOC last).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WholeSSTable {
    pub gen: u64,
    pub components: Vec<ComponentInfo>,
}

impl WholeSSTable {
    pub fn bytes(&self) -> u64 {
        self.components.iter().map(|c| c.size).sum()
    }
}

/// Whether an SSTable spanning tokens `first..=last` lies wholly inside the ring range
/// `(start, end]` (one that wraps when `start >= end`).
pub fn span_inside(first: i64, last: i64, start: i64, end: i64) -> bool {
    if start < end {
        start < first && last <= end
    } else {
        // A wrapping range is (start, MAX] plus [MIN, end]; an SSTable must sit in one piece.
        start < first || last <= end
    }
}

/// Every component name either kind of SSTable has (for checks and cleanup).
fn component_names() -> impl Iterator<Item = &'static str> {
    sstable::all_component_names().chain(std::iter::once("TOC.txt"))
}

/// The components of a row or a columnar SSTable, TOC last.
fn kind_components(columnar: bool) -> impl Iterator<Item = &'static str> {
    let data: &'static [&'static str] = if columnar {
        &sstable::COLUMNAR_COMPONENTS
    } else {
        &sstable::COMPONENTS
    };
    data.iter().copied().chain(std::iter::once("TOC.txt"))
}

/// Whether a sent generation is columnar (it has a segment).
fn sent_columnar(sent: &WholeSSTable) -> bool {
    sent.components.iter().any(|c| c.name == "Columns.db")
}

/// A component name from the network: only the ones an SSTable has.
fn known_component(name: &str) -> Result<&'static str, StorageError> {
    component_names()
        .find(|c| *c == name)
        .ok_or_else(|| StorageError::InvalidRequest(format!("no SSTable component {name:?}")))
}

/// A session name from the network, used as a directory name: a UUID only.
fn session_name(session: &str) -> Result<&str, StorageError> {
    let uuid_like =
        session.len() == 36 && session.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    if uuid_like {
        Ok(session)
    } else {
        Err(StorageError::InvalidRequest(format!(
            "bad stream session {session:?}"
        )))
    }
}

fn staging_root(t: &Table) -> PathBuf {
    t.dir.join("streaming")
}

fn outgoing_dir(t: &Table, session: &str) -> Result<PathBuf, StorageError> {
    Ok(staging_root(t).join(format!("out-{}", session_name(session)?)))
}

fn incoming_dir(t: &Table, session: &str, gen: u64) -> Result<PathBuf, StorageError> {
    Ok(staging_root(t).join(format!("in-{}-{gen}", session_name(session)?)))
}

/// Removes staging directories older than `STALE_STAGING`.
fn remove_stale_staging(t: &Table) {
    let Ok(entries) = fs::read_dir(staging_root(t)) else {
        return;
    };
    let now = SystemTime::now();
    for e in entries.flatten() {
        let age = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| now.duration_since(m).ok());
        if age.is_some_and(|a| a > STALE_STAGING) {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

fn file_crc(path: &Path) -> Result<(u64, u32), StorageError> {
    let mut f = fs::File::open(path).map_err(|e| StorageError::io(path, e))?;
    let mut buf = vec![0u8; READ_BUF];
    let (mut size, mut crc) = (0u64, 0u32);
    loop {
        let n = f.read(&mut buf).map_err(|e| StorageError::io(path, e))?;
        let Some(read) = buf.get(..n).filter(|r| !r.is_empty()) else {
            return Ok((size, crc));
        };
        crc = crc32c_update(crc, read);
        size += n as u64;
    }
}

/// The token span of an SSTable with partitions (its statistics, in memory: no disk read).
fn token_span(s: &SSTableReader) -> Option<(i64, i64)> {
    (s.stats.partitions > 0 && s.stats.min_token <= s.stats.max_token)
        .then_some((s.stats.min_token, s.stats.max_token))
}

/// Hard-links generation `s` into `dir` and describes its components.
fn stage_one(s: &SSTableReader, dir: &Path) -> Result<WholeSSTable, StorageError> {
    let mut components = Vec::new();
    for name in kind_components(s.is_columnar()) {
        let src = sstable::component_path(&s.dir, s.gen, name);
        let dst = sstable::component_path(dir, s.gen, name);
        fs::hard_link(&src, &dst).map_err(|e| StorageError::io(&src, e))?;
        let (size, crc32c) = file_crc(&dst)?;
        components.push(ComponentInfo {
            name: name.to_string(),
            size,
            crc32c,
        });
    }
    Ok(WholeSSTable {
        gen: s.gen,
        components,
    })
}

impl Engine {
    /// The ring's tokens (in any order): Leveled and size-tiered compactions end an output at
    /// each (size-tiered ones once the output holds a few MiB), so their SSTables lie wholly
    /// inside token ranges and go whole when a range moves. Empty (the default, and outside a
    /// cluster) splits nothing.
    pub fn set_ring_tokens(&self, mut tokens: Vec<i64>) {
        tokens.sort_unstable();
        tokens.dedup();
        let mut current = self.background.ring_tokens.write();
        if **current != tokens {
            *current = std::sync::Arc::new(tokens);
        }
    }

    /// Whether any SSTable of `table` lies wholly inside `(start, end]` (from the statistics in
    /// memory): a pull that would find none is not worth its round trips.
    pub fn has_whole_sstables(
        &self,
        table: TableId,
        start: i64,
        end: i64,
    ) -> Result<bool, StorageError> {
        let t = self.table(table)?;
        let found = t.sstables.read().iter().any(|s| {
            token_span(s).is_some_and(|(first, last)| span_inside(first, last, start, end))
        });
        Ok(found)
    }

    /// Stages for session `session` every SSTable of `table` whose partitions all lie in the
    /// ring range `(start, end]`, and describes them. A generation a compaction removed while
    /// it was being linked is left to the partition stream.
    pub fn stage_whole_sstables(
        &self,
        table: TableId,
        start: i64,
        end: i64,
        session: &str,
    ) -> Result<Vec<WholeSSTable>, StorageError> {
        let t = self.table(table)?;
        remove_stale_staging(&t);
        let dir = outgoing_dir(&t, session)?;
        fs::create_dir_all(&dir).map_err(|e| StorageError::io(&dir, e))?;
        let sstables: Vec<_> = t.sstables.read().to_vec();
        let mut staged = Vec::new();
        for s in sstables {
            let inside = token_span(&s).is_some_and(|(f, l)| span_inside(f, l, start, end));
            if !inside {
                continue;
            }
            match stage_one(&s, &dir) {
                Ok(w) => staged.push(w),
                // Most likely a compaction removed it meanwhile: its partitions are in the
                // compaction's output, which the partition stream reads.
                Err(_) => {
                    for name in component_names() {
                        let _ = fs::remove_file(sstable::component_path(&dir, s.gen, name));
                    }
                }
            }
        }
        Ok(staged)
    }

    /// Up to `len` bytes at `offset` of a staged component (fewer at its end).
    pub fn read_staged(
        &self,
        table: TableId,
        session: &str,
        gen: u64,
        component: &str,
        offset: u64,
        len: usize,
    ) -> Result<Vec<u8>, StorageError> {
        let t = self.table(table)?;
        let path = sstable::component_path(
            &outgoing_dir(&t, session)?,
            gen,
            known_component(component)?,
        );
        let f = fs::File::open(&path).map_err(|e| StorageError::io(&path, e))?;
        let mut buf = vec![0u8; len];
        let mut got = 0;
        while let Some(rest) = buf.get_mut(got..).filter(|r| !r.is_empty()) {
            let n = f
                .read_at(rest, offset + got as u64)
                .map_err(|e| StorageError::io(&path, e))?;
            if n == 0 {
                break;
            }
            got += n;
        }
        buf.truncate(got);
        Ok(buf)
    }

    /// Ends a sending session: its links go (the table keeps its own).
    pub fn release_staged(&self, table: TableId, session: &str) -> Result<(), StorageError> {
        let t = self.table(table)?;
        let dir = outgoing_dir(&t, session)?;
        match fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(StorageError::io(&dir, e)),
            _ => Ok(()),
        }
    }

    /// Where the receiver writes the components of the sender's generation `gen`.
    pub fn receive_dir(
        &self,
        table: TableId,
        session: &str,
        gen: u64,
    ) -> Result<PathBuf, StorageError> {
        let t = self.table(table)?;
        remove_stale_staging(&t);
        let dir = incoming_dir(&t, session, gen)?;
        fs::create_dir_all(&dir).map_err(|e| StorageError::io(&dir, e))?;
        Ok(dir)
    }

    /// Checks the received generation `sent` (in `dir`, from `receive_dir`) against the sender's
    /// description, opens it, and adds it to the table's live set under a new generation; returns
    /// that generation. `dir` is removed whatever the outcome.
    pub fn import_received(
        &self,
        table: TableId,
        dir: &Path,
        sent: &WholeSSTable,
    ) -> Result<u64, StorageError> {
        let result = self.import_checked(table, dir, sent);
        let _ = fs::remove_dir_all(dir);
        // An SSTable added whole is new input for the table's strategy, as a flushed one is:
        // without the request, a joining node's streamed SSTables waited for its first flush
        // (and `compactionstats` showed their pending compaction until then).
        if result.is_ok() {
            self.background.request_compaction(table);
        }
        result
    }

    fn import_checked(
        &self,
        table: TableId,
        dir: &Path,
        sent: &WholeSSTable,
    ) -> Result<u64, StorageError> {
        let t = self.table(table)?;
        check_received(dir, sent)?;
        settle_level(&t, dir, sent.gen)?;
        let cmp = t.layout.read().cmp.clone();
        // Opening reads and checks every component but Data.db, whose bytes the CRC covers.
        drop(SSTableReader::open(dir, sent.gen, &cmp)?);
        // Durable before it is live: the sender may drop its copy (a decommission, a cleanup)
        // once this node has answered.
        for name in kind_components(sent_columnar(sent)) {
            let path = sstable::component_path(dir, sent.gen, name);
            fs::File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(|e| StorageError::io(&path, e))?;
        }
        let gen = t
            .next_gen
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // TOC last: without it the generation is incomplete and the next load drops it.
        for name in kind_components(sent_columnar(sent)) {
            let from = sstable::component_path(dir, sent.gen, name);
            let to = sstable::component_path(&t.dir, gen, name);
            if let Err(e) = fs::rename(&from, &to) {
                for name in component_names() {
                    let _ = fs::remove_file(sstable::component_path(&t.dir, gen, name));
                }
                return Err(StorageError::io(&from, e));
            }
        }
        fs::File::open(&t.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| StorageError::io(&t.dir, e))?;
        let reader = SSTableReader::open(&t.dir, gen, &cmp)?;
        std::sync::Arc::make_mut(&mut t.sstables.write()).push(reader);
        Ok(gen)
    }

    /// `read_unfiltered` over the SSTables of `table` but generations `excluded` (sent whole),
    /// plus the memtables, keeping every tombstone (what one shadows may be in a generation
    /// left out). For range reads: a single-partition read ignores `excluded`.
    pub fn read_unfiltered_excluding(
        &self,
        table: TableId,
        q: &ReadQuery,
        tombstone_failure_threshold: u64,
        excluded: &[u64],
    ) -> Result<UnfilteredResult, StorageError> {
        if excluded.is_empty() {
            return self.read_unfiltered(table, q, tombstone_failure_threshold);
        }
        crate::exclusion::leaving_out(excluded, || {
            self.read_unfiltered(table, q, tombstone_failure_threshold)
        })
    }
}

/// Settles the level of a received SSTable: the sender's, as Cassandra keeps a whole-streamed
/// SSTable's, unless one of this table's SSTables of that level overlaps its tokens; then level
/// 0, where overlaps are the rule. Keeping it spares the receiver a compaction of everything it
/// received through L0 (a replace receives all its data at once). A race with another import
/// or a compaction's outputs can still leave two SSTables of a level overlapping: that costs
/// leveled compaction some efficiency, never a read its answer (reads never assume it).
fn settle_level(t: &Table, dir: &Path, gen: u64) -> Result<(), StorageError> {
    let path = sstable::component_path(dir, gen, "Statistics.db");
    let bytes = fs::read(&path).map_err(|e| StorageError::io(&path, e))?;
    let mut stats = sstable::SSTableStats::decode(&bytes)?;
    if stats.level == 0 {
        return Ok(());
    }
    let overlaps = t
        .sstables
        .read()
        .iter()
        .any(|s| s.stats.level == stats.level && s.stats.tokens_overlap(&stats));
    if !overlaps {
        return Ok(());
    }
    stats.level = 0;
    let mut out = Vec::with_capacity(bytes.len());
    stats.encode(&mut out);
    fs::write(&path, out).map_err(|e| StorageError::io(&path, e))
}

/// Every component the sender listed is in `dir` with its size and CRC32C.
fn check_received(dir: &Path, sent: &WholeSSTable) -> Result<(), StorageError> {
    for name in kind_components(sent_columnar(sent)) {
        let expected = sent
            .components
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| StorageError::CorruptSSTable {
                file: sstable::component_path(dir, sent.gen, name),
                reason: "component not sent".into(),
            })?;
        let path = sstable::component_path(dir, sent.gen, name);
        let (size, crc) = file_crc(&path)?;
        if size != expected.size || crc != expected.crc32c {
            return Err(StorageError::CorruptSSTable {
                file: path,
                reason: format!(
                    "streamed component differs from the sender's: {size} bytes crc32c {crc:08x}, \
                     expected {} bytes crc32c {:08x}",
                    expected.size, expected.crc32c
                ),
            });
        }
    }
    Ok(())
}

/// Appends received bytes to a component file being received.
pub fn append_received(
    dir: &Path,
    gen: u64,
    component: &str,
    bytes: &[u8],
) -> Result<(), StorageError> {
    let path = sstable::component_path(dir, gen, known_component(component)?);
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| StorageError::io(&path, e))?;
    let offset = f.metadata().map_err(|e| StorageError::io(&path, e))?.len();
    f.write_all(bytes).map_err(|e| StorageError::io(&path, e))?;
    // Written back piece by piece as it arrives: the fsync before import then finds little to do
    // (see `sstable::writeback`).
    sstable::writeback::start(&f, offset, bytes.len() as u64);
    Ok(())
}
