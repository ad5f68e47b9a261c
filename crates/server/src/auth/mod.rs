//! Authentication and authorization as Cassandra's PasswordAuthenticator, CassandraRoleManager and
//! CassandraAuthorizer do them: SASL PLAIN logins checked against bcrypt hashes, roles that
//! inherit from granted roles, and permissions on keyspaces, tables, roles and functions.
//!
//! This module owns the model ([`roles`]), the resource names ([`resource`]), SASL decoding
//! ([`sasl`]) and the [`AuthService`] that keeps the roles durable and checks passwords. Which
//! statement needs which permission, and running the role statements, belong to the executor
//! (`exec::access`, `exec::roles`); the `system_auth` tables are served by `system`.

pub mod replicated;
pub mod resource;
pub mod roles;
pub mod sasl;

use crate::config::{Authenticator, Authorizer, NodeConfig};
use helenus_types::SharedClock;
use parking_lot::{Mutex, RwLock};
use replicated::AuthLog;
use resource::Resource;
use roles::{RoleChanges, RoleStore};
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the roles live, beside the schema file.
const ROLES_FILE: &str = "auth_roles.json";
/// The superuser Cassandra creates on a node's first start with authentication on.
pub const DEFAULT_SUPERUSER: &str = "cassandra";
/// At most this many remembered logins; past it the cache starts over (a bound, not a policy).
const MAX_CACHED_LOGINS: usize = 10_000;

/// Why an authentication or role operation failed, each with the CQL error Cassandra gives.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// 0x0100
    #[error("{0}")]
    BadCredentials(String),
    /// 0x2100
    #[error("{0}")]
    Unauthorized(String),
    /// 0x2200
    #[error("{0}")]
    Invalid(String),
    /// 0x0000: the roles file could not be written.
    #[error("cannot persist roles to {path}: {message}")]
    Storage { path: String, message: String },
}

/// A login remembered for `credentials_validity`: which hash it was checked against (a password
/// change invalidates it) and a keyed fingerprint of the password (never the password itself).
#[derive(Debug, Clone)]
struct CachedLogin {
    salted_hash: String,
    fingerprint: (u64, u64),
    expires_at_ms: u64,
}

/// The node's roles, permissions and credential checks.
pub struct AuthService {
    /// PasswordAuthenticator: STARTUP answers AUTHENTICATE and requests need a login.
    pub authenticate: bool,
    /// CassandraAuthorizer: every statement is checked against the user's permissions.
    pub authorize: bool,
    bcrypt_cost: u32,
    credentials_validity_ms: u64,
    path: Option<PathBuf>,
    store: RwLock<Arc<RoleStore>>,
    /// What `store` is derived from: every entry with the time it was written, merged with
    /// the ring's (see [`replicated`]).
    log: Mutex<AuthLog>,
    /// Serialises changes so that two writers never persist interleaved states.
    change_lock: Mutex<()>,
    logins: Mutex<HashMap<String, CachedLogin>>,
    /// Password checks (bcrypt) allowed to run at once: one per core.
    pub login_slots: tokio::sync::Semaphore,
    fingerprint_keys: (
        std::collections::hash_map::RandomState,
        std::collections::hash_map::RandomState,
    ),
    clock: SharedClock,
}

impl std::fmt::Debug for AuthService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthService")
            .field("authenticate", &self.authenticate)
            .field("authorize", &self.authorize)
            .finish_non_exhaustive()
    }
}

fn storage_err(path: &Path, e: impl std::fmt::Display) -> AuthError {
    AuthError::Storage {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// A bcrypt hash of `password` at `cost` rounds (log2), in Cassandra's `$2a$` form.
pub fn hash_password(password: &str, cost: u32) -> Result<String, AuthError> {
    bcrypt::hash_with_result(password, cost)
        .map(|h| h.format_for_version(bcrypt::Version::TwoA))
        .map_err(|e| AuthError::Invalid(format!("cannot hash the password: {e}")))
}

impl AuthService {
    /// No authentication, no authorization, nothing on disk: Cassandra's defaults.
    pub fn allow_all(clock: SharedClock) -> AuthService {
        AuthService::new(&NodeConfig::default(), None, AuthLog::default(), clock)
    }

    fn new(
        config: &NodeConfig,
        path: Option<PathBuf>,
        log: AuthLog,
        clock: SharedClock,
    ) -> AuthService {
        AuthService {
            authenticate: config.authenticator == Authenticator::Password,
            authorize: config.authorizer == Authorizer::Cassandra,
            bcrypt_cost: config.auth_bcrypt_gensalt_log2_rounds,
            credentials_validity_ms: config.credentials_validity_ms,
            path,
            store: RwLock::new(Arc::new(log.store())),
            log: Mutex::new(log),
            change_lock: Mutex::new(()),
            logins: Mutex::new(HashMap::new()),
            login_slots: tokio::sync::Semaphore::new(
                std::thread::available_parallelism().map_or(2, |n| n.get()),
            ),
            fingerprint_keys: Default::default(),
            clock,
        }
    }

    /// Loads the roles under `system_dir`; with authentication on, a node without roles gets
    /// the default `cassandra`/`cassandra` superuser, as Cassandra's first start does.
    pub fn open(
        config: &NodeConfig,
        system_dir: &Path,
        clock: SharedClock,
    ) -> Result<AuthService, AuthError> {
        if config.authenticator == Authenticator::AllowAll
            && config.authorizer == Authorizer::AllowAll
        {
            return Ok(AuthService::allow_all(clock));
        }
        let path = system_dir.join(ROLES_FILE);
        let log = match std::fs::read(&path) {
            Ok(bytes) => load(&path, &bytes)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => AuthLog::default(),
            Err(e) => return Err(storage_err(&path, e)),
        };
        let service = AuthService::new(config, Some(path), log, clock);
        if service.authenticate && service.snapshot().roles.is_empty() {
            let hash = hash_password(DEFAULT_SUPERUSER, service.bcrypt_cost)?;
            // Stamped at 0, the oldest time there is: every node of a new ring creates its own,
            // and none of them may undo a password change made anywhere (replicated.rs).
            service.apply(Some(0), |s| {
                s.create_role(
                    DEFAULT_SUPERUSER,
                    RoleChanges {
                        is_superuser: Some(true),
                        can_login: Some(true),
                        salted_hash: Some(hash),
                    },
                )
            })?;
            tracing::info!("Created default superuser role '{DEFAULT_SUPERUSER}'");
        }
        Ok(service)
    }

    /// The roles as they are now (cheap; later changes do not show in it).
    pub fn snapshot(&self) -> Arc<RoleStore> {
        self.store.read().clone()
    }

    pub fn bcrypt_cost(&self) -> u32 {
        self.bcrypt_cost
    }

    /// Applies `change` to a copy of the roles, makes the copy durable, then publishes it; a
    /// change that fails, or cannot be written, leaves the roles as they were.
    pub fn update<T>(
        &self,
        change: impl FnOnce(&mut RoleStore) -> Result<T, AuthError>,
    ) -> Result<T, AuthError> {
        self.apply(None, change)
    }

    /// `update`, with what changed stamped at `at` (default: now, and after every stamp held).
    fn apply<T>(
        &self,
        at: Option<i64>,
        change: impl FnOnce(&mut RoleStore) -> Result<T, AuthError>,
    ) -> Result<T, AuthError> {
        let _guard = self.change_lock.lock();
        let before = self.snapshot();
        let mut next = (*before).clone();
        let out = change(&mut next)?;
        let mut log = self.log.lock().clone();
        let at = at.unwrap_or_else(|| self.clock.wall_micros().max(log.newest().saturating_add(1)));
        log.record(&before, &next, at);
        self.publish(log)?;
        Ok(out)
    }

    /// Makes `log` durable and the roles it describes current (under `change_lock`).
    fn publish(&self, log: AuthLog) -> Result<(), AuthError> {
        if let Some(path) = &self.path {
            let bytes = log.encode().map_err(|e| storage_err(path, e))?;
            persist(path, &bytes)?;
        }
        *self.store.write() = Arc::new(log.store());
        *self.log.lock() = log;
        Ok(())
    }

    /// Every role and permission with its stamps, for a peer to merge.
    pub fn export(&self) -> Result<Vec<u8>, AuthError> {
        self.log
            .lock()
            .encode()
            .map_err(|e| AuthError::Invalid(format!("cannot encode the roles: {e}")))
    }

    /// Merges a peer's export: each entry newer there replaces ours. Whether anything changed.
    pub fn merge(&self, exported: &[u8]) -> Result<bool, AuthError> {
        let incoming = AuthLog::decode(exported)
            .map_err(|e| AuthError::Invalid(format!("roles from a peer not readable: {e}")))?;
        let _guard = self.change_lock.lock();
        let mut log = self.log.lock().clone();
        if !log.merge(&incoming) {
            return Ok(false);
        }
        self.publish(log)?;
        Ok(true)
    }

    /// Equal on two nodes exactly when they hold the same roles and permissions.
    pub fn digest(&self) -> String {
        self.log.lock().digest()
    }

    /// Whether `user` may act as a superuser (directly or through a granted role).
    pub fn is_superuser(&self, user: &str) -> bool {
        self.snapshot().is_superuser(user)
    }

    /// Whether `user` holds `perm` on `resource` or a parent; superusers hold everything, and
    /// under AllowAllAuthorizer everyone does.
    pub fn has_permission(&self, user: &str, resource: &Resource, perm: &str) -> bool {
        if !self.authorize {
            return true;
        }
        let s = self.snapshot();
        s.is_superuser(user) || s.has_permission(user, resource, perm)
    }

    fn fingerprint(&self, user: &str, password: &str) -> (u64, u64) {
        let (a, b) = &self.fingerprint_keys;
        (a.hash_one((user, password)), b.hash_one((user, password)))
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.clock.monotonic().as_millis()).unwrap_or(u64::MAX)
    }

    /// Checks a login as PasswordAuthenticator does. Slow (bcrypt) unless the same credentials
    /// succeeded within `credentials_validity`: run it off the I/O workers.
    pub fn check_login(&self, user: &str, password: &str) -> Result<(), AuthError> {
        let bad = || {
            AuthError::BadCredentials(format!(
                "Provided username {user} and/or password are incorrect"
            ))
        };
        let store = self.snapshot();
        let role = store.get(user).ok_or_else(bad)?;
        let hash = role.salted_hash.clone().ok_or_else(bad)?;
        let fingerprint = self.fingerprint(user, password);
        let now_ms = self.now_ms();
        let cached = self.logins.lock().get(user).is_some_and(|c| {
            c.salted_hash == hash && c.fingerprint == fingerprint && now_ms < c.expires_at_ms
        });
        if !cached {
            if !bcrypt::verify(password, &hash).unwrap_or(false) {
                return Err(bad());
            }
            if self.credentials_validity_ms > 0 {
                let mut logins = self.logins.lock();
                if logins.len() >= MAX_CACHED_LOGINS {
                    logins.clear();
                }
                logins.insert(
                    user.to_string(),
                    CachedLogin {
                        salted_hash: hash,
                        fingerprint,
                        expires_at_ms: now_ms.saturating_add(self.credentials_validity_ms),
                    },
                );
            }
        }
        if !role.can_login {
            return Err(AuthError::BadCredentials(format!(
                "{user} is not permitted to log in"
            )));
        }
        Ok(())
    }
}

/// The roles file: the stamped log, or the plain roles a node wrote before roles were
/// replicated (taken as written at 0, so any change made in the ring since wins).
fn load(path: &Path, bytes: &[u8]) -> Result<AuthLog, AuthError> {
    match AuthLog::decode(bytes) {
        Ok(log) => Ok(log),
        Err(_) => serde_json::from_slice::<RoleStore>(bytes)
            .map(|store| AuthLog::from_store(&store, 0))
            .map_err(|e| storage_err(path, e)),
    }
}

/// Writes the roles to a temporary file, syncs it and renames it over the old one, so a crash
/// leaves either the old roles or the new ones.
fn persist(path: &Path, json: &[u8]) -> Result<(), AuthError> {
    use std::io::Write;
    let tmp = path.with_extension("json.tmp");
    let mut f = std::fs::File::create(&tmp).map_err(|e| storage_err(&tmp, e))?;
    f.write_all(json).map_err(|e| storage_err(&tmp, e))?;
    f.sync_all().map_err(|e| storage_err(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| storage_err(path, e))?;
    if let Some(dir) = path.parent() {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn config(cost: u32) -> NodeConfig {
        NodeConfig {
            authenticator: Authenticator::Password,
            authorizer: Authorizer::Cassandra,
            auth_bcrypt_gensalt_log2_rounds: cost,
            ..Default::default()
        }
    }

    #[test]
    fn first_start_creates_the_default_superuser_and_roles_survive_reopen() {
        let dir = std::env::temp_dir().join(format!("helenus-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let clock = helenus_types::SystemClock::shared();
        let s = AuthService::open(&config(4), &dir, clock.clone()).unwrap();
        assert!(s.is_superuser("cassandra"));
        s.check_login("cassandra", "cassandra").unwrap();
        let e = s.check_login("cassandra", "wrong").unwrap_err();
        assert_eq!(
            e,
            AuthError::BadCredentials(
                "Provided username cassandra and/or password are incorrect".into()
            )
        );
        assert!(s.check_login("nobody", "x").is_err());
        let hash = hash_password("pw", 4).unwrap();
        assert!(hash.starts_with("$2a$04$"), "{hash}");
        s.update(|st| {
            st.create_role(
                "alice",
                RoleChanges {
                    can_login: Some(false),
                    salted_hash: Some(hash),
                    ..Default::default()
                },
            )
        })
        .unwrap();
        let e = s.check_login("alice", "pw").unwrap_err();
        assert_eq!(
            e,
            AuthError::BadCredentials("alice is not permitted to log in".into())
        );
        drop(s);
        let again = AuthService::open(&config(4), &dir, clock).unwrap();
        assert!(again.snapshot().get("alice").is_some());
        assert_eq!(again.snapshot().roles.len(), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_failed_change_leaves_the_roles_unchanged() {
        let s = AuthService::allow_all(helenus_types::SystemClock::shared());
        let r = s.update(|st| {
            st.create_role("a", RoleChanges::default())?;
            st.create_role("a", RoleChanges::default())
        });
        assert!(r.is_err());
        assert!(s.snapshot().roles.is_empty());
    }

    #[test]
    fn a_cached_login_is_invalidated_by_a_password_change() {
        let s = AuthService::new(
            &config(4),
            None,
            AuthLog::default(),
            helenus_types::SystemClock::shared(),
        );
        let changes = |pw: &str| RoleChanges {
            can_login: Some(true),
            salted_hash: Some(hash_password(pw, 4).unwrap()),
            ..Default::default()
        };
        s.update(|st| st.create_role("bob", changes("one")))
            .unwrap();
        s.check_login("bob", "one").unwrap();
        s.check_login("bob", "one").unwrap();
        s.update(|st| st.alter_role("bob", changes("two"))).unwrap();
        assert!(s.check_login("bob", "one").is_err());
        s.check_login("bob", "two").unwrap();
    }
}
