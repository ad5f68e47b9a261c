//! Tuple values written as one string constant (`'0:foo'`), which Cassandra accepts for any
//! tuple column because a tuple is not a native type its literal checks know.

use super::error::{ExecError, ExecResult};
use helenus_types::{CqlType, CqlValue};

/// A string constant for a tuple, as Cassandra's `TupleType.fromString` reads it: components
/// separated by unescaped `:`, `@` for null, `\:` and `\@` for the characters themselves;
/// fewer components than the type has leave the rest out.
pub fn tuple_from_string(types: &[CqlType], text: &str) -> ExecResult<CqlValue> {
    let mut parts = vec![String::new()];
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if matches!(chars.peek(), Some(':' | '@')) => {
                parts.last_mut().into_iter().for_each(|p| p.push('\\'));
                if let (Some(n), Some(p)) = (chars.next(), parts.last_mut()) {
                    p.push(n);
                }
            }
            ':' => parts.push(String::new()),
            c => parts.last_mut().into_iter().for_each(|p| p.push(c)),
        }
    }
    if parts.len() > types.len() {
        return Err(ExecError::Invalid(format!(
            "Invalid tuple literal: too many elements. Type {} expects {} but got {}",
            CqlType::Tuple(types.to_vec()),
            types.len(),
            parts.len()
        )));
    }
    let mut out = Vec::new();
    for (part, ty) in parts.iter().zip(types) {
        if part == "@" {
            out.push(None);
            continue;
        }
        let unescaped = part.replace("\\:", ":").replace("\\@", "@");
        out.push(Some(
            helenus_types::from_string(ty, &unescaped)
                .map_err(|e| ExecError::Invalid(e.to_string()))?,
        ));
    }
    Ok(CqlValue::Tuple(out))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use helenus_types::NativeType;

    #[test]
    fn tuple_string_constants_split_on_unescaped_colons() {
        let types = vec![
            CqlType::Native(NativeType::Int),
            CqlType::Native(NativeType::Varchar),
        ];
        assert_eq!(
            tuple_from_string(&types, "0:a\\:b").unwrap(),
            CqlValue::Tuple(vec![
                Some(CqlValue::Int(0)),
                Some(CqlValue::Text("a:b".into()))
            ])
        );
        assert_eq!(
            tuple_from_string(&types, "@").unwrap(),
            CqlValue::Tuple(vec![None])
        );
        assert!(tuple_from_string(&types, "1:2:3").is_err());
    }
}
