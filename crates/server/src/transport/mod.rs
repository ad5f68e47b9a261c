//! The native transport: accepts connections, decodes frames, runs requests concurrently (responses
//! go back out of order, matched by stream id), and writes many responses per syscall.

mod audited;
mod cores;
mod dispatch;
mod statement;
mod writer;

use crate::exec::{self, Session};
use crate::limits::{Limits, RequestCharge, ResponseCharge, ResponseGate};
use crate::node::{ClientInfo, NodeEvent, NodeState};
use crate::tls::{self, Accepted, ServerTls};
use bytes::BytesMut;
use futures::FutureExt;
use helenus_protocol as proto;
use statement::{AnswerTask, Statement};
use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Semaphore};

pub use cores::ConnectionThreads;

/// Requests in flight on one connection; past it the reader stops reading (TCP backpressure).
const MAX_IN_FLIGHT_PER_CONNECTION: usize = 2048;
/// Responses queued for the writer of one connection.
const WRITE_QUEUE_DEPTH: usize = 4096;
const READ_BUFFER_BYTES: usize = 64 * 1024;
/// Encoded responses gathered before one write syscall.
const WRITE_BATCH_BYTES: usize = 256 * 1024;
/// Answers of statements run on the reader's task, held back to reach the writer together:
/// handed over one by one, the writer woke for each and wrote ~5 per syscall (latte reads, 128
/// in flight: 10x the sendto calls). Bounded so the first of them waits little for the last.
const ANSWERED_BATCH: usize = 32;

/// What the writer must change after writing a frame (compression and v5 framing start after the
/// STARTUP exchange, exactly at a frame boundary).
#[derive(Debug, Clone, Copy)]
enum AfterWrite {
    Nothing,
    Negotiated {
        compression: Option<proto::Compression>,
        segments: bool,
    },
    Close,
}

struct Outgoing {
    frame: proto::ResponseFrame,
    after: AfterWrite,
    /// A decode failure to answer instead of `frame`: the writer's codec knows the framing
    /// the client expects (plain before the STARTUP exchange, segments after it in v5).
    decode_error: Option<proto::DecodeError>,
    /// The request's and the response's bytes stay counted until the response is written.
    charges: Option<(RequestCharge, ResponseCharge)>,
}

impl Outgoing {
    fn plain(frame: proto::ResponseFrame, after: AfterWrite) -> Outgoing {
        Outgoing {
            frame,
            after,
            decode_error: None,
            charges: None,
        }
    }
}

/// The reading and writing halves of a client connection, plaintext or TLS.
type Reader = Box<dyn AsyncRead + Send + Unpin>;
type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// Serves CQL clients on `listener`, over TLS when `tls` is given (`client_encryption_options`).
pub async fn serve(
    node: Arc<NodeState>,
    limits: Arc<Limits>,
    listener: TcpListener,
    tls: Option<ServerTls>,
    threads: Arc<ConnectionThreads>,
) {
    let tls = tls.map(Arc::new);
    let connections = Arc::new(Semaphore::new(
        node.config.native_transport_max_concurrent_connections,
    ));
    loop {
        let (socket, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // Out of file descriptors, typically: retrying at once would spin.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            drop(socket);
            continue;
        };
        let node = node.clone();
        let limits = limits.clone();
        let tls = tls.clone();
        let thread = threads.next_thread();
        let socket = match cores::Placed::new(socket, thread.as_ref()) {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!("connection {peer} dropped at accept: {e}");
                continue;
            }
        };
        thread
            .unwrap_or_else(tokio::runtime::Handle::current)
            .spawn(async move {
                let _permit = permit;
                let socket = match socket.register() {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::debug!("connection {peer} dropped at accept: {e}");
                        return;
                    }
                };
                let _ = socket.set_nodelay(true);
                // The handshake runs in the connection's own task: a slow client delays nobody.
                let (reader, writer, ssl): (Reader, Writer, bool) =
                    match tls::accept(tls.as_deref(), socket).await {
                        Ok(Accepted::Plain(s)) => {
                            let (r, w) = s.into_split();
                            (Box::new(r), Box::new(w), false)
                        }
                        Ok(Accepted::Tls(s)) => {
                            let (r, w) = tokio::io::split(*s);
                            (Box::new(r), Box::new(w), true)
                        }
                        Err(e) => {
                            tracing::debug!("connection {peer} refused at the TLS handshake: {e}");
                            return;
                        }
                    };
                let io = (reader, writer, ssl);
                if let Err(e) = serve_connection(node, limits, io, peer).await {
                    tracing::debug!("connection {peer} closed: {e}");
                }
            });
    }
}

/// One client connection: the handshake, then the frame loop (decode what the buffer holds,
/// dispatch it, read more), then the shutdown that lets the writer drain.
async fn serve_connection(
    node: Arc<NodeState>,
    limits: Arc<Limits>,
    (mut reader, writer, ssl): (Reader, Writer, bool),
    peer: SocketAddr,
) -> std::io::Result<()> {
    let max_frame = node.config.native_transport_max_frame_size_bytes;
    let (tx, rx) = mpsc::channel::<Outgoing>(WRITE_QUEUE_DEPTH);
    let write_task = tokio::spawn(writer::write_loop(writer, rx, max_frame));
    let mut conn = Connection::open(node, limits, tx, peer, max_frame);
    conn.node
        .update_client(conn.client_id, |c| c.ssl_enabled = ssl);
    while conn.dispatch_buffered().await.is_continue() && conn.read_more(&mut reader).await {}
    conn.close(write_task).await;
    Ok(())
}

/// The authenticator class STARTUP names when a login is required, as drivers expect it.
const PASSWORD_AUTHENTICATOR: &str = "org.apache.cassandra.auth.PasswordAuthenticator";

/// The reading side of one connection and what its requests share.
struct Connection {
    node: Arc<NodeState>,
    limits: Arc<Limits>,
    tx: mpsc::Sender<Outgoing>,
    /// Answers of statements that finished on this task, not yet handed to the writer.
    answered: Vec<Outgoing>,
    /// Commitlog entries of the statements run on this task, left buffered to be written
    /// together before any of their answers leaves (storage's commitlog/deferred.rs).
    unwritten: helenus_storage::UnwrittenAppends,
    peer: SocketAddr,
    client_id: u64,
    session: Arc<parking_lot::Mutex<Session>>,
    in_flight: Arc<Semaphore>,
    codec: proto::ServerConnectionCodec,
    buf: BytesMut,
    events_task: Option<tokio::task::JoinHandle<()>>,
    /// Whether STARTUP was received: before it only STARTUP and OPTIONS are answered.
    started: bool,
    gate: Arc<ResponseGate>,
    /// What the read buffer holds past FREE_REQUEST_BYTES: a large frame still arriving.
    buffer_charge: RequestCharge,
    /// STARTUP's `THROW_ON_OVERLOAD`: a request over the node's rate or its bytes in flight
    /// is refused with OVERLOADED instead of being slowed down.
    throw_on_overload: bool,
}

impl Connection {
    fn open(
        node: Arc<NodeState>,
        limits: Arc<Limits>,
        tx: mpsc::Sender<Outgoing>,
        peer: SocketAddr,
        max_frame: usize,
    ) -> Connection {
        let client_id = node.register_client(ClientInfo {
            address: peer,
            driver_name: None,
            driver_version: None,
            keyspace: None,
            protocol_version: 0,
            request_count: 0,
            username: None,
            ssl_enabled: false,
        });
        let buffer_charge = limits.empty_charge();
        Connection {
            node,
            limits,
            tx,
            answered: Vec::with_capacity(ANSWERED_BATCH),
            unwritten: helenus_storage::UnwrittenAppends::default(),
            peer,
            client_id,
            session: Arc::new(parking_lot::Mutex::new(Session::default())),
            in_flight: Arc::new(Semaphore::new(MAX_IN_FLIGHT_PER_CONNECTION)),
            codec: proto::ServerConnectionCodec::new(max_frame),
            buf: BytesMut::with_capacity(READ_BUFFER_BYTES),
            events_task: None,
            started: false,
            gate: Arc::new(ResponseGate::default()),
            buffer_charge,
            throw_on_overload: false,
        }
    }

    /// Decodes and dispatches every whole frame in the buffer; `Break` closes the connection.
    async fn dispatch_buffered(&mut self) -> ControlFlow<()> {
        loop {
            let before_bytes = self.buffered_bytes();
            let frame = match self.codec.decode(&mut self.buf) {
                Ok(Some(f)) => f,
                Ok(None) => return self.flush_answered().await,
                Err(e) => {
                    self.answer_decode_error(e).await?;
                    continue;
                }
            };
            self.check_started(&frame).await?;
            if !self.check_authenticated(&frame).await {
                continue;
            }
            let version = frame.version;
            self.node.update_client(self.client_id, |c| {
                c.request_count += 1;
                c.protocol_version = version;
            });
            match &frame.request {
                proto::Request::Startup(options) => self.startup(&frame, options).await?,
                proto::Request::Register { events } => self.register(&frame, events).await?,
                _ => self.start_statement(frame, before_bytes).await?,
            }
        }
    }

    /// A frame that does not decode gets its error answer; a fatal one closes the connection.
    async fn answer_decode_error(&mut self, e: proto::DecodeError) -> ControlFlow<()> {
        let fatal = !e.can_continue();
        let Some(response) = e.to_error_frame() else {
            return ControlFlow::Break(());
        };
        let out = Outgoing {
            frame: response,
            after: if fatal {
                AfterWrite::Close
            } else {
                AfterWrite::Nothing
            },
            decode_error: Some(e),
            charges: None,
        };
        self.send(out).await?;
        match fatal {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        }
    }

    /// Before STARTUP only STARTUP and OPTIONS are allowed; anything else closes the connection.
    async fn check_started(&mut self, frame: &proto::RequestFrame) -> ControlFlow<()> {
        if !self.started
            && !matches!(
                frame.request,
                proto::Request::Startup(_) | proto::Request::Options
            )
        {
            let opcode_name = request_name(&frame.request);
            let body = proto::ErrorBody::new(
                proto::ErrorCode::PROTOCOL,
                format!("Unexpected message {opcode_name}, expecting STARTUP or OPTIONS"),
            );
            let out = proto::ResponseFrame::new(
                frame.version,
                frame.stream,
                proto::Response::Error(body),
            );
            let _ = self.send(Outgoing::plain(out, AfterWrite::Close)).await;
            return ControlFlow::Break(());
        }
        if matches!(frame.request, proto::Request::Startup(_)) {
            self.started = true;
        }
        ControlFlow::Continue(())
    }

    /// With PasswordAuthenticator, a started connection that has not logged in may only send
    /// AUTH_RESPONSE; anything else gets Cassandra's protocol error (and is not run).
    async fn check_authenticated(&mut self, frame: &proto::RequestFrame) -> bool {
        if !self.node.auth.authenticate
            || !self.started
            || matches!(
                frame.request,
                proto::Request::Startup(_) | proto::Request::AuthResponse { .. }
            )
            || self.session.lock().user.is_some()
        {
            return true;
        }
        let body = proto::ErrorBody::new(
            proto::ErrorCode::PROTOCOL,
            format!(
                "Unexpected message {}, expecting SASL_RESPONSE",
                request_name(&frame.request)
            ),
        );
        let out =
            proto::ResponseFrame::new(frame.version, frame.stream, proto::Response::Error(body));
        let _ = self.send(Outgoing::plain(out, AfterWrite::Nothing)).await;
        false
    }

    /// STARTUP: negotiates compression (and v5 segments, which start after READY is written).
    async fn startup(
        &mut self,
        frame: &proto::RequestFrame,
        options: &std::collections::BTreeMap<String, String>,
    ) -> ControlFlow<()> {
        let compression = match options.get("COMPRESSION").map(|s| s.to_ascii_lowercase()) {
            None => Ok(None),
            Some(c) if c == "lz4" => Ok(Some(proto::Compression::Lz4)),
            Some(c) if c == "snappy" && frame.version < 5 => Ok(Some(proto::Compression::Snappy)),
            Some(other) => Err(other),
        };
        let (response, after) = match compression {
            Ok(compression) => {
                self.codec.set_compression(compression);
                if frame.version >= 5 {
                    self.codec.enable_segments();
                }
                // Cassandra takes exactly "1" as yes.
                self.throw_on_overload = options.get("THROW_ON_OVERLOAD").is_some_and(|v| v == "1");
                self.node.update_client(self.client_id, |c| {
                    c.driver_name = options.get("DRIVER_NAME").cloned();
                    c.driver_version = options.get("DRIVER_VERSION").cloned();
                });
                // With PasswordAuthenticator the client must log in first (SASL PLAIN).
                let answer = if self.node.auth.authenticate {
                    proto::Response::Authenticate {
                        authenticator: PASSWORD_AUTHENTICATOR.into(),
                    }
                } else {
                    proto::Response::Ready
                };
                (
                    answer,
                    AfterWrite::Negotiated {
                        compression,
                        segments: frame.version >= 5,
                    },
                )
            }
            Err(other) => (
                exec::error_response(exec::ExecError::Protocol(format!(
                    "Unsupported compression algorithm: {other}"
                ))),
                AfterWrite::Nothing,
            ),
        };
        let out = proto::ResponseFrame::new(frame.version, frame.stream, response);
        self.send(Outgoing::plain(out, after)).await
    }

    /// REGISTER: events of the listed types are forwarded to this connection from then on.
    async fn register(&mut self, frame: &proto::RequestFrame, types: &[String]) -> ControlFlow<()> {
        let wanted = EventTypes {
            schema: types.iter().any(|t| t == "SCHEMA_CHANGE"),
            topology: types.iter().any(|t| t == "TOPOLOGY_CHANGE"),
            status: types.iter().any(|t| t == "STATUS_CHANGE"),
        };
        if self.events_task.is_none() && (wanted.schema || wanted.topology || wanted.status) {
            self.events_task = Some(spawn_event_forwarder(
                &self.node,
                self.tx.clone(),
                frame.version,
                wanted,
            ));
        }
        let out = proto::ResponseFrame::new(frame.version, frame.stream, proto::Response::Ready);
        self.send(Outgoing::plain(out, AfterWrite::Nothing)).await
    }

    /// Any other request runs as a [`Statement`], on this task until it has to wait and then on
    /// a task of its own, holding one of this connection's in-flight permits and the bytes its
    /// frame took in the read buffer until it has its answer.
    async fn start_statement(
        &mut self,
        frame: proto::RequestFrame,
        before_bytes: usize,
    ) -> ControlFlow<()> {
        let permit = match self.in_flight.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                // Answers held back must not wait on requests that may wait on them.
                self.flush_answered().await?;
                let Ok(permit) = self.in_flight.clone().acquire_owned().await else {
                    return ControlFlow::Break(());
                };
                permit
            }
        };
        // The frame's bytes left the read buffer: its charge goes with it. As in Cassandra,
        // bytes in flight are checked first, then the rate.
        // The request's own bytes: the buffer also shrank by the tail of any message refused
        // before it, which must not be charged to this one.
        let frame_bytes = before_bytes
            .saturating_sub(self.buffered_bytes())
            .min(self.codec.last_envelope_bytes());
        if self.throw_on_overload {
            if let Err(message) = self
                .limits
                .try_charge_frame_bytes(&mut self.buffer_charge, frame_bytes)
            {
                drop(self.buffer_charge.take());
                return self.refuse(frame.version, frame.stream, message).await;
            }
        } else {
            // The frame is whole and in memory: waiting would save nothing, and a waiter ahead
            // of it in the budget's queue may be waiting for this very statement to end. What
            // it was charged while arriving stands (all of it but the last read's bytes).
            let _ = self
                .limits
                .try_charge_frame_bytes(&mut self.buffer_charge, frame_bytes);
        }
        let request_charge = self.buffer_charge.take();
        if self.limits.rate_limited() {
            // A rate limit may hold this request back: not the answers already made.
            self.flush_answered().await?;
        }
        if let Err(rate) = self.limits.admit_rate(self.throw_on_overload).await {
            // The refused frame's bytes go back to the budget with `request_charge`.
            return self.refuse(frame.version, frame.stream, format!(
                "Request breached global limit of {rate} requests/second. Server is currently in an overloaded state and cannot accept more requests."
            )).await;
        }
        let statement = Statement {
            node: self.node.clone(),
            limits: self.limits.clone(),
            gate: self.gate.clone(),
            session: self.session.clone(),
            client_id: self.client_id,
            peer: self.peer,
        };
        // Boxed: the statement's state machine is ~3.4 KiB, and tokio copies a spawned future
        // into its task cell and its output over it again; boxed, those copies are a pointer's
        // (memcpy under spawn/Cell::new/set_stage was 3.8% of a node's CPU on writes, perf).
        let mut task: AnswerTask = Box::pin(async move {
            let _permit = permit;
            statement.run(frame, frame_bytes, request_charge).await
        });
        // Most single-partition statements finish without waiting for anything: they run
        // here, and only one that must wait gets a task of its own (polling it again there is
        // what the Future contract allows). A task per request cost a spawn and, as often as
        // not, waking the other worker to steal it (latte, in-memory writes: server CPU per
        // 1,000 6.65 -> 5.8 ms, context switches per write 0.21 -> 0.08).
        // Unconstrained: this task's cooperative budget is spent by the statements before it
        // in the same read, and a statement that found it spent would stop at its first
        // await and be handed to a task after all (most of them were, past ~30 a read).
        let attempt = std::panic::AssertUnwindSafe(task.as_mut()).catch_unwind();
        let (polled, unwritten) = helenus_storage::deferring_appends(|| {
            tokio::task::unconstrained(attempt).now_or_never()
        });
        self.unwritten.absorb(unwritten);
        match polled {
            None => {
                // Its task may answer at once, from another worker: what it logged goes to the
                // file first.
                self.write_log()?;
                let tx = self.tx.clone();
                drop(tokio::spawn(async move {
                    if let Some(out) = task.await {
                        let _ = tx.send(out).await;
                    }
                }));
            }
            Some(Ok(Some(out))) => {
                self.answered.push(out);
                if self.answered.len() >= ANSWERED_BATCH {
                    self.flush_answered().await?;
                    // The writer runs on this worker too: let it send these before the next.
                    tokio::task::yield_now().await;
                }
            }
            Some(Ok(None)) => {}
            // Statement::run answers its work's panics itself; this is one around it.
            Some(Err(_)) => tracing::error!("a statement panicked outside its work"),
        }
        ControlFlow::Continue(())
    }

    /// Answers `stream` with OVERLOADED: the client asked to be refused, not slowed down.
    async fn refuse(&mut self, version: u8, stream: i16, message: String) -> ControlFlow<()> {
        let refused = exec::error_response(exec::ExecError::Overloaded(message));
        let out = proto::ResponseFrame::new(version, stream, refused);
        self.send(Outgoing::plain(out, AfterWrite::Nothing)).await
    }

    /// Bytes of requests not yet decoded: the read buffer and what the codec reassembles.
    fn buffered_bytes(&self) -> usize {
        self.buf.len() + self.codec.buffered_bytes()
    }

    /// Queues `out` for the writer after the answers held back before it (a response that
    /// changes the framing or closes the connection must follow them).
    async fn send(&mut self, out: Outgoing) -> ControlFlow<()> {
        self.flush_answered().await?;
        match self.tx.send(out).await {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(()),
        }
    }

    /// Writes the commitlog entries the statements run here left buffered. On a failure their
    /// answers must not go out, as if the writes were logged: the connection closes and its
    /// client learns nothing was acknowledged (Cassandra's commit_failure_policy `stop` ends
    /// the whole transport instead).
    fn write_log(&mut self) -> ControlFlow<()> {
        if self.unwritten.is_empty() {
            return ControlFlow::Continue(());
        }
        match self.unwritten.write() {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                tracing::error!(peer = %self.peer, "closing the connection: writing the commitlog failed: {e}");
                self.answered.clear();
                ControlFlow::Break(())
            }
        }
    }

    /// Hands the answers held back on this task to the writer, after what they logged.
    async fn flush_answered(&mut self) -> ControlFlow<()> {
        self.write_log()?;
        for out in self.answered.drain(..) {
            if self.tx.send(out).await.is_err() {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }

    /// Reads more bytes into the buffer; false when the connection is done (closed by the
    /// client, a stalled partial frame, or the node shutting down).
    async fn read_more(&mut self, reader: &mut Reader) -> bool {
        if self.buf.capacity() - self.buf.len() < READ_BUFFER_BYTES / 4 {
            self.buf.reserve(READ_BUFFER_BYTES);
        }
        // A large frame still arriving holds budget for what it has filled so far (not the
        // buffer's capacity: after a reserve every busy connection would pass 64 KiB and be
        // charged); when the budget is spent, this connection waits here and is not read.
        if !self.charge_arriving().await {
            return false;
        }
        // Half a frame that stops arriving would hold its buffer (and budget) for ever.
        let read_timeout = match self.buf.is_empty() {
            true => Duration::MAX,
            false => self.limits.partial_frame_timeout(),
        };
        let read = tokio::select! {
            r = tokio::time::timeout(read_timeout, reader.read_buf(&mut self.buf)) => match r {
                Ok(r) => r,
                Err(_) => {
                    // Worth a line: the client sees only a reset.
                    tracing::info!(peer = %self.peer, "closing the connection: half a frame stalled for {read_timeout:?}");
                    return false;
                }
            },
            // Shutting down: requests already read still get their answers.
            _ = self.limits.closing() => return false,
        };
        !matches!(read, Ok(0) | Err(_))
    }

    /// Charges what is buffered of a frame still arriving. A patient connection waits here
    /// for budget (and is not read meanwhile); one that asked to be refused has the frame
    /// answered with OVERLOADED at once and its bytes dropped as they arrive, as Cassandra
    /// discards a message it throws for. False when the connection is done.
    async fn charge_arriving(&mut self) -> bool {
        let pending = self.buffered_bytes();
        if !self.throw_on_overload {
            self.limits
                .charge_frame_bytes(&mut self.buffer_charge, pending)
                .await;
            return true;
        }
        let Err(message) = self
            .limits
            .try_charge_frame_bytes(&mut self.buffer_charge, pending)
        else {
            return true;
        };
        let Some((version, stream)) = self.codec.skip_pending(&mut self.buf) else {
            return true;
        };
        // What is left buffered (nothing of the dropped frame) fits what was charged before.
        let left = self.buffered_bytes();
        let _ = self
            .limits
            .try_charge_frame_bytes(&mut self.buffer_charge, left);
        self.refuse(version, stream, message).await.is_continue()
    }

    /// Stops event forwarding, forgets the client, and waits for the writer to send what the
    /// running statements still answer.
    async fn close(mut self, write_task: tokio::task::JoinHandle<()>) {
        let _ = self.flush_answered().await;
        if let Some(t) = self.events_task {
            t.abort();
        }
        self.node.unregister_client(self.client_id);
        drop(self.tx);
        let _ = write_task.await;
    }
}

/// The event types a connection REGISTERed for.
#[derive(Clone, Copy)]
struct EventTypes {
    schema: bool,
    topology: bool,
    status: bool,
}

impl EventTypes {
    fn wants(self, event: &proto::Event) -> bool {
        match event {
            proto::Event::SchemaChange(_) => self.schema,
            proto::Event::TopologyChange { .. } => self.topology,
            proto::Event::StatusChange { .. } => self.status,
        }
    }
}

fn spawn_event_forwarder(
    node: &Arc<NodeState>,
    tx: mpsc::Sender<Outgoing>,
    version: u8,
    wanted: EventTypes,
) -> tokio::task::JoinHandle<()> {
    let mut events = node.events.subscribe();
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(NodeEvent(event)) => {
                    if !wanted.wants(&event) {
                        continue;
                    }
                    let frame =
                        proto::ResponseFrame::new(version, -1, proto::Response::Event(event));
                    if tx
                        .send(Outgoing::plain(frame, AfterWrite::Nothing))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => return,
            }
        }
    })
}

fn request_name(r: &proto::Request) -> &'static str {
    match r {
        proto::Request::Startup(_) => "STARTUP",
        proto::Request::Options => "OPTIONS",
        proto::Request::Query { .. } => "QUERY",
        proto::Request::Prepare { .. } => "PREPARE",
        proto::Request::Execute { .. } => "EXECUTE",
        proto::Request::Batch(_) => "BATCH",
        proto::Request::Register { .. } => "REGISTER",
        proto::Request::AuthResponse { .. } => "AUTH_RESPONSE",
    }
}
