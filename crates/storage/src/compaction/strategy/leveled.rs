//! Leveled: L0 over its trigger goes to L1 with the L1 SSTables it overlaps; a level over its
//! budget (`sstable_bytes * fanout^level`) pushes its oldest SSTable into the next level with
//! the ones it overlaps there.

use super::{gens, Choice, SSTableInfo, Strategy};

/// L0 count that triggers compaction into L1.
const L0_TRIGGER: usize = 4;
/// Levels past this one are never filled.
const MAX_LEVEL: u32 = 8;

pub(crate) struct Leveled {
    pub sstable_bytes: u64,
    pub fanout: u64,
}

impl Strategy for Leveled {
    fn choose(&self, free: &[SSTableInfo], all: &[SSTableInfo]) -> Choice {
        let (pick, level) = self.pick(free, all);
        Choice {
            inputs: gens(&pick),
            level,
            max_output_bytes: self.sstable_bytes,
        }
    }

    /// One SSTable promoted alone to the next level is work too.
    fn min_inputs(&self) -> usize {
        1
    }
}

impl Leveled {
    fn pick(&self, free: &[SSTableInfo], all: &[SSTableInfo]) -> (Vec<SSTableInfo>, u32) {
        let level_of = |l: u32| free.iter().filter(move |s| s.level == l).cloned();
        let l0: Vec<_> = level_of(0).collect();
        if l0.len() >= L0_TRIGGER {
            let mut pick = l0.clone();
            for s in level_of(1) {
                if l0.iter().any(|a| a.overlaps(&s)) {
                    pick.push(s);
                }
            }
            return (pick, 1);
        }
        for l in 1..MAX_LEVEL {
            let bytes: u64 = all
                .iter()
                .filter(|s| s.level == l)
                .map(|s| s.data_bytes)
                .sum();
            let budget = self
                .sstable_bytes
                .saturating_mul(self.fanout.saturating_pow(l));
            if bytes > budget {
                let Some(first) = level_of(l).min_by_key(|s| s.gen) else {
                    continue;
                };
                let mut pick = vec![first.clone()];
                pick.extend(level_of(l + 1).filter(|s| first.overlaps(s)));
                return (pick, l + 1);
            }
        }
        (Vec::new(), 0)
    }
}
