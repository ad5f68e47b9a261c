//! A running cluster member: gossip over TCP on the node's storage port, a ring snapshot rebuilt
//! whenever membership changes, and the non-gossip messages handed to the caller (the coordinator).
//!
//! Seeds are given as addresses; until a seed answers, its host id is unknown, so each seed gets a
//! stand-in id in the address book (`seed_stand_in`). Gossip state, not the stand-in, names the
//! seed from then on.

use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::gossip::{status, AppKey, GossipConfig, GossipEvent, Gossiper};
use crate::locator::{Location, Member, NodeId, Ring, Token};
use crate::messaging::{AddressBook, Envelope, TcpConfig, TcpTransport, Transport, Verb};
use helenus_types::SharedClock;

/// What a node announces and how it joins.
#[derive(Clone, Debug)]
pub struct ServiceSettings {
    pub host_id: NodeId,
    /// `listen_address:storage_port`.
    pub listen: SocketAddr,
    /// Where clients reach this node (`rpc_address:native_transport_port`).
    pub native: SocketAddr,
    pub location: Location,
    pub tokens: Vec<Token>,
    pub seeds: Vec<SocketAddr>,
    pub gossip: GossipConfig,
    pub schema_version: String,
    pub release_version: String,
    /// Incarnation: start time in seconds, larger on every restart.
    pub generation: i64,
}

/// Joins and departures under way (`ClusterService::ring_changes`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RingChanges {
    pub joining: Vec<(Member, Vec<Token>)>,
    pub leaving: Vec<NodeId>,
}

/// A peer as `system.peers_v2` and `nodetool status` show it.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerInfo {
    pub host_id: NodeId,
    pub address: Option<SocketAddr>,
    pub native: Option<SocketAddr>,
    pub location: Location,
    pub tokens: Vec<Token>,
    pub status: String,
    pub schema_version: Option<String>,
    /// The digest of its roles and permissions (see `set_auth_version`).
    pub auth_version: Option<String>,
    pub release_version: Option<String>,
    /// Bytes of data on disk, as the peer last announced.
    pub load: Option<u64>,
    pub alive: bool,
}

struct Shared {
    settings: ServiceSettings,
    gossiper: Mutex<Gossiper>,
    ring: RwLock<Arc<Ring>>,
    addresses: AddressBook,
    transport: TcpTransport,
    events: broadcast::Sender<GossipEvent>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

/// A cluster member's running services. Cloning shares them.
#[derive(Clone)]
pub struct ClusterService {
    shared: Arc<Shared>,
}

/// The id a seed is reached by before its real host id is known.
pub fn seed_stand_in(address: SocketAddr) -> NodeId {
    let mut h: u128 = 0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834;
    for b in address.to_string().bytes() {
        h = (h ^ u128::from(b)).wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    NodeId(Uuid::from_u128(h))
}

/// Tokens as gossip carries them.
pub fn encode_tokens(tokens: &[Token]) -> String {
    tokens
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn decode_tokens(s: &str) -> Vec<Token> {
    s.split(',').filter_map(|t| t.trim().parse().ok()).collect()
}

impl ClusterService {
    /// Binds the storage port, announces this node and starts gossiping. Non-gossip messages
    /// arrive on the returned receiver.
    pub async fn start(
        settings: ServiceSettings,
        clock: SharedClock,
    ) -> std::io::Result<(ClusterService, mpsc::Receiver<Envelope>)> {
        let addresses: AddressBook = Arc::default();
        let (transport, mut inbox) = TcpTransport::bind(
            settings.host_id,
            settings.listen,
            addresses.clone(),
            TcpConfig::default(),
        )
        .await?;
        let mut gossip = settings.gossip.clone();
        for seed in &settings.seeds {
            if *seed == transport.listen_address() {
                continue;
            }
            let stand_in = seed_stand_in(*seed);
            addresses.write().insert(stand_in, *seed);
            gossip.seeds.push(stand_in);
        }
        let mut gossiper = Gossiper::new(settings.host_id, settings.generation, gossip, clock);
        announce(&mut gossiper, &settings, transport.listen_address());
        let (events, _) = broadcast::channel(1024);
        let shared = Arc::new(Shared {
            gossiper: Mutex::new(gossiper),
            ring: RwLock::new(Arc::new(Ring::default())),
            addresses,
            transport,
            events,
            tasks: Mutex::new(Vec::new()),
            settings,
        });
        let service = ClusterService { shared };
        service.rebuild_ring();
        let (app_tx, app_rx) = mpsc::channel(8192);
        let receiver = service.clone();
        let inbound = tokio::spawn(async move {
            while let Some(envelope) = inbox.recv().await {
                if is_gossip(envelope.verb) {
                    receiver.on_gossip(&envelope);
                } else if app_tx.send(envelope).await.is_err() {
                    break;
                }
            }
        });
        let ticker = service.clone();
        let interval = service.shared.settings.gossip.interval;
        let timer = tokio::spawn(async move {
            let mut every = tokio::time::interval(interval);
            loop {
                every.tick().await;
                ticker.gossip_round();
            }
        });
        service.shared.tasks.lock().extend([inbound, timer]);
        Ok((service, app_rx))
    }

    pub fn host_id(&self) -> NodeId {
        self.shared.settings.host_id
    }

    pub fn listen_address(&self) -> SocketAddr {
        self.shared.transport.listen_address()
    }

    /// Sends data-path messages to peers.
    pub fn transport(&self) -> &TcpTransport {
        &self.shared.transport
    }

    /// The current ring (members in NORMAL state with their tokens).
    pub fn ring(&self) -> Arc<Ring> {
        self.shared.ring.read().clone()
    }

    pub fn is_alive(&self, node: NodeId) -> bool {
        self.shared.gossiper.lock().is_alive(node)
    }

    /// Membership changes as they happen.
    pub fn subscribe(&self) -> broadcast::Receiver<GossipEvent> {
        self.shared.events.subscribe()
    }

    /// Announces a new schema version (after a schema change here or a pull from a peer).
    pub fn set_schema_version(&self, version: &str) {
        self.shared
            .gossiper
            .lock()
            .set_local(AppKey::SchemaVersion, version);
    }

    /// Announces the digest of this node's roles and permissions; peers whose digest differs
    /// pull them and merge.
    pub fn set_auth_version(&self, digest: &str) {
        self.shared
            .gossiper
            .lock()
            .set_local(AppKey::AuthVersion, digest);
    }

    /// Takes `tokens` and becomes an owner (NORMAL): after a first start that learned the
    /// ring before choosing them.
    pub fn announce_normal(&self, tokens: &[Token]) {
        {
            let mut g = self.shared.gossiper.lock();
            g.set_local(AppKey::Tokens, encode_tokens(tokens));
            g.set_local(AppKey::Status, status::NORMAL);
        }
        self.rebuild_ring();
        self.gossip_round();
    }

    /// Takes `tokens` as a joining node (Cassandra's BOOT status): it owns nothing yet, but peers
    /// send it the writes of the ranges it is gaining (`joining`) while it streams them.
    pub fn announce_joining(&self, tokens: &[Token]) {
        {
            let mut g = self.shared.gossiper.lock();
            g.set_local(AppKey::Tokens, encode_tokens(tokens));
            g.set_local(AppKey::Status, status::JOINING);
        }
        self.gossip_round();
    }

    /// Takes the tokens of `replaced`, a dead node, to stream its ranges (BOOT_REPLACE): like a
    /// joining node it owns nothing yet and peers send it the writes of those ranges.
    pub fn announce_replacing(&self, tokens: &[Token], replaced: NodeId) {
        {
            let mut g = self.shared.gossiper.lock();
            g.set_local(AppKey::Tokens, encode_tokens(tokens));
            g.set_local(AppKey::Replacing, replaced.to_string());
            g.set_local(AppKey::Status, status::REPLACING);
        }
        self.gossip_round();
    }

    /// Marks `node`, dead, as having its ranges re-replicated (`removing`) or as gone from the
    /// ring (`removed`), on its behalf (Cassandra's removenode and replace); every peer learns it
    /// by gossip. False when the node is unknown.
    pub fn mark_removing(&self, node: NodeId) -> bool {
        self.set_on_behalf(node, status::REMOVING)
    }

    /// See `mark_removing`; final (a restart of the node is ignored).
    pub fn mark_removed(&self, node: NodeId) -> bool {
        self.set_on_behalf(node, status::REMOVED)
    }

    fn set_on_behalf(&self, node: NodeId, value: &str) -> bool {
        let (known, events) = {
            let mut g = self.shared.gossiper.lock();
            let known = g.set_on_behalf(node, AppKey::Status, value);
            (known, g.drain_events())
        };
        self.on_events(events);
        self.gossip_round();
        known
    }

    /// Whether peers hold this node as removed: it was removed or replaced while it was down,
    /// and must not serve anything.
    pub fn removed_by_peers(&self) -> bool {
        self.shared.gossiper.lock().removed_by_peers()
    }

    /// `node`'s incarnation and heartbeat as last heard: a node whose heartbeat does not move
    /// for a few rounds is dead, whatever this node's failure detector, which starts by
    /// trusting news of a node, says yet.
    pub fn heartbeat_of(&self, node: NodeId) -> Option<(i64, u64)> {
        self.shared
            .gossiper
            .lock()
            .states()
            .get(&node)
            .map(|s| (s.generation, s.heartbeat))
    }

    /// Starts handing this node's ranges over (LEAVING): it still owns them, and peers also
    /// send their writes to the nodes that will own them next (`leaving`).
    pub fn announce_leaving(&self) {
        self.set_status(status::LEAVING);
    }

    /// This node has handed its ranges over and owns nothing (LEFT): peers drop it from the
    /// ring and from what drivers see.
    pub fn announce_left(&self) {
        self.set_status(status::LEFT);
    }

    fn set_status(&self, value: &str) {
        self.shared.gossiper.lock().set_local(AppKey::Status, value);
        self.rebuild_ring();
        self.gossip_round();
    }

    /// The joins and departures under way, read in one pass under the gossip lock: live nodes
    /// joining (BOOT with tokens) with the tokens they are taking, nodes handing their ranges
    /// over (LEAVING) or being removed (`removing`), and a replacement as both: the dead node
    /// leaving and the new one joining with its tokens. `None`, without allocating, when the
    /// ring is not changing: every write asks.
    pub fn ring_changes(&self) -> Option<RingChanges> {
        let g = self.shared.gossiper.lock();
        let changing = |s: &crate::gossip::EndpointState| {
            matches!(
                s.get(AppKey::Status),
                Some(status::JOINING | status::LEAVING | status::REPLACING | status::REMOVING)
            )
        };
        if !g.states().values().any(changing) {
            return None;
        }
        let mut changes = RingChanges::default();
        for (id, s) in g.states() {
            match s.get(AppKey::Status) {
                Some(status::LEAVING | status::REMOVING) => changes.leaving.push(*id),
                Some(st @ (status::JOINING | status::REPLACING))
                    if *id == self.host_id() || g.is_alive(*id) =>
                {
                    if let Some((member, tokens)) = member_of(*id, s) {
                        if !tokens.is_empty() {
                            changes.joining.push((member, tokens));
                        }
                    }
                    if st == status::REPLACING {
                        changes.leaving.extend(replaced_by(s));
                    }
                }
                _ => {}
            }
        }
        (!changes.joining.is_empty() || !changes.leaving.is_empty()).then_some(changes)
    }

    /// Sets this node's load (bytes on disk) as gossip carries it, for `nodetool status`.
    pub fn set_load(&self, bytes: u64) {
        self.shared
            .gossiper
            .lock()
            .set_local(AppKey::Load, bytes.to_string());
    }

    /// Every other node known, up or down.
    pub fn peers(&self) -> Vec<PeerInfo> {
        let g = self.shared.gossiper.lock();
        g.states()
            .iter()
            .filter(|(id, _)| **id != self.host_id())
            .map(|(id, s)| PeerInfo {
                host_id: *id,
                address: s.get(AppKey::InternalAddress).and_then(|a| a.parse().ok()),
                native: s.get(AppKey::NativeAddress).and_then(|a| a.parse().ok()),
                location: Location::new(
                    s.get(AppKey::Dc).unwrap_or("datacenter1"),
                    s.get(AppKey::Rack).unwrap_or("rack1"),
                ),
                tokens: s.get(AppKey::Tokens).map(decode_tokens).unwrap_or_default(),
                status: s.get(AppKey::Status).unwrap_or("").to_string(),
                schema_version: s.get(AppKey::SchemaVersion).map(str::to_string),
                auth_version: s.get(AppKey::AuthVersion).map(str::to_string),
                release_version: s.get(AppKey::ReleaseVersion).map(str::to_string),
                load: s.get(AppKey::Load).and_then(|l| l.parse().ok()),
                alive: g.is_alive(*id),
            })
            .collect()
    }

    /// Tells peers this node is stopping, gives gossip a moment to carry it, and stops.
    pub async fn shutdown(&self) {
        {
            let mut g = self.shared.gossiper.lock();
            // A node that left the ring stays LEFT: SHUTDOWN would bring it back as a member.
            let left = g
                .states()
                .get(&self.host_id())
                .and_then(|s| s.get(AppKey::Status))
                == Some(status::LEFT);
            if !left {
                g.set_local(AppKey::Status, status::SHUTDOWN);
            }
        }
        self.gossip_round();
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.stop();
    }

    /// Stops at once, as a crash would (peers convict this node later).
    pub fn stop(&self) {
        for t in self.shared.tasks.lock().drain(..) {
            t.abort();
        }
        self.shared.transport.shutdown();
    }

    fn gossip_round(&self) {
        let (messages, events) = {
            let mut g = self.shared.gossiper.lock();
            let messages = g.tick();
            (messages, g.drain_events())
        };
        self.send_all(messages);
        self.on_events(events);
    }

    fn on_gossip(&self, envelope: &Envelope) {
        let (replies, events) = {
            let mut g = self.shared.gossiper.lock();
            let replies = match g.handle(envelope) {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!(error = %e, from = %envelope.from, "gossip message dropped");
                    Vec::new()
                }
            };
            (replies, g.drain_events())
        };
        self.send_all(replies);
        self.on_events(events);
    }

    fn send_all(&self, messages: Vec<(NodeId, Envelope)>) {
        for (to, e) in messages {
            // Loss and backpressure are normal for gossip: the next round repeats everything.
            let _ = self.shared.transport.send(to, e);
        }
    }

    fn on_events(&self, events: Vec<GossipEvent>) {
        if events.is_empty() {
            return;
        }
        let mut ring_changed = false;
        for event in &events {
            match event {
                GossipEvent::Joined(n) => {
                    self.learn_address(*n);
                    ring_changed = true;
                }
                GossipEvent::Restarted(n) => {
                    // Whatever connection this node had to it died with its old process.
                    self.shared.transport.reset_peer(*n);
                    self.learn_address(*n);
                    ring_changed = true;
                }
                GossipEvent::Changed(n, key) => {
                    if *key == AppKey::InternalAddress {
                        self.learn_address(*n);
                    }
                    ring_changed |= matches!(
                        key,
                        AppKey::Tokens | AppKey::Status | AppKey::Dc | AppKey::Rack
                    );
                }
                GossipEvent::Evicted(n) => {
                    self.shared.addresses.write().remove(n);
                    ring_changed = true;
                }
                GossipEvent::Up(_) | GossipEvent::Down(_) => {}
            }
        }
        if ring_changed {
            self.rebuild_ring();
        }
        for event in events {
            let _ = self.shared.events.send(event);
        }
    }

    fn learn_address(&self, node: NodeId) {
        let address = self
            .shared
            .gossiper
            .lock()
            .states()
            .get(&node)
            .and_then(|s| s.get(AppKey::InternalAddress))
            .and_then(|a| a.parse::<SocketAddr>().ok());
        if let Some(address) = address {
            self.shared.addresses.write().insert(node, address);
        }
    }

    fn rebuild_ring(&self) {
        let members: BTreeMap<NodeId, (Member, Vec<Token>)> = {
            let g = self.shared.gossiper.lock();
            // A replacement that finished owns the dead node's tokens even before the news
            // that the dead node is removed arrives.
            let replaced: Vec<NodeId> = g
                .states()
                .values()
                .filter(|s| s.get(AppKey::Status) == Some(status::NORMAL))
                .filter_map(replaced_by)
                .collect();
            g.states()
                .iter()
                .filter(|(id, s)| {
                    // A leaving or removing node owns its ranges until they are handed over.
                    matches!(
                        s.get(AppKey::Status),
                        Some(
                            status::NORMAL | status::SHUTDOWN | status::LEAVING | status::REMOVING
                        )
                    ) && !replaced.contains(id)
                })
                .filter_map(|(id, s)| Some((*id, member_of(*id, s)?)))
                .collect()
        };
        match Ring::new(members.into_values()) {
            Ok(ring) => {
                *self.shared.ring.write() = Arc::new(ring);
            }
            // Two nodes claiming one token: keep the last consistent ring and say why.
            Err(e) => tracing::warn!(error = %e, "ring not updated"),
        }
    }
}

/// The dead node a replacement names, if it is one.
fn replaced_by(s: &crate::gossip::EndpointState) -> Option<NodeId> {
    s.get(AppKey::Replacing)?.parse().ok().map(NodeId)
}

/// A node as the ring places it, with the tokens its gossip state carries.
fn member_of(id: NodeId, s: &crate::gossip::EndpointState) -> Option<(Member, Vec<Token>)> {
    let address: SocketAddr = s.get(AppKey::InternalAddress)?.parse().ok()?;
    let member = Member {
        id,
        address: address.ip(),
        location: Location::new(
            s.get(AppKey::Dc).unwrap_or("datacenter1"),
            s.get(AppKey::Rack).unwrap_or("rack1"),
        ),
    };
    let tokens = s.get(AppKey::Tokens).map(decode_tokens).unwrap_or_default();
    Some((member, tokens))
}

fn is_gossip(verb: Verb) -> bool {
    matches!(
        verb,
        Verb::GossipDigestSyn | Verb::GossipDigestAck | Verb::GossipDigestAck2
    )
}

fn announce(g: &mut Gossiper, s: &ServiceSettings, listen: SocketAddr) {
    g.set_local(AppKey::HostId, s.host_id.to_string());
    g.set_local(AppKey::InternalAddress, listen.to_string());
    g.set_local(AppKey::NativeAddress, s.native.to_string());
    g.set_local(AppKey::NativePort, s.native.port().to_string());
    g.set_local(AppKey::Dc, s.location.datacenter.clone());
    g.set_local(AppKey::Rack, s.location.rack.clone());
    g.set_local(AppKey::Tokens, encode_tokens(&s.tokens));
    g.set_local(AppKey::SchemaVersion, s.schema_version.clone());
    g.set_local(AppKey::ReleaseVersion, s.release_version.clone());
    // A node without tokens yet is learning the ring to choose them: it is not an owner.
    let state = if s.tokens.is_empty() {
        status::JOINING
    } else {
        status::NORMAL
    };
    g.set_local(AppKey::Status, state);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gossip::FailureDetectorConfig;
    use helenus_types::SystemClock;
    use std::net::{IpAddr, Ipv4Addr};

    fn settings(n: u8, seeds: Vec<SocketAddr>) -> ServiceSettings {
        let ip = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
        ServiceSettings {
            host_id: NodeId(Uuid::from_u128(u128::from(n) + 1)),
            listen: SocketAddr::new(ip, 0),
            native: SocketAddr::new(ip, 9042),
            location: Location::default(),
            tokens: (0..4).map(|t| i64::from(n) * 1000 + t * 10 + 1).collect(),
            seeds,
            gossip: GossipConfig {
                interval: Duration::from_millis(50),
                failure_detector: FailureDetectorConfig {
                    phi_convict_threshold: 8.0,
                    initial_interval: Duration::from_millis(100),
                },
                ..GossipConfig::default()
            },
            schema_version: "59adb24e-f3cd-3e02-97f0-5b395827453f".into(),
            release_version: "5.0.9".into(),
            generation: 1,
        }
    }

    async fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        while !check() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn three_processes_worth_of_services_form_one_ring_over_tcp() {
        let (first, _r0) = ClusterService::start(settings(0, vec![]), SystemClock::shared())
            .await
            .unwrap();
        let seed = first.listen_address();
        let (second, _r1) = ClusterService::start(settings(1, vec![seed]), SystemClock::shared())
            .await
            .unwrap();
        let (third, _r2) = ClusterService::start(settings(2, vec![seed]), SystemClock::shared())
            .await
            .unwrap();
        let all = [first.clone(), second.clone(), third.clone()];
        // A peer learned from a third is up once its heartbeat moves: a round later.
        wait_for("a ring of 12 tokens and every peer up everywhere", || {
            all.iter()
                .all(|s| s.ring().len() == 12 && s.peers().iter().all(|p| p.alive))
        })
        .await;
        let peers = third.peers();
        assert_eq!(peers.len(), 2);
        assert!(peers
            .iter()
            .all(|p| p.alive && p.tokens.len() == 4 && p.status == status::NORMAL));
        assert_eq!(
            peers
                .iter()
                .find(|p| p.host_id == first.host_id())
                .and_then(|p| p.address),
            Some(seed)
        );

        // A crash: the others convict it after a few silent intervals.
        third.stop();
        wait_for("node 3 seen down", || {
            !first.is_alive(third.host_id()) && !second.is_alive(third.host_id())
        })
        .await;
        assert_eq!(first.ring().len(), 12, "down is not gone: its tokens stay");

        // A clean stop is seen at once.
        let mut events = first.subscribe();
        second.shutdown().await;
        let seen = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                if let Ok(GossipEvent::Down(n)) = events.recv().await {
                    if n == second.host_id() {
                        return;
                    }
                }
            }
        })
        .await;
        assert!(seen.is_ok(), "shutdown announced");
        first.stop();
    }

    #[test]
    fn tokens_round_trip_through_their_gossip_form() {
        let tokens = vec![i64::MIN + 1, -5, 0, i64::MAX];
        assert_eq!(decode_tokens(&encode_tokens(&tokens)), tokens);
    }
}
