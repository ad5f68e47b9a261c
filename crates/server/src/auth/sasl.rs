//! SASL PLAIN (RFC 4616), the only mechanism of Cassandra's PasswordAuthenticator:
//! `[authzid] NUL authcid NUL passwd` in one AUTH_RESPONSE token.

/// What a client sent in its AUTH_RESPONSE, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainCredentials {
    pub username: String,
    pub password: String,
}

/// Why a token is not a SASL PLAIN message; the texts are Cassandra's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslError {
    #[error("Authentication ID must not be null")]
    NoUsername,
    #[error("Password must not be null")]
    NoPassword,
}

/// Decodes one PLAIN token as Cassandra does: the password follows the last NUL and the
/// username the NUL before it; an authorization id before that is ignored. Invalid UTF-8 is
/// replaced rather than refused, so that such a name simply fails to match any role.
pub fn decode_plain(token: &[u8]) -> Result<PlainCredentials, SaslError> {
    let mut parts = token.rsplitn(3, |b| *b == 0);
    let password = parts.next().unwrap_or_default();
    let username = parts.next().ok_or(SaslError::NoPassword)?;
    // Without a second NUL there is no authcid field at all.
    if parts.next().is_none() {
        return Err(SaslError::NoUsername);
    }
    if username.is_empty() {
        return Err(SaslError::NoUsername);
    }
    if password.is_empty() {
        return Err(SaslError::NoPassword);
    }
    Ok(PlainCredentials {
        username: String::from_utf8_lossy(username).into_owned(),
        password: String::from_utf8_lossy(password).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn username_and_password_follow_the_last_two_nuls() {
        let c = decode_plain(b"\0cassandra\0secret").unwrap();
        assert_eq!(c.username, "cassandra");
        assert_eq!(c.password, "secret");
        let c = decode_plain(b"admin\0alice\0pw").unwrap();
        assert_eq!((c.username.as_str(), c.password.as_str()), ("alice", "pw"));
    }

    #[test]
    fn malformed_tokens_are_errors_not_panics() {
        assert_eq!(decode_plain(b""), Err(SaslError::NoPassword));
        assert_eq!(decode_plain(b"nonul"), Err(SaslError::NoPassword));
        assert_eq!(decode_plain(b"\0pw"), Err(SaslError::NoUsername));
        assert_eq!(decode_plain(b"\0\0pw"), Err(SaslError::NoUsername));
        assert_eq!(decode_plain(b"\0user\0"), Err(SaslError::NoPassword));
        assert_eq!(decode_plain(b"\0\0"), Err(SaslError::NoUsername));
        let c = decode_plain(b"\0\xff\xfe\0\xff").unwrap();
        assert_eq!(c.username, "\u{fffd}\u{fffd}");
    }

    #[test]
    fn every_short_byte_string_decodes_or_errs() {
        for a in 0u8..=3 {
            for b in 0u8..=3 {
                for c in 0u8..=3 {
                    let _ = decode_plain(&[a, b, c]);
                    let _ = decode_plain(&[a, 0, b, 0, c]);
                }
            }
        }
    }
}
