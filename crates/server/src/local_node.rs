//! This node's identity: host id and tokens, chosen once and kept in the data directory so that a
//! restarted node is the same node to drivers (they key their pools and token maps by host id).

use serde::{Deserialize, Serialize};
use std::path::Path;
use uuid::Uuid;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LocalIdentity {
    pub host_id: Uuid,
    /// Sorted vnode tokens.
    pub tokens: Vec<i64>,
    pub cluster_name: String,
    /// False while a node joining a ring with data has not yet received its ranges (it then
    /// resumes streaming on restart instead of claiming data it lacks). Files written before
    /// this field existed belong to nodes that never bootstrapped: they own what they hold.
    #[serde(default = "owns_its_data")]
    pub bootstrapped: bool,
    /// Set once this node has handed its ranges over and left the ring: started again with
    /// this data directory it would claim ranges others now own, so it refuses to start.
    #[serde(default)]
    pub decommissioned: bool,
    /// The host id of the dead node whose tokens this node took (`replace_address_first_boot`)
    /// while it has not yet received their ranges: a restart resumes the replacement.
    #[serde(default)]
    pub replacing: Option<Uuid>,
}

fn owns_its_data() -> bool {
    true
}

impl LocalIdentity {
    /// Loads the identity from `dir/local.json`, or creates one with `num_tokens` tokens spread evenly
    /// over the ring from a random offset (a single node owns the whole ring either way; even spacing
    /// keeps later token allocation balanced).
    pub fn load_or_create(
        dir: &Path,
        num_tokens: usize,
        cluster_name: &str,
    ) -> std::io::Result<LocalIdentity> {
        if let Some(id) = LocalIdentity::load(dir) {
            return Ok(id);
        }
        let host_id = Uuid::new_v4();
        let id = LocalIdentity {
            host_id,
            tokens: LocalIdentity::spread_tokens(host_id, num_tokens),
            cluster_name: cluster_name.to_string(),
            bootstrapped: true,
            decommissioned: false,
            replacing: None,
        };
        id.save(dir)?;
        Ok(id)
    }

    /// The identity saved in `dir`, if there is a usable one.
    pub fn load(dir: &Path) -> Option<LocalIdentity> {
        let bytes = std::fs::read(dir.join("local.json")).ok()?;
        serde_json::from_slice::<LocalIdentity>(&bytes)
            .ok()
            .filter(|id| !id.tokens.is_empty())
    }

    /// `num_tokens` tokens evenly spaced from an offset the host id picks.
    pub fn spread_tokens(host_id: Uuid, num_tokens: usize) -> Vec<i64> {
        let n = num_tokens.max(1) as i128;
        let offset = (u64::from_le_bytes(host_id.as_bytes()[..8].try_into().unwrap_or([0; 8]))
            as i128)
            % (u64::MAX as i128 / n);
        let span = u64::MAX as i128 / n;
        let mut tokens: Vec<i64> = (0..n)
            .map(|i| (i64::MIN as i128 + offset + i * span) as i64)
            .collect();
        tokens.sort_unstable();
        tokens.dedup();
        tokens
    }

    /// Writes the identity to `dir/local.json` atomically.
    pub fn save(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join("local.json.tmp");
        std::fs::write(
            &tmp,
            serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?,
        )?;
        std::fs::rename(&tmp, dir.join("local.json"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_survives_restart() {
        let dir = std::env::temp_dir().join(format!("helenus-id-{}", std::process::id()));
        let a = LocalIdentity::load_or_create(&dir, 16, "c").unwrap();
        let b = LocalIdentity::load_or_create(&dir, 16, "c").unwrap();
        assert_eq!(a.host_id, b.host_id);
        assert_eq!(a.tokens, b.tokens);
        assert_eq!(a.tokens.len(), 16);
        assert!(a.tokens.windows(2).all(|w| w[0] < w[1]));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
