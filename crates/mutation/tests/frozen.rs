//! The frozen encoding: random mutations round-trip, and truncated, corrupted or forged input is
//! refused with an error (never a panic, never a huge allocation).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use helenus_mutation::*;

/// xorshift64*: deterministic, so a failing seed replays.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn i64(&mut self) -> i64 {
        // Mostly small values, sometimes the extremes the varints must carry.
        match self.below(4) {
            0 => self.next() as i64,
            1 => [i64::MIN, i64::MAX, 0, -1][self.below(4) as usize],
            _ => self.below(2_000_000) as i64 - 1_000_000,
        }
    }
    fn bytes(&mut self) -> Bytes {
        let n = self.below(6) as usize;
        (0..n)
            .map(|_| self.next() as u8)
            .collect::<Vec<u8>>()
            .into()
    }
    fn values(&mut self) -> Vec<Bytes> {
        (0..self.below(3)).map(|_| self.bytes()).collect()
    }
}

fn deletion(r: &mut Rng) -> DeletionTime {
    DeletionTime {
        marked_for_delete_at_us: r.i64(),
        local_deletion_time_s: r.i64(),
    }
}

fn bound(r: &mut Rng) -> ClusteringBound {
    ClusteringBound {
        prefix: r.values(),
        kind: if r.below(2) == 0 {
            BoundKind::Inclusive
        } else {
            BoundKind::Exclusive
        },
    }
}

fn cell(r: &mut Rng) -> CellUpdate {
    let op = match r.below(8) {
        0 => CellOp::Set {
            value: r.bytes(),
            ttl_s: r.next() as u32,
        },
        1 => CellOp::Delete,
        2 => CellOp::DeleteComplex,
        3 => CellOp::CounterAdd(r.i64()),
        4 => CellOp::SetExpiring {
            value: r.bytes(),
            ttl_s: r.next() as u32,
            expires_at_s: r.i64(),
        },
        5 => CellOp::Tombstone {
            local_deletion_time_s: r.i64(),
        },
        6 => CellOp::ComplexDeletion {
            local_deletion_time_s: r.i64(),
        },
        _ => CellOp::CounterState {
            clock: r.i64(),
            total: r.i64(),
        },
    };
    CellUpdate {
        column: r.next() as u32,
        path: (r.below(2) == 0).then(|| r.bytes()),
        timestamp_us: r.i64(),
        op,
    }
}

fn row(r: &mut Rng) -> RowUpdate {
    RowUpdate {
        clustering: r.values(),
        liveness: (r.below(2) == 0).then(|| Liveness {
            timestamp_us: r.i64(),
            ttl_s: r.next() as u32,
            expires_at_s: r.i64(),
        }),
        deletion: (r.below(3) == 0).then(|| deletion(r)),
        cells: (0..r.below(4)).map(|_| cell(r)).collect(),
    }
}

fn mutation(r: &mut Rng) -> Mutation {
    let mut table = [0u8; 16];
    table.iter_mut().for_each(|b| *b = r.next() as u8);
    Mutation {
        table,
        key: r.bytes(),
        token: r.i64(),
        partition_deletion: (r.below(3) == 0).then(|| deletion(r)),
        range_tombstones: (0..r.below(3))
            .map(|_| (bound(r), bound(r), deletion(r)))
            .collect(),
        static_row: (r.below(3) == 0).then(|| row(r)),
        rows: (0..r.below(4)).map(|_| row(r)).collect(),
    }
}

fn mutations(r: &mut Rng) -> Vec<Mutation> {
    (0..r.below(4)).map(|_| mutation(r)).collect()
}

#[test]
fn random_mutations_round_trip() {
    for seed in 1..2000u64 {
        let mut r = Rng(seed);
        let ms = mutations(&mut r);
        let enc = encode_mutations(&ms);
        assert_eq!(enc.first(), Some(&FORMAT_VERSION));
        assert_eq!(decode_mutations(enc.clone()).unwrap(), ms, "seed {seed}");
        assert_eq!(digest(&ms), digest(&decode_mutations(enc).unwrap()));
    }
}

#[test]
fn every_truncation_is_an_error() {
    for seed in 1..200u64 {
        let ms = mutations(&mut Rng(seed));
        let enc = encode_mutations(&ms);
        for cut in 0..enc.len() {
            assert!(
                decode_mutations(enc.slice(..cut)).is_err(),
                "seed {seed} cut {cut}"
            );
        }
        let mut longer = enc.to_vec();
        longer.push(0);
        assert_eq!(
            decode_mutations(longer.into()),
            Err(DecodeError::TrailingBytes(1))
        );
    }
}

#[test]
fn corrupted_and_random_bytes_never_panic() {
    for seed in 1..3000u64 {
        let mut r = Rng(seed);
        let ms = mutations(&mut r);
        let mut enc = encode_mutations(&ms).to_vec();
        for _ in 0..1 + r.below(3) {
            let i = r.below(enc.len() as u64) as usize;
            enc[i] ^= 1 << r.below(8);
        }
        // Either an error or some well-formed mutations; the point is that it returns.
        let _ = decode_mutations(enc.into());
        let mut garbage: Vec<u8> = (0..r.below(64)).map(|_| r.next() as u8).collect();
        if let Some(b) = garbage.first_mut() {
            *b = FORMAT_VERSION;
        }
        let _ = decode_mutations(garbage.into());
    }
}

#[test]
fn forged_counts_and_lengths_are_refused_before_allocating() {
    // A mutation count of u64::MAX.
    let mut v = vec![FORMAT_VERSION];
    v.extend_from_slice(&[0xff; 9]);
    v.push(0x01);
    assert!(matches!(
        decode_mutations(v.into()),
        Err(DecodeError::TooLong { .. })
    ));
    // A partition key claiming 2^40 bytes.
    let mut v = vec![FORMAT_VERSION, 1];
    v.extend_from_slice(&[0u8; 16]);
    v.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x20]);
    assert!(matches!(
        decode_mutations(v.into()),
        Err(DecodeError::TooLong { .. })
    ));
    // An eleven-byte varint.
    let mut v = vec![FORMAT_VERSION];
    v.extend_from_slice(&[0x80; 10]);
    v.push(0);
    assert!(matches!(
        decode_mutations(v.into()),
        Err(DecodeError::BadVarint { .. })
    ));
    assert_eq!(decode_mutations(Bytes::new()), Err(DecodeError::Empty));
    assert_eq!(
        decode_mutations(Bytes::from_static(&[9, 0])),
        Err(DecodeError::UnsupportedVersion(9))
    );
}

#[test]
fn digest_tells_different_content_apart() {
    let mut r = Rng(7);
    let a = vec![mutation(&mut r)];
    let mut b = a.clone();
    b[0].token = b[0].token.wrapping_add(1);
    assert_ne!(digest(&a), digest(&b));
    assert_eq!(digest(&a), digest(&a.clone()));
    assert_ne!(digest(&[]), digest(&a));
}
