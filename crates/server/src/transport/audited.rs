//! What the audit log records of one request: taken from the request before it runs (its text,
//! the user, the keyspace in use), completed with its outcome after.

use crate::audit::{classify, AuditEntry, Classified};
use crate::exec::{cached, ExecError, ExecResult, Session};
use crate::node::NodeState;
use helenus_protocol as proto;
use std::net::SocketAddr;

/// A request seen before it ran.
pub(super) struct Audited {
    operation: String,
    what: Classified,
    /// The user the request ran as (for a login: the user it tried).
    user: Option<String>,
    login: bool,
}

/// The request as the audit log will record it; `None` when auditing is off or the request is
/// not audited (OPTIONS, STARTUP, REGISTER).
pub(super) fn before(
    node: &NodeState,
    session: &parking_lot::Mutex<Session>,
    request: &proto::Request,
) -> Option<Audited> {
    if !node.audit.is_enabled() {
        return None;
    }
    let (user, session_ks) = {
        let s = session.lock();
        (s.user.clone(), s.keyspace.clone())
    };
    let of = |text: &str| classify(text, session_ks.as_deref());
    let (operation, what, login) = match request {
        proto::Request::Query { query, .. } => (query.clone(), of(query), false),
        proto::Request::Prepare { query, .. } => {
            let mut what = of(query);
            (what.kind, what.category) = ("PREPARE_STATEMENT", "PREPARE");
            (query.clone(), what, false)
        }
        proto::Request::Execute { id, .. } => {
            let text = cached(node, id)
                .map(|p| p.query.clone())
                .unwrap_or_default();
            let what = of(&text);
            (text, what, false)
        }
        proto::Request::Batch(b) => {
            let texts: Vec<String> = b
                .statements
                .iter()
                .map(|s| match &s.query {
                    proto::BatchQuery::Query(q) => q.clone(),
                    proto::BatchQuery::Prepared(id) => cached(node, id)
                        .map(|p| p.query.clone())
                        .unwrap_or_default(),
                })
                .collect();
            let mut what = texts.first().map(|t| of(t)).unwrap_or_else(|| of(""));
            (what.kind, what.category) = ("BATCH", "DML");
            (texts.join("; "), what, false)
        }
        proto::Request::AuthResponse { token } => {
            let tried = crate::auth::sasl::decode_plain(token.as_deref().unwrap_or_default())
                .ok()
                .map(|c| c.username);
            let what = Classified {
                kind: "LOGIN_SUCCESS",
                category: "AUTH",
                keyspace: None,
                scope: None,
            };
            return Some(Audited {
                operation: "LOGIN SUCCESSFUL".into(),
                what,
                user: tried,
                login: true,
            });
        }
        _ => return None,
    };
    Some(Audited {
        operation,
        what,
        user,
        login,
    })
}

impl Audited {
    /// Writes the entry with the request's outcome.
    pub(super) fn after<T>(self, node: &NodeState, peer: SocketAddr, result: &ExecResult<T>) {
        let mut what = self.what;
        let mut operation = self.operation;
        if let Err(e) = result {
            (what.kind, what.category) = match e {
                _ if self.login => ("LOGIN_ERROR", "AUTH"),
                ExecError::Unauthorized(_) => ("UNAUTHORIZED_ATTEMPT", "AUTH"),
                _ => ("REQUEST_FAILURE", "ERROR"),
            };
            operation = match self.login {
                true => format!("LOGIN FAILURE; {e}"),
                false => format!("{operation}; {e}"),
            };
        }
        node.audit.log(&AuditEntry {
            user: self.user.as_deref(),
            source: peer,
            kind: what.kind,
            category: what.category,
            keyspace: what.keyspace,
            scope: what.scope,
            operation: &operation,
        });
    }
}
