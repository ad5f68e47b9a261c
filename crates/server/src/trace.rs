//! Query tracing: a request sent with the protocol's TRACING flag (cqlsh's `TRACING ON`, a driver's
//! `trace=True`) records what the node did, with the time each step took, and its response carries
//! the session id. Drivers then read `system_traces.sessions` and `system_traces.events` by that id,
//! as on Cassandra. Sessions live in a bounded in-memory ring (Cassandra keeps them 24 h in a
//! table): tracing is for looking at a request just run, not for an audit trail.
//!
//! Steps are recorded through a task-local, like client warnings, so execution code calls
//! [`event`] without threading a tracer through every layer; it costs a task-local lookup when the
//! request is not traced.

use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;
use uuid::Uuid;

/// Sessions kept for reading back; older ones are dropped first.
const MAX_SESSIONS: usize = 1024;
/// Events kept per session: a statement must not grow its trace without limit.
const MAX_EVENTS_PER_SESSION: usize = 256;

/// One step of a traced request, as a row of `system_traces.events`.
#[derive(Debug, Clone)]
pub struct TraceEvent {
    pub event_id: Uuid,
    pub activity: String,
    pub source_elapsed_us: i32,
    pub thread: String,
}

/// One traced request, as a row of `system_traces.sessions` with its events.
#[derive(Debug, Clone)]
pub struct TraceSession {
    pub session_id: Uuid,
    pub client: IpAddr,
    pub coordinator: IpAddr,
    pub coordinator_port: i32,
    pub command: &'static str,
    pub request: String,
    pub parameters: Vec<(String, String)>,
    pub started_at_ms: i64,
    pub duration_us: i32,
    pub events: Vec<TraceEvent>,
}

/// What a traced request is, known before it runs.
pub struct TraceRequest {
    pub client: IpAddr,
    pub coordinator: IpAddr,
    pub coordinator_port: u16,
    pub request: String,
    pub parameters: Vec<(String, String)>,
}

impl TraceRequest {
    /// Describes `request` as Cassandra names requests and their parameters in
    /// `system_traces.sessions`.
    pub fn of(
        request: &helenus_protocol::Request,
        client: IpAddr,
        coordinator: std::net::SocketAddr,
    ) -> TraceRequest {
        use helenus_protocol::Request as R;
        let mut parameters = Vec::new();
        let mut with_params = |p: &helenus_protocol::QueryParameters| {
            parameters.push((
                "consistency_level".to_string(),
                p.consistency.name().to_string(),
            ));
            if let Some(n) = p.page_size {
                parameters.push(("page_size".to_string(), n.to_string()));
            }
            if let Some(c) = p.serial_consistency {
                parameters.push(("serial_consistency_level".to_string(), c.name().to_string()));
            }
        };
        let request = match request {
            R::Query { query, params } => {
                with_params(params);
                parameters.push(("query".to_string(), query.clone()));
                "Execute CQL3 query"
            }
            R::Execute { params, .. } => {
                with_params(params);
                "Execute CQL3 prepared query"
            }
            R::Prepare { query, .. } => {
                parameters.push(("query".to_string(), query.clone()));
                "Preparing CQL3 query"
            }
            R::Batch(_) => "Execute batch of CQL3 queries",
            _ => "Request",
        };
        TraceRequest {
            client,
            coordinator: coordinator.ip(),
            coordinator_port: coordinator.port(),
            request: request.to_string(),
            parameters,
        }
    }
}

/// What is told of every session recorded.
pub type RecordHook = Box<dyn Fn(&TraceSession) + Send + Sync>;

/// The recent trace sessions of this node, timed and identified on the node's clock.
pub struct TraceStore {
    sessions: Mutex<VecDeque<Arc<TraceSession>>>,
    /// Called with every session recorded here: in a ring, it is sent to the peers so that
    /// `system_traces` answers on any node, as Cassandra's replicated keyspace does.
    on_record: std::sync::OnceLock<RecordHook>,
    clock: helenus_types::SharedClock,
    ids: Arc<helenus_types::TimeUuids>,
}

impl Default for TraceStore {
    fn default() -> Self {
        TraceStore::new(helenus_types::SystemClock::shared())
    }
}

impl TraceStore {
    pub fn new(clock: helenus_types::SharedClock) -> Self {
        TraceStore {
            sessions: Mutex::new(VecDeque::new()),
            on_record: std::sync::OnceLock::new(),
            ids: Arc::new(helenus_types::TimeUuids::new(clock.clone())),
            clock,
        }
    }

    fn record(&self, session: TraceSession) {
        if let Some(hook) = self.on_record.get() {
            hook(&session);
        }
        self.keep(session);
    }

    /// Sends every session recorded from now on to `hook` as well.
    pub fn on_record(&self, hook: RecordHook) {
        let _ = self.on_record.set(hook);
    }

    /// Keeps a session traced on another node.
    pub fn keep_remote(&self, session: TraceSession) {
        self.keep(session);
    }

    fn keep(&self, session: TraceSession) {
        let mut sessions = self.sessions.lock();
        if sessions.len() >= MAX_SESSIONS {
            sessions.pop_front();
        }
        sessions.push_back(Arc::new(session));
    }

    /// Every kept session (the system table scan filters and orders them).
    pub fn sessions(&self) -> Vec<Arc<TraceSession>> {
        self.sessions.lock().iter().cloned().collect()
    }
}

struct Recorder {
    started: Instant,
    events: Vec<TraceEvent>,
    ids: Arc<helenus_types::TimeUuids>,
}

tokio::task_local! {
    static ACTIVE: RefCell<Recorder>;
}

/// Records a step of the traced request being run; `activity` is only built when tracing.
pub fn event(activity: impl FnOnce() -> String) {
    let _ = ACTIVE.try_with(|r| {
        let mut r = r.borrow_mut();
        if r.events.len() < MAX_EVENTS_PER_SESSION {
            let elapsed = r.started.elapsed().as_micros().min(i32::MAX as u128) as i32;
            let event_id = r.ids.next();
            r.events.push(TraceEvent {
                event_id,
                activity: activity(),
                source_elapsed_us: elapsed,
                thread: "Native-Transport-Requests".to_string(),
            });
        }
    });
}

/// Runs `request` traced: its steps are recorded and the session is stored in `store` before
/// this returns, so a client that reads the trace right after the response finds it whole.
pub async fn traced<F: Future>(
    store: &TraceStore,
    what: TraceRequest,
    request: F,
) -> (F::Output, Uuid) {
    let session_id = store.ids.next();
    let started_at_ms = store.clock.wall_ms();
    let recorder = Recorder {
        started: Instant::now(),
        events: Vec::new(),
        ids: store.ids.clone(),
    };
    let (out, recorder) = ACTIVE
        .scope(RefCell::new(recorder), async {
            event(|| format!("{} received", what.request));
            let out = request.await;
            event(|| "Request complete".to_string());
            let recorder = ACTIVE.try_with(|r| {
                let mut r = r.borrow_mut();
                Recorder {
                    started: r.started,
                    events: std::mem::take(&mut r.events),
                    ids: r.ids.clone(),
                }
            });
            (out, recorder.ok())
        })
        .await;
    let (duration_us, events) = match recorder {
        Some(r) => (
            r.started.elapsed().as_micros().min(i32::MAX as u128) as i32,
            r.events,
        ),
        None => (0, Vec::new()),
    };
    store.record(TraceSession {
        session_id,
        client: what.client,
        coordinator: what.coordinator,
        coordinator_port: i32::from(what.coordinator_port),
        command: "QUERY",
        request: what.request,
        parameters: what.parameters,
        started_at_ms,
        duration_us,
        events,
    });
    (out, session_id)
}

/// A session in the form nodes exchange (JSON: small, rare, and read by nothing else).
pub fn encode_session(s: &TraceSession) -> Vec<u8> {
    let events: Vec<serde_json::Value> = s
        .events
        .iter()
        .map(|e| {
            serde_json::json!({
                "id": e.event_id.to_string(), "activity": e.activity,
                "elapsed": e.source_elapsed_us, "thread": e.thread,
            })
        })
        .collect();
    serde_json::json!({
        "id": s.session_id.to_string(), "client": s.client.to_string(),
        "coordinator": s.coordinator.to_string(), "port": s.coordinator_port,
        "command": s.command, "request": s.request, "parameters": s.parameters,
        "started": s.started_at_ms, "duration": s.duration_us, "events": events,
    })
    .to_string()
    .into_bytes()
}

/// The inverse of [`encode_session`]; `None` for anything malformed.
pub fn decode_session(bytes: &[u8]) -> Option<TraceSession> {
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let text = |k: &str| v.get(k).and_then(|x| x.as_str());
    let int = |k: &str| v.get(k).and_then(|x| x.as_i64());
    let command = match text("command")? {
        "QUERY" => "QUERY",
        "EXECUTE" => "EXECUTE",
        "PREPARE" => "PREPARE",
        "BATCH" => "BATCH",
        _ => "QUERY",
    };
    let parameters = v
        .get("parameters")?
        .as_array()?
        .iter()
        .filter_map(|p| {
            let pair = p.as_array()?;
            Some((
                pair.first()?.as_str()?.to_string(),
                pair.get(1)?.as_str()?.to_string(),
            ))
        })
        .collect();
    let events = v
        .get("events")?
        .as_array()?
        .iter()
        .filter_map(|e| {
            Some(TraceEvent {
                event_id: e.get("id")?.as_str()?.parse().ok()?,
                activity: e.get("activity")?.as_str()?.to_string(),
                source_elapsed_us: i32::try_from(e.get("elapsed")?.as_i64()?).ok()?,
                thread: e.get("thread")?.as_str()?.to_string(),
            })
        })
        .collect();
    Some(TraceSession {
        session_id: text("id")?.parse().ok()?,
        client: text("client")?.parse().ok()?,
        coordinator: text("coordinator")?.parse().ok()?,
        coordinator_port: i32::try_from(int("port")?).ok()?,
        command,
        request: text("request")?.to_string(),
        parameters,
        started_at_ms: int("started")?,
        duration_us: i32::try_from(int("duration")?).ok()?,
        events,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_crosses_to_a_peer_whole_and_garbage_does_not() {
        let session = TraceSession {
            session_id: Uuid::from_u128(7),
            client: [127, 0, 0, 1].into(),
            coordinator: [127, 0, 0, 2].into(),
            coordinator_port: 9042,
            command: "QUERY",
            request: "Execute CQL3 query".into(),
            parameters: vec![("query".into(), "SELECT 1".into())],
            started_at_ms: 1_700_000_000_000,
            duration_us: 1234,
            events: vec![TraceEvent {
                event_id: Uuid::from_u128(8),
                activity: "Parsing".into(),
                source_elapsed_us: 5,
                thread: "helenus-stmt".into(),
            }],
        };
        let back = decode_session(&encode_session(&session));
        let Some(back) = back else {
            panic!("round trip failed");
        };
        assert_eq!(back.session_id, session.session_id);
        assert_eq!(back.parameters, session.parameters);
        assert_eq!(back.events.len(), 1);
        assert_eq!(back.events[0].activity, "Parsing");
        assert_eq!(back.duration_us, 1234);
        assert!(decode_session(b"{not json").is_none());
        assert!(decode_session(b"{}").is_none());
    }

    fn request() -> TraceRequest {
        TraceRequest {
            client: [127, 0, 0, 1].into(),
            coordinator: [127, 0, 0, 2].into(),
            coordinator_port: 9042,
            request: "Execute CQL3 query".into(),
            parameters: vec![("query".into(), "SELECT 1".into())],
        }
    }

    #[tokio::test]
    async fn a_traced_request_is_stored_with_its_events_in_order() {
        let store = TraceStore::default();
        let (out, id) = traced(&store, request(), async {
            event(|| "Parsing SELECT 1".into());
            event(|| "Preparing statement".into());
            5
        })
        .await;
        assert_eq!(out, 5);
        let sessions = store.sessions();
        assert_eq!(sessions.len(), 1);
        let s = &sessions[0];
        assert_eq!(s.session_id, id);
        let activities: Vec<&str> = s.events.iter().map(|e| e.activity.as_str()).collect();
        assert_eq!(
            activities,
            vec![
                "Execute CQL3 query received",
                "Parsing SELECT 1",
                "Preparing statement",
                "Request complete"
            ]
        );
        assert!(s
            .events
            .windows(2)
            .all(|w| w[0].source_elapsed_us <= w[1].source_elapsed_us));
        assert!(s.events.windows(2).all(|w| w[0].event_id != w[1].event_id));
    }

    #[tokio::test]
    async fn untraced_requests_record_nothing_and_the_store_is_bounded() {
        event(|| unreachable!("not built outside a traced request"));
        let store = TraceStore::default();
        for _ in 0..(MAX_SESSIONS + 10) {
            let _ = traced(&store, request(), async {}).await;
        }
        assert_eq!(store.sessions().len(), MAX_SESSIONS);
    }
}
