//! Commitlog: append-only segment files that make acknowledged writes durable before they reach
//! an SSTable.
//!
//! Segment file `CommitLog-hl1-<id>.log`: a sequence of entries
//! ```text
//! [u32 BE payload length][u32 BE crc32c(payload)][payload]
//! payload = u32 count, count * (table id: 16 bytes, u32 length, encoded partition (codec/format1.rs))
//! ```
//! Segments are allocated at `commitlog_segment_size` and appended to with `pwrite`
//! (segment_file.rs), so the unwritten tail of a segment is zeros, which replay reads as its end.
//! An entry goes to the file at once, or, appended inside `deferring_appends` (deferred.rs),
//! waits in the log's buffer with the entries after it until one write takes them all. Entries
//! reach the file in log order: whoever writes writes the whole buffer, so no entry lies behind
//! a gap of zeros that replay would take for the end.
//! One entry holds one `apply` or one whole `apply_batch`, so a batch replays all-or-nothing. A torn
//! or corrupt entry (short read, bad length, CRC mismatch) ends replay of that segment: everything
//! after it was never acknowledged (entries are fsynced in order).
//!
//! Counter increments are logged after read-modify-write, as absolute (clock, total) cells, so
//! replaying an entry twice is harmless.
//!
//! `CommitLog-flushed.txt` holds, per table, the log position up to which its data is in
//! SSTables (Cassandra keeps the same fact as each SSTable's commit log intervals): rewritten at
//! every flush, read once at open, and deleted there, so that replay skips what the SSTables
//! already hold. Replaying it again would be harmless for the data but not for what is known
//! about it: a restarted replica would hold its repaired rows a second time as unrepaired, and
//! the next incremental repair would send them around the ring again. The file is only ever
//! behind the SSTables (written after a flush's files are synced), and it is deleted at open
//! because segment ids restart at 1 when no segment is left: a stale file from an earlier run
//! would otherwise skip entries that were never flushed.

mod deferred;
mod segment_file;

pub use deferred::{deferring_appends, UnwrittenAppends};

use crate::codec::crc32c;
use crate::error::StorageError;
use crate::types::{CommitlogSync, TableId};
use parking_lot::{Condvar, Mutex};
use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Largest entry accepted; a longer length field in a segment means corruption.
pub const MAX_ENTRY_BYTES: usize = 256 << 20;
const HEADER_BYTES: u64 = 8;

/// A position in the log: (segment id, byte offset after the entry).
pub type LogPosition = (u64, u64);

struct Segment {
    id: u64,
    path: PathBuf,
    /// Per table, the position after the last entry for it in this segment.
    dirty: HashMap<TableId, u64>,
}

struct WriterState {
    current: Segment,
    file: Arc<File>,
    /// The current segment's allocated length: an entry past it starts the next segment.
    len: u64,
    /// The end of the log in the current segment, buffered entries included.
    offset: u64,
    /// Sequence number of the last appended entry.
    written_seq: u64,
    /// Entries appended but not yet written to the current segment's file, back to back, the
    /// first at `buffered_from`.
    buffered: Vec<u8>,
    buffered_from: u64,
    /// Sequence number of the last entry in the file (the rest are in `buffered`).
    in_file_seq: u64,
    /// Older segments still holding unflushed data.
    old: BTreeMap<u64, Segment>,
    /// Segments rotated away whose data the syncer has not yet made durable, so no writer
    /// waits on an `fdatasync`.
    retired: Vec<Retired>,
    /// The next segment, created ahead by the syncer, so a rotation is a swap under the lock
    /// (Cassandra's segment allocator does the same), not a file creation and allocation.
    spare: Option<(Segment, Arc<File>, u64)>,
    /// The id the next created segment gets; ids only grow, gaps are harmless.
    next_id: u64,
    /// Per table, everything up to this position is in SSTables.
    flushed: HashMap<TableId, LogPosition>,
}

/// A segment no longer appended to, until the syncer has synced its file.
struct Retired {
    file: Arc<File>,
    path: PathBuf,
}

/// The commitlog of one engine.
pub struct Commitlog {
    dir: PathBuf,
    segment_size_bytes: u64,
    sync: CommitlogSync,
    state: Mutex<WriterState>,
    /// Signals the syncer that a writer waits for an fsync.
    sync_requested: Mutex<bool>,
    sync_cv: Condvar,
    /// Held for a whole `sync_now`, so one sync's published sequence number never covers a
    /// retired segment another sync has taken but not yet synced.
    sync_order: Mutex<()>,
    /// Held while a spare segment is made; `shutdown` waits for it, so no file appears or
    /// disappears in the directory after the log is shut down.
    spare_creation: Mutex<()>,
    synced_tx: tokio::sync::watch::Sender<u64>,
    stop: AtomicBool,
    /// Per table, the position its data was flushed to when the previous run last flushed it:
    /// replay skips the entries before it.
    flushed_before_open: HashMap<TableId, LogPosition>,
}

const FLUSHED_FILE: &str = "CommitLog-flushed.txt";

/// Writes the flushed positions (best effort: without the file replay redoes more, no less).
/// Called outside the writer's lock, so appends never wait on it; two flushes storing at once
/// each write a whole file of their own and the last rename wins, which at worst leaves an
/// older snapshot, one that replays more.
fn store_flushed(dir: &Path, flushed: &HashMap<TableId, LogPosition>) {
    static NEXT_TMP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut text = String::new();
    for (t, (segment, offset)) in flushed {
        let hex: String = t.iter().map(|b| format!("{b:02x}")).collect();
        text.push_str(&format!("{hex} {segment} {offset}\n"));
    }
    let n = NEXT_TMP.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!("{FLUSHED_FILE}.{n}.tmp"));
    if fs::write(&tmp, text).is_ok() && fs::rename(&tmp, dir.join(FLUSHED_FILE)).is_ok() {
        return;
    }
    let _ = fs::remove_file(&tmp);
}

/// The flushed positions of the previous run (empty when unreadable: replay then redoes all).
fn load_flushed(dir: &Path) -> HashMap<TableId, LogPosition> {
    let text = fs::read_to_string(dir.join(FLUSHED_FILE)).unwrap_or_default();
    let parse = |line: &str| -> Option<(TableId, LogPosition)> {
        let mut parts = line.split(' ');
        let hex = parts.next()?;
        let mut table = [0u8; 16];
        if hex.len() != 32 {
            return None;
        }
        for (i, b) in table.iter_mut().enumerate() {
            *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        let segment = parts.next()?.parse().ok()?;
        let offset = parts.next()?.parse().ok()?;
        parts.next().is_none().then_some((table, (segment, offset)))
    };
    let lines: Vec<_> = text.lines().map(parse).collect();
    // A torn file is ignored whole: any line of it may be wrong.
    lines.into_iter().collect::<Option<_>>().unwrap_or_default()
}

fn remove_files(paths: &[PathBuf]) {
    for p in paths {
        let _ = fs::remove_file(p);
    }
}

fn segment_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("CommitLog-hl1-{id}.log"))
}

/// Existing segment ids in `dir`, ascending.
pub fn list_segments(dir: &Path) -> Result<Vec<u64>, StorageError> {
    let mut ids = Vec::new();
    let rd = fs::read_dir(dir).map_err(|e| StorageError::io(dir, e))?;
    for ent in rd {
        let ent = ent.map_err(|e| StorageError::io(dir, e))?;
        let name = ent.file_name();
        let name = name.to_string_lossy();
        if let Some(id) = name
            .strip_prefix("CommitLog-hl1-")
            .and_then(|s| s.strip_suffix(".log"))
        {
            if let Ok(id) = id.parse::<u64>() {
                ids.push(id);
            }
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// Creates segment `id`, allocated at `len` bytes.
fn create_segment(
    dir: &Path,
    id: u64,
    len: u64,
) -> Result<(Segment, Arc<File>, u64), StorageError> {
    let path = segment_path(dir, id);
    let file = OpenOptions::new()
        .create(true)
        .read(true)
        .write(true)
        .truncate(true)
        .open(&path)
        .map_err(|e| StorageError::io(&path, e))?;
    segment_file::allocate(&file, &path, len)?;
    // Make the new file's directory entry durable, or a crash could lose the whole segment.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok((
        Segment {
            id,
            path,
            dirty: HashMap::new(),
        },
        Arc::new(file),
        len,
    ))
}

impl Commitlog {
    /// Opens the log, starting a fresh segment after any existing ones (those are replayed, then
    /// deleted by `discard_replayed`).
    pub fn open(
        dir: &Path,
        sync: CommitlogSync,
        segment_size_bytes: u64,
    ) -> Result<Arc<Commitlog>, StorageError> {
        fs::create_dir_all(dir).map_err(|e| StorageError::io(dir, e))?;
        let existing = list_segments(dir)?;
        let next = existing.last().map_or(1, |l| l + 1);
        let flushed_before_open = if existing.is_empty() {
            HashMap::new()
        } else {
            load_flushed(dir)
        };
        let _ = fs::remove_file(dir.join(FLUSHED_FILE));
        // Temporary files of a store a crash interrupted.
        for ent in fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = ent.file_name().to_string_lossy().into_owned();
            if name.starts_with(FLUSHED_FILE) && name.ends_with(".tmp") {
                let _ = fs::remove_file(ent.path());
            }
        }
        let segment_size_bytes = segment_size_bytes.max(1 << 20);
        let (current, file, len) = create_segment(dir, next, segment_size_bytes)?;
        let (synced_tx, _) = tokio::sync::watch::channel(0u64);
        let log = Arc::new(Commitlog {
            dir: dir.to_path_buf(),
            segment_size_bytes,
            sync,
            state: Mutex::new(WriterState {
                current,
                file,
                len,
                offset: 0,
                written_seq: 0,
                buffered: Vec::new(),
                buffered_from: 0,
                in_file_seq: 0,
                old: BTreeMap::new(),
                retired: Vec::new(),
                spare: None,
                next_id: next + 1,
                flushed: HashMap::new(),
            }),
            sync_requested: Mutex::new(false),
            sync_cv: Condvar::new(),
            sync_order: Mutex::new(()),
            spare_creation: Mutex::new(()),
            synced_tx,
            stop: AtomicBool::new(false),
            flushed_before_open,
        });
        let bg = log.clone();
        std::thread::Builder::new()
            .name("commitlog-sync".into())
            .spawn(move || bg.sync_loop())
            .map_err(|e| StorageError::io(dir, e))?;
        Ok(log)
    }

    /// An empty entry: room for its header, then the payload is appended to it and the whole
    /// buffer handed to `append`, which fills the header in and writes it with one `pwrite`
    /// (no copy of the payload behind a header).
    pub fn new_entry(payload_capacity: usize) -> Vec<u8> {
        let mut entry = Vec::with_capacity(HEADER_BYTES as usize + payload_capacity);
        entry.resize(HEADER_BYTES as usize, 0);
        entry
    }

    /// Appends one entry for `tables` (the tables it touches): `entry` as `new_entry` made it,
    /// payload after the header's room. Returns its sequence number and position. The caller
    /// waits with `wait_durable` (after releasing its locks); inside `deferring_appends` the
    /// entry may still be buffered when this returns, and the deferring caller writes it.
    pub fn append(
        self: &Arc<Self>,
        entry: &mut [u8],
        tables: &[TableId],
    ) -> Result<(u64, LogPosition), StorageError> {
        let Some((header, payload)) = entry.split_at_mut_checked(HEADER_BYTES as usize) else {
            return Err(StorageError::InvalidRequest(
                "commitlog entry without room for its header".into(),
            ));
        };
        if payload.len() > MAX_ENTRY_BYTES {
            return Err(StorageError::InvalidRequest(format!(
                "mutation of {} bytes is too large",
                payload.len()
            )));
        }
        // Computed before taking the lock: the lock is held only for the write.
        header[..4].copy_from_slice(&(payload.len() as u32).to_be_bytes());
        header[4..].copy_from_slice(&crc32c(payload).to_be_bytes());
        let mut st = self.state.lock();
        // After shutdown the segment may be deleted (`close_clean`): an append would be lost.
        if self.stop.load(Ordering::Acquire) {
            return Err(StorageError::ShuttingDown);
        }
        let entry_len = entry.len() as u64;
        let mut clean = Vec::new();
        if st.offset + entry_len > st.len {
            clean = self.rotate(&mut st, entry_len)?;
        }
        let defer = self.defers() && deferred::deferring();
        // Behind buffered entries (other connections' deferred ones) an entry joins them, so
        // that it is written with them: written alone it would follow a gap of zeros, which
        // replay reads as the end of the log.
        let buffered = defer || !st.buffered.is_empty();
        if buffered {
            if st.buffered.is_empty() {
                st.buffered_from = st.offset;
            }
            st.buffered.extend_from_slice(entry);
        }
        if !defer {
            let written = match buffered {
                true => Self::write_buffered(&mut st),
                false => st
                    .file
                    .write_all_at(entry, st.offset)
                    .map_err(|e| StorageError::io(&st.current.path, e)),
            };
            // A failed write leaves the offset where it was and this entry out of the buffer:
            // the next entry overwrites whatever part of it reached the file, and nobody was
            // told it was logged. Other writers' entries stay buffered for them to retry.
            if let Err(e) = written {
                let kept = st.buffered.len().saturating_sub(entry.len());
                st.buffered.truncate(kept);
                return Err(e);
            }
        }
        st.offset += entry_len;
        st.written_seq += 1;
        match defer {
            true => deferred::owe(self, st.written_seq),
            false => st.in_file_seq = st.written_seq,
        }
        let off = st.offset;
        for t in tables {
            st.current.dirty.insert(*t, off);
        }
        let appended = (st.written_seq, (st.current.id, off));
        // Unlinking a segment takes milliseconds: the other writers need not wait for it.
        drop(st);
        remove_files(&clean);
        Ok(appended)
    }

    /// Whether appends may be left buffered (deferred.rs): only when no writer waits for a sync.
    fn defers(&self) -> bool {
        matches!(self.sync, CommitlogSync::Periodic { .. })
    }

    /// Writes the buffered entries to the current segment's file in one `pwrite`.
    fn write_buffered(st: &mut WriterState) -> Result<(), StorageError> {
        if !st.buffered.is_empty() {
            st.file
                .write_all_at(&st.buffered, st.buffered_from)
                .map_err(|e| StorageError::io(&st.current.path, e))?;
            st.buffered.clear();
        }
        st.in_file_seq = st.written_seq;
        Ok(())
    }

    /// Makes sure entry `seq` is in its segment's file (in the kernel's page cache): writes the
    /// buffer if it still holds it.
    pub fn write_through(&self, seq: u64) -> Result<(), StorageError> {
        let mut st = self.state.lock();
        if st.in_file_seq >= seq {
            return Ok(());
        }
        Self::write_buffered(&mut st)
    }

    /// Starts the next segment, big enough for an entry of `entry_len` bytes (a mutation larger
    /// than `commitlog_segment_size` gets a segment of its own size): the syncer's spare when it
    /// has one that fits. Returns the files of segments now clean, for the caller to delete
    /// once it has released the lock.
    fn rotate(&self, st: &mut WriterState, entry_len: u64) -> Result<Vec<PathBuf>, StorageError> {
        let len = self
            .segment_size_bytes
            .max(entry_len.next_multiple_of(4096));
        // The buffered entries belong to the segment being left.
        Self::write_buffered(st)?;
        let mut clean = Vec::new();
        let next = match st.spare.take() {
            // A stored spare is always newer than the current segment (`prepare_spare`).
            Some(spare) if spare.2 >= len => spare,
            other => {
                clean.extend(other.map(|(seg, _, _)| seg.path));
                let id = st.next_id;
                st.next_id += 1;
                create_segment(&self.dir, id, len)?
            }
        };
        let (seg, file, seg_len) = next;
        let old = std::mem::replace(&mut st.current, seg);
        // The old segment's entries become durable at the syncer's next round, before any
        // later entry is reported synced (`sync_now` syncs retired segments first).
        st.len = seg_len;
        let old_file = std::mem::replace(&mut st.file, file);
        st.retired.push(Retired {
            file: old_file,
            path: old.path.clone(),
        });
        st.offset = 0;
        st.old.insert(old.id, old);
        clean.extend(self.take_clean_segments(st));
        // Wake the syncer: it syncs the retired segment and prepares the next spare.
        *self.sync_requested.lock() = true;
        self.sync_cv.notify_one();
        Ok(clean)
    }

    /// Creates the next segment ahead of need, outside the writer lock.
    fn prepare_spare(&self) -> Result<(), StorageError> {
        let _creating = self.spare_creation.lock();
        let id = {
            let mut st = self.state.lock();
            if st.spare.is_some() || self.stop.load(Ordering::Acquire) {
                return Ok(());
            }
            st.next_id += 1;
            st.next_id - 1
        };
        let spare = create_segment(&self.dir, id, self.segment_size_bytes)?;
        let mut st = self.state.lock();
        if st.spare.is_none() && spare.0.id > st.current.id && !self.stop.load(Ordering::Acquire) {
            st.spare = Some(spare);
            return Ok(());
        }
        drop(st);
        remove_files(&[spare.0.path]);
        Ok(())
    }

    /// The current end of the log.
    pub fn position(&self) -> LogPosition {
        let st = self.state.lock();
        (st.current.id, st.offset)
    }

    /// Waits until entry `seq` is durable as the sync mode requires.
    pub async fn wait_durable(&self, seq: u64) -> Result<(), StorageError> {
        if matches!(self.sync, CommitlogSync::Periodic { .. }) {
            return Ok(());
        }
        let mut rx = self.synced_tx.subscribe();
        {
            *self.sync_requested.lock() = true;
            self.sync_cv.notify_one();
        }
        rx.wait_for(|s| *s >= seq)
            .await
            .map_err(|_| StorageError::ShuttingDown)?;
        Ok(())
    }

    /// Blocking form of `wait_durable` for non-async callers.
    pub fn wait_durable_blocking(&self, seq: u64) -> Result<(), StorageError> {
        if matches!(self.sync, CommitlogSync::Periodic { .. }) {
            return Ok(());
        }
        *self.sync_requested.lock() = true;
        self.sync_cv.notify_one();
        let mut rx = self.synced_tx.subscribe();
        while *rx.borrow_and_update() < seq {
            if self.stop.load(Ordering::Relaxed) {
                return Err(StorageError::ShuttingDown);
            }
            *self.sync_requested.lock() = true;
            self.sync_cv.notify_one();
            std::thread::sleep(Duration::from_micros(200));
        }
        Ok(())
    }

    /// Fsyncs the retired segments and the current one, then publishes the covered sequence
    /// number.
    pub fn sync_now(&self) -> Result<(), StorageError> {
        let _order = self.sync_order.lock();
        let (file, seq, path, retired) = {
            let mut st = self.state.lock();
            Self::write_buffered(&mut st)?;
            let retired = std::mem::take(&mut st.retired);
            (
                st.file.clone(),
                st.written_seq,
                st.current.path.clone(),
                retired,
            )
        };
        let mut retired = retired.into_iter();
        while let Some(r) = retired.next() {
            if let Err(e) = r.file.sync_data() {
                // Retried at the next round, before anything newer; nothing after them is
                // reported synced meanwhile.
                let path = r.path.clone();
                let mut st = self.state.lock();
                let newer = std::mem::take(&mut st.retired);
                st.retired = std::iter::once(r).chain(retired).chain(newer).collect();
                return Err(StorageError::io(path, e));
            }
        }
        file.sync_data().map_err(|e| StorageError::io(path, e))?;
        self.synced_tx.send_modify(|s| *s = (*s).max(seq));
        Ok(())
    }

    fn sync_loop(&self) {
        while !self.stop.load(Ordering::Relaxed) {
            match self.sync {
                CommitlogSync::Periodic { period_ms } => {
                    let mut req = self.sync_requested.lock();
                    self.sync_cv
                        .wait_for(&mut req, Duration::from_millis(period_ms.max(1)));
                    *req = false;
                }
                CommitlogSync::Batch | CommitlogSync::Group { .. } => {
                    let mut req = self.sync_requested.lock();
                    if !*req {
                        self.sync_cv.wait_for(&mut req, Duration::from_millis(100));
                    }
                    if !*req {
                        continue;
                    }
                    *req = false;
                    drop(req);
                    if let CommitlogSync::Group { window_ms } = self.sync {
                        std::thread::sleep(Duration::from_millis(window_ms.min(1000)));
                    }
                }
            }
            // A failed fsync leaves waiters waiting; the next round retries. Cassandra's default
            // commit_failure_policy would stop the node; surfacing that is the server's job.
            let _ = self.sync_now();
            // Without a spare the next rotation creates its segment under the lock, as before.
            let _ = self.prepare_spare();
        }
    }

    /// Records that `table`'s data up to `pos` is in SSTables, and deletes segments nobody needs.
    pub fn discard(&self, table: TableId, pos: LogPosition) {
        let (snapshot, clean) = {
            let mut st = self.state.lock();
            let cur = st.flushed.get(&table).copied();
            let moved = !matches!(cur, Some(c) if c >= pos);
            if moved {
                st.flushed.insert(table, pos);
            }
            let clean = self.take_clean_segments(&mut st);
            (moved.then(|| st.flushed.clone()), clean)
        };
        remove_files(&clean);
        if let Some(flushed) = snapshot {
            store_flushed(&self.dir, &flushed);
        }
    }

    /// Forgets a dropped or truncated table's entries.
    pub fn forget_table(&self, table: TableId) {
        let (flushed, clean) = {
            let mut st = self.state.lock();
            let pos = (st.current.id, st.offset);
            st.flushed.insert(table, pos);
            let clean = self.take_clean_segments(&mut st);
            (st.flushed.clone(), clean)
        };
        remove_files(&clean);
        store_flushed(&self.dir, &flushed);
    }

    /// Whether `table`'s entry ending at `end`, in a segment from before this run, was already
    /// in SSTables then.
    pub fn flushed_before_open(&self, table: &TableId, end: LogPosition) -> bool {
        self.flushed_before_open
            .get(table)
            .is_some_and(|p| *p >= end)
    }

    /// Forgets the old segments whose entries are all in SSTables; returns their files.
    fn take_clean_segments(&self, st: &mut WriterState) -> Vec<PathBuf> {
        let flushed = &st.flushed;
        let clean: Vec<u64> = st
            .old
            .values()
            .filter(|s| {
                s.dirty
                    .iter()
                    .all(|(t, off)| flushed.get(t).is_some_and(|p| *p >= (s.id, *off)))
            })
            .map(|s| s.id)
            .collect();
        clean
            .into_iter()
            .filter_map(|id| st.old.remove(&id).map(|s| s.path))
            .collect()
    }

    /// Deletes the segments found at open (after replay and a flush of everything replayed).
    pub fn discard_replayed(&self, ids: &[u64]) {
        for id in ids {
            let _ = fs::remove_file(segment_path(&self.dir, *id));
        }
    }

    /// Final fsync; stops the syncer and refuses further appends.
    pub fn shutdown(&self) -> Result<(), StorageError> {
        {
            // Under the writer lock, so no append is between its check and its write.
            let _st = self.state.lock();
            self.stop.store(true, Ordering::Release);
        }
        // A spare being made now sees `stop` and removes its file before this returns.
        drop(self.spare_creation.lock());
        let r = self.sync_now();
        self.sync_cv.notify_all();
        r
    }

    /// After `shutdown`, once every table was flushed: deletes every segment whose entries are
    /// all in SSTables, the current one included, so the next start replays nothing. Returns
    /// true when no segment is left.
    pub fn close_clean(&self) -> bool {
        let mut st = self.state.lock();
        if !self.stop.load(Ordering::Acquire) {
            return false;
        }
        let clean = self.take_clean_segments(&mut st);
        remove_files(&clean);
        if let Some((spare, _, _)) = st.spare.take() {
            remove_files(&[spare.path]);
        }
        let flushed = &st.flushed;
        let cur = &st.current;
        let clean = cur
            .dirty
            .iter()
            .all(|(t, off)| flushed.get(t).is_some_and(|p| *p >= (cur.id, *off)));
        if clean && st.old.is_empty() {
            let _ = fs::remove_file(&st.current.path);
            return true;
        }
        false
    }
}

/// The offset after each entry of a segment, in order (entries start at 0, back to back).
pub fn entry_ends(entries: &[Vec<u8>]) -> Vec<u64> {
    entries
        .iter()
        .scan(0u64, |end, e| {
            *end += HEADER_BYTES + e.len() as u64;
            Some(*end)
        })
        .collect()
}

/// Reads the valid entries of one segment; `Ok((entries, torn))` where `torn` says a bad tail
/// was skipped.
pub fn read_segment(path: &Path) -> Result<(Vec<Vec<u8>>, bool), StorageError> {
    let mut data = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut data))
        .map_err(|e| StorageError::io(path, e))?;
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        let Some(hdr) = data.get(pos..pos + 8) else {
            return Ok((out, true));
        };
        let len = u32::from_be_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]) as usize;
        let crc = u32::from_be_bytes([hdr[4], hdr[5], hdr[6], hdr[7]]);
        if len == 0 && crc == 0 {
            // Zero-filled tail (preallocated or torn metadata): the end of written data.
            let rest_zero = data.get(pos..).is_some_and(|r| r.iter().all(|b| *b == 0));
            return Ok((out, !rest_zero));
        }
        if len > MAX_ENTRY_BYTES {
            return Ok((out, true));
        }
        let Some(payload) = data.get(pos + 8..pos + 8 + len) else {
            return Ok((out, true));
        };
        if crc32c(payload) != crc {
            return Ok((out, true));
        }
        out.push(payload.to_vec());
        pos += 8 + len;
    }
    Ok((out, false))
}

#[cfg(test)]
mod tests;
