//! Keyspace replication: reading `WITH replication = {...}` and `durable_writes` into keyspace
//! metadata, with Cassandra's validation.

use super::{map_value, scalar};
use crate::exec::error::{ExecError, ExecResult};
use helenus_cql::ast::Properties;
use helenus_schema::{KeyspaceMeta, OptionsError, ReplicationParams};
use std::collections::BTreeMap;

/// Option errors keep Cassandra's codes: reserved strategies are invalid requests, the rest
/// configuration errors.
impl From<OptionsError> for ExecError {
    fn from(e: OptionsError) -> Self {
        if e.is_invalid_request() {
            ExecError::Invalid(e.to_string())
        } else {
            ExecError::Config(e.to_string())
        }
    }
}

/// `datacenters`: those the ring knows (NetworkTopologyStrategy refuses others; a bare
/// `replication_factor` applies to each of them).
pub(super) fn replication_of(
    props: &Properties,
    current: Option<&KeyspaceMeta>,
    datacenters: &[&str],
) -> ExecResult<(BTreeMap<String, String>, bool)> {
    let mut replication = current.map(|k| k.replication.clone());
    let mut durable = current.map(|k| k.durable_writes).unwrap_or(true);
    for (name, v) in props {
        match name.as_str() {
            "replication" => {
                let given = map_value(v, name)?;
                let params = ReplicationParams::from_cql(given, datacenters)?;
                replication = Some(params.into_options());
            }
            "durable_writes" => {
                durable = match scalar(v, name)?.to_ascii_lowercase().as_str() {
                    "true" => true,
                    "false" => false,
                    other => {
                        return Err(ExecError::Syntax(format!(
                            "Invalid boolean value {other} for 'durable_writes'"
                        )))
                    }
                }
            }
            other => return Err(ExecError::Syntax(format!("Unknown property '{other}'"))),
        }
    }
    let replication = replication
        .ok_or_else(|| ExecError::Config("Missing mandatory option 'replication'".into()))?;
    Ok((replication, durable))
}
