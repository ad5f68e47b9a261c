//! Type validation for declared column and field types, and user-type rewriting (which types
//! mention a user type, replacing a user type's definition inside other types).

use crate::exec::error::{invalid, ExecError, ExecResult};
use helenus_cql::ast::{self};
use helenus_types::{CqlType, UserType};

/// Cassandra's rules for what a declared type may contain (`CQL3Type.Raw.prepare`), checked on
/// the written type so messages quote it as the user wrote it.
pub(super) fn check_declared_type(expr: &ast::CqlTypeExpr) -> ExecResult<()> {
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

/// A user type's field may hold neither counters nor non-frozen user types.
pub(super) fn check_udt_field(ty: &ast::CqlTypeExpr) -> ExecResult<()> {
    use ast::CqlTypeExpr as E;
    match ty {
        E::Native(helenus_types::NativeType::Counter) => {
            invalid("A user type cannot contain counters")
        }
        E::UserDefined(_) => invalid("A user type cannot contain non-frozen UDTs"),
        _ => check_declared_type(ty),
    }
}

pub(super) fn mentions_type(t: &CqlType, name: &str) -> bool {
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
pub(super) fn replace_udt(t: &CqlType, ut: &UserType) -> CqlType {
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
        // A type nesting `ut` carries its definition too.
        CqlType::Udt { def, frozen } => CqlType::Udt {
            def: Box::new(replace_udt_in_fields(def, ut)),
            frozen: *frozen,
        },
        other => other.clone(),
    }
}

/// `outer` with every use of `ut` among its fields replaced by its new definition.
pub(super) fn replace_udt_in_fields(outer: &UserType, ut: &UserType) -> UserType {
    let mut out = outer.clone();
    for (_, f) in out.fields.iter_mut() {
        *f = replace_udt(f, ut);
    }
    out
}
