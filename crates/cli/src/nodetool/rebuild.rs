//! `rebuild [-ks KEYSPACE] [SOURCE_DC]`: like Cassandra's nodetool, starts the rebuild on the
//! node and returns once it has streamed every range it replicates, or fails with the reason.
//! `-ks` names the keyspaces to rebuild (comma-separated, as Cassandra's); without it, all.

use super::http::enc;
use super::{Node, NodetoolError};

pub fn run(node: &Node, args: &[String]) -> Result<(), NodetoolError> {
    let mut source_dc = None;
    let mut keyspaces = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--" => {}
            "-ks" | "--keyspace" => {
                let ks = it
                    .next()
                    .ok_or_else(|| NodetoolError::Usage(format!("{a} needs a keyspace")))?;
                keyspaces = Some(ks.clone());
            }
            dc if source_dc.is_none() && !dc.starts_with('-') => source_dc = Some(dc.to_string()),
            other => {
                return Err(NodetoolError::Usage(format!(
                    "usage: nodetool rebuild [-ks KEYSPACE] [SOURCE_DC] (unexpected '{other}')"
                )))
            }
        }
    }
    let mut query = Vec::new();
    if let Some(dc) = &source_dc {
        query.push(format!("source_dc={}", enc(dc)));
    }
    if let Some(ks) = &keyspaces {
        query.push(format!("keyspace={}", enc(ks)));
    }
    let path = format!("/storage_service/rebuild?{}", query.join("&"));
    node.request("POST", &path)?;
    loop {
        std::thread::sleep(std::time::Duration::from_millis(250));
        let status = node.request_json("GET", "/storage_service/rebuild_status")?;
        let message = status["message"].as_str().unwrap_or_default().to_string();
        match status["state"].as_str() {
            Some("running") => {}
            Some("failed") => return Err(NodetoolError::Refused(message)),
            // Done (or a node restarted meanwhile, which forgets it): nothing more to wait for.
            _ => return Ok(()),
        }
    }
}
