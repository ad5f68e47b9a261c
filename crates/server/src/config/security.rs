//! Security settings of `helenus.yaml`: the authenticator and authorizer Helenus implements, TLS
//! for clients (parsed by `encryption`), and everything it cannot honour yet.
//!
//! Unknown settings are only warned about, but a security setting is different: a node that
//! was told `authenticator: SomethingElse` and answers STARTUP with READY is open to anyone
//! while its operator believes it is locked. So every security setting is checked, and a value
//! Helenus does not implement stops the node at start.

use super::audit::{audit_logging, AuditLogOptions};
use super::encryption::{client_encryption, ClientEncryption};
use super::ConfigError;
use serde_yaml::Value;

/// `authenticator`: who may connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Authenticator {
    /// Anyone, without credentials (Cassandra's default).
    #[default]
    AllowAll,
    /// SASL PLAIN against the roles' bcrypt hashes.
    Password,
}

/// `authorizer`: what a logged-in role may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Authorizer {
    /// Everything (Cassandra's default).
    #[default]
    AllowAll,
    /// What GRANT gave it (CassandraAuthorizer).
    Cassandra,
}

/// Settings naming a pluggable class, with the classes each accepts (the first is Cassandra's
/// default).
const CLASS_SETTINGS: &[(&str, &[&str])] = &[
    (
        "authenticator",
        &["AllowAllAuthenticator", "PasswordAuthenticator"],
    ),
    ("authorizer", &["AllowAllAuthorizer", "CassandraAuthorizer"]),
    ("role_manager", &["CassandraRoleManager"]),
    ("network_authorizer", &["AllowAllNetworkAuthorizer"]),
    ("cidr_authorizer", &["AllowAllCIDRAuthorizer"]),
    ("crypto_provider", &["DefaultCryptoProvider"]),
];

/// TLS for clients: parsed by `encryption`.
const CLIENT_ENCRYPTION: &str = "client_encryption_options";
/// Audit logging: parsed by `audit` (asking for an audit log and silently not getting one is a
/// security failure too).
const AUDIT_LOGGING: &str = "audit_logging_options";

/// Encryption settings (mappings) that must stay switched off.
const ENCRYPTION_SETTINGS: &[&str] = &[
    "server_encryption_options",
    "transparent_data_encryption_options",
    "jmx_encryption_options",
];

/// Whether `key` is a security setting this module owns.
pub fn is_security_setting(key: &str) -> bool {
    CLASS_SETTINGS.iter().any(|(k, _)| *k == key)
        || ENCRYPTION_SETTINGS.contains(&key)
        || key == CLIENT_ENCRYPTION
        || key == AUDIT_LOGGING
}

/// What a checked security setting chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecurityChoice {
    /// A class setting's short class name.
    Class(String),
    /// `client_encryption_options`: TLS for clients, or `None` for plaintext only.
    ClientEncryption(Option<ClientEncryption>),
    /// `audit_logging_options`.
    Audit(AuditLogOptions),
    /// An encryption setting that stays off.
    Off,
}

/// Checks one security setting; `Err` when its value asks for something Helenus does not do.
pub fn check_security_setting(key: &str, value: &Value) -> Result<SecurityChoice, ConfigError> {
    if key == CLIENT_ENCRYPTION {
        return client_encryption(value).map(SecurityChoice::ClientEncryption);
    }
    if key == AUDIT_LOGGING {
        return audit_logging(value).map(SecurityChoice::Audit);
    }
    let unsupported = |what: String| ConfigError::Unsupported {
        key: key.to_string(),
        message: what,
    };
    if let Some((_, allowed)) = CLASS_SETTINGS.iter().find(|(k, _)| *k == key) {
        let class = class_name(value).ok_or_else(|| {
            unsupported("expected a class name or a mapping with class_name".into())
        })?;
        let short = class.rsplit('.').next().unwrap_or(&class);
        if !allowed.contains(&short) {
            return Err(unsupported(format!(
                "{class} is not supported (Helenus accepts {})",
                allowed.join(" or ")
            )));
        }
        return Ok(SecurityChoice::Class(short.to_string()));
    }
    if ENCRYPTION_SETTINGS.contains(&key) {
        if let Some(reason) = encryption_requested(value) {
            return Err(unsupported(format!(
                "{reason}: Helenus encrypts client connections only \
                 (client_encryption_options); internode and on-disk encryption are not supported"
            )));
        }
    }
    Ok(SecurityChoice::Off)
}

/// `Foo`, `org.apache.cassandra.auth.Foo` or `{class_name: Foo, parameters: ...}`.
fn class_name(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Mapping(m) => m
            .get(Value::String("class_name".into()))
            .and_then(Value::as_str)
            .map(|s| s.trim().to_string()),
        _ => None,
    }
}

/// Why an encryption mapping asks for encryption, if it does.
fn encryption_requested(value: &Value) -> Option<String> {
    let truthy = |v: &Value| match v {
        Value::Bool(b) => *b,
        Value::String(s) => s.trim().eq_ignore_ascii_case("true"),
        _ => false,
    };
    let Value::Mapping(m) = value else {
        return truthy(value).then(|| format!("{value:?}"));
    };
    for flag in ["enabled", "optional"] {
        if m.get(Value::String(flag.into())).is_some_and(truthy) {
            return Some(format!("{flag}: true"));
        }
    }
    let internode = m
        .get(Value::String("internode_encryption".into()))
        .and_then(Value::as_str)
        .map(str::trim);
    match internode {
        Some(mode) if !mode.eq_ignore_ascii_case("none") => {
            Some(format!("internode_encryption: {mode}"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(s: &str) -> Value {
        serde_yaml::from_str(s).unwrap()
    }

    #[test]
    fn cassandra_defaults_are_accepted() {
        for (k, v) in [
            ("authenticator", "AllowAllAuthenticator"),
            (
                "authenticator",
                "org.apache.cassandra.auth.AllowAllAuthenticator",
            ),
            (
                "authenticator",
                "class_name: org.apache.cassandra.auth.AllowAllAuthenticator",
            ),
            ("authorizer", "AllowAllAuthorizer"),
            ("role_manager", "CassandraRoleManager"),
            ("authenticator", "PasswordAuthenticator"),
            (
                "authenticator",
                "class_name: org.apache.cassandra.auth.PasswordAuthenticator",
            ),
            ("authorizer", "CassandraAuthorizer"),
            ("network_authorizer", "AllowAllNetworkAuthorizer"),
            ("cidr_authorizer", "class_name: AllowAllCIDRAuthorizer"),
            (
                "client_encryption_options",
                "enabled: false\nkeystore: conf/.keystore",
            ),
            (
                "server_encryption_options",
                "internode_encryption: none\nenabled: false",
            ),
        ] {
            check_security_setting(k, &yaml(v)).unwrap_or_else(|e| panic!("{k}: {v}: {e}"));
        }
    }

    #[test]
    fn anything_that_asks_for_security_is_refused() {
        for (k, v) in [
            ("authenticator", "class_name: MutualTlsAuthenticator"),
            ("authenticator", "[1, 2]"),
            ("authorizer", "LDAPAuthorizer"),
            ("role_manager", "LDAPRoleManager"),
            ("network_authorizer", "CassandraNetworkAuthorizer"),
            ("client_encryption_options", "enabled: true"),
            (
                "client_encryption_options",
                "optional: 'true'\nkeystore: conf/.keystore",
            ),
            ("server_encryption_options", "internode_encryption: all"),
            ("transparent_data_encryption_options", "enabled: true"),
        ] {
            let err = check_security_setting(k, &yaml(v)).unwrap_err();
            assert!(err.to_string().contains(k), "{err}");
        }
    }
}
