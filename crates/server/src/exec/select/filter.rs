//! Row filters: restrictions evaluated on each row (ALLOW FILTERING, system tables, partial keys).

use super::{Filter, MultiFilter};
use crate::exec::error::{invalid, ExecResult};
use crate::exec::rows::Row;
use crate::exec::values::{self, Binds, Bound};
use bytes::Bytes;
use helenus_cql::ast::{Operator, RelationValue};
use helenus_schema::ColumnMeta;
use helenus_types::{CqlType, CqlValue};
use std::cmp::Ordering;

fn one(term_value: &RelationValue) -> Option<&helenus_cql::ast::Term> {
    match term_value {
        RelationValue::Single(t) => Some(t),
        _ => None,
    }
}

fn cmp_op(op: Operator, o: Ordering) -> bool {
    match op {
        Operator::Eq => o == Ordering::Equal,
        Operator::Neq => o != Ordering::Equal,
        Operator::Lt => o == Ordering::Less,
        Operator::Lte => o != Ordering::Greater,
        Operator::Gt => o == Ordering::Greater,
        Operator::Gte => o != Ordering::Less,
        _ => false,
    }
}

/// Whether a row satisfies a multi-column relation: tuples compare component by component in
/// each type's natural order, whatever the clustering order (as Cassandra defines them).
pub fn matches_multi(
    t: &helenus_schema::TableMeta,
    row: &Row,
    f: &MultiFilter,
    binds: &Binds<'_>,
) -> ExecResult<bool> {
    let cmp_with = |term: &helenus_cql::ast::Term| compare_tuple(t, row, f, term, binds);
    match (&f.op, &f.value) {
        (Operator::In, RelationValue::List(terms)) => {
            for term in terms {
                if cmp_with(term)? == Some(Ordering::Equal) {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        (Operator::In, RelationValue::Single(term)) => in_bound_tuples(t, row, f, term, binds),
        (op, RelationValue::Single(term)) => Ok(cmp_with(term)?.is_some_and(|o| cmp_op(*op, o))),
        _ => invalid("Unsupported multi-column relation"),
    }
}

/// The row's columns of `f` compared with a tuple (literal or bound); None when a side is null.
fn compare_tuple(
    t: &helenus_schema::TableMeta,
    row: &Row,
    f: &MultiFilter,
    term: &helenus_cql::ast::Term,
    binds: &Binds<'_>,
) -> ExecResult<Option<Ordering>> {
    let helenus_cql::ast::Term::Tuple(items) = term else {
        let tuple_ty = CqlType::Tuple(
            f.columns
                .iter()
                .map(|&i| t.columns[i].cql_type.clone())
                .collect(),
        );
        // A bound tuple: compare its serialized components.
        let Bound::Value(b) = values::eval(term, &tuple_ty, "tuple", binds)? else {
            return Ok(None);
        };
        let Ok(CqlValue::Tuple(parts)) = helenus_types::deserialize(&tuple_ty, &b) else {
            return Ok(None);
        };
        let mut o = Ordering::Equal;
        for (&i, part) in f.columns.iter().zip(parts) {
            let (Some(cell), Some(part)) = (row.cells.get(i).cloned().flatten(), part) else {
                return Ok(None);
            };
            o = helenus_types::compare_serialized(
                &t.columns[i].cql_type,
                &cell,
                &values::serialize(&part),
            );
            if o != Ordering::Equal {
                break;
            }
        }
        return Ok(Some(o));
    };
    for (&i, item) in f.columns.iter().zip(items) {
        let c = &t.columns[i];
        let Bound::Value(want) = values::eval(item, &c.cql_type, &c.name, binds)? else {
            return invalid(format!(
                "Invalid null value in condition for column {}",
                c.name
            ));
        };
        let Some(cell) = row.cells.get(i).cloned().flatten() else {
            return Ok(None);
        };
        let o = helenus_types::compare_serialized(&c.cql_type, &cell, &want);
        if o != Ordering::Equal {
            return Ok(Some(o));
        }
    }
    Ok(Some(Ordering::Equal))
}

/// `(a, b) IN ?`: whether the row's columns equal one tuple of the bound list.
fn in_bound_tuples(
    t: &helenus_schema::TableMeta,
    row: &Row,
    f: &MultiFilter,
    term: &helenus_cql::ast::Term,
    binds: &Binds<'_>,
) -> ExecResult<bool> {
    let list_ty = CqlType::List {
        element: Box::new(CqlType::Tuple(
            f.columns
                .iter()
                .map(|&i| t.columns[i].cql_type.clone())
                .collect(),
        )),
        frozen: true,
    };
    let Bound::Value(b) = values::eval(term, &list_ty, "in", binds)? else {
        return Ok(false);
    };
    let Ok(CqlValue::List(items)) = helenus_types::deserialize(&list_ty, &b) else {
        return Ok(false);
    };
    for it in items {
        let CqlValue::Tuple(parts) = it else { continue };
        let mut all = true;
        for (&i, part) in f.columns.iter().zip(parts) {
            let cell = row.cells.get(i).cloned().flatten();
            let part = part.map(|p| values::serialize(&p));
            if cell != part {
                all = false;
                break;
            }
        }
        if all {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether a row's cell satisfies one filter.
pub fn matches(
    c: &ColumnMeta,
    cell: &Option<Bytes>,
    f: &Filter,
    binds: &Binds<'_>,
) -> ExecResult<bool> {
    if f.op == Operator::IsNotNull {
        return Ok(cell.is_some());
    }
    if let Some(key) = &f.key {
        return matches_entry(c, cell, key, f, binds);
    }
    match f.op {
        Operator::Contains
        | Operator::ContainsKey
        | Operator::NotContains
        | Operator::NotContainsKey => matches_contains(c, cell, f, binds),
        Operator::In | Operator::NotIn => matches_in(c, cell, f, binds),
        Operator::Between => matches_between(c, cell, f, binds),
        Operator::Like => invalid(format!(
            "LIKE restriction is only supported on properly indexed columns. {} LIKE ... is not valid.",
            c.name
        )),
        _ => matches_comparison(c, cell, f, binds),
    }
}

/// `m[k] op v` on a map column.
fn matches_entry(
    c: &ColumnMeta,
    cell: &Option<Bytes>,
    key: &helenus_cql::ast::Term,
    f: &Filter,
    binds: &Binds<'_>,
) -> ExecResult<bool> {
    let ty = &c.cql_type;
    let (
        CqlType::Map {
            key: kt, value: vt, ..
        },
        Some(cell),
    ) = (ty, cell)
    else {
        return Ok(false);
    };
    let Some(CqlValue::Map(entries)) = helenus_types::deserialize(ty, cell).ok() else {
        return Ok(false);
    };
    let Some(kv) = values::to_value(key, kt, &c.name, binds)? else {
        return Ok(false);
    };
    let want = one(&f.value)
        .map(|t| values::eval(t, vt, &c.name, binds))
        .transpose()?;
    let k_ser = values::serialize(&kv);
    for (k, v) in entries {
        if values::serialize(&k) == k_ser {
            let v_ser = values::serialize(&v);
            return Ok(match &want {
                Some(Bound::Value(w)) => {
                    cmp_op(f.op, helenus_types::compare_serialized(vt, &v_ser, w))
                }
                _ => false,
            });
        }
    }
    Ok(false)
}

/// `CONTAINS`, `CONTAINS KEY` and their negations on a collection column.
fn matches_contains(
    c: &ColumnMeta,
    cell: &Option<Bytes>,
    f: &Filter,
    binds: &Binds<'_>,
) -> ExecResult<bool> {
    let ty = &c.cql_type;
    let Some(cell) = cell else { return Ok(false) };
    let Some(t) = one(&f.value) else {
        return invalid("CONTAINS takes one value");
    };
    let decoded = helenus_types::deserialize(ty, cell).ok();
    let keys = matches!(f.op, Operator::ContainsKey | Operator::NotContainsKey);
    let (elems, elem_ty): (Vec<CqlValue>, CqlType) = match (decoded, ty) {
        (Some(CqlValue::List(v)), CqlType::List { element, .. }) => (v, (**element).clone()),
        (Some(CqlValue::Set(v)), CqlType::Set { element, .. }) => (v, (**element).clone()),
        (Some(CqlValue::Map(m)), CqlType::Map { key, .. }) if keys => {
            (m.into_iter().map(|(k, _)| k).collect(), (**key).clone())
        }
        (Some(CqlValue::Map(m)), CqlType::Map { value, .. }) => {
            (m.into_iter().map(|(_, v)| v).collect(), (**value).clone())
        }
        _ => return Ok(false),
    };
    let Bound::Value(want) = values::eval(t, &elem_ty, &c.name, binds)? else {
        return Ok(false);
    };
    let found = elems.iter().any(|e| values::serialize(e) == want);
    Ok(
        if matches!(f.op, Operator::Contains | Operator::ContainsKey) {
            found
        } else {
            !found
        },
    )
}

/// `IN` and `NOT IN`, with a list of terms or a bound list.
fn matches_in(
    c: &ColumnMeta,
    cell: &Option<Bytes>,
    f: &Filter,
    binds: &Binds<'_>,
) -> ExecResult<bool> {
    let ty = &c.cql_type;
    let mut wanted = Vec::new();
    match &f.value {
        RelationValue::List(terms) => {
            for t in terms {
                if let Bound::Value(b) = values::eval(t, ty, &c.name, binds)? {
                    wanted.push(b);
                }
            }
        }
        RelationValue::Single(t) => {
            let list_ty = CqlType::List {
                element: Box::new(ty.clone()),
                frozen: false,
            };
            if let Some(CqlValue::List(items)) = values::to_value(t, &list_ty, &c.name, binds)? {
                wanted.extend(items.iter().map(values::serialize));
            }
        }
        RelationValue::Between(..) => return invalid("BETWEEN is not supported here"),
    }
    let found = cell.as_ref().is_some_and(|v| {
        wanted
            .iter()
            .any(|w| helenus_types::compare_serialized(ty, v, w) == Ordering::Equal)
    });
    Ok(if f.op == Operator::In { found } else { !found })
}

/// `BETWEEN lo AND hi`, both ends included.
fn matches_between(
    c: &ColumnMeta,
    cell: &Option<Bytes>,
    f: &Filter,
    binds: &Binds<'_>,
) -> ExecResult<bool> {
    let ty = &c.cql_type;
    let RelationValue::Between(lo, hi) = &f.value else {
        return Ok(false);
    };
    let Some(cell) = cell else { return Ok(false) };
    let (Bound::Value(l), Bound::Value(h)) = (
        values::eval(lo, ty, &c.name, binds)?,
        values::eval(hi, ty, &c.name, binds)?,
    ) else {
        return Ok(false);
    };
    Ok(
        helenus_types::compare_serialized(ty, cell, &l) != Ordering::Less
            && helenus_types::compare_serialized(ty, cell, &h) != Ordering::Greater,
    )
}

/// `=`, `!=`, `<`, `<=`, `>`, `>=` against one value.
fn matches_comparison(
    c: &ColumnMeta,
    cell: &Option<Bytes>,
    f: &Filter,
    binds: &Binds<'_>,
) -> ExecResult<bool> {
    let ty = &c.cql_type;
    let Some(t) = one(&f.value) else {
        return invalid("unsupported relation");
    };
    let want = values::eval(t, ty, &c.name, binds)?;
    let Some(cell) = cell else { return Ok(false) };
    match want {
        Bound::Value(w) => Ok(cmp_op(
            f.op,
            helenus_types::compare_serialized(ty, cell, &w),
        )),
        Bound::Null => invalid(format!("Unsupported null value for column {}", c.name)),
        Bound::Unset => invalid(format!("Unsupported unset value for column {}", c.name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::error::ExecError;
    use helenus_cql::ast::{Relation, Statement};
    use helenus_schema::{KeyspaceKind, KeyspaceMeta, TableMeta};

    fn table() -> TableMeta {
        let ks = KeyspaceMeta::new("ks", KeyspaceKind::User, Default::default(), true);
        let ddl = "CREATE TABLE t (k int PRIMARY KEY, l list<int>, m map<text, int>, v int)";
        let Statement::CreateTable(c) = helenus_cql::parse(ddl).unwrap().statement else {
            panic!("not a CREATE TABLE")
        };
        crate::exec::ddl::build_table(&ks, &c).unwrap()
    }

    /// Whether `cell` of the column the WHERE clause of `select` names passes its relation.
    fn check(select: &str, cell: Option<CqlValue>) -> ExecResult<bool> {
        let t = table();
        let Statement::Select(s) = helenus_cql::parse(select).unwrap().statement else {
            panic!("not a SELECT: {select}")
        };
        let (column, key, op, value) = match s.where_clause.into_iter().next() {
            Some(Relation::Column { column, op, value }) => (column, None, op, value),
            Some(Relation::Element {
                column,
                key,
                op,
                value,
            }) => (column, Some(key), op, RelationValue::Single(value)),
            other => panic!("unexpected relation {other:?}"),
        };
        let c = t.column(&column.name).unwrap();
        let f = Filter {
            column: t.column_index(&column.name).unwrap(),
            op,
            value,
            key,
        };
        let cell = cell.map(|v| values::serialize(&v));
        matches(c, &cell, &f, &Binds::none())
    }

    fn list(items: &[i32]) -> Option<CqlValue> {
        Some(CqlValue::List(
            items.iter().map(|&i| CqlValue::Int(i)).collect(),
        ))
    }

    #[test]
    fn contains_looks_at_elements_and_its_negation_inverts_it() {
        let q = "SELECT * FROM t WHERE l CONTAINS 2";
        assert!(check(q, list(&[1, 2])).unwrap());
        assert!(!check(q, list(&[1, 3])).unwrap());
        assert!(!check(q, None).unwrap());
        let q = "SELECT * FROM t WHERE l NOT CONTAINS 2";
        assert!(!check(q, list(&[1, 2])).unwrap());
    }

    #[test]
    fn map_entries_compare_the_value_under_the_key() {
        let m = Some(CqlValue::Map(vec![(
            CqlValue::Text("a".into()),
            CqlValue::Int(5),
        )]));
        assert!(check("SELECT * FROM t WHERE m['a'] = 5", m.clone()).unwrap());
        assert!(check("SELECT * FROM t WHERE m['a'] > 4", m.clone()).unwrap());
        assert!(!check("SELECT * FROM t WHERE m['b'] = 5", m).unwrap());
    }

    #[test]
    fn in_between_and_comparisons_use_the_column_type_order() {
        let three = Some(CqlValue::Int(3));
        assert!(check("SELECT * FROM t WHERE v IN (1, 3)", three.clone()).unwrap());
        assert!(check("SELECT * FROM t WHERE v NOT IN (1, 2)", three.clone()).unwrap());
        assert!(!check("SELECT * FROM t WHERE v BETWEEN 1 AND 2", three.clone()).unwrap());
        assert!(check("SELECT * FROM t WHERE v BETWEEN 3 AND 4", three.clone()).unwrap());
        assert!(check("SELECT * FROM t WHERE v >= 3", three.clone()).unwrap());
        assert!(!check("SELECT * FROM t WHERE v < 3", three.clone()).unwrap());
        assert!(!check("SELECT * FROM t WHERE v = 3", None).unwrap());
        assert!(matches!(
            check("SELECT * FROM t WHERE v = null", three),
            Err(ExecError::Invalid(m)) if m.contains("null value for column v")
        ));
    }
}
