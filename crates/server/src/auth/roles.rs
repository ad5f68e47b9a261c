//! The role and permission model of CassandraRoleManager and CassandraAuthorizer: roles with
//! their flags and password hash, role membership (a role inherits the permissions and the
//! superuser status of every role granted to it, transitively) and permissions per resource.
//! Pure data: persisting it and checking passwords is the service's job.

use super::resource::Resource;
use super::AuthError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One row of `system_auth.roles`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Role {
    pub name: String,
    pub is_superuser: bool,
    pub can_login: bool,
    /// bcrypt (`$2a$...`), as Cassandra stores it; `None` for a role without a password.
    pub salted_hash: Option<String>,
    /// The roles granted to this one (directly).
    pub member_of: BTreeSet<String>,
}

/// What CREATE/ALTER ROLE set; `None` leaves a field as it is (or at its default on CREATE).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoleChanges {
    pub is_superuser: Option<bool>,
    pub can_login: Option<bool>,
    pub salted_hash: Option<String>,
}

/// Every role and every granted permission.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleStore {
    pub roles: BTreeMap<String, Role>,
    /// role -> resource name -> permission names (`system_auth.role_permissions`).
    pub permissions: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
}

fn invalid(msg: String) -> AuthError {
    AuthError::Invalid(msg)
}

impl RoleStore {
    pub fn get(&self, name: &str) -> Option<&Role> {
        self.roles.get(name)
    }

    fn existing(&self, name: &str) -> Result<&Role, AuthError> {
        self.roles
            .get(name)
            .ok_or_else(|| invalid(format!("{name} doesn't exist")))
    }

    pub fn create_role(&mut self, name: &str, c: RoleChanges) -> Result<(), AuthError> {
        if self.roles.contains_key(name) {
            return Err(invalid(format!("{name} already exists")));
        }
        let role = Role {
            name: name.to_string(),
            is_superuser: c.is_superuser.unwrap_or(false),
            can_login: c.can_login.unwrap_or(false),
            salted_hash: c.salted_hash,
            member_of: BTreeSet::new(),
        };
        self.roles.insert(name.to_string(), role);
        Ok(())
    }

    pub fn alter_role(&mut self, name: &str, c: RoleChanges) -> Result<(), AuthError> {
        let role = self
            .roles
            .get_mut(name)
            .ok_or_else(|| invalid(format!("Role {name} doesn't exist")))?;
        if let Some(s) = c.is_superuser {
            role.is_superuser = s;
        }
        if let Some(l) = c.can_login {
            role.can_login = l;
        }
        if c.salted_hash.is_some() {
            role.salted_hash = c.salted_hash;
        }
        Ok(())
    }

    /// Drops a role, its memberships both ways, what was granted to it and what was granted on it.
    pub fn drop_role(&mut self, name: &str) -> Result<(), AuthError> {
        self.existing(name)?;
        self.roles.remove(name);
        for r in self.roles.values_mut() {
            r.member_of.remove(name);
        }
        self.permissions.remove(name);
        self.drop_resource(&Resource::role(name));
        Ok(())
    }

    /// GRANT role TO grantee (Cassandra's checks and messages).
    pub fn grant_role(&mut self, role: &str, grantee: &str) -> Result<(), AuthError> {
        self.existing(role)?;
        self.existing(grantee)?;
        if self.roles_of(grantee, true).contains(role) {
            return Err(invalid(format!("{grantee} is a member of {role}")));
        }
        if self.roles_of(role, true).contains(grantee) {
            return Err(invalid(format!("{role} is a member of {grantee}")));
        }
        if let Some(g) = self.roles.get_mut(grantee) {
            g.member_of.insert(role.to_string());
        }
        Ok(())
    }

    pub fn revoke_role(&mut self, role: &str, revokee: &str) -> Result<(), AuthError> {
        self.existing(role)?;
        let r = self.existing(revokee)?;
        if !r.member_of.contains(role) {
            return Err(invalid(format!("{revokee} is not a member of {role}")));
        }
        if let Some(r) = self.roles.get_mut(revokee) {
            r.member_of.remove(role);
        }
        Ok(())
    }

    /// `name` and, when `recursive`, every role granted to it transitively (else only directly).
    pub fn roles_of(&self, name: &str, recursive: bool) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let mut todo = vec![(name.to_string(), 0usize)];
        while let Some((r, depth)) = todo.pop() {
            if !out.insert(r.clone()) {
                continue;
            }
            if depth > 0 && !recursive {
                continue;
            }
            if let Some(role) = self.roles.get(&r) {
                todo.extend(role.member_of.iter().map(|m| (m.clone(), depth + 1)));
            }
        }
        out
    }

    /// Superuser status is inherited from any granted role.
    pub fn is_superuser(&self, name: &str) -> bool {
        self.roles_of(name, true)
            .iter()
            .any(|r| self.roles.get(r).is_some_and(|r| r.is_superuser))
    }

    /// The roles that can log in ... (LIST USERS).
    pub fn login_roles(&self) -> impl Iterator<Item = &Role> {
        self.roles.values().filter(|r| r.can_login)
    }

    pub fn grant(&mut self, role: &str, resource: &Resource, perms: &[&str]) {
        let set = self
            .permissions
            .entry(role.to_string())
            .or_default()
            .entry(resource.name())
            .or_default();
        set.extend(perms.iter().map(|p| p.to_string()));
    }

    pub fn revoke(&mut self, role: &str, resource: &Resource, perms: &[&str]) {
        let name = resource.name();
        if let Some(by_resource) = self.permissions.get_mut(role) {
            if let Some(set) = by_resource.get_mut(&name) {
                for p in perms {
                    set.remove(*p);
                }
                if set.is_empty() {
                    by_resource.remove(&name);
                }
            }
            if by_resource.is_empty() {
                self.permissions.remove(role);
            }
        }
    }

    /// Forgets every permission on `resource` and on what lies under it (a dropped keyspace
    /// takes its tables' grants with it, as Cassandra does).
    pub fn drop_resource(&mut self, resource: &Resource) {
        for by_resource in self.permissions.values_mut() {
            by_resource
                .retain(|name, _| Resource::from_name(name).is_none_or(|r| !r.is_within(resource)));
        }
        self.permissions.retain(|_, m| !m.is_empty());
    }

    /// Whether `user` holds `perm` on `resource` or any of its parents, through any of its roles.
    pub fn has_permission(&self, user: &str, resource: &Resource, perm: &str) -> bool {
        let names: Vec<String> = resource.chain().iter().map(Resource::name).collect();
        self.roles_of(user, true).iter().any(|r| {
            self.permissions.get(r).is_some_and(|by_resource| {
                names
                    .iter()
                    .any(|n| by_resource.get(n).is_some_and(|s| s.contains(perm)))
            })
        })
    }

    /// (role, resource, permission) triples for LIST PERMISSIONS, sorted as Cassandra sorts them.
    pub fn list_permissions(
        &self,
        roles: Option<&BTreeSet<String>>,
        resources: Option<&[Resource]>,
        perms: &[&str],
    ) -> Vec<(String, Resource, String)> {
        let mut out = Vec::new();
        for (role, by_resource) in &self.permissions {
            if roles.is_some_and(|rs| !rs.contains(role)) {
                continue;
            }
            for (name, set) in by_resource {
                let Some(res) = Resource::from_name(name) else {
                    continue;
                };
                if resources.is_some_and(|rs| !rs.contains(&res)) {
                    continue;
                }
                for p in set.iter().filter(|p| perms.contains(&p.as_str())) {
                    out.push((role.clone(), res.clone(), p.clone()));
                }
            }
        }
        out.sort_by(|a, b| {
            (&a.0, a.1.name(), super::resource::permission_rank(&a.2)).cmp(&(
                &b.0,
                b.1.name(),
                super::resource::permission_rank(&b.2),
            ))
        });
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn store(names: &[&str]) -> RoleStore {
        let mut s = RoleStore::default();
        for n in names {
            s.create_role(n, RoleChanges::default()).unwrap();
        }
        s
    }

    #[test]
    fn creating_an_existing_role_fails_with_cassandras_message() {
        let mut s = store(&["alice"]);
        let e = s.create_role("alice", RoleChanges::default()).unwrap_err();
        assert_eq!(e, AuthError::Invalid("alice already exists".into()));
        let e = s.alter_role("bob", RoleChanges::default()).unwrap_err();
        assert_eq!(e, AuthError::Invalid("Role bob doesn't exist".into()));
    }

    #[test]
    fn permissions_are_inherited_through_granted_roles_and_parents() {
        let mut s = store(&["alice", "reader", "base"]);
        s.grant("base", &Resource::keyspace("ks"), &["SELECT"]);
        s.grant_role("base", "reader").unwrap();
        s.grant_role("reader", "alice").unwrap();
        let t = Resource::table("ks", "t");
        assert!(s.has_permission("alice", &t, "SELECT"));
        assert!(!s.has_permission("alice", &t, "MODIFY"));
        assert_eq!(s.roles_of("alice", false).len(), 2);
        assert_eq!(s.roles_of("alice", true).len(), 3);
        s.revoke_role("reader", "alice").unwrap();
        assert!(!s.has_permission("alice", &t, "SELECT"));
    }

    #[test]
    fn circular_and_repeated_grants_are_refused() {
        let mut s = store(&["a", "b"]);
        s.grant_role("a", "b").unwrap();
        assert_eq!(
            s.grant_role("a", "b").unwrap_err(),
            AuthError::Invalid("b is a member of a".into())
        );
        assert_eq!(
            s.grant_role("b", "a").unwrap_err(),
            AuthError::Invalid("b is a member of a".into())
        );
        assert!(s.revoke_role("b", "a").is_err());
    }

    #[test]
    fn superuser_status_is_inherited() {
        let mut s = store(&["alice"]);
        s.create_role(
            "admin",
            RoleChanges {
                is_superuser: Some(true),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(!s.is_superuser("alice"));
        s.grant_role("admin", "alice").unwrap();
        assert!(s.is_superuser("alice"));
    }

    #[test]
    fn dropping_a_role_or_keyspace_forgets_its_grants() {
        let mut s = store(&["alice", "owner"]);
        s.grant("alice", &Resource::table("ks", "t"), &["SELECT"]);
        s.grant("owner", &Resource::role("alice"), &["ALTER", "DROP"]);
        s.grant("owner", &Resource::keyspace("other"), &["SELECT"]);
        s.drop_resource(&Resource::keyspace("ks"));
        assert!(!s.permissions.contains_key("alice"));
        s.drop_role("alice").unwrap();
        let left = s.list_permissions(None, None, super::super::resource::PERMISSIONS);
        assert_eq!(
            left,
            vec![(
                "owner".to_string(),
                Resource::keyspace("other"),
                "SELECT".to_string()
            )]
        );
        assert!(s.drop_role("alice").is_err());
    }
}
