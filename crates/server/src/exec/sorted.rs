//! Set elements and map entries in the order Cassandra stores them (the element or key type's
//! comparator), duplicates dropped: what a set or map literal and a JSON set or map become.

use bytes::Bytes;
use helenus_types::{CqlType, CqlValue};

/// Sorts set elements by their type and drops duplicates.
pub fn sort_dedup(vals: &mut Vec<CqlValue>, element: &CqlType) {
    let mut keyed: Vec<(Bytes, CqlValue)> = vals
        .drain(..)
        .map(|v| (helenus_types::serialize_to_bytes(&v), v))
        .collect();
    keyed.sort_by(|a, b| helenus_types::compare_serialized(element, &a.0, &b.0));
    keyed.dedup_by(|a, b| helenus_types::compare_serialized(element, &a.0, &b.0).is_eq());
    vals.extend(keyed.into_iter().map(|(_, v)| v));
}

/// Sorts map entries by key and drops duplicate keys.
pub fn sort_dedup_map(vals: &mut Vec<(CqlValue, CqlValue)>, key: &CqlType) {
    let mut keyed: Vec<(Bytes, (CqlValue, CqlValue))> = vals
        .drain(..)
        .map(|kv| (helenus_types::serialize_to_bytes(&kv.0), kv))
        .collect();
    // Later entries win on duplicate keys, as in Cassandra's map literal.
    keyed.reverse();
    keyed.sort_by(|a, b| helenus_types::compare_serialized(key, &a.0, &b.0));
    keyed.dedup_by(|a, b| helenus_types::compare_serialized(key, &a.0, &b.0).is_eq());
    vals.extend(keyed.into_iter().map(|(_, kv)| kv));
}
