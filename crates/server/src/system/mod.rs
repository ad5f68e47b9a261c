//! System and virtual tables, computed on read from the node's state: `system.local`, `system.peers`,
//! `system.peers_v2`, `system.size_estimates`, `system_schema.*`, `system_virtual_schema.*` and
//! `system_views.*`, `system_traces.*`, `system_auth.*` and
//! `system_distributed`'s repair history. Their definitions come from the schema crate's golden file (recorded from
//! Cassandra 5.0), so every column a driver expects exists with the type it expects.

mod auth_tables;
mod ranges_table;
mod repair_tables;
mod schema_tables;

use crate::node::NodeState;
use bytes::{Bytes, BytesMut};
use helenus_schema::TableMeta;
use helenus_types::CqlValue;

/// One row being assembled by column name; unset columns are null.
pub struct RowBuilder<'a> {
    table: &'a TableMeta,
    cells: Vec<Option<Bytes>>,
}

impl<'a> RowBuilder<'a> {
    pub fn new(table: &'a TableMeta) -> Self {
        RowBuilder {
            table,
            cells: vec![None; table.columns.len()],
        }
    }

    /// Sets a column; names that the table does not have are ignored, so a generator can be written
    /// once for tables whose column sets differ slightly (peers vs peers_v2).
    pub fn set(mut self, column: &str, value: CqlValue) -> Self {
        if let Some(i) = self.table.column_index(column) {
            let mut out = BytesMut::new();
            helenus_types::serialize(&value, &mut out);
            if let Some(slot) = self.cells.get_mut(i) {
                *slot = Some(out.freeze());
            }
        }
        self
    }

    pub fn set_opt(self, column: &str, value: Option<CqlValue>) -> Self {
        match value {
            Some(v) => self.set(column, v),
            None => self,
        }
    }

    pub fn build(self) -> Vec<Option<Bytes>> {
        self.cells
    }
}

pub fn text(s: impl Into<String>) -> CqlValue {
    CqlValue::Text(s.into())
}

/// All rows of a system or virtual table (unordered; the scan orders them), each a vector of serialized cells in
/// the table's column order. `None` when Helenus computes no rows for that table (it is then empty,
/// as many of Cassandra's are on a fresh node).
pub fn rows_of(state: &NodeState, table: &TableMeta) -> Vec<Vec<Option<Bytes>>> {
    let rows = match (table.keyspace.as_str(), table.name.as_str()) {
        ("system", "local") => vec![schema_tables::local_row(state, table)],
        ("system", "peers") | ("system", "peers_v2") => schema_tables::peers(state, table),
        ("system", "available_ranges_v2") => ranges_table::system_rows(state, table),
        ("system", "IndexInfo") => schema_tables::built_indexes(state, table),
        ("system", "size_estimates") | ("system", "table_estimates") => {
            schema_tables::size_estimates(state, table)
        }
        ("system_schema", "keyspaces") => schema_tables::keyspaces(state, table),
        ("system_schema", "tables") => schema_tables::tables(state, table),
        ("system_schema", "columns") => schema_tables::columns(state, table),
        ("system_schema", "types") => schema_tables::types(state, table),
        ("system_schema", "indexes") => schema_tables::indexes(state, table),
        ("system_schema", "dropped_columns") => schema_tables::dropped_columns(state, table),
        ("system_virtual_schema", "keyspaces") => schema_tables::virtual_keyspaces(state, table),
        ("system_virtual_schema", "tables") => schema_tables::virtual_tables(state, table),
        ("system_virtual_schema", "columns") => schema_tables::virtual_columns(state, table),
        ("system_views", "settings") => schema_tables::settings(state, table),
        ("system_views", "clients") => schema_tables::clients(state, table),
        ("system_traces", "sessions") => schema_tables::trace_sessions(state, table),
        ("system_traces", "events") => schema_tables::trace_events(state, table),
        ("system_distributed", "parent_repair_history") => {
            repair_tables::parent_repair_history(state, table)
        }
        ("system_distributed", "repair_history") => repair_tables::repair_history(state, table),
        ("system_auth", "roles") => auth_tables::roles(state, table),
        ("system_auth", "role_members") => auth_tables::role_members(state, table),
        ("system_auth", "role_permissions") => auth_tables::role_permissions(state, table),
        ("system_auth", "resource_role_permissons_index") => {
            auth_tables::resource_role_permissions_index(state, table)
        }
        _ => Vec::new(),
    };
    rows
}
