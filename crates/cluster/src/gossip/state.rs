//! What gossip spreads: each node's heartbeat (generation and version) and its application states
//! (status, tokens, data center, rack, addresses, schema version...), every value stamped with
//! the node's own version counter so a newer value always wins.

use std::collections::BTreeMap;

/// A node's incarnation: its start time in seconds. A restart raises it, which tells every peer
/// to drop what it knew of the previous incarnation.
pub type Generation = i64;
/// A node's own counter, bumped on every heartbeat and every state change.
pub type Version = u64;

/// Application state keys (Cassandra's `ApplicationState` names, the ones Helenus uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum AppKey {
    Status = 1,
    Tokens = 2,
    Dc = 3,
    Rack = 4,
    HostId = 5,
    InternalAddress = 6,
    NativeAddress = 7,
    NativePort = 8,
    SchemaVersion = 9,
    ReleaseVersion = 10,
    Load = 11,
    Severity = 12,
    /// A digest of the node's roles and permissions (`system_auth`): peers that differ pull.
    AuthVersion = 13,
    /// The host id of the dead node this one replaces (`replace_address_first_boot`); Cassandra
    /// carries the replaced address in the status value instead.
    Replacing = 14,
}

impl AppKey {
    pub fn from_u8(v: u8) -> Option<AppKey> {
        use AppKey::*;
        Some(match v {
            1 => Status,
            2 => Tokens,
            3 => Dc,
            4 => Rack,
            5 => HostId,
            6 => InternalAddress,
            7 => NativeAddress,
            8 => NativePort,
            9 => SchemaVersion,
            10 => ReleaseVersion,
            11 => Load,
            12 => Severity,
            13 => AuthVersion,
            14 => Replacing,
            _ => return None,
        })
    }

    /// The name `nodetool gossipinfo` prints.
    pub fn name(self) -> &'static str {
        use AppKey::*;
        match self {
            Status => "STATUS_WITH_PORT",
            Tokens => "TOKENS",
            Dc => "DC",
            Rack => "RACK",
            HostId => "HOST_ID",
            InternalAddress => "INTERNAL_ADDRESS_AND_PORT",
            NativeAddress => "NATIVE_ADDRESS_AND_PORT",
            NativePort => "NATIVE_PORT",
            SchemaVersion => "SCHEMA",
            ReleaseVersion => "RELEASE_VERSION",
            Load => "LOAD",
            Severity => "SEVERITY",
            AuthVersion => "X_AUTH_VERSION",
            Replacing => "X_REPLACING",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionedValue {
    pub value: String,
    pub version: Version,
}

/// Everything known about one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointState {
    pub generation: Generation,
    /// The heartbeat's version: the highest version this node has issued that we have seen for
    /// its heartbeat.
    pub heartbeat: Version,
    pub states: BTreeMap<AppKey, VersionedValue>,
}

impl EndpointState {
    pub fn new(generation: Generation) -> Self {
        EndpointState {
            generation,
            heartbeat: 0,
            states: BTreeMap::new(),
        }
    }

    /// The highest version anywhere in this state (what a digest advertises).
    pub fn max_version(&self) -> Version {
        self.states
            .values()
            .map(|v| v.version)
            .fold(self.heartbeat, Version::max)
    }

    pub fn get(&self, key: AppKey) -> Option<&str> {
        self.states.get(&key).map(|v| v.value.as_str())
    }

    /// The part of this state newer than `version`.
    pub fn newer_than(&self, version: Version) -> EndpointState {
        EndpointState {
            generation: self.generation,
            heartbeat: self.heartbeat,
            states: self
                .states
                .iter()
                .filter(|(_, v)| v.version > version)
                .map(|(k, v)| (*k, v.clone()))
                .collect(),
        }
    }

    /// Folds a remote delta of the same generation in; returns the keys whose value changed.
    pub fn apply(&mut self, delta: &EndpointState) -> Vec<AppKey> {
        self.heartbeat = self.heartbeat.max(delta.heartbeat);
        let mut changed = Vec::new();
        for (key, value) in &delta.states {
            let newer = self
                .states
                .get(key)
                .is_none_or(|mine| value.version > mine.version);
            if newer {
                self.states.insert(*key, value.clone());
                changed.push(*key);
            }
        }
        changed
    }
}

/// Node status values (`STATUS_WITH_PORT`'s first field), as Cassandra spells them.
pub mod status {
    pub const NORMAL: &str = "NORMAL";
    pub const JOINING: &str = "BOOT";
    pub const LEAVING: &str = "LEAVING";
    pub const LEFT: &str = "LEFT";
    pub const SHUTDOWN: &str = "shutdown";
    /// A new node streaming the ranges of the dead node whose tokens it takes over (`AppKey::
    /// Replacing` names it): pending for those ranges, like BOOT, and an owner only once NORMAL.
    pub const REPLACING: &str = "BOOT_REPLACE";
    /// A dead node whose ranges the others are re-replicating (`nodetool removenode`), set on
    /// its behalf: still an owner, with the gaining nodes pending.
    pub const REMOVING: &str = "removing";
    /// A dead node taken out of the ring (removenode, or a replacement that finished), set on
    /// its behalf. Final: a later incarnation of it is ignored.
    pub const REMOVED: &str = "removed";

    /// Whether a node in `status` is gone from the ring for good (it is not shown, and owns
    /// nothing).
    pub fn is_gone(status: &str) -> bool {
        status == LEFT || status == REMOVED
    }
}
