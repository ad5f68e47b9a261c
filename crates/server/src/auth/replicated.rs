//! Roles and permissions as the ring replicates them: every role row and every (role, resource)
//! permission set is an entry stamped with the time it was written, a removed one a stamped
//! tombstone, and two nodes' copies merge entry by entry with the newest stamp winning. That is
//! what Cassandra's cell timestamps give `system_auth` when it is replicated to every node, and
//! it converges whatever order the pushes arrive in (the merge is commutative, associative and
//! idempotent), so a node that missed a push catches up from any peer.
//!
//! The [`RoleStore`] the rest of the node reads is derived from the live entries.

use super::roles::{Role, RoleStore};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// What one entry holds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
enum EntryKey {
    /// A row of `system_auth.roles`.
    Role(String),
    /// One role's permissions on one resource (`system_auth.role_permissions`).
    Permissions { role: String, resource: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum EntryValue {
    Role(Role),
    Permissions(BTreeSet<String>),
}

/// An entry as written at `at` (microseconds); `value: None` is a tombstone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stamped {
    key: EntryKey,
    at: i64,
    value: Option<EntryValue>,
}

impl Stamped {
    /// Whether this write wins over `other` for the same key: the later stamp, and on a tie
    /// (two nodes each creating the default superuser at stamp 0) the greater value, so every
    /// node picks the same one.
    fn supersedes(&self, other: &Stamped) -> bool {
        match self.at.cmp(&other.at) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => tie_break(&self.value) > tie_break(&other.value),
        }
    }
}

fn tie_break(value: &Option<EntryValue>) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// Every entry ever written on any node this one has merged with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthLog {
    entries: BTreeMap<EntryKey, Stamped>,
}

/// The on-disk and on-the-wire form.
#[derive(Serialize, Deserialize)]
struct LogFile {
    entries: Vec<Stamped>,
}

fn flatten(store: &RoleStore) -> BTreeMap<EntryKey, EntryValue> {
    let roles = store
        .roles
        .iter()
        .map(|(name, role)| (EntryKey::Role(name.clone()), EntryValue::Role(role.clone())));
    let permissions = store.permissions.iter().flat_map(|(role, resources)| {
        resources
            .iter()
            .filter(|(_, perms)| !perms.is_empty())
            .map(move |(resource, perms)| {
                (
                    EntryKey::Permissions {
                        role: role.clone(),
                        resource: resource.clone(),
                    },
                    EntryValue::Permissions(perms.clone()),
                )
            })
    });
    roles.chain(permissions).collect()
}

impl AuthLog {
    /// Every role and permission of `store`, as written at `at` (0 for a store from before
    /// the roles were replicated: any later change anywhere supersedes it).
    pub fn from_store(store: &RoleStore, at: i64) -> AuthLog {
        let mut log = AuthLog::default();
        log.record(&RoleStore::default(), store, at);
        log
    }

    /// The newest stamp held: a local change is stamped after it, so it wins over everything
    /// this node has seen even if this node's clock is behind.
    pub fn newest(&self) -> i64 {
        self.entries.values().map(|e| e.at).max().unwrap_or(0)
    }

    /// Stamps every entry that differs between `before` and `after` (a local change) at `at`.
    pub fn record(&mut self, before: &RoleStore, after: &RoleStore, at: i64) {
        let old = flatten(before);
        let new = flatten(after);
        let keys: BTreeSet<&EntryKey> = old.keys().chain(new.keys()).collect();
        for key in keys {
            let value = new.get(key);
            if old.get(key) != value {
                self.entries.insert(
                    key.clone(),
                    Stamped {
                        key: key.clone(),
                        at,
                        value: value.cloned(),
                    },
                );
            }
        }
    }

    /// Takes every entry of `other` newer than ours; whether anything changed.
    pub fn merge(&mut self, other: &AuthLog) -> bool {
        let mut changed = false;
        for (key, theirs) in &other.entries {
            let take = self
                .entries
                .get(key)
                .is_none_or(|ours| theirs.supersedes(ours));
            if take {
                self.entries.insert(key.clone(), theirs.clone());
                changed = true;
            }
        }
        changed
    }

    /// The roles and permissions the live entries describe.
    pub fn store(&self) -> RoleStore {
        let mut store = RoleStore::default();
        for entry in self.entries.values() {
            match (&entry.key, &entry.value) {
                (EntryKey::Role(name), Some(EntryValue::Role(role))) => {
                    store.roles.insert(name.clone(), role.clone());
                }
                (EntryKey::Permissions { role, resource }, Some(EntryValue::Permissions(p))) => {
                    store
                        .permissions
                        .entry(role.clone())
                        .or_default()
                        .insert(resource.clone(), p.clone());
                }
                _ => {}
            }
        }
        store
    }

    pub fn encode(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(&LogFile {
            entries: self.entries.values().cloned().collect(),
        })
    }

    pub fn decode(bytes: &[u8]) -> Result<AuthLog, serde_json::Error> {
        let file: LogFile = serde_json::from_slice(bytes)?;
        Ok(AuthLog {
            entries: file
                .entries
                .into_iter()
                .map(|e| (e.key.clone(), e))
                .collect(),
        })
    }

    /// Equal on two nodes exactly when they hold the same entries (gossiped: a peer whose
    /// digest differs pulls).
    pub fn digest(&self) -> String {
        format!("{:x}", md5::compute(self.encode().unwrap_or_default()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::auth::resource::Resource;
    use crate::auth::roles::RoleChanges;

    fn with_role(store: &RoleStore, name: &str, superuser: bool) -> RoleStore {
        let mut next = store.clone();
        next.create_role(
            name,
            RoleChanges {
                is_superuser: Some(superuser),
                can_login: Some(true),
                salted_hash: None,
            },
        )
        .unwrap();
        next
    }

    /// Two nodes change different things at once, then exchange logs in either order: both
    /// end with both changes.
    #[test]
    fn concurrent_changes_on_two_nodes_merge_to_the_same_roles() {
        let base = with_role(&RoleStore::default(), "cassandra", true);
        let mut a = AuthLog::from_store(&base, 0);
        let mut b = a.clone();
        let a_store = with_role(&base, "alice", false);
        a.record(&base, &a_store, 100);
        let mut b_store = base.clone();
        b_store.grant("cassandra", &Resource::keyspace("ks"), &["SELECT"]);
        b.record(&base, &b_store, 101);
        let (mut ab, mut ba) = (a.clone(), b.clone());
        assert!(ab.merge(&b));
        assert!(ba.merge(&a));
        assert_eq!(ab, ba);
        assert_eq!(ab.digest(), ba.digest());
        let merged = ab.store();
        assert!(merged.get("alice").is_some());
        assert!(merged.has_permission("cassandra", &Resource::keyspace("ks"), "SELECT"));
        assert!(!ab.merge(&a), "merging again changes nothing");
    }

    /// A drop is a tombstone: a node that still has the role does not bring it back, and a
    /// later re-creation wins over the tombstone.
    #[test]
    fn a_dropped_role_stays_dropped_until_created_again_later() {
        let base = with_role(&RoleStore::default(), "bob", false);
        let stale = AuthLog::from_store(&base, 10);
        let mut log = stale.clone();
        let mut dropped = base.clone();
        dropped.drop_role("bob").unwrap();
        log.record(&base, &dropped, 20);
        assert!(!log.merge(&stale));
        assert!(log.store().get("bob").is_none());
        let mut other = stale.clone();
        other.record(&base, &with_role(&RoleStore::default(), "bob", true), 30);
        assert!(log.merge(&other));
        assert!(log.store().get("bob").is_some_and(|r| r.is_superuser));
    }

    /// Every node creates the default superuser at stamp 0 with its own salt: they agree on
    /// one of them, and any later password change wins over all of them.
    #[test]
    fn default_superusers_created_apart_agree_and_lose_to_any_change() {
        let mut one = RoleStore::default();
        one.create_role(
            "cassandra",
            RoleChanges {
                salted_hash: Some("$2a$04$one".into()),
                ..Default::default()
            },
        )
        .unwrap();
        let mut two = RoleStore::default();
        two.create_role(
            "cassandra",
            RoleChanges {
                salted_hash: Some("$2a$04$two".into()),
                ..Default::default()
            },
        )
        .unwrap();
        let (mut a, mut b) = (AuthLog::from_store(&one, 0), AuthLog::from_store(&two, 0));
        let (a0, b0) = (a.clone(), b.clone());
        a.merge(&b0);
        b.merge(&a0);
        assert_eq!(a, b);
        let mut changed = one.clone();
        changed
            .alter_role(
                "cassandra",
                RoleChanges {
                    salted_hash: Some("$2a$04$new".into()),
                    ..Default::default()
                },
            )
            .unwrap();
        let mut c = AuthLog::from_store(&one, 0);
        c.record(&one, &changed, 5);
        a.merge(&c);
        let hash = a
            .store()
            .get("cassandra")
            .and_then(|r| r.salted_hash.clone());
        assert_eq!(hash.as_deref(), Some("$2a$04$new"));
        assert_eq!(AuthLog::decode(&a.encode().unwrap()).unwrap(), a);
    }
}
