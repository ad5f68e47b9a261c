//! A linearizability checker for one compare-and-set register (the Wing–Gong search with
//! memoisation, as Porcupine does it): is there an order of the operations, consistent with
//! real time, in which every completed operation returns what it returned? Operations whose
//! outcome is unknown (timeouts) may take effect at any point after their call, or never.

use std::collections::HashSet;

/// A register operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisterOp {
    /// Set to `new` if the value is `expect`.
    Cas {
        expect: Option<u64>,
        new: u64,
    },
    Read,
}

/// What the operation returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisterResult {
    Cas {
        applied: bool,
        current: Option<u64>,
    },
    Read(Option<u64>),
    /// Timed out: may or may not have happened.
    Unknown,
}

/// One operation of a history, with its call and return times (any monotonic unit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operation {
    pub call: u64,
    /// `None` for an operation that never returned.
    pub ret: Option<u64>,
    pub op: RegisterOp,
    pub result: RegisterResult,
}

/// Why a history is not checked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    #[error("no linearization exists for this history of {0} operations")]
    NotLinearizable(usize),
    #[error("histories are checked up to 128 operations per register (got {0})")]
    TooLong(usize),
}

/// Checks `history` against a register starting at `initial`.
pub fn check(history: &[Operation], initial: Option<u64>) -> Result<(), CheckError> {
    if history.len() > 128 {
        return Err(CheckError::TooLong(history.len()));
    }
    let must: u128 = history
        .iter()
        .enumerate()
        .filter(|(_, o)| o.result != RegisterResult::Unknown)
        .fold(0, |m, (i, _)| m | (1u128 << i));
    let mut search = Search {
        history,
        must,
        seen: HashSet::new(),
    };
    if search.from(0, initial) {
        Ok(())
    } else {
        Err(CheckError::NotLinearizable(history.len()))
    }
}

struct Search<'a> {
    history: &'a [Operation],
    must: u128,
    seen: HashSet<(u128, Option<u64>)>,
}

impl Search<'_> {
    fn from(&mut self, done: u128, state: Option<u64>) -> bool {
        if done & self.must == self.must {
            return true;
        }
        // An operation can go next only if it was called before every pending one returned.
        let horizon = self
            .history
            .iter()
            .enumerate()
            .filter(|(i, _)| done & (1 << i) == 0)
            .filter_map(|(_, o)| o.ret)
            .min()
            .unwrap_or(u64::MAX);
        for (i, o) in self.history.iter().enumerate() {
            if done & (1 << i) != 0 || o.call > horizon {
                continue;
            }
            let Some(next) = step(o, state) else {
                continue;
            };
            let key = (done | (1 << i), next);
            if self.seen.insert(key) && self.from(key.0, next) {
                return true;
            }
        }
        false
    }
}

/// The state after `o` if it can return its result from `state`.
fn step(o: &Operation, state: Option<u64>) -> Option<Option<u64>> {
    match (o.op, o.result) {
        (RegisterOp::Read, RegisterResult::Read(v)) => (v == state).then_some(state),
        (RegisterOp::Read, RegisterResult::Unknown) => Some(state),
        (RegisterOp::Cas { expect, new }, RegisterResult::Cas { applied, current }) => {
            if current != state || applied != (state == expect) {
                return None;
            }
            Some(if applied { Some(new) } else { state })
        }
        (RegisterOp::Cas { expect, new }, RegisterResult::Unknown) => {
            Some(if state == expect { Some(new) } else { state })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cas(
        call: u64,
        ret: u64,
        expect: Option<u64>,
        new: u64,
        applied: bool,
        current: Option<u64>,
    ) -> Operation {
        Operation {
            call,
            ret: Some(ret),
            op: RegisterOp::Cas { expect, new },
            result: RegisterResult::Cas { applied, current },
        }
    }

    fn read(call: u64, ret: u64, v: Option<u64>) -> Operation {
        Operation {
            call,
            ret: Some(ret),
            op: RegisterOp::Read,
            result: RegisterResult::Read(v),
        }
    }

    #[test]
    fn sequential_and_overlapping_histories_that_are_linearizable() {
        let h = [
            cas(0, 1, None, 1, true, None),
            read(2, 3, Some(1)),
            cas(4, 5, Some(1), 2, true, Some(1)),
        ];
        assert!(check(&h, None).is_ok());
        // Two overlapping CASes from the empty value: exactly one may win.
        let h = [
            cas(0, 10, None, 1, true, None),
            cas(1, 9, None, 2, false, Some(1)),
        ];
        assert!(check(&h, None).is_ok());
    }

    #[test]
    fn two_winners_from_the_same_value_are_caught() {
        let h = [
            cas(0, 10, None, 1, true, None),
            cas(1, 9, None, 2, true, None),
        ];
        assert_eq!(check(&h, None), Err(CheckError::NotLinearizable(2)));
    }

    #[test]
    fn a_stale_read_after_a_completed_write_is_caught() {
        let h = [cas(0, 1, None, 1, true, None), read(2, 3, None)];
        assert!(check(&h, None).is_err());
    }

    #[test]
    fn a_timed_out_write_may_or_may_not_have_happened() {
        let lost = Operation {
            call: 0,
            ret: None,
            op: RegisterOp::Cas {
                expect: None,
                new: 7,
            },
            result: RegisterResult::Unknown,
        };
        assert!(
            check(&[lost, read(5, 6, Some(7))], None).is_ok(),
            "it happened"
        );
        assert!(check(&[lost, read(5, 6, None)], None).is_ok(), "it did not");
        assert!(
            check(&[lost, read(5, 6, Some(8))], None).is_err(),
            "nobody wrote 8"
        );
    }
}
