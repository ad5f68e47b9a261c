//! The segment's footer: the stream types and, per row group, where each chunk is, its CRC32C
//! and its statistics. A reader loads it once and then reads only the chunks a scan needs.
//!
//! ```text
//! file    = magic (8) | chunks ... | footer | u32 LE footer length | u32 LE footer CRC32C | magic (8)
//! footer  = uv version | u8 key type | uv k, k * u8 type | uv n, n * (uv column id, u8 type)
//!           | uv groups, groups * (uv rows, u8 flags, streams * chunk)
//! chunk   = uv offset | uv length (0: all null) | u32 LE CRC32C | u8 physical | stats
//! flags   = bit 0: the group's tokens are Murmur3 of its keys, so its token chunk has no
//!           bytes (its statistics are kept) and readers hash the keys (version 2; version 1
//!           footers have no flags byte)
//! ```
//!
//! Version 3 added, after the groups, the streams' segment dictionaries (varlen.rs), each a
//! chunk of its entries (no nulls) written after the row groups:
//! `uv dicts, dicts * (uv stream, uv offset, uv length, u32 LE CRC32C, uv entries)`. It also
//! changed what a column's ts stream means: a live cell whose timestamp is its row's (delta 0)
//! has no ts value (layout.rs), so a reader of version 2 would drop those cells; it refuses the
//! version instead.

use super::bits::{put_uv, Cursor};
use super::chunk::MAX_CHUNK_ROWS;
use super::layout::{ColumnSpec, StreamLayout, S_TOKEN};
use super::stats::ChunkStats;
use super::vector::{Physical, ValueType};
use super::ColumnarError;

pub(super) const MAGIC: &[u8; 8] = b"HLCOLv1\n";
pub(super) const TRAILER_LEN: usize = 16;
const VERSION: u64 = 4;
/// Group flag: tokens derived from keys.
pub(super) const DERIVED_TOKENS: u8 = 1;
/// Group flag: value streams stored as mappings from another (version 4).
const DERIVED_COLUMNS: u8 = 2;

#[derive(Debug, Clone, PartialEq)]
pub(super) struct ChunkEntry {
    pub offset: u64,
    pub len: u64,
    pub crc: u32,
    pub physical: Physical,
    pub stats: ChunkStats,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct GroupMeta {
    pub rows: usize,
    /// DERIVED_TOKENS or 0.
    pub flags: u8,
    pub chunks: Vec<ChunkEntry>,
    /// (stream, determinant stream) of each value stream stored as a mapping (derive.rs).
    pub derived: Vec<(usize, usize)>,
}

impl GroupMeta {
    pub fn derived_tokens(&self) -> bool {
        self.flags & DERIVED_TOKENS != 0
    }

    /// The stream whose values fix stream `s`'s in this group, when `s` is stored as a mapping.
    pub fn determinant_of(&self, s: usize) -> Option<usize> {
        self.derived.iter().find(|(d, _)| *d == s).map(|(_, a)| *a)
    }
}

/// Where a stream's segment dictionary is.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct DictEntry {
    pub stream: usize,
    pub offset: u64,
    pub len: u64,
    pub crc: u32,
    pub entries: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Footer {
    pub layout: StreamLayout,
    pub groups: Vec<GroupMeta>,
    pub dicts: Vec<DictEntry>,
}

impl Footer {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_uv(&mut out, VERSION);
        out.push(self.layout.key.tag());
        put_uv(&mut out, self.layout.clustering.len() as u64);
        out.extend(self.layout.clustering.iter().map(|t| t.tag()));
        put_uv(&mut out, self.layout.columns.len() as u64);
        for c in &self.layout.columns {
            put_uv(&mut out, u64::from(c.id));
            out.push(c.value_type.tag());
        }
        put_uv(&mut out, self.groups.len() as u64);
        for g in &self.groups {
            put_uv(&mut out, g.rows as u64);
            let derived = if g.derived.is_empty() {
                0
            } else {
                DERIVED_COLUMNS
            };
            out.push(g.flags | derived);
            for c in &g.chunks {
                put_uv(&mut out, c.offset);
                put_uv(&mut out, c.len);
                out.extend_from_slice(&c.crc.to_le_bytes());
                out.push(c.physical.tag());
                c.stats.encode(&mut out);
            }
            if !g.derived.is_empty() {
                put_uv(&mut out, g.derived.len() as u64);
                for (s, a) in &g.derived {
                    put_uv(&mut out, *s as u64);
                    put_uv(&mut out, *a as u64);
                }
            }
        }
        put_uv(&mut out, self.dicts.len() as u64);
        for d in &self.dicts {
            put_uv(&mut out, d.stream as u64);
            put_uv(&mut out, d.offset);
            put_uv(&mut out, d.len);
            out.extend_from_slice(&d.crc.to_le_bytes());
            put_uv(&mut out, d.entries as u64);
        }
        out
    }

    /// Parses a footer whose chunks must lie in `[MAGIC.len(), data_end)`.
    pub fn decode(buf: &[u8], data_end: u64) -> Result<Footer, ColumnarError> {
        let mut c = Cursor::new(buf);
        let version = c.uv()?;
        if !(1..=VERSION).contains(&version) {
            return Err(ColumnarError::corrupt("footer version"));
        }
        let ty = |c: &mut Cursor<'_>| {
            ValueType::from_tag(c.u8()?).ok_or(ColumnarError::corrupt("value type"))
        };
        let key = ty(&mut c)?;
        let k = c.count(8)?;
        let clustering = (0..k).map(|_| ty(&mut c)).collect::<Result<Vec<_>, _>>()?;
        let n = c.count(16)?;
        let mut columns = Vec::with_capacity(n);
        for _ in 0..n {
            let id = u32::try_from(c.uv()?).map_err(|_| ColumnarError::corrupt("column id"))?;
            columns.push(ColumnSpec {
                id,
                value_type: ty(&mut c)?,
            });
        }
        let layout = StreamLayout {
            key,
            clustering,
            columns,
        };
        let streams = layout.streams();
        let n_groups = c.count(8)?;
        let mut groups = Vec::with_capacity(n_groups);
        for _ in 0..n_groups {
            let rows = c.len_at_most(MAX_CHUNK_ROWS)?;
            let flags = if version >= 2 { c.u8()? } else { 0 };
            let known = if version >= 4 {
                DERIVED_TOKENS | DERIVED_COLUMNS
            } else {
                DERIVED_TOKENS
            };
            if flags & !known != 0 {
                return Err(ColumnarError::corrupt("group flags"));
            }
            // Each chunk entry takes at least 9 bytes.
            if streams.saturating_mul(9) > c.remaining() {
                return Err(ColumnarError::corrupt("footer truncated"));
            }
            let mut chunks = Vec::with_capacity(streams);
            for s in 0..streams {
                let offset = c.uv()?;
                let len = c.uv()?;
                let crc = c.u32_le()?;
                let physical = Physical::from_tag(c.u8()?)
                    .ok_or(ColumnarError::corrupt("chunk physical type"))?;
                let stats = ChunkStats::decode(&mut c)?;
                let in_data = offset >= MAGIC.len() as u64
                    && offset.checked_add(len).is_some_and(|end| end <= data_end);
                // A derived token chunk has no bytes but the statistics of the tokens.
                let derived = s == S_TOKEN && flags & DERIVED_TOKENS != 0;
                let all_null = stats.nulls as usize == rows || derived;
                if (len > 0 && !in_data) || (len == 0 && !all_null) || stats.rows as usize != rows {
                    return Err(ColumnarError::corrupt("chunk entry"));
                }
                chunks.push(ChunkEntry {
                    offset,
                    len,
                    crc,
                    physical,
                    stats,
                });
            }
            let derived = if flags & DERIVED_COLUMNS != 0 {
                decode_derived(&mut c, &layout)?
            } else {
                Vec::new()
            };
            groups.push(GroupMeta {
                rows,
                flags: flags & DERIVED_TOKENS,
                chunks,
                derived,
            });
        }
        let mut dicts = Vec::new();
        if version >= 3 {
            // Each entry takes at least 8 bytes.
            let n = c.count(64)?;
            for _ in 0..n {
                let stream = c.len_at_most(streams.saturating_sub(1))?;
                let (offset, len, crc) = (c.uv()?, c.uv()?, c.u32_le()?);
                let entries = c.len_at_most(MAX_CHUNK_ROWS)?;
                let in_data = offset >= MAGIC.len() as u64
                    && offset.checked_add(len).is_some_and(|end| end <= data_end);
                let value_stream = layout.is_column_value(stream);
                if !in_data || !value_stream || dicts.iter().any(|d: &DictEntry| d.stream == stream)
                {
                    return Err(ColumnarError::corrupt("dictionary entry"));
                }
                dicts.push(DictEntry {
                    stream,
                    offset,
                    len,
                    crc,
                    entries,
                });
            }
        }
        if !c.is_empty() {
            return Err(ColumnarError::corrupt("trailing footer bytes"));
        }
        Ok(Footer {
            layout,
            groups,
            dicts,
        })
    }
}

/// A group's derived streams: value streams, each derived once, from a value stream that is
/// not derived itself.
fn decode_derived(
    c: &mut Cursor<'_>,
    layout: &StreamLayout,
) -> Result<Vec<(usize, usize)>, ColumnarError> {
    let streams = layout.streams();
    let n = c.len_at_most(layout.columns.len())?;
    let mut derived: Vec<(usize, usize)> = Vec::with_capacity(n);
    for _ in 0..n {
        let s = c.len_at_most(streams.saturating_sub(1))?;
        let a = c.len_at_most(streams.saturating_sub(1))?;
        if s == a || !layout.is_column_value(s) || !layout.is_column_value(a) {
            return Err(ColumnarError::corrupt("derived stream"));
        }
        derived.push((s, a));
    }
    let stream_twice = derived
        .iter()
        .enumerate()
        .any(|(i, (s, _))| derived.iter().take(i).any(|(t, _)| t == s));
    let chained = derived
        .iter()
        .any(|(_, a)| derived.iter().any(|(s, _)| s == a));
    if stream_twice || chained {
        return Err(ColumnarError::corrupt("derived stream"));
    }
    Ok(derived)
}
