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
    let written = &rate["written_mib_per_s"];
    let recent = ["1minute", "5minute", "15minute"].map(|w| written[w].as_f64().unwrap_or(0.0));
    println!("{}", describe(mib, precise, recent));
    Ok(())
}

/// What `getcompactionthroughput` prints: the cap, then what compactions wrote over the last
/// 1, 5 and 15 minutes.
fn describe(mib_per_s: u64, precise: bool, [one, five, fifteen]: [f64; 3]) -> String {
    let cap = if precise {
        format!("Current compaction throughput: {mib_per_s}.0 MiB/s")
    } else {
        format!("Current compaction throughput: {mib_per_s} MB/s")
    };
    format!(
        "{cap}\n\
         Current compaction throughput (1 minute): {one:.2} MiB/s\n\
         Current compaction throughput (5 minute): {five:.2} MiB/s\n\
         Current compaction throughput (15 minute): {fifteen:.2} MiB/s"
    )
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn the_cap_prints_as_cassandras_nodetool_prints_it() {
        let idle = [0.0; 3];
        let first = |s: String| s.lines().next().unwrap_or_default().to_string();
        assert_eq!(
            first(describe(64, false, idle)),
            "Current compaction throughput: 64 MB/s"
        );
        assert_eq!(
            first(describe(0, false, idle)),
            "Current compaction throughput: 0 MB/s"
        );
        assert_eq!(
            first(describe(16, true, idle)),
            "Current compaction throughput: 16.0 MiB/s"
        );
        let recent: Vec<String> = describe(64, false, [12.345, 3.0, 0.5])
            .lines()
            .skip(1)
            .map(str::to_string)
            .collect();
        assert_eq!(
            recent,
            [
                "Current compaction throughput (1 minute): 12.35 MiB/s",
                "Current compaction throughput (5 minute): 3.00 MiB/s",
                "Current compaction throughput (15 minute): 0.50 MiB/s",
            ]
        );
    }
}
