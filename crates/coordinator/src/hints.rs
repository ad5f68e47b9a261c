//! Hinted handoff's store: mutations a replica missed, kept on this node's disk until the replica
//! is back (Cassandra's `HintsService`). One append-only file per target host; each record is
//! `[length u32][crc32c u32][created wall ms i64][mutation]`, so a torn tail after a crash is
//! detected and dropped rather than replayed as garbage.
//!
//! Hints are not written for a node that has been down longer than `max_hint_window` (3 h by
//! default): past that, repair is the cheaper way back, as in Cassandra.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use helenus_cluster::locator::NodeId;
use helenus_types::SharedClock;
use uuid::Uuid;

use crate::write::HintSink;

const RECORD_HEADER: usize = 4 + 4 + 8;
/// Cassandra's `max_hint_window` default.
pub const DEFAULT_MAX_HINT_WINDOW: Duration = Duration::from_secs(3 * 3600);

/// Hints on disk, by target host.
pub struct HintStore {
    dir: PathBuf,
    clock: SharedClock,
    writers: Mutex<HashMap<NodeId, BufWriter<File>>>,
    /// Hints that could not be written (disk errors); a metric, since a write must not fail for it.
    dropped: std::sync::atomic::AtomicU64,
}

/// A hint read back for delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint {
    pub created_ms: i64,
    pub mutation: Bytes,
}

impl HintStore {
    pub fn open(dir: impl Into<PathBuf>, clock: SharedClock) -> io::Result<Arc<HintStore>> {
        let dir = dir.into();
        fs::create_dir_all(&dir)?;
        Ok(Arc::new(HintStore {
            dir,
            clock,
            writers: Mutex::new(HashMap::new()),
            dropped: std::sync::atomic::AtomicU64::new(0),
        }))
    }

    fn path(&self, target: NodeId) -> PathBuf {
        self.dir.join(format!("{}.hints", target.0))
    }

    /// Appends one hint for `target`.
    pub fn append(&self, target: NodeId, mutation: &[u8]) -> io::Result<()> {
        let mut writers = self.writers.lock();
        let writer = match writers.entry(target) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(self.path(target))?;
                v.insert(BufWriter::new(file))
            }
        };
        let len = u32::try_from(mutation.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "hint over 4 GiB"))?;
        writer.write_all(&len.to_be_bytes())?;
        writer.write_all(&crc32c::crc32c(mutation).to_be_bytes())?;
        writer.write_all(&self.clock.wall_ms().to_be_bytes())?;
        writer.write_all(mutation)?;
        Ok(())
    }

    /// Makes every appended hint durable (called periodically, `hints_flush_period`, and on
    /// shutdown).
    pub fn sync(&self) -> io::Result<()> {
        for writer in self.writers.lock().values_mut() {
            writer.flush()?;
            writer.get_ref().sync_data()?;
        }
        Ok(())
    }

    /// Hosts with hints waiting.
    pub fn targets(&self) -> io::Result<Vec<NodeId>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let name = entry?.file_name();
            let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".hints")) else {
                continue;
            };
            if let Ok(id) = Uuid::parse_str(stem) {
                out.push(NodeId(id));
            }
        }
        out.sort();
        Ok(out)
    }

    /// Reads `target`'s hints. A record cut short or failing its checksum ends the file: it is the
    /// torn tail of a crash, and nothing after it was acknowledged as hinted.
    pub fn read(&self, target: NodeId) -> io::Result<Vec<Hint>> {
        if let Some(w) = self.writers.lock().get_mut(&target) {
            w.flush()?;
        }
        let mut raw = Vec::new();
        match File::open(self.path(target)) {
            Ok(mut f) => {
                f.read_to_end(&mut raw)?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        }
        Ok(parse_records(&raw))
    }

    /// Delivers `target`'s hints in order through `deliver`; if every one is delivered the file is
    /// removed, otherwise the undelivered remainder is kept for the next attempt. Returns how
    /// many were delivered. Appends wait meanwhile, so `deliver` must be quick (it only decides).
    pub fn replay(
        &self,
        target: NodeId,
        mut deliver: impl FnMut(&Hint) -> bool,
    ) -> io::Result<usize> {
        // One lock hold from the read to the rewrite: a hint appended in between would sit in
        // the dropped writer's buffer, be flushed into the file and then be removed with it.
        let mut writers = self.writers.lock();
        if let Some(mut w) = writers.remove(&target) {
            w.flush()?;
        }
        let path = self.path(target);
        let mut raw = Vec::new();
        match File::open(&path) {
            Ok(mut f) => {
                f.read_to_end(&mut raw)?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e),
        }
        let hints = parse_records(&raw);
        let delivered = hints.iter().take_while(|h| deliver(h)).count();
        if delivered == hints.len() {
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        } else {
            rewrite(&path, hints.get(delivered..).unwrap_or_default())?;
        }
        Ok(delivered)
    }

    /// Hints that could not be stored.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether a node down for `down_for` should still be hinted.
    pub fn within_window(down_for: Duration, max_hint_window: Duration) -> bool {
        down_for <= max_hint_window
    }
}

impl HintSink for HintStore {
    fn store(&self, target: NodeId, mutation: &Bytes) {
        if let Err(e) = self.append(target, mutation) {
            self.dropped
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            // Losing a hint is not losing the write (repair brings the replica back), so the
            // write goes on and the loss is counted and logged.
            tracing::warn!(%target, error = %e, "hint not stored");
        }
    }
}

fn parse_records(raw: &[u8]) -> Vec<Hint> {
    let mut hints = Vec::new();
    let mut at = 0usize;
    while let Some(header) = raw.get(at..at + RECORD_HEADER) {
        let (len, rest) = header.split_at(4);
        let (crc, created) = rest.split_at(4);
        let len = u32::from_be_bytes(len.try_into().unwrap_or_default()) as usize;
        let crc = u32::from_be_bytes(crc.try_into().unwrap_or_default());
        let created_ms = i64::from_be_bytes(created.try_into().unwrap_or_default());
        let start = at + RECORD_HEADER;
        let Some(body) = raw.get(start..start + len) else {
            break;
        };
        if crc32c::crc32c(body) != crc {
            break;
        }
        hints.push(Hint {
            created_ms,
            mutation: Bytes::copy_from_slice(body),
        });
        at = start + len;
    }
    hints
}

fn rewrite(path: &Path, hints: &[Hint]) -> io::Result<()> {
    let tmp = path.with_extension("hints.tmp");
    {
        let mut w = BufWriter::new(File::create(&tmp)?);
        for h in hints {
            let len = u32::try_from(h.mutation.len())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "hint over 4 GiB"))?;
            w.write_all(&len.to_be_bytes())?;
            w.write_all(&crc32c::crc32c(&h.mutation).to_be_bytes())?;
            w.write_all(&h.created_ms.to_be_bytes())?;
            w.write_all(&h.mutation)?;
        }
        w.flush()?;
        w.get_ref().sync_data()?;
    }
    fs::rename(tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use helenus_types::ManualClock;

    fn node(n: u128) -> NodeId {
        NodeId(Uuid::from_u128(n))
    }

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("helenus-hints-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn hints_survive_reopening_and_replay_in_order() {
        let dir = temp_dir("reopen");
        let clock = Arc::new(ManualClock::new(5_000_000));
        {
            let store = HintStore::open(&dir, clock.clone()).unwrap();
            store.store(node(2), &Bytes::from_static(b"first"));
            store.store(node(2), &Bytes::from_static(b"second"));
            store.store(node(3), &Bytes::from_static(b"other"));
            store.sync().unwrap();
        }
        let store = HintStore::open(&dir, clock).unwrap();
        assert_eq!(store.targets().unwrap(), vec![node(2), node(3)]);
        let mut seen = Vec::new();
        let n = store
            .replay(node(2), |h| {
                seen.push(h.mutation.clone());
                true
            })
            .unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            seen,
            vec![Bytes::from_static(b"first"), Bytes::from_static(b"second")]
        );
        assert_eq!(
            store.targets().unwrap(),
            vec![node(3)],
            "delivered hints are gone"
        );
        assert_eq!(store.read(node(3)).unwrap()[0].created_ms, 5_000);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_hint_appended_while_others_are_delivered_is_kept() {
        let dir = temp_dir("concurrent");
        let store = Arc::new(HintStore::open(&dir, Arc::new(ManualClock::new(0))).unwrap());
        store.store(node(2), &Bytes::from_static(b"old"));
        let appender = {
            let store = store.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                store.store(node(2), &Bytes::from_static(b"new"));
            })
        };
        let delivered = store
            .replay(node(2), |_| {
                // Delivery takes a while: the append above happens meanwhile.
                std::thread::sleep(Duration::from_millis(150));
                true
            })
            .unwrap();
        appender.join().unwrap();
        assert_eq!(delivered, 1);
        let left: Vec<Bytes> = store
            .read(node(2))
            .unwrap()
            .into_iter()
            .map(|h| h.mutation)
            .collect();
        assert_eq!(
            left,
            vec![Bytes::from_static(b"new")],
            "the new hint survives"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_interrupted_replay_keeps_the_rest() {
        let dir = temp_dir("partial");
        let store = HintStore::open(&dir, Arc::new(ManualClock::new(0))).unwrap();
        for i in 0..5u8 {
            store.store(node(2), &Bytes::from(vec![i]));
        }
        let delivered = store.replay(node(2), |h| h.mutation[0] < 2).unwrap();
        assert_eq!(delivered, 2);
        let rest: Vec<u8> = store
            .read(node(2))
            .unwrap()
            .iter()
            .map(|h| h.mutation[0])
            .collect();
        assert_eq!(rest, vec![2, 3, 4]);
        store.store(node(2), &Bytes::from_static(&[9]));
        assert_eq!(
            store.read(node(2)).unwrap().len(),
            4,
            "appends after a partial replay"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_torn_tail_is_dropped_not_replayed() {
        let dir = temp_dir("torn");
        let store = HintStore::open(&dir, Arc::new(ManualClock::new(0))).unwrap();
        store.store(node(2), &Bytes::from_static(b"whole"));
        store.store(node(2), &Bytes::from_static(b"torn record"));
        store.sync().unwrap();
        let path = store.path(node(2));
        let len = fs::metadata(&path).unwrap().len();
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 3).unwrap();
        let hints = store.read(node(2)).unwrap();
        assert_eq!(hints.len(), 1);
        assert_eq!(hints[0].mutation, Bytes::from_static(b"whole"));
        // A flipped byte in a body fails its checksum.
        let mut raw = fs::read(&path).unwrap();
        raw[RECORD_HEADER] ^= 0xff;
        assert!(parse_records(&raw).is_empty());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_hint_window_is_three_hours_by_default() {
        assert!(HintStore::within_window(
            Duration::from_secs(3600),
            DEFAULT_MAX_HINT_WINDOW
        ));
        assert!(!HintStore::within_window(
            Duration::from_secs(4 * 3600),
            DEFAULT_MAX_HINT_WINDOW
        ));
    }
}
