//! Cassandra 5.0's duration and size syntax in `cassandra.yaml` (`10s`, `32MiB`, bare numbers in a
//! default unit).

const MIB: u64 = 1024 * 1024;

/// Parses a duration in Cassandra 5.0's syntax (`10000ms`, `10s`, `2m`, `1h`, `15ms`, bare number in
/// `default_unit_ms`).
pub fn parse_duration_ms(text: &str, default_unit_ms: u64) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a duration"))?;
    let mult = match unit.trim() {
        "" => default_unit_ms as f64,
        "ms" | "milliseconds" => 1.0,
        "us" | "µs" | "microseconds" => 0.001,
        "s" | "seconds" => 1000.0,
        "m" | "minutes" => 60_000.0,
        "h" | "hours" => 3_600_000.0,
        "d" | "days" => 86_400_000.0,
        other => return Err(format!("unknown duration unit '{other}' in '{text}'")),
    };
    Ok((n * mult) as u64)
}

/// Parses a size in Cassandra 5.0's syntax (`32MiB`, `1GiB`, `512KiB`, `100B`, bare number in
/// `default_unit_bytes`). A trailing `/s` (rates) is accepted and ignored.
pub fn parse_size_bytes(text: &str, default_unit_bytes: u64) -> Result<u64, String> {
    let t = text.trim().trim_end_matches("/s");
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("'{text}' is not a size"))?;
    let mult = match unit.trim() {
        "" => default_unit_bytes,
        "B" | "bytes" => 1,
        "KiB" | "KB" | "k" => 1024,
        "MiB" | "MB" | "m" => MIB,
        "GiB" | "GB" | "g" => 1024 * MIB,
        "TiB" => 1024 * 1024 * MIB,
        other => return Err(format!("unknown size unit '{other}' in '{text}'")),
    };
    Ok((n * mult as f64) as u64)
}
