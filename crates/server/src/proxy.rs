//! The seam between statements and data (issue 12, `../shared/design/CLUSTER.md`): every read,
//! write and truncate a statement makes goes through a `StorageProxy`, with the request's
//! consistency level. `LocalProxy` is one node holding every replica: the local engine answers
//! every level, which is today's behaviour. A replicated proxy built on `helenus-coordinator`
//! (replica plans, the write and read paths, hints, Paxos) takes its place when the node joins a
//! ring; the executor does not change.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use helenus_coordinator::ConsistencyLevel;
use helenus_storage as st;

/// Why a proxy operation failed: the local engine's error, or the level not being reached
/// across replicas (with the fields the protocol reports).
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error(transparent)]
    Storage(#[from] st::StorageError),
    #[error(transparent)]
    Write(#[from] helenus_coordinator::WriteError),
    #[error(transparent)]
    Read(#[from] helenus_coordinator::read::ReadError),
    /// A lightweight transaction did not finish at its serial level: `Timeout` leaves the
    /// outcome unknown (Cassandra's CAS write timeout).
    #[error("{error}")]
    Paxos {
        error: helenus_coordinator::paxos::PaxosError,
        consistency: ConsistencyLevel,
    },
    /// Replicas failed a read; each failed replica's address and `RequestFailureReason` code.
    #[error("Operation failed - received {received} responses and {} failures", reasons.len())]
    ReadFailure {
        consistency: ConsistencyLevel,
        received: usize,
        block_for: usize,
        reasons: Vec<(std::net::IpAddr, u16)>,
    },
    /// TRUNCATE needs every node up (Cassandra: "Cannot perform truncate, some hosts are down").
    #[error("{0}")]
    Truncate(String),
}

/// The outcome of a compare-and-set: whether it applied, and the partition's rows it was
/// checked against (what a failed condition shows).
pub struct CasResult {
    pub applied: bool,
    pub current: st::ReadResult,
}

/// Decides a compare-and-set: given the current rows (`query` read), the mutations to apply,
/// or `None` when the condition does not hold. May run several times (Paxos retries).
pub type CasDecision<'a> = &'a (dyn Fn(&st::ReadResult) -> Option<Vec<st::Mutation>> + Send + Sync);

/// A proxy operation still running.
pub type ProxyFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, ProxyError>> + Send + 'a>>;

/// Where statements read and write data.
pub trait StorageProxy: Send + Sync {
    /// Applies `mutations` as one unit (one commitlog entry on each replica), at `consistency`.
    fn mutate(
        &self,
        mutations: Vec<st::Mutation>,
        consistency: ConsistencyLevel,
    ) -> ProxyFuture<'_, ()>;

    /// A logged batch: all-or-nothing across partitions even if this coordinator dies half
    /// way (the batchlog). On one node `mutate` already is: one commitlog entry.
    fn mutate_logged(
        &self,
        mutations: Vec<st::Mutation>,
        consistency: ConsistencyLevel,
    ) -> ProxyFuture<'_, ()> {
        self.mutate(mutations, consistency)
    }

    /// Reads at `consistency`, failing past `tombstone_failure_threshold` tombstones scanned.
    /// Asynchronous: a read that waits on other replicas holds no thread while it waits.
    fn read<'a>(
        &'a self,
        table: st::TableId,
        query: &'a st::ReadQuery,
        consistency: ConsistencyLevel,
        tombstone_failure_threshold: u64,
    ) -> ProxyFuture<'a, st::ReadResult>;

    /// Removes every row of `table` (blocking: run it off the async workers).
    fn truncate(&self, table: st::TableId) -> Result<(), ProxyError>;

    /// A compare-and-set of one partition through Paxos across its replicas at `serial`,
    /// the condition checked against `query`'s rows; `None` where this node alone decides (a
    /// single node: the executor orders LWTs with its own partition locks).
    fn cas<'a>(
        &'a self,
        _table: st::TableId,
        _query: &'a st::ReadQuery,
        _serial: ConsistencyLevel,
        _decide: CasDecision<'a>,
    ) -> Option<ProxyFuture<'a, CasResult>> {
        None
    }
}

/// Waits for `read` from synchronous code on the statement pool: at once when it is ready at
/// the first poll (every read the local engine answers), else with the thread given up to the
/// pool's other work meanwhile. For the few synchronous paths that read (a list element
/// written by index); statements await reads.
pub fn wait_for_read(
    mut read: ProxyFuture<'_, st::ReadResult>,
) -> Result<st::ReadResult, ProxyError> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    if let std::task::Poll::Ready(done) = read.as_mut().poll(&mut cx) {
        return done;
    }
    tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(read))
}

/// Applies `mutations` to this node's engine as one commitlog entry (the single-mutation
/// path when there is one). Shared by the local proxy and the replica side of a ring.
pub async fn apply_locally(
    engine: &st::Engine,
    mut mutations: Vec<st::Mutation>,
) -> Result<(), st::StorageError> {
    match mutations.len() {
        0 => Ok(()),
        1 => match mutations.pop() {
            Some(m) => engine.apply(m).await,
            None => Ok(()),
        },
        _ => engine.apply_batch(mutations).await,
    }
}

/// A single node: every level is met by the one local replica.
pub struct LocalProxy {
    engine: Arc<st::Engine>,
}

impl LocalProxy {
    pub fn new(engine: Arc<st::Engine>) -> Self {
        LocalProxy { engine }
    }
}

impl StorageProxy for LocalProxy {
    fn mutate(
        &self,
        mutations: Vec<st::Mutation>,
        _consistency: ConsistencyLevel,
    ) -> ProxyFuture<'_, ()> {
        Box::pin(async move { Ok(apply_locally(&self.engine, mutations).await?) })
    }

    fn read<'a>(
        &'a self,
        table: st::TableId,
        query: &'a st::ReadQuery,
        _consistency: ConsistencyLevel,
        tombstone_failure_threshold: u64,
    ) -> ProxyFuture<'a, st::ReadResult> {
        // The engine reads memtables and SSTables in place: ready at the first poll.
        Box::pin(async move {
            Ok(self
                .engine
                .read_bounded(table, query, tombstone_failure_threshold)?)
        })
    }

    fn truncate(&self, table: st::TableId) -> Result<(), ProxyError> {
        Ok(self.engine.truncate(table)?)
    }
}
