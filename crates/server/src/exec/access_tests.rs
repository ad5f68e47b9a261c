//! Authorization through the executor on a real node with PasswordAuthenticator and
//! CassandraAuthorizer: what a role may run, the creator's grants, and what a drop forgets.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::{run_query, ExecError, Outcome, Session};
use crate::config::{Authenticator, Authorizer, NodeConfig};
use crate::node::NodeState;
use helenus_protocol as proto;
use std::sync::Arc;

fn params() -> proto::QueryParameters {
    proto::QueryParameters {
        consistency: proto::Consistency::One,
        values: proto::QueryValues::default(),
        skip_metadata: false,
        page_size: None,
        paging_state: None,
        serial_consistency: None,
        default_timestamp: None,
        keyspace: None,
        now_in_seconds: None,
    }
}

fn auth_node() -> (Arc<NodeState>, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "helenus-access-test-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let mut config = NodeConfig {
        authenticator: Authenticator::Password,
        authorizer: Authorizer::Cassandra,
        auth_bcrypt_gensalt_log2_rounds: 4,
        ..Default::default()
    };
    config.set_data_dir(&dir);
    (crate::open_node(config).unwrap(), dir)
}

async fn run_as(node: &NodeState, user: &str, cql: &str) -> Result<Outcome, ExecError> {
    let session = parking_lot::Mutex::new(Session {
        keyspace: None,
        user: Some(user.to_string()),
    });
    run_query(node, &session, cql, &params())
        .await
        .map(|(_, o)| o)
}

/// The text cells of a result, `|`-joined per row.
async fn text_rows(node: &NodeState, user: &str, cql: &str) -> Vec<String> {
    let out = match run_as(node, user, cql).await {
        Ok(Outcome::Rows { out, .. }) => out,
        // An empty LIST PERMISSIONS is a VOID result, as in Cassandra.
        Ok(Outcome::Void) => return Vec::new(),
        _ => panic!("{cql}: no rows"),
    };
    out.cell_rows()
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| String::from_utf8_lossy(c.as_deref().unwrap_or_default()).into_owned())
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

#[test]
fn a_role_reads_only_what_it_was_granted_and_creators_own_what_they_create() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (node, dir) = auth_node();
    rt.block_on(async {
        let su = "cassandra";
        for cql in [
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            "CREATE TABLE ks.t (k int PRIMARY KEY, v int)",
            "CREATE ROLE alice WITH PASSWORD = 'pw' AND LOGIN = true",
        ] {
            run_as(&node, su, cql).await.unwrap();
        }
        let denied = run_as(&node, "alice", "SELECT * FROM ks.t").await;
        assert!(
            matches!(&denied, Err(ExecError::Unauthorized(m))
                if m == "User alice has no SELECT permission on <table ks.t> or any of its parents"),
            "{:?}",
            denied.err()
        );
        run_as(&node, "alice", "SELECT * FROM system.local").await.unwrap();
        run_as(&node, "alice", "SELECT * FROM system_schema.tables").await.unwrap();
        assert!(run_as(&node, "alice", "SELECT * FROM system_auth.roles").await.is_err());
        run_as(&node, su, "GRANT SELECT ON KEYSPACE ks TO alice").await.unwrap();
        run_as(&node, "alice", "SELECT * FROM ks.t").await.unwrap();
        assert!(run_as(&node, "alice", "INSERT INTO ks.t (k, v) VALUES (1, 1)").await.is_err());
        assert_eq!(
            text_rows(&node, su, "LIST ALL PERMISSIONS OF alice").await,
            vec!["alice|alice|<keyspace ks>|SELECT"]
        );
        let owner = text_rows(&node, su, "LIST ALL PERMISSIONS ON TABLE ks.t NORECURSIVE").await;
        assert_eq!(owner.len(), 7, "{owner:?}");
        run_as(&node, su, "DROP KEYSPACE ks").await.unwrap();
        assert!(text_rows(&node, su, "LIST ALL PERMISSIONS OF alice").await.is_empty());
        let anonymous = parking_lot::Mutex::new(Session::default());
        let r = run_query(&node, &anonymous, "LIST ROLES", &params()).await;
        assert!(matches!(r, Err(ExecError::Unauthorized(_))));
    });
    let _ = std::fs::remove_dir_all(&dir);
}
