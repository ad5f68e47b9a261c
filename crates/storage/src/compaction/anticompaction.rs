//! Anticompaction: the first step of an incremental repair on a replica. The table's unrepaired
//! SSTables holding partitions of the session's token ranges move to the session's pending set,
//! split where they also hold others, so that the session's Merkle trees and, once it
//! finalizes, the repaired set cover exactly those ranges. Cassandra 4.0+ does the same
//! (PendingAntiCompaction, CompactionManager.performAnticompaction).

use super::merge::{merge_range, MergeCtx, RangeOutput};
use super::worker::Background;
use super::{release, reserve_one_waiting, rewrite_sstables, CompactionKind, Rewrite, TokenRange};
use crate::sstable::repair::RepairState;
use crate::sstable::SSTableReader;
use crate::table::Table;
use crate::types::*;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long an anticompaction waits for the background compactions that hold the SSTables it
/// must take (Cassandra's PendingAntiCompaction gives up after about a minute too).
const ANTICOMPACTION_WAIT: Duration = Duration::from_secs(60);

/// `ranges` (each `[lo, hi)`, None unbounded) sorted, with overlapping and adjacent ones made
/// one, so a split SSTable's pending part is one run of outputs however many vnodes it spans.
pub(crate) fn coalesce(ranges: &[TokenRange]) -> Vec<TokenRange> {
    let mut sorted: Vec<TokenRange> = ranges
        .iter()
        .copied()
        .filter(|r| match (r.lo, r.hi) {
            (Some(lo), Some(hi)) => lo < hi,
            _ => true,
        })
        .collect();
    sorted.sort_by_key(|r| r.lo.map_or((0, 0), |l| (1, l)));
    let mut out: Vec<TokenRange> = Vec::with_capacity(sorted.len());
    for r in sorted {
        match out.last_mut() {
            // Reaches r's start: no token lies between them.
            Some(last) if last.hi.is_none_or(|h| r.lo.is_none_or(|l| l <= h)) => {
                last.hi = match (last.hi, r.hi) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
            }
            _ => out.push(r),
        }
    }
    out
}

/// Whether `token` lies in one of `ranges` (sorted, disjoint).
pub(crate) fn in_ranges(ranges: &[TokenRange], token: i64) -> bool {
    let after = ranges.partition_point(|r| r.lo.is_none_or(|l| l <= token));
    after
        .checked_sub(1)
        .and_then(|i| ranges.get(i))
        .is_some_and(|r| r.hi.is_none_or(|h| token < h))
}

/// Whether `r` meets the token span of `s`.
fn meets(s: &SSTableReader, r: &TokenRange) -> bool {
    r.lo.is_none_or(|l| l <= s.stats.max_token) && r.hi.is_none_or(|h| s.stats.min_token < h)
}

/// Whether the token span of `s` meets one of `ranges`: one that does not is left untouched
/// without waiting for the compaction that may hold it.
fn spans_a_range(s: &SSTableReader, ranges: &[TokenRange]) -> bool {
    ranges.iter().any(|r| meets(s, r))
}

/// How many of `s`'s partitions lie in `ranges`: index lookups only.
fn partitions_in(s: &SSTableReader, ranges: &[TokenRange]) -> Result<usize, StorageError> {
    let mut n = 0;
    for r in ranges.iter().filter(|r| meets(s, r)) {
        let first = r.lo.map_or(Ok(0), |l| s.first_at_or_after_token(l))?;
        let end =
            r.hi.map_or(Ok(s.partition_count()), |h| s.first_at_or_after_token(h))?;
        n += end.saturating_sub(first);
    }
    Ok(n)
}

/// Moves the partitions of `ranges` held by `t`'s unrepaired SSTables to the pending set of
/// `session`: an SSTable whose partitions all lie in the ranges is marked, one with none is
/// left, any other is rewritten alone into a pending part and an unrepaired part. SSTables
/// already repaired or pending are left as they are. The caller has flushed the table.
///
/// Background compactions keep running: an SSTable one of them holds is waited for, and if it
/// replaced it, its (unrepaired) outputs are taken in turn, until no unrepaired SSTable with a
/// partition in the ranges is left or `ANTICOMPACTION_WAIT` has passed (an error: the session
/// must then fail, and release what was marked).
pub(crate) fn anticompact(
    bg: &Background,
    t: &Arc<Table>,
    ranges: &[TokenRange],
    session: [u8; 16],
) -> Result<AntiCompactionStats, StorageError> {
    let ranges = coalesce(ranges);
    let deadline = Instant::now() + ANTICOMPACTION_WAIT;
    let mut stats = AntiCompactionStats::default();
    // Generations looked at (and left, marked or split) and the outputs of the splits, which
    // hold partitions outside the ranges only, whatever their token span.
    let mut done: HashSet<u64> = HashSet::new();
    loop {
        let todo: Vec<Arc<SSTableReader>> = t
            .sstables
            .read()
            .iter()
            .filter(|s| !done.contains(&s.gen) && s.repair_state() == RepairState::Unrepaired)
            .filter(|s| spans_a_range(s, &ranges))
            .cloned()
            .collect();
        if todo.is_empty() {
            return Ok(stats);
        }
        if Instant::now() >= deadline {
            return Err(StorageError::InvalidRequest(format!(
                "anticompaction: {} SSTables still held by compactions after {} s",
                todo.len(),
                ANTICOMPACTION_WAIT.as_secs()
            )));
        }
        for s in todo {
            // None: a compaction replaced it (its outputs are listed next time round), or the
            // deadline passed (reported next time round).
            let Some(input) = reserve_one_waiting(t, &s, deadline) else {
                continue;
            };
            let outputs = one_sstable(bg, t, input, &ranges, session, &mut stats)?;
            done.insert(s.gen);
            done.extend(outputs);
        }
    }
}

/// Anticompacts one reserved SSTable (releasing it); returns the generations it was split into.
fn one_sstable(
    bg: &Background,
    t: &Arc<Table>,
    s: Arc<SSTableReader>,
    ranges: &[TokenRange],
    session: [u8; 16],
    stats: &mut AntiCompactionStats,
) -> Result<Vec<u64>, StorageError> {
    let inside = match partitions_in(&s, ranges) {
        // Another session's anticompaction took it between the listing and the reservation.
        Ok(_) if s.repair_state() != RepairState::Unrepaired => 0,
        Ok(n) => n,
        Err(e) => {
            release(t, std::slice::from_ref(&s));
            return Err(e);
        }
    };
    if inside == 0 || inside == s.partition_count() {
        let marked = if inside == 0 {
            Ok(())
        } else {
            let _repair = t.repair_lock.lock();
            s.set_repair_state(RepairState::Pending { session })
        };
        release(t, std::slice::from_ref(&s));
        marked?;
        stats.sstables_marked += usize::from(inside > 0);
        return Ok(Vec::new());
    }
    let level = s.stats.level;
    let done = rewrite_sstables(
        bg,
        t,
        vec![s],
        (CompactionKind::AntiCompaction, level, u64::MAX),
        Rewrite::Split(ranges, session),
    )?;
    stats.sstables_split += 1;
    stats.bytes_rewritten += done.bytes_read;
    Ok(done.output_generations)
}

/// The merge of a split: the partitions within `ranges`, then the others, each in outputs of
/// their own; with how many outputs the first part wrote.
pub(super) fn merge_split(
    ctx: &MergeCtx<'_>,
    ranges: &[TokenRange],
) -> (Vec<Result<RangeOutput, StorageError>>, usize) {
    let inside = |token: i64| in_ranges(ranges, token);
    let outside = |token: i64| !in_ranges(ranges, token);
    let pending = merge_range(
        &MergeCtx {
            only: Some(&inside),
            ..*ctx
        },
        &TokenRange::ALL,
    );
    let written = pending.as_ref().map_or(0, |o| o.sstables.len());
    let rest = merge_range(
        &MergeCtx {
            only: Some(&outside),
            ..*ctx
        },
        &TokenRange::ALL,
    );
    (vec![pending, rest], written)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn r(lo: Option<i64>, hi: Option<i64>) -> TokenRange {
        TokenRange { lo, hi }
    }

    #[test]
    fn ranges_coalesce_when_they_touch_or_overlap() {
        let got = coalesce(&[
            r(Some(20), Some(30)),
            r(Some(0), Some(10)),
            r(Some(10), Some(15)),
            r(Some(25), Some(40)),
            r(Some(50), None),
            r(Some(60), Some(70)),
            r(Some(5), Some(5)),
        ]);
        assert_eq!(
            got,
            vec![
                r(Some(0), Some(15)),
                r(Some(20), Some(40)),
                r(Some(50), None)
            ]
        );
        assert_eq!(
            coalesce(&[r(Some(3), Some(9)), r(None, Some(3))]),
            vec![r(None, Some(9))]
        );
    }

    #[test]
    fn tokens_are_in_ranges_from_lo_inclusive_to_hi_exclusive() {
        let ranges = [r(None, Some(-10)), r(Some(0), Some(10)), r(Some(20), None)];
        for (t, want) in [
            (i64::MIN, true),
            (-10, false),
            (-1, false),
            (0, true),
            (9, true),
            (10, false),
            (19, false),
            (20, true),
            (i64::MAX, true),
        ] {
            assert_eq!(in_ranges(&ranges, t), want, "token {t}");
        }
        assert!(!in_ranges(&[], 0));
    }
}
