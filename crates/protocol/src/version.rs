//! The protocol versions spoken (v3-v5) and what a client with another version is told. A leaf:
//! the decoder's errors, the codecs and the frames all refer to it.

/// Lowest protocol version spoken.
pub const MIN_SUPPORTED_VERSION: u8 = 3;
/// Highest protocol version spoken (v5 is final since Cassandra 4.0).
pub const MAX_SUPPORTED_VERSION: u8 = 5;

/// The message Cassandra sends for a version it does not speak (`ProtocolVersion.invalidVersionMessage`).
pub fn invalid_version_message(version: u8) -> String {
    format!(
        "Invalid or unsupported protocol version ({version}); supported versions are (3/v3, 4/v4, 5/v5)"
    )
}

/// Whether `version` (without the direction bit) is one we speak.
pub fn is_supported_version(version: u8) -> bool {
    (MIN_SUPPORTED_VERSION..=MAX_SUPPORTED_VERSION).contains(&version)
}

/// The version an "unsupported version" error is sent with: Cassandra answers an old v1/v2
/// client in its own version and anything else with its highest version, which is what drivers
/// read to step down.
pub fn version_for_unsupported(version: u8) -> u8 {
    if version == 1 || version == 2 {
        version
    } else {
        MAX_SUPPORTED_VERSION
    }
}
