//! The gossip protocol (Cassandra's `Gossiper`): every interval a node bumps its heartbeat and
//! sends a digest of everything it knows to one live peer, sometimes to an unreachable one and to
//! a seed; three messages reconcile the two views. Heartbeats that move feed the failure
//! detector; a peer whose heartbeat stops is convicted and reported down.
//!
//! The protocol is a plain state machine (`tick`, `handle`) that returns the messages to send, so
//! it runs unchanged over TCP or on the simulated network under a manual clock.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use helenus_types::SharedClock;

use super::failure_detector::{FailureDetector, FailureDetectorConfig};
use super::message::{Ack, Ack2, Digest, GossipDecodeError, Syn};
use super::state::{status, AppKey, EndpointState, Generation, Version, VersionedValue};
use crate::locator::NodeId;
use crate::messaging::{Envelope, Verb};

/// How far a value set on another node's behalf jumps past that node's own versions: more than
/// the heartbeats it could have issued that a peer saw and this node did not.
const ON_BEHALF_VERSION_JUMP: Version = 1 << 20;

/// Gossip settings, with Cassandra's names where it has them.
#[derive(Clone, Debug)]
pub struct GossipConfig {
    /// `cluster_name`: peers of another cluster are ignored.
    pub cluster_name: String,
    /// How often a round runs (Cassandra: 1 s).
    pub interval: Duration,
    /// Nodes contacted to join and to keep partitions from persisting.
    pub seeds: Vec<NodeId>,
    pub failure_detector: FailureDetectorConfig,
    /// Seeds the choice of gossip partners (deterministic simulations).
    pub random_seed: u64,
    /// How long a node without tokens may stay silent before it is dropped from gossip
    /// (Cassandra's fat-client timeout): a start that was refused or killed before it chose
    /// tokens owned nothing, and must not linger as a second node at its address.
    pub fat_client_timeout: Duration,
    /// How long news of a dropped incarnation is ignored (Cassandra's quarantine delay), so a
    /// peer that has not dropped it yet does not gossip it back.
    pub quarantine: Duration,
}

impl Default for GossipConfig {
    fn default() -> Self {
        GossipConfig {
            cluster_name: "Test Cluster".into(),
            interval: Duration::from_secs(1),
            seeds: Vec::new(),
            failure_detector: FailureDetectorConfig::default(),
            random_seed: 0x5eed,
            fat_client_timeout: Duration::from_secs(30),
            quarantine: Duration::from_secs(60),
        }
    }
}

/// A change in what this node knows of the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GossipEvent {
    /// First heard of.
    Joined(NodeId),
    /// Restarted: a new generation replaced the old state.
    Restarted(NodeId),
    Up(NodeId),
    Down(NodeId),
    Changed(NodeId, AppKey),
    /// Dropped from gossip: a node without tokens that stayed silent, or that a newer node at
    /// its address superseded. It never owned anything.
    Evicted(NodeId),
}

/// Why an incoming gossip message was dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GossipError {
    #[error("{0}")]
    Decode(#[from] GossipDecodeError),
    #[error("gossip from cluster {theirs:?}, this is {ours:?}")]
    ClusterName { ours: String, theirs: String },
    #[error("{0:?} is not a gossip verb")]
    NotGossip(Verb),
}

/// One node's view of the cluster and the protocol that keeps it current.
#[derive(Debug)]
pub struct Gossiper {
    local: NodeId,
    config: GossipConfig,
    version: Version,
    states: BTreeMap<NodeId, EndpointState>,
    live: BTreeSet<NodeId>,
    detector: FailureDetector,
    clock: SharedClock,
    /// When each peer's heartbeat last moved, or when it was first learned of (monotonic
    /// nanoseconds): what the fat-client timeout measures.
    last_news: HashMap<NodeId, u64>,
    /// Dropped incarnations (generation) and when their quarantine ends.
    evicted: HashMap<NodeId, (Generation, u64)>,
    rng: u64,
    events: Vec<GossipEvent>,
    /// Peers hold this node's host id as removed (it was removed or replaced while it was down).
    removed_by_peers: bool,
}

impl Gossiper {
    pub fn new(
        local: NodeId,
        generation: Generation,
        config: GossipConfig,
        clock: SharedClock,
    ) -> Self {
        let detector = FailureDetector::new(config.failure_detector.clone(), clock.clone());
        let mut states = BTreeMap::new();
        states.insert(local, EndpointState::new(generation));
        Gossiper {
            local,
            rng: config.random_seed | 1,
            config,
            version: 0,
            states,
            live: BTreeSet::new(),
            detector,
            clock,
            last_news: HashMap::new(),
            evicted: HashMap::new(),
            events: Vec::new(),
            removed_by_peers: false,
        }
    }

    pub fn local(&self) -> NodeId {
        self.local
    }

    /// Sets one of this node's application states; peers learn it within a few rounds.
    pub fn set_local(&mut self, key: AppKey, value: impl Into<String>) {
        self.version += 1;
        let version = self.version;
        if let Some(me) = self.states.get_mut(&self.local) {
            me.states.insert(
                key,
                VersionedValue {
                    value: value.into(),
                    version,
                },
            );
        }
    }

    /// Sets `key` of another node's state, as Cassandra's removenode speaks for a dead node.
    /// The value's version jumps far past anything that node issued, so it beats every copy a
    /// peer holds (their digests compare maximum versions) and a stale copy gossiped later
    /// cannot undo it. False when the node is unknown.
    pub fn set_on_behalf(&mut self, node: NodeId, key: AppKey, value: impl Into<String>) -> bool {
        if node == self.local {
            self.set_local(key, value);
            return true;
        }
        let Some(state) = self.states.get_mut(&node) else {
            return false;
        };
        let version = state.max_version() + ON_BEHALF_VERSION_JUMP;
        let value = value.into();
        let gone = key == AppKey::Status && status::is_gone(&value);
        state.states.insert(key, VersionedValue { value, version });
        self.events.push(GossipEvent::Changed(node, key));
        if gone {
            self.live.remove(&node);
            self.detector.remove(node);
        }
        true
    }

    /// Whether peers say this node was removed from the ring (see `apply`).
    pub fn removed_by_peers(&self) -> bool {
        self.removed_by_peers
    }

    /// Every known node's state, this node's included.
    pub fn states(&self) -> &BTreeMap<NodeId, EndpointState> {
        &self.states
    }

    pub fn is_alive(&self, node: NodeId) -> bool {
        node == self.local || self.live.contains(&node)
    }

    /// Peers currently up.
    pub fn live_peers(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.live.iter().copied()
    }

    /// Peers known but down.
    pub fn unreachable_peers(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.states
            .keys()
            .copied()
            .filter(|n| *n != self.local && !self.live.contains(n))
    }

    /// What happened since the last call.
    pub fn drain_events(&mut self) -> Vec<GossipEvent> {
        std::mem::take(&mut self.events)
    }

    /// One gossip round: heartbeat, convictions, and the Syn messages to send.
    pub fn tick(&mut self) -> Vec<(NodeId, Envelope)> {
        self.version += 1;
        let version = self.version;
        if let Some(me) = self.states.get_mut(&self.local) {
            me.heartbeat = version;
        }
        self.convict();
        self.evict_fat_clients();
        let syn = self.syn_envelope();
        self.partners()
            .into_iter()
            .map(|to| (to, syn.clone()))
            .collect()
    }

    /// Handles one gossip message; returns the replies to send.
    pub fn handle(&mut self, envelope: &Envelope) -> Result<Vec<(NodeId, Envelope)>, GossipError> {
        let from = envelope.from;
        match envelope.verb {
            Verb::GossipDigestSyn => {
                let syn = Syn::decode(envelope.payload.clone())?;
                if syn.cluster_name != self.config.cluster_name {
                    return Err(GossipError::ClusterName {
                        ours: self.config.cluster_name.clone(),
                        theirs: syn.cluster_name,
                    });
                }
                let ack = self.answer_syn(&syn.digests);
                Ok(vec![(
                    from,
                    self.envelope(Verb::GossipDigestAck, ack.encode()),
                )])
            }
            Verb::GossipDigestAck => {
                let ack = Ack::decode(envelope.payload.clone())?;
                for (node, delta) in &ack.deltas {
                    self.apply(from, *node, delta);
                }
                if ack.requests.is_empty() {
                    return Ok(Vec::new());
                }
                let deltas = self.deltas_for(&ack.requests);
                let ack2 = Ack2 { deltas };
                Ok(vec![(
                    from,
                    self.envelope(Verb::GossipDigestAck2, ack2.encode()),
                )])
            }
            Verb::GossipDigestAck2 => {
                let ack2 = Ack2::decode(envelope.payload.clone())?;
                for (node, delta) in &ack2.deltas {
                    self.apply(from, *node, delta);
                }
                Ok(Vec::new())
            }
            other => Err(GossipError::NotGossip(other)),
        }
    }

    fn envelope(&self, verb: Verb, payload: bytes::Bytes) -> Envelope {
        Envelope {
            verb,
            flags: 0,
            id: 0,
            from: self.local,
            payload,
        }
    }

    fn syn_envelope(&self) -> Envelope {
        let digests = self
            .states
            .iter()
            .map(|(node, s)| Digest {
                node: *node,
                generation: s.generation,
                max_version: s.max_version(),
            })
            .collect();
        let syn = Syn {
            cluster_name: self.config.cluster_name.clone(),
            digests,
        };
        self.envelope(Verb::GossipDigestSyn, syn.encode())
    }

    /// One live peer; an unreachable one with probability unreachable/(live+1); a seed when none
    /// of those was one and the live set is small or by chance (Cassandra's rules, which keep a
    /// partitioned cluster from staying split).
    fn partners(&mut self) -> Vec<NodeId> {
        let live: Vec<NodeId> = self.live.iter().copied().collect();
        let unreachable: Vec<NodeId> = self.unreachable_peers().collect();
        let mut chosen = Vec::new();
        if let Some(p) = self.pick(&live) {
            chosen.push(p);
        }
        if !unreachable.is_empty() {
            let roll = self.next_random() % (live.len() as u64 + 1);
            if roll < unreachable.len() as u64 {
                if let Some(p) = self.pick(&unreachable) {
                    chosen.push(p);
                }
            }
        }
        let seeds: Vec<NodeId> = self
            .config
            .seeds
            .iter()
            .copied()
            .filter(|s| *s != self.local)
            .collect();
        let met_a_seed = chosen.iter().any(|c| seeds.contains(c));
        if !seeds.is_empty() && !met_a_seed {
            let known = (live.len() + unreachable.len()).max(1) as u64;
            let by_chance = self.next_random() % known < seeds.len() as u64;
            if live.len() < seeds.len() || by_chance {
                if let Some(s) = self.pick(&seeds) {
                    if !chosen.contains(&s) {
                        chosen.push(s);
                    }
                }
            }
        }
        chosen
    }

    fn answer_syn(&self, digests: &[Digest]) -> Ack {
        let mut requests = Vec::new();
        let mut deltas = Vec::new();
        let mut mentioned = BTreeSet::new();
        for d in digests {
            mentioned.insert(d.node);
            let Some(mine) = self.states.get(&d.node) else {
                requests.push(Digest {
                    max_version: 0,
                    ..*d
                });
                continue;
            };
            if d.generation > mine.generation && mine.get(AppKey::Status) == Some(status::REMOVED) {
                // A removed node restarted: it is told, not taken back.
                deltas.push((d.node, mine.newer_than(0)));
            } else if d.generation > mine.generation {
                requests.push(Digest {
                    max_version: 0,
                    ..*d
                });
            } else if d.generation < mine.generation {
                deltas.push((d.node, mine.newer_than(0)));
            } else if d.max_version > mine.max_version() {
                requests.push(Digest {
                    max_version: mine.max_version(),
                    ..*d
                });
            } else if d.max_version < mine.max_version() {
                deltas.push((d.node, mine.newer_than(d.max_version)));
            }
        }
        for (node, state) in &self.states {
            if !mentioned.contains(node) {
                deltas.push((*node, state.newer_than(0)));
            }
        }
        Ack { requests, deltas }
    }

    fn deltas_for(&self, requests: &[Digest]) -> Vec<(NodeId, EndpointState)> {
        requests
            .iter()
            .filter_map(|r| {
                let mine = self.states.get(&r.node)?;
                let since = if mine.generation == r.generation {
                    r.max_version
                } else {
                    0
                };
                Some((r.node, mine.newer_than(since)))
            })
            .collect()
    }

    /// Folds in what `from` says of `node`.
    fn apply(&mut self, from: NodeId, node: NodeId, delta: &EndpointState) {
        if node == self.local {
            // Only this node speaks for itself, but it listens when the ring removed it.
            if delta.get(AppKey::Status) == Some(status::REMOVED) {
                self.removed_by_peers = true;
            }
            return;
        }
        if self.quarantined(node, delta.generation) {
            return;
        }
        match self.states.get_mut(&node) {
            None => {
                self.states.insert(node, delta.clone());
                self.events.push(GossipEvent::Joined(node));
                // News from a third party is no sign of life: the node may have died long ago
                // (Cassandra echoes before marking such a node up). Its own word is, and so is
                // its heartbeat moving later.
                if from == node {
                    self.heard_from(node);
                } else {
                    // Its rhythm is measured from now all the same.
                    self.detector.report(node);
                    self.last_news.insert(node, self.clock.monotonic_nanos());
                }
                self.evict_superseded(node);
            }
            // A removed node stays removed: a restart of it (its old data, its old tokens,
            // perhaps now a replacement's) must not bring it back into the ring.
            Some(mine) if mine.get(AppKey::Status) == Some(status::REMOVED) => return,
            Some(mine) if delta.generation > mine.generation => {
                *mine = delta.clone();
                self.events.push(GossipEvent::Restarted(node));
                self.detector.remove(node);
                self.heard_from(node);
                self.evict_superseded(node);
            }
            Some(mine) if delta.generation == mine.generation => {
                let beat = delta.heartbeat > mine.heartbeat;
                let changed = mine.apply(delta);
                self.events
                    .extend(changed.into_iter().map(|k| GossipEvent::Changed(node, k)));
                if beat {
                    self.heard_from(node);
                }
            }
            Some(_) => {} // an older incarnation: stale news
        }
        // A node stopping cleanly says so, and is down at once rather than after conviction.
        let stopped = self
            .states
            .get(&node)
            .and_then(|s| s.get(AppKey::Status))
            .is_some_and(|v| v == status::SHUTDOWN);
        if stopped && self.live.remove(&node) {
            self.detector.remove(node);
            self.events.push(GossipEvent::Down(node));
        }
    }

    fn heard_from(&mut self, node: NodeId) {
        // Neither a node stopping nor one gone from the ring (news of it is not a heartbeat).
        let stopped = self
            .states
            .get(&node)
            .and_then(|s| s.get(AppKey::Status))
            .is_some_and(|v| v == status::SHUTDOWN || status::is_gone(v));
        if stopped {
            return;
        }
        self.detector.report(node);
        self.last_news.insert(node, self.clock.monotonic_nanos());
        if self.live.insert(node) {
            self.events.push(GossipEvent::Up(node));
        }
    }

    fn convict(&mut self) {
        let convicted: Vec<NodeId> = self
            .live
            .iter()
            .copied()
            .filter(|n| !self.detector.is_alive(*n))
            .collect();
        for node in convicted {
            self.live.remove(&node);
            self.events.push(GossipEvent::Down(node));
        }
    }

    /// Whether news of this incarnation of `node` is to be ignored: it was dropped, and its
    /// quarantine has not ended. A newer incarnation is welcome at once.
    fn quarantined(&mut self, node: NodeId, generation: Generation) -> bool {
        let Some(&(dropped, until)) = self.evicted.get(&node) else {
            return false;
        };
        if generation > dropped || self.clock.monotonic_nanos() >= until {
            self.evicted.remove(&node);
            return false;
        }
        true
    }

    /// Drops peers that own nothing and have been silent past the fat-client timeout (and the
    /// ends of quarantines).
    fn evict_fat_clients(&mut self) {
        let now = self.clock.monotonic_nanos();
        self.evicted.retain(|_, (_, until)| now < *until);
        let timeout = nanos(self.config.fat_client_timeout);
        let silent: Vec<NodeId> = self
            .states
            .iter()
            .filter(|(id, s)| **id != self.local && is_fat_client(s) && !self.live.contains(id))
            .map(|(id, _)| *id)
            .filter(|id| {
                let since = *self.last_news.entry(*id).or_insert(now);
                now.saturating_sub(since) > timeout
            })
            .collect();
        for node in silent {
            tracing::info!(%node, "dropping a silent node without tokens from gossip");
            self.evict(node);
        }
    }

    /// A node that owns nothing is dropped once a newer incarnation of another host id speaks
    /// from its address: one address holds one process, so the older one is gone however
    /// recently its heartbeat was relayed (Cassandra keys gossip by address, so there the newer
    /// state simply replaces the older). `learned` is the node just heard of, either side.
    fn evict_superseded(&mut self, learned: NodeId) {
        let Some(address) = self
            .states
            .get(&learned)
            .and_then(|s| s.get(AppKey::InternalAddress))
            .map(str::to_string)
        else {
            return;
        };
        let at_address = |s: &EndpointState| s.get(AppKey::InternalAddress) == Some(&address);
        let Some(newest) = self
            .states
            .values()
            .filter(|s| at_address(s))
            .map(|s| s.generation)
            .max()
        else {
            return;
        };
        let superseded: Vec<NodeId> = self
            .states
            .iter()
            .filter(|(id, s)| {
                **id != self.local && at_address(s) && is_fat_client(s) && s.generation < newest
            })
            .map(|(id, _)| *id)
            .collect();
        for node in superseded {
            tracing::info!(%node, %address, "a newer node at this address replaces an old one without tokens in gossip");
            self.evict(node);
        }
    }

    fn evict(&mut self, node: NodeId) {
        let Some(state) = self.states.remove(&node) else {
            return;
        };
        self.live.remove(&node);
        self.detector.remove(node);
        self.last_news.remove(&node);
        let until = self.clock.monotonic_nanos() + nanos(self.config.quarantine);
        self.evicted.insert(node, (state.generation, until));
        self.events.push(GossipEvent::Evicted(node));
    }

    fn pick(&mut self, from: &[NodeId]) -> Option<NodeId> {
        if from.is_empty() {
            return None;
        }
        let i = (self.next_random() % from.len() as u64) as usize;
        from.get(i).copied()
    }

    fn next_random(&mut self) -> u64 {
        crate::seeded::next_u64(&mut self.rng)
    }
}

/// A node that owns no tokens and is not a departed member (whose state must stay, so it is not
/// taken back).
fn is_fat_client(s: &EndpointState) -> bool {
    let no_tokens = s.get(AppKey::Tokens).is_none_or(|t| t.trim().is_empty());
    no_tokens && !s.get(AppKey::Status).is_some_and(status::is_gone)
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
