//! Glue between index metadata and the engine's index tables (helenus-storage's index.rs has
//! the design): which indexes an index table serves, their table ids, keeping the engine's
//! set in step with the schema, and the background build of a new index.
//!
//! Served by an index table: a legacy or SAI index on a whole regular single-cell column
//! (a frozen collection included), without analyzer options, queried by `=`, of a table in the
//! row layout. The rest — collection elements, static and key columns, SAI ranges, ANN, SAI on
//! a columnar table (its column is the index) — scans and filters.
//!
//! The tables persist like any table; an index whose build did not finish (a restart during
//! it) is built again after the commitlog replay, its entries written so far kept.

use helenus_schema::{ColumnKind, IndexMeta, TableMeta};
use helenus_storage as st;
use std::sync::Arc;

/// The id of the engine table holding index `name` of `t`: stable across restarts, and new
/// when the table is recreated (its id changes).
pub fn index_table_id(t: &TableMeta, name: &str) -> st::TableId {
    // Two FNV-1a hashes with different offsets: a name, not a secret, so any stable spread will do.
    let hash = |offset: u64| {
        let mut h = offset;
        for b in t.id.as_bytes().iter().chain(name.as_bytes()) {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    };
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&hash(0xcbf2_9ce4_8422_2325).to_be_bytes());
    id[8..].copy_from_slice(&hash(0x6c62_272e_07bb_0142).to_be_bytes());
    id
}

/// Whether an index class name designates a storage-attached index.
pub fn is_sai_class(class: &str) -> bool {
    class.eq_ignore_ascii_case("sai") || class.ends_with("StorageAttachedIndex")
}

/// The column (index into `t.columns`) an index table serves `=` on, if `i` is kept in one.
///
/// A storage-attached index of a columnar table is kept in none: its column's chunks already
/// answer restrictions on it (statistics skip chunks, dictionary codes are compared), so an
/// index table would only double the column, slow every write and take a build. Queries the
/// column scans serve (exec/select/columnar.rs) read the chunks; the rest scan and filter.
pub fn indexed_column(t: &TableMeta, i: &IndexMeta) -> Option<usize> {
    let plain = i.options.keys().all(|k| k == "target" || k == "class_name");
    let sai = i.options.get("class_name").is_some_and(|c| is_sai_class(c));
    let columnar = crate::layout::effective_layout(t) == helenus_schema::StorageLayout::Columnar;
    if !plain || (sai && columnar) {
        return None;
    }
    let target = i.options.get("target")?;
    let target = target
        .strip_prefix("full(")
        .and_then(|t| t.strip_suffix(')'))
        .unwrap_or(target);
    // A target names its column as CQL would: double-quoted (quotes doubled) unless plain.
    let name = match target.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(inner) => inner.replace("\"\"", "\""),
        None => target.to_string(),
    };
    t.columns.iter().position(|c| {
        c.name == name
            && c.kind == ColumnKind::Regular
            && !c.cql_type.is_multi_cell()
            && !c.cql_type.is_counter()
    })
}

/// The engine's definition of each index of `t` kept in an index table, by index name.
fn index_defs(t: &TableMeta) -> Vec<(String, st::IndexDef)> {
    t.indexes
        .iter()
        .filter_map(|i| {
            let col = indexed_column(t, i)?;
            Some((
                i.name.clone(),
                st::IndexDef {
                    index_table: index_table_id(t, &i.name),
                    column: t.columns.get(col)?.id,
                },
            ))
        })
        .collect()
}

/// Creates the index tables of `t` (`base`: its engine definition) and makes every write to
/// `t` add their entries. Returns the indexes not built yet.
pub fn register(
    engine: &st::Engine,
    t: &TableMeta,
    base: &st::TableDef,
) -> Result<Vec<st::IndexDef>, st::StorageError> {
    let defs = index_defs(t);
    for (name, def) in &defs {
        engine.create_table(st::index_table_def(base, def.index_table, name))?;
    }
    let unbuilt = defs
        .iter()
        .filter(|(_, d)| !engine.index_built(d.index_table))
        .map(|(_, d)| d.clone())
        .collect();
    engine.set_indexes(base.id, defs.into_iter().map(|(_, d)| d).collect())?;
    Ok(unbuilt)
}

/// After `register(new)`: drops the index tables of the indexes `old` had and `new` has not.
pub fn drop_removed(
    engine: &st::Engine,
    old: &TableMeta,
    new: &TableMeta,
) -> Result<(), st::StorageError> {
    let kept = index_defs(new);
    for (_, def) in index_defs(old) {
        if !kept.iter().any(|(_, k)| k.index_table == def.index_table) {
            engine.drop_table(def.index_table)?;
        }
    }
    Ok(())
}

/// Builds `defs` over the rows `base` held before they existed, one thread each; queries scan
/// until an index is built (`built_index_table`).
pub fn start_builds(engine: &Arc<st::Engine>, base: st::TableId, defs: Vec<st::IndexDef>) {
    for def in defs {
        let engine = engine.clone();
        let spawned = std::thread::Builder::new()
            .name("index-build".into())
            .spawn(move || {
                let t0 = std::time::Instant::now();
                match engine.build_index(base, &def) {
                    Ok(n) => tracing::info!(
                        "index build done: {n} entries in {} ms",
                        t0.elapsed().as_millis()
                    ),
                    // A table or index dropped during its build ends it; nothing to keep.
                    Err(e) => tracing::warn!("index build stopped: {e}"),
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("index build not started: {e}");
        }
    }
}

/// The built index table that answers `column = value` on `t`, if any.
pub fn built_index_table(engine: &st::Engine, t: &TableMeta, column: usize) -> Option<st::TableId> {
    t.indexes
        .iter()
        .filter(|i| indexed_column(t, i) == Some(column))
        .map(|i| index_table_id(t, &i.name))
        .find(|id| engine.index_built(*id))
}
