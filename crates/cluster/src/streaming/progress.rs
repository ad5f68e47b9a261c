//! Stream sessions and their progress, as `nodetool netstats` shows Cassandra's: a plan (one
//! bootstrap, decommission, removenode or repair) has a session per peer, and each session
//! counts what it receives and sends. A "file" here is either one table's token range (streamed
//! as pages of partitions) or one SSTable sent whole as its files (whole-SSTable streaming).
//!
//! A plan this node drives is registered by its driver (`StreamManager::start_plan`) and leaves
//! the list when it finishes; one that fails, or whose driver drops it unfinished, is kept with
//! its reason among the recent failures, so a failed session is reported and never shown as
//! complete. A peer pulling pages from this node (a bootstrap's source) tags each request with
//! the plan, so this node shows the matching sending session; it leaves the list once every
//! file was served or no page came for `REMOTE_IDLE`.

use super::throttle::StreamThrottle;
use parking_lot::Mutex;
use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use uuid::Uuid;

/// A plan pulled by a peer that sent no page for this long has ended (or died) on its side.
const REMOTE_IDLE: Duration = Duration::from_secs(10);
/// How many failed plans netstats keeps reporting.
const FAILED_KEPT: usize = 8;

/// What a plan is for, with Cassandra's `StreamOperation` descriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamOperation {
    Bootstrap,
    /// Decommission.
    Unbootstrap,
    /// Removenode.
    RestoreReplicaCount,
    Repair,
    /// `nodetool rebuild`.
    Rebuild,
    Other,
}

impl StreamOperation {
    pub fn description(self) -> &'static str {
        match self {
            StreamOperation::Bootstrap => "Bootstrap",
            StreamOperation::Unbootstrap => "Unbootstrap",
            StreamOperation::RestoreReplicaCount => "Restore replica count",
            StreamOperation::Repair => "Repair",
            StreamOperation::Rebuild => "Rebuild",
            StreamOperation::Other => "Other",
        }
    }

    /// Its byte in a stream request's tag.
    pub fn code(self) -> u8 {
        match self {
            StreamOperation::Bootstrap => 1,
            StreamOperation::Unbootstrap => 2,
            StreamOperation::RestoreReplicaCount => 3,
            StreamOperation::Repair => 4,
            StreamOperation::Rebuild => 5,
            StreamOperation::Other => 0,
        }
    }

    pub fn from_code(code: u8) -> StreamOperation {
        match code {
            1 => StreamOperation::Bootstrap,
            2 => StreamOperation::Unbootstrap,
            3 => StreamOperation::RestoreReplicaCount,
            4 => StreamOperation::Repair,
            5 => StreamOperation::Rebuild,
            _ => StreamOperation::Other,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Receiving,
    Sending,
}

/// One direction of a session: files (table ranges) and bytes, expected and done.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StreamSummary {
    pub files_total: u64,
    pub files_done: u64,
    pub bytes_done: u64,
}

impl StreamSummary {
    /// Partition streaming does not know a range's size before reading it: the total is
    /// extrapolated from the files done so far (what is done while none is).
    pub fn bytes_total_estimate(&self) -> u64 {
        if self.files_done == 0 || self.files_done >= self.files_total {
            return self.bytes_done;
        }
        let per_file = self.bytes_done as f64 / self.files_done as f64;
        ((per_file * self.files_total as f64) as u64).max(self.bytes_done)
    }
}

/// A session with one peer, as netstats prints it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSnapshot {
    pub peer: IpAddr,
    pub receiving: Option<StreamSummary>,
    pub sending: Option<StreamSummary>,
    /// The file (table range) being streamed now, and its bytes so far.
    pub current: Option<(Direction, String, u64)>,
    pub rate_bytes_per_s: f64,
}

/// A plan, as netstats prints it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanSnapshot {
    pub plan_id: Uuid,
    pub operation: StreamOperation,
    pub sessions: Vec<SessionSnapshot>,
    /// Why it failed, for a failed plan.
    pub failure: Option<String>,
}

#[derive(Debug)]
struct Session {
    receiving: Option<StreamSummary>,
    sending: Option<StreamSummary>,
    current: Option<(Direction, String, u64)>,
    started: Instant,
}

impl Session {
    fn new() -> Session {
        Session {
            receiving: None,
            sending: None,
            current: None,
            started: Instant::now(),
        }
    }

    fn side(&mut self, direction: Direction) -> &mut StreamSummary {
        let side = match direction {
            Direction::Receiving => &mut self.receiving,
            Direction::Sending => &mut self.sending,
        };
        side.get_or_insert_with(StreamSummary::default)
    }
}

#[derive(Debug)]
struct Plan {
    id: Uuid,
    operation: StreamOperation,
    /// Pulled by a peer (this node serves its pages) rather than driven here.
    remote: bool,
    sessions: Mutex<BTreeMap<IpAddr, Session>>,
    last_activity: Mutex<Instant>,
}

impl Plan {
    fn snapshot(&self, failure: Option<String>) -> PlanSnapshot {
        let sessions = self.sessions.lock();
        PlanSnapshot {
            plan_id: self.id,
            operation: self.operation,
            sessions: sessions
                .iter()
                .map(|(peer, s)| {
                    let bytes = s.receiving.map_or(0, |r| r.bytes_done)
                        + s.sending.map_or(0, |r| r.bytes_done);
                    let seconds = s.started.elapsed().as_secs_f64().max(1e-3);
                    SessionSnapshot {
                        peer: *peer,
                        receiving: s.receiving,
                        sending: s.sending,
                        current: s.current.clone(),
                        rate_bytes_per_s: bytes as f64 / seconds,
                    }
                })
                .collect(),
            failure,
        }
    }

    fn served_everything(&self) -> bool {
        self.sessions.lock().values().all(|s| {
            s.sending
                .is_some_and(|x| x.files_total > 0 && x.files_done >= x.files_total)
        })
    }
}

/// Whole SSTables streamed, by direction (`helenus_stream_whole_sstables_*` metrics).
#[derive(Debug, Default)]
pub struct WholeSSTableCounters {
    pub received: AtomicU64,
    pub received_bytes: AtomicU64,
    pub sent: AtomicU64,
    pub sent_bytes: AtomicU64,
    /// Bytes of partition pages received, to compare with the whole files' share.
    pub partition_bytes_received: AtomicU64,
}

impl WholeSSTableCounters {
    pub fn count_received(&self, bytes: u64) {
        self.received.fetch_add(1, Ordering::Relaxed);
        self.received_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn count_sent(&self, bytes: u64) {
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.sent_bytes.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// Every stream session of this node, and the outbound throttle they share.
#[derive(Debug)]
pub struct StreamManager {
    throttle: StreamThrottle,
    /// `entire_sstable_stream_throughput_outbound`: the bucket whole SSTable files are sent
    /// through, apart from partition pages, as Cassandra keeps the two limits.
    entire_sstable_throttle: StreamThrottle,
    /// Whole SSTables (and their bytes) this node received and sent, for the metrics.
    pub whole_sstables: WholeSSTableCounters,
    plans: Mutex<Vec<Arc<Plan>>>,
    failed: Mutex<VecDeque<PlanSnapshot>>,
}

impl StreamManager {
    pub fn new(rate_bytes_per_s: u64, entire_sstable_rate_bytes_per_s: u64) -> StreamManager {
        StreamManager {
            throttle: StreamThrottle::new(rate_bytes_per_s),
            entire_sstable_throttle: StreamThrottle::new(entire_sstable_rate_bytes_per_s),
            whole_sstables: WholeSSTableCounters::default(),
            plans: Mutex::new(Vec::new()),
            failed: Mutex::new(VecDeque::new()),
        }
    }

    pub fn throttle(&self) -> &StreamThrottle {
        &self.throttle
    }

    pub fn entire_sstable_throttle(&self) -> &StreamThrottle {
        &self.entire_sstable_throttle
    }

    pub fn entire_sstable_rate_bytes_per_s(&self) -> u64 {
        self.entire_sstable_throttle.rate_bytes_per_s()
    }

    pub fn set_entire_sstable_rate_bytes_per_s(&self, rate: u64) {
        self.entire_sstable_throttle.set_rate_bytes_per_s(rate);
    }

    /// Registers a plan this node drives; it shows in netstats until finished or dropped.
    pub fn start_plan(self: &Arc<Self>, operation: StreamOperation) -> StreamPlan {
        let plan = Arc::new(Plan {
            id: Uuid::new_v4(),
            operation,
            remote: false,
            sessions: Mutex::new(BTreeMap::new()),
            last_activity: Mutex::new(Instant::now()),
        });
        self.plans.lock().push(plan.clone());
        StreamPlan {
            manager: self.clone(),
            plan,
            ended: false,
        }
    }

    /// Counts a page this node served to `peer` for its plan `tag`.
    pub fn served(&self, tag: &StreamTag, peer: IpAddr, bytes: u64) {
        let plan = {
            let mut plans = self.plans.lock();
            match plans.iter().find(|p| p.id == tag.plan_id) {
                Some(p) => p.clone(),
                None => {
                    let p = Arc::new(Plan {
                        id: tag.plan_id,
                        operation: tag.operation,
                        remote: true,
                        sessions: Mutex::new(BTreeMap::new()),
                        last_activity: Mutex::new(Instant::now()),
                    });
                    plans.push(p.clone());
                    p
                }
            }
        };
        *plan.last_activity.lock() = Instant::now();
        let mut sessions = plan.sessions.lock();
        let session = sessions.entry(peer).or_insert_with(Session::new);
        let side = session.side(Direction::Sending);
        // An empty page ends its file: the requester moves to the next one.
        let ended = u64::from(bytes == 0);
        if tag.files_total == 0 {
            // A requester that does not count its files up front (removenode, repair): the
            // files are counted as they end, plus the one under way.
            side.files_done += ended;
            side.files_total = side.files_done + 1;
        } else {
            side.files_total = side.files_total.max(u64::from(tag.files_total));
            let done = u64::from(tag.file_index) + ended;
            side.files_done = side.files_done.max(done);
        }
        side.bytes_done += bytes;
    }

    /// Every plan under way, then the recent failures.
    pub fn snapshot(&self) -> Vec<PlanSnapshot> {
        let mut plans = self.plans.lock();
        plans.retain(|p| {
            !(p.remote && (p.served_everything() || p.last_activity.lock().elapsed() > REMOTE_IDLE))
        });
        // A plan shows once it has a session, as Cassandra's do (a repair of replicas in
        // sync never has one).
        let mut out: Vec<PlanSnapshot> = plans
            .iter()
            .filter(|p| !p.sessions.lock().is_empty())
            .map(|p| p.snapshot(None))
            .collect();
        out.extend(self.failed.lock().iter().cloned());
        out
    }

    fn end(&self, plan: &Plan, failure: Option<String>) {
        self.plans.lock().retain(|p| p.id != plan.id);
        if let Some(reason) = failure.filter(|_| !plan.sessions.lock().is_empty()) {
            let mut failed = self.failed.lock();
            if failed.len() == FAILED_KEPT {
                failed.pop_front();
            }
            failed.push_back(plan.snapshot(Some(reason)));
        }
    }
}

/// What a stream request carries so the serving node can show the session: the plan, its
/// operation, and which of the requester's files from it this page belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamTag {
    pub plan_id: Uuid,
    pub operation: StreamOperation,
    /// Files (table ranges) the requester reads from this node in the plan.
    pub files_total: u32,
    /// Files it finished reading from this node before this page's.
    pub file_index: u32,
}

impl StreamTag {
    pub const ENCODED_LEN: usize = 16 + 1 + 4 + 4;

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.plan_id.as_bytes());
        out.push(self.operation.code());
        out.extend_from_slice(&self.files_total.to_be_bytes());
        out.extend_from_slice(&self.file_index.to_be_bytes());
    }

    /// The tag at the start of `bytes`; None when there are too few.
    pub fn decode(bytes: &[u8]) -> Option<StreamTag> {
        let id: [u8; 16] = bytes.get(..16)?.try_into().ok()?;
        let operation = StreamOperation::from_code(*bytes.get(16)?);
        let files_total = u32::from_be_bytes(bytes.get(17..21)?.try_into().ok()?);
        let file_index = u32::from_be_bytes(bytes.get(21..25)?.try_into().ok()?);
        Some(StreamTag {
            plan_id: Uuid::from_bytes(id),
            operation,
            files_total,
            file_index,
        })
    }
}

/// A plan this node drives. Dropped without `finish`, it is recorded as failed.
#[derive(Debug)]
pub struct StreamPlan {
    manager: Arc<StreamManager>,
    plan: Arc<Plan>,
    ended: bool,
}

impl StreamPlan {
    pub fn id(&self) -> Uuid {
        self.plan.id
    }

    pub fn operation(&self) -> StreamOperation {
        self.plan.operation
    }

    /// `files` more files will move with `peer` in `direction`.
    pub fn expect(&self, peer: IpAddr, direction: Direction, files: u64) {
        let mut sessions = self.plan.sessions.lock();
        let session = sessions.entry(peer).or_insert_with(Session::new);
        session.side(direction).files_total += files;
    }

    /// A file expected from `from` moves with `to` instead (a source failed over).
    pub fn move_file(&self, from: IpAddr, to: IpAddr, direction: Direction) {
        let mut sessions = self.plan.sessions.lock();
        if let Some(side) = sessions.get_mut(&from).map(|s| s.side(direction)) {
            side.files_total = side.files_total.saturating_sub(1).max(side.files_done);
        }
        let session = sessions.entry(to).or_insert_with(Session::new);
        session.side(direction).files_total += 1;
    }

    /// Starts moving the file `name` with `peer`.
    pub fn file_started(&self, peer: IpAddr, direction: Direction, name: String) {
        let mut sessions = self.plan.sessions.lock();
        let session = sessions.entry(peer).or_insert_with(Session::new);
        session.current = Some((direction, name, 0));
    }

    /// `bytes` more of the current file moved with `peer`.
    pub fn transferred(&self, peer: IpAddr, direction: Direction, bytes: u64) {
        let mut sessions = self.plan.sessions.lock();
        let session = sessions.entry(peer).or_insert_with(Session::new);
        session.side(direction).bytes_done += bytes;
        if let Some((_, _, so_far)) = session.current.as_mut() {
            *so_far += bytes;
        }
    }

    /// The current file with `peer` is complete.
    pub fn file_done(&self, peer: IpAddr, direction: Direction) {
        let mut sessions = self.plan.sessions.lock();
        let session = sessions.entry(peer).or_insert_with(Session::new);
        session.side(direction).files_done += 1;
        session.current = None;
    }

    /// How many files with `peer` in `direction` are done, and how many expected.
    pub fn files(&self, peer: IpAddr, direction: Direction) -> (u64, u64) {
        let mut sessions = self.plan.sessions.lock();
        let session = sessions.entry(peer).or_insert_with(Session::new);
        let side = session.side(direction);
        (side.files_done, side.files_total)
    }

    /// Every session completed: the plan leaves netstats.
    pub fn finish(mut self) {
        self.ended = true;
        self.manager.end(&self.plan, None);
    }

    /// The plan failed: netstats reports it with `reason`.
    pub fn fail(mut self, reason: &str) {
        self.ended = true;
        self.manager.end(&self.plan, Some(reason.to_string()));
    }
}

impl Drop for StreamPlan {
    fn drop(&mut self) {
        if !self.ended {
            self.manager
                .end(&self.plan, Some("interrupted before it completed".into()));
        }
    }
}
