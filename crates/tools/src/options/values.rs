//! Values inside options: counts, durations, rates, ranges and distributions.

use std::time::Duration;

use super::{bad, OptionError};
use crate::dist::DistSpec;

/// A count with an optional k/m/b suffix (`1M` = 1,000,000, as cassandra-stress accepts).
pub fn parse_count(option: &str, value: &str) -> Result<u64, OptionError> {
    let v = value.trim();
    let (digits, mult) = match v.char_indices().last() {
        Some((i, c)) if c.eq_ignore_ascii_case(&'k') => (&v[..i], 1_000),
        Some((i, c)) if c.eq_ignore_ascii_case(&'m') => (&v[..i], 1_000_000),
        Some((i, c)) if c.eq_ignore_ascii_case(&'b') => (&v[..i], 1_000_000_000),
        _ => (v, 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| bad(option, value, "a whole number, optionally with k, m or b"))
}

/// `30s`, `5m`, `1h`, `250ms`, or plain seconds.
pub fn parse_duration(option: &str, value: &str) -> Result<Duration, OptionError> {
    let v = value.trim();
    let err = || bad(option, value, "a duration like 30s, 5m, 1h or 250ms");
    let (num, scale_ms) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1e3)
    } else if let Some(n) = v.strip_suffix('m') {
        (n, 60e3)
    } else if let Some(n) = v.strip_suffix('h') {
        (n, 3600e3)
    } else {
        (v, 1e3)
    };
    let n: f64 = num.parse().map_err(|_| err())?;
    if !n.is_finite() || n < 0.0 || n * scale_ms > 1e12 {
        return Err(err());
    }
    Ok(Duration::from_secs_f64(n * scale_ms / 1e3))
}

/// `1000/s`, `1000` or `2k/s`.
pub fn parse_rate(option: &str, value: &str) -> Result<f64, OptionError> {
    let v = value.trim();
    let v = v.strip_suffix("/s").unwrap_or(v);
    let rate = parse_count(option, v)? as f64;
    if rate <= 0.0 {
        return Err(bad(option, value, "a positive rate like 5000/s"));
    }
    Ok(rate)
}

pub(super) fn parse_range(option: &str, value: &str) -> Result<(u64, u64), OptionError> {
    let (a, b) = value
        .split_once("..")
        .ok_or_else(|| bad(option, value, "a range MIN..MAX"))?;
    let min = parse_count(option, a)?;
    let max = parse_count(option, b)?;
    if min > max {
        return Err(bad(option, value, "a range MIN..MAX with MIN <= MAX"));
    }
    Ok((min, max))
}

/// `UNIFORM(1..N)`, `GAUSSIAN(1..N,mean,stdev)`, `GAUSSIAN(1..N,stdvrng)`, `SEQ(1..N)`, `FIXED(V)`.
pub fn parse_dist(option: &str, value: &str) -> Result<DistSpec, OptionError> {
    const EXPECTED: &str = "UNIFORM(MIN..MAX), GAUSSIAN(MIN..MAX,MEAN,STDEV), GAUSSIAN(MIN..MAX,STDVRNG), SEQ(MIN..MAX) or FIXED(V)";
    let v = value.trim().trim_start_matches('~');
    let open = v.find('(').ok_or_else(|| bad(option, value, EXPECTED))?;
    let name = v[..open].to_ascii_uppercase();
    let inner = v[open + 1..]
        .strip_suffix(')')
        .ok_or_else(|| bad(option, value, EXPECTED))?;
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    match (name.as_str(), parts.as_slice()) {
        ("FIXED", [n]) => Ok(DistSpec::Fixed(parse_count(option, n)?)),
        ("UNIFORM", [r]) => {
            let (min, max) = parse_range(option, r)?;
            Ok(DistSpec::Uniform { min, max })
        }
        ("SEQ", [r]) => {
            let (min, max) = parse_range(option, r)?;
            Ok(DistSpec::Seq { min, max })
        }
        ("GAUSSIAN" | "NORMAL" | "GAUSS", [r, rest @ ..]) => {
            let (min, max) = parse_range(option, r)?;
            let num = |s: &str| -> Result<f64, OptionError> {
                s.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x > 0.0)
                    .ok_or_else(|| bad(option, value, EXPECTED))
            };
            let (mean, stdev) = match rest {
                // cassandra-stress's default: mean in the middle, 3 standard deviations to each end.
                [] => ((min as f64 + max as f64) / 2.0, (max - min) as f64 / 6.0),
                [stdvrng] => {
                    let mean = (min as f64 + max as f64) / 2.0;
                    (mean, (mean - min as f64) / num(stdvrng)?)
                }
                [mean, stdev] => (num(mean)?, num(stdev)?),
                _ => return Err(bad(option, value, EXPECTED)),
            };
            Ok(DistSpec::Gaussian {
                min,
                max,
                mean,
                stdev: stdev.max(f64::MIN_POSITIVE),
            })
        }
        _ => Err(bad(option, value, EXPECTED)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pop_accepts_seq_and_all_distributions() {
        assert_eq!(
            parse_dist("d", "SEQ(1..10)").unwrap(),
            DistSpec::Seq { min: 1, max: 10 }
        );
        assert_eq!(
            parse_dist("d", "GAUSSIAN(1..100,50,10)").unwrap(),
            DistSpec::Gaussian {
                min: 1,
                max: 100,
                mean: 50.0,
                stdev: 10.0
            }
        );
        match parse_dist("d", "gaussian(0..100,5)").unwrap() {
            DistSpec::Gaussian { mean, stdev, .. } => {
                assert_eq!(mean, 50.0);
                assert_eq!(stdev, 10.0);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn durations_and_counts_accept_units() {
        assert_eq!(
            parse_duration("d", "250ms").unwrap(),
            Duration::from_millis(250)
        );
        assert_eq!(parse_duration("d", "2m").unwrap(), Duration::from_secs(120));
        assert_eq!(
            parse_duration("d", "1h").unwrap(),
            Duration::from_secs(3600)
        );
        assert_eq!(parse_duration("d", "7").unwrap(), Duration::from_secs(7));
        assert_eq!(parse_count("n", "3k").unwrap(), 3000);
        assert_eq!(parse_rate("r", "2k/s").unwrap(), 2000.0);
    }
}
