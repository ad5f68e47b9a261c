//! Segment dictionaries: one per column value stream and file, built by the writer as row
//! groups go out (varlen.rs `SegmentDict` for text and blobs, ints.rs `IntDict` for integers
//! and floats' bit patterns), written after the groups (footer.rs), loaded by the reader at
//! open. Chunks that use one hold only codes.

use super::ints::IntDict;
use super::varlen::SegmentDict;
use super::vector::{BytesVec, Physical};

/// The writer's dictionary of one stream.
pub(super) enum StreamDict {
    Bytes(SegmentDict),
    Ints(IntDict),
}

impl StreamDict {
    /// The dictionary a value stream of `physical` values gets.
    pub fn for_values(physical: Physical) -> Self {
        match physical {
            Physical::Bytes => StreamDict::Bytes(SegmentDict::default()),
            Physical::Int | Physical::Float32 | Physical::Float64 => {
                StreamDict::Ints(IntDict::default())
            }
        }
    }

    pub fn bytes(&mut self) -> Option<&mut SegmentDict> {
        match self {
            StreamDict::Bytes(d) => Some(d),
            StreamDict::Ints(_) => None,
        }
    }

    pub fn ints(&mut self) -> Option<&mut IntDict> {
        match self {
            StreamDict::Ints(d) => Some(d),
            StreamDict::Bytes(_) => None,
        }
    }
}

/// The reader's dictionary of one stream.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Dictionary {
    Bytes(BytesVec),
    Ints(Vec<i64>),
}

impl Dictionary {
    pub fn bytes(&self) -> Option<&BytesVec> {
        match self {
            Dictionary::Bytes(d) => Some(d),
            Dictionary::Ints(_) => None,
        }
    }

    pub fn ints(&self) -> Option<&[i64]> {
        match self {
            Dictionary::Ints(d) => Some(d),
            Dictionary::Bytes(_) => None,
        }
    }
}
