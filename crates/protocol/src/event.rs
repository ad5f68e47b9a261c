//! EVENT bodies (schema, topology and status changes) and the schema-change body a RESULT of kind
//! SCHEMA_CHANGE shares with them.

use std::net::SocketAddr;

use bytes::BytesMut;

use crate::error::{EncodeError, WireError};
use crate::primitives::{write_inet, write_string, write_string_list, Reader};

/// CREATED / UPDATED / DROPPED.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaChangeType {
    Created,
    Updated,
    Dropped,
}

/// What a schema change touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaChangeTarget {
    Keyspace {
        keyspace: String,
    },
    Table {
        keyspace: String,
        name: String,
    },
    Type {
        keyspace: String,
        name: String,
    },
    Function {
        keyspace: String,
        name: String,
        arg_types: Vec<String>,
    },
    Aggregate {
        keyspace: String,
        name: String,
        arg_types: Vec<String>,
    },
}

/// A schema change, as in RESULT Schema_change and EVENT SCHEMA_CHANGE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaChange {
    pub change_type: SchemaChangeType,
    pub target: SchemaChangeTarget,
}

impl SchemaChange {
    pub(crate) fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        let ct = match self.change_type {
            SchemaChangeType::Created => "CREATED",
            SchemaChangeType::Updated => "UPDATED",
            SchemaChangeType::Dropped => "DROPPED",
        };
        write_string(out, ct)?;
        match &self.target {
            SchemaChangeTarget::Keyspace { keyspace } => {
                write_string(out, "KEYSPACE")?;
                write_string(out, keyspace)
            }
            SchemaChangeTarget::Table { keyspace, name }
            | SchemaChangeTarget::Type { keyspace, name } => {
                let t = if matches!(self.target, SchemaChangeTarget::Table { .. }) {
                    "TABLE"
                } else {
                    "TYPE"
                };
                write_string(out, t)?;
                write_string(out, keyspace)?;
                write_string(out, name)
            }
            SchemaChangeTarget::Function {
                keyspace,
                name,
                arg_types,
            }
            | SchemaChangeTarget::Aggregate {
                keyspace,
                name,
                arg_types,
            } => {
                let t = if matches!(self.target, SchemaChangeTarget::Function { .. }) {
                    "FUNCTION"
                } else {
                    "AGGREGATE"
                };
                write_string(out, t)?;
                write_string(out, keyspace)?;
                write_string(out, name)?;
                write_string_list(out, arg_types)
            }
        }
    }

    pub(crate) fn decode(r: &mut Reader) -> Result<Self, WireError> {
        let ct = r.read_string()?;
        let change_type = match ct.as_str() {
            "CREATED" => SchemaChangeType::Created,
            "UPDATED" => SchemaChangeType::Updated,
            "DROPPED" => SchemaChangeType::Dropped,
            _ => {
                return Err(WireError::UnknownName {
                    what: "schema change type",
                    value: ct,
                })
            }
        };
        let target = r.read_string()?;
        let keyspace = r.read_string()?;
        let target = match target.as_str() {
            "KEYSPACE" => SchemaChangeTarget::Keyspace { keyspace },
            "TABLE" => SchemaChangeTarget::Table {
                keyspace,
                name: r.read_string()?,
            },
            "TYPE" => SchemaChangeTarget::Type {
                keyspace,
                name: r.read_string()?,
            },
            "FUNCTION" => SchemaChangeTarget::Function {
                keyspace,
                name: r.read_string()?,
                arg_types: r.read_string_list()?,
            },
            "AGGREGATE" => SchemaChangeTarget::Aggregate {
                keyspace,
                name: r.read_string()?,
                arg_types: r.read_string_list()?,
            },
            _ => {
                return Err(WireError::UnknownName {
                    what: "schema change target",
                    value: target,
                })
            }
        };
        Ok(SchemaChange {
            change_type,
            target,
        })
    }
}

/// NEW_NODE / REMOVED_NODE / MOVED_NODE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopologyChangeType {
    NewNode,
    RemovedNode,
    MovedNode,
}

/// UP / DOWN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusChangeType {
    Up,
    Down,
}

/// A pushed EVENT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    TopologyChange {
        change: TopologyChangeType,
        address: SocketAddr,
    },
    StatusChange {
        change: StatusChangeType,
        address: SocketAddr,
    },
    SchemaChange(SchemaChange),
}

impl Event {
    pub(crate) fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        match self {
            Event::TopologyChange { change, address } => {
                write_string(out, "TOPOLOGY_CHANGE")?;
                let c = match change {
                    TopologyChangeType::NewNode => "NEW_NODE",
                    TopologyChangeType::RemovedNode => "REMOVED_NODE",
                    TopologyChangeType::MovedNode => "MOVED_NODE",
                };
                write_string(out, c)?;
                write_inet(out, address);
                Ok(())
            }
            Event::StatusChange { change, address } => {
                write_string(out, "STATUS_CHANGE")?;
                write_string(
                    out,
                    if *change == StatusChangeType::Up {
                        "UP"
                    } else {
                        "DOWN"
                    },
                )?;
                write_inet(out, address);
                Ok(())
            }
            Event::SchemaChange(sc) => {
                write_string(out, "SCHEMA_CHANGE")?;
                sc.encode(out)
            }
        }
    }

    pub(crate) fn decode(r: &mut Reader) -> Result<Self, WireError> {
        let kind = r.read_string()?;
        match kind.as_str() {
            "TOPOLOGY_CHANGE" => {
                let c = r.read_string()?;
                let change = match c.as_str() {
                    "NEW_NODE" => TopologyChangeType::NewNode,
                    "REMOVED_NODE" => TopologyChangeType::RemovedNode,
                    "MOVED_NODE" => TopologyChangeType::MovedNode,
                    _ => {
                        return Err(WireError::UnknownName {
                            what: "topology change",
                            value: c,
                        })
                    }
                };
                Ok(Event::TopologyChange {
                    change,
                    address: r.read_inet()?,
                })
            }
            "STATUS_CHANGE" => {
                let c = r.read_string()?;
                let change = match c.as_str() {
                    "UP" => StatusChangeType::Up,
                    "DOWN" => StatusChangeType::Down,
                    _ => {
                        return Err(WireError::UnknownName {
                            what: "status change",
                            value: c,
                        })
                    }
                };
                Ok(Event::StatusChange {
                    change,
                    address: r.read_inet()?,
                })
            }
            "SCHEMA_CHANGE" => Ok(Event::SchemaChange(SchemaChange::decode(r)?)),
            _ => Err(WireError::UnknownName {
                what: "event type",
                value: kind,
            }),
        }
    }
}
