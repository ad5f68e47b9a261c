//! `client_encryption_options`: TLS for CQL clients (and for the admin API), under Cassandra's
//! names, with PEM files where Cassandra reads Java keystores.
//!
//! What is accepted (anything else inside an enabled mapping stops the node):
//! - `enabled: true` serves TLS only; `optional: true` serves TLS and plaintext on the same port
//!   (the first byte tells them apart). Either switches TLS on.
//! - `keystore`: a PEM file with the certificate chain, leaf first; it may also hold the private
//!   key, as Cassandra 5.0's `PEMBasedSslContextFactory` reads it. The key may instead be in its own
//!   PEM file named by `private_key` (or `keystore_key`). PKCS#8, PKCS#1 (RSA) and SEC1 (EC) keys;
//!   an encrypted key is refused at start (rustls cannot decrypt it: `openssl pkey` can).
//! - `require_client_auth`: `false` (default), `true`, or `optional` (a certificate is checked if
//!   the client sends one); with `true` or `optional`, `truststore` is a PEM bundle of the CAs
//!   whose client certificates are accepted.
//! - `accepted_protocols`: a subset of `TLSv1.2`, `TLSv1.3` (both by default; rustls has no other).
//! - Ignored because they mean nothing for PEM files or rustls: `keystore_password`,
//!   `truststore_password`, `algorithm`, `protocol: TLS`, `store_type: PEM`, and an
//!   `ssl_context_factory` naming `PEMBasedSslContextFactory` or `DefaultSslContextFactory`.
//! - Refused with a message: a JKS or PKCS12 `store_type` or keystore, `cipher_suites` (rustls'
//!   suites are not configurable here), and older protocols.

use super::ConfigError;
use serde_yaml::Value;
use std::path::PathBuf;

/// Whether clients must present a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    #[default]
    None,
    /// Checked against the truststore when sent; a client without one is still served.
    Optional,
    Required,
}

/// TLS for the native transport, as `client_encryption_options` asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientEncryption {
    /// Plaintext clients are served too, on the same port.
    pub optional: bool,
    /// PEM certificate chain (`keystore`).
    pub certificate_chain: PathBuf,
    /// PEM private key: `private_key`/`keystore_key`, else the keystore file itself.
    pub private_key: PathBuf,
    pub client_auth: ClientAuth,
    /// PEM CA bundle for client certificates (`truststore`).
    pub truststore: Option<PathBuf>,
    pub tls12: bool,
    pub tls13: bool,
}

/// Keys read or knowingly ignored inside the mapping.
const KNOWN_KEYS: &[&str] = &[
    "enabled",
    "optional",
    "keystore",
    "private_key",
    "keystore_key",
    "keystore_password",
    "require_client_auth",
    "truststore",
    "truststore_password",
    "accepted_protocols",
    "protocol",
    "algorithm",
    "store_type",
    "ssl_context_factory",
    "cipher_suites",
    "require_endpoint_verification",
];

fn unsupported(message: String) -> ConfigError {
    ConfigError::Unsupported {
        key: "client_encryption_options".into(),
        message,
    }
}

fn truthy(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) if s.trim().eq_ignore_ascii_case("true") => Some(true),
        Value::String(s) if s.trim().eq_ignore_ascii_case("false") => Some(false),
        _ => None,
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Parses `client_encryption_options`; `Ok(None)` when TLS stays off.
pub fn client_encryption(value: &Value) -> Result<Option<ClientEncryption>, ConfigError> {
    let m = match value {
        Value::Mapping(m) => m,
        Value::Null => return Ok(None),
        other if truthy(other) == Some(false) => return Ok(None),
        other => return Err(unsupported(format!("expected a mapping, got {other:?}"))),
    };
    let get = |k: &str| m.get(Value::String(k.into()));
    let flag = |k: &str| -> Result<bool, ConfigError> {
        match get(k) {
            None | Some(Value::Null) => Ok(false),
            Some(v) => truthy(v).ok_or_else(|| unsupported(format!("{k}: {v:?} is not a boolean"))),
        }
    };
    let (enabled, optional) = (flag("enabled")?, flag("optional")?);
    if !enabled && !optional {
        return Ok(None);
    }
    for k in m.keys() {
        let name = k.as_str().unwrap_or("");
        if !KNOWN_KEYS.contains(&name) {
            return Err(unsupported(format!("{k:?} is not supported by Helenus")));
        }
    }
    refuse_what_rustls_cannot_honour(&get)?;
    let path = |k: &str| {
        get(k)
            .and_then(text)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    };
    let certificate_chain = path("keystore").ok_or_else(|| {
        unsupported("TLS needs keystore: a PEM file with the certificate chain".into())
    })?;
    let private_key = path("private_key")
        .or_else(|| path("keystore_key"))
        .unwrap_or_else(|| certificate_chain.clone());
    let client_auth = match get("require_client_auth").and_then(text).as_deref() {
        None | Some("false") => ClientAuth::None,
        Some("true") => ClientAuth::Required,
        Some("optional") => ClientAuth::Optional,
        Some(other) => {
            return Err(unsupported(format!(
                "require_client_auth: {other} is not true, false or optional"
            )))
        }
    };
    let truststore = path("truststore");
    if client_auth != ClientAuth::None && truststore.is_none() {
        return Err(unsupported(
            "require_client_auth needs truststore: a PEM bundle of the client CAs".into(),
        ));
    }
    let (tls12, tls13) = accepted_protocols(get("accepted_protocols"))?;
    Ok(Some(ClientEncryption {
        optional,
        certificate_chain,
        private_key,
        client_auth,
        truststore,
        tls12,
        tls13,
    }))
}

/// Java keystores, cipher suite lists and endpoint verification have no rustls counterpart
/// here; silently skipping them would weaken what the operator asked for.
fn refuse_what_rustls_cannot_honour<'a>(
    get: &dyn Fn(&str) -> Option<&'a Value>,
) -> Result<(), ConfigError> {
    if let Some(store) = get("store_type").and_then(text) {
        if !store.eq_ignore_ascii_case("PEM") {
            return Err(unsupported(format!(
                "store_type: {store}: JKS and PKCS12 keystores are not supported; give PEM files \
                 (keystore: certificate chain, private_key: key), e.g. converted with openssl"
            )));
        }
    }
    if let Some(ks) = get("keystore").and_then(text) {
        let lower = ks.to_ascii_lowercase();
        if [".jks", ".keystore", ".p12", ".pfx", ".truststore"]
            .iter()
            .any(|ext| lower.ends_with(ext))
        {
            return Err(unsupported(format!(
                "keystore: {ks} looks like a Java keystore; Helenus reads a PEM certificate chain \
                 (keystore) and a PEM private key (private_key)"
            )));
        }
    }
    if let Some(Value::Sequence(suites)) = get("cipher_suites") {
        if !suites.is_empty() {
            return Err(unsupported(
                "cipher_suites cannot be chosen: Helenus uses rustls' default suites".into(),
            ));
        }
    }
    if get("require_endpoint_verification").and_then(truthy) == Some(true) {
        return Err(unsupported(
            "require_endpoint_verification applies to internode TLS, which Helenus lacks".into(),
        ));
    }
    if let Some(factory) = get("ssl_context_factory") {
        let class = match factory {
            Value::Mapping(f) => f.get(Value::String("class_name".into())).and_then(text),
            other => text(other),
        }
        .unwrap_or_default();
        let short = class.rsplit('.').next().unwrap_or("");
        if !["PEMBasedSslContextFactory", "DefaultSslContextFactory", ""].contains(&short) {
            return Err(unsupported(format!(
                "ssl_context_factory {class} is not supported"
            )));
        }
    }
    Ok(())
}

/// `(tls12, tls13)` from `accepted_protocols`; both when absent.
fn accepted_protocols(v: Option<&Value>) -> Result<(bool, bool), ConfigError> {
    let Some(Value::Sequence(list)) = v else {
        return Ok((true, true));
    };
    let (mut tls12, mut tls13) = (false, false);
    for p in list {
        match text(p).as_deref() {
            Some("TLSv1.2") => tls12 = true,
            Some("TLSv1.3") => tls13 = true,
            other => {
                return Err(unsupported(format!(
                    "accepted_protocols: {other:?} is not TLSv1.2 or TLSv1.3"
                )))
            }
        }
    }
    if !tls12 && !tls13 {
        return Err(unsupported("accepted_protocols is empty".into()));
    }
    Ok((tls12, tls13))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn parse(s: &str) -> Result<Option<ClientEncryption>, ConfigError> {
        client_encryption(&serde_yaml::from_str(s).unwrap())
    }

    #[test]
    fn disabled_options_are_ignored_whatever_they_hold() {
        for s in [
            "enabled: false\nkeystore: conf/.keystore\nkeystore_password: cassandra",
            "enabled: false\ncipher_suites: [X]",
            "false",
        ] {
            assert_eq!(parse(s).unwrap(), None, "{s}");
        }
    }

    #[test]
    fn pem_keystore_with_a_separate_key_and_client_auth() {
        let c = parse(
            "enabled: true\nkeystore: /c.pem\nprivate_key: /k.pem\nrequire_client_auth: true\n\
             truststore: /ca.pem\naccepted_protocols: [TLSv1.3]\nkeystore_password: x",
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.certificate_chain, PathBuf::from("/c.pem"));
        assert_eq!(c.private_key, PathBuf::from("/k.pem"));
        assert_eq!(c.client_auth, ClientAuth::Required);
        assert_eq!(c.truststore, Some(PathBuf::from("/ca.pem")));
        assert!(!c.optional && !c.tls12 && c.tls13);
        let o = parse("optional: true\nkeystore: /both.pem")
            .unwrap()
            .unwrap();
        assert!(o.optional);
        assert_eq!(o.private_key, PathBuf::from("/both.pem"));
    }

    #[test]
    fn what_rustls_cannot_honour_is_refused_with_the_reason() {
        for (s, why) in [
            ("enabled: true", "needs keystore"),
            ("enabled: true\nkeystore: conf/.keystore", "Java keystore"),
            ("enabled: true\nkeystore: k.pem\nstore_type: JKS", "JKS"),
            (
                "enabled: true\nkeystore: k.pem\ncipher_suites: [A]",
                "cipher_suites",
            ),
            (
                "enabled: true\nkeystore: k.pem\nrequire_client_auth: true",
                "truststore",
            ),
            (
                "enabled: true\nkeystore: k.pem\naccepted_protocols: [TLSv1]",
                "TLSv1",
            ),
            (
                "enabled: true\nkeystore: k.pem\nfrobnicate: 1",
                "frobnicate",
            ),
            ("enabled: maybe", "not a boolean"),
        ] {
            let err = parse(s).unwrap_err().to_string();
            assert!(err.contains(why), "{s}: {err}");
        }
    }
}
