//! `export KS TABLE DIR [--format parquet]`: the node writes a point-in-time copy of the table
//! under DIR (on the node's machine; a relative DIR is taken from where nodetool runs, which is
//! the node's machine too when nodetool talks to a local node), one Parquet file per primary
//! token range; this prints each file with its rows and bytes, then the totals.

use super::http::enc;
use super::{Node, NodetoolError};
use serde_json::Value;

const USAGE: &str = "usage: nodetool export <keyspace> <table> <dir> [--format parquet]";

pub fn run(node: &Node, args: &[String]) -> Result<(), NodetoolError> {
    let mut format = "parquet".to_string();
    let mut positional = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--format" | "-f" => {
                format = it
                    .next()
                    .ok_or_else(|| NodetoolError::Usage(format!("{a} needs a format\n{USAGE}")))?
                    .clone();
            }
            flag if flag.starts_with('-') => {
                return Err(NodetoolError::Usage(format!(
                    "unexpected '{flag}'\n{USAGE}"
                )))
            }
            _ => positional.push(a.as_str()),
        }
    }
    let [keyspace, table, dir] = positional.as_slice() else {
        return Err(NodetoolError::Usage(USAGE.to_string()));
    };
    let dir = std::path::absolute(dir)?;
    let path = format!(
        "/storage_service/export?ks={}&cf={}&dir={}&format={}",
        enc(keyspace),
        enc(table),
        enc(&dir.to_string_lossy()),
        enc(&format)
    );
    let done = node.request_json("POST", &path)?;
    print!("{}", report(&done));
    Ok(())
}

/// The answer as lines: a file per line (range, rows, bytes, path), then the totals.
fn report(done: &Value) -> String {
    let mut out = String::new();
    let files = done["files"].as_array().cloned().unwrap_or_default();
    out.push_str(&format!(
        "{:<45} {:>12} {:>14}  {}\n",
        "Token range", "Rows", "Bytes", "File"
    ));
    for f in &files {
        let range = format!("({}, {}]", f["token_start"], f["token_end"]);
        out.push_str(&format!(
            "{:<45} {:>12} {:>14}  {}\n",
            range,
            // As numbers: a JSON value's Display ignores the column width.
            f["rows"].as_u64().unwrap_or_default(),
            f["bytes"].as_u64().unwrap_or_default(),
            f["path"].as_str().unwrap_or_default()
        ));
    }
    out.push_str(&format!(
        "Exported {}.{}: {} files, {} rows, {} bytes in {} ms\n",
        done["keyspace"].as_str().unwrap_or_default(),
        done["table"].as_str().unwrap_or_default(),
        files.len(),
        done["rows"],
        done["bytes"],
        done["elapsed_ms"]
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_lists_each_file_then_totals() {
        let done = serde_json::json!({
            "keyspace": "ks", "table": "t", "rows": 3, "bytes": 900, "elapsed_ms": 12,
            "files": [
                {"path": "/d/ks.t.1_5.parquet", "token_start": 1, "token_end": 5, "rows": 3, "bytes": 500},
                {"path": "/d/ks.t.5_1.parquet", "token_start": 5, "token_end": 1, "rows": 0, "bytes": 400},
            ]
        });
        let text = report(&done);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[1].starts_with("(1, 5]"), "{}", lines[1]);
        assert!(lines[1].ends_with("/d/ks.t.1_5.parquet"));
        assert!(
            lines[1].contains(&format!("{:>12} {:>14}", 3, 500)),
            "{}",
            lines[1]
        );
        assert_eq!(
            lines[3],
            "Exported ks.t: 2 files, 3 rows, 900 bytes in 12 ms"
        );
    }
}
