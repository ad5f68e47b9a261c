//! Cassandra's `Murmur3Partitioner` token and composite partition keys.

use bytes::{BufMut, Bytes, BytesMut};

use crate::TypeError;

const C1: u64 = 0x87c3_7b91_1142_53d5;
const C2: u64 = 0x4cf5_ad43_2745_937f;

fn fmix(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

/// A tail byte as Java reads it: `(long) byte` sign-extends, which generic murmur3 crates do not.
fn java_byte(b: u8) -> u64 {
    b as i8 as i64 as u64
}

fn read_le_u64(block: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    buf.copy_from_slice(&block[..8]);
    u64::from_le_bytes(buf)
}

/// First half of Cassandra's `MurmurHash.hash3_x64_128(key, 0, len, 0)`.
fn hash3_x64_128_h1(key: &[u8]) -> u64 {
    let mut h1: u64 = 0;
    let mut h2: u64 = 0;
    let mut blocks = key.chunks_exact(16);
    for block in &mut blocks {
        let mut k1 = read_le_u64(&block[..8]);
        let mut k2 = read_le_u64(&block[8..]);
        k1 = k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
        h1 ^= k1;
        h1 = h1
            .rotate_left(27)
            .wrapping_add(h2)
            .wrapping_mul(5)
            .wrapping_add(0x52dc_e729);
        k2 = k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
        h2 ^= k2;
        h2 = h2
            .rotate_left(31)
            .wrapping_add(h1)
            .wrapping_mul(5)
            .wrapping_add(0x3849_5ab5);
    }
    let tail = blocks.remainder();
    let mut k1: u64 = 0;
    let mut k2: u64 = 0;
    // Java's fall-through switch XORs each sign-extended byte in, highest index first.
    for i in (8..tail.len()).rev() {
        k2 ^= java_byte(tail[i]) << ((i - 8) * 8);
    }
    if tail.len() > 8 {
        k2 = k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
        h2 ^= k2;
    }
    for i in (0..tail.len().min(8)).rev() {
        k1 ^= java_byte(tail[i]) << (i * 8);
    }
    if !tail.is_empty() {
        k1 = k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
        h1 ^= k1;
    }
    let len = key.len() as u64;
    h1 ^= len;
    h2 ^= len;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix(h1);
    h2 = fmix(h2);
    h1.wrapping_add(h2)
}

/// The token Cassandra's `Murmur3Partitioner` assigns to a serialized partition key.
pub fn murmur3_token(key: &[u8]) -> i64 {
    let token = hash3_x64_128_h1(key) as i64;
    // Long.MIN_VALUE is reserved as the ring's minimum token.
    if token == i64::MIN {
        i64::MAX
    } else {
        token
    }
}

/// Builds a partition key from its serialized components as Cassandra's `CompositeType` does:
/// `[u16 BE length][bytes][0x00]` per component; a single component is used as is.
/// Components longer than 65535 bytes cannot be represented; callers validate key sizes first
/// (Cassandra rejects such keys with "Key length of N is longer than maximum of 65535").
pub fn composite_partition_key(components: &[&[u8]]) -> Bytes {
    if let [single] = components {
        return Bytes::copy_from_slice(single);
    }
    let total: usize = components.iter().map(|c| c.len() + 3).sum();
    let mut out = BytesMut::with_capacity(total);
    for c in components {
        out.put_u16(c.len().min(u16::MAX as usize) as u16);
        out.put_slice(c);
        out.put_u8(0);
    }
    out.freeze()
}

/// Splits a partition key built by [`composite_partition_key`] back into `n` components.
pub fn split_composite_key(key: &[u8], n: usize) -> Result<Vec<Bytes>, TypeError> {
    if n == 1 {
        return Ok(vec![Bytes::copy_from_slice(key)]);
    }
    let mut out = Vec::with_capacity(n);
    let mut rest = key;
    while !rest.is_empty() {
        let Some((len_bytes, after)) = rest.split_first_chunk::<2>() else {
            return Err(TypeError::marshal(
                "Not enough bytes to read composite component length",
            ));
        };
        let len = u16::from_be_bytes(*len_bytes) as usize;
        if after.len() < len + 1 {
            return Err(TypeError::marshal(
                "Not enough bytes to read composite component",
            ));
        }
        out.push(Bytes::copy_from_slice(&after[..len]));
        // The end-of-component byte is 0 in a partition key (non-zero only in slice bounds).
        if after[len] != 0 {
            return Err(TypeError::marshal(
                "Invalid end-of-component byte in partition key",
            ));
        }
        rest = &after[len + 1..];
    }
    if out.len() != n {
        return Err(TypeError::marshal(format!(
            "Expected {n} components in partition key, found {}",
            out.len()
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_cassandra_vectors() {
        assert_eq!(murmur3_token(b"test"), -6017608668500074083);
        assert_eq!(murmur3_token("kremówki".as_bytes()), 4354931215268080151);
        assert_eq!(murmur3_token(&1i32.to_be_bytes()), -4069959284402364209);
        assert_eq!(murmur3_token(&2i32.to_be_bytes()), -3248873570005575792);
        assert_eq!(murmur3_token(&3i32.to_be_bytes()), 9010454139840013625);
        assert_eq!(murmur3_token("château".as_bytes()), 9114062196463836094);
        assert_eq!(murmur3_token(&[0xff]), -4442228696663692417);
    }

    #[test]
    fn long_keys_hash_every_block_and_tail() {
        // Exercise the 16-byte block loop plus a 9..15 byte tail; must be stable and not panic.
        let key: Vec<u8> = (0u8..=40).map(|b| b.wrapping_mul(7)).collect();
        for len in 0..key.len() {
            let _ = murmur3_token(&key[..len]);
        }
    }

    #[test]
    fn composite_key_round_trips() {
        let k = composite_partition_key(&[b"ab", b"", b"xyz"]);
        assert_eq!(
            &k[..],
            &[0, 2, b'a', b'b', 0, 0, 0, 0, 0, 3, b'x', b'y', b'z', 0]
        );
        let parts = split_composite_key(&k, 3).unwrap();
        assert_eq!(
            parts,
            vec![
                Bytes::from_static(b"ab"),
                Bytes::new(),
                Bytes::from_static(b"xyz")
            ]
        );
        assert!(split_composite_key(&k, 2).is_err());
        assert!(split_composite_key(&k[..5], 2).is_err());
    }

    #[test]
    fn single_component_key_is_the_bytes() {
        assert_eq!(&composite_partition_key(&[b"abc"])[..], b"abc");
        assert_eq!(
            split_composite_key(b"abc", 1).unwrap(),
            vec![Bytes::from_static(b"abc")]
        );
    }
}
