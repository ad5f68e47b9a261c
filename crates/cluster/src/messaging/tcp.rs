//! Internode messaging over TCP: one outbound connection per peer, fed by a bounded queue
//! (a full queue is backpressure to the sender), and a listener whose readers hand decoded
//! envelopes to this node's inbox (a full inbox stops the reader, and TCP flow control then slows
//! the peer). A broken connection loses what it had in flight, as Cassandra's does: the sender's
//! request times out and is retried or hinted by the coordinator.
//!
//! A connection opens with a preamble: `HLNS`, the messaging version, the sender's host id and the
//! address it listens on (a length byte, then `ip:port` as text), so a stray client or a peer of
//! another version is refused before any message is read, and the receiver can answer a peer it
//! has never heard of (a node joining through a seed).

use parking_lot::{Mutex, RwLock};
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::envelope::{Envelope, MESSAGING_VERSION};
use super::{SendError, Transport};
use crate::locator::NodeId;

const MAGIC: &[u8; 4] = b"HLNS";
const PREAMBLE_BYTES: usize = 4 + 1 + 16;
const PREAMBLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Settings for `TcpTransport`.
#[derive(Clone, Debug)]
pub struct TcpConfig {
    /// Messages queued per peer before `send` reports backpressure.
    pub queue_per_peer: usize,
    /// Messages received but not yet taken from the inbox.
    pub inbox: usize,
    /// Give up a connection attempt after this long.
    pub connect_timeout: Duration,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            queue_per_peer: 4096,
            inbox: 8192,
            connect_timeout: Duration::from_secs(2),
        }
    }
}

/// Peer addresses, kept current by membership.
pub type AddressBook = Arc<RwLock<HashMap<NodeId, SocketAddr>>>;

/// Peer addresses this node neither sends to nor hears from: a network partition injected for
/// tests (`fault_injection_enabled`). Checked per message, so a partition cuts connections that
/// are already open and heals without reconnecting, as a cable pulled and plugged back would.
pub type Isolation = Arc<RwLock<HashSet<IpAddr>>>;

struct Outbound {
    queue: mpsc::Sender<Envelope>,
    writer: JoinHandle<()>,
}

struct Inner {
    local: NodeId,
    config: TcpConfig,
    addresses: AddressBook,
    outbound: Mutex<HashMap<NodeId, Outbound>>,
    listener: Mutex<Option<JoinHandle<()>>>,
    runtime: tokio::runtime::Handle,
    isolated: Isolation,
}

/// This node's end of internode TCP messaging. Dropping every clone stops its tasks.
#[derive(Clone)]
pub struct TcpTransport {
    inner: Arc<Inner>,
    listen_address: SocketAddr,
}

impl TcpTransport {
    /// Listens on `listen` (port 0 picks one) and returns the transport with this node's inbox.
    pub async fn bind(
        local: NodeId,
        listen: SocketAddr,
        addresses: AddressBook,
        config: TcpConfig,
    ) -> std::io::Result<(TcpTransport, mpsc::Receiver<Envelope>)> {
        let listener = TcpListener::bind(listen).await?;
        let listen_address = listener.local_addr()?;
        let (inbox_tx, inbox_rx) = mpsc::channel(config.inbox.max(1));
        let runtime = tokio::runtime::Handle::current();
        let isolated = Isolation::default();
        let accept = runtime.spawn(accept_loop(
            listener,
            inbox_tx,
            addresses.clone(),
            isolated.clone(),
        ));
        let inner = Arc::new(Inner {
            local,
            config,
            addresses,
            outbound: Mutex::new(HashMap::new()),
            listener: Mutex::new(Some(accept)),
            runtime,
            isolated,
        });
        Ok((
            TcpTransport {
                inner,
                listen_address,
            },
            inbox_rx,
        ))
    }

    /// The address peers connect to.
    pub fn listen_address(&self) -> SocketAddr {
        self.listen_address
    }

    /// Cuts this node off from the peers at `addresses` in both directions (an empty set heals):
    /// messages to them are dropped as a lost network would drop them, and theirs are ignored.
    pub fn isolate_from(&self, addresses: HashSet<IpAddr>) {
        *self.inner.isolated.write() = addresses;
    }

    /// The peers this node is cut off from.
    pub fn isolated_from(&self) -> HashSet<IpAddr> {
        self.inner.isolated.read().clone()
    }

    fn is_cut_off(&self, to: NodeId) -> bool {
        let isolated = self.inner.isolated.read();
        !isolated.is_empty()
            && self
                .inner
                .addresses
                .read()
                .get(&to)
                .is_some_and(|a| isolated.contains(&a.ip()))
    }

    /// Drops the connection to `peer` (the next message opens a new one). For a peer that
    /// restarted: a connection opened before is dead, and what is written into it before the
    /// kernel notices would be lost without an error.
    pub fn reset_peer(&self, peer: NodeId) {
        if let Some(out) = self.inner.outbound.lock().remove(&peer) {
            out.writer.abort();
        }
    }

    /// Stops listening and closes every connection.
    pub fn shutdown(&self) {
        if let Some(l) = self.inner.listener.lock().take() {
            l.abort();
        }
        for (_, out) in self.inner.outbound.lock().drain() {
            out.writer.abort();
        }
    }

    fn queue_for(&self, to: NodeId) -> Result<mpsc::Sender<Envelope>, SendError> {
        let mut outbound = self.inner.outbound.lock();
        if let Some(out) = outbound.get(&to) {
            if !out.writer.is_finished() {
                return Ok(out.queue.clone());
            }
        }
        let address = self
            .inner
            .addresses
            .read()
            .get(&to)
            .copied()
            .ok_or(SendError::Unreachable(to))?;
        let (tx, rx) = mpsc::channel(self.inner.config.queue_per_peer.max(1));
        let writer = self.inner.runtime.spawn(write_loop(
            self.inner.local,
            self.listen_address,
            address,
            self.inner.config.connect_timeout,
            rx,
        ));
        outbound.insert(
            to,
            Outbound {
                queue: tx.clone(),
                writer,
            },
        );
        Ok(tx)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(l) = self.listener.lock().take() {
            l.abort();
        }
        for (_, out) in self.outbound.lock().drain() {
            out.writer.abort();
        }
    }
}

impl Transport for TcpTransport {
    fn local(&self) -> NodeId {
        self.inner.local
    }

    fn send(&self, to: NodeId, envelope: Envelope) -> Result<(), SendError> {
        if self.is_cut_off(to) {
            return Ok(()); // lost on the way, as on a partitioned network
        }
        let queue = self.queue_for(to)?;
        match queue.try_send(envelope) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(_)) => Err(SendError::Backpressure(to)),
            // The writer ended (its connection failed); the next send starts a new one.
            Err(mpsc::error::TrySendError::Closed(_)) => Ok(()),
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    inbox: mpsc::Sender<Envelope>,
    addresses: AddressBook,
    isolated: Isolation,
) {
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let inbox = inbox.clone();
        let addresses = addresses.clone();
        let isolated = isolated.clone();
        tokio::spawn(async move {
            if let Err(e) = read_loop(stream, inbox, addresses, isolated).await {
                tracing::debug!(%peer, error = %e, "internode connection closed");
            }
        });
    }
}

/// Why an inbound connection was closed.
#[derive(Debug, thiserror::Error)]
enum InboundError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("not a Helenus peer (bad preamble)")]
    Preamble,
    #[error("peer speaks messaging version {0}")]
    Version(u8),
    #[error("{0}")]
    Envelope(#[from] super::envelope::EnvelopeError),
}

async fn read_loop(
    mut stream: TcpStream,
    inbox: mpsc::Sender<Envelope>,
    addresses: AddressBook,
    isolated: Isolation,
) -> Result<(), InboundError> {
    let mut preamble = [0u8; PREAMBLE_BYTES];
    // A connection that never says who it is must not hold a reader forever.
    tokio::time::timeout(PREAMBLE_TIMEOUT, stream.read_exact(&mut preamble))
        .await
        .map_err(|_| InboundError::Preamble)??;
    if preamble.get(..4) != Some(MAGIC.as_slice()) {
        return Err(InboundError::Preamble);
    }
    let version = preamble.get(4).copied().unwrap_or(0);
    if version != MESSAGING_VERSION {
        return Err(InboundError::Version(version));
    }
    let peer = preamble_host(&preamble).ok_or(InboundError::Preamble)?;
    let peer_listen = tokio::time::timeout(PREAMBLE_TIMEOUT, read_listen_address(&mut stream))
        .await
        .map_err(|_| InboundError::Preamble)??;
    addresses.write().entry(peer).or_insert(peer_listen);
    tracing::debug!(?peer, %peer_listen, "internode connection accepted");
    let mut buf = BytesMut::with_capacity(64 * 1024);
    loop {
        while let Some(envelope) = Envelope::decode(&mut buf)? {
            if isolated.read().contains(&peer_listen.ip()) {
                continue;
            }
            if inbox.send(envelope).await.is_err() {
                return Ok(()); // this node is shutting down
            }
        }
        if stream.read_buf(&mut buf).await? == 0 {
            return Ok(());
        }
    }
}

async fn read_listen_address(stream: &mut TcpStream) -> Result<SocketAddr, InboundError> {
    let len = stream.read_u8().await? as usize;
    let mut text = vec![0u8; len];
    stream.read_exact(&mut text).await?;
    std::str::from_utf8(&text)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or(InboundError::Preamble)
}

async fn write_loop(
    local: NodeId,
    local_listen: SocketAddr,
    address: SocketAddr,
    connect_timeout: Duration,
    mut queue: mpsc::Receiver<Envelope>,
) {
    let stream = match tokio::time::timeout(connect_timeout, TcpStream::connect(address)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::debug!(%address, error = %e, "cannot connect to peer");
            return;
        }
        Err(_) => {
            tracing::debug!(%address, "connecting to peer timed out");
            return;
        }
    };
    let _ = stream.set_nodelay(true);
    if let Err(e) = write_messages(stream, local, local_listen, &mut queue).await {
        tracing::debug!(%address, error = %e, "internode connection lost");
    }
}

async fn write_messages(
    mut stream: TcpStream,
    local: NodeId,
    local_listen: SocketAddr,
    queue: &mut mpsc::Receiver<Envelope>,
) -> std::io::Result<()> {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    buf.extend_from_slice(MAGIC);
    buf.extend_from_slice(&[MESSAGING_VERSION]);
    buf.extend_from_slice(local.0.as_bytes());
    let listen = local_listen.to_string();
    buf.extend_from_slice(&[listen.len() as u8]);
    buf.extend_from_slice(listen.as_bytes());
    stream.write_all(&buf).await?;
    buf.clear();
    while let Some(first) = queue.recv().await {
        // Coalesce whatever else is queued into one write.
        encode_into(&first, &mut buf);
        while buf.len() < 256 * 1024 {
            match queue.try_recv() {
                Ok(next) => encode_into(&next, &mut buf),
                Err(_) => break,
            }
        }
        stream.write_all(&buf).await?;
        buf.clear();
    }
    Ok(())
}

fn encode_into(envelope: &Envelope, buf: &mut BytesMut) {
    if let Err(e) = envelope.encode(buf) {
        // Only an oversized payload fails; the sender's request times out like a lost message.
        tracing::warn!(error = %e, verb = ?envelope.verb, "internode message not sent");
    }
}

/// The host id a preamble names.
fn preamble_host(preamble: &[u8]) -> Option<NodeId> {
    let bytes: [u8; 16] = preamble.get(5..PREAMBLE_BYTES)?.try_into().ok()?;
    Some(NodeId(Uuid::from_bytes(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messaging::Verb;
    use bytes::Bytes;

    fn node(n: u128) -> NodeId {
        NodeId(Uuid::from_u128(n))
    }

    fn message(from: NodeId, id: u64, payload: Bytes) -> Envelope {
        Envelope {
            verb: Verb::MutationRequest,
            flags: 0,
            id,
            from,
            payload,
        }
    }

    async fn pair() -> (
        TcpTransport,
        mpsc::Receiver<Envelope>,
        TcpTransport,
        mpsc::Receiver<Envelope>,
    ) {
        let book: AddressBook = Arc::default();
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let (a, ra) = TcpTransport::bind(node(1), any, book.clone(), TcpConfig::default())
            .await
            .unwrap();
        let (b, rb) = TcpTransport::bind(node(2), any, book.clone(), TcpConfig::default())
            .await
            .unwrap();
        book.write().insert(node(1), a.listen_address());
        book.write().insert(node(2), b.listen_address());
        (a, ra, b, rb)
    }

    async fn recv(rx: &mut mpsc::Receiver<Envelope>) -> Envelope {
        tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
            .unwrap()
    }

    #[tokio::test]
    async fn an_isolated_node_neither_sends_nor_hears_until_healed() {
        let (a, mut ra, b, mut rb) = pair().await;
        // An open connection both ways first: the cut must also stop connections already up.
        a.send(node(2), message(node(1), 1, Bytes::new())).unwrap();
        b.send(node(1), message(node(2), 2, Bytes::new())).unwrap();
        assert_eq!(recv(&mut rb).await.id, 1);
        assert_eq!(recv(&mut ra).await.id, 2);

        a.isolate_from(HashSet::from([b.listen_address().ip()]));
        a.send(node(2), message(node(1), 3, Bytes::new())).unwrap();
        b.send(node(1), message(node(2), 4, Bytes::new())).unwrap();
        let quiet = Duration::from_millis(300);
        assert!(
            tokio::time::timeout(quiet, rb.recv()).await.is_err(),
            "a's message was cut"
        );
        assert!(
            tokio::time::timeout(quiet, ra.recv()).await.is_err(),
            "b's message was cut"
        );

        a.isolate_from(HashSet::new());
        a.send(node(2), message(node(1), 5, Bytes::new())).unwrap();
        b.send(node(1), message(node(2), 6, Bytes::new())).unwrap();
        assert_eq!(recv(&mut rb).await.id, 5, "healed: what was cut stays lost");
        assert_eq!(recv(&mut ra).await.id, 6);
    }

    #[tokio::test]
    async fn messages_arrive_in_order_both_ways() {
        let (a, mut ra, b, mut rb) = pair().await;
        for i in 0..500 {
            a.send(
                node(2),
                message(node(1), i, Bytes::from(vec![i as u8; 100])),
            )
            .unwrap();
        }
        for i in 0..500 {
            let e = recv(&mut rb).await;
            assert_eq!((e.id, e.from, e.payload.len()), (i, node(1), 100));
        }
        b.send(node(1), message(node(2), 7, Bytes::from(vec![1; 3 << 20])))
            .unwrap();
        let big = recv(&mut ra).await;
        assert_eq!(big.payload.len(), 3 << 20, "a payload larger than one read");
    }

    #[tokio::test]
    async fn a_receiver_can_answer_a_sender_it_never_heard_of() {
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let (a, _ra) = TcpTransport::bind(node(1), any, Arc::default(), TcpConfig::default())
            .await
            .unwrap();
        let b_book: AddressBook = Arc::default();
        let (b, mut rb) = TcpTransport::bind(node(2), any, b_book.clone(), TcpConfig::default())
            .await
            .unwrap();
        a.inner
            .addresses
            .write()
            .insert(node(2), b.listen_address());
        a.send(node(2), message(node(1), 1, Bytes::new())).unwrap();
        assert_eq!(recv(&mut rb).await.from, node(1));
        assert_eq!(b_book.read().get(&node(1)), Some(&a.listen_address()));
    }

    #[tokio::test]
    async fn an_unknown_peer_is_unreachable() {
        let (a, _ra, _b, _rb) = pair().await;
        assert_eq!(
            a.send(node(9), message(node(1), 1, Bytes::new())),
            Err(SendError::Unreachable(node(9)))
        );
    }

    #[tokio::test]
    async fn a_stray_client_is_refused_and_the_listener_keeps_serving() {
        let (a, _ra, b, mut rb) = pair().await;
        let mut stray = TcpStream::connect(b.listen_address()).await.unwrap();
        stray
            .write_all(b"GET / HTTP/1.1\r\nHost: helenus\r\n\r\n")
            .await
            .unwrap();
        let mut sink = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), stray.read_to_end(&mut sink)).await;
        assert!(
            matches!(read, Ok(Ok(0)) | Ok(Err(_))),
            "the stray connection is closed"
        );
        a.send(node(2), message(node(1), 1, Bytes::from_static(b"x")))
            .unwrap();
        assert_eq!(recv(&mut rb).await.id, 1);
    }

    #[tokio::test]
    async fn a_restarted_peer_is_reconnected_to() {
        let book: AddressBook = Arc::default();
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let (a, _ra) = TcpTransport::bind(node(1), any, book.clone(), TcpConfig::default())
            .await
            .unwrap();
        let (b, rb) = TcpTransport::bind(node(2), any, book.clone(), TcpConfig::default())
            .await
            .unwrap();
        let b_address = b.listen_address();
        book.write().insert(node(2), b_address);
        a.send(node(2), message(node(1), 1, Bytes::new())).unwrap();
        b.shutdown();
        drop((b, rb));
        // The peer comes back on the same address.
        let (_b2, mut rb2) = loop {
            match TcpTransport::bind(node(2), b_address, book.clone(), TcpConfig::default()).await {
                Ok(t) => break t,
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        };
        // Messages sent into the dead connection are lost; later ones arrive on a new one.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let mut got = None;
        let mut i = 100;
        while got.is_none() && tokio::time::Instant::now() < deadline {
            let _ = a.send(node(2), message(node(1), i, Bytes::new()));
            i += 1;
            got = tokio::time::timeout(Duration::from_millis(100), rb2.recv())
                .await
                .ok()
                .flatten();
        }
        assert!(got.is_some_and(|e| e.id >= 100));
    }

    #[test]
    fn preamble_names_the_sender() {
        let mut p = Vec::from(*MAGIC);
        p.push(MESSAGING_VERSION);
        p.extend_from_slice(node(5).0.as_bytes());
        assert_eq!(preamble_host(&p), Some(node(5)));
        assert_eq!(preamble_host(&p[..10]), None);
    }
}
