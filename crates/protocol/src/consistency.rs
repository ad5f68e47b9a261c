//! Consistency levels with their wire codes. A leaf.

/// A consistency level with its wire code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum Consistency {
    Any = 0x0000,
    One = 0x0001,
    Two = 0x0002,
    Three = 0x0003,
    Quorum = 0x0004,
    All = 0x0005,
    LocalQuorum = 0x0006,
    EachQuorum = 0x0007,
    Serial = 0x0008,
    LocalSerial = 0x0009,
    LocalOne = 0x000A,
}

impl Consistency {
    /// The level for a wire code, if the code is known.
    pub fn from_code(code: u16) -> Option<Consistency> {
        use Consistency::*;
        Some(match code {
            0x0000 => Any,
            0x0001 => One,
            0x0002 => Two,
            0x0003 => Three,
            0x0004 => Quorum,
            0x0005 => All,
            0x0006 => LocalQuorum,
            0x0007 => EachQuorum,
            0x0008 => Serial,
            0x0009 => LocalSerial,
            0x000A => LocalOne,
            _ => return None,
        })
    }

    /// The name Cassandra uses in messages (`LOCAL_QUORUM`).
    pub fn name(self) -> &'static str {
        use Consistency::*;
        match self {
            Any => "ANY",
            One => "ONE",
            Two => "TWO",
            Three => "THREE",
            Quorum => "QUORUM",
            All => "ALL",
            LocalQuorum => "LOCAL_QUORUM",
            EachQuorum => "EACH_QUORUM",
            Serial => "SERIAL",
            LocalSerial => "LOCAL_SERIAL",
            LocalOne => "LOCAL_ONE",
        }
    }
}
