//! The one check every name must pass before it becomes a component of a filesystem path
//! (snapshot tags, keyspace and table directory names, export directories).
//!
//! Names arrive from the network (the admin API's `tag=`, CQL identifiers) and a name such as
//! `/etc`, `..` or `../../t-<id>` turned into a path would let a caller read, write or delete
//! outside the data directory. Building paths only from a `PathName` makes that impossible by
//! construction: a `PathName` is a single, non-empty path component that is neither `.` nor `..`.

use crate::error::StorageError;
use std::fmt;

/// Longest name accepted; Linux allows 255 bytes per path component.
pub const MAX_PATH_NAME_BYTES: usize = 255;

/// A name that is safe to use as one component of a path under a directory Helenus owns:
/// ASCII letters, digits, `_`, `-` and `.`, not starting with `.` (which also rules out `.` and
/// `..`), at most [`MAX_PATH_NAME_BYTES`] long.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PathName(String);

impl PathName {
    /// Validates `name`; `what` says what the name is for ("snapshot tag", "keyspace name") so the
    /// error tells the caller which input was refused.
    pub fn new(what: &str, name: &str) -> Result<PathName, StorageError> {
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        let valid = !name.is_empty()
            && name.len() <= MAX_PATH_NAME_BYTES
            && !name.starts_with('.')
            && name.chars().all(allowed);
        if valid {
            Ok(PathName(name.to_string()))
        } else {
            Err(StorageError::InvalidRequest(format!(
                "invalid {what} {name:?}: must be 1 to {MAX_PATH_NAME_BYTES} characters of \
                 letters, digits, '_', '-' or '.', not starting with '.'"
            )))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl AsRef<std::path::Path> for PathName {
    fn as_ref(&self) -> &std::path::Path {
        std::path::Path::new(&self.0)
    }
}

impl fmt::Display for PathName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::PathName;

    #[test]
    fn names_that_escape_the_directory_are_refused() {
        for bad in [
            "",
            ".",
            "..",
            "../../t-0011",
            "/some/abs/dir",
            "a/b",
            ".hidden",
            "a\\b",
            "a\0b",
            "ünï",
            &"x".repeat(256),
        ] {
            assert!(PathName::new("snapshot tag", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ordinary_names_are_accepted() {
        for good in [
            "1732480000000",
            "before-upgrade",
            "ks_1",
            "v1.2",
            &"x".repeat(255),
        ] {
            assert_eq!(PathName::new("tag", good).unwrap().as_str(), good);
        }
    }
}
