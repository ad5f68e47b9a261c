//! `bootstrap resume`: like Cassandra's nodetool, resumes a bootstrap that failed (streaming
//! only the ranges not yet received) and returns once the node is NORMAL, or fails with the
//! reason, printing a line each time more ranges have arrived. A node with no failed bootstrap
//! answers "Node is already bootstrapped.".

use super::{Node, NodetoolError};

pub fn run(node: &Node, args: &[String]) -> Result<(), NodetoolError> {
    let args: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| *a != "--")
        .collect();
    if args != ["resume"] {
        return Err(NodetoolError::Usage(
            "usage: nodetool bootstrap resume".to_string(),
        ));
    }
    let answer = node.request_json("POST", "/storage_service/bootstrap/resume")?;
    if answer["resuming"].as_bool() != Some(true) {
        println!("Node is already bootstrapped.");
        return Ok(());
    }
    println!("Resuming bootstrap");
    let mut reported = None;
    loop {
        std::thread::sleep(std::time::Duration::from_millis(250));
        let status = node.request_json("GET", "/storage_service/bootstrap_status")?;
        let message = status["message"].as_str().unwrap_or_default().to_string();
        match status["state"].as_str() {
            Some("running") => {
                let received = status["ranges_received"].as_u64();
                if let Some(n) = received.filter(|n| reported != Some(*n)) {
                    println!("Bootstrap progress: {n} ranges received");
                    reported = Some(n);
                }
            }
            Some("failed") => return Err(NodetoolError::Refused(message)),
            _ => {
                println!("{message}");
                return Ok(());
            }
        }
    }
}
