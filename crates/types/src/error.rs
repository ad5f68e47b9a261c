//! Errors for value (de)serialization and parsing.

use std::fmt;

/// Why a value could not be decoded, validated or parsed. The message mirrors Cassandra's
/// `MarshalException` / `SyntaxException` wording so clients see the same text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeError {
    /// Serialized bytes do not form a valid value of the type (Cassandra's `MarshalException`).
    Marshal(String),
    /// The type is not one Helenus can handle here (custom types, counters in collections...).
    Unsupported(String),
}

impl TypeError {
    pub(crate) fn marshal(msg: impl Into<String>) -> TypeError {
        TypeError::Marshal(msg.into())
    }
}

impl fmt::Display for TypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeError::Marshal(m) | TypeError::Unsupported(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for TypeError {}
