//! Schema statements: keyspaces, tables, types, indexes; persisted, applied to the storage engine,
//! and announced to clients with SCHEMA_CHANGE.

use super::error::{invalid, ExecError, ExecResult};
use super::storage_bridge::table_def;
use super::values::resolve_type;
use crate::node::NodeState;
use helenus_cql::ast::{
    self, AlterTableAction, CreateTableStatement, OptionValue, Properties, Term,
};
use helenus_schema::{
    full_compaction_class, full_compressor_class, ClusteringOrder, ColumnKind, ColumnMeta,
    IndexMeta, KeyspaceKind, KeyspaceMeta, Schema, TableKind, TableMeta, TableParams,
};
use helenus_types::{CqlType, UserType};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// What a schema change did, for the RESULT and the event.
#[derive(Debug, Clone)]
pub struct SchemaChanged {
    pub change: &'static str,
    pub target: &'static str,
    pub keyspace: String,
    pub name: Option<String>,
}

const SCHEMA_FILE: &str = "schema.json";

pub fn initial_schema(system_dir: &Path) -> Result<Schema, helenus_schema::SchemaError> {
    let mut keyspaces = BTreeMap::new();
    for ks in helenus_schema::system_keyspaces() {
        keyspaces.insert(ks.name.clone(), Arc::new(ks));
    }
    std::fs::create_dir_all(system_dir).map_err(|e| helenus_schema::SchemaError::Storage {
        path: system_dir.display().to_string(),
        message: e.to_string(),
    })?;
    for ks in helenus_schema::load_user_schema(&system_dir.join(SCHEMA_FILE))? {
        keyspaces.insert(ks.name.clone(), Arc::new(ks));
    }
    let mut s = Schema {
        keyspaces,
        version: uuid::Uuid::nil(),
    };
    s.refresh_version();
    Ok(s)
}

fn schema_path(node: &NodeState) -> std::path::PathBuf {
    node.config
        .primary_data_dir()
        .join("system")
        .join(SCHEMA_FILE)
}

fn is_system(ks: &str) -> bool {
    matches!(
        ks,
        "system"
            | "system_schema"
            | "system_auth"
            | "system_distributed"
            | "system_traces"
            | "system_views"
            | "system_virtual_schema"
    )
}

fn check_name(kind: &str, name: &str) -> ExecResult<()> {
    if name.is_empty()
        || name.len() > 48
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        let msg = format!(
            "{kind} name must not be empty, more than 48 characters long, or contain non-alphanumeric-underscore characters (got \"{name}\")"
        );
        // Cassandra validates table names with the table's configuration (ConfigurationException).
        return Err(if kind == "Table" {
            ExecError::Config(msg)
        } else {
            ExecError::Invalid(msg)
        });
    }
    Ok(())
}

fn const_text(t: &Term) -> Option<String> {
    Some(match t {
        Term::String(s) | Term::Integer(s) | Term::Float(s) | Term::Uuid(s) | Term::Duration(s) => {
            s.clone()
        }
        Term::Bool(b) => b.to_string(),
        _ => return None,
    })
}

fn map_value(v: &OptionValue, name: &str) -> ExecResult<BTreeMap<String, String>> {
    match v {
        OptionValue::Map(entries) => {
            let mut m = BTreeMap::new();
            for (k, t) in entries {
                let val = const_text(t).ok_or_else(|| {
                    ExecError::Syntax(format!("Invalid value for property '{name}'"))
                })?;
                m.insert(k.clone(), val);
            }
            Ok(m)
        }
        _ => Err(ExecError::Syntax(format!(
            "Invalid value for property '{name}'. It should be a map."
        ))),
    }
}

fn scalar(v: &OptionValue, name: &str) -> ExecResult<String> {
    match v {
        OptionValue::Constant(t) => const_text(t)
            .ok_or_else(|| ExecError::Syntax(format!("Invalid value for property '{name}'"))),
        OptionValue::Keyword(k) => Ok(k.clone()),
        OptionValue::Map(_) => Err(ExecError::Syntax(format!(
            "Invalid value for property '{name}'. It should be a string"
        ))),
    }
}

fn replication_of(
    props: &Properties,
    current: Option<&KeyspaceMeta>,
) -> ExecResult<(BTreeMap<String, String>, bool)> {
    let mut replication = current.map(|k| k.replication.clone());
    let mut durable = current.map(|k| k.durable_writes).unwrap_or(true);
    for (name, v) in props {
        match name.as_str() {
            "replication" => {
                let mut m = map_value(v, name)?;
                let class = m.remove("class").ok_or_else(|| {
                    ExecError::Config("Missing replication strategy class".into())
                })?;
                let short = class.rsplit('.').next().unwrap_or(&class).to_string();
                let full = match short.as_str() {
                    "SimpleStrategy" => {
                        // Cassandra 5.0 falls back to default_replication_factor (1).
                        let rf = m
                            .entry("replication_factor".to_string())
                            .or_insert_with(|| "1".to_string());
                        if rf.parse::<u32>().is_err() {
                            return Err(ExecError::Config(format!("Replication factor must be non-negative; found {rf}")));
                        }
                        for k in m.keys() {
                            if k != "replication_factor" {
                                return Err(ExecError::Config(format!("Unrecognized strategy option {{{k}}} passed to SimpleStrategy for keyspace")));
                            }
                        }
                        "org.apache.cassandra.locator.SimpleStrategy"
                    }
                    "NetworkTopologyStrategy" => {
                        // A bare replication_factor means every known datacenter (this node's).
                        if let Some(rf) = m.remove("replication_factor") {
                            m.entry("datacenter1".to_string()).or_insert(rf);
                        }
                        if m.is_empty() {
                            m.insert("datacenter1".to_string(), "1".to_string());
                        }
                        for (dc, rf) in &m {
                            if dc != "datacenter1" {
                                return Err(ExecError::Config(format!("Unrecognized strategy option {{{dc}}} passed to NetworkTopologyStrategy for keyspace")));
                            }
                            if rf.parse::<u32>().is_err() {
                                return Err(ExecError::Config(format!("Replication factor must be non-negative integer; found {rf} for {dc}")));
                            }
                        }
                        "org.apache.cassandra.locator.NetworkTopologyStrategy"
                    }
                    "LocalStrategy" | "EverywhereStrategy" => {
                        return invalid("Unable to use given strategy class: LocalStrategy is reserved for internal use.")
                    }
                    _ => return Err(ExecError::Config(format!("Unable to find replication strategy class 'org.apache.cassandra.locator.{short}'"))),
                };
                m.insert("class".into(), full.into());
                replication = Some(m);
            }
            "durable_writes" => {
                durable = match scalar(v, name)?.to_ascii_lowercase().as_str() {
                    "true" => true,
                    "false" => false,
                    other => {
                        return Err(ExecError::Syntax(format!(
                            "Invalid boolean value {other} for 'durable_writes'"
                        )))
                    }
                }
            }
            other => return Err(ExecError::Syntax(format!("Unknown property '{other}'"))),
        }
    }
    let replication = replication
        .ok_or_else(|| ExecError::Config("Missing mandatory option 'replication'".into()))?;
    Ok((replication, durable))
}

/// Applies `WITH` properties to table params, with Cassandra's validation and defaults.
pub fn apply_table_properties(params: &mut TableParams, props: &Properties) -> ExecResult<()> {
    let mut seen = std::collections::HashSet::new();
    for (name, _) in props {
        if !seen.insert(name.as_str()) {
            return Err(ExecError::Syntax(format!(
                "Multiple definitions for property '{name}'"
            )));
        }
    }
    let num = |v: &OptionValue, name: &str| -> ExecResult<f64> {
        scalar(v, name)?
            .parse::<f64>()
            .map_err(|_| ExecError::Syntax(format!("Invalid double value for '{name}'")))
    };
    let int = |v: &OptionValue, name: &str| -> ExecResult<i32> {
        scalar(v, name)?
            .parse::<i32>()
            .map_err(|_| ExecError::Syntax(format!("Invalid integer value for '{name}'")))
    };
    let boolean = |v: &OptionValue, name: &str| -> ExecResult<bool> {
        match scalar(v, name)?.to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(ExecError::Syntax(format!(
                "Invalid boolean value for '{name}'"
            ))),
        }
    };
    for (name, v) in props {
        match name.as_str() {
            "comment" => params.comment = scalar(v, name)?,
            "default_time_to_live" => {
                let ttl = int(v, name)?;
                if ttl < 0 {
                    return Err(ExecError::Config(
                        "default_time_to_live must be greater than or equal to 0 (got ".to_string()
                            + &ttl.to_string()
                            + ")",
                    ));
                }
                params.default_time_to_live = ttl
            }
            "gc_grace_seconds" => {
                let g = int(v, name)?;
                if g < 0 {
                    return Err(ExecError::Config(format!(
                        "gc_grace_seconds must be greater than or equal to 0 (got {g})"
                    )));
                }
                params.gc_grace_seconds = g
            }
            "bloom_filter_fp_chance" => {
                let p = num(v, name)?;
                if p <= 0.0 || p > 1.0 {
                    return Err(ExecError::Config(format!("bloom_filter_fp_chance must be larger than 0.0 and less than or equal to 1.0 (got {p})")));
                }
                params.bloom_filter_fp_chance = p
            }
            "crc_check_chance" => params.crc_check_chance = num(v, name)?,
            "memtable_flush_period_in_ms" => params.memtable_flush_period_in_ms = int(v, name)?,
            "min_index_interval" => params.min_index_interval = int(v, name)?,
            "max_index_interval" => params.max_index_interval = int(v, name)?,
            "speculative_retry" => params.speculative_retry = scalar(v, name)?,
            "additional_write_policy" => params.additional_write_policy = scalar(v, name)?,
            "read_repair" => params.read_repair = scalar(v, name)?.to_uppercase(),
            "cdc" => params.cdc = Some(boolean(v, name)?),
            "allow_auto_snapshot" => params.allow_auto_snapshot = Some(boolean(v, name)?),
            "incremental_backups" => params.incremental_backups = Some(boolean(v, name)?),
            "memtable" => {
                // Only the configurations a stock cassandra.yaml defines.
                let m = scalar(v, name)?;
                if !matches!(m.as_str(), "default" | "skiplist" | "trie") {
                    return Err(ExecError::Config(format!(
                        "Memtable configuration \"{m}\" not found."
                    )));
                }
                params.memtable = Some(m)
            }
            "caching" => {
                let m = map_value(v, name)?;
                let mut c = BTreeMap::new();
                c.insert(
                    "keys".to_string(),
                    m.get("keys")
                        .cloned()
                        .unwrap_or_else(|| "ALL".into())
                        .to_uppercase(),
                );
                c.insert(
                    "rows_per_partition".to_string(),
                    m.get("rows_per_partition")
                        .cloned()
                        .unwrap_or_else(|| "NONE".into())
                        .to_uppercase(),
                );
                params.caching = c;
            }
            "compaction" => {
                let mut m = map_value(v, name)?;
                let class = m.remove("class").ok_or_else(|| {
                    ExecError::Config(
                        "Missing sub-option 'class' for the 'compaction' option.".into(),
                    )
                })?;
                let full = full_compaction_class(&class);
                let known = [
                    "SizeTieredCompactionStrategy",
                    "LeveledCompactionStrategy",
                    "TimeWindowCompactionStrategy",
                    "UnifiedCompactionStrategy",
                ];
                if !known.iter().any(|k| full.ends_with(k)) {
                    return Err(ExecError::Config(format!(
                        "Unable to find compaction strategy class '{full}'"
                    )));
                }
                if full.ends_with("SizeTieredCompactionStrategy") {
                    m.entry("max_threshold".into())
                        .or_insert_with(|| "32".into());
                    m.entry("min_threshold".into())
                        .or_insert_with(|| "4".into());
                }
                if full.ends_with("TimeWindowCompactionStrategy")
                    || full.ends_with("LeveledCompactionStrategy")
                {
                    m.entry("max_threshold".into())
                        .or_insert_with(|| "32".into());
                    m.entry("min_threshold".into())
                        .or_insert_with(|| "4".into());
                }
                m.insert("class".into(), full);
                params.compaction = m;
            }
            "compression" => {
                let mut m = map_value(v, name)?;
                if m.get("enabled").map(|e| e == "false").unwrap_or(false) {
                    let mut off = BTreeMap::new();
                    off.insert("enabled".to_string(), "false".to_string());
                    params.compression = off;
                    continue;
                }
                if let Some(class) = m
                    .remove("sstable_compression")
                    .or_else(|| m.remove("class"))
                {
                    m.insert("class".into(), full_compressor_class(&class));
                } else {
                    return Err(ExecError::Config(
                        "Missing sub-option 'class' for the 'compression' option.".into(),
                    ));
                }
                if let Some(kb) = m.remove("chunk_length_kb") {
                    m.insert("chunk_length_in_kb".into(), kb);
                }
                let kb = m
                    .entry("chunk_length_in_kb".into())
                    .or_insert_with(|| "16".into());
                if !kb.parse::<u32>().is_ok_and(|k| k.is_power_of_two()) {
                    return Err(ExecError::Config(
                        "chunk_length_in_kb must be a power of 2".into(),
                    ));
                }
                params.compression = m;
            }
            "extensions" => {
                params.extensions = map_value(v, name)?
                    .into_iter()
                    .map(|(k, v)| (k, v.into_bytes()))
                    .collect();
            }
            "id" => {}
            other => return Err(ExecError::Syntax(format!("Unknown property '{other}'"))),
        }
    }
    if params.max_index_interval < params.min_index_interval {
        return Err(ExecError::Config(format!(
            "max_index_interval must be greater than or equal to min_index_interval ({}) (got {})",
            params.min_index_interval, params.max_index_interval
        )));
    }
    Ok(())
}

fn keyspace_of(q: &ast::QualifiedName, session_ks: Option<&str>) -> ExecResult<String> {
    match (&q.keyspace, session_ks) {
        (Some(k), _) => Ok(k.name.clone()),
        (None, Some(k)) => Ok(k.to_string()),
        (None, None) => invalid("No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename"),
    }
}

/// Cassandra's rules for what a declared type may contain (`CQL3Type.Raw.prepare`), checked on
/// the written type so messages quote it as the user wrote it.
fn check_declared_type(expr: &ast::CqlTypeExpr) -> ExecResult<()> {
    check_type_expr(expr, false)
}

fn check_type_expr(expr: &ast::CqlTypeExpr, frozen: bool) -> ExecResult<()> {
    use ast::CqlTypeExpr as E;
    use helenus_types::NativeType as N;
    let shown = || {
        if frozen {
            format!("frozen<{expr}>")
        } else {
            expr.to_string()
        }
    };
    let is_nonfrozen_collection = |e: &E| matches!(e, E::List(_) | E::Set(_) | E::Map(..));
    let in_collection = |e: &E| -> ExecResult<()> {
        if matches!(e, E::Native(N::Counter)) {
            return invalid(format!(
                "Counters are not allowed inside collections: {}",
                shown()
            ));
        }
        if !frozen && is_nonfrozen_collection(e) {
            return invalid(format!(
                "Non-frozen collections are not allowed inside collections: {}",
                shown()
            ));
        }
        if !frozen && matches!(e, E::UserDefined(_)) {
            return invalid(format!(
                "Non-frozen UDTs are not allowed inside collections: {}",
                shown()
            ));
        }
        check_type_expr(e, frozen)
    };
    match expr {
        E::List(e) => in_collection(e),
        E::Set(e) => {
            if matches!(**e, E::Native(N::Duration)) {
                return invalid(format!(
                    "Durations are not allowed inside sets: {}",
                    shown()
                ));
            }
            in_collection(e)
        }
        E::Map(k, v) => {
            if matches!(**k, E::Native(N::Duration)) {
                return invalid(format!(
                    "Durations are not allowed as map keys: {}",
                    shown()
                ));
            }
            in_collection(k)?;
            in_collection(v)
        }
        E::Frozen(inner) => {
            if matches!(**inner, E::Native(_) | E::Custom(_)) {
                return Err(ExecError::Syntax(format!(
                    "frozen<> is only allowed on collections, tuples, and user-defined types (got {inner})"
                )));
            }
            check_type_expr(inner, true)
        }
        E::Tuple(items) => {
            for i in items {
                if matches!(i, E::Native(N::Counter)) {
                    return invalid("Counters are not allowed inside tuples");
                }
                check_type_expr(i, true)?;
            }
            Ok(())
        }
        E::Vector(e, _) => check_type_expr(e, true),
        _ => Ok(()),
    }
}

fn check_pk_type(name: &str, t: &CqlType) -> ExecResult<()> {
    if t.is_multi_cell() {
        return invalid(format!(
            "Invalid non-frozen collection type {t} for PRIMARY KEY component {name}"
        ));
    }
    if matches!(t, CqlType::Native(helenus_types::NativeType::Duration)) {
        return invalid(format!(
            "duration type is not supported for PRIMARY KEY column '{name}'"
        ));
    }
    if t.is_counter() {
        return invalid(format!(
            "counter type is not supported for PRIMARY KEY column '{name}'"
        ));
    }
    Ok(())
}

/// Whether a collection type has a counter somewhere inside (Cassandra rejects it).
fn counter_inside(t: &CqlType) -> bool {
    let nested = |e: &CqlType| e.is_counter() || counter_inside(e);
    match t {
        CqlType::List { element, .. } | CqlType::Set { element, .. } => nested(element),
        CqlType::Map { key, value, .. } => nested(key) || nested(value),
        _ => false,
    }
}

pub fn build_table(ks: &KeyspaceMeta, s: &CreateTableStatement) -> ExecResult<TableMeta> {
    let tname = s.name.name.name.clone();
    check_name("Table", &tname)?;
    let pk = s.primary_key.clone().ok_or_else(|| {
        ExecError::Invalid(format!(
            "No PRIMARY KEY specifed for table '{tname}' (exactly one required)"
        ))
    })?;
    let inline_count = s.columns.iter().filter(|c| c.primary_key).count();
    if s.primary_key_twice {
        return invalid(format!(
            "Multiple PRIMARY KEY specified for table '{tname}' (exactly one required)"
        ));
    }
    if inline_count > 1 {
        return invalid("Multiple PRIMARY KEYs specifed (exactly one required)".to_string());
    }
    let mut columns = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (id, c) in s.columns.iter().enumerate() {
        if !seen.insert(c.name.name.clone()) {
            return invalid(format!(
                "Duplicate column '{}' declaration for table {}.{}",
                c.name.name, ks.name, tname
            ));
        }
        check_declared_type(&c.ty)?;
        let ty = resolve_type(&c.ty, Some(ks))?;
        let pk_pos = pk.partition_key.iter().position(|p| p.name == c.name.name);
        let ck_pos = pk.clustering.iter().position(|p| p.name == c.name.name);
        let (kind, position) = match (pk_pos, ck_pos) {
            (Some(p), _) => (ColumnKind::PartitionKey, p as i32),
            (_, Some(p)) => (ColumnKind::Clustering, p as i32),
            _ if c.is_static => (ColumnKind::Static, -1),
            _ => (ColumnKind::Regular, -1),
        };
        if kind.is_primary_key() {
            check_pk_type(&c.name.name, &ty)?;
            if c.is_static {
                return invalid(format!(
                    "Static column {} cannot be part of the PRIMARY KEY",
                    c.name.name
                ));
            }
        }
        let order = if kind == ColumnKind::Clustering {
            match s
                .options
                .clustering_order
                .iter()
                .find(|(n, _)| n.name == c.name.name)
            {
                Some((_, ast::OrderDirection::Desc)) => ClusteringOrder::Desc,
                _ => ClusteringOrder::Asc,
            }
        } else {
            ClusteringOrder::None
        };
        columns.push(ColumnMeta {
            name: c.name.name.clone(),
            cql_type: ty,
            kind,
            position,
            order,
            id: id as u32,
        });
    }
    for k in pk.partition_key.iter().chain(pk.clustering.iter()) {
        if !columns.iter().any(|c| c.name == k.name) {
            return invalid(format!(
                "Unknown definition {} referenced in PRIMARY KEY",
                k.name
            ));
        }
    }
    let mut dup = std::collections::HashSet::new();
    for k in pk.partition_key.iter().chain(pk.clustering.iter()) {
        if !dup.insert(&k.name) {
            return invalid(format!(
                "Duplicate definition for {} in PRIMARY KEY",
                k.name
            ));
        }
    }
    for (n, _) in &s.options.clustering_order {
        if !pk.clustering.iter().any(|c| c.name == n.name) {
            return invalid(format!("Only clustering key columns can be defined in CLUSTERING ORDER directive: {} is not a clustering column", n.name));
        }
    }
    let order_names: Vec<&str> = s
        .options
        .clustering_order
        .iter()
        .map(|(n, _)| n.name.as_str())
        .collect();
    let ck_names: Vec<&str> = pk
        .clustering
        .iter()
        .map(|c| c.name.as_str())
        .take(order_names.len())
        .collect();
    if !order_names.is_empty() && order_names != ck_names {
        return invalid("The order of columns in the CLUSTERING ORDER directive must match that of the clustering columns".to_string());
    }
    for c in &columns {
        if counter_inside(&c.cql_type) {
            return invalid(format!(
                "Counters are not allowed inside collections: {}",
                c.cql_type
            ));
        }
    }
    let has_counter = columns.iter().any(|c| c.cql_type.is_counter());
    let non_counter_regular = columns
        .iter()
        .any(|c| !c.kind.is_primary_key() && !c.cql_type.is_counter());
    if has_counter && non_counter_regular {
        return invalid("Cannot mix counter and non counter columns in the same table");
    }
    if pk.clustering.is_empty() && columns.iter().any(|c| c.kind == ColumnKind::Static) {
        return invalid("Static columns are only useful (and thus allowed) if the table has at least one clustering column".to_string());
    }
    if s.options.compact_storage {
        return invalid("COMPACT STORAGE tables are not allowed starting with version 4.0");
    }
    let mut params = TableParams::default();
    apply_table_properties(&mut params, &s.options.properties)?;
    if has_counter && params.default_time_to_live > 0 {
        return invalid("Cannot set default_time_to_live on a table with counters");
    }
    Ok(TableMeta::new(
        &ks.name,
        &tname,
        uuid::Uuid::new_v4(),
        TableKind::User,
        columns,
        params,
    ))
}

/// Runs a DDL statement. Returns None for a no-op (IF [NOT] EXISTS that matched).
pub async fn execute(
    node: &NodeState,
    stmt: &ast::Statement,
    session_ks: Option<&str>,
) -> ExecResult<Option<SchemaChanged>> {
    let _guard = node.schema_change_lock.lock().await;
    let schema = node.schema();
    let (new_schema, change) = match apply(&schema, stmt, session_ks)? {
        Some(x) => x,
        None => return Ok(None),
    };
    helenus_schema::save_user_schema(&new_schema, &schema_path(node))
        .map_err(|e| ExecError::Server(e.to_string()))?;
    // Storage follows the schema: new tables are created, dropped ones removed, altered options applied.
    for ks in new_schema.user_keyspaces() {
        for t in ks.tables.values() {
            let old = schema
                .keyspaces
                .get(&ks.name)
                .and_then(|k| k.tables.get(&t.name));
            let res = match old {
                None => node.engine.create_table(table_def(t)),
                Some(o) if o.id != t.id => node.engine.create_table(table_def(t)),
                Some(o) if **o != **t => node.engine.alter_table(table_def(t)),
                _ => Ok(()),
            };
            res.map_err(|e| ExecError::Server(e.to_string()))?;
        }
    }
    for ks in schema.user_keyspaces() {
        for t in ks.tables.values() {
            let still = new_schema
                .keyspaces
                .get(&ks.name)
                .and_then(|k| k.tables.get(&t.name))
                .is_some_and(|n| n.id == t.id);
            if !still {
                let engine = node.engine.clone();
                let id = *t.id.as_bytes();
                let _ = tokio::task::spawn_blocking(move || engine.drop_table(id)).await;
            }
        }
    }
    node.replace_schema(new_schema);
    node.prepared.invalidate_keyspace(&change.keyspace);
    Ok(Some(change))
}

fn changed(
    change: &'static str,
    target: &'static str,
    ks: &str,
    name: Option<&str>,
) -> SchemaChanged {
    SchemaChanged {
        change,
        target,
        keyspace: ks.to_string(),
        name: name.map(str::to_string),
    }
}

/// Computes the schema after `stmt`; pure, so it is easy to test.
pub fn apply(
    schema: &Schema,
    stmt: &ast::Statement,
    session_ks: Option<&str>,
) -> ExecResult<Option<(Schema, SchemaChanged)>> {
    use ast::Statement as S;
    let user_ks = |name: &str| -> ExecResult<Arc<KeyspaceMeta>> {
        let ks = schema
            .keyspaces
            .get(name)
            .ok_or_else(|| ExecError::Invalid(format!("Keyspace '{name}' doesn't exist")))?;
        if ks.kind != KeyspaceKind::User {
            return Err(ExecError::Unauthorized(format!(
                "{name} keyspace is not user-modifiable."
            )));
        }
        Ok(ks.clone())
    };
    Ok(Some(match stmt {
        S::CreateKeyspace(s) => {
            let name = s.name.name.clone();
            check_name("Keyspace", &name)?;
            if is_system(&name) {
                return invalid(format!("System keyspace '{name}' is not user-modifiable"));
            }
            if schema.keyspaces.contains_key(&name) {
                if s.if_not_exists {
                    return Ok(None);
                }
                return Err(ExecError::AlreadyExists {
                    message: format!("Keyspace {name} already exists"),
                    keyspace: name,
                    table: String::new(),
                });
            }
            let (replication, durable) = replication_of(&s.properties, None)?;
            let ks = KeyspaceMeta::new(&name, KeyspaceKind::User, replication, durable);
            (
                schema.with_keyspace(ks),
                changed("CREATED", "KEYSPACE", &name, None),
            )
        }
        S::AlterKeyspace(s) => {
            let name = s.name.name.clone();
            if !schema.keyspaces.contains_key(&name) && s.if_exists {
                return Ok(None);
            }
            let ks = user_ks(&name)?;
            let (replication, durable) = replication_of(&s.properties, Some(&ks))?;
            // Cassandra answers a schema change that changes nothing with a plain Void.
            if replication == ks.replication && durable == ks.durable_writes {
                return Ok(None);
            }
            let mut new = (*ks).clone();
            new.replication = replication;
            new.durable_writes = durable;
            (
                schema.with_keyspace(new),
                changed("UPDATED", "KEYSPACE", &name, None),
            )
        }
        S::DropKeyspace { if_exists, name } => {
            let name = name.name.clone();
            if !schema.keyspaces.contains_key(&name) {
                if *if_exists {
                    return Ok(None);
                }
                return invalid(format!("Keyspace '{name}' doesn't exist"));
            }
            user_ks(&name)?;
            (
                schema.without_keyspace(&name),
                changed("DROPPED", "KEYSPACE", &name, None),
            )
        }
        S::CreateTable(s) => {
            let ks_name = keyspace_of(&s.name, session_ks)?;
            let ks = user_ks(&ks_name)?;
            let tname = s.name.name.name.clone();
            if ks.tables.contains_key(&tname) {
                if s.if_not_exists {
                    return Ok(None);
                }
                return Err(ExecError::AlreadyExists {
                    message: format!("Table {ks_name}.{tname} already exists"),
                    keyspace: ks_name,
                    table: tname,
                });
            }
            let t = build_table(&ks, s)?;
            let mut new = (*ks).clone();
            new.tables.insert(tname.clone(), Arc::new(t));
            (
                schema.with_keyspace(new),
                changed("CREATED", "TABLE", &ks_name, Some(&tname)),
            )
        }
        S::AlterTable(s) => {
            let ks_name = keyspace_of(&s.name, session_ks)?;
            let ks = user_ks(&ks_name)?;
            let tname = s.name.name.name.clone();
            let Some(t) = ks.tables.get(&tname) else {
                if s.if_exists {
                    return Ok(None);
                }
                return invalid(format!("Table '{ks_name}.{tname}' doesn't exist"));
            };
            let altered = alter_table(&ks, t, &s.action)?;
            if altered == **t {
                // ADD IF NOT EXISTS / DROP IF EXISTS that matched: nothing changes, nothing is announced.
                return Ok(None);
            }
            let mut new = (*ks).clone();
            new.tables.insert(tname.clone(), Arc::new(altered));
            (
                schema.with_keyspace(new),
                changed("UPDATED", "TABLE", &ks_name, Some(&tname)),
            )
        }
        S::DropTable { if_exists, name } => {
            let ks_name = keyspace_of(name, session_ks)?;
            let tname = name.name.name.clone();
            let exists = schema
                .keyspaces
                .get(&ks_name)
                .is_some_and(|k| k.tables.contains_key(&tname));
            if !exists {
                if *if_exists {
                    return Ok(None);
                }
                if !schema.keyspaces.contains_key(&ks_name) {
                    return invalid(format!("Keyspace '{ks_name}' doesn't exist"));
                }
                return invalid(format!("Table '{ks_name}.{tname}' doesn't exist"));
            }
            let ks = user_ks(&ks_name)?;
            let mut new = (*ks).clone();
            new.tables.remove(&tname);
            (
                schema.with_keyspace(new),
                changed("DROPPED", "TABLE", &ks_name, Some(&tname)),
            )
        }
        S::CreateType(s) => {
            let ks_name = keyspace_of(&s.name, session_ks)?;
            let ks = user_ks(&ks_name)?;
            let tname = s.name.name.name.clone();
            if ks.types.contains_key(&tname) {
                if s.if_not_exists {
                    return Ok(None);
                }
                return invalid(format!("A user type with name '{tname}' already exists"));
            }
            let mut fields = Vec::new();
            for (f, ty) in &s.fields {
                if fields.iter().any(|(n, _): &(String, CqlType)| n == &f.name) {
                    return invalid(format!("Duplicate field name {} in type {tname}", f.name));
                }
                check_udt_field(ty)?;
                // Fields are stored inside one cell, so collections in them are frozen in effect.
                let t = resolve_type(ty, Some(&ks))?;
                fields.push((f.name.clone(), t));
            }
            let mut new = (*ks).clone();
            new.types.insert(
                tname.clone(),
                Arc::new(UserType {
                    keyspace: ks_name.clone(),
                    name: tname.clone(),
                    fields,
                }),
            );
            (
                schema.with_keyspace(new),
                changed("CREATED", "TYPE", &ks_name, Some(&tname)),
            )
        }
        S::AlterType(s) => {
            let ks_name = keyspace_of(&s.name, session_ks)?;
            let ks = user_ks(&ks_name)?;
            let tname = s.name.name.name.clone();
            let Some(old) = ks.types.get(&tname).cloned() else {
                if s.if_exists {
                    return Ok(None);
                }
                return invalid(format!("Unknown user type {ks_name}.{tname}"));
            };
            let mut ut = (*old).clone();
            match &s.action {
                ast::AlterTypeAction::Add {
                    if_not_exists,
                    field,
                    ty,
                } => {
                    if ut.fields.iter().any(|(n, _)| n == &field.name) {
                        if *if_not_exists {
                            return Ok(None);
                        }
                        return invalid(format!(
                            "Cannot add new field {} to type {ks_name}.{tname}: a field with name {} already exists",
                            field.name, field.name
                        ));
                    }
                    check_udt_field(ty)?;
                    ut.fields
                        .push((field.name.clone(), resolve_type(ty, Some(&ks))?));
                }
                ast::AlterTypeAction::Rename { if_exists, renames } => {
                    let mut renamed = 0;
                    for (from, to) in renames {
                        match ut.fields.iter().position(|(n, _)| n == &from.name) {
                            Some(i) => {
                                ut.fields[i].0 = to.name.clone();
                                renamed += 1;
                            }
                            None if *if_exists => {}
                            None => {
                                return invalid(format!(
                                    "Unkown field {} in user type {ks_name}.{tname}",
                                    from.name
                                ))
                            }
                        }
                    }
                    if renamed == 0 {
                        return Ok(None);
                    }
                }
                ast::AlterTypeAction::AlterField { field, .. } => {
                    return invalid(format!(
                        "Alterting field types is no longer supported (field {} of {tname})",
                        field.name
                    ))
                }
            }
            let ut = Arc::new(ut);
            let mut new = (*ks).clone();
            new.types.insert(tname.clone(), ut.clone());
            // Tables carry the type's definition; give them the new one.
            for t in new.tables.values_mut() {
                if t.columns.iter().any(|c| mentions_type(&c.cql_type, &tname)) {
                    let mut nt = (**t).clone();
                    for c in nt.columns.iter_mut() {
                        c.cql_type = replace_udt(&c.cql_type, &ut);
                    }
                    *t = Arc::new(nt);
                }
            }
            (
                schema.with_keyspace(new),
                changed("UPDATED", "TYPE", &ks_name, Some(&tname)),
            )
        }
        S::DropType { if_exists, name } => {
            let ks_name = keyspace_of(name, session_ks)?;
            let ks = user_ks(&ks_name)?;
            let tname = name.name.name.clone();
            if !ks.types.contains_key(&tname) {
                if *if_exists {
                    return Ok(None);
                }
                return invalid(format!("Type '{ks_name}.{tname}' doesn't exist"));
            }
            let used = ks
                .tables
                .values()
                .any(|t| t.columns.iter().any(|c| mentions_type(&c.cql_type, &tname)));
            if used {
                return invalid(format!(
                    "Cannot drop user type '{ks_name}.{tname}' as it is still used by a table"
                ));
            }
            let mut users: Vec<&str> = ks
                .types
                .values()
                .filter(|u| {
                    u.name != tname && u.fields.iter().any(|(_, f)| mentions_type(f, &tname))
                })
                .map(|u| u.name.as_str())
                .collect();
            if !users.is_empty() {
                users.sort_unstable();
                return invalid(format!(
                    "Cannot drop user type '{ks_name}.{tname}' as it is still used by user types {}",
                    users.join(", ")
                ));
            }
            let mut new = (*ks).clone();
            new.types.remove(&tname);
            (
                schema.with_keyspace(new),
                changed("DROPPED", "TYPE", &ks_name, Some(&tname)),
            )
        }
        S::CreateIndex(s) => {
            let ks_name = keyspace_of(&s.table, session_ks)?;
            let ks = user_ks(&ks_name)?;
            let tname = s.table.name.name.clone();
            let t = ks.tables.get(&tname).ok_or_else(|| {
                ExecError::Invalid(format!("Table '{ks_name}.{tname}' doesn't exist"))
            })?;
            let target = s.targets.first().ok_or_else(|| {
                ExecError::Invalid(
                    "Only CUSTOM indexes can be created without specifying a target column".into(),
                )
            })?;
            let col = t.column(&target.column.name).ok_or_else(|| {
                ExecError::Invalid(format!("Column '{}' doesn't exist", target.column.name))
            })?;
            check_index_target(t, col, target.kind, s.using.as_deref())?;
            let name = s
                .name
                .as_ref()
                .map(|n| n.name.clone())
                .unwrap_or_else(|| format!("{tname}_{}_idx", col.name));
            if ks
                .tables
                .values()
                .any(|t| t.indexes.iter().any(|i| i.name == name))
            {
                if s.if_not_exists {
                    return Ok(None);
                }
                return Err(ExecError::Invalid(format!("Index '{name}' already exists")));
            }
            let quoted = super::describe::maybe_quote(&col.name);
            let target_text = match target.kind {
                ast::IndexTargetKind::Keys => format!("keys({quoted})"),
                ast::IndexTargetKind::Entries => format!("entries({quoted})"),
                ast::IndexTargetKind::Full => format!("full({quoted})"),
                ast::IndexTargetKind::Values => format!("values({quoted})"),
                ast::IndexTargetKind::Simple
                    if matches!(
                        col.cql_type,
                        CqlType::List { frozen: false, .. }
                            | CqlType::Set { frozen: false, .. }
                            | CqlType::Map { frozen: false, .. }
                    ) =>
                {
                    format!("values({quoted})")
                }
                ast::IndexTargetKind::Simple => quoted,
            };
            let mut options = BTreeMap::new();
            if let Some(dup) = t.indexes.iter().find(|i| {
                i.options.get("target") == Some(&target_text)
                    && i.options.get("class_name").map(|c| is_sai_class(c))
                        == s.using.as_deref().map(is_sai_class)
            }) {
                if s.if_not_exists {
                    return Ok(None);
                }
                return invalid(format!(
                    "Index {name} is a duplicate of existing index {}",
                    dup.name
                ));
            }
            options.insert("target".to_string(), target_text);
            for (k, v) in &s.properties {
                if k == "options" {
                    for (ok, ov) in map_value(v, "options")? {
                        options.insert(ok, ov);
                    }
                }
            }
            let kind = match &s.using {
                Some(class) => {
                    // Kept as written: Cassandra shows `USING 'sai'` back as given.
                    options.insert("class_name".to_string(), class.clone());
                    "CUSTOM"
                }
                None => "COMPOSITES",
            };
            let mut nt = (**t).clone();
            nt.indexes.push(IndexMeta {
                name: name.clone(),
                kind: kind.to_string(),
                options,
            });
            let mut new = (*ks).clone();
            new.tables.insert(tname.clone(), Arc::new(nt));
            (
                schema.with_keyspace(new),
                changed("UPDATED", "TABLE", &ks_name, Some(&tname)),
            )
        }
        S::DropIndex { if_exists, name } => {
            let ks_name = keyspace_of(name, session_ks)?;
            let ks = user_ks(&ks_name)?;
            let iname = name.name.name.clone();
            let Some(t) = ks
                .tables
                .values()
                .find(|t| t.indexes.iter().any(|i| i.name == iname))
                .cloned()
            else {
                if *if_exists {
                    return Ok(None);
                }
                return invalid(format!("Index '{ks_name}.{iname}' doesn't exist"));
            };
            let mut nt = (*t).clone();
            nt.indexes.retain(|i| i.name != iname);
            let mut new = (*ks).clone();
            new.tables.insert(nt.name.clone(), Arc::new(nt.clone()));
            (
                schema.with_keyspace(new),
                changed("UPDATED", "TABLE", &ks_name, Some(&nt.name)),
            )
        }
        S::DropMaterializedView {
            if_exists: true, ..
        } => return Ok(None),
        _ => return invalid("This statement is not supported by Helenus yet"),
    }))
}

fn alter_table(
    ks: &KeyspaceMeta,
    t: &TableMeta,
    action: &AlterTableAction,
) -> ExecResult<TableMeta> {
    let mut columns = t.columns.clone();
    let mut params = t.params.clone();
    let mut next_id = t.next_column_id;
    let mut dropped = t.dropped_columns.clone();
    match action {
        AlterTableAction::Add {
            if_not_exists,
            columns: adds,
        } => {
            for c in adds {
                if columns.iter().any(|x| x.name == c.name.name) {
                    if *if_not_exists {
                        continue;
                    }
                    return invalid(format!("Column with name '{}' already exists", c.name.name));
                }
                check_declared_type(&c.ty)?;
                let ty = resolve_type(&c.ty, Some(ks))?;
                if let Some((old, _)) = dropped.get(&c.name.name) {
                    // Old cells of the dropped column may still be on disk under its name.
                    if old.to_string() != ty.to_string() {
                        return invalid(format!(
                            "Cannot add a column '{}' of type {ty}, incompatible with previously dropped column '{}' of type {old}",
                            c.name.name, c.name.name
                        ));
                    }
                }
                if c.is_static && t.clustering_len() == 0 {
                    return invalid("Static columns are only useful (and thus allowed) if the table has at least one clustering column");
                }
                if ty.is_counter() != t.is_counter_table() {
                    return Err(ExecError::Config(if ty.is_counter() {
                        format!(
                            "Cannot add a counter column ({}) in a non counter column family",
                            c.name.name
                        )
                    } else {
                        format!(
                            "Cannot add a non counter column ({}) in a counter column family",
                            c.name.name
                        )
                    }));
                }
                columns.push(ColumnMeta {
                    name: c.name.name.clone(),
                    cql_type: ty,
                    kind: if c.is_static {
                        ColumnKind::Static
                    } else {
                        ColumnKind::Regular
                    },
                    position: -1,
                    order: ClusteringOrder::None,
                    id: next_id,
                });
                next_id += 1;
            }
        }
        AlterTableAction::Drop {
            if_exists,
            columns: drops,
            ..
        } => {
            for d in drops {
                let Some(pos) = columns.iter().position(|c| c.name == d.name) else {
                    if *if_exists {
                        continue;
                    }
                    return invalid(format!(
                        "Column {} was not found in table {}",
                        d.name, t.name
                    ));
                };
                if columns[pos].kind.is_primary_key() {
                    return invalid(format!("Cannot drop PRIMARY KEY part {}", d.name));
                }
                let gone = columns.remove(pos);
                dropped.insert(gone.name, (gone.cql_type, helenus_types::now_micros()));
            }
        }
        AlterTableAction::Rename { renames, .. } => {
            // Cassandra 5.0 rejects an unknown column even with IF EXISTS (which names the table).
            for (from, to) in renames {
                let Some(pos) = columns.iter().position(|c| c.name == from.name) else {
                    return invalid(format!(
                        "Undefined column name {} in table {}.{}",
                        from.name, t.keyspace, t.name
                    ));
                };
                if !columns[pos].kind.is_primary_key() {
                    return invalid(format!(
                        "Cannot rename non PRIMARY KEY column {}",
                        from.name
                    ));
                }
                if columns.iter().any(|c| c.name == to.name) {
                    return invalid(format!("Cannot rename column {} to {} in table '{}'; another column with that name already exists", from.name, to.name, t.name));
                }
                columns[pos].name = to.name.clone();
            }
        }
        AlterTableAction::AlterType { column, .. } => {
            return invalid(format!(
                "Altering column types is no longer supported (column {})",
                column.name
            ));
        }
        AlterTableAction::DropCompactStorage => {
            return invalid("Cannot DROP COMPACT STORAGE as table does not use COMPACT STORAGE")
        }
        AlterTableAction::Mask { .. } => {
            return invalid("Dynamic data masking is not supported by Helenus yet")
        }
        AlterTableAction::With(opts) => {
            apply_table_properties(&mut params, &opts.properties)?;
            if !opts.clustering_order.is_empty() {
                return Err(ExecError::Syntax("Cannot alter clustering order".into()));
            }
        }
    }
    let mut nt = TableMeta::new(&t.keyspace, &t.name, t.id, t.kind, columns, params);
    nt.indexes = t.indexes.clone();
    nt.flags = t.flags.clone();
    nt.next_column_id = next_id.max(nt.next_column_id);
    nt.dropped_columns = dropped;
    Ok(nt)
}

/// Whether an index class name designates a storage-attached index.
pub fn is_sai_class(class: &str) -> bool {
    class.eq_ignore_ascii_case("sai") || class.ends_with("StorageAttachedIndex")
}

/// Cassandra's checks on what an index may target (`CreateIndexStatement`, SAI's type support).
fn check_index_target(
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

/// A user type's field may hold neither counters nor non-frozen user types.
fn check_udt_field(ty: &ast::CqlTypeExpr) -> ExecResult<()> {
    use ast::CqlTypeExpr as E;
    match ty {
        E::Native(helenus_types::NativeType::Counter) => {
            invalid("A user type cannot contain counters")
        }
        E::UserDefined(_) => invalid("A user type cannot contain non-frozen UDTs"),
        _ => check_declared_type(ty),
    }
}

fn mentions_type(t: &CqlType, name: &str) -> bool {
    match t {
        CqlType::Udt { def, .. } => {
            def.name == name || def.fields.iter().any(|(_, f)| mentions_type(f, name))
        }
        CqlType::List { element, .. }
        | CqlType::Set { element, .. }
        | CqlType::Vector { element, .. } => mentions_type(element, name),
        CqlType::Map { key, value, .. } => mentions_type(key, name) || mentions_type(value, name),
        CqlType::Tuple(items) => items.iter().any(|i| mentions_type(i, name)),
        _ => false,
    }
}

/// `t` with every use of the user type `ut` replaced by its new definition.
fn replace_udt(t: &CqlType, ut: &UserType) -> CqlType {
    match t {
        CqlType::Udt { def, frozen } if def.name == ut.name => CqlType::Udt {
            def: Box::new(ut.clone()),
            frozen: *frozen,
        },
        CqlType::List { element, frozen } => CqlType::List {
            element: Box::new(replace_udt(element, ut)),
            frozen: *frozen,
        },
        CqlType::Set { element, frozen } => CqlType::Set {
            element: Box::new(replace_udt(element, ut)),
            frozen: *frozen,
        },
        CqlType::Map { key, value, frozen } => CqlType::Map {
            key: Box::new(replace_udt(key, ut)),
            value: Box::new(replace_udt(value, ut)),
            frozen: *frozen,
        },
        CqlType::Tuple(items) => CqlType::Tuple(items.iter().map(|i| replace_udt(i, ut)).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_inside_collections_are_found() {
        let counter = CqlType::Native(helenus_types::NativeType::Counter);
        let list = CqlType::List {
            element: Box::new(counter.clone()),
            frozen: false,
        };
        assert!(counter_inside(&list));
        let map = CqlType::Map {
            key: Box::new(CqlType::Native(helenus_types::NativeType::Int)),
            value: Box::new(list),
            frozen: true,
        };
        assert!(counter_inside(&map));
        assert!(!counter_inside(&counter));
    }
}
