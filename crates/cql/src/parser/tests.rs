//! Tree-shape tests: what the executor relies on from the AST.

use crate::ast::*;
use crate::{parse, parse_script};

fn stmt(cql: &str) -> Statement {
    match parse(cql) {
        Ok(p) => p.statement,
        Err(e) => panic!("{cql}: {e}"),
    }
}

fn select(cql: &str) -> SelectStatement {
    match stmt(cql) {
        Statement::Select(s) => *s,
        other => panic!("not a select: {other:?}"),
    }
}

fn insert_value(term_text: &str) -> Term {
    match stmt(&format!("INSERT INTO t (a) VALUES ({term_text})")) {
        Statement::Insert(i) => match i.values {
            InsertValues::Values { mut values, .. } => values.remove(0),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

fn id(s: &str) -> Ident {
    Ident::unquoted(s)
}

#[test]
fn bind_markers_are_numbered_in_source_order_with_names() {
    let p = parse("UPDATE t USING TTL ? SET a = :x, b = b + ? WHERE k = :key AND c IN ?").unwrap();
    assert_eq!(p.bind_count, 5);
    assert_eq!(
        p.bind_names,
        vec![None, Some("x".into()), None, Some("key".into()), None]
    );
    let Statement::Update(u) = p.statement else {
        panic!()
    };
    assert_eq!(
        u.using.ttl,
        Some(Term::Bind(BindMarker {
            index: 0,
            name: None
        }))
    );
    assert_eq!(
        u.where_clause[1],
        Relation::Column {
            column: id("c"),
            op: Operator::In,
            value: RelationValue::Single(Term::Bind(BindMarker {
                index: 4,
                name: None
            })),
        }
    );
}

#[test]
fn type_hint_backtracking_keeps_bind_numbering() {
    let p =
        parse("SELECT * FROM t WHERE a = (int) ? AND (b, c) = (?, ?) AND d = ('x', ?)").unwrap();
    assert_eq!(p.bind_count, 4);
    let s = match p.statement {
        Statement::Select(s) => s,
        _ => panic!(),
    };
    let Relation::Column {
        value: RelationValue::Single(Term::TypeHint { ty, term }),
        ..
    } = &s.where_clause[0]
    else {
        panic!("{:?}", s.where_clause[0])
    };
    assert_eq!(*ty, CqlTypeExpr::Native(NativeType::Int));
    assert_eq!(
        **term,
        Term::Bind(BindMarker {
            index: 0,
            name: None
        })
    );
}

#[test]
fn each_script_statement_numbers_markers_from_zero() {
    let ps =
        parse_script("SELECT * FROM t WHERE a = ?; INSERT INTO t (a, b) VALUES (?, ?);").unwrap();
    assert_eq!(
        ps.iter().map(|p| p.bind_count).collect::<Vec<_>>(),
        vec![1, 2]
    );
}

#[test]
fn unquoted_identifiers_are_lowercased_and_quoted_kept() {
    let s = select("SELECT MyCol, \"MyCol\" FROM MyKs.\"MyTable\"");
    assert_eq!(s.table.keyspace, Some(id("myks")));
    assert_eq!(
        s.table.name,
        Ident {
            name: "MyTable".into(),
            quoted: true
        }
    );
    let Projection::Items(items) = s.projection else {
        panic!()
    };
    assert_eq!(items[0].selector, Selector::Column(id("mycol")));
    assert_eq!(
        items[1].selector,
        Selector::Column(Ident {
            name: "MyCol".into(),
            quoted: true
        })
    );
}

#[test]
fn unreserved_keywords_work_as_column_names() {
    let s = select("SELECT key, type, ttl, count, json FROM t WHERE key = 'local'");
    let Projection::Items(items) = s.projection else {
        panic!()
    };
    assert_eq!(items.len(), 5);
    assert_eq!(items[2].selector, Selector::Column(id("ttl")));
    assert!(!s.json);
}

#[test]
fn json_and_distinct_are_modifiers_only_before_selectors() {
    assert!(select("SELECT JSON a FROM t").json);
    assert!(!select("SELECT json FROM t").json);
    assert!(!select("SELECT json, a FROM t").json);
    let s = select("SELECT DISTINCT k FROM t");
    assert!(s.distinct);
    assert!(!select("SELECT distinct AS d FROM t").distinct);
}

#[test]
fn select_clauses_are_captured() {
    let s = select(
        "SELECT a, count(*) AS n FROM ks.t WHERE a = 1 GROUP BY a ORDER BY b DESC \
         PER PARTITION LIMIT 2 LIMIT ? ALLOW FILTERING",
    );
    assert_eq!(s.group_by, vec![Selector::Column(id("a"))]);
    assert_eq!(
        s.order_by,
        vec![Ordering {
            column: id("b"),
            direction: OrderDirection::Desc
        }]
    );
    assert_eq!(s.per_partition_limit, Some(Term::Integer("2".into())));
    assert_eq!(
        s.limit,
        Some(Term::Bind(BindMarker {
            index: 0,
            name: None
        }))
    );
    assert!(s.allow_filtering);
    let Projection::Items(items) = s.projection else {
        panic!()
    };
    assert_eq!(
        items[1],
        SelectItem {
            selector: Selector::CountStar,
            alias: Some(id("n"))
        }
    );
}

#[test]
fn selectors_cover_functions_casts_and_subselections() {
    let s =
        select("SELECT writetime(v), CAST(a AS text), m['k'], l[1..2], u.f, ks.fn(a, 1) FROM t");
    let Projection::Items(items) = s.projection else {
        panic!()
    };
    let sels: Vec<String> = items.iter().map(|i| i.selector.to_string()).collect();
    assert_eq!(
        sels,
        [
            "writetime(v)",
            "cast(a AS text)",
            "m['k']",
            "l[1..2]",
            "u.f",
            "ks.fn(a, 1)"
        ]
    );
}

#[test]
fn relations_of_every_shape() {
    let s = select(
        "SELECT * FROM t WHERE token(a, b) > ? AND (c, d) IN ((1, 2), (3, 4)) AND m['k'] = 1 \
         AND s CONTAINS KEY 'x' AND v IS NOT NULL",
    );
    assert!(
        matches!(&s.where_clause[0], Relation::Token { columns, op: Operator::Gt, .. } if columns.len() == 2)
    );
    let Relation::MultiColumn {
        op: Operator::In,
        value: RelationValue::List(tuples),
        ..
    } = &s.where_clause[1]
    else {
        panic!("{:?}", s.where_clause[1])
    };
    assert_eq!(tuples.len(), 2);
    assert!(matches!(
        &s.where_clause[2],
        Relation::Element {
            op: Operator::Eq,
            ..
        }
    ));
    assert!(matches!(
        &s.where_clause[3],
        Relation::Column {
            op: Operator::ContainsKey,
            ..
        }
    ));
    assert!(matches!(
        &s.where_clause[4],
        Relation::Column {
            op: Operator::IsNotNull,
            ..
        }
    ));
}

#[test]
fn assignments_distinguish_append_prepend_and_subtract() {
    let Statement::Update(u) =
        stmt("UPDATE t SET c = c + 1, l = [0] + l, s = s - {'a'}, m['k'] = 'v', u.f = 3, n += 2, x = 5 WHERE k = 1")
    else {
        panic!()
    };
    assert_eq!(
        u.assignments[0],
        Assignment::Add {
            column: id("c"),
            value: Term::Integer("1".into())
        }
    );
    assert_eq!(
        u.assignments[1],
        Assignment::Prepend {
            column: id("l"),
            value: Term::List(vec![Term::Integer("0".into())])
        }
    );
    assert!(matches!(u.assignments[2], Assignment::Subtract { .. }));
    assert!(matches!(u.assignments[3], Assignment::SetElement { .. }));
    assert!(matches!(u.assignments[4], Assignment::SetField { .. }));
    assert!(matches!(u.assignments[5], Assignment::Add { .. }));
    assert_eq!(
        u.assignments[6],
        Assignment::Set {
            column: id("x"),
            value: Term::Integer("5".into())
        }
    );
}

#[test]
fn conditions_on_updates_and_inserts() {
    let Statement::Update(u) = stmt("UPDATE t SET a = 1 WHERE k = 1 IF m['x'] = 'y' AND b > 2")
    else {
        panic!()
    };
    let Some(WriteCondition::Columns(c)) = u.condition else {
        panic!()
    };
    assert_eq!(c[0].path, Some(SubPath::Element(Term::String("x".into()))));
    assert_eq!(c[1].op, Operator::Gt);
    let Statement::Insert(i) = stmt("INSERT INTO t (a) VALUES (1) IF NOT EXISTS USING TTL 10")
    else {
        panic!()
    };
    assert!(i.if_not_exists);
    assert_eq!(i.using.ttl, Some(Term::Integer("10".into())));
}

#[test]
fn repeated_using_attribute_keeps_the_last() {
    // Cassandra's grammar assigns each attribute as it is read, so a repeat is not an error.
    let Statement::Insert(i) = stmt("INSERT INTO t (a) VALUES (1) USING TTL 5 AND TTL 6") else {
        panic!()
    };
    assert_eq!(i.using.ttl, Some(Term::Integer("6".into())));
}

#[test]
fn literals_keep_their_text_and_fold_signs() {
    assert_eq!(insert_value("-12"), Term::Integer("-12".into()));
    assert_eq!(insert_value("1.5e3"), Term::Float("1.5e3".into()));
    assert_eq!(insert_value("-Infinity"), Term::Float("-Infinity".into()));
    assert_eq!(insert_value("nan"), Term::Float("NaN".into()));
    assert_eq!(insert_value("-1h30m"), Term::Duration("-1h30m".into()));
    assert_eq!(insert_value("0xCAFE"), Term::Blob("CAFE".into()));
    assert_eq!(insert_value("'it''s'"), Term::String("it's".into()));
    assert_eq!(insert_value("TRUE"), Term::Bool(true));
    assert_eq!(insert_value("null"), Term::Null);
}

#[test]
fn brace_literals_resolve_to_set_map_udt_or_empty() {
    assert_eq!(insert_value("{}"), Term::EmptyBrace);
    assert!(matches!(insert_value("{1, 2}"), Term::Set(v) if v.len() == 2));
    assert!(matches!(insert_value("{'a': 1}"), Term::Map(v) if v.len() == 1));
    assert!(matches!(insert_value("{a: 1, \"B\": {c: 2}}"), Term::Udt(v) if v[1].0.name == "B"));
    assert!(matches!(insert_value("(1, 'a')"), Term::Tuple(v) if v.len() == 2));
    assert!(matches!(insert_value("(text) 'a'"), Term::TypeHint { .. }));
    assert!(matches!(
        insert_value("1 + 2 * 3"),
        Term::Binary {
            op: ArithOp::Add,
            ..
        }
    ));
}

#[test]
fn terms_round_trip_through_display() {
    for t in [
        "[1, -2, 3.5]",
        "{'a': [1], 'b': []}",
        "{x: 'y', \"Z\": null}",
        "(1, 'it''s', 0xff, 123e4567-e89b-12d3-a456-426614174000)",
        "ks.f(now(), ?, :n)",
        "(frozen<map<text, list<int>>>) ?",
        "1 + 2 * -x(3)",
        "P1Y2M",
        "{}",
    ] {
        let first = insert_value(t);
        let printed = first.to_string();
        let second = insert_value(&printed);
        // Bind indexes restart per statement, so compare the printed forms too.
        assert_eq!(first, second, "{t} -> {printed}");
    }
}

#[test]
fn create_table_primary_keys_and_options() {
    let Statement::CreateTable(t) = stmt(
        "CREATE TABLE ks.t (a int, b text, c int, s int static, v list<frozen<udt>>, \
         PRIMARY KEY ((a, b), c)) WITH CLUSTERING ORDER BY (c DESC) AND comment = 'x' \
         AND compaction = {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 160}",
    ) else {
        panic!()
    };
    let pk = t.primary_key.unwrap();
    assert_eq!(pk.partition_key, vec![id("a"), id("b")]);
    assert_eq!(pk.clustering, vec![id("c")]);
    assert!(t.columns[3].is_static);
    assert_eq!(t.columns[4].ty.to_string(), "list<frozen<udt>>");
    assert_eq!(
        t.options.clustering_order,
        vec![(id("c"), OrderDirection::Desc)]
    );
    assert_eq!(
        t.options.properties[0],
        (
            "comment".into(),
            OptionValue::Constant(Term::String("x".into()))
        )
    );
    let OptionValue::Map(m) = &t.options.properties[1].1 else {
        panic!()
    };
    assert_eq!(
        m[1],
        ("sstable_size_in_mb".into(), Term::Integer("160".into()))
    );

    let Statement::CreateTable(t) = stmt("CREATE TABLE t (k int PRIMARY KEY, v int)") else {
        panic!()
    };
    assert_eq!(t.primary_key.unwrap().partition_key, vec![id("k")]);
    let Statement::CreateTable(t) = stmt("CREATE TABLE t (k int, v int)") else {
        panic!()
    };
    assert!(t.primary_key.is_none());
}

#[test]
fn create_index_targets_and_using() {
    let Statement::CreateIndex(i) = stmt(
        "CREATE CUSTOM INDEX IF NOT EXISTS ON ks.t (keys(m)) USING 'sai' WITH OPTIONS = {'a': 'b'}",
    ) else {
        panic!()
    };
    assert!(i.custom && i.if_not_exists && i.name.is_none());
    assert_eq!(
        i.targets,
        vec![IndexTarget {
            column: id("m"),
            kind: IndexTargetKind::Keys
        }]
    );
    assert_eq!(i.using.as_deref(), Some("sai"));
    assert_eq!(i.properties[0].0, "options");
}

#[test]
fn describe_forms() {
    let d = |s: &str| match stmt(s) {
        Statement::Describe(d) => d,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        d("DESCRIBE FULL SCHEMA").target,
        DescribeTarget::Schema { full: true }
    );
    assert_eq!(
        d("DESC KEYSPACE").target,
        DescribeTarget::Keyspace {
            only: false,
            name: None
        }
    );
    let k = d("DESCRIBE ONLY KEYSPACE ks WITH INTERNALS");
    assert_eq!(
        k.target,
        DescribeTarget::Keyspace {
            only: true,
            name: Some(id("ks"))
        }
    );
    assert!(k.with_internals);
    assert_eq!(d("DESCRIBE TABLES").target, DescribeTarget::Tables);
    assert!(matches!(
        d("DESCRIBE TYPE ks.t").target,
        DescribeTarget::Type(_)
    ));
    assert!(matches!(
        d("DESCRIBE MATERIALIZED VIEW v").target,
        DescribeTarget::MaterializedView(_)
    ));
    assert!(matches!(d("DESCRIBE ks.t").target, DescribeTarget::Name(n) if n.keyspace.is_some()));
    assert!(matches!(d("DESCRIBE type").target, DescribeTarget::Name(_)));
}

#[test]
fn batch_collects_children_in_order() {
    let Statement::Batch(b) = stmt(
        "BEGIN UNLOGGED BATCH USING TIMESTAMP 5 INSERT INTO t (a) VALUES (?); \
         UPDATE t SET a = ? WHERE k = 1; DELETE FROM t WHERE k = ? APPLY BATCH;",
    ) else {
        panic!()
    };
    assert_eq!(b.kind, BatchKind::Unlogged);
    assert_eq!(b.using.timestamp, Some(Term::Integer("5".into())));
    assert_eq!(b.statements.len(), 3);
    assert!(matches!(b.statements[2], BatchChild::Delete(_)));
}

#[test]
fn auth_statements_parse_to_their_variants() {
    let a = |s: &str| match stmt(s) {
        Statement::Auth(a) => *a,
        other => panic!("{other:?}"),
    };
    assert!(matches!(
        a("GRANT SELECT ON KEYSPACE ks TO bob"),
        AuthStatement::GrantPermissions {
            permissions: Permissions::One(Permission::Select),
            resource: Resource::Keyspace(_),
            ..
        }
    ));
    assert!(matches!(
        a("GRANT alice TO bob"),
        AuthStatement::GrantRole { .. }
    ));
    assert!(matches!(
        a("LIST ROLES"),
        AuthStatement::ListRoles {
            of: None,
            recursive: true
        }
    ));
    let AuthStatement::CreateRole(r) = a("CREATE ROLE r WITH PASSWORD = 'p' AND LOGIN = true")
    else {
        panic!()
    };
    assert_eq!(
        r.options,
        vec![RoleOption::Password("p".into()), RoleOption::Login(true)]
    );
}

#[test]
fn repeated_using_objectives_keep_the_last_value() {
    // Cassandra 5.0 accepts `USING TTL 1 AND TTL 2` (recorded in the corpus): the last wins.
    let p = parse("INSERT INTO t (a) VALUES (1) USING TTL 1 AND TTL 2").map(|p| p.statement);
    let Ok(Statement::Insert(i)) = p else {
        panic!("not an insert: {p:?}");
    };
    assert_eq!(i.using.ttl, Some(Term::Integer("2".into())));
}

#[test]
fn cast_keeps_the_written_type_and_takes_only_native_types() {
    let p = parse("SELECT CAST(v AS varchar) FROM t").map(|p| p.statement);
    let Ok(Statement::Select(s)) = p else {
        panic!("not a select: {p:?}");
    };
    let Projection::Items(items) = &s.projection else {
        panic!("no items");
    };
    assert!(matches!(&items[0].selector, Selector::Cast { written, .. } if written == "varchar"));
    assert!(parse("SELECT CAST(v AS nosuchtype) FROM t").is_err());
    assert!(parse("SELECT CAST(v AS list<int>) FROM t").is_err());
}

#[test]
fn conditions_on_elements_and_aggregate_function_names_follow_cassandras_grammar() {
    let err = parse("UPDATE t SET l = [1] WHERE k = 0 IF l[1] CONTAINS 3").unwrap_err();
    assert!(
        err.message
            .contains("no viable alternative at input 'CONTAINS'"),
        "{err}"
    );
    assert!(parse("UPDATE t SET l = [1] WHERE k = 0 IF l CONTAINS 3").is_ok());
    let err = parse("CREATE AGGREGATE ks.a(int) SFUNC ks.f STYPE int").unwrap_err();
    assert!(err.message.contains("expecting K_STYPE"), "{err}");
    let err = parse("CREATE AGGREGATE ks.a(int) SFUNC f STYPE int FINALFUNC ks.g").unwrap_err();
    assert!(err.message.contains("expecting EOF"), "{err}");
    assert!(parse("CREATE AGGREGATE ks.a(int) SFUNC f STYPE int FINALFUNC g INITCOND 1").is_ok());
}

#[test]
fn create_type_takes_a_trailing_comma() {
    let Statement::CreateType(t) = stmt("CREATE TYPE ks.t (a int, s set<frozen<u>>,)") else {
        panic!("not a CREATE TYPE");
    };
    assert_eq!(t.fields.len(), 2);
}
