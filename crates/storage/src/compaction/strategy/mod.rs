//! Which SSTables a background compaction takes. Each strategy is a file behind `Strategy` and
//! sees plain descriptions of the SSTables, apart from running the compaction (compaction/mod.rs),
//! so its choices can be checked without files.

mod leveled;
mod size_tiered;
#[cfg(test)]
mod tests;
mod time_window;

pub(crate) use leveled::Leveled;
pub(crate) use size_tiered::SizeTiered;
pub(crate) use time_window::TimeWindow;

use crate::sstable::SSTableReader;
use crate::types::CompactionOptions;

/// Size-tiered and time-window outputs are not split by size, as Cassandra's are not. Their
/// outputs were once split at 1 GiB (uncompressed): the pieces of one merge are similar in size
/// and so formed a bucket again, and a table of four such pieces or more was merged into the
/// same pieces forever. Size-tiered outputs now end at ring tokens (compaction/merge.rs), and
/// the pieces carry one run id, which the strategy buckets as one SSTable.
const UNSPLIT: u64 = u64::MAX;

/// What a strategy sees of an SSTable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SSTableInfo {
    pub gen: u64,
    pub data_bytes: u64,
    pub level: u32,
    pub min_token: i64,
    pub max_token: i64,
    pub max_timestamp_us: i64,
    /// The run the SSTable belongs to (`SSTableStats::run_id`; 0: alone).
    pub run: u64,
}

impl SSTableInfo {
    pub(crate) fn of(s: &SSTableReader) -> Self {
        SSTableInfo {
            gen: s.gen,
            data_bytes: s.stats.data_file_bytes,
            level: s.stats.level,
            min_token: s.stats.min_token,
            max_token: s.stats.max_token,
            max_timestamp_us: s.stats.max_timestamp_us,
            run: s.stats.run_id,
        }
    }

    /// What groups the pieces of one run: the run id, or the generation of an SSTable alone.
    pub(crate) fn run_key(&self) -> (u64, u64) {
        match self.run {
            0 => (0, self.gen),
            run => (run, 0),
        }
    }

    fn overlaps(&self, other: &SSTableInfo) -> bool {
        self.min_token <= other.max_token && other.min_token <= self.max_token
    }
}

/// A strategy's pick: the generations to merge, in merge order, and the outputs' level and size.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Choice {
    pub inputs: Vec<u64>,
    pub level: u32,
    pub max_output_bytes: u64,
}

pub(crate) trait Strategy {
    /// `free`: the SSTables no running compaction holds; `all`: every SSTable of the table.
    fn choose(&self, free: &[SSTableInfo], all: &[SSTableInfo]) -> Choice;

    /// A choice of fewer inputs is nothing to do (and leaves room for a tombstone compaction).
    fn min_inputs(&self) -> usize {
        2
    }
}

/// The strategy a table's options name.
pub(crate) fn for_options(options: &CompactionOptions) -> Box<dyn Strategy> {
    match options {
        CompactionOptions::SizeTiered {
            min_threshold,
            max_threshold,
        } => Box::new(SizeTiered {
            min_threshold: *min_threshold as usize,
            max_threshold: *max_threshold as usize,
        }),
        CompactionOptions::TimeWindow {
            compaction_window_unit,
            compaction_window_size,
        } => Box::new(TimeWindow::new(
            compaction_window_unit,
            *compaction_window_size,
        )),
        CompactionOptions::Leveled {
            sstable_size_in_mb,
            fanout_size,
        } => Box::new(Leveled {
            sstable_bytes: u64::from(*sstable_size_in_mb).max(1) << 20,
            fanout: u64::from(*fanout_size).max(2),
        }),
    }
}

/// How many compactions `strategy` would start at once with threads enough: its choices taken
/// one after another, each leaving its inputs out of the next (`free`: the SSTables no
/// running compaction holds).
pub(crate) fn startable_now(
    strategy: &dyn Strategy,
    mut free: Vec<SSTableInfo>,
    all: &[SSTableInfo],
) -> usize {
    let mut tasks = 0;
    loop {
        let choice = strategy.choose(&free, all);
        if choice.inputs.len() < strategy.min_inputs() || choice.inputs.is_empty() {
            return tasks;
        }
        let before = free.len();
        free.retain(|s| !choice.inputs.contains(&s.gen));
        // A choice of nothing still free would be chosen again forever.
        if free.len() == before {
            return tasks;
        }
        tasks += 1;
    }
}

/// How many runs `sstables` form (see `SSTableInfo::run_key`): what a size-tiered backlog is
/// counted in, the pieces of a split output being one SSTable to the strategy.
pub(crate) fn run_count(sstables: &[std::sync::Arc<SSTableReader>]) -> usize {
    let keys: std::collections::HashSet<(u64, u64)> = sstables
        .iter()
        .map(|s| SSTableInfo::of(s).run_key())
        .collect();
    keys.len()
}

fn gens(v: &[SSTableInfo]) -> Vec<u64> {
    v.iter().map(|s| s.gen).collect()
}
