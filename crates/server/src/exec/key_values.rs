//! The values a key column is restricted to (`=`, `IN (...)`, `IN ?`), the receiver types of their
//! bind markers, and their expansion into key bytes at execution. Shared by SELECT, INSERT/UPDATE/
//! DELETE and LWT conditions, so it sits below all of them.

use crate::exec::error::{ExecError, ExecResult};
use crate::exec::values::{self, Binds, Bound};
use crate::exec::BindSpec;
use bytes::Bytes;
use helenus_cql::ast::Term;
use helenus_types::CqlType;

/// The values one column is restricted to: `=` gives one term, `IN (...)` several, `IN ?` a list.
#[derive(Debug, Clone)]
pub enum ValuesOf {
    Terms(Vec<Term>),
    BindList(Term),
}

/// Records the receiver of every bind marker in `term`, named as Cassandra names it (drivers encode
/// bound values with these types): `u.f` for a UDT literal's field, `c[i]` for a tuple literal's
/// component, `value(v)` for a vector literal's element, `argN(ks.f)` for a function argument.
/// Markers inside list, set and map literals are refused, as Cassandra refuses them.
pub fn note_binds(
    term: &Term,
    spec: BindSpec,
    specs: &mut Vec<Option<BindSpec>>,
) -> ExecResult<()> {
    match term {
        Term::Bind(m) => {
            if specs.len() <= m.index {
                specs.resize(m.index + 1, None);
            }
            specs[m.index] = Some(spec);
        }
        Term::List(items) | Term::Set(items) => match &spec.ty {
            CqlType::Vector { element, .. } => {
                // A pseudo-receiver (`[selection]`) names its elements as itself.
                let name = if spec.name.starts_with('[') {
                    spec.name.clone()
                } else {
                    format!("value({})", spec.name)
                };
                for item in items {
                    let ty = (**element).clone();
                    note_binds(item, spec.renamed(&name, ty), specs)?;
                }
            }
            CqlType::List { .. } | CqlType::Set { .. } | CqlType::Map { .. }
                if items.iter().any(has_bind) =>
            {
                return Err(markers_in_collection(term, &spec));
            }
            _ => {}
        },
        Term::Map(entries) if entries.iter().any(|(k, v)| has_bind(k) || has_bind(v)) => {
            return Err(markers_in_collection(term, &spec));
        }
        Term::Tuple(items) => {
            if let CqlType::Tuple(types) = &spec.ty {
                for (i, (item, ty)) in items.iter().zip(types).enumerate() {
                    let name = format!("{}[{i}]", spec.name);
                    note_binds(item, spec.renamed(&name, ty.clone()), specs)?;
                }
            }
        }
        Term::Udt(fields) => {
            if let CqlType::Udt { def, .. } = &spec.ty {
                for (field, value) in fields {
                    if let Some((_, ty)) = def.fields.iter().find(|(n, _)| *n == field.name) {
                        let name = format!("{}.{}", spec.name, field.name);
                        note_binds(value, spec.renamed(&name, ty.clone()), specs)?;
                    }
                }
            }
        }
        Term::TypeHint { term, ty } => {
            if let Ok(t) = values::resolve_type(ty, None) {
                note_binds(term, BindSpec { ty: t, ..spec }, specs)?;
            }
        }
        Term::FunctionCall { name, args } => {
            let types = values::param_types(&name.name.name, args)?;
            let fname = format!(
                "{}.{}",
                name.keyspace.as_ref().map_or("system", |k| k.name.as_str()),
                name.name.name.to_ascii_lowercase()
            );
            for (i, (a, ty)) in args.iter().zip(types).enumerate() {
                if let Some(ty) = ty {
                    note_binds(a, spec.renamed(&format!("arg{i}({fname})"), ty), specs)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Whether a bind marker appears anywhere in `term`.
pub fn has_bind(term: &Term) -> bool {
    match term {
        Term::Bind(_) => true,
        Term::List(items) | Term::Set(items) | Term::Tuple(items) => items.iter().any(has_bind),
        Term::Map(entries) => entries.iter().any(|(k, v)| has_bind(k) || has_bind(v)),
        Term::Udt(fields) => fields.iter().any(|(_, v)| has_bind(v)),
        Term::TypeHint { term, .. } | Term::Negate(term) => has_bind(term),
        Term::FunctionCall { args, .. } => args.iter().any(has_bind),
        Term::Binary { left, right, .. } => has_bind(left) || has_bind(right),
        _ => false,
    }
}

fn markers_in_collection(term: &Term, spec: &BindSpec) -> ExecError {
    let kind = match (term, &spec.ty) {
        (Term::List(_), _) => "list",
        (Term::Set(_), CqlType::Map { .. }) | (Term::Map(_), _) => "map",
        _ => "set",
    };
    ExecError::Invalid(format!(
        "Invalid {kind} literal for {}: bind variables are not supported inside collection literals",
        spec.name
    ))
}

pub fn expand_values(
    v: &ValuesOf,
    ty: &CqlType,
    name: &str,
    binds: &Binds<'_>,
) -> ExecResult<Vec<Bytes>> {
    let mut out = Vec::new();
    match v {
        ValuesOf::Terms(terms) => {
            for term in terms {
                match values::eval(term, ty, name, binds)? {
                    Bound::Value(b) => out.push(b),
                    Bound::Null => {
                        return Err(ExecError::Invalid(format!(
                            "Invalid null value in condition for column {name}"
                        )))
                    }
                    Bound::Unset => {
                        return Err(ExecError::Invalid(format!(
                            "Invalid unset value for column {name}"
                        )))
                    }
                }
            }
        }
        ValuesOf::BindList(term) => {
            let list_ty = CqlType::List {
                element: Box::new(ty.clone()),
                frozen: false,
            };
            match values::to_value(term, &list_ty, name, binds)? {
                Some(helenus_types::CqlValue::List(items)) => {
                    out.extend(items.iter().map(values::serialize))
                }
                _ => {
                    return Err(ExecError::Invalid(format!(
                        "Invalid null value for IN restriction on {name}"
                    )))
                }
            }
        }
    }
    if out.len() > 1 {
        out.sort_by(|a, b| helenus_types::compare_serialized(ty, a, b));
        out.dedup();
    }
    Ok(out)
}

/// Cassandra's limits on partition key values: a single-component key may not be empty, and no
/// component may exceed 64 KiB (its length is a u16 in the composite encoding).
pub fn check_key_components(lists: &[Vec<Bytes>]) -> ExecResult<()> {
    for b in lists.iter().flatten() {
        if lists.len() == 1 && b.is_empty() {
            return Err(ExecError::Invalid("Key may not be empty".into()));
        }
        if b.len() > u16::MAX as usize {
            return Err(ExecError::Invalid(format!(
                "Key length of {} is longer than maximum of 65535",
                b.len()
            )));
        }
    }
    Ok(())
}

/// Most key combinations one statement's IN restrictions may expand to, per key (partition or
/// clustering). Cassandra 5.0 leaves its `in_select_cartesian_product_fail_threshold`
/// guardrail off by default and builds whatever is asked for; `pk IN (60 values) AND c1 IN (60)
/// AND c2 IN (60) AND c3 IN (60)` (13M clusterings from a 1 KB statement) then held a node for
/// minutes, so Helenus always applies a fail threshold, with the guardrail's message.
pub const MAX_IN_CARTESIAN_PRODUCT: usize = 10_000;

/// Every combination of one value from each list (the IN restrictions on `what`'s columns), or
/// an InvalidRequest when there would be more than [`MAX_IN_CARTESIAN_PRODUCT`]; the size is
/// checked before anything is built.
pub fn cartesian(lists: &[Vec<Bytes>], what: &str) -> ExecResult<Vec<Vec<Bytes>>> {
    let count = lists
        .iter()
        .try_fold(1usize, |n, l| n.checked_mul(l.len()))
        .unwrap_or(usize::MAX);
    if count > MAX_IN_CARTESIAN_PRODUCT {
        return Err(ExecError::Invalid(format!(
            "Aborting query because the cartesian product of the IN restrictions on {what} \
             produces {count} values, this exceeds fail threshold of {MAX_IN_CARTESIAN_PRODUCT}."
        )));
    }
    Ok(cartesian_unchecked(lists))
}

fn cartesian_unchecked(lists: &[Vec<Bytes>]) -> Vec<Vec<Bytes>> {
    let mut acc: Vec<Vec<Bytes>> = vec![Vec::new()];
    for l in lists {
        let mut next = Vec::with_capacity(acc.len() * l.len());
        for prefix in &acc {
            for v in l {
                let mut p = prefix.clone();
                p.push(v.clone());
                next.push(p);
            }
        }
        acc = next;
    }
    acc
}
