//! `setcompactionthroughput N` (MiB/s, 0: unthrottled) and `getcompactionthroughput [-d]`, in
//! Cassandra's words: the rounded value in "MB/s", `-d` the exact one in MiB/s.

use super::{Node, NodetoolError};

pub fn run(node: &Node, cmd: &str, args: &[String]) -> Result<(), NodetoolError> {
    if cmd == "setcompactionthroughput" {
        let [value] = args else {
            return Err(NodetoolError::Usage(
                "usage: nodetool setcompactionthroughput <value_in_mb>".into(),
            ));
        };
        let mib: u64 = value
            .parse()
            .map_err(|_| NodetoolError::Usage(format!("{cmd}: '{value}' is not a whole number")))?;
        node.request(
            "POST",
            &format!("/storage_service/compaction_throughput?mib_per_s={mib}"),
        )?;
        return Ok(());
    }
    let precise = args.iter().any(|a| a == "-d" || a == "--precise-mib");
    let rate = node.request_json("GET", "/storage_service/compaction_throughput")?;
    let mib = rate["mib_per_s"].as_u64().unwrap_or(0);
    println!("{}", describe(mib, precise));
    Ok(())
}

/// The line `getcompactionthroughput` prints: only the cap, as Cassandra 5.0.9's nodetool
/// (recorded on this machine; its later versions add the last minutes' rates, which Helenus
/// exposes in `/metrics` and the admin API instead, so scripts reading this line keep working).
fn describe(mib_per_s: u64, precise: bool) -> String {
    if precise {
        format!("Current compaction throughput: {mib_per_s}.0 MiB/s")
    } else {
        format!("Current compaction throughput: {mib_per_s} MB/s")
    }
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn the_cap_prints_as_cassandras_nodetool_prints_it() {
        assert_eq!(
            describe(64, false),
            "Current compaction throughput: 64 MB/s"
        );
        assert_eq!(describe(0, false), "Current compaction throughput: 0 MB/s");
        assert_eq!(
            describe(16, true),
            "Current compaction throughput: 16.0 MiB/s"
        );
    }
}
