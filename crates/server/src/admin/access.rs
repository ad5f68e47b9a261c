//! Who may use the admin API. On a loopback address it is open, as Cassandra's local-only JMX is
//! by default; on any other address (or with `admin_api_requires_credentials`) every request
//! carries HTTP Basic credentials of a superuser role, checked by the same [`AuthService`] as
//! CQL logins. Nothing a client sends here can panic: every malformed header is an answer.

use crate::auth::{AuthError, AuthService};
use base64::Engine;

/// Longest `Authorization` value decoded: a role name and a password, generously. The request
/// head is bounded already; this keeps a single header from costing a large decode.
const MAX_AUTHORIZATION_BYTES: usize = 4096;

/// Why a request was not let in, with its HTTP status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessDenied {
    /// 401: no credentials at all.
    #[error("this admin API requires credentials: nodetool -u USER -pw PASSWORD")]
    Missing,
    /// 400: an `Authorization` header that is not well-formed Basic credentials.
    #[error("malformed Authorization header: {0}")]
    Malformed(&'static str),
    /// 401: unknown role, wrong password, or a role that may not log in.
    #[error("{0}")]
    BadCredentials(String),
    /// 403: a valid login of a role that is not a superuser.
    #[error("{0} is not a superuser: the admin API needs a superuser role")]
    NotSuperuser(String),
}

impl AccessDenied {
    pub fn status(&self) -> u16 {
        match self {
            AccessDenied::Missing | AccessDenied::BadCredentials(_) => 401,
            AccessDenied::Malformed(_) => 400,
            AccessDenied::NotSuperuser(_) => 403,
        }
    }
}

/// The value of the `Authorization` header in a request head, if any (names are
/// case-insensitive; the first such header counts).
pub fn authorization_header(head: &str) -> Option<&str> {
    head.split("\r\n").skip(1).find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("authorization")
            .then(|| value.trim())
    })
}

/// `Basic base64(user:password)` into the user and the password.
pub fn parse_basic(value: &str) -> Result<(String, String), AccessDenied> {
    if value.len() > MAX_AUTHORIZATION_BYTES {
        return Err(AccessDenied::Malformed("too long"));
    }
    let (scheme, encoded) = value
        .split_once(' ')
        .ok_or(AccessDenied::Malformed("expected 'Basic <credentials>'"))?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(AccessDenied::Malformed("only the Basic scheme is accepted"));
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| AccessDenied::Malformed("credentials are not base64"))?;
    let text = String::from_utf8(decoded)
        .map_err(|_| AccessDenied::Malformed("credentials are not UTF-8"))?;
    let (user, password) = text.split_once(':').ok_or(AccessDenied::Malformed(
        "credentials lack the ':' between user and password",
    ))?;
    if user.is_empty() {
        return Err(AccessDenied::Malformed("empty user name"));
    }
    Ok((user.to_string(), password.to_string()))
}

/// Checks a request's `Authorization` header: the superuser's name, or why not. Slow (bcrypt)
/// unless the login is cached: call it off the I/O workers.
pub fn check(auth: &AuthService, header: Option<&str>) -> Result<String, AccessDenied> {
    let header = header.ok_or(AccessDenied::Missing)?;
    let (user, password) = parse_basic(header)?;
    auth.check_login(&user, &password).map_err(|e| match e {
        AuthError::BadCredentials(m) => AccessDenied::BadCredentials(m),
        other => AccessDenied::BadCredentials(other.to_string()),
    })?;
    if !auth.is_superuser(&user) {
        return Err(AccessDenied::NotSuperuser(user));
    }
    Ok(user)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn basic(s: &str) -> String {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(s)
        )
    }

    #[test]
    fn basic_credentials_split_at_the_first_colon() {
        assert_eq!(
            parse_basic(&basic("cassandra:pa:ss")).unwrap(),
            ("cassandra".to_string(), "pa:ss".to_string())
        );
        assert_eq!(
            parse_basic(&basic("u:")).unwrap(),
            ("u".to_string(), String::new())
        );
        assert!(parse_basic(&basic("u:p").replace("Basic", "basic")).is_ok());
    }

    #[test]
    fn malformed_credentials_are_a_400_never_a_panic() {
        let long = "x".repeat(MAX_AUTHORIZATION_BYTES + 1);
        for bad in [
            String::new(),
            "Basic".to_string(),
            "Bearer abc".to_string(),
            "Basic !!!notbase64".to_string(),
            "Basic ////".to_string(),
            basic("nocolon"),
            basic(":password"),
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode([0xff, b':', 0xfe])
            ),
            format!("Basic {long}"),
            "Basic \u{1F600}".to_string(),
        ] {
            let err = parse_basic(&bad).unwrap_err();
            assert_eq!(err.status(), 400, "{bad:?}: {err}");
        }
    }

    #[test]
    fn the_authorization_header_is_found_case_insensitively() {
        let head = "GET /x HTTP/1.1\r\nHost: h\r\nauthorization:  Basic abc \r\n\r\n";
        assert_eq!(authorization_header(head), Some("Basic abc"));
        assert_eq!(
            authorization_header("GET /x HTTP/1.1\r\nHost: h\r\n\r\n"),
            None
        );
        // The request line is not a header, whatever it holds.
        assert_eq!(authorization_header("Authorization: x\r\n\r\n"), None);
    }

    #[test]
    fn only_a_superuser_with_the_right_password_gets_in() {
        let dir = std::env::temp_dir().join(format!("helenus-admin-access-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut config = crate::config::NodeConfig::default();
        config.authenticator = crate::config::Authenticator::Password;
        config.auth_bcrypt_gensalt_log2_rounds = 4;
        let clock = helenus_types::SystemClock::shared();
        let auth = AuthService::open(&config, &dir, clock).unwrap();
        let hash = crate::auth::hash_password("pw", 4).unwrap();
        auth.update(|store| {
            store.create_role(
                "plain",
                crate::auth::roles::RoleChanges {
                    salted_hash: Some(hash),
                    can_login: Some(true),
                    ..Default::default()
                },
            )
        })
        .unwrap();
        assert_eq!(
            check(&auth, Some(&basic("cassandra:cassandra"))).unwrap(),
            "cassandra"
        );
        assert_eq!(check(&auth, None).unwrap_err().status(), 401);
        assert_eq!(
            check(&auth, Some(&basic("cassandra:wrong")))
                .unwrap_err()
                .status(),
            401
        );
        assert_eq!(
            check(&auth, Some(&basic("nobody:x"))).unwrap_err().status(),
            401
        );
        assert_eq!(
            check(&auth, Some(&basic("plain:pw"))).unwrap_err().status(),
            403
        );
        assert_eq!(check(&auth, Some("Digest x")).unwrap_err().status(), 400);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
