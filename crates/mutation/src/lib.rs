//! helenus-mutation: the data model replicas share. A `Mutation` is every change to one partition
//! of one table: what a client write applies, and what a replica's unfiltered read returns
//! (deletions, timestamps and TTLs kept, so a coordinator can reconcile replicas).
//!
//! Owns: the mutation types, their frozen binary encoding (versioned, compact, decoded without
//! trusting the input: frozen.rs) and the read digest over it.
//! Does not own: how mutations are stored, ordered by clustering comparators or merged (the
//! storage engine does that with the table's comparators, which this crate never sees), schemas,
//! or the network.

mod frozen;
mod types;

pub use frozen::{
    decode_mutations, digest, encode_into, encode_mutations, DecodeError, FORMAT_VERSION,
};
pub use types::*;
