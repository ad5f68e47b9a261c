//! Helpers for analysing WHERE restrictions: receiver types of bind markers, the values a column
//! is restricted to, and whether a secondary index answers a restriction.

use super::ValuesOf;
use crate::exec::error::{invalid, ExecResult};
use crate::exec::key_values::note_binds;
use crate::exec::BindSpec;
use helenus_cql::ast::{Operator, RelationValue};
use helenus_schema::TableMeta;
use helenus_types::CqlType;

pub(super) fn list_of(t: &CqlType) -> CqlType {
    CqlType::List {
        element: Box::new(t.clone()),
        frozen: false,
    }
}

pub(super) fn values_of(
    t: &TableMeta,
    col: &str,
    ty: &CqlType,
    op: Operator,
    v: &RelationValue,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<ValuesOf> {
    match (op, v) {
        (Operator::Eq, RelationValue::Single(term)) => {
            note_binds(term, BindSpec::new(t, col, ty.clone()), specs)?;
            Ok(ValuesOf::Terms(vec![term.clone()]))
        }
        (Operator::In, RelationValue::List(terms)) => {
            for term in terms {
                note_binds(term, BindSpec::new(t, col, ty.clone()), specs)?;
            }
            Ok(ValuesOf::Terms(terms.clone()))
        }
        (Operator::In, RelationValue::Single(term)) => {
            note_binds(
                term,
                BindSpec::new(t, &format!("in({col})"), list_of(ty)),
                specs,
            )?;
            Ok(ValuesOf::BindList(term.clone()))
        }
        _ => invalid(format!("Unsupported restriction on {col}")),
    }
}

/// Whether a secondary index on column `col` answers `op`: `Some(true)` for a storage-attached
/// index (several of which combine in one query), `Some(false)` for a legacy index (one per query).
pub(super) fn index_serves(t: &TableMeta, col: usize, op: Operator) -> Option<bool> {
    use helenus_types::NativeType as N;
    let c = &t.columns[col];
    let quoted = crate::exec::cql_text::maybe_quote(&c.name);
    // SAI indexes literal types by term: equality only.
    let literal = matches!(
        c.cql_type,
        CqlType::Native(N::Ascii | N::Varchar | N::Boolean | N::Uuid)
    );
    t.indexes.iter().find_map(|i| {
        let target = i
            .options
            .get("target")
            .map(String::as_str)
            .unwrap_or_default();
        let sai = i
            .options
            .get("class_name")
            .is_some_and(|cl| crate::exec::ddl::is_sai_class(cl));
        let served = match op {
            Operator::Eq => target == quoted || target == format!("full({quoted})"),
            Operator::Contains => target == format!("values({quoted})"),
            Operator::ContainsKey => target == format!("keys({quoted})"),
            Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte => {
                sai && !literal && target == quoted
            }
            _ => false,
        };
        served.then_some(sai)
    })
}

/// Whether an `entries(m)` index answers `m[key] = value`.
pub(super) fn entries_indexed(t: &TableMeta, col: usize) -> bool {
    let quoted = crate::exec::cql_text::maybe_quote(&t.columns[col].name);
    let want = format!("entries({quoted})");
    t.indexes
        .iter()
        .any(|i| i.options.get("target").is_some_and(|x| *x == want))
}
