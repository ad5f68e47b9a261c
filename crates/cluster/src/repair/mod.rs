//! Repair's building blocks: per-range Merkle trees whose differences say what to stream.

mod merkle;

pub use merkle::{Digest, MerkleTree, MAX_DEPTH};
