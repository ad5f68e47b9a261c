//! The planner's rules, one phase at a time, through `plan` on tables built from CQL.

use super::{plan, FILTERING_MSG};
use crate::exec::error::ExecError;
use crate::exec::select::{PartitionSelection, SelectPlan};
use crate::exec::BindSpec;
use helenus_cql::ast::Statement;
use helenus_schema::{IndexMeta, TableMeta};
use std::collections::BTreeMap;
use std::sync::Arc;

const TABLE: &str =
    "CREATE TABLE t (k int, c1 int, c2 int, v int, s int STATIC, PRIMARY KEY (k, c1, c2))";

use crate::exec::ddl::table_for_test as table;

fn with_index(mut t: TableMeta, target: &str) -> TableMeta {
    t.indexes.push(IndexMeta {
        name: format!("{target}_idx"),
        kind: "COMPOSITES".to_string(),
        options: BTreeMap::from([("target".to_string(), target.to_string())]),
    });
    t
}

fn plan_with_specs(
    t: &TableMeta,
    select: &str,
) -> (Result<SelectPlan, ExecError>, Vec<Option<BindSpec>>) {
    let Statement::Select(s) = helenus_cql::parse(select).unwrap().statement else {
        panic!("not a SELECT: {select}")
    };
    let mut specs = Vec::new();
    (plan(Arc::new(t.clone()), &s, &mut specs), specs)
}

fn planned(t: &TableMeta, select: &str) -> SelectPlan {
    match plan_with_specs(t, select).0 {
        Ok(p) => p,
        Err(e) => panic!("{select}: {e:?}"),
    }
}

/// The InvalidRequest message `select` is refused with.
fn refusal(t: &TableMeta, select: &str) -> String {
    match plan_with_specs(t, select).0 {
        Err(ExecError::Invalid(m)) => m,
        Err(e) => panic!("{select}: unexpected error {e:?}"),
        Ok(_) => panic!("{select}: planned, expected a refusal"),
    }
}

#[test]
fn a_regular_column_restriction_needs_allow_filtering() {
    let t = table(TABLE);
    assert_eq!(refusal(&t, "SELECT * FROM t WHERE v = 1"), FILTERING_MSG);
    let p = planned(&t, "SELECT * FROM t WHERE v = 1 ALLOW FILTERING");
    assert_eq!(p.filters.len(), 1);
    assert!(matches!(
        p.partitions,
        PartitionSelection::TokenRange { .. }
    ));
}

#[test]
fn an_index_serves_one_restriction_without_allow_filtering() {
    let t = with_index(table(TABLE), "v");
    let p = planned(&t, "SELECT * FROM t WHERE v = 1");
    assert_eq!(p.filters.len(), 1);
    // A legacy index serves one restriction per query; the next one filters.
    let t = with_index(with_index(table(TABLE), "v"), "s");
    assert_eq!(
        refusal(&t, "SELECT * FROM t WHERE v = 1 AND s = 2"),
        FILTERING_MSG
    );
}

#[test]
fn clustering_restrictions_without_the_partition_key_need_allow_filtering() {
    let t = table(TABLE);
    assert_eq!(refusal(&t, "SELECT * FROM t WHERE c1 = 1"), FILTERING_MSG);
    let p = planned(&t, "SELECT * FROM t WHERE k = 1 AND c1 = 1");
    assert!(matches!(p.partitions, PartitionSelection::Keys(ref k) if k.len() == 1));
    assert_eq!(p.clustering_eq.len(), 1);
}

#[test]
fn a_partial_partition_key_needs_allow_filtering_and_becomes_a_filter() {
    let t = table("CREATE TABLE t (a int, b int, v int, PRIMARY KEY ((a, b)))");
    assert_eq!(refusal(&t, "SELECT * FROM t WHERE a = 1"), FILTERING_MSG);
    let p = planned(&t, "SELECT * FROM t WHERE a = 1 ALLOW FILTERING");
    assert!(matches!(
        p.partitions,
        PartitionSelection::TokenRange { .. }
    ));
    assert_eq!(
        p.filters.iter().map(|f| f.column).collect::<Vec<_>>(),
        vec![0]
    );
}

#[test]
fn skipping_a_clustering_column_is_refused_unless_filtering() {
    let t = table(TABLE);
    assert_eq!(
        refusal(&t, "SELECT * FROM t WHERE k = 1 AND c2 = 1"),
        "PRIMARY KEY column \"c2\" cannot be restricted as preceding column \"c1\" is not restricted"
    );
    let p = planned(&t, "SELECT * FROM t WHERE k = 1 AND c2 = 1 ALLOW FILTERING");
    assert!(p.clustering_eq.is_empty());
    assert_eq!(p.filters.len(), 1);
}

#[test]
fn two_opposite_bounds_on_one_column_make_one_slice() {
    let t = table(TABLE);
    let p = planned(&t, "SELECT * FROM t WHERE k = 1 AND c1 > 1 AND c1 <= 5");
    let Some((Some((lower, false)), Some((upper, true)))) = p.clustering_slice else {
        panic!("a two-sided slice: {:?}", p.clustering_slice)
    };
    assert_eq!((lower.len(), upper.len()), (1, 1));
    assert!(p.filters.is_empty());
    assert_eq!(
        refusal(&t, "SELECT * FROM t WHERE k = 1 AND c1 > 1 AND c1 >= 2"),
        "More than one restriction was found for the start bound on c1"
    );
}

#[test]
fn a_multi_column_equality_is_a_clustering_prefix() {
    let t = table(TABLE);
    let p = planned(&t, "SELECT * FROM t WHERE k = 1 AND (c1, c2) = (1, 2)");
    assert_eq!(p.clustering_eq.len(), 2);
    assert!(p.multi_filters.is_empty());
    let p = planned(&t, "SELECT * FROM t WHERE k = 1 AND (c1, c2) > (1, 2)");
    assert!(matches!(p.clustering_slice, Some((Some((ref b, false)), None)) if b.len() == 2));
    assert!(
        refusal(&t, "SELECT * FROM t WHERE k = 1 AND (c2, c1) = (1, 2)")
            .starts_with("Clustering columns must appear in the PRIMARY KEY order")
    );
}

#[test]
fn order_by_needs_the_partition_key_and_the_clustering_order() {
    let t = table(TABLE);
    assert!(refusal(&t, "SELECT * FROM t ORDER BY c1 DESC")
        .starts_with("ORDER BY is only supported when the partition key is restricted"));
    assert!(refusal(&t, "SELECT * FROM t WHERE k = 1 ORDER BY c2 DESC")
        .starts_with("Order by currently only supports the ordering of columns following"));
    assert_eq!(
        refusal(&t, "SELECT * FROM t WHERE k = 1 ORDER BY c1 ASC, c2 DESC"),
        "Unsupported order by relation"
    );
    let p = planned(&t, "SELECT * FROM t WHERE k = 1 ORDER BY c1 DESC, c2 DESC");
    assert!(p.reversed);
    let t = table(
        "CREATE TABLE t (k int, c int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)",
    );
    assert!(!planned(&t, "SELECT * FROM t WHERE k = 1 ORDER BY c DESC").reversed);
    assert!(planned(&t, "SELECT * FROM t WHERE k = 1 ORDER BY c ASC").reversed);
}

#[test]
fn order_by_with_in_on_the_partition_key_merges_partitions() {
    let t = table(TABLE);
    let p = planned(&t, "SELECT * FROM t WHERE k IN (1, 2) ORDER BY c1 DESC");
    assert_eq!(p.merge_order, vec![(1, true)]);
    assert!(p.reversed);
    // One partition is read in order already: nothing to merge.
    let p = planned(&t, "SELECT * FROM t WHERE k = 1 ORDER BY c1 DESC");
    assert!(p.merge_order.is_empty());
    let p = planned(&t, "SELECT * FROM t WHERE k IN ? ORDER BY c1 ASC");
    assert_eq!(p.merge_order, vec![(1, false)]);
}

#[test]
fn group_by_follows_the_key_and_may_skip_equal_columns() {
    let t = table(TABLE);
    let p = planned(
        &t,
        "SELECT k, c2, count(*) FROM t WHERE k = 1 AND c1 = 1 GROUP BY c2",
    );
    assert_eq!(p.group_by, 3);
    assert!(
        refusal(&t, "SELECT k, count(*) FROM t WHERE k = 1 GROUP BY c2")
            .starts_with("Group by currently only support groups of columns following")
    );
    let t = table("CREATE TABLE t (a int, b int, c int, PRIMARY KEY ((a, b), c))");
    assert_eq!(
        refusal(&t, "SELECT a, count(*) FROM t GROUP BY a"),
        "Group by is not supported on only a part of the partition key"
    );
}

#[test]
fn distinct_selects_partition_key_and_static_columns_only() {
    let t = table(TABLE);
    assert!(refusal(&t, "SELECT DISTINCT k, v FROM t").contains("(not v)"));
    assert!(planned(&t, "SELECT DISTINCT k, s FROM t").distinct);
    let t = table("CREATE TABLE t (a int, b int, c int, PRIMARY KEY ((a, b), c))");
    assert!(refusal(&t, "SELECT DISTINCT a FROM t").contains("(missing b)"));
}

#[test]
fn restricting_clustering_while_selecting_only_statics_is_refused() {
    let t = table(TABLE);
    assert_eq!(
        refusal(&t, "SELECT s FROM t WHERE k = 1 AND c1 = 1"),
        "Cannot restrict clustering columns when selecting only static columns"
    );
}

#[test]
fn bind_markers_get_their_receivers() {
    let t = table(TABLE);
    let (p, specs) = plan_with_specs(
        &t,
        "SELECT * FROM t WHERE k = ? AND c1 IN ? AND token(k) > ? LIMIT ?",
    );
    assert!(p.is_ok());
    let names: Vec<&str> = specs.iter().flatten().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["k", "in(c1)", "partition key token", "[limit]"]);
}
