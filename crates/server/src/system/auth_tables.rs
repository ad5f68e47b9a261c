//! `system_auth.roles`, `role_members` and `role_permissions`, computed from the node's roles
//! with the columns Cassandra 5.0 gives them (sets as `set<text>`, null when empty).

use super::{text, RowBuilder};
use crate::node::NodeState;
use bytes::Bytes;
use helenus_schema::TableMeta;
use helenus_types::CqlValue;

type Rows = Vec<Vec<Option<Bytes>>>;

fn text_set<'a>(items: impl Iterator<Item = &'a String>) -> Option<CqlValue> {
    let v: Vec<CqlValue> = items.map(|s| text(s.clone())).collect();
    (!v.is_empty()).then_some(CqlValue::Set(v))
}

pub fn roles(state: &NodeState, table: &TableMeta) -> Rows {
    let store = state.auth.snapshot();
    store
        .roles
        .values()
        .map(|r| {
            RowBuilder::new(table)
                .set("role", text(r.name.clone()))
                .set("can_login", CqlValue::Boolean(r.can_login))
                .set("is_superuser", CqlValue::Boolean(r.is_superuser))
                .set_opt("member_of", text_set(r.member_of.iter()))
                .set_opt("salted_hash", r.salted_hash.clone().map(text))
                .build()
        })
        .collect()
}

/// One row per (granted role, member).
pub fn role_members(state: &NodeState, table: &TableMeta) -> Rows {
    let store = state.auth.snapshot();
    store
        .roles
        .values()
        .flat_map(|member| {
            member.member_of.iter().map(move |role| {
                RowBuilder::new(table)
                    .set("role", text(role.clone()))
                    .set("member", text(member.name.clone()))
                    .build()
            })
        })
        .collect()
}

pub fn role_permissions(state: &NodeState, table: &TableMeta) -> Rows {
    let store = state.auth.snapshot();
    store
        .permissions
        .iter()
        .flat_map(|(role, by_resource)| {
            by_resource.iter().map(move |(resource, perms)| {
                RowBuilder::new(table)
                    .set("role", text(role.clone()))
                    .set("resource", text(resource.clone()))
                    .set_opt("permissions", text_set(perms.iter()))
                    .build()
            })
        })
        .collect()
}

/// Cassandra's reverse index of `role_permissions` (its spelling): one row per (resource, role).
pub fn resource_role_permissions_index(state: &NodeState, table: &TableMeta) -> Rows {
    let store = state.auth.snapshot();
    store
        .permissions
        .iter()
        .flat_map(|(role, by_resource)| {
            by_resource.keys().map(move |resource| {
                RowBuilder::new(table)
                    .set("resource", text(resource.clone()))
                    .set("role", text(role.clone()))
                    .build()
            })
        })
        .collect()
}
