//! Keyspace replication: reading `WITH replication = {...}` and `durable_writes` into keyspace
//! metadata, with Cassandra's validation.

use super::{map_value, scalar};
use crate::exec::error::{invalid, ExecError, ExecResult};
use helenus_cql::ast::Properties;
use helenus_schema::KeyspaceMeta;
use std::collections::BTreeMap;

pub(super) fn replication_of(
    props: &Properties,
    current: Option<&KeyspaceMeta>,
) -> ExecResult<(BTreeMap<String, String>, bool)> {
    let mut replication = current.map(|k| k.replication.clone());
    let mut durable = current.map(|k| k.durable_writes).unwrap_or(true);
    for (name, v) in props {
        match name.as_str() {
            "replication" => {
                let mut m = map_value(v, name)?;
                let class = m.remove("class").ok_or_else(|| {
                    ExecError::Config("Missing replication strategy class".into())
                })?;
                let short = class.rsplit('.').next().unwrap_or(&class).to_string();
                let full = match short.as_str() {
                    "SimpleStrategy" => {
                        // Cassandra 5.0 falls back to default_replication_factor (1).
                        let rf = m
                            .entry("replication_factor".to_string())
                            .or_insert_with(|| "1".to_string());
                        if rf.parse::<u32>().is_err() {
                            return Err(ExecError::Config(format!("Replication factor must be non-negative; found {rf}")));
                        }
                        for k in m.keys() {
                            if k != "replication_factor" {
                                return Err(ExecError::Config(format!("Unrecognized strategy option {{{k}}} passed to SimpleStrategy for keyspace")));
                            }
                        }
                        "org.apache.cassandra.locator.SimpleStrategy"
                    }
                    "NetworkTopologyStrategy" => {
                        // A bare replication_factor means every known datacenter (this node's).
                        if let Some(rf) = m.remove("replication_factor") {
                            m.entry("datacenter1".to_string()).or_insert(rf);
                        }
                        if m.is_empty() {
                            m.insert("datacenter1".to_string(), "1".to_string());
                        }
                        for (dc, rf) in &m {
                            if dc != "datacenter1" {
                                return Err(ExecError::Config(format!("Unrecognized strategy option {{{dc}}} passed to NetworkTopologyStrategy for keyspace")));
                            }
                            if rf.parse::<u32>().is_err() {
                                return Err(ExecError::Config(format!("Replication factor must be non-negative integer; found {rf} for {dc}")));
                            }
                        }
                        "org.apache.cassandra.locator.NetworkTopologyStrategy"
                    }
                    "LocalStrategy" | "EverywhereStrategy" => {
                        return invalid("Unable to use given strategy class: LocalStrategy is reserved for internal use.")
                    }
                    _ => return Err(ExecError::Config(format!("Unable to find replication strategy class 'org.apache.cassandra.locator.{short}'"))),
                };
                m.insert("class".into(), full.into());
                replication = Some(m);
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
