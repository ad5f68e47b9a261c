//! Schema agreement's safety net (Cassandra's `MigrationCoordinator`): every node announces its
//! schema version in gossip; a live peer announcing a different version is asked for its schema,
//! which is merged in. What a schema is and how two merge is the caller's (`SchemaSource`); this
//! module decides whom to ask and carries the exchange.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use bytes::Bytes;

use crate::locator::NodeId;
use crate::messaging::{Envelope, Messenger, Verb};
use crate::service::PeerInfo;

/// This node's schema, as far as agreement needs it.
pub trait SchemaSource: Send + Sync {
    /// The version announced in gossip (a digest of the schema).
    fn version(&self) -> String;
    /// The whole schema, to send to a peer that asks.
    fn export(&self) -> Bytes;
    /// Merges a peer's schema in; returns the version after the merge.
    fn merge(&self, schema: &Bytes) -> Result<String, String>;
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaSyncError {
    #[error("schema pull from {0} timed out")]
    Timeout(NodeId),
    #[error("cannot reach {0}")]
    Unreachable(NodeId),
    #[error("schema from {from} not merged: {reason}")]
    Merge { from: NodeId, reason: String },
}

/// Live peers whose schema version differs from ours: whom to pull from.
pub fn peers_to_pull(local_version: &str, peers: &[PeerInfo]) -> Vec<NodeId> {
    peers
        .iter()
        .filter(|p| p.alive)
        .filter(|p| {
            p.schema_version
                .as_deref()
                .is_some_and(|v| v != local_version)
        })
        .map(|p| p.host_id)
        .collect()
}

/// Schema versions and the nodes on each (`nodetool describecluster`); unreachable nodes are
/// listed under `UNREACHABLE`, as Cassandra does.
pub fn schema_versions(local: (&str, IpAddr), peers: &[PeerInfo]) -> BTreeMap<String, Vec<IpAddr>> {
    let mut versions: BTreeMap<String, Vec<IpAddr>> = BTreeMap::new();
    versions
        .entry(local.0.to_string())
        .or_default()
        .push(local.1);
    for p in peers {
        let Some(address) = p.address.map(|a| a.ip()) else {
            continue;
        };
        let key = match (&p.schema_version, p.alive) {
            (Some(v), true) => v.clone(),
            _ => "UNREACHABLE".to_string(),
        };
        versions.entry(key).or_default().push(address);
    }
    for addresses in versions.values_mut() {
        addresses.sort();
    }
    versions
}

/// Asks `from` for its schema and merges it; returns the version after the merge.
pub async fn pull_schema(
    from: NodeId,
    messenger: &Messenger,
    source: &dyn SchemaSource,
    timeout: Duration,
) -> Result<String, SchemaSyncError> {
    let (id, reply) = messenger
        .request(from, Verb::SchemaPull, Bytes::new())
        .map_err(|_| SchemaSyncError::Unreachable(from))?;
    let schema = match tokio::time::timeout(timeout, reply).await {
        Ok(Ok(e)) if e.verb == Verb::SchemaPush => e.payload,
        _ => {
            messenger.forget(id);
            return Err(SchemaSyncError::Timeout(from));
        }
    };
    source
        .merge(&schema)
        .map_err(|reason| SchemaSyncError::Merge { from, reason })
}

/// Answers a SchemaPull with this node's schema.
pub fn serve_schema_pull(request: &Envelope, source: &dyn SchemaSource, messenger: &Messenger) {
    let _ = messenger.respond(request, Verb::SchemaPush, source.export());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locator::Location;
    use crate::messaging::SimulatedNetwork;
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};
    use uuid::Uuid;

    fn node(n: u128) -> NodeId {
        NodeId(Uuid::from_u128(n))
    }

    /// A schema that is a set of table names; merging is union.
    #[derive(Default)]
    struct Tables(Mutex<BTreeSet<String>>);

    impl SchemaSource for Tables {
        fn version(&self) -> String {
            let t = self.0.lock().unwrap();
            format!(
                "{:08x}",
                crc32c::crc32c(t.iter().cloned().collect::<Vec<_>>().join(",").as_bytes())
            )
        }
        fn export(&self) -> Bytes {
            Bytes::from(
                self.0
                    .lock()
                    .unwrap()
                    .iter()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(","),
            )
        }
        fn merge(&self, schema: &Bytes) -> Result<String, String> {
            let text = std::str::from_utf8(schema).map_err(|e| e.to_string())?;
            self.0.lock().unwrap().extend(
                text.split(',')
                    .filter(|t| !t.is_empty())
                    .map(str::to_string),
            );
            Ok(self.version())
        }
    }

    fn tables(names: &[&str]) -> Arc<Tables> {
        Arc::new(Tables(Mutex::new(
            names.iter().map(|s| s.to_string()).collect(),
        )))
    }

    fn serve(net: &SimulatedNetwork, id: NodeId, source: Arc<Tables>) -> Messenger {
        let (t, mut inbox) = net.join(id, 64);
        let messenger = Messenger::new(Arc::new(t));
        let m = messenger.clone();
        tokio::spawn(async move {
            while let Some(e) = inbox.recv().await {
                if e.is_response() {
                    m.complete(e);
                } else if e.verb == Verb::SchemaPull {
                    serve_schema_pull(&e, source.as_ref(), &m);
                }
            }
        });
        messenger
    }

    fn peer(n: u128, version: &str, alive: bool) -> PeerInfo {
        PeerInfo {
            host_id: node(n),
            address: Some(format!("127.0.0.{n}:7000").parse().unwrap()),
            native: None,
            location: Location::default(),
            tokens: vec![],
            status: "NORMAL".into(),
            schema_version: Some(version.into()),
            auth_version: None,
            release_version: None,
            load: None,
            alive,
        }
    }

    #[tokio::test]
    async fn two_nodes_with_different_schemas_converge_by_pulling() {
        let net = SimulatedNetwork::new(1);
        let a = tables(&["ks.t1"]);
        let b = tables(&["ks.t2"]);
        let ma = serve(&net, node(1), a.clone());
        let mb = serve(&net, node(2), b.clone());
        assert_ne!(a.version(), b.version());
        assert_eq!(
            peers_to_pull(&b.version(), &[peer(1, &a.version(), true)]),
            vec![node(1)]
        );
        pull_schema(node(1), &mb, b.as_ref(), Duration::from_secs(1))
            .await
            .unwrap();
        pull_schema(node(2), &ma, a.as_ref(), Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(a.version(), b.version());
        assert!(peers_to_pull(&a.version(), &[peer(2, &b.version(), true)]).is_empty());
    }

    #[test]
    fn describecluster_groups_nodes_by_version_and_lists_the_unreachable() {
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let versions = schema_versions(
            ("v1", local),
            &[
                peer(2, "v1", true),
                peer(3, "v2", true),
                peer(4, "v1", false),
            ],
        );
        assert_eq!(
            versions["v1"],
            vec![local, "127.0.0.2".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(versions["v2"].len(), 1);
        assert_eq!(
            versions["UNREACHABLE"],
            vec!["127.0.0.4".parse::<IpAddr>().unwrap()]
        );
        assert!(
            peers_to_pull("v1", &[peer(4, "v9", false)]).is_empty(),
            "never pull from a dead node"
        );
    }

    #[tokio::test]
    async fn a_silent_peer_times_out() {
        let net = SimulatedNetwork::new(1);
        let (_t, _silent) = net.join(node(9), 4);
        let m = serve(&net, node(1), tables(&[]));
        let err = pull_schema(node(9), &m, tables(&[]).as_ref(), Duration::from_millis(30))
            .await
            .unwrap_err();
        assert_eq!(err, SchemaSyncError::Timeout(node(9)));
    }
}
