//! Secondary indexes: which index classes are storage-attached, and what an index may target.

use crate::exec::error::{invalid, ExecError, ExecResult};
use helenus_cql::ast::{self};
use helenus_schema::{ColumnKind, TableMeta};
use helenus_types::CqlType;

pub use crate::index_storage::is_sai_class;

/// Cassandra's checks on what an index may target (`CreateIndexStatement`, SAI's type support).
pub(super) fn check_index_target(
    t: &TableMeta,
    col: &helenus_schema::ColumnMeta,
    kind: ast::IndexTargetKind,
    using: Option<&str>,
) -> ExecResult<()> {
    use ast::IndexTargetKind as K;
    if let Some(class) = using {
        if class.ends_with("SASIIndex") {
            return invalid("SASI indexes are disabled. Enable in cassandra.yaml to use.");
        }
        // 'legacy_local_table' names the legacy index implementation.
        if !is_sai_class(class) && !class.eq_ignore_ascii_case("legacy_local_table") {
            return Err(ExecError::Config(format!(
                "Unable to find custom indexer class '{class}'"
            )));
        }
    }
    if t.is_counter_table() {
        return invalid("Secondary indexes on counter tables aren't supported");
    }
    check_column_kind(t, col, kind)?;
    let pk_count = t
        .columns
        .iter()
        .filter(|c| c.kind == ColumnKind::PartitionKey)
        .count();
    if col.kind == ColumnKind::PartitionKey && pk_count == 1 {
        return invalid(format!(
            "Cannot create secondary index on the only partition key column {}",
            col.name
        ));
    }
    let frozen_collection = is_frozen_collection(&col.cql_type);
    let is_map = matches!(col.cql_type, CqlType::Map { .. });
    match kind {
        K::Full if !frozen_collection => {
            return invalid("full() indexes can only be created on frozen collections")
        }
        K::Keys | K::Entries if !is_map => {
            let what = if kind == K::Keys { "keys" } else { "entries" };
            return invalid(format!(
                "Cannot create index on {what} of column {} with non-map type",
                col.name
            ));
        }
        _ => {}
    }
    if using.is_some_and(is_sai_class)
        && matches!(
            col.cql_type,
            CqlType::Native(helenus_types::NativeType::Blob)
        )
    {
        return invalid("Unsupported type: blob");
    }
    Ok(())
}

/// Columns Cassandra never indexes: durations (no total order), the primary key and value column
/// of COMPACT STORAGE tables, non-frozen UDTs, and frozen collections other than as a whole.
fn check_column_kind(
    t: &TableMeta,
    col: &helenus_schema::ColumnMeta,
    kind: ast::IndexTargetKind,
) -> ExecResult<()> {
    use ast::IndexTargetKind as K;
    if references_duration(&col.cql_type) {
        return invalid(match col.cql_type {
            CqlType::Native(_) => "Secondary indexes are not supported on duration columns",
            CqlType::Tuple(_) => {
                "Secondary indexes are not supported on tuples containing durations"
            }
            CqlType::Udt { .. } => {
                "Secondary indexes are not supported on UDTs containing durations"
            }
            _ => "Secondary indexes are not supported on collections containing durations",
        });
    }
    if t.is_compact() {
        if matches!(col.kind, ColumnKind::PartitionKey | ColumnKind::Clustering) {
            return invalid(
                "Secondary indexes are not supported on PRIMARY KEY columns in COMPACT STORAGE tables",
            );
        }
        if t.is_dense() && col.kind == ColumnKind::Regular {
            return invalid(
                "Secondary indexes are not supported on compact value column of COMPACT STORAGE tables",
            );
        }
    }
    if matches!(col.cql_type, CqlType::Udt { frozen: false, .. }) {
        return invalid(format!(
            "Cannot create index on non-frozen UDT column {}",
            col.name
        ));
    }
    let frozen_collection = is_frozen_collection(&col.cql_type);
    let what = match kind {
        K::Keys => "keys",
        K::Values => "values",
        K::Entries => "entries",
        _ => return Ok(()),
    };
    if frozen_collection {
        return invalid(format!(
            "Cannot create {what}() index on frozen column {0}. Frozen collections are immutable and must be fully indexed by using the 'full({0})' modifier",
            col.name
        ));
    }
    Ok(())
}

/// Whether a duration appears anywhere in the type (durations have no order to index or key by).
pub(crate) fn references_duration(ty: &CqlType) -> bool {
    match ty {
        CqlType::Native(n) => *n == helenus_types::NativeType::Duration,
        // Cassandra 5.0 accepts vector<duration, n> as a key: vectors are not looked into.
        CqlType::List { element, .. } | CqlType::Set { element, .. } => {
            references_duration(element)
        }
        CqlType::Map { key, value, .. } => references_duration(key) || references_duration(value),
        CqlType::Tuple(items) => items.iter().any(references_duration),
        CqlType::Udt { def, .. } => def.fields.iter().any(|(_, t)| references_duration(t)),
        _ => false,
    }
}

fn is_frozen_collection(t: &CqlType) -> bool {
    matches!(
        t,
        CqlType::List { frozen: true, .. }
            | CqlType::Set { frozen: true, .. }
            | CqlType::Map { frozen: true, .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::ddl::table_for_test as table;
    use helenus_cql::ast::IndexTargetKind as K;

    fn refusal(t: &TableMeta, col: &str, kind: K) -> Option<String> {
        let c = t.column(col).unwrap();
        match check_index_target(t, c, kind, None) {
            Ok(()) => None,
            Err(ExecError::Invalid(m)) => Some(m),
            Err(e) => panic!("unexpected error {e:?}"),
        }
    }

    #[test]
    fn durations_and_parts_of_frozen_collections_are_not_indexed() {
        let t = table(
            "CREATE TABLE t (k int PRIMARY KEY, d duration, l list<duration>, f frozen<map<int, int>>, m map<int, int>)",
        );
        let m = refusal(&t, "d", K::Simple);
        assert_eq!(
            m.as_deref(),
            Some("Secondary indexes are not supported on duration columns")
        );
        let m = refusal(&t, "l", K::Simple);
        assert!(m.is_some_and(|m| m.ends_with("on collections containing durations")));
        let m = refusal(&t, "f", K::Keys);
        assert!(m.is_some_and(|m| m.starts_with("Cannot create keys() index on frozen column f.")));
        assert_eq!(refusal(&t, "f", K::Full), None);
        assert_eq!(refusal(&t, "m", K::Keys), None);
    }

    #[test]
    fn compact_storage_key_and_value_columns_are_not_indexed() {
        let t =
            table("CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c)) WITH COMPACT STORAGE");
        assert!(refusal(&t, "c", K::Simple)
            .is_some_and(|m| m.contains("PRIMARY KEY columns in COMPACT STORAGE")));
        assert!(refusal(&t, "v", K::Simple).is_some_and(|m| m.contains("compact value column")));
    }
}
