//! Cassandra's reconciliation rules, in one place: which of two versions of a cell, a row's
//! primary-key liveness, or a deletion wins. Every merge (memtable insert, read, compaction)
//! goes through these functions, so the result never depends on arrival order.

use crate::types::{DeletionTime, Liveness};
use bytes::Bytes;

/// A stored cell version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub timestamp_us: i64,
    pub kind: CellKind,
}

/// The three shapes of a cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CellKind {
    /// A value; `ttl_s` 0 = not expiring, else it dies at `expires_at_s`.
    Live {
        value: Bytes,
        ttl_s: u32,
        expires_at_s: i64,
    },
    /// A cell tombstone.
    Tombstone { local_deletion_time_s: i64 },
    /// A single-node counter: the local shard's logical clock and total.
    Counter { clock: i64, total: i64 },
}

impl Cell {
    /// Live (not a tombstone, not expired) at `now_s`.
    pub fn is_live(&self, now_s: i64) -> bool {
        match &self.kind {
            CellKind::Live {
                ttl_s,
                expires_at_s,
                ..
            } => *ttl_s == 0 || now_s < *expires_at_s,
            CellKind::Tombstone { .. } => false,
            CellKind::Counter { .. } => true,
        }
    }

    /// Cassandra's `localDeletionTime()`: None for non-expiring live cells.
    fn local_deletion_time(&self) -> Option<i64> {
        match &self.kind {
            CellKind::Live { ttl_s: 0, .. } | CellKind::Counter { .. } => None,
            CellKind::Live { expires_at_s, .. } => Some(*expires_at_s),
            CellKind::Tombstone {
                local_deletion_time_s,
            } => Some(*local_deletion_time_s),
        }
    }

    /// When this cell is (or becomes) a tombstone, for gc_grace purging.
    pub fn tombstone_time_s(&self, now_s: i64) -> Option<i64> {
        match &self.kind {
            CellKind::Tombstone {
                local_deletion_time_s,
            } => Some(*local_deletion_time_s),
            CellKind::Live {
                ttl_s,
                expires_at_s,
                ..
            } if *ttl_s > 0 && *expires_at_s <= now_s => Some(*expires_at_s),
            _ => None,
        }
    }

    pub(crate) fn value_bytes(&self) -> &[u8] {
        match &self.kind {
            CellKind::Live { value, .. } => value,
            _ => &[],
        }
    }
}

/// True if `a` wins over `b` (ties resolved so that `reconcile(a, b) == reconcile(b, a)`).
pub fn cell_wins(a: &Cell, b: &Cell) -> bool {
    let a_counter = matches!(a.kind, CellKind::Counter { .. });
    let b_counter = matches!(b.kind, CellKind::Counter { .. });
    if a_counter || b_counter {
        return counter_wins(a, b);
    }
    if a.timestamp_us != b.timestamp_us {
        return a.timestamp_us > b.timestamp_us;
    }
    // Cells.resolveRegular: equal timestamps. Expiring cells count as "tombstone-ish" (CASSANDRA-14592)
    // so the result does not depend on the clock at reconciliation time.
    let a_ldt = a.local_deletion_time();
    let b_ldt = b.local_deletion_time();
    if a_ldt.is_some() || b_ldt.is_some() {
        if a_ldt.is_some() != b_ldt.is_some() {
            return a_ldt.is_some();
        }
        let a_tomb = matches!(a.kind, CellKind::Tombstone { .. });
        let b_tomb = matches!(b.kind, CellKind::Tombstone { .. });
        if a_tomb != b_tomb {
            return a_tomb;
        }
        if a_ldt != b_ldt {
            return a_ldt > b_ldt;
        }
    }
    a.value_bytes() >= b.value_bytes()
}

/// Counter cells: a tombstone always beats a counter (CASSANDRA-7346); between counters the
/// higher logical clock wins (single node: the later read-modify-write), then the larger total.
fn counter_wins(a: &Cell, b: &Cell) -> bool {
    match (&a.kind, &b.kind) {
        (CellKind::Tombstone { .. }, CellKind::Counter { .. }) => true,
        (CellKind::Counter { .. }, CellKind::Tombstone { .. }) => false,
        (
            CellKind::Counter {
                clock: ca,
                total: ta,
            },
            CellKind::Counter {
                clock: cb,
                total: tb,
            },
        ) => (ca, a.timestamp_us, ta) >= (cb, b.timestamp_us, tb),
        // A live non-counter value in a counter column cannot be written through the API;
        // fall back to timestamps so the merge stays total.
        _ => a.timestamp_us >= b.timestamp_us,
    }
}

/// Returns the winning version of a cell.
#[cfg(test)]
pub fn reconcile<'a>(a: &'a Cell, b: &'a Cell) -> &'a Cell {
    if cell_wins(a, b) {
        a
    } else {
        b
    }
}

/// `LivenessInfo.supersedes`: newer timestamp; on a tie the expiring one, then the later expiry.
pub fn liveness_supersedes(a: &Liveness, b: &Liveness) -> bool {
    if a.timestamp_us != b.timestamp_us {
        return a.timestamp_us > b.timestamp_us;
    }
    let a_exp = a.ttl_s > 0;
    let b_exp = b.ttl_s > 0;
    if a_exp == b_exp {
        return a.expires_at_s > b.expires_at_s
            || (a.expires_at_s == b.expires_at_s && a.ttl_s >= b.ttl_s);
    }
    a_exp
}

/// Merges two optional livenesses.
pub fn merge_liveness(a: Option<Liveness>, b: Option<Liveness>) -> Option<Liveness> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if liveness_supersedes(&x, &y) { x } else { y }),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Liveness is live at `now_s`.
pub fn liveness_is_live(l: &Liveness, now_s: i64) -> bool {
    l.ttl_s == 0 || now_s < l.expires_at_s
}

/// `DeletionTime.supersedes`: later mark, then later local deletion time.
pub fn deletion_supersedes(a: &DeletionTime, b: &DeletionTime) -> bool {
    (a.marked_for_delete_at_us, a.local_deletion_time_s)
        > (b.marked_for_delete_at_us, b.local_deletion_time_s)
}

/// The stronger of two optional deletions.
pub fn max_deletion(a: Option<DeletionTime>, b: Option<DeletionTime>) -> Option<DeletionTime> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if deletion_supersedes(&y, &x) { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Data written at `timestamp_us` is shadowed by deletion `d`.
pub fn deletes(d: Option<DeletionTime>, timestamp_us: i64) -> bool {
    matches!(d, Some(d) if timestamp_us <= d.marked_for_delete_at_us)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(ts: i64, v: &[u8]) -> Cell {
        Cell {
            timestamp_us: ts,
            kind: CellKind::Live {
                value: Bytes::copy_from_slice(v),
                ttl_s: 0,
                expires_at_s: 0,
            },
        }
    }
    fn expiring(ts: i64, v: &[u8], exp: i64) -> Cell {
        Cell {
            timestamp_us: ts,
            kind: CellKind::Live {
                value: Bytes::copy_from_slice(v),
                ttl_s: 10,
                expires_at_s: exp,
            },
        }
    }
    fn tomb(ts: i64, ldt: i64) -> Cell {
        Cell {
            timestamp_us: ts,
            kind: CellKind::Tombstone {
                local_deletion_time_s: ldt,
            },
        }
    }
    fn counter(ts: i64, clock: i64, total: i64) -> Cell {
        Cell {
            timestamp_us: ts,
            kind: CellKind::Counter { clock, total },
        }
    }

    fn symmetric(a: &Cell, b: &Cell) -> Cell {
        let x = reconcile(a, b).clone();
        let y = reconcile(b, a).clone();
        assert_eq!(x, y, "reconcile must not depend on argument order");
        x
    }

    #[test]
    fn newer_timestamp_wins_whatever_the_order() {
        assert_eq!(symmetric(&live(1, b"z"), &live(2, b"a")), live(2, b"a"));
        assert_eq!(symmetric(&tomb(1, 100), &live(2, b"a")), live(2, b"a"));
    }

    #[test]
    fn overwrite_with_older_timestamp_loses() {
        assert_eq!(
            symmetric(&live(5, b"new"), &live(4, b"older")),
            live(5, b"new")
        );
    }

    #[test]
    fn tombstone_beats_live_cell_on_equal_timestamp() {
        assert_eq!(symmetric(&tomb(3, 1), &live(3, b"zzz")), tomb(3, 1));
    }

    #[test]
    fn greater_value_wins_between_live_cells_on_equal_timestamp() {
        assert_eq!(symmetric(&live(3, b"b"), &live(3, b"a")), live(3, b"b"));
        assert_eq!(symmetric(&live(3, b"ab"), &live(3, b"a")), live(3, b"ab"));
    }

    #[test]
    fn expiring_beats_non_expiring_on_equal_timestamp() {
        assert_eq!(
            symmetric(&expiring(3, b"a", 50), &live(3, b"z")),
            expiring(3, b"a", 50)
        );
    }

    #[test]
    fn tombstone_beats_expiring_on_equal_timestamp() {
        assert_eq!(symmetric(&expiring(3, b"a", 50), &tomb(3, 10)), tomb(3, 10));
    }

    #[test]
    fn later_expiry_wins_between_expiring_cells() {
        assert_eq!(
            symmetric(&expiring(3, b"z", 50), &expiring(3, b"a", 60)),
            expiring(3, b"a", 60)
        );
    }

    #[test]
    fn later_local_deletion_time_wins_between_tombstones() {
        assert_eq!(symmetric(&tomb(3, 10), &tomb(3, 20)), tomb(3, 20));
    }

    #[test]
    fn counter_tombstone_wins_regardless_of_timestamp() {
        assert_eq!(symmetric(&tomb(1, 1), &counter(100, 5, 7)), tomb(1, 1));
    }

    #[test]
    fn counter_with_higher_clock_wins() {
        assert_eq!(
            symmetric(&counter(100, 2, 7), &counter(50, 3, 1)),
            counter(50, 3, 1)
        );
    }

    #[test]
    fn expiring_cell_dies_at_expiry() {
        let c = expiring(1, b"a", 100);
        assert!(c.is_live(99));
        assert!(!c.is_live(100));
        assert_eq!(c.tombstone_time_s(100), Some(100));
    }

    #[test]
    fn liveness_tie_prefers_expiring_then_later_expiry() {
        let plain = Liveness {
            timestamp_us: 5,
            ttl_s: 0,
            expires_at_s: 0,
        };
        let exp = Liveness {
            timestamp_us: 5,
            ttl_s: 10,
            expires_at_s: 20,
        };
        let later = Liveness {
            timestamp_us: 5,
            ttl_s: 10,
            expires_at_s: 30,
        };
        assert_eq!(merge_liveness(Some(plain), Some(exp)), Some(exp));
        assert_eq!(merge_liveness(Some(exp), Some(plain)), Some(exp));
        assert_eq!(merge_liveness(Some(exp), Some(later)), Some(later));
    }

    #[test]
    fn deletion_shadows_equal_and_older_timestamps_only() {
        let d = Some(DeletionTime {
            marked_for_delete_at_us: 10,
            local_deletion_time_s: 0,
        });
        assert!(deletes(d, 10));
        assert!(deletes(d, 9));
        assert!(!deletes(d, 11));
        assert!(!deletes(None, i64::MIN));
    }

    #[test]
    fn stronger_deletion_is_kept() {
        let a = DeletionTime {
            marked_for_delete_at_us: 10,
            local_deletion_time_s: 5,
        };
        let b = DeletionTime {
            marked_for_delete_at_us: 10,
            local_deletion_time_s: 6,
        };
        assert_eq!(max_deletion(Some(a), Some(b)), Some(b));
        assert_eq!(max_deletion(Some(b), Some(a)), Some(b));
    }
}
