//! Small write-side rules kept apart from `write.rs`: the multi-column relations a write accepts,
//! Cassandra's limit on expiration dates, and the cell paths of prepended list elements.

use super::error::{invalid, ExecResult};
use helenus_cql::ast::{Operator, Relation, RelationValue, Term};
use helenus_schema::TableMeta;
use helenus_types::SharedClock;
use std::sync::atomic::{AtomicI64, Ordering};

/// Rewrites the multi-column relations a write accepts as single-column ones: `(c) op (v)` and
/// `(a, b) = (x, y)`; any other multi-column relation is left for `where_keys` to reject.
pub fn single_column_relations(where_clause: &[Relation]) -> Vec<Relation> {
    let mut out = Vec::with_capacity(where_clause.len());
    for r in where_clause {
        match r {
            Relation::MultiColumn {
                columns,
                op,
                value: RelationValue::Single(Term::Tuple(vals)),
            } if vals.len() == columns.len() && (columns.len() == 1 || *op == Operator::Eq) => {
                for (c, v) in columns.iter().zip(vals) {
                    out.push(Relation::Column {
                        column: c.clone(),
                        op: *op,
                        value: RelationValue::Single(v.clone()),
                    });
                }
            }
            Relation::MultiColumn {
                columns,
                op: Operator::In,
                value: RelationValue::List(tuples),
            } if columns.len() == 1 => {
                let mut vals = Vec::new();
                for t in tuples {
                    match t {
                        Term::Tuple(v) if v.len() == 1 => vals.extend(v.iter().cloned()),
                        _ => {
                            out.push(r.clone());
                            vals.clear();
                            break;
                        }
                    }
                }
                if !vals.is_empty() {
                    out.push(Relation::Column {
                        column: columns[0].clone(),
                        op: Operator::In,
                        value: RelationValue::List(vals),
                    });
                }
            }
            other => out.push(other.clone()),
        }
    }
    out
}

/// Cassandra (in its 4.x-compatible storage format) stores expiration times as signed 32-bit
/// seconds, one below Integer.MAX_VALUE at most, and rejects writes expiring after that.
pub fn check_expiration(t: &TableMeta, ttl: u32, now_s: i64) -> ExecResult<()> {
    const MAX_DELETION_TIME_S: i64 = i32::MAX as i64 - 1;
    if ttl == 0 || now_s + i64::from(ttl) <= MAX_DELETION_TIME_S {
        return Ok(());
    }
    invalid(format!(
        "Request on table {}.{} with ttl of {ttl} seconds exceeds maximum supported expiration date of 2038-01-19T03:14:06+00:00. In order to avoid this use a lower TTL, change the expiration date overflow policy or upgrade to a version where this limitation is fixed. See CASSANDRA-14092 and CASSANDRA-14227 for more details.",
        t.keyspace, t.name
    ))
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
    // Clock sequence and node of this process's time UUIDs.
    let (_, lsb) = helenus_types::new_timeuuid().as_u64_pair();
    (0..count)
        .map(|i| {
            let ticks = (base + i) as u64;
            let msb = ((ticks & 0xFFFF_FFFF) << 32)
                | (((ticks >> 32) & 0xFFFF) << 16)
                | 0x1000
                | ((ticks >> 48) & 0x0FFF);
            bytes::Bytes::copy_from_slice(uuid::Uuid::from_u64_pair(msb, lsb).as_bytes())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use helenus_cql::ast::Ident;

    fn id(n: &str) -> Ident {
        Ident {
            name: n.into(),
            quoted: false,
        }
    }

    fn int(v: &str) -> Term {
        Term::Integer(v.into())
    }

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

    #[test]
    fn one_column_tuples_and_tuple_equalities_become_column_relations() {
        let rels = vec![
            Relation::MultiColumn {
                columns: vec![id("c")],
                op: Operator::Gt,
                value: RelationValue::Single(Term::Tuple(vec![int("1")])),
            },
            Relation::MultiColumn {
                columns: vec![id("a"), id("b")],
                op: Operator::Eq,
                value: RelationValue::Single(Term::Tuple(vec![int("1"), int("2")])),
            },
        ];
        let out = single_column_relations(&rels);
        assert_eq!(out.len(), 3);
        assert!(
            matches!(&out[0], Relation::Column { column, op: Operator::Gt, .. } if column.name == "c")
        );
        assert!(
            matches!(&out[2], Relation::Column { column, op: Operator::Eq, .. } if column.name == "b")
        );
        // A two-column slice stays multi-column (and is rejected later).
        let slice = vec![Relation::MultiColumn {
            columns: vec![id("a"), id("b")],
            op: Operator::Gt,
            value: RelationValue::Single(Term::Tuple(vec![int("1"), int("2")])),
        }];
        assert!(matches!(
            single_column_relations(&slice)[0],
            Relation::MultiColumn { .. }
        ));
    }
}
