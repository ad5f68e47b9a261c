//! Bind markers in a SELECT's projection (`m[?]`, `blobAsInt(?)`, `(int)?`,
//! `similarity_cosine(v, ?)`): their receivers for the PREPARED metadata, named as Cassandra names
//! them. Their values are folded in when the projection is compiled again at execution.

use super::compile::{as_term, compile_one, selector_name};
use super::Sel;
use crate::exec::error::ExecResult;
use crate::exec::key_values::{has_bind, note_binds};
use crate::exec::values::{self, Binds};
use crate::exec::BindSpec;
use helenus_cql::ast::{Projection, Selector, Term};
use helenus_schema::TableMeta;
use helenus_types::CqlType;

/// Whether any selector of the projection holds a bind marker.
pub fn projection_has_bind(projection: &Projection) -> bool {
    match projection {
        Projection::Star => false,
        Projection::Items(items) => items.iter().any(|i| selector_has_bind(&i.selector)),
    }
}

fn selector_has_bind(s: &Selector) -> bool {
    match s {
        Selector::Term(t) => has_bind(t),
        Selector::FunctionCall { args, .. } => args.iter().any(selector_has_bind),
        Selector::Element { selector, key } => selector_has_bind(selector) || has_bind(key),
        Selector::Slice { selector, from, to } => {
            selector_has_bind(selector)
                || from.as_ref().is_some_and(has_bind)
                || to.as_ref().is_some_and(has_bind)
        }
        Selector::Cast { selector, .. }
        | Selector::WriteTime(selector)
        | Selector::MaxWriteTime(selector)
        | Selector::Ttl(selector)
        | Selector::Field { selector, .. }
        | Selector::TypeHint { selector, .. }
        | Selector::Negate(selector) => selector_has_bind(selector),
        Selector::Binary { left, right, .. } => selector_has_bind(left) || selector_has_bind(right),
        Selector::List(items) | Selector::Set(items) | Selector::Tuple(items) => {
            items.iter().any(selector_has_bind)
        }
        Selector::Map(entries) => entries
            .iter()
            .any(|(k, v)| selector_has_bind(k) || selector_has_bind(v)),
        Selector::Column(_) | Selector::CountStar => false,
    }
}

/// Records the receivers of the projection's markers: `key(m)` / `value(s)` for an element or
/// slice bound, `[selection]` with the declared type for a function argument or a hinted marker.
pub fn note_selector_binds(
    t: &TableMeta,
    projection: &Projection,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<()> {
    if let Projection::Items(items) = projection {
        for item in items {
            note_selector(t, &item.selector, specs)?;
        }
    }
    Ok(())
}

fn note_selector(t: &TableMeta, s: &Selector, specs: &mut Vec<Option<BindSpec>>) -> ExecResult<()> {
    if !selector_has_bind(s) {
        return Ok(());
    }
    let planning = Binds::planning();
    match s {
        Selector::Element { selector, key } => {
            note_element(t, selector, [Some(key), None], specs)?;
            note_selector(t, selector, specs)
        }
        Selector::Slice { selector, from, to } => {
            note_element(t, selector, [from.as_ref(), to.as_ref()], specs)?;
            note_selector(t, selector, specs)
        }
        Selector::FunctionCall { args, .. } => {
            if let (Sel::Func { arg_types, .. }, _) = compile_one(t, s, &planning)? {
                for (a, ty) in args.iter().zip(arg_types) {
                    if let Some(term) = as_term(a) {
                        note_binds(&term, BindSpec::new(t, "[selection]", ty), specs)?;
                    }
                }
            }
            args.iter().try_for_each(|a| note_selector(t, a, specs))
        }
        Selector::TypeHint { ty, selector } => match selector.as_ref() {
            Selector::Term(term) => {
                let hinted = values::resolve_type(ty, None)?;
                note_binds(term, BindSpec::new(t, "[selection]", hinted), specs)
            }
            other => note_selector(t, other, specs),
        },
        Selector::Cast { selector, .. }
        | Selector::Field { selector, .. }
        | Selector::WriteTime(selector)
        | Selector::MaxWriteTime(selector)
        | Selector::Ttl(selector)
        | Selector::Negate(selector) => note_selector(t, selector, specs),
        Selector::Binary { left, right, .. } => {
            note_selector(t, left, specs)?;
            note_selector(t, right, specs)
        }
        _ => Ok(()),
    }
}

/// The key (map) or element (set) receivers of `c[?]` and `c[?..?]`.
fn note_element(
    t: &TableMeta,
    collection: &Selector,
    bounds: [Option<&Term>; 2],
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<()> {
    let (_, coll) = compile_one(t, collection, &Binds::planning())?;
    let name = selector_name(collection);
    let (name, ty) = match &coll {
        CqlType::Map { key, .. } => (format!("key({name})"), (**key).clone()),
        CqlType::Set { element, .. } => (format!("value({name})"), (**element).clone()),
        _ => return Ok(()),
    };
    for term in bounds.into_iter().flatten() {
        note_binds(term, BindSpec::new(t, &name, ty.clone()), specs)?;
    }
    Ok(())
}
