//! The encoding half of a segment writer: a full row group's streams encoded (chunk.rs, with the
//! segment dictionaries) and appended to the file, then the dictionaries after the last group.
//! It owns the file and everything encoding needs, so the writer can hand it a group to encode
//! on another thread while it fills the next one.

use super::chunk::{encode_chunk, encode_chunk_with, BlockCompression};
use super::derive;
use super::dict::StreamDict;
use super::footer::{ChunkEntry, DictEntry, GroupMeta, DERIVED_TOKENS};
use super::layout::{StreamLayout, S_KEY, S_TOKEN};
use super::stats::ChunkStats;
use super::vector::{Column, ColumnValues, ValueType};
use super::ColumnarError;
use crate::codec::crc32c;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

pub(super) struct GroupSink {
    pub out: BufWriter<File>,
    /// The temporary file's name, for errors.
    pub tmp: PathBuf,
    /// Bytes written so far.
    pub pos: u64,
    pub groups: Vec<GroupMeta>,
    layout: StreamLayout,
    compression: BlockCompression,
    /// Per stream, its segment dictionary: value streams of regular columns only (keys and
    /// clustering values barely repeat within a segment).
    dicts: Vec<Option<StreamDict>>,
}

impl GroupSink {
    pub fn new(
        out: BufWriter<File>,
        tmp: PathBuf,
        pos: u64,
        layout: StreamLayout,
        compression: BlockCompression,
    ) -> GroupSink {
        let dicts = (0..layout.streams())
            .map(|s| {
                layout
                    .is_column_value(s)
                    .then(|| StreamDict::for_values(layout.stream_type(s).physical()))
            })
            .collect();
        GroupSink {
            out,
            tmp,
            pos,
            groups: Vec::new(),
            layout,
            compression,
            dicts,
        }
    }

    /// Encodes and appends one row group of `rows` entries (`cols`: one column per stream).
    pub fn encode_group(&mut self, rows: usize, cols: Vec<Column>) -> Result<(), ColumnarError> {
        let derived = tokens_derived(&cols, self.layout.key);
        let value_streams: Vec<usize> = (0..cols.len())
            .filter(|s| self.layout.is_column_value(*s))
            .collect();
        let mappings = derive::choose(&cols, &value_streams);
        let mut chunks = Vec::with_capacity(cols.len());
        for (s, col) in cols.iter().enumerate() {
            let t = self.layout.stream_type(s);
            let dict = self.dicts.get_mut(s).and_then(Option::as_mut);
            let (mut bytes, stats) = match mappings.iter().find(|m| m.stream == s) {
                Some(m) => {
                    // The mapping's bytes, the whole column's statistics (for skipping).
                    let mapping = derive::gather(col, m.first_rows.iter().copied());
                    let (bytes, _) = encode_chunk_with(&mapping, t, self.compression, dict);
                    (bytes, ChunkStats::of(col, t))
                }
                None => encode_chunk_with(col, t, self.compression, dict),
            };
            if derived && s == S_TOKEN {
                // Random 64-bit tokens do not compress: readers hash the keys instead.
                bytes.clear();
            }
            let offset = self.pos;
            self.write(&bytes)?;
            chunks.push(ChunkEntry {
                offset,
                len: bytes.len() as u64,
                crc: crc32c(&bytes),
                physical: col.values.physical(),
                stats,
            });
        }
        self.groups.push(GroupMeta {
            rows,
            flags: if derived { DERIVED_TOKENS } else { 0 },
            chunks,
            derived: mappings.iter().map(|m| (m.stream, m.determinant)).collect(),
        });
        Ok(())
    }

    /// Writes each non-empty segment dictionary as a chunk of its entries, after the groups.
    pub fn write_dictionaries(&mut self) -> Result<Vec<DictEntry>, ColumnarError> {
        let mut out = Vec::new();
        for s in 0..self.dicts.len() {
            let Some(Some(d)) = self.dicts.get_mut(s).map(Option::take) else {
                continue;
            };
            let (col, t) = match d {
                StreamDict::Bytes(b) => (ColumnValues::Bytes(b.entries), ValueType::Blob),
                StreamDict::Ints(i) => match i.into_entries() {
                    Some(entries) => (ColumnValues::Int(entries), ValueType::BigInt),
                    None => continue,
                },
            };
            let entries = col.len();
            if entries == 0 {
                continue;
            }
            let col = Column {
                values: col,
                validity: None,
            };
            let (bytes, _) = encode_chunk(&col, t, self.compression);
            let offset = self.pos;
            self.write(&bytes)?;
            out.push(DictEntry {
                stream: s,
                offset,
                len: bytes.len() as u64,
                crc: crc32c(&bytes),
                entries,
            });
        }
        Ok(out)
    }

    pub fn write(&mut self, bytes: &[u8]) -> Result<(), ColumnarError> {
        self.out
            .write_all(bytes)
            .map_err(|e| ColumnarError::io(&self.tmp, e))?;
        self.pos += bytes.len() as u64;
        Ok(())
    }
}

/// Whether every token of a group is the Murmur3 token of its serialized partition key (as the
/// server computes tokens; tests that make up tokens keep their token streams).
fn tokens_derived(cols: &[Column], key_type: ValueType) -> bool {
    let (Some(tokens), Some(keys)) = (cols.get(S_TOKEN), cols.get(S_KEY)) else {
        return false;
    };
    let mut buf = Vec::new();
    (0..tokens.len()).all(|i| {
        buf.clear();
        keys.serialize_into(i, key_type, &mut buf)
            && tokens.int(i) == Some(helenus_types::murmur3_token(&buf))
    })
}
