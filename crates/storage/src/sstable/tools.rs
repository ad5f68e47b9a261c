//! Offline SSTable tools behind `helenus sstable dump|verify FILE`.

use crate::clustering::ClusteringComparator;
use crate::error::StorageError;
use crate::partition::Partition;
use crate::sstable::repair::{uuid_string, RepairState};
use crate::sstable::statistics::{SSTableStats, StreamingHistogram};
use crate::sstable::SSTableReader;
use helenus_types::{Clock, SystemClock};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Result of `verify_sstable`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    pub partitions: u64,
    pub chunks: u64,
    /// Human-readable problems; empty = the SSTable is sound.
    pub errors: Vec<String>,
}

fn gen_of(path: &Path) -> Result<(PathBuf, u64), StorageError> {
    let bad = || {
        StorageError::InvalidRequest(format!("not an hl-1 sstable component: {}", path.display()))
    };
    let name = path
        .file_name()
        .ok_or_else(bad)?
        .to_string_lossy()
        .to_string();
    let rest = name.strip_prefix("hl-1-").ok_or_else(bad)?;
    let (gen, _) = rest.split_once('-').ok_or_else(bad)?;
    let gen = gen.parse::<u64>().map_err(|_| bad())?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok((dir, gen))
}

/// A comparator for tools that have no schema: clustering values compare bytewise.
fn schemaless_cmp() -> Arc<ClusteringComparator> {
    Arc::new(ClusteringComparator::new(Vec::new()))
}

/// Checks every chunk checksum and decodes every partition of the SSTable that `path` (any of its
/// component files) belongs to.
pub fn verify_sstable(path: &Path) -> Result<VerifyReport, StorageError> {
    let (dir, gen) = gen_of(path)?;
    let r = SSTableReader::open(&dir, gen, &schemaless_cmp())?;
    let mut rep = VerifyReport::default();
    for i in 0..r.chunk_count() {
        rep.chunks += 1;
        if let Err(e) = r.read_chunk(i, None) {
            rep.errors.push(e.to_string());
        }
    }
    for (i, e) in r.entries_from(0).enumerate() {
        match e.and_then(|e| r.read_partition_at(&e, None)) {
            Ok(_) => rep.partitions += 1,
            Err(e) => rep.errors.push(format!("partition {i}: {e}")),
        }
    }
    Ok(rep)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Writes a human-readable dump (one partition per block, values in hex) of the SSTable.
pub fn dump_sstable(path: &Path, out: &mut dyn Write) -> Result<(), StorageError> {
    let (dir, gen) = gen_of(path)?;
    let r = SSTableReader::open(&dir, gen, &schemaless_cmp())?;
    let io = |e| StorageError::io(path, e);
    writeln!(out, "sstable {} stats {:?}", path.display(), r.stats).map_err(io)?;
    dump_statistics(&r.stats, out).map_err(io)?;
    dump_repair_state(r.repair_state(), out).map_err(io)?;
    for e in r.entries_from(0) {
        let p = r.read_partition_at(&e?, None)?;
        dump_partition(&p, out).map_err(io)?;
    }
    Ok(())
}

/// The repair state as Cassandra's sstablemetadata prints it: 0 for never repaired.
fn dump_repair_state(state: RepairState, out: &mut dyn Write) -> std::io::Result<()> {
    let (at_ms, pending) = match state {
        RepairState::Unrepaired => (0, "--".to_string()),
        RepairState::Pending { session } => (0, uuid_string(&session)),
        RepairState::Repaired { at_ms } => (at_ms, "--".to_string()),
    };
    writeln!(out, "Repaired at: {at_ms}")?;
    writeln!(out, "Pending repair: {pending}")
}

fn dump_statistics(st: &SSTableStats, out: &mut dyn Write) -> std::io::Result<()> {
    let ck = |c: &[bytes::Bytes]| c.iter().map(|v| hex(v)).collect::<Vec<_>>().join(":");
    writeln!(
        out,
        "statistics version={} min_clustering=[{}] max_clustering=[{}]",
        st.version,
        ck(&st.min_clustering),
        ck(&st.max_clustering)
    )?;
    let hist = |h: &StreamingHistogram| {
        h.bins()
            .map(|(p, c)| format!("{p}:{c}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    writeln!(out, "ttl_histogram_s {}", hist(&st.ttl_histogram))?;
    writeln!(
        out,
        "tombstone_drop_time_histogram_s {}",
        hist(&st.drop_time_histogram)
    )?;
    // A tool's public signature has no room for a clock: the system one.
    let now = SystemClock.wall_secs();
    writeln!(
        out,
        "estimated_droppable_tombstones gc_grace=0:{:.3} gc_grace=864000:{:.3} \
         (of {} cells; {} tombstones and expiring cells)",
        st.estimated_droppable_tombstones(now),
        st.estimated_droppable_tombstones(now - 864_000),
        st.cells,
        st.drop_time_histogram.total()
    )
}

fn dump_partition(p: &Partition, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "partition key=0x{} token={} deletion={:?}",
        hex(&p.key),
        p.token,
        p.deletion
    )?;
    for (s, e, d) in &p.range_tombstones {
        writeln!(out, "  range_tombstone {:?} .. {:?} {:?}", s, e, d)?;
    }
    let rows =
        std::iter::once((None, &p.static_row)).chain(p.rows.iter().map(|(k, r)| (Some(k), &**r)));
    for (k, row) in rows {
        if k.is_none() && row.is_empty() {
            continue;
        }
        let ck = k.map_or("static".to_string(), |k| {
            k.values
                .iter()
                .map(|v| hex(v))
                .collect::<Vec<_>>()
                .join(":")
        });
        writeln!(
            out,
            "  row [{ck}] liveness={:?} deletion={:?}",
            row.liveness, row.deletion
        )?;
        for (col, d) in &row.complex_deletions {
            writeln!(out, "    column {col} complex_deletion={d:?}")?;
        }
        for ((col, path), c) in &row.cells {
            let path = path
                .as_ref()
                .map(|p| format!("[0x{}]", hex(p)))
                .unwrap_or_default();
            writeln!(
                out,
                "    column {col}{path} ts={} {:?}",
                c.timestamp_us, c.kind
            )?;
        }
    }
    Ok(())
}
