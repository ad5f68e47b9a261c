//! What one node's executor owns that would otherwise be a process-wide static: its clock and the
//! orderings drawn from it (write timestamps, list-prepend paths) and its LWT partition locks.
//! It sits below both `node` (which holds it) and `exec` (which uses it), so the node does not
//! depend on the executor.

use helenus_schema::TableMeta;
use helenus_types::{Clock, SharedClock, TimeUuids};
use std::sync::atomic::{AtomicI64, Ordering};

/// Stripes of the LWT partition locks.
const STRIPES: usize = 256;

/// What one node's executor owns that would otherwise be a process-wide static: its clock and
/// the orderings drawn from it, and its LWT locks. Several nodes may share a process (tests, a
/// simulated cluster), and a test may hand in a `ManualClock`.
#[derive(Debug)]
pub struct ExecState {
    /// Strictly increasing write timestamps, so two writes from this node never tie.
    timestamps: helenus_types::WriteTimestamps,
    prepends: PrependPaths,
    lwt_locks: LwtLocks,
    /// Time UUIDs for `now()` and list appends.
    uuids: TimeUuids,
}

impl ExecState {
    pub fn new(clock: helenus_types::SharedClock) -> Self {
        ExecState {
            timestamps: helenus_types::WriteTimestamps::new(clock.clone()),
            uuids: TimeUuids::new(clock.clone()),
            prepends: PrependPaths::new(clock),
            lwt_locks: LwtLocks::default(),
        }
    }

    /// The node's clock.
    pub fn clock(&self) -> &helenus_types::SharedClock {
        self.timestamps.clock()
    }

    /// The timestamp of a write that names none.
    pub fn next_timestamp_us(&self) -> i64 {
        self.timestamps.next()
    }

    /// The node's list-prepend paths.
    pub fn prepends(&self) -> &PrependPaths {
        &self.prepends
    }

    /// The node's LWT partition locks.
    pub fn lwt_locks(&self) -> &LwtLocks {
        &self.lwt_locks
    }

    /// Now in whole seconds (TTL and deletion-time unit).
    pub fn now_s(&self) -> i64 {
        self.clock().wall_secs()
    }

    /// The moment a statement runs at, on this node's clock.
    pub fn now(&self) -> Now<'_> {
        Now {
            s: self.now_s(),
            clock: self.clock().as_ref(),
            uuids: &self.uuids,
        }
    }
}

/// The time a statement reads: its second (TTLs, expiry), and the node's clock and time UUIDs
/// for `now()`, `currentTimestamp()` and the like.
#[derive(Clone, Copy)]
pub struct Now<'a> {
    pub s: i64,
    clock: &'a dyn Clock,
    uuids: &'a TimeUuids,
}

impl Now<'_> {
    /// The wall clock in milliseconds.
    pub fn wall_ms(&self) -> i64 {
        self.clock.wall_ms()
    }

    /// A new time UUID, after every one this node issued before.
    pub fn timeuuid(&self) -> uuid::Uuid {
        self.uuids.next()
    }
}

impl Now<'static> {
    /// The system clock, for what runs outside any node: planning constant terms, unit tests.
    pub fn system() -> Now<'static> {
        static SYSTEM: std::sync::OnceLock<(helenus_types::SystemClock, TimeUuids)> =
            std::sync::OnceLock::new();
        let (clock, uuids) = SYSTEM.get_or_init(|| {
            (
                helenus_types::SystemClock,
                TimeUuids::new(helenus_types::SystemClock::shared()),
            )
        });
        Now {
            s: clock.wall_secs(),
            clock,
            uuids,
        }
    }
}

/// Cassandra's reference time for list prepends (2010-01-01T00:00:00Z, in ms).
const PREPEND_REFERENCE_MS: i64 = 1_262_304_000_000;
/// 100 ns intervals between the UUID epoch (1582-10-15) and the Unix epoch, per ms.
const UUID_EPOCH_OFFSET_MS: i64 = 12_219_292_800_000;

/// Time-UUID cell paths for `l = [e1, ..., en] + l`, in element order. List cells sort by the
/// time of their path, so, as Cassandra does, prepends mirror the wall clock around 2010: the
/// later a prepend, the earlier its time, before every appended element (stamped with the real
/// time). The node's low-water mark keeps successive prepends strictly decreasing even within
/// one millisecond.
#[derive(Debug)]
pub struct PrependPaths {
    clock: SharedClock,
    /// The lowest UUID time (100 ns ticks) handed out so far.
    lowest: AtomicI64,
}

impl PrependPaths {
    pub fn new(clock: SharedClock) -> Self {
        PrependPaths {
            clock,
            lowest: AtomicI64::new(i64::MAX),
        }
    }

    /// Paths for `n` prepended elements, each below every path handed out before.
    pub fn next(&self, n: usize) -> Vec<bytes::Bytes> {
        let now_ms = self.clock.wall_ms();
        let mirrored_ms = PREPEND_REFERENCE_MS - (now_ms - PREPEND_REFERENCE_MS);
        let wanted = (mirrored_ms + UUID_EPOCH_OFFSET_MS) * 10_000;
        let count = n as i64;
        let mut prev = self.lowest.load(Ordering::Relaxed);
        let base = loop {
            let base = wanted.min(prev.saturating_sub(count));
            match self.lowest.compare_exchange_weak(
                prev,
                base,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => break base,
                Err(p) => prev = p,
            }
        };
        time_uuid_paths(base, count)
    }
}

/// `count` version-1 UUIDs from UUID time `base` up.
fn time_uuid_paths(base: i64, count: i64) -> Vec<bytes::Bytes> {
    (0..count)
        .map(|i| {
            let uuid = helenus_types::timeuuid_at_ticks(base + i);
            bytes::Bytes::copy_from_slice(uuid.as_bytes())
        })
        .collect()
}

/// The partition locks of one node's compare-and-sets (see `exec::lwt`). Owned by the node,
/// not the process, so nodes sharing a process (tests, a simulated cluster) do not serialise
/// each other.
#[derive(Debug)]
pub struct LwtLocks {
    stripes: Vec<tokio::sync::Mutex<()>>,
}

impl Default for LwtLocks {
    fn default() -> Self {
        LwtLocks {
            stripes: (0..STRIPES).map(|_| tokio::sync::Mutex::new(())).collect(),
        }
    }
}

impl LwtLocks {
    /// The lock of the stripe a partition of table `t` falls in.
    pub(crate) fn stripe(&self, t: &TableMeta, token: i64) -> &tokio::sync::Mutex<()> {
        let table_hash =
            t.id.as_bytes()
                .iter()
                .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(*b)));
        let h = (token as u64) ^ table_hash;
        &self.stripes[(h % STRIPES as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn prepends_sort_before_appends_and_later_prepends_first() {
        let ty = helenus_types::CqlType::Native(helenus_types::NativeType::Timeuuid);
        let cmp = |a: &bytes::Bytes, b: &bytes::Bytes| helenus_types::compare_serialized(&ty, a, b);
        let appended = bytes::Bytes::copy_from_slice(helenus_types::new_timeuuid().as_bytes());
        let prepends = PrependPaths::new(helenus_types::SystemClock::shared());
        let first = prepends.next(2);
        let second = prepends.next(2);
        assert!(cmp(&first[0], &first[1]).is_lt());
        assert!(cmp(&first[1], &appended).is_lt());
        assert!(cmp(&second[1], &first[0]).is_lt());
    }
}
