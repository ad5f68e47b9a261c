//! Members with readable ids for the locator's unit tests.

use std::net::{IpAddr, Ipv4Addr};

use uuid::Uuid;

use super::topology::{Location, Member, NodeId};

pub fn id(n: u8) -> NodeId {
    NodeId(Uuid::from_u128(u128::from(n) + 1))
}

pub fn member(n: u8, dc: &str, rack: &str) -> Member {
    Member {
        id: id(n),
        address: IpAddr::V4(Ipv4Addr::new(127, 0, 1, n)),
        location: Location::new(dc, rack),
    }
}
