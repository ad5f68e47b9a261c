//! The token ranges a joining node has already received, per keyspace: Cassandra keeps them in
//! `system.available_ranges_v2` so that a bootstrap that failed half way (a source died, a
//! stream broke) resumes with only the ranges still missing (`nodetool bootstrap resume`, or
//! a restart). Helenus keeps them in `available_ranges.json` next to local.json, written
//! atomically (and synced) as each range finishes, and computes the system table's rows from
//! it. The file is removed once the node is NORMAL: the ranges are then simply its own.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

const FILE: &str = "available_ranges.json";
/// The ranges a `nodetool rebuild` has received, kept apart from a bootstrap's.
pub const REBUILT: &str = "rebuilt_ranges.json";

/// The ranges received so far, `(start, end]` token pairs by keyspace.
#[derive(Debug, Default)]
pub struct AvailableRanges {
    dir: PathBuf,
    file: &'static str,
    by_keyspace: BTreeMap<String, BTreeSet<(i64, i64)>>,
}

impl AvailableRanges {
    /// The ranges a bootstrap recorded in `dir` (the system directory).
    pub fn load(dir: &Path) -> AvailableRanges {
        Self::load_file(dir, FILE)
    }

    /// The ranges recorded in `dir`'s `file`. A missing file is none received; an unreadable
    /// one is logged and taken as none (streaming a range again is harmless: the reconcile
    /// rules keep the newest of equal data).
    pub fn load_file(dir: &Path, file: &'static str) -> AvailableRanges {
        let by_keyspace = match std::fs::read(dir.join(file)) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "{file} unreadable; every range streams again");
                BTreeMap::new()
            }),
            Err(_) => BTreeMap::new(),
        };
        AvailableRanges {
            dir: dir.to_path_buf(),
            file,
            by_keyspace,
        }
    }

    /// Whether `(start, end]` of `keyspace` has been received whole.
    pub fn contains(&self, keyspace: &str, start: i64, end: i64) -> bool {
        self.by_keyspace
            .get(keyspace)
            .is_some_and(|ranges| ranges.contains(&(start, end)))
    }

    /// The received `(start, end]` ranges of each keyspace (`system.available_ranges_v2`).
    pub fn by_keyspace(&self) -> &BTreeMap<String, BTreeSet<(i64, i64)>> {
        &self.by_keyspace
    }

    /// How many ranges are recorded, over every keyspace.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_keyspace.values().map(BTreeSet::len).sum()
    }

    /// Records that `(start, end]` of `keyspace` is received, durably before returning: a
    /// crash right after must not stream it again, nor skip one not recorded.
    pub fn add(&mut self, keyspace: &str, start: i64, end: i64) -> std::io::Result<()> {
        self.by_keyspace
            .entry(keyspace.to_string())
            .or_default()
            .insert((start, end));
        let tmp = self.dir.join(format!("{}.tmp", self.file));
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&serde_json::to_vec(&self.by_keyspace).map_err(std::io::Error::other)?)?;
        file.sync_all()?;
        std::fs::rename(&tmp, self.dir.join(self.file))
    }

    /// Forgets every range: the node is NORMAL and they are its own.
    pub fn clear(dir: &Path) -> std::io::Result<()> {
        Self::clear_file(dir, FILE)
    }

    /// Forgets every range recorded in `dir`'s `file`.
    pub fn clear_file(dir: &Path, file: &str) -> std::io::Result<()> {
        match std::fs::remove_file(dir.join(file)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        crate::test_dirs::fresh("ar", name)
    }

    #[test]
    fn received_ranges_survive_a_restart_until_cleared() {
        let dir = temp_dir("persist");
        let mut ranges = AvailableRanges::load(&dir);
        assert_eq!(ranges.len(), 0);
        ranges.add("ks", -10, 20).unwrap();
        ranges.add("ks", 20, i64::MIN).unwrap();
        ranges.add("other", 5, 6).unwrap();
        let again = AvailableRanges::load(&dir);
        assert_eq!(again.len(), 3);
        assert!(again.contains("ks", -10, 20));
        assert!(again.contains("ks", 20, i64::MIN));
        assert!(again.contains("other", 5, 6));
        assert!(!again.contains("ks", 5, 6), "a range of another keyspace");
        assert!(!again.contains("ks", -10, 21), "a different range");
        AvailableRanges::clear(&dir).unwrap();
        AvailableRanges::clear(&dir).unwrap();
        assert_eq!(AvailableRanges::load(&dir).len(), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unreadable_file_is_no_range_received() {
        let dir = temp_dir("corrupt");
        std::fs::write(dir.join(FILE), b"{not json").unwrap();
        assert_eq!(AvailableRanges::load(&dir).len(), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
