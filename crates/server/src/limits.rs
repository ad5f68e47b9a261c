//! Resource bounds on the native transport's request path: a node-wide byte budget for request
//! frames being read or run, a node-wide and a per-connection byte count of responses produced
//! but not yet written, a statement pool apart from the I/O workers with a fixed number of
//! statements running at once, and the per-kind request timeouts.
//!
//! Every limit here turns into backpressure (the connection stops being read, or the statement
//! waits to start), never into an unbounded queue. The memory bound these give is documented in
//! README.md ("Resource bounds").

use crate::config::NodeConfig;
pub use crate::request_kind::{kind_of_batch, kind_of_statement, RequestKind};
use helenus_protocol as proto;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, Semaphore};

/// Request frames up to this size are not charged to the byte budget: they fit the connection's
/// base read buffer, their number is bounded per connection, and leaving them free keeps small
/// requests (a health check, a canary) flowing while large ones wait for budget.
pub const FREE_REQUEST_BYTES: usize = 64 * 1024;
/// Bytes of unwritten responses one connection may hold before its statements stop starting:
/// a client that does not read its responses holds at most this plus what is already running.
pub const CONNECTION_RESPONSE_HIGH_WATER_BYTES: u64 = 8 * 1024 * 1024;
/// Statements of one connection running at once: bounds the responses a connection can have
/// materialized before the high-water mark above can see them.
pub const MAX_RUNNING_PER_CONNECTION: usize = 64;
/// First guess of a connection's response size, before it has produced one.
const INITIAL_RESPONSE_ESTIMATE_BYTES: u64 = 64 * 1024;
/// The budget semaphore counts KiB so one acquire (a u32) can cover any frame.
const UNIT_BYTES: u64 = 1024;
/// A waiter re-checks the response counters at least this often, so a missed wake-up costs a
/// short delay rather than a stall.
const RECHECK: Duration = Duration::from_millis(20);

/// The node-wide half of the bounds, shared by every connection.
pub struct Limits {
    request_budget: Arc<Semaphore>,
    request_budget_units: u32,
    queued_response_bytes: AtomicU64,
    max_queued_response_bytes: u64,
    response_freed: Wakeup,
    statements: Arc<Semaphore>,
    statement_slots: usize,
    pool: tokio::runtime::Handle,
    timeouts: Timeouts,
    /// `native_transport_max_requests_per_second`, when rate limiting is enabled.
    rate: Option<parking_lot::Mutex<TokenBucket>>,
    /// Set at shutdown: connections stop reading, so the drain sees running statements end.
    closing: tokio::sync::watch::Sender<bool>,
}

/// How long after a read's timeout its work is stopped (`exec::cancel`): the timeout answers the
/// client first.
pub const CANCEL_GRACE: Duration = Duration::from_millis(50);

/// How much longer than the coordinator a replicated request's own timeout waits.
const RING_TIMEOUT_GRACE: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, Copy)]
struct Timeouts {
    read: Duration,
    range: Duration,
    write: Duration,
    other: Duration,
}

/// Statements that may run long (scans, range aggregates, DDL; see [`runs_inline`]) run here,
/// not on the I/O workers: a slow statement then holds one of these threads, and connections
/// keep being read and answered. The server owns it from start to stop; [`Limits`] holds only a
/// handle.
pub struct StatementPool {
    /// Taken only by `drop`.
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
}

impl StatementPool {
    /// `native_transport_max_threads` worker threads.
    pub fn start(config: &NodeConfig) -> std::io::Result<StatementPool> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.native_transport_max_threads.max(1))
            .thread_name("helenus-stmt")
            .enable_all()
            .build()?;
        Ok(StatementPool {
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
        })
    }

    pub fn handle(&self) -> tokio::runtime::Handle {
        self.handle.clone()
    }
}

impl Drop for StatementPool {
    /// A runtime dropped the ordinary way blocks on its workers, which tokio refuses inside
    /// another runtime (where the server stops); statements still running are abandoned, as
    /// the drain already reported.
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Limits {
    /// The bounds `config` sets, with statements spawned on `pool` (a [`StatementPool`]'s).
    pub fn new(config: &NodeConfig, pool: tokio::runtime::Handle) -> Arc<Limits> {
        let threads = config.native_transport_max_threads.max(1);
        let units = (config.native_transport_max_request_data_in_flight_bytes / UNIT_BYTES)
            .clamp(1, u64::from(u32::MAX >> 4)) as u32;
        let ms = Duration::from_millis;
        // In a ring the coordinator times out on its own at these same timeouts and reports
        // what its replicas answered; the request's own bound then only catches what it does not.
        let ring_grace = if config.is_clustered() {
            RING_TIMEOUT_GRACE
        } else {
            Duration::ZERO
        };
        Arc::new(Limits {
            request_budget: Arc::new(Semaphore::new(units as usize)),
            request_budget_units: units,
            queued_response_bytes: AtomicU64::new(0),
            max_queued_response_bytes: config.native_transport_max_response_data_queued_bytes,
            response_freed: Wakeup::default(),
            statements: Arc::new(Semaphore::new(threads)),
            statement_slots: threads,
            pool,
            closing: tokio::sync::watch::channel(false).0,
            rate: config.native_transport_rate_limiting_enabled.then(|| {
                parking_lot::Mutex::new(TokenBucket::new(
                    config.native_transport_max_requests_per_second,
                ))
            }),
            timeouts: Timeouts {
                read: ms(config.read_request_timeout_ms) + ring_grace,
                range: ms(config.range_request_timeout_ms) + ring_grace,
                write: ms(config.write_request_timeout_ms) + ring_grace,
                other: ms(config.request_timeout_ms),
            },
        })
    }

    /// How long half a frame may wait for its next bytes (Cassandra's `request_timeout`).
    pub fn partial_frame_timeout(&self) -> Duration {
        self.timeouts.other
    }

    /// The pool statements run on.
    pub fn pool(&self) -> &tokio::runtime::Handle {
        &self.pool
    }

    /// Whether `native_transport_rate_limiting_enabled` puts a rate on requests.
    pub fn rate_limited(&self) -> bool {
        self.rate.is_some()
    }

    /// Takes one request from the node-wide rate. As in Cassandra, a client over the rate is
    /// slowed down (its connection is not read meanwhile), unless it asked in STARTUP to be
    /// refused instead (`THROW_ON_OVERLOAD`): then the rate it breached is returned at once.
    pub async fn admit_rate(&self, throw_on_overload: bool) -> Result<(), u64> {
        let Some(bucket) = &self.rate else {
            return Ok(());
        };
        loop {
            let wait = {
                let mut bucket = bucket.lock();
                match bucket.take(tokio::time::Instant::now()) {
                    None => return Ok(()),
                    Some(_) if throw_on_overload => return Err(bucket.rate_per_s as u64),
                    Some(d) => d,
                }
            };
            tokio::time::sleep(wait).await;
        }
    }

    /// Resolves once shutdown has begun.
    pub async fn closing(&self) {
        let mut rx = self.closing.subscribe();
        let _ = rx.wait_for(|closing| *closing).await;
    }

    /// Stops every connection from reading, then waits until no statement runs, or `timeout`
    /// passes; returns how many still run.
    pub async fn drain(&self, timeout: Duration) -> usize {
        self.closing.send_replace(true);
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let running = self.statement_slots - self.statements.available_permits();
            if running == 0 || tokio::time::Instant::now() >= deadline {
                return running;
            }
            tokio::time::sleep(RECHECK).await;
        }
    }

    /// Bytes of requests charged to the budget now.
    #[cfg(test)]
    pub fn request_bytes_in_use(&self) -> u64 {
        let free = self.request_budget.available_permits() as u64;
        (u64::from(self.request_budget_units) - free.min(u64::from(self.request_budget_units)))
            * UNIT_BYTES
    }

    #[cfg(test)]
    pub fn queued_response_bytes(&self) -> u64 {
        self.queued_response_bytes.load(Ordering::Acquire)
    }

    /// A charge of zero bytes, to grow as a frame arrives.
    pub fn empty_charge(self: &Arc<Self>) -> RequestCharge {
        RequestCharge {
            budget: self.request_budget.clone(),
            units: 0,
        }
    }

    /// How long a request of this kind may run before it is answered with a timeout.
    fn timeout_of(&self, kind: RequestKind) -> Duration {
        match kind {
            RequestKind::Read => self.timeouts.read,
            RequestKind::Range => self.timeouts.range,
            RequestKind::Write { .. } => self.timeouts.write,
            RequestKind::Other => self.timeouts.other,
        }
    }
}

/// Requests allowed per second, with up to one second's worth saved up for a burst.
struct TokenBucket {
    rate_per_s: f64,
    tokens: f64,
    refilled_at: tokio::time::Instant,
}

impl TokenBucket {
    fn new(rate_per_s: u64) -> TokenBucket {
        let rate_per_s = rate_per_s.max(1) as f64;
        TokenBucket {
            rate_per_s,
            tokens: rate_per_s,
            refilled_at: tokio::time::Instant::now(),
        }
    }

    /// Takes a token, or says how long until one is due.
    fn take(&mut self, now: tokio::time::Instant) -> Option<Duration> {
        let elapsed_s = now
            .saturating_duration_since(self.refilled_at)
            .as_secs_f64();
        self.tokens = (self.tokens + elapsed_s * self.rate_per_s).min(self.rate_per_s);
        self.refilled_at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            None
        } else {
            Some(Duration::from_secs_f64(
                (1.0 - self.tokens) / self.rate_per_s,
            ))
        }
    }
}

/// Bytes held against the node's request budget; given back when dropped.
pub struct RequestCharge {
    budget: Arc<Semaphore>,
    units: u32,
}

impl RequestCharge {
    /// Makes the charge `bytes`, waiting for budget if it grows; a frame larger than the whole
    /// budget is charged the whole budget, so it still goes through alone.
    pub async fn set_to(&mut self, bytes: usize, total_units: u32) {
        let Some(want) = self.shrink_or_grow_to(bytes, total_units) else {
            return;
        };
        if let Ok(permit) = self.budget.acquire_many(want - self.units).await {
            permit.forget();
            self.units = want;
        }
    }

    /// Like [`RequestCharge::set_to`] without waiting: false (and the charge unchanged) when
    /// the budget has not the bytes now.
    pub fn try_set_to(&mut self, bytes: usize, total_units: u32) -> bool {
        let Some(want) = self.shrink_or_grow_to(bytes, total_units) else {
            return true;
        };
        match self.budget.try_acquire_many(want - self.units) {
            Ok(permit) => {
                permit.forget();
                self.units = want;
                true
            }
            Err(_) => false,
        }
    }

    /// The units `bytes` needs (at most the whole budget). When that is no more than the charge
    /// holds, the charge shrinks to it and `None` is returned; otherwise the units wanted, for
    /// the caller to acquire the difference.
    fn shrink_or_grow_to(&mut self, bytes: usize, total_units: u32) -> Option<u32> {
        let want = (bytes as u64)
            .div_ceil(UNIT_BYTES)
            .min(u64::from(total_units)) as u32;
        if want > self.units {
            return Some(want);
        }
        self.budget.add_permits((self.units - want) as usize);
        self.units = want;
        None
    }

    /// Splits off the charge of a decoded frame, leaving the rest with the read buffer.
    pub fn take(&mut self) -> RequestCharge {
        let units = std::mem::take(&mut self.units);
        RequestCharge {
            budget: self.budget.clone(),
            units,
        }
    }

    #[cfg(test)]
    pub fn bytes(&self) -> u64 {
        u64::from(self.units) * UNIT_BYTES
    }
}

impl Drop for RequestCharge {
    fn drop(&mut self) {
        if self.units > 0 {
            self.budget.add_permits(self.units as usize);
        }
    }
}

impl Limits {
    /// Sets `charge` to cover `bytes` of a frame (nothing for frames up to
    /// [`FREE_REQUEST_BYTES`]).
    pub async fn charge_frame_bytes(&self, charge: &mut RequestCharge, bytes: usize) {
        let bytes = if bytes > FREE_REQUEST_BYTES { bytes } else { 0 };
        charge.set_to(bytes, self.request_budget_units).await;
    }

    /// [`Limits::charge_frame_bytes`] for a connection that asked (`THROW_ON_OVERLOAD`) to be
    /// refused rather than slowed down: the OVERLOADED message Cassandra gives when the bytes
    /// are not in the budget now.
    pub fn try_charge_frame_bytes(
        &self,
        charge: &mut RequestCharge,
        bytes: usize,
    ) -> Result<(), String> {
        let wanted = if bytes > FREE_REQUEST_BYTES { bytes } else { 0 };
        if charge.try_set_to(wanted, self.request_budget_units) {
            return Ok(());
        }
        // Helenus has one node-wide budget and no narrower one per client address, so the
        // endpoint's limit is the node's, and its use is what this connection holds.
        let limit = u64::from(self.request_budget_units) * UNIT_BYTES;
        let free = (self.request_budget.available_permits() as u64).min(limit / UNIT_BYTES);
        let global = limit - free * UNIT_BYTES;
        let endpoint = u64::from(charge.units) * UNIT_BYTES;
        Err(format!(
            "Request breached limit on bytes in flight. (Endpoint: {endpoint}/{limit} bytes, Global: {global}/{limit} bytes.)Server is currently in an overloaded state and cannot accept more requests."
        ))
    }
}

/// A `Notify` signalled only while someone waits on it. `notify_waiters` locks the waiter list,
/// and every statement releases response bytes twice (settled, then written): four locks per
/// request for waiters that almost never exist.
///
/// A waiter registers, creates its `Notified`, then looks at the state again; a waker changes
/// the state, then looks for waiters; both sides SeqCst, so one of them sees the other.
#[derive(Default)]
struct Wakeup {
    notify: Notify,
    waiting: AtomicUsize,
}

impl Wakeup {
    fn wake(&self) {
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.notify.notify_waiters();
        }
    }

    fn register(&self) -> Registered<'_> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        Registered(self)
    }
}

/// A waiter of a [`Wakeup`], until dropped.
struct Registered<'a>(&'a Wakeup);

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The per-connection half: bytes of this connection's responses not yet written.
pub struct ResponseGate {
    queued_bytes: AtomicU64,
    estimate_bytes: AtomicU64,
    freed: Wakeup,
    running: Arc<Semaphore>,
}

impl Default for ResponseGate {
    fn default() -> Self {
        ResponseGate {
            queued_bytes: AtomicU64::new(0),
            estimate_bytes: AtomicU64::new(INITIAL_RESPONSE_ESTIMATE_BYTES),
            freed: Wakeup::default(),
            running: Arc::new(Semaphore::new(MAX_RUNNING_PER_CONNECTION)),
        }
    }
}

/// Response bytes counted against a connection and the node until the writer has written them.
pub struct ResponseCharge {
    gate: Arc<ResponseGate>,
    limits: Arc<Limits>,
    bytes: u64,
}

impl ResponseCharge {
    /// Replaces the reserved estimate with the response's actual size.
    pub fn settle(&mut self, actual_bytes: u64) {
        let old = self.bytes;
        self.bytes = actual_bytes;
        if actual_bytes >= old {
            let more = actual_bytes - old;
            self.gate.queued_bytes.fetch_add(more, Ordering::AcqRel);
            self.limits
                .queued_response_bytes
                .fetch_add(more, Ordering::AcqRel);
        } else {
            self.release(old - actual_bytes);
        }
        // The next statement of this connection reserves about what this one produced; the
        // old estimate decays so one large answer does not throttle the connection for ever.
        let est = self.gate.estimate_bytes.load(Ordering::Relaxed);
        let next = actual_bytes.max(est / 2).max(1024);
        self.gate.estimate_bytes.store(next, Ordering::Relaxed);
    }

    fn release(&self, bytes: u64) {
        // SeqCst, as the waiter's registration and re-check (see `Wakeup`).
        self.gate.queued_bytes.fetch_sub(bytes, Ordering::SeqCst);
        self.limits
            .queued_response_bytes
            .fetch_sub(bytes, Ordering::SeqCst);
        self.gate.freed.wake();
        self.limits.response_freed.wake();
    }
}

impl Drop for ResponseCharge {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.release(self.bytes);
        }
    }
}

/// Leave to run one statement: a per-connection running slot, a node-wide statement slot and
/// a reservation of response bytes.
pub struct Admission {
    pub response: ResponseCharge,
    _running: tokio::sync::OwnedSemaphorePermit,
    _statement: tokio::sync::OwnedSemaphorePermit,
}

impl ResponseGate {
    /// Whether this connection must wait before starting another statement: over its own high
    /// water mark, or holding unwritten responses while the node is over its bound. A
    /// connection with nothing queued always gets one statement started, so a client that
    /// never reads its answers cannot stall every other client by filling the node's bound.
    fn over(&self, limits: &Limits) -> bool {
        let mine = self.queued_bytes.load(Ordering::SeqCst);
        mine >= CONNECTION_RESPONSE_HIGH_WATER_BYTES
            || (mine > 0
                && limits.queued_response_bytes.load(Ordering::SeqCst)
                    >= limits.max_queued_response_bytes)
    }

    /// Waits until this connection and the node have room for another response, then takes a
    /// running slot and a statement slot. `None` only if the semaphores were closed.
    pub async fn admit(self: &Arc<Self>, limits: &Arc<Limits>) -> Option<Admission> {
        let running = self.running.clone().acquire_owned().await.ok()?;
        loop {
            while self.over(limits) {
                let _registered = (self.freed.register(), limits.response_freed.register());
                let conn = self.freed.notify.notified();
                let node = limits.response_freed.notify.notified();
                // Again, registered: a release between the first look and the registration
                // saw no waiter and woke nobody.
                if !self.over(limits) {
                    break;
                }
                tokio::select! {
                    _ = conn => {}
                    _ = node => {}
                    _ = tokio::time::sleep(RECHECK) => {}
                }
            }
            let statement = limits.statements.clone().acquire_owned().await.ok()?;
            // Another statement may have filled the queue while this one waited for a slot.
            if self.over(limits) {
                drop(statement);
                continue;
            }
            let bytes = self.estimate_bytes.load(Ordering::Relaxed);
            self.queued_bytes.fetch_add(bytes, Ordering::AcqRel);
            limits
                .queued_response_bytes
                .fetch_add(bytes, Ordering::AcqRel);
            return Some(Admission {
                response: ResponseCharge {
                    gate: self.clone(),
                    limits: limits.clone(),
                    bytes,
                },
                _running: running,
                _statement: statement,
            });
        }
    }
}

/// The running and statement slots of an admitted statement, held while it runs.
pub struct Slots {
    _running: tokio::sync::OwnedSemaphorePermit,
    _statement: tokio::sync::OwnedSemaphorePermit,
}

impl Admission {
    /// Separates the slots (held while the statement runs) from the response bytes (held
    /// until the writer has written them).
    pub fn split(self) -> (ResponseCharge, Slots) {
        (
            self.response,
            Slots {
                _running: self._running,
                _statement: self._statement,
            },
        )
    }

    #[cfg(test)]
    fn into_response_charge(self) -> ResponseCharge {
        self.response
    }
}

/// The timeout for `kind` and the error a client gets when it passes; reads are cancelled at
/// the timeout, writes and schema changes run on (Cassandra does not undo a timed-out write
/// either, and stopping one halfway would leave it half applied).
pub fn timeout_for(limits: &Limits, kind: RequestKind) -> Duration {
    limits.timeout_of(kind)
}

/// The error answering a request of `kind` that passed its timeout.
pub fn timeout_error(
    kind: RequestKind,
    consistency: proto::Consistency,
    timeout: Duration,
) -> crate::exec::ExecError {
    use crate::exec::ExecError;
    match kind {
        RequestKind::Read | RequestKind::Range => ExecError::ReadTimeout {
            consistency,
            received: 0,
            block_for: 1,
            data_present: false,
        },
        RequestKind::Write { write_type } => ExecError::WriteTimeout {
            consistency,
            write_type: write_type.to_string(),
            received: 0,
            block_for: 1,
        },
        RequestKind::Other => ExecError::Server(format!(
            "Request did not complete within request_timeout ({} ms)",
            timeout.as_millis()
        )),
    }
}

/// Whether a request of `kind` is stopped at its timeout (see [`timeout_for`]).
pub fn cancel_at_timeout(kind: RequestKind) -> bool {
    matches!(kind, RequestKind::Read | RequestKind::Range)
}

/// Largest request that runs on the I/O workers: a write's work grows with its values (a 12 MB
/// list took 0.3 s, and two of them stalled every other client: tests/clients/hostile).
pub const INLINE_MAX_REQUEST_BYTES: usize = 64 << 10;

/// Whether a request of `request_bytes` runs in its connection's task on the I/O workers rather
/// than on the statement pool: single-partition reads, and writes of at most
/// [`INLINE_MAX_REQUEST_BYTES`], whose work is bounded (a read's by its page), and which are the
/// hot path. Scans, aggregates over ranges, DDL, large writes and the rest keep to the pool,
/// where a long one cannot hold up the connections. The price: a slow single-partition read
/// (an aggregate over a huge partition) holds an I/O worker until its timeout stops it, as
/// Cassandra's read stage would hold one of its threads.
pub fn runs_inline(kind: RequestKind, request_bytes: usize) -> bool {
    match kind {
        RequestKind::Read => true,
        RequestKind::Write { .. } => request_bytes <= INLINE_MAX_REQUEST_BYTES,
        RequestKind::Range | RequestKind::Other => false,
    }
}

/// A close upper estimate of a response's encoded size, counted before the writer encodes it.
pub fn response_size_bytes(response: &proto::Response) -> u64 {
    const HEADER_AND_METADATA: u64 = 512;
    match response {
        proto::Response::Result(proto::ResultBody::Rows(rows)) => {
            let cells: u64 = rows
                .rows
                .iter()
                .map(|r| {
                    r.iter()
                        .map(|c| 4 + c.as_ref().map_or(0, |b| b.len() as u64))
                        .sum::<u64>()
                })
                .sum();
            let columns = rows.metadata.columns.len() as u64 * 64;
            HEADER_AND_METADATA + cells + columns
        }
        proto::Response::Result(proto::ResultBody::EncodedRows(rows)) => {
            let columns = rows.metadata.columns.len() as u64 * 64;
            HEADER_AND_METADATA + rows.body.len() as u64 + columns
        }
        _ => HEADER_AND_METADATA,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_classified_for_their_timeout() {
        assert_eq!(
            kind_of_statement("select * from ks.t where k = 1"),
            RequestKind::Read
        );
        assert_eq!(kind_of_statement("SELECT * FROM ks.t"), RequestKind::Range);
        assert_eq!(
            kind_of_statement("SELECT * FROM t WHERE v = 1 ALLOW FILTERING"),
            RequestKind::Range
        );
        assert_eq!(
            kind_of_statement("  insert into t (k) values (1)"),
            RequestKind::Write {
                write_type: "SIMPLE"
            }
        );
        assert_eq!(
            kind_of_statement("CREATE TABLE t (k int)"),
            RequestKind::Other
        );
    }

    #[test]
    fn only_single_partition_statements_run_on_the_io_workers() {
        let inline = |q: &str| runs_inline(kind_of_statement(q), 100);
        assert!(inline("SELECT * FROM t WHERE k = ?"));
        assert!(inline("INSERT INTO t (k) VALUES (?)"));
        assert!(inline(
            "BEGIN BATCH INSERT INTO t (k) VALUES (1) APPLY BATCH"
        ));
        assert!(runs_inline(kind_of_batch(proto::BatchType::Unlogged), 100));
        let large = INLINE_MAX_REQUEST_BYTES + 1;
        let insert = kind_of_statement("INSERT INTO t (k) VALUES (?)");
        assert!(
            !runs_inline(insert, large),
            "a large write holds a pool thread"
        );
        assert!(!runs_inline(kind_of_batch(proto::BatchType::Logged), large));
        assert!(!inline("SELECT count(*) FROM t"));
        assert!(!inline("SELECT * FROM t WHERE token(k) > 0"));
        assert!(!inline("SELECT * FROM t WHERE v = 1 ALLOW FILTERING"));
        assert!(!inline("CREATE TABLE t (k int PRIMARY KEY)"));
        assert!(!inline("TRUNCATE t"));
    }

    #[tokio::test]
    async fn a_statement_pool_stops_inside_the_runtime_that_owns_it() {
        // Dropping a tokio runtime the ordinary way inside another one panics; the pool must
        // not, since the server drops it at the end of its async main.
        let cfg = NodeConfig {
            native_transport_max_threads: 2,
            ..NodeConfig::default()
        };
        let pool = StatementPool::start(&cfg).unwrap();
        let ran = pool.handle().spawn(async { 6 * 7 }).await.unwrap();
        assert_eq!(ran, 42);
        drop(pool);
        let again = StatementPool::start(&cfg).unwrap();
        assert_eq!(again.handle().spawn(async { 1 }).await.unwrap(), 1);
    }

    #[tokio::test]
    async fn a_connection_over_its_high_water_mark_waits_to_start_statements() {
        let limits = Limits::new(&NodeConfig::default(), tokio::runtime::Handle::current());
        let gate = Arc::new(ResponseGate::default());
        let mut first = gate.admit(&limits).await.unwrap().into_response_charge();
        first.settle(CONNECTION_RESPONSE_HIGH_WATER_BYTES + 1);
        assert_eq!(
            limits.queued_response_bytes(),
            CONNECTION_RESPONSE_HIGH_WATER_BYTES + 1
        );
        let waiting = tokio::time::timeout(Duration::from_millis(100), gate.admit(&limits)).await;
        assert!(waiting.is_err(), "admitted past the high-water mark");
        drop(first);
        assert_eq!(limits.queued_response_bytes(), 0);
        let admitted = tokio::time::timeout(Duration::from_secs(1), gate.admit(&limits)).await;
        assert!(matches!(admitted, Ok(Some(_))));
    }

    #[tokio::test]
    async fn a_waiting_connection_is_woken_by_the_release_not_the_recheck_timer() {
        use std::future::Future;
        let limits = Limits::new(&NodeConfig::default(), tokio::runtime::Handle::current());
        let gate = Arc::new(ResponseGate::default());
        let mut first = gate.admit(&limits).await.unwrap().into_response_charge();
        first.settle(CONNECTION_RESPONSE_HIGH_WATER_BYTES + 1);
        // Polled by hand, never yielding to the runtime: its recheck timer cannot fire, so only
        // the release's wake-up can make the second poll ready.
        let mut waiting = std::pin::pin!(gate.admit(&limits));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(waiting.as_mut().poll(&mut cx).is_pending());
        assert_eq!(gate.freed.waiting.load(Ordering::SeqCst), 1);
        first.settle(0);
        assert!(matches!(
            waiting.as_mut().poll(&mut cx),
            std::task::Poll::Ready(Some(_))
        ));
        assert_eq!(gate.freed.waiting.load(Ordering::SeqCst), 0);
        assert_eq!(limits.response_freed.waiting.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_client_filling_the_node_bound_does_not_stall_an_idle_connection() {
        let config = NodeConfig {
            native_transport_max_response_data_queued_bytes: 1024 * 1024,
            ..NodeConfig::default()
        };
        let limits = Limits::new(&config, tokio::runtime::Handle::current());
        let hog = Arc::new(ResponseGate::default());
        let mut held = hog.admit(&limits).await.unwrap().into_response_charge();
        held.settle(2 * 1024 * 1024);
        // The hog holds unwritten responses with the node over its bound: it waits...
        let hog_again = tokio::time::timeout(Duration::from_millis(100), hog.admit(&limits)).await;
        assert!(hog_again.is_err(), "the hog started another statement");
        // ...while a connection with nothing queued is still served.
        let idle = Arc::new(ResponseGate::default());
        let served = tokio::time::timeout(Duration::from_secs(1), idle.admit(&limits)).await;
        assert!(
            matches!(served, Ok(Some(_))),
            "an idle connection was stalled"
        );
    }

    #[test]
    fn token_bucket_allows_its_rate_and_no_more() {
        let start = tokio::time::Instant::now();
        let mut bucket = TokenBucket::new(100);
        let allowed = (0..150).filter(|_| bucket.take(start).is_none()).count();
        assert_eq!(allowed, 100, "a second's burst, then nothing");
        let wait = bucket.take(start).unwrap();
        assert!(wait <= Duration::from_millis(10), "{wait:?}");
        assert!(bucket.take(start + Duration::from_millis(10)).is_none());
    }

    #[tokio::test]
    async fn request_budget_blocks_past_its_size_and_frees_on_drop() {
        let cfg = NodeConfig {
            native_transport_max_request_data_in_flight_bytes: 1024 * 1024,
            ..NodeConfig::default()
        };
        let limits = Limits::new(&cfg, tokio::runtime::Handle::current());
        let mut a = limits.empty_charge();
        limits.charge_frame_bytes(&mut a, 800 * 1024).await;
        assert_eq!(limits.request_bytes_in_use(), 800 * 1024);
        let mut b = limits.empty_charge();
        let blocked = tokio::time::timeout(
            Duration::from_millis(100),
            limits.charge_frame_bytes(&mut b, 400 * 1024),
        )
        .await;
        assert!(blocked.is_err(), "the budget was overdrawn");
        // A small frame is never charged, so it is never held up by large ones.
        let mut c = limits.empty_charge();
        limits.charge_frame_bytes(&mut c, 1000).await;
        assert_eq!(c.bytes(), 0);
        // A buffer that shrank back gives its charge back.
        limits.charge_frame_bytes(&mut a, 1000).await;
        assert_eq!(limits.request_bytes_in_use(), 0);
        limits.charge_frame_bytes(&mut a, 200 * 1024).await;
        drop(a);
        assert_eq!(limits.request_bytes_in_use(), 0);
    }
}
