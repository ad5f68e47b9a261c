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
