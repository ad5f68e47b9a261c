//! `token(...)` in a selection: of the row's partition key, of other columns typed like it, or of
//! literal key values.

use super::compile::{bigint, col_index, constant};
use super::Sel;
use crate::exec::error::{ExecError, ExecResult};
use crate::exec::values::{self, Binds};
use helenus_cql::ast::{Selector, Term};
use helenus_schema::{ColumnKind, TableMeta};
use helenus_types::CqlType;

/// `token(k1, ..., kn)`: the row's token when the arguments are the partition key, else the
/// arguments hashed as a key of the same types would be.
pub(super) fn compile_token(
    t: &TableMeta,
    fname: String,
    args: &[Selector],
) -> ExecResult<(Sel, CqlType)> {
    let mut idx = Vec::new();
    for a in args {
        let Selector::Column(id) = a else {
            return Err(ExecError::Invalid(
                "token() takes the partition key columns".into(),
            ));
        };
        idx.push(col_index(t, &id.name)?);
    }
    let pk: Vec<usize> = t
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.kind == ColumnKind::PartitionKey)
        .map(|(i, _)| i)
        .collect();
    if idx == pk {
        return Ok((Sel::Token(idx), bigint()));
    }
    let same_types = idx.len() == pk.len()
        && idx
            .iter()
            .zip(&pk)
            .all(|(a, b)| t.columns[*a].cql_type == t.columns[*b].cql_type);
    if !same_types {
        return Err(ExecError::Invalid(format!(
            "Type error: token() arguments must be the partition key columns of {}",
            t.name
        )));
    }
    Ok((
        Sel::Func {
            name: fname,
            args: idx.iter().map(|i| Sel::Column(*i)).collect(),
            arg_types: idx.iter().map(|i| t.columns[*i].cql_type.clone()).collect(),
        },
        bigint(),
    ))
}

/// `token([1, 2])`: the token of literal partition key values, typed by the key's columns.
pub(super) fn literal_token(
    t: &TableMeta,
    terms: &[Term],
    binds: &Binds<'_>,
) -> ExecResult<(Sel, CqlType)> {
    let pk: Vec<_> = t
        .columns
        .iter()
        .filter(|c| c.kind == ColumnKind::PartitionKey)
        .collect();
    if pk.len() != terms.len() {
        return Err(ExecError::Invalid(format!(
            "Invalid number of arguments in call to function system.token: {} required but {} provided",
            pk.len(),
            terms.len()
        )));
    }
    let mut parts = Vec::with_capacity(terms.len());
    for (c, term) in pk.iter().zip(terms) {
        match constant(term, &c.cql_type, &c.name, binds)? {
            Some(b) => parts.push(b),
            None => return Ok((Sel::Constant(None), bigint())),
        }
    }
    let refs: Vec<&[u8]> = parts.iter().map(|b| b.as_ref()).collect();
    let token = helenus_types::murmur3_token(&crate::keys::partition_key(&refs));
    let value = values::serialize(&helenus_types::CqlValue::Bigint(token));
    Ok((Sel::Constant(Some(value)), bigint()))
}
