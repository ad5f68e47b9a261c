//! `setstreamthroughput` and `getstreamthroughput`, with Cassandra 5.0's units and output: the
//! plain value is in megabits per second (125,000 bytes), `-m` in MiB/s, `-e` sets or prints the
//! entire-SSTable rate in MiB/s, `-d` prints the megabits exactly; 0 means unthrottled.

use super::{Node, NodetoolError};

const MIB: f64 = 1024.0 * 1024.0;
const BYTES_PER_MEGABIT: f64 = 125_000.0;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Unit {
    Megabits,
    MiB,
    EntireSSTableMiB,
    PreciseMegabits,
}

pub fn run(node: &Node, cmd: &str, args: &[String]) -> Result<(), NodetoolError> {
    let usage = |m: &str| NodetoolError::Usage(m.to_string());
    let mut unit = Unit::Megabits;
    let mut value = None;
    for a in args {
        let flag = match a.as_str() {
            "-e" | "--entire-sstable-throughput" => Some(Unit::EntireSSTableMiB),
            "-m" | "--mib" => Some(Unit::MiB),
            "-d" | "--precise-mbit" if cmd == "getstreamthroughput" => Some(Unit::PreciseMegabits),
            _ => None,
        };
        match flag {
            Some(_) if unit != Unit::Megabits => {
                return Err(usage("You cannot use more than one flag with this command"))
            }
            Some(f) => unit = f,
            None => {
                value = Some(
                    a.parse::<u64>()
                        .map_err(|_| usage(&format!("{cmd}: '{a}' is not a whole number")))?,
                )
            }
        }
    }
    if cmd == "setstreamthroughput" {
        let value =
            value.ok_or_else(|| usage("usage: nodetool setstreamthroughput [-e | -m] <value>"))?;
        return set(node, unit, value);
    }
    let rates = node.request_json("GET", "/storage_service/stream_throughput")?;
    let bytes = rates["bytes_per_s"].as_u64().unwrap_or(0) as f64;
    let entire = rates["entire_sstable_bytes_per_s"].as_u64().unwrap_or(0) as f64;
    println!("{}", describe(unit, bytes, entire)?);
    Ok(())
}

fn set(node: &Node, unit: Unit, value: u64) -> Result<(), NodetoolError> {
    let (bytes_per_s, entire) = match unit {
        Unit::Megabits | Unit::PreciseMegabits => (value as f64 * BYTES_PER_MEGABIT, false),
        Unit::MiB => (value as f64 * MIB, false),
        Unit::EntireSSTableMiB => (value as f64 * MIB, true),
    };
    node.request(
        "POST",
        &format!(
            "/storage_service/stream_throughput?bytes_per_s={}&entire_sstable={entire}",
            bytes_per_s as u64
        ),
    )
    .map(|_| ())
}

/// The line `getstreamthroughput` prints, as Cassandra 5.0's does.
fn describe(
    unit: Unit,
    bytes_per_s: f64,
    entire_bytes_per_s: f64,
) -> Result<String, NodetoolError> {
    let or_unlimited = |v: f64, suffix: &str| {
        if v > 0.0 {
            format!("{} {suffix}", java_double(v))
        } else {
            "unlimited".to_string()
        }
    };
    Ok(match unit {
        Unit::EntireSSTableMiB => format!(
            "Current entire SSTable stream throughput: {}",
            or_unlimited(entire_bytes_per_s / MIB, "MiB/s")
        ),
        Unit::MiB => format!(
            "Current stream throughput: {}",
            or_unlimited(bytes_per_s / MIB, "MiB/s")
        ),
        Unit::PreciseMegabits => format!(
            "Current stream throughput: {}",
            or_unlimited(bytes_per_s / BYTES_PER_MEGABIT, "Mb/s")
        ),
        Unit::Megabits => {
            let megabits = bytes_per_s / BYTES_PER_MEGABIT;
            if megabits <= 0.0 {
                "Current stream throughput: unlimited".to_string()
            } else if megabits.fract() == 0.0 {
                format!("Current stream throughput: {} Mb/s", megabits as u64)
            } else {
                // Cassandra refuses to round a rate set in MiB/s (24 MiB/s is 201.33 Mb/s).
                return Err(NodetoolError::Refused(
                    "Use the -d flag to quiet this error and get the exact throughput in megabits/s"
                        .into(),
                ));
            }
        }
    })
}

/// A double as Java prints it: `24.0`, `201.326592`.
fn java_double(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e7 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn rates_print_in_cassandras_units() {
        let mib24 = 24.0 * MIB;
        assert_eq!(
            describe(Unit::MiB, mib24, mib24).unwrap(),
            "Current stream throughput: 24.0 MiB/s"
        );
        assert_eq!(
            describe(Unit::PreciseMegabits, mib24, 0.0).unwrap(),
            "Current stream throughput: 201.326592 Mb/s"
        );
        assert!(describe(Unit::Megabits, mib24, 0.0).is_err());
        assert_eq!(
            describe(Unit::Megabits, 200.0 * BYTES_PER_MEGABIT, 0.0).unwrap(),
            "Current stream throughput: 200 Mb/s"
        );
        assert_eq!(
            describe(Unit::EntireSSTableMiB, 0.0, 0.0).unwrap(),
            "Current entire SSTable stream throughput: unlimited"
        );
    }
}
