//! A seeded pseudo-random step (xorshift64*) for what must replay exactly from a seed: the
//! simulated network's faults and gossip's choice of partners. Not for anything secret.

/// Advances `state` and returns the next value.
pub(crate) fn next_u64(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    x.wrapping_mul(0x2545_f491_4f6c_dd1d)
}
