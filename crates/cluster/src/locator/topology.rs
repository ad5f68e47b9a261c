//! Who is in the cluster and where: host ids, addresses, data centers and racks.

use std::fmt;
use std::net::IpAddr;

use uuid::Uuid;

/// A node's identity for its whole life (Cassandra's host id): it survives restarts and address
/// changes; a replacement node takes over the tokens but gets a new id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub Uuid);

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Data center and rack, as GossipingPropertyFileSnitch reports them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    pub datacenter: String,
    pub rack: String,
}

impl Location {
    pub fn new(datacenter: impl Into<String>, rack: impl Into<String>) -> Self {
        Location {
            datacenter: datacenter.into(),
            rack: rack.into(),
        }
    }
}

impl Default for Location {
    /// Cassandra's defaults for a node that names neither.
    fn default() -> Self {
        Location::new("datacenter1", "rack1")
    }
}

/// One node of the ring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub id: NodeId,
    /// The address peers and clients reach it on (`listen_address`/`rpc_address` are one here).
    pub address: IpAddr,
    pub location: Location,
}
