//! An SSTable's incremental-repair state (Cassandra 4.0+'s repairedAt / pendingRepair), kept in
//! a sidecar `hl-1-<gen>-Repair.txt` rather than in Statistics.db: it changes long after the
//! SSTable is written (a repair session marks, finalizes or releases it), and rewriting one small
//! file atomically is all a change then costs. Absent means unrepaired, so SSTables written
//! before repair states existed, flushed, or received whole (the file is not in the TOC, so it
//! is never streamed) are unrepaired, as Cassandra's received SSTables are.
//!
//! Contents: one line, `repaired_at_ms=<ms>` or `pending_session=<32 hex digits>`.

use super::component_path;
use crate::error::StorageError;
use std::fs;
use std::io::Write;
use std::path::Path;

/// The sidecar's component name.
pub(crate) const REPAIR_COMPONENT: &str = "Repair.txt";
/// Where a new state is written before it is renamed over the sidecar: a crash leaves either
/// the old state or the new one, and the load removes this file.
pub(crate) const REPAIR_TMP_COMPONENT: &str = "Repair.txt.tmp";

/// Which of a table's SSTable sets an SSTable is in. Compaction never merges SSTables of
/// different sets, so repaired data is never mixed with data no repair has compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RepairState {
    /// Never repaired (or its repair was released): repaired again by the next incremental
    /// repair.
    #[default]
    Unrepaired,
    /// Anticompacted into the repair session `session` (its UUID's bytes), which has neither
    /// finalized nor failed yet.
    Pending { session: [u8; 16] },
    /// Repaired by a session that finalized at `at_ms` (ms since the epoch).
    Repaired { at_ms: i64 },
}

/// The set compaction keeps apart: Repaired SSTables merge whatever their `at_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum RepairGroup {
    Unrepaired,
    Repaired,
    Pending([u8; 16]),
}

impl RepairState {
    pub(crate) fn group(self) -> RepairGroup {
        match self {
            RepairState::Unrepaired => RepairGroup::Unrepaired,
            RepairState::Pending { session } => RepairGroup::Pending(session),
            RepairState::Repaired { .. } => RepairGroup::Repaired,
        }
    }

    /// The state of an SSTable merged from SSTables in `states`: theirs when they share one
    /// set (the earliest repair time of repaired ones, so nothing claims a later repair than
    /// its data had), otherwise unrepaired, the one state that never claims too much.
    pub(crate) fn merged(states: impl IntoIterator<Item = RepairState>) -> RepairState {
        let mut out: Option<RepairState> = None;
        for s in states {
            out = Some(match (out, s) {
                (None, s) => s,
                (Some(RepairState::Repaired { at_ms: a }), RepairState::Repaired { at_ms: b }) => {
                    RepairState::Repaired { at_ms: a.min(b) }
                }
                (Some(a), b) if a == b => a,
                _ => return RepairState::Unrepaired,
            });
        }
        out.unwrap_or_default()
    }

    fn encode(self) -> Option<String> {
        match self {
            RepairState::Unrepaired => None,
            RepairState::Pending { session } => Some(format!(
                "pending_session={}\n",
                session
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<String>()
            )),
            RepairState::Repaired { at_ms } => Some(format!("repaired_at_ms={at_ms}\n")),
        }
    }

    fn decode(text: &str) -> Option<RepairState> {
        let (key, value) = text.trim().split_once('=')?;
        match key {
            "repaired_at_ms" => Some(RepairState::Repaired {
                at_ms: value.parse().ok()?,
            }),
            "pending_session" => {
                if value.len() != 32 || !value.is_ascii() {
                    return None;
                }
                let mut session = [0u8; 16];
                for (i, b) in session.iter_mut().enumerate() {
                    *b = u8::from_str_radix(value.get(2 * i..2 * i + 2)?, 16).ok()?;
                }
                Some(RepairState::Pending { session })
            }
            _ => None,
        }
    }
}

/// A session UUID as Cassandra prints it (8-4-4-4-12 hex digits).
pub(crate) fn uuid_string(session: &[u8; 16]) -> String {
    let hex: String = session.iter().map(|b| format!("{b:02x}")).collect();
    [0..8, 8..12, 12..16, 16..20, 20..32]
        .iter()
        .filter_map(|r| hex.get(r.clone()))
        .collect::<Vec<_>>()
        .join("-")
}

/// The state of generation `gen` in `dir`. A sidecar that does not parse reads as unrepaired:
/// its data is then repaired again, where any other reading could claim a repair that never
/// happened.
pub(crate) fn load(dir: &Path, gen: u64) -> Result<RepairState, StorageError> {
    let path = component_path(dir, gen, REPAIR_COMPONENT);
    match fs::read_to_string(&path) {
        Ok(text) => Ok(RepairState::decode(&text).unwrap_or_default()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(RepairState::Unrepaired),
        Err(e) => Err(StorageError::io(&path, e)),
    }
}

/// Makes `state` generation `gen`'s durable state: the sidecar replaced (or removed, for
/// unrepaired) and the directory synced, so the change survives a crash once this returns.
pub(crate) fn store(dir: &Path, gen: u64, state: RepairState) -> Result<(), StorageError> {
    let path = component_path(dir, gen, REPAIR_COMPONENT);
    match state.encode() {
        None => match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(StorageError::io(&path, e)),
        },
        Some(text) => {
            let tmp = component_path(dir, gen, REPAIR_TMP_COMPONENT);
            fs::File::create(&tmp)
                .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|_| f.sync_all()))
                .map_err(|e| StorageError::io(&tmp, e))?;
            fs::rename(&tmp, &path).map_err(|e| StorageError::io(&path, e))?;
        }
    }
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StorageError::io(dir, e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn states_round_trip_through_the_sidecar_and_unrepaired_removes_it() {
        let dir = crate::test_support::tempdir("repair-sidecar");
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(load(&dir, 7).unwrap(), RepairState::Unrepaired);
        let mut session = [0u8; 16];
        session[0] = 0xab;
        session[15] = 0x01;
        for s in [
            RepairState::Pending { session },
            RepairState::Repaired {
                at_ms: 1_700_000_000_123,
            },
            RepairState::Unrepaired,
        ] {
            store(&dir, 7, s).unwrap();
            assert_eq!(load(&dir, 7).unwrap(), s);
        }
        assert!(!component_path(&dir, 7, REPAIR_COMPONENT).exists());
        // Whole-SSTable streaming sends these components: received SSTables are unrepaired.
        assert!(!crate::sstable::all_component_names().any(|c| c.starts_with("Repair")));
        assert!(!component_path(&dir, 7, REPAIR_TMP_COMPONENT).exists());
        assert_eq!(
            uuid_string(&session),
            "ab000000-0000-0000-0000-000000000001"
        );
    }

    #[test]
    fn merged_states_keep_their_set_or_fall_back_to_unrepaired() {
        let p = RepairState::Pending { session: [1; 16] };
        let r = |at_ms| RepairState::Repaired { at_ms };
        assert_eq!(RepairState::merged([p, p]), p);
        assert_eq!(RepairState::merged([r(5), r(3), r(9)]), r(3));
        assert_eq!(
            RepairState::merged([p, RepairState::Unrepaired]),
            RepairState::Unrepaired
        );
        assert_eq!(RepairState::merged([r(5), p]), RepairState::Unrepaired);
        assert_eq!(RepairState::merged([]), RepairState::Unrepaired);
    }
}
