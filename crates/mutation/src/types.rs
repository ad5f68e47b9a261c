//! The mutation model: all changes to one partition of one table, as a client write makes them
//! and as a replica returns what it stores (an unfiltered partition).

use bytes::Bytes;

/// A table's uuid.
pub type TableId = [u8; 16];
/// A non-primary-key column's id (stable across ALTER).
pub type ColumnId = u32;

/// A deletion: data with timestamp <= `marked_for_delete_at_us` is shadowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeletionTime {
    pub marked_for_delete_at_us: i64,
    /// Server time of the deletion (seconds); drives purge after gc_grace_seconds.
    pub local_deletion_time_s: i64,
}

/// Whether a clustering bound includes its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BoundKind {
    Inclusive,
    Exclusive,
}

/// A bound over a clustering prefix; an empty prefix is unbounded.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClusteringBound {
    pub prefix: Vec<Bytes>,
    pub kind: BoundKind,
}

impl ClusteringBound {
    /// The unbounded bound (either side).
    pub fn unbounded() -> Self {
        ClusteringBound {
            prefix: Vec::new(),
            kind: BoundKind::Inclusive,
        }
    }
}

/// Primary-key liveness written by INSERT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Liveness {
    pub timestamp_us: i64,
    /// 0 = no TTL.
    pub ttl_s: u32,
    /// Meaningful only when `ttl_s > 0`.
    pub expires_at_s: i64,
}

/// All changes to one partition of one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutation {
    pub table: TableId,
    /// Serialized partition key.
    pub key: Bytes,
    pub token: i64,
    pub partition_deletion: Option<DeletionTime>,
    /// Inclusive/exclusive bounds in storage (comparator) order, start <= end.
    pub range_tombstones: Vec<(ClusteringBound, ClusteringBound, DeletionTime)>,
    pub static_row: Option<RowUpdate>,
    pub rows: Vec<RowUpdate>,
}

impl Mutation {
    /// Whether applying this needs a counter read-modify-write somewhere (and, in a ring, a
    /// shard leader).
    pub fn has_counter_increments(&self) -> bool {
        self.static_row.iter().chain(self.rows.iter()).any(|r| {
            r.cells
                .iter()
                .any(|c| matches!(c.op, CellOp::CounterAdd(_)))
        })
    }

    /// Every cell update of the mutation, static row first, mutably.
    pub fn cells_mut(&mut self) -> impl Iterator<Item = &mut CellUpdate> {
        self.static_row
            .iter_mut()
            .chain(self.rows.iter_mut())
            .flat_map(|r| r.cells.iter_mut())
    }
}

/// Changes to one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowUpdate {
    pub clustering: Vec<Bytes>,
    pub liveness: Option<Liveness>,
    pub deletion: Option<DeletionTime>,
    pub cells: Vec<CellUpdate>,
}

/// Change to one cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellUpdate {
    pub column: ColumnId,
    /// Cell path of a multi-cell column element.
    pub path: Option<Bytes>,
    pub timestamp_us: i64,
    pub op: CellOp,
}

/// What happens to a cell.
///
/// A client write uses the first four; the server fills in what they leave open (TTL expiry,
/// deletion times) when it applies them. A replica's unfiltered read returns cells as stored,
/// with those times already fixed, in the last four: replaying them anywhere, at any time,
/// yields the same cells, which reconciling replicas (read repair, hints, streaming) needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CellOp {
    /// Write a value; `ttl_s` 0 = none (the table's default_time_to_live is not applied here: the caller does it).
    Set { value: Bytes, ttl_s: u32 },
    /// Cell tombstone.
    Delete,
    /// Delete the whole multi-cell column at the update's timestamp.
    DeleteComplex,
    /// Counter increment (negative = decrement).
    CounterAdd(i64),
    /// A value with a TTL whose expiry is already fixed (`ttl_s` > 0).
    SetExpiring {
        value: Bytes,
        ttl_s: u32,
        expires_at_s: i64,
    },
    /// A cell tombstone with its server deletion time.
    Tombstone { local_deletion_time_s: i64 },
    /// A whole multi-cell column deletion as stored: it shadows elements at or below the
    /// update's timestamp (unlike `DeleteComplex`, which shadows only older ones).
    ComplexDeletion { local_deletion_time_s: i64 },
    /// A counter cell's resolved local state: the shard's logical clock and total.
    CounterState { clock: i64, total: i64 },
}
