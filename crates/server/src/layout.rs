//! Which layout a table's SSTables take: its `helenus.layout` extension, else the node's
//! `default_table_layout`. Apart from the executor, as the index glue (index_storage.rs) needs
//! it too and the executor depends on that glue.

use helenus_schema::{StorageLayout, TableMeta};
use std::sync::atomic::{AtomicBool, Ordering};

/// The node's `default_table_layout` (columnar when set so; read by `effective_layout`).
static COLUMNAR_BY_DEFAULT: AtomicBool = AtomicBool::new(false);

/// Sets the node's default layout (at engine open, before any table is registered).
pub fn set_default(layout: StorageLayout) {
    COLUMNAR_BY_DEFAULT.store(layout == StorageLayout::Columnar, Ordering::Relaxed);
}

/// How the table's SSTables are stored: its `helenus.layout` extension, else the node's
/// `default_table_layout`.
pub fn effective_layout(t: &TableMeta) -> StorageLayout {
    if t.params
        .extensions
        .contains_key(helenus_schema::LAYOUT_EXTENSION)
        || !COLUMNAR_BY_DEFAULT.load(Ordering::Relaxed)
    {
        t.params.storage_layout()
    } else {
        StorageLayout::Columnar
    }
}
