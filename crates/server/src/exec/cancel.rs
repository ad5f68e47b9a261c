//! Cooperative cancellation of a read past its timeout. The client is answered with
//! ReadTimeout when the request's timeout passes and the statement's task is aborted, but an
//! abort only lands at an await point: a statement deep in CPU work (a filtering scan, an
//! aggregate over a wide partition) would keep a pool thread busy for as long as the work
//! takes. The long loops of the executor call [`check`], which fails once the statement's
//! deadline has passed, so the work stops soon after its client was answered.

use super::error::{ExecError, ExecResult};
use helenus_protocol as proto;
use std::time::Instant;

tokio::task_local! {
    /// When the running statement's work should stop; unset for work that runs to completion
    /// (writes and DDL, as in Cassandra).
    static DEADLINE: Instant;
}

/// Runs `work` with `deadline` visible to [`check`] (only on this task, not on tasks it spawns).
/// Not an async fn: one would hold `work` twice (its argument and the scope around it).
pub fn until<F: std::future::Future>(
    deadline: Instant,
    work: F,
) -> impl std::future::Future<Output = F::Output> {
    DEADLINE.scope(deadline, work)
}

/// Fails with ReadTimeout once the running statement's deadline has passed. Cheap (a clock
/// read), so loops call it once per row.
pub fn check() -> ExecResult<()> {
    match DEADLINE.try_with(|d| Instant::now() >= *d) {
        Ok(true) => Err(ExecError::ReadTimeout {
            // The client was answered already, with the request's own level; this error only
            // ends the work.
            consistency: proto::Consistency::One,
            received: 0,
            block_for: 1,
            data_present: false,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn check_fails_only_past_a_deadline_it_can_see() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert!(check().is_ok(), "no deadline: never cancelled");
        rt.block_on(until(
            Instant::now() + std::time::Duration::from_secs(60),
            async {
                assert!(check().is_ok());
            },
        ));
        rt.block_on(until(Instant::now(), async {
            assert!(matches!(check(), Err(ExecError::ReadTimeout { .. })));
        }));
    }
}
