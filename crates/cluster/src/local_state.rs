//! What a node must remember about itself across restarts (Cassandra keeps it in `system.local`):
//! its host id, its tokens — never reassigned once chosen, or the data on disk would belong to
//! other ranges — and its last gossip generation, which must grow on every start so peers drop
//! what they knew of the previous incarnation.
//!
//! Stored as a small text file, written to a temporary name, synced and renamed.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use uuid::Uuid;

use crate::locator::{NodeId, Token};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalClusterState {
    pub host_id: NodeId,
    pub tokens: Vec<Token>,
    pub generation: i64,
}

/// Why the saved state cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LocalStateError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}: line {line:?} is not understood")]
    Corrupt { path: PathBuf, line: String },
}

impl LocalClusterState {
    /// Loads the saved state, or creates it with a new host id and the tokens `allocate` picks.
    /// Either way the generation moves past both the saved one and `now_secs`, and is saved.
    pub fn load_or_create(
        path: &Path,
        now_secs: i64,
        allocate: impl FnOnce(NodeId) -> Vec<Token>,
    ) -> Result<LocalClusterState, LocalStateError> {
        let mut state = match fs::read_to_string(path) {
            Ok(text) => parse(path, &text)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let host_id = NodeId(Uuid::new_v4());
                LocalClusterState {
                    host_id,
                    tokens: allocate(host_id),
                    generation: 0,
                }
            }
            Err(source) => {
                return Err(LocalStateError::Io {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        state.generation = now_secs.max(state.generation + 1);
        state.save(path)?;
        Ok(state)
    }

    pub fn save(&self, path: &Path) -> Result<(), LocalStateError> {
        let io_err = |source| LocalStateError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(io_err)?;
        }
        let tokens: Vec<String> = self.tokens.iter().map(i64::to_string).collect();
        let text = format!(
            "host_id={}\ntokens={}\ngeneration={}\n",
            self.host_id.0,
            tokens.join(","),
            self.generation
        );
        let tmp = path.with_extension("tmp");
        let mut f = fs::File::create(&tmp).map_err(io_err)?;
        f.write_all(text.as_bytes()).map_err(io_err)?;
        f.sync_all().map_err(io_err)?;
        fs::rename(&tmp, path).map_err(io_err)
    }
}

fn parse(path: &Path, text: &str) -> Result<LocalClusterState, LocalStateError> {
    let corrupt = |line: &str| LocalStateError::Corrupt {
        path: path.to_path_buf(),
        line: line.to_string(),
    };
    let (mut host_id, mut tokens, mut generation) = (None, None, 0);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (key, value) = line.split_once('=').ok_or_else(|| corrupt(line))?;
        match key {
            "host_id" => host_id = Some(NodeId(Uuid::parse_str(value).map_err(|_| corrupt(line))?)),
            "tokens" => {
                tokens = Some(
                    value
                        .split(',')
                        .filter(|t| !t.is_empty())
                        .map(|t| t.parse::<Token>().map_err(|_| corrupt(line)))
                        .collect::<Result<Vec<_>, _>>()?,
                )
            }
            "generation" => generation = value.parse().map_err(|_| corrupt(line))?,
            _ => return Err(corrupt(line)),
        }
    }
    match (host_id, tokens) {
        (Some(host_id), Some(tokens)) => Ok(LocalClusterState {
            host_id,
            tokens,
            generation,
        }),
        _ => Err(corrupt("(host_id or tokens missing)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("helenus-local-state-{name}-{}", std::process::id()))
    }

    #[test]
    fn tokens_and_host_id_survive_restarts_and_the_generation_always_grows() {
        let path = temp("restart");
        let _ = fs::remove_file(&path);
        let first = LocalClusterState::load_or_create(&path, 1000, |_| vec![-5, 7]).unwrap();
        assert_eq!(first.tokens, vec![-5, 7]);
        assert_eq!(first.generation, 1000);
        let second = LocalClusterState::load_or_create(&path, 900, |_| {
            panic!("tokens are never reassigned")
        })
        .unwrap();
        assert_eq!(second.host_id, first.host_id);
        assert_eq!(second.tokens, first.tokens);
        assert_eq!(
            second.generation, 1001,
            "a clock behind the last start still moves it forward"
        );
        let third = LocalClusterState::load_or_create(&path, 5000, |_| vec![]).unwrap();
        assert_eq!(third.generation, 5000);
        let _ = fs::remove_file(&path);
    }

    #[test]
    fn a_damaged_file_is_an_error_not_new_tokens() {
        let path = temp("damaged");
        fs::write(&path, "host_id=not-a-uuid\ntokens=1\n").unwrap();
        let err = LocalClusterState::load_or_create(&path, 1, |_| vec![9]).unwrap_err();
        assert!(matches!(err, LocalStateError::Corrupt { .. }), "{err}");
        let _ = fs::remove_file(&path);
    }
}
