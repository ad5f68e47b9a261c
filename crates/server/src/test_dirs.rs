//! Scratch directories for unit tests that keep state in files.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

/// An empty directory for the test `name` of the module `module`, fresh on every run.
pub(crate) fn fresh(module: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("helenus-{module}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
