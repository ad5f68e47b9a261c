//! Execution errors, each mapped to the CQL error code Cassandra returns for the same situation.

use helenus_protocol as proto;

#[derive(Debug, Clone, thiserror::Error)]
pub enum ExecError {
    /// 0x2000: the statement does not parse.
    #[error("{0}")]
    Syntax(String),
    /// 0x2200: well-formed but invalid (unknown table, wrong types, restrictions not allowed...).
    #[error("{0}")]
    Invalid(String),
    /// 0x2300: a configuration problem (e.g. a bad replication setting).
    #[error("{0}")]
    Config(String),
    /// 0x2400: CREATE of something that exists.
    #[error("{message}")]
    AlreadyExists {
        keyspace: String,
        table: String,
        message: String,
    },
    /// 0x2500: EXECUTE of an id this node does not know.
    #[error("Prepared query with ID {} not found (either the query was not prepared on this host (maybe the host has been restarted?) or you have prepared too many queries and it has been evicted from the internal cache)", hex(.0))]
    Unprepared(Vec<u8>),
    /// 0x000A: a request that breaks the protocol.
    #[error("{0}")]
    Protocol(String),
    /// 0x1001: too much load; the client should back off.
    #[error("{0}")]
    Overloaded(String),
    /// 0x1000: too few live replicas for the level, known before anything was sent.
    #[error("{message}")]
    Unavailable {
        consistency: proto::Consistency,
        required: i32,
        alive: i32,
        message: String,
    },
    /// 0x1100: the write did not complete in time.
    #[error("Operation timed out - received only {received} responses.")]
    WriteTimeout {
        consistency: proto::Consistency,
        write_type: String,
        received: i32,
        block_for: i32,
    },
    /// 0x1200: the read did not complete in time.
    #[error("Operation timed out - received only {received} responses.")]
    ReadTimeout {
        consistency: proto::Consistency,
        received: i32,
        block_for: i32,
        data_present: bool,
    },
    /// 0x1500: replicas failed the write.
    #[error("Operation failed - received {received} responses and {failures} failures")]
    WriteFailure {
        consistency: proto::Consistency,
        received: i32,
        block_for: i32,
        failures: i32,
        write_type: String,
    },
    /// 0x1300: a replica failed the read; `reason` is its RequestFailureReason code
    /// (READ_TOO_MANY_TOMBSTONES = 1). The consistency is the request's, filled in by
    /// `handle_request` (the code that fails does not know it).
    #[error(
        "Operation failed - received 0 responses and 1 failures: {reason_name} from /{node}:7000"
    )]
    ReadFailure {
        consistency: proto::Consistency,
        node: std::net::IpAddr,
        reason: u16,
        reason_name: &'static str,
    },
    /// 0x1003
    #[error("{0}")]
    Truncate(String),
    /// 0x2100
    #[error("{0}")]
    Unauthorized(String),
    /// 0x0100: a login with a wrong name or password, or by a role that may not log in.
    #[error("{0}")]
    BadCredentials(String),
    /// 0x1400: a function (or an operator, which Cassandra runs as a function) threw while
    /// executing, e.g. a division by zero.
    #[error("{message}")]
    FunctionFailure {
        keyspace: String,
        function: String,
        arg_types: Vec<String>,
        message: String,
    },
    /// 0x0000: a bug or an I/O failure on this node.
    #[error("{0}")]
    Server(String),
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A consistency level the request kind does not allow: Cassandra answers InvalidRequest.
impl From<helenus_coordinator::InvalidConsistency> for ExecError {
    fn from(e: helenus_coordinator::InvalidConsistency) -> Self {
        ExecError::Invalid(e.0)
    }
}

impl From<helenus_schema::SchemaError> for ExecError {
    fn from(e: helenus_schema::SchemaError) -> Self {
        use helenus_schema::SchemaError as S;
        match e {
            S::KeyspaceExists(ks) => ExecError::AlreadyExists {
                message: format!("Keyspace {ks} already exists"),
                keyspace: ks,
                table: String::new(),
            },
            S::TableExists(ks, t) => ExecError::AlreadyExists {
                message: format!("Table {ks}.{t} already exists"),
                keyspace: ks,
                table: t,
            },
            S::Storage { .. } => ExecError::Server(e.to_string()),
            other => ExecError::Invalid(other.to_string()),
        }
    }
}

impl From<crate::auth::AuthError> for ExecError {
    fn from(e: crate::auth::AuthError) -> Self {
        use crate::auth::AuthError as A;
        match e {
            A::BadCredentials(m) => ExecError::BadCredentials(m),
            A::Unauthorized(m) => ExecError::Unauthorized(m),
            A::Invalid(m) => ExecError::Invalid(m),
            A::Storage { .. } => ExecError::Server(e.to_string()),
        }
    }
}

pub type ExecResult<T> = Result<T, ExecError>;

pub fn invalid<T>(msg: impl Into<String>) -> ExecResult<T> {
    Err(ExecError::Invalid(msg.into()))
}

/// Keeps the storage engine's distinctions for the client: a malformed request is the client's
/// fault, an abandoned read is Cassandra's READ_FAILURE, a shutting-down engine is an overload the
/// client may retry elsewhere, and corruption or I/O stays a server error with its cause.
impl From<helenus_storage::StorageError> for ExecError {
    fn from(e: helenus_storage::StorageError) -> Self {
        use helenus_storage::StorageError as S;
        match e {
            S::InvalidRequest(_) | S::UnknownTable(_) => ExecError::Invalid(e.to_string()),
            S::TombstoneOverwhelming { .. } => ExecError::ReadFailure {
                consistency: proto::Consistency::One,
                // The code that knows this node's address (`TombstoneTally`) reports its own.
                node: std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
                reason: READ_TOO_MANY_TOMBSTONES,
                reason_name: "READ_TOO_MANY_TOMBSTONES",
            },
            S::ShuttingDown => ExecError::Overloaded(e.to_string()),
            S::Io { .. } | S::CorruptChunk { .. } | S::CorruptSSTable { .. } | S::Decode { .. } => {
                ExecError::Server(e.to_string())
            }
        }
    }
}

/// A replicated operation's outcome as the protocol reports it: Unavailable, timeouts and
/// failures keep the level and the counts the coordinator saw.
impl From<crate::proxy::ProxyError> for ExecError {
    fn from(e: crate::proxy::ProxyError) -> Self {
        use crate::proxy::ProxyError as P;
        use helenus_coordinator::read::ReadError as R;
        use helenus_coordinator::WriteError as W;
        let level = |c: helenus_coordinator::ConsistencyLevel| {
            proto::Consistency::from_code(c.code()).unwrap_or(proto::Consistency::One)
        };
        let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
        let message = e.to_string();
        match e {
            P::Storage(s) => s.into(),
            P::Truncate(m) => ExecError::Truncate(m),
            P::Paxos { error, consistency } => match error {
                helenus_coordinator::paxos::PaxosError::Timeout {
                    received,
                    block_for,
                } => ExecError::WriteTimeout {
                    consistency: level(consistency),
                    write_type: "CAS".into(),
                    received: count(received),
                    block_for: count(block_for),
                },
                helenus_coordinator::paxos::PaxosError::Unavailable { required, alive } => {
                    ExecError::Unavailable {
                        consistency: level(consistency),
                        required: count(required),
                        alive: count(alive),
                        message,
                    }
                }
            },
            P::Write(W::Unavailable(u)) | P::Read(R::Unavailable(u)) => ExecError::Unavailable {
                consistency: level(u.consistency),
                required: count(u.required),
                alive: count(u.alive),
                message,
            },
            P::Write(W::Timeout {
                consistency,
                received,
                block_for,
                write_type,
            }) => ExecError::WriteTimeout {
                consistency: level(consistency),
                write_type: write_type.name().to_string(),
                received: count(received),
                block_for: count(block_for),
            },
            P::Write(W::Failure {
                consistency,
                received,
                block_for,
                failures,
                write_type,
            }) => ExecError::WriteFailure {
                consistency: level(consistency),
                received: count(received),
                block_for: count(block_for),
                failures: count(failures),
                write_type: write_type.name().to_string(),
            },
            P::Read(R::Timeout {
                consistency,
                received,
                block_for,
                data_present,
            }) => ExecError::ReadTimeout {
                consistency: level(consistency),
                received: count(received),
                block_for: count(block_for),
                data_present,
            },
            P::Read(R::Failure { consistency, .. }) => ExecError::ReadFailure {
                consistency: level(consistency),
                node: std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
                reason: 0,
                reason_name: "UNKNOWN",
            },
            P::ReadFailure {
                consistency,
                reasons,
                ..
            } => {
                let (node, reason) = reasons
                    .first()
                    .copied()
                    .unwrap_or((std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0));
                ExecError::ReadFailure {
                    consistency: level(consistency),
                    node,
                    reason,
                    reason_name: if reason == READ_TOO_MANY_TOMBSTONES {
                        "READ_TOO_MANY_TOMBSTONES"
                    } else {
                        "UNKNOWN"
                    },
                }
            }
        }
    }
}

/// Cassandra's RequestFailureReason.READ_TOO_MANY_TOMBSTONES.
pub(super) const READ_TOO_MANY_TOMBSTONES: u16 = 1;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use helenus_storage::StorageError as S;

    #[test]
    fn invalid_storage_request_is_the_clients_fault() {
        let e = ExecError::from(S::InvalidRequest("wrong clustering arity".into()));
        assert!(matches!(e, ExecError::Invalid(m) if m.contains("wrong clustering arity")));
    }

    #[test]
    fn corrupt_data_stays_a_server_error_with_its_cause() {
        let e = ExecError::from(S::CorruptChunk {
            file: "/data/nb-1-big-Data.db".into(),
            offset: 4096,
        });
        assert!(
            matches!(e, ExecError::Server(m) if m.contains("nb-1-big-Data.db") && m.contains("4096"))
        );
        let io = S::Io {
            path: "/data/commitlog".into(),
            source: std::io::Error::other("disk full"),
        };
        assert!(matches!(ExecError::from(io), ExecError::Server(m) if m.contains("disk full")));
    }

    #[test]
    fn shutting_down_engine_is_an_overload_not_a_bug() {
        assert!(matches!(
            ExecError::from(S::ShuttingDown),
            ExecError::Overloaded(_)
        ));
    }

    #[test]
    fn tombstone_overwhelming_is_a_read_failure() {
        let e = ExecError::from(S::TombstoneOverwhelming {
            tombstones_scanned: 100_001,
            live_rows: 0,
            failure_threshold: 100_000,
        });
        assert!(matches!(
            e,
            ExecError::ReadFailure {
                reason: READ_TOO_MANY_TOMBSTONES,
                ..
            }
        ));
    }
}
