//! Checks Cassandra makes on a SELECT before planning it: relations that can never be served
//! (CONTAINS on a non-collection, a literal null), clauses that do not combine (PER PARTITION
//! LIMIT with an aggregate, DISTINCT with a filter on a row column) and clustering relations that
//! skip a column. Running them first keeps the planner free of error paths that only exist for
//! compatibility, and gives the error Cassandra gives even when a later check would also fail.

use super::restrictions::index_serves;
use crate::exec::error::{invalid, ExecError, ExecResult};
use crate::exec::selectors::Compiled;
use helenus_cql::ast::{Operator, Relation, RelationValue, SelectStatement, Term};
use helenus_schema::{ColumnKind, TableKind, TableMeta};
use helenus_types::CqlType;

/// Validates `s` against `t` with Cassandra's wording; only user tables are checked, as system
/// tables are read by drivers with queries Cassandra plans differently.
pub(super) fn check(t: &TableMeta, s: &SelectStatement, compiled: &Compiled) -> ExecResult<()> {
    if t.kind != TableKind::User {
        return Ok(());
    }
    if s.per_partition_limit.is_some() && compiled.has_aggregate && s.group_by.is_empty() {
        return invalid("PER PARTITION LIMIT is not allowed with aggregate queries.");
    }
    if s.distinct && s.group_by.iter().any(|g| groups_on_clustering(t, g)) {
        return invalid(
            "Grouping on clustering columns is not allowed for SELECT DISTINCT queries",
        );
    }
    for r in &s.where_clause {
        match r {
            Relation::Column { column, op, value } => {
                let i = t.column_index(&column.name).ok_or_else(|| {
                    ExecError::Invalid(format!("Undefined column name {}", column.name))
                })?;
                check_column(t, s, i, *op, value)?;
            }
            Relation::Element {
                column, key, value, ..
            } => {
                if matches!(key, Term::Null) {
                    return invalid(format!(
                        "Unsupported null map key for column {}",
                        column.name
                    ));
                }
                if matches!(value, Term::Null) {
                    return invalid(format!(
                        "Unsupported null map value for column {}",
                        column.name
                    ));
                }
                if s.distinct {
                    return invalid(DISTINCT_WHERE);
                }
            }
            Relation::MultiColumn { columns, op, .. } => {
                if s.distinct {
                    return invalid(DISTINCT_WHERE);
                }
                let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
                check_multi_prefix(t, s, &names, *op)?;
            }
            _ => {}
        }
    }
    Ok(())
}

fn groups_on_clustering(t: &TableMeta, g: &helenus_cql::ast::Selector) -> bool {
    matches!(g, helenus_cql::ast::Selector::Column(id)
        if t.column(&id.name).is_some_and(|c| c.kind == ColumnKind::Clustering))
}

const DISTINCT_WHERE: &str = "SELECT DISTINCT with WHERE clause only supports restriction by partition key and/or static columns.";

fn check_column(
    t: &TableMeta,
    s: &SelectStatement,
    i: usize,
    op: Operator,
    value: &RelationValue,
) -> ExecResult<()> {
    let c = &t.columns[i];
    match op {
        Operator::ContainsKey if !matches!(c.cql_type, CqlType::Map { .. }) => {
            return invalid(format!(
                "Cannot use CONTAINS KEY on non-map column {}",
                c.name
            ));
        }
        Operator::Contains
            if !matches!(
                c.cql_type,
                CqlType::Map { .. } | CqlType::List { .. } | CqlType::Set { .. }
            ) =>
        {
            return invalid(format!(
                "Cannot use CONTAINS on non-collection column {}",
                c.name
            ));
        }
        _ => {}
    }
    if op == Operator::In && c.cql_type.is_multi_cell() {
        return invalid(match c.cql_type {
            CqlType::Udt { .. } => format!(
                "Non-frozen UDT column '{}' ({}) cannot be restricted by any relation",
                c.name, c.cql_type
            ),
            _ => format!(
                "Collection column '{}' ({}) cannot be restricted by a 'IN' relation",
                c.name, c.cql_type
            ),
        });
    }
    let slice = matches!(
        op,
        Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte
    );
    if slice && crate::exec::ddl::references_duration(&c.cql_type) {
        let what = match c.cql_type {
            CqlType::Tuple(_) => "tuples containing durations",
            CqlType::Udt { .. } => "UDTs containing durations",
            CqlType::Native(_) => "duration columns",
            _ => "collections containing durations",
        };
        return invalid(format!("Slice restrictions are not supported on {what}"));
    }
    if matches!(value, RelationValue::Single(Term::Null)) && op != Operator::In {
        return invalid(format!("Unsupported null value for column {}", c.name));
    }
    if c.kind == ColumnKind::Clustering
        && matches!(op, Operator::Contains | Operator::ContainsKey)
        && !s.allow_filtering
        && index_serves(t, i, op).is_none()
    {
        let what = if op == Operator::Contains {
            "CONTAINS"
        } else {
            "CONTAINS KEY"
        };
        return invalid(format!(
            "Clustering columns can only be restricted with {what} with a secondary index or filtering"
        ));
    }
    if s.distinct && !matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Static) {
        return invalid(DISTINCT_WHERE);
    }
    Ok(())
}

/// A multi-column relation is a clustering restriction: the clustering columns before its first
/// one must be restricted by single-column relations, and as a filter it can only be `=`.
fn check_multi_prefix(
    t: &TableMeta,
    s: &SelectStatement,
    names: &[&str],
    op: Operator,
) -> ExecResult<()> {
    let ck: Vec<&str> = t
        .columns
        .iter()
        .filter(|c| c.kind == ColumnKind::Clustering)
        .map(|c| c.name.as_str())
        .collect();
    let Some(first) = names.first().and_then(|n| ck.iter().position(|c| c == n)) else {
        return Ok(());
    };
    let restricted = |name: &str| {
        s.where_clause.iter().any(|r| match r {
            Relation::Column {
                column,
                op: Operator::Eq | Operator::In,
                ..
            } => column.name == name,
            Relation::MultiColumn {
                columns,
                op: Operator::Eq | Operator::In,
                ..
            } => columns.iter().any(|c| c.name == name),
            _ => false,
        })
    };
    let Some(gap) = (0..first).find(|&p| !restricted(ck[p])) else {
        return Ok(());
    };
    if !s.allow_filtering {
        return invalid(format!(
            "PRIMARY KEY column \"{}\" cannot be restricted as preceding column \"{}\" is not restricted",
            names[0], ck[gap]
        ));
    }
    match op {
        Operator::In if names.len() > 1 => invalid("Multicolumn IN filters are not supported"),
        Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte => {
            invalid("Multi-column slice restrictions cannot be used for filtering.")
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use crate::exec::error::ExecError;
    use helenus_cql::ast::Statement;
    use helenus_schema::{KeyspaceKind, KeyspaceMeta};
    use std::sync::Arc;

    fn table(ddl: &str) -> Arc<helenus_schema::TableMeta> {
        let ks = KeyspaceMeta::new("ks", KeyspaceKind::User, Default::default(), true);
        let Statement::CreateTable(c) = helenus_cql::parse(ddl).unwrap().statement else {
            panic!("not a CREATE TABLE: {ddl}")
        };
        Arc::new(crate::exec::ddl::build_table(&ks, &c).unwrap())
    }

    /// Plans `select` against `t`; the InvalidRequest message, or None when it plans.
    fn refusal(t: &Arc<helenus_schema::TableMeta>, select: &str) -> Option<String> {
        let Statement::Select(s) = helenus_cql::parse(select).unwrap().statement else {
            panic!("not a SELECT: {select}")
        };
        match super::super::plan(t.clone(), &s, &mut Vec::new()) {
            Ok(_) => None,
            Err(ExecError::Invalid(m)) => Some(m),
            Err(e) => panic!("unexpected error {e:?}"),
        }
    }

    #[test]
    fn contains_needs_a_collection_and_contains_key_a_map() {
        let t = table(
            "CREATE TABLE t (k int, c int, l list<int>, m map<int, int>, PRIMARY KEY (k, c))",
        );
        let m = refusal(
            &t,
            "SELECT * FROM t WHERE k = 0 AND l CONTAINS KEY 1 ALLOW FILTERING",
        );
        assert_eq!(
            m.as_deref(),
            Some("Cannot use CONTAINS KEY on non-map column l")
        );
        let m = refusal(
            &t,
            "SELECT * FROM t WHERE k = 0 AND c CONTAINS 1 ALLOW FILTERING",
        );
        assert_eq!(
            m.as_deref(),
            Some("Cannot use CONTAINS on non-collection column c")
        );
        assert_eq!(
            refusal(
                &t,
                "SELECT * FROM t WHERE k = 0 AND m CONTAINS KEY 1 ALLOW FILTERING"
            ),
            None
        );
    }

    #[test]
    fn durations_have_no_order_and_collections_no_in() {
        let t = table(
            "CREATE TABLE t (k int PRIMARY KEY, p frozen<tuple<int, duration>>, l list<int>)",
        );
        let m = refusal(&t, "SELECT * FROM t WHERE p > (1, 2s) ALLOW FILTERING");
        assert_eq!(
            m.as_deref(),
            Some("Slice restrictions are not supported on tuples containing durations")
        );
        let m = refusal(&t, "SELECT * FROM t WHERE l IN ([1], [2]) ALLOW FILTERING");
        assert!(m.is_some_and(|m| m.ends_with("cannot be restricted by a 'IN' relation")));
        let m = refusal(&t, "SELECT max(sum(k)) FROM t");
        assert!(m.is_some_and(|m| m.starts_with("aggregate functions cannot be used as arguments")));
    }

    #[test]
    fn literal_null_restrictions_are_refused() {
        let t = table("CREATE TABLE t (k int, c int, m map<int, int>, PRIMARY KEY (k, c))");
        let m = refusal(
            &t,
            "SELECT * FROM t WHERE k = 0 AND m CONTAINS null ALLOW FILTERING",
        );
        assert_eq!(m.as_deref(), Some("Unsupported null value for column m"));
        let m = refusal(
            &t,
            "SELECT * FROM t WHERE k = 0 AND m[1] = null ALLOW FILTERING",
        );
        assert_eq!(
            m.as_deref(),
            Some("Unsupported null map value for column m")
        );
    }

    #[test]
    fn per_partition_limit_and_distinct_rules() {
        let t = table("CREATE TABLE t (k int, c int, s int static, v int, PRIMARY KEY (k, c))");
        let m = refusal(&t, "SELECT count(*) FROM t PER PARTITION LIMIT 2");
        assert_eq!(
            m.as_deref(),
            Some("PER PARTITION LIMIT is not allowed with aggregate queries.")
        );
        assert_eq!(
            refusal(
                &t,
                "SELECT k, count(*) FROM t GROUP BY k PER PARTITION LIMIT 2"
            ),
            None
        );
        assert!(
            refusal(&t, "SELECT DISTINCT k FROM t WHERE v = 1 ALLOW FILTERING")
                .is_some_and(|m| m.starts_with("SELECT DISTINCT with WHERE clause"))
        );
        assert_eq!(
            refusal(
                &t,
                "SELECT DISTINCT k, s FROM t WHERE s = 1 ALLOW FILTERING"
            ),
            None
        );
    }

    #[test]
    fn group_by_covers_the_whole_partition_key_and_not_clustering_with_distinct() {
        let t = table("CREATE TABLE t (a int, b int, c int, v int, PRIMARY KEY ((a, b), c))");
        let m = refusal(&t, "SELECT a, max(v) FROM t GROUP BY a");
        assert_eq!(
            m.as_deref(),
            Some("Group by is not supported on only a part of the partition key")
        );
        assert_eq!(
            refusal(
                &t,
                "SELECT a, max(v) FROM t WHERE a = 1 AND b = 1 GROUP BY a"
            ),
            None
        );
        let m = refusal(&t, "SELECT DISTINCT a, b FROM t GROUP BY a, b, c");
        assert_eq!(
            m.as_deref(),
            Some("Grouping on clustering columns is not allowed for SELECT DISTINCT queries")
        );
    }

    #[test]
    fn multi_column_relations_follow_the_clustering_prefix() {
        let t =
            table("CREATE TABLE t (k int, a int, b int, c int, v int, PRIMARY KEY (k, a, b, c))");
        let m = refusal(&t, "SELECT * FROM t WHERE k = 0 AND (b, c) IN ((1, 2))");
        assert!(m.is_some_and(|m| m.contains("preceding column \"a\" is not restricted")));
        let m = refusal(
            &t,
            "SELECT * FROM t WHERE k = 0 AND (b, c) > (1, 2) ALLOW FILTERING",
        );
        assert_eq!(
            m.as_deref(),
            Some("Multi-column slice restrictions cannot be used for filtering.")
        );
        // A multi-column equality is a clustering prefix the relations after it extend.
        assert_eq!(
            refusal(
                &t,
                "SELECT * FROM t WHERE k = 0 AND (a, b) = (1, 2) AND c = 3"
            ),
            None
        );
        assert_eq!(
            refusal(
                &t,
                "SELECT * FROM t WHERE k = 0 AND (a) = (1) AND (b, c) = (2, 3)"
            ),
            None
        );
    }

    #[test]
    fn an_index_on_a_key_component_serves_without_filtering() {
        let t = table("CREATE TABLE t (k1 int, k2 int, c1 int, c2 int, v int, PRIMARY KEY ((k1, k2), c1, c2))");
        assert!(refusal(&t, "SELECT * FROM t WHERE k1 = 1").is_some());
        assert!(refusal(&t, "SELECT * FROM t WHERE k1 = 1 AND k2 = 2 AND c2 = 1").is_some());
        let mut indexed = (*t).clone();
        for (name, target) in [("i1", "k1"), ("i2", "c2")] {
            indexed.indexes.push(helenus_schema::IndexMeta {
                name: name.into(),
                kind: "COMPOSITES".into(),
                options: [("target".to_string(), target.to_string())].into(),
            });
        }
        let t = Arc::new(indexed);
        assert_eq!(refusal(&t, "SELECT * FROM t WHERE k1 = 1"), None);
        assert_eq!(
            refusal(&t, "SELECT * FROM t WHERE k1 = 1 AND k2 = 2 AND c2 = 1"),
            None
        );
    }
}
