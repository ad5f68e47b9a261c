//! The CQL type tree.

use std::fmt;

/// Native (non-parameterised) CQL types. The discriminants are the native protocol's
/// `[option]` ids (native_protocol_v5.spec section 6), so a wire encoder can use them directly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u16)]
pub enum NativeType {
    Ascii = 0x0001,
    Bigint = 0x0002,
    Blob = 0x0003,
    Boolean = 0x0004,
    Counter = 0x0005,
    Decimal = 0x0006,
    Double = 0x0007,
    Float = 0x0008,
    Int = 0x0009,
    Timestamp = 0x000B,
    Uuid = 0x000C,
    Varchar = 0x000D,
    Varint = 0x000E,
    Timeuuid = 0x000F,
    Inet = 0x0010,
    Date = 0x0011,
    Time = 0x0012,
    Smallint = 0x0013,
    Tinyint = 0x0014,
    Duration = 0x0015,
}

impl NativeType {
    /// The CQL name as Cassandra prints it in `system_schema.columns.type` and DESCRIBE.
    pub fn cql_name(self) -> &'static str {
        match self {
            NativeType::Ascii => "ascii",
            NativeType::Bigint => "bigint",
            NativeType::Blob => "blob",
            NativeType::Boolean => "boolean",
            NativeType::Counter => "counter",
            NativeType::Decimal => "decimal",
            NativeType::Double => "double",
            NativeType::Float => "float",
            NativeType::Int => "int",
            NativeType::Timestamp => "timestamp",
            NativeType::Uuid => "uuid",
            NativeType::Varchar => "text",
            NativeType::Varint => "varint",
            NativeType::Timeuuid => "timeuuid",
            NativeType::Inet => "inet",
            NativeType::Date => "date",
            NativeType::Time => "time",
            NativeType::Smallint => "smallint",
            NativeType::Tinyint => "tinyint",
            NativeType::Duration => "duration",
        }
    }

    /// Parses a native type name as CQL accepts it (case-insensitive; `varchar` is `text`).
    pub fn from_cql_name(name: &str) -> Option<NativeType> {
        let t = match name.to_ascii_lowercase().as_str() {
            "ascii" => NativeType::Ascii,
            "bigint" => NativeType::Bigint,
            "blob" => NativeType::Blob,
            "boolean" => NativeType::Boolean,
            "counter" => NativeType::Counter,
            "decimal" => NativeType::Decimal,
            "double" => NativeType::Double,
            "float" => NativeType::Float,
            "int" => NativeType::Int,
            "timestamp" => NativeType::Timestamp,
            "uuid" => NativeType::Uuid,
            "text" | "varchar" => NativeType::Varchar,
            "varint" => NativeType::Varint,
            "timeuuid" => NativeType::Timeuuid,
            "inet" => NativeType::Inet,
            "date" => NativeType::Date,
            "time" => NativeType::Time,
            "smallint" => NativeType::Smallint,
            "tinyint" => NativeType::Tinyint,
            "duration" => NativeType::Duration,
            _ => return None,
        };
        Some(t)
    }

    /// Fixed serialized width in bytes, as Cassandra's `valueLengthIfFixed` declares it (what
    /// decides whether vector elements are packed). `smallint`, `tinyint`, `date` and `time`
    /// have a constant width but do not declare it, so vectors length-prefix them.
    pub fn fixed_size_bytes(self) -> Option<usize> {
        match self {
            NativeType::Bigint | NativeType::Counter | NativeType::Double => Some(8),
            NativeType::Timestamp => Some(8),
            NativeType::Int | NativeType::Float => Some(4),
            NativeType::Uuid | NativeType::Timeuuid => Some(16),
            NativeType::Boolean => Some(1),
            _ => None,
        }
    }
}

/// A user-defined type's definition as carried by values and by the wire type spec.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UserType {
    pub keyspace: String,
    pub name: String,
    pub fields: Vec<(String, CqlType)>,
}

/// Cassandra's type of values that are always empty: the hidden value column of a dense COMPACT
/// STORAGE table with no column outside its primary key (`system_schema` calls it `empty`).
pub const EMPTY_TYPE_CLASS: &str = "org.apache.cassandra.db.marshal.EmptyType";

impl CqlType {
    /// The hidden value column type of a dense COMPACT STORAGE table.
    pub fn empty() -> CqlType {
        CqlType::Custom(EMPTY_TYPE_CLASS.to_string())
    }

    pub fn is_empty_type(&self) -> bool {
        matches!(self, CqlType::Custom(c) if c == EMPTY_TYPE_CLASS)
    }
}

/// A full CQL type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CqlType {
    Native(NativeType),
    List {
        element: Box<CqlType>,
        frozen: bool,
    },
    Set {
        element: Box<CqlType>,
        frozen: bool,
    },
    Map {
        key: Box<CqlType>,
        value: Box<CqlType>,
        frozen: bool,
    },
    /// Tuples are always frozen.
    Tuple(Vec<CqlType>),
    Udt {
        def: Box<UserType>,
        frozen: bool,
    },
    /// `vector<element, dimension>`; always frozen.
    Vector {
        element: Box<CqlType>,
        dimension: u32,
    },
    /// A type Helenus does not model, carried by its Java class name (wire option 0x0000).
    Custom(String),
}

/// How many levels a type may nest, counted as [`CqlType::nesting_depth`] counts them. One
/// limit for the CQL parser, the DDL checks and the schema loader (`type_string.rs`), so that
/// any type a statement can create is one the node can load again at its next start.
pub const MAX_TYPE_NESTING: usize = 32;

impl CqlType {
    pub fn native(t: NativeType) -> CqlType {
        CqlType::Native(t)
    }

    /// Levels of nesting: one per `name<...>` in the type's spelling as stored in the schema
    /// (so `frozen<list<int>>` is 3 and a tuple, always spelled `frozen<tuple<...>>`, is 2 plus
    /// its items), and through a user type's fields, which recursive walks also descend into.
    /// Recursion here is safe only on types built under [`MAX_TYPE_NESTING`] level by level.
    pub fn nesting_depth(&self) -> usize {
        let frozen_level = |frozen: &bool| usize::from(*frozen);
        match self {
            CqlType::Native(_) | CqlType::Custom(_) => 1,
            CqlType::List { element, frozen } | CqlType::Set { element, frozen } => {
                1 + frozen_level(frozen) + element.nesting_depth()
            }
            CqlType::Map { key, value, frozen } => {
                1 + frozen_level(frozen) + key.nesting_depth().max(value.nesting_depth())
            }
            CqlType::Tuple(items) => 2 + items.iter().map(Self::nesting_depth).max().unwrap_or(0),
            CqlType::Udt { def, frozen } => {
                let fields = def.fields.iter().map(|(_, t)| t.nesting_depth());
                1 + frozen_level(frozen) + fields.max().unwrap_or(0)
            }
            CqlType::Vector { element, .. } => 1 + element.nesting_depth(),
        }
    }

    /// True when the value is stored as one cell (native, frozen collection/UDT, tuple, vector);
    /// false for multi-cell (non-frozen) collections and UDTs.
    pub fn is_multi_cell(&self) -> bool {
        match self {
            CqlType::List { frozen, .. } | CqlType::Set { frozen, .. } => !frozen,
            CqlType::Map { frozen, .. } | CqlType::Udt { frozen, .. } => !frozen,
            _ => false,
        }
    }

    pub fn is_counter(&self) -> bool {
        matches!(self, CqlType::Native(NativeType::Counter))
    }

    /// Same type with the frozen flag set at the top level.
    pub fn frozen(self) -> CqlType {
        match self {
            CqlType::List { element, .. } => CqlType::List {
                element,
                frozen: true,
            },
            CqlType::Set { element, .. } => CqlType::Set {
                element,
                frozen: true,
            },
            CqlType::Map { key, value, .. } => CqlType::Map {
                key,
                value,
                frozen: true,
            },
            CqlType::Udt { def, .. } => CqlType::Udt { def, frozen: true },
            other => other,
        }
    }
}

/// Formats the type as Cassandra prints it in `system_schema.columns.type`:
/// `frozen<map<text, int>>`, `list<int>`, `tuple<int, text>`, `vector<float, 3>`, UDTs by name.
impl fmt::Display for CqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let wrap = |f: &mut fmt::Formatter<'_>,
                    frozen: bool,
                    inner: &dyn Fn(&mut fmt::Formatter<'_>) -> fmt::Result| {
            if frozen {
                f.write_str("frozen<")?;
                inner(f)?;
                f.write_str(">")
            } else {
                inner(f)
            }
        };
        match self {
            CqlType::Native(n) => f.write_str(n.cql_name()),
            CqlType::List { element, frozen } => {
                wrap(f, *frozen, &|f| write!(f, "list<{element}>"))
            }
            CqlType::Set { element, frozen } => wrap(f, *frozen, &|f| write!(f, "set<{element}>")),
            CqlType::Map { key, value, frozen } => {
                wrap(f, *frozen, &|f| write!(f, "map<{key}, {value}>"))
            }
            CqlType::Tuple(items) => {
                f.write_str("frozen<tuple<")?;
                for (i, t) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(">>")
            }
            CqlType::Udt { def, frozen } => wrap(f, *frozen, &|f| f.write_str(&def.name)),
            CqlType::Vector { element, dimension } => write!(f, "vector<{element}, {dimension}>"),
            CqlType::Custom(class) if class == EMPTY_TYPE_CLASS => f.write_str("empty"),
            CqlType::Custom(class) => write!(f, "'{class}'"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_matches_system_schema_spelling() {
        let t = CqlType::Map {
            key: Box::new(CqlType::Native(NativeType::Varchar)),
            value: Box::new(CqlType::Native(NativeType::Int)),
            frozen: true,
        };
        assert_eq!(t.to_string(), "frozen<map<text, int>>");
        let l = CqlType::List {
            element: Box::new(CqlType::Native(NativeType::Int)),
            frozen: false,
        };
        assert_eq!(l.to_string(), "list<int>");
        let v = CqlType::Vector {
            element: Box::new(CqlType::Native(NativeType::Float)),
            dimension: 3,
        };
        assert_eq!(v.to_string(), "vector<float, 3>");
    }
}
