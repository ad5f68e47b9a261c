//! Secondary indexes: which index classes are storage-attached, and what an index may target.

use crate::exec::error::{invalid, ExecError, ExecResult};
use helenus_cql::ast::{self};
use helenus_schema::{ColumnKind, TableMeta};
use helenus_types::CqlType;

/// Whether an index class name designates a storage-attached index.
pub fn is_sai_class(class: &str) -> bool {
    class.eq_ignore_ascii_case("sai") || class.ends_with("StorageAttachedIndex")
}

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
        if !is_sai_class(class) {
            return Err(ExecError::Config(format!(
                "Unable to find custom indexer class '{class}'"
            )));
        }
    }
    if t.is_counter_table() {
        return invalid("Secondary indexes on counter tables aren't supported");
    }
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
    let frozen_collection = matches!(
        col.cql_type,
        CqlType::List { frozen: true, .. }
            | CqlType::Set { frozen: true, .. }
            | CqlType::Map { frozen: true, .. }
    );
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
