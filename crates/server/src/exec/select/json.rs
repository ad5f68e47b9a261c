//! `SELECT JSON`: a result rewritten as one text column named `[json]`.

use super::SelectOutput;
use crate::exec::values;
use bytes::Bytes;
use helenus_types::{CqlType, CqlValue, NativeType};

fn quote_name(n: &str) -> String {
    // Names Cassandra generates for selectors (`writetime(v)`, `system.min(v)`) stay as they
    // are; only identifiers that need it (`"Value"`) are quoted.
    let simple = n.contains('(')
        || n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if simple {
        n.to_string()
    } else {
        format!("\"{n}\"")
    }
}

/// Rewrites a result as `SELECT JSON` returns it: one text column named `[json]`.
pub fn json_rows(
    columns: &[(String, CqlType)],
    rows: Vec<Vec<Option<Bytes>>>,
    paging: Option<Bytes>,
) -> SelectOutput {
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let mut s = String::from("{");
        for (i, ((name, ty), cell)) in columns.iter().zip(r.iter()).enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            s.push_str(&serde_json::to_string(&quote_name(name)).unwrap_or_default());
            s.push_str(": ");
            match cell
                .as_ref()
                .and_then(|b| helenus_types::deserialize(ty, b).ok())
            {
                Some(v) => s.push_str(&helenus_types::to_json(&v)),
                None => s.push_str("null"),
            }
        }
        s.push('}');
        out.push(vec![Some(values::serialize(&CqlValue::Text(s)))]);
    }
    SelectOutput {
        columns: [("[json]".to_string(), CqlType::Native(NativeType::Varchar))].into(),
        wire_columns: None,
        rows: out,
        paging_state: paging,
        encoded: None,
    }
}
