//! Per-opcode dispatch of a decoded request to the executor (STARTUP and REGISTER are answered
//! by the connection itself): the transport owns which request runs what; the executor owns what
//! a statement does and how its outcome becomes a response.

use crate::exec::{
    self, cached, exec_options, execute, outcome_response, prepare, prepared_response, rows_result,
    run_batch, run_query, supported, ExecError, ExecResult, Outcome, Session,
};
use crate::node::NodeState;
use helenus_protocol as proto;
use std::net::SocketAddr;
use std::sync::Arc;

/// Runs one request (anything but STARTUP and REGISTER, which the transport handles).
///
/// It owns the node and session handles, so that the statement's future is this one, boxed,
/// rather than a block around it that would keep a second copy of the frame.
pub(super) async fn handle_request(
    node: Arc<NodeState>,
    session: Arc<parking_lot::Mutex<Session>>,
    client_id: u64,
    peer: SocketAddr,
    frame: proto::RequestFrame,
) -> proto::Response {
    let (node, session) = (&*node, &*session);
    let version = frame.version;
    let audited = super::audited::before(node, session, &frame.request);
    let request_consistency = match &frame.request {
        proto::Request::Query { params, .. } | proto::Request::Execute { params, .. } => {
            Some(params.consistency)
        }
        _ => None,
    };
    let result: ExecResult<proto::Response> = async {
        match frame.request {
            proto::Request::Options => Ok(supported()),
            proto::Request::Query { query, params } => {
                let (_, out) = run_query(node, session, &query, &params).await?;
                if let Outcome::SetKeyspace(ks) = &out {
                    node.update_client(client_id, |c| c.keyspace = Some(ks.clone()));
                }
                Ok(outcome_response(out, false))
            }
            proto::Request::Prepare { query, keyspace } => {
                let ks = keyspace.or_else(|| session.lock().keyspace.clone());
                let p = prepare(node, ks.as_deref(), &query)?;
                // Keep prepared statements that are not cached (DDL) reachable for EXECUTE.
                node.prepared.insert(p.id, p.clone()).map_err(|e| {
                    let head: String = query.chars().take(200).collect();
                    ExecError::Invalid(format!(
                        "Prepared statement of size {} bytes is larger than allowed maximum of {} MB: {head}...",
                        e.weight_bytes,
                        e.capacity_bytes / (1024 * 1024)
                    ))
                })?;
                Ok(prepared_response(&p, version))
            }
            proto::Request::Execute {
                id,
                result_metadata_id,
                params,
            } => {
                let p =
                    cached(node, &id).ok_or_else(|| ExecError::Unprepared(id.to_vec()))?;
                let out = execute(node, session, &p, &params.values, exec_options(node, &params)).await?;
                let stale = version >= 5
                    && result_metadata_id
                        .as_deref()
                        .is_some_and(|m| m != p.result_metadata_id);
                Ok(match out {
                    Outcome::Rows {
                        keyspace,
                        table,
                        out,
                    } => proto::Response::Result(rows_result(
                        &keyspace,
                        &table,
                        out,
                        params.skip_metadata && !stale,
                        stale.then_some(p.result_metadata_id),
                    )),
                    other => outcome_response(other, false),
                })
            }
            proto::Request::Batch(b) => {
                let out = Box::pin(run_batch(node, session, b)).await?;
                Ok(outcome_response(out, false))
            }
            proto::Request::AuthResponse { token } => {
                let response = Box::pin(authenticate(node, session, token.as_deref())).await?;
                let user = session.lock().user.clone();
                node.update_client(client_id, |c| c.username = user);
                Ok(response)
            }
            proto::Request::Startup(_) | proto::Request::Register { .. } => {
                Ok(proto::Response::Ready)
            }
        }
    }
    .await;
    if let Some(a) = audited {
        a.after(node, peer, &result);
    }
    result.unwrap_or_else(|mut e| {
        if let (ExecError::ReadFailure { consistency, .. }, Some(cl)) =
            (&mut e, request_consistency)
        {
            *consistency = cl;
        }
        exec::error_response(e)
    })
}

/// AUTH_RESPONSE: a SASL PLAIN token checked against the roles (bcrypt, off the I/O workers);
/// on success the connection acts as that role from then on.
async fn authenticate(
    node: &NodeState,
    session: &parking_lot::Mutex<Session>,
    token: Option<&[u8]>,
) -> ExecResult<proto::Response> {
    if !node.auth.authenticate {
        return Ok(proto::Response::AuthSuccess { token: None });
    }
    let creds = crate::auth::sasl::decode_plain(token.unwrap_or_default())
        .map_err(|e| ExecError::BadCredentials(e.to_string()))?;
    // bcrypt is slow on purpose: a bounded number of checks run at once, so a flood of logins
    // queues here instead of taking every core.
    let _slot = node
        .auth
        .login_slots
        .acquire()
        .await
        .map_err(|e| ExecError::Server(format!("login check failed: {e}")))?;
    let auth = node.auth.clone();
    let user = creds.username.clone();
    tokio::task::spawn_blocking(move || auth.check_login(&creds.username, &creds.password))
        .await
        .map_err(|e| ExecError::Server(format!("login check failed: {e}")))??;
    session.lock().user = Some(user);
    Ok(proto::Response::AuthSuccess { token: None })
}
