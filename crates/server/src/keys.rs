//! Partition keys: the serialized (possibly composite) key and its Murmur3 token.

use bytes::Bytes;

/// The partition key bytes for the given serialized components: the value itself for a single
/// component, Cassandra's CompositeType encoding otherwise.
pub fn partition_key(components: &[&[u8]]) -> Bytes {
    match components {
        [single] => Bytes::copy_from_slice(single),
        many => helenus_types::composite_partition_key(many),
    }
}

/// The token of a partition key given as text, as `nodetool getendpoints` takes it: the value
/// itself for one key column, the components joined by ':' for a composite key.
pub fn token_of_key_text(table: &helenus_schema::TableMeta, key: &str) -> Result<i64, String> {
    let columns: Vec<_> = table.partition_key().collect();
    let texts: Vec<&str> = if columns.len() == 1 {
        vec![key]
    } else {
        key.split(':').collect()
    };
    if texts.len() != columns.len() {
        return Err(format!(
            "The key {key} does not have the {} components of the partition key",
            columns.len()
        ));
    }
    let mut parts = Vec::with_capacity(texts.len());
    for (c, text) in columns.iter().zip(texts) {
        let value = helenus_types::from_string(&c.cql_type, text).map_err(|e| e.to_string())?;
        parts.push(helenus_types::serialize_to_bytes(&value));
    }
    let refs: Vec<&[u8]> = parts.iter().map(|p| p.as_ref()).collect();
    Ok(helenus_types::murmur3_token(&partition_key(&refs)))
}
