//! COMPACT STORAGE tables, laid out as Cassandra 4.0+ lays them out after the Thrift era:
//! - a *static* compact table (no clustering column) keeps its declared columns as static columns
//!   and gains a hidden clustering column `column1` (text) and a hidden regular column `value`
//!   (blob); its CQL rows are the static rows;
//! - a *dense* one (clustering columns) has at most one value column, a hidden `value` of type
//!   `empty` when none is declared.
//!
//! Neither writes row markers, so a row exists only while one of its cells is live. The hidden
//! columns are in `system_schema.columns` but CQL cannot name them (see `TableMeta::is_hidden`).

use super::super::error::{invalid, ExecResult};
use helenus_schema::{ClusteringOrder, ColumnKind, ColumnMeta};
use helenus_types::{CqlType, NativeType};

/// Checks a COMPACT STORAGE definition and turns `columns` into its compact layout; returns the
/// table's `system_schema.tables.flags`.
pub(super) fn layout(columns: &mut Vec<ColumnMeta>) -> ExecResult<Vec<String>> {
    if columns.iter().any(|c| c.kind == ColumnKind::Static) {
        return invalid("Static columns are not supported in COMPACT STORAGE tables");
    }
    if columns.iter().any(|c| c.cql_type.is_multi_cell()) {
        return invalid("Non-frozen collections and UDTs are not supported with COMPACT STORAGE");
    }
    let clustering = columns
        .iter()
        .filter(|c| c.kind == ColumnKind::Clustering)
        .count();
    let values: Vec<&str> = columns
        .iter()
        .filter(|c| c.kind == ColumnKind::Regular)
        .map(|c| c.name.as_str())
        .collect();
    let mut next_id = columns.iter().map(|c| c.id + 1).max().unwrap_or(0);
    let mut hidden = |name: &str, kind, position, order, cql_type, taken: &[ColumnMeta]| {
        let column = ColumnMeta {
            name: unused_name(name, taken),
            cql_type,
            kind,
            position,
            order,
            id: next_id,
        };
        next_id += 1;
        column
    };
    if clustering == 0 {
        if values.is_empty() {
            return invalid("No definition found that is not part of the PRIMARY KEY");
        }
        for c in columns.iter_mut().filter(|c| c.kind == ColumnKind::Regular) {
            c.kind = ColumnKind::Static;
        }
        let text = CqlType::Native(NativeType::Varchar);
        let column1 = hidden(
            "column1",
            ColumnKind::Clustering,
            0,
            ClusteringOrder::Asc,
            text,
            columns,
        );
        columns.push(column1);
        let blob = CqlType::Native(NativeType::Blob);
        let value = hidden(
            "value",
            ColumnKind::Regular,
            -1,
            ClusteringOrder::None,
            blob,
            columns,
        );
        columns.push(value);
        return Ok(Vec::new());
    }
    if values.len() > 1 {
        return invalid(format!(
            "COMPACT STORAGE with composite PRIMARY KEY allows no more than one column not part of the PRIMARY KEY (got: {})",
            values.join(", ")
        ));
    }
    if values.is_empty() {
        let value = hidden(
            "value",
            ColumnKind::Regular,
            -1,
            ClusteringOrder::None,
            CqlType::empty(),
            columns,
        );
        columns.push(value);
    }
    let mut flags = Vec::new();
    if clustering > 1 {
        flags.push("compound".to_string());
    }
    flags.push("dense".to_string());
    Ok(flags)
}

/// `base`, or `base` followed by the first number that no column uses (Cassandra's choice when
/// a declared column already has the default name).
fn unused_name(base: &str, columns: &[ColumnMeta]) -> String {
    let taken = |n: &str| columns.iter().any(|c| c.name == n);
    if !taken(base) {
        return base.to_string();
    }
    let stem = base.trim_end_matches(|c: char| c.is_ascii_digit());
    (1..)
        .map(|i| format!("{stem}{i}"))
        .find(|n| !taken(n))
        .unwrap_or_else(|| base.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, kind: ColumnKind, id: u32, ty: CqlType) -> ColumnMeta {
        let position = match kind {
            ColumnKind::PartitionKey | ColumnKind::Clustering => 0,
            _ => -1,
        };
        ColumnMeta {
            name: name.into(),
            cql_type: ty,
            kind,
            position,
            order: ClusteringOrder::None,
            id,
        }
    }

    fn int() -> CqlType {
        CqlType::Native(NativeType::Int)
    }

    #[test]
    fn static_compact_table_gains_hidden_column1_and_value() {
        let mut cols = vec![
            col("k", ColumnKind::PartitionKey, 0, int()),
            col("v", ColumnKind::Regular, 1, int()),
        ];
        assert_eq!(layout(&mut cols).ok(), Some(Vec::new()));
        let kinds: Vec<(&str, ColumnKind)> =
            cols.iter().map(|c| (c.name.as_str(), c.kind)).collect();
        assert_eq!(
            kinds,
            vec![
                ("k", ColumnKind::PartitionKey),
                ("v", ColumnKind::Static),
                ("column1", ColumnKind::Clustering),
                ("value", ColumnKind::Regular)
            ]
        );
        assert_eq!(cols[3].id, 3);
    }

    #[test]
    fn hidden_names_avoid_declared_ones() {
        let mut cols = vec![
            col("k", ColumnKind::PartitionKey, 0, int()),
            col("column1", ColumnKind::Regular, 1, int()),
            col("value", ColumnKind::Regular, 2, int()),
        ];
        assert!(layout(&mut cols).is_ok());
        let names: Vec<&str> = cols.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, vec!["k", "column1", "value", "column2", "value1"]);
    }

    #[test]
    fn dense_tables_get_flags_and_at_most_one_value() {
        let mut cols = vec![
            col("k", ColumnKind::PartitionKey, 0, int()),
            col("c", ColumnKind::Clustering, 1, int()),
        ];
        assert_eq!(layout(&mut cols).ok(), Some(vec!["dense".to_string()]));
        assert!(cols[2].cql_type.is_empty_type());
        let mut two = vec![
            col("k", ColumnKind::PartitionKey, 0, int()),
            col("c1", ColumnKind::Clustering, 1, int()),
            col("c2", ColumnKind::Clustering, 2, int()),
            col("v", ColumnKind::Regular, 3, int()),
        ];
        assert_eq!(
            layout(&mut two).ok(),
            Some(vec!["compound".to_string(), "dense".to_string()])
        );
        let mut too_many = vec![
            col("k", ColumnKind::PartitionKey, 0, int()),
            col("c", ColumnKind::Clustering, 1, int()),
            col("v1", ColumnKind::Regular, 2, int()),
            col("v2", ColumnKind::Regular, 3, int()),
        ];
        assert!(layout(&mut too_many).is_err());
    }

    #[test]
    fn refuses_statics_and_multi_cell_columns() {
        let mut statics = vec![
            col("k", ColumnKind::PartitionKey, 0, int()),
            col("c", ColumnKind::Clustering, 1, int()),
            col("s", ColumnKind::Static, 2, int()),
        ];
        assert!(layout(&mut statics).is_err());
        let list = CqlType::List {
            element: Box::new(int()),
            frozen: false,
        };
        let mut lists = vec![
            col("k", ColumnKind::PartitionKey, 0, int()),
            col("l", ColumnKind::Regular, 1, list),
        ];
        assert!(layout(&mut lists).is_err());
    }

    fn compact_table(cql: &str) -> (helenus_schema::KeyspaceMeta, helenus_schema::TableMeta) {
        let ks = helenus_schema::KeyspaceMeta::new(
            "ks",
            helenus_schema::KeyspaceKind::User,
            Default::default(),
            true,
        );
        let parsed = helenus_cql::parse(cql).expect("statement parses");
        let helenus_cql::ast::Statement::CreateTable(create) = parsed.statement else {
            panic!("not a CREATE TABLE");
        };
        let table = super::super::table::build_table(&ks, &create).expect("table builds");
        (ks, table)
    }

    #[test]
    fn hidden_columns_cannot_be_named_until_compact_storage_is_dropped() {
        let (ks, t) =
            compact_table("CREATE TABLE t (k int PRIMARY KEY, v int) WITH COMPACT STORAGE");
        assert!(t.is_compact() && !t.is_dense());
        assert!(t.column("column1").is_none() && t.column("value").is_none());
        let visible: Vec<&str> = t.visible_columns().map(|(_, c)| c.name.as_str()).collect();
        assert_eq!(visible, vec!["k", "v"]);
        let dropped = super::super::table::alter_table(
            &ks,
            &t,
            &helenus_cql::ast::AlterTableAction::DropCompactStorage,
            1_700_000_000_000_000,
        )
        .expect("drop compact storage");
        assert!(!dropped.is_compact());
        assert_eq!(dropped.flags, vec!["compound".to_string()]);
        let visible: Vec<&str> = dropped
            .visible_columns()
            .map(|(_, c)| c.name.as_str())
            .collect();
        assert_eq!(visible, vec!["k", "column1", "v", "value"]);
    }

    #[test]
    fn compact_layout_survives_a_schema_save_and_load() {
        let (mut ks, t) =
            compact_table("CREATE TABLE e (k int, c int, PRIMARY KEY (k, c)) WITH COMPACT STORAGE");
        ks.tables.insert("e".into(), std::sync::Arc::new(t));
        let schema = helenus_schema::Schema {
            keyspaces: [("ks".to_string(), std::sync::Arc::new(ks))]
                .into_iter()
                .collect(),
            version: uuid::Uuid::nil(),
        };
        let dir = std::env::temp_dir().join(format!("helenus-compact-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("schema.json");
        helenus_schema::save_user_schema(&schema, &path).expect("save");
        let loaded = helenus_schema::load_user_schema(&path).expect("load");
        let _ = std::fs::remove_dir_all(&dir);
        let e = loaded
            .iter()
            .find(|k| k.name == "ks")
            .and_then(|k| k.tables.get("e"))
            .expect("table e reloaded");
        assert_eq!(e.flags, vec!["dense".to_string()]);
        assert!(
            e.column("value").is_none(),
            "the empty value column stays hidden"
        );
        assert!(e.columns.iter().any(|c| c.cql_type.is_empty_type()));
    }
}
