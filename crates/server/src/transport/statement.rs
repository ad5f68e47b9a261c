//! One request's way from the connection through admission, its run (inline or on the
//! statement pool) and back to the writer as an answer.

use super::{dispatch, AfterWrite, Outgoing};
use crate::exec::{self, Session};
use crate::limits::{self, Limits, RequestCharge, ResponseGate, Slots};
use crate::node::NodeState;
use futures::FutureExt;
use helenus_protocol as proto;
use std::net::SocketAddr;
use std::sync::Arc;

/// One request on its way through admission, the statement pool and back to the writer.
pub(super) struct Statement {
    pub(super) node: Arc<NodeState>,
    pub(super) limits: Arc<Limits>,
    pub(super) gate: Arc<ResponseGate>,
    pub(super) session: Arc<parking_lot::Mutex<Session>>,
    pub(super) client_id: u64,
    pub(super) peer: SocketAddr,
}

/// A statement on its way to its answer (none when the connection is closing).
pub(super) type AnswerTask =
    std::pin::Pin<Box<dyn std::future::Future<Output = Option<Outgoing>> + Send>>;

impl Statement {
    pub(super) async fn run(
        self,
        frame: proto::RequestFrame,
        frame_bytes: usize,
        request_charge: RequestCharge,
    ) -> Option<Outgoing> {
        let version = frame.version;
        let stream = frame.stream;
        let (kind, consistency) = classify(&self.node, &frame.request);
        let timeout = limits::timeout_for(&self.limits, kind);
        let deadline = tokio::time::Instant::now() + timeout;
        // Waits while this connection's (or the node's) unwritten responses are over their
        // bound: a client that does not read stops getting statements run for it.
        let admission = self.gate.admit(&self.limits).await?;
        let (mut response_charge, slots) = admission.split();
        let cancel = limits::cancel_at_timeout(kind);
        // A read's work stops at its first check past the timeout (a little after it, so
        // the client's answer is always the timeout's, not the stopped work's).
        let stop_at = cancel.then(|| deadline.into_std() + limits::CANCEL_GRACE);
        let work = statement_work(
            (self.node.clone(), self.session.clone()),
            (self.client_id, self.peer),
            frame,
            slots,
            stop_at,
        );
        let finished = match limits::runs_inline(kind, frame_bytes) {
            true => self.run_inline(work, deadline, cancel).await,
            false => self.run_on_pool(work, deadline, cancel).await,
        };
        let ((response, warnings), trace_id) = match finished {
            Some(Ok(done)) => done,
            Some(Err(failure)) => {
                tracing::error!("a statement failed: {failure}");
                let err = exec::ExecError::Server(format!("statement failed: {failure}"));
                ((exec::error_response(err), Vec::new()), None)
            }
            None => {
                let err = limits::timeout_error(kind, consistency, timeout);
                ((exec::error_response(err), Vec::new()), None)
            }
        };
        response_charge.settle(limits::response_size_bytes(&response));
        let mut out = proto::ResponseFrame::new(version, stream, response);
        out.tracing_id = trace_id;
        // Protocol v3 has no WARNING flag.
        if version >= 4 {
            out.warnings = warnings;
        }
        Some(Outgoing {
            frame: out,
            after: AfterWrite::Nothing,
            decode_error: None,
            charges: Some((request_charge, response_charge)),
        })
    }
}

/// What a statement answers: the response with its warnings, and the trace session's id.
type StatementOutput = ((proto::Response, Vec<String>), Option<[u8; 16]>);
type StatementWork = std::pin::Pin<Box<dyn std::future::Future<Output = StatementOutput> + Send>>;

impl Statement {
    /// Runs a single-partition statement on the I/O workers (on its connection's task unless it
    /// had to wait; see `start_statement`), not the statement pool: handing it to the pool and
    /// its answer back cost two cross-thread wake-ups per request (latte on standard1: server
    /// CPU per write 27 -> 21 us, per read 27 -> 19 us once moved here). None when the timeout
    /// passed first; a write then goes on in the pool, as writes are never stopped half-way.
    async fn run_inline(
        &self,
        mut work: StatementWork,
        deadline: tokio::time::Instant,
        cancel: bool,
    ) -> Option<Result<StatementOutput, String>> {
        // A panic must still answer the client, as a pool task's JoinError does.
        let guarded = std::panic::AssertUnwindSafe(&mut work).catch_unwind();
        match tokio::time::timeout_at(deadline, guarded).await {
            // Work that ran past its deadline without yielding (it answers when it is done, not
            // when a timer fires): a read is answered as the timeout it was, as on the pool.
            Ok(Ok(_)) if cancel && tokio::time::Instant::now() >= deadline => None,
            Ok(Ok(done)) => Some(Ok(done)),
            Ok(Err(_)) => Some(Err("the statement panicked".to_string())),
            Err(_) => {
                if !cancel {
                    drop(self.limits.pool().spawn(work));
                }
                None
            }
        }
    }

    /// Runs a statement on the statement pool, so that a long one (a scan, an aggregate, DDL)
    /// holds a pool thread and never an I/O worker. None when the timeout passed first.
    async fn run_on_pool(
        &self,
        work: StatementWork,
        deadline: tokio::time::Instant,
        cancel: bool,
    ) -> Option<Result<StatementOutput, String>> {
        let handle = self.limits.pool().spawn(work);
        let abort = handle.abort_handle();
        match tokio::time::timeout_at(deadline, handle).await {
            Ok(done) => Some(done.map_err(|e| e.to_string())),
            Err(_) => {
                if cancel {
                    abort.abort();
                }
                None
            }
        }
    }
}

/// The statement's work, boxed, built here rather than in `Statement::run`: an async block
/// that creates a future keeps room for it in its own state even when it boxes it at once, so
/// the statement's futures had grown to 10-20 KiB each (size_of_val: the connection's task
/// for it 21.7 KiB, `run` 10.7, the cancel scope 19.2, the work 9.6, the request 8.4), and
/// every move of one (into its box, into its parent) was a memcpy of all of it.
fn statement_work(
    (node, session): (Arc<NodeState>, Arc<parking_lot::Mutex<Session>>),
    (client_id, peer): (u64, SocketAddr),
    frame: proto::RequestFrame,
    slots: Slots,
    stop_at: Option<std::time::Instant>,
) -> StatementWork {
    let trace = frame.tracing().then(|| {
        let coordinator =
            SocketAddr::new(node.config.rpc_address, node.config.native_transport_port);
        exec::trace::TraceRequest::of(&frame.request, peer.ip(), coordinator)
    });
    let run = exec::client_warn::collecting(boxed_request(
        node.clone(),
        session,
        (client_id, peer),
        frame,
    ));
    // The slots are held by the work itself: a write that runs on past its timeout still
    // counts against the pool. A traced statement's work is a type of its own, so that the
    // trace's state (~0.9 KiB) is no part of every other statement's future.
    match trace {
        Some(what) => within_deadline(stop_at, async move {
            let _slots = slots;
            let (out, id) = exec::trace::traced(&node.traces, what, run).await;
            (out, Some(*id.as_bytes()))
        }),
        None => within_deadline(stop_at, async move {
            let _slots = slots;
            (run.await, None)
        }),
    }
}

/// `work`, boxed, stopping at its first check past `stop_at` when it has one.
fn within_deadline<F>(stop_at: Option<std::time::Instant>, work: F) -> StatementWork
where
    F: std::future::Future<Output = StatementOutput> + Send + 'static,
{
    match stop_at {
        Some(at) => Box::pin(exec::cancel::until(at, work)),
        None => Box::pin(work),
    }
}

/// The request's own future, boxed: it is as large as the largest statement kind's (KiBs),
/// and unboxed it made every future around it that large too.
fn boxed_request(
    node: Arc<NodeState>,
    session: Arc<parking_lot::Mutex<Session>>,
    (client_id, peer): (u64, SocketAddr),
    frame: proto::RequestFrame,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = proto::Response> + Send>> {
    Box::pin(dispatch::handle_request(
        node, session, client_id, peer, frame,
    ))
}

/// The kind of a request (for its timeout) and the consistency its timeout error reports.
fn classify(
    node: &NodeState,
    request: &proto::Request,
) -> (limits::RequestKind, proto::Consistency) {
    use limits::RequestKind;
    match request {
        proto::Request::Query { query, params } => {
            (limits::kind_of_statement(query), params.consistency)
        }
        proto::Request::Execute { id, params, .. } => {
            let kind = exec::cached(node, id).map_or(RequestKind::Other, |p| p.kind);
            (kind, params.consistency)
        }
        proto::Request::Batch(b) => (limits::kind_of_batch(b.batch_type), b.consistency),
        _ => (RequestKind::Other, proto::Consistency::One),
    }
}
