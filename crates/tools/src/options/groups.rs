//! The option groups after the command (`-pop`, `-rate`, `-node`, `-port`, `-schema`, `-col`,
//! `-log`, `-json`, `-hdr`, `-mode`), one parser each.

use std::path::PathBuf;

use super::values::parse_range;
use super::{
    bad, call_args, parse_dist, parse_duration, parse_pairs, parse_rate, split_kv, OptionError,
    RateMode, StressOptions,
};
use crate::dist::DistSpec;

pub(super) fn parse_groups(opts: &mut StressOptions, args: &[String]) -> Result<(), OptionError> {
    let mut i = 0;
    while let Some(group) = args.get(i) {
        i += 1;
        let start = i;
        while args.get(i).is_some_and(|a| !a.starts_with('-')) {
            i += 1;
        }
        let items = &args[start..i];
        match group.as_str() {
            "-pop" => parse_pop(opts, items)?,
            "-rate" => parse_rate_group(opts, items)?,
            "-node" => parse_nodes(opts, items)?,
            "-port" => parse_port(opts, items)?,
            "-schema" => parse_schema(opts, items)?,
            "-col" => parse_columns(opts, items)?,
            "-log" => parse_log(opts, items)?,
            "-json" => opts.json_file = Some(PathBuf::from(single(items, "-json", "a file path")?)),
            "-hdr" => opts.hdr_file = Some(PathBuf::from(single(items, "-hdr", "a file path")?)),
            "-mode" => parse_mode(opts, items)?,
            _ => return Err(OptionError::UnknownGroup(group.clone())),
        }
    }
    Ok(())
}

/// `-node HOST[,HOST]` (or `hosts=...`).
fn parse_nodes(opts: &mut StressOptions, items: &[String]) -> Result<(), OptionError> {
    let mut nodes = Vec::new();
    for item in items {
        // cassandra-stress also accepts `-node file=...`; we only take host lists.
        let hosts = item.strip_prefix("hosts=").unwrap_or(item);
        nodes.extend(
            hosts
                .split(',')
                .filter(|h| !h.is_empty())
                .map(str::to_string),
        );
    }
    if nodes.is_empty() {
        return Err(OptionError::Missing {
            option: "-node".into(),
            expected: "HOST[,HOST]",
        });
    }
    opts.nodes = nodes;
    Ok(())
}

/// `-port native=P` (jmx= and thrift= are accepted and ignored).
fn parse_port(opts: &mut StressOptions, items: &[String]) -> Result<(), OptionError> {
    for item in items {
        let (k, v) = split_kv(item, "-port")?;
        match k {
            "native" => opts.port = v.parse().map_err(|_| bad(item, v, "a TCP port"))?,
            "jmx" | "thrift" => {}
            _ => {
                return Err(OptionError::UnknownOption {
                    group: "-port".into(),
                    option: item.clone(),
                })
            }
        }
    }
    Ok(())
}

/// `-col size=DIST n=DIST`.
fn parse_columns(opts: &mut StressOptions, items: &[String]) -> Result<(), OptionError> {
    for item in items {
        let (k, v) = split_kv(item, "-col")?;
        match k {
            "size" => opts.col_size = parse_dist(item, v)?,
            "n" => opts.col_count = parse_dist(item, v)?,
            _ => {
                return Err(OptionError::UnknownOption {
                    group: "-col".into(),
                    option: item.clone(),
                })
            }
        }
    }
    Ok(())
}

/// `-log file=FILE interval=D` (level= and no-settings are accepted and ignored).
fn parse_log(opts: &mut StressOptions, items: &[String]) -> Result<(), OptionError> {
    for item in items {
        if item == "no-settings" || item.starts_with("level=") {
            continue;
        }
        let (k, v) = split_kv(item, "-log")?;
        match k {
            "file" => opts.log_file = Some(PathBuf::from(v)),
            "interval" => opts.log_interval = parse_duration(item, v)?,
            _ => {
                return Err(OptionError::UnknownOption {
                    group: "-log".into(),
                    option: item.clone(),
                })
            }
        }
    }
    if opts.log_interval.is_zero() {
        return Err(bad("-log interval=", "0", "a positive interval"));
    }
    Ok(())
}

/// `-mode connectionsPerHost=N clientThreads=N` (the protocol words are accepted).
fn parse_mode(opts: &mut StressOptions, items: &[String]) -> Result<(), OptionError> {
    for item in items {
        if let Some(v) = item.strip_prefix("connectionsPerHost=") {
            opts.connections_per_host = v
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| bad(item, v, "a positive number"))?;
        } else if let Some(v) = item.strip_prefix("clientThreads=") {
            opts.client_threads = v
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| bad(item, v, "a positive number"))?;
        } else if !matches!(
            item.as_str(),
            "native" | "cql3" | "prepared" | "simplenative"
        ) {
            return Err(OptionError::UnknownOption {
                group: "-mode".into(),
                option: item.clone(),
            });
        }
    }
    Ok(())
}

fn single<'a>(
    items: &'a [String],
    option: &str,
    expected: &'static str,
) -> Result<&'a str, OptionError> {
    match items {
        [one] => Ok(one.as_str()),
        _ => Err(OptionError::Missing {
            option: option.into(),
            expected,
        }),
    }
}

fn parse_pop(opts: &mut StressOptions, items: &[String]) -> Result<(), OptionError> {
    for item in items {
        let (k, v) = split_kv(item, "-pop")?;
        match k {
            "dist" => opts.population = Some(parse_dist(item, v)?),
            "seq" => {
                let (min, max) = parse_range(item, v)?;
                opts.population = Some(DistSpec::Seq { min, max });
            }
            _ => {
                return Err(OptionError::UnknownOption {
                    group: "-pop".into(),
                    option: item.clone(),
                })
            }
        }
    }
    Ok(())
}

fn parse_rate_group(opts: &mut StressOptions, items: &[String]) -> Result<(), OptionError> {
    for item in items {
        let (k, v) = split_kv(item, "-rate")?;
        match k {
            "threads" => {
                opts.threads = v
                    .parse()
                    .ok()
                    .filter(|n| *n > 0 && *n <= 100_000)
                    .ok_or_else(|| bad(item, v, "a thread count in 1..=100000"))?
            }
            "fixed" | "throttle" => {
                if opts.rate != RateMode::Unlimited {
                    return Err(OptionError::Conflict(
                        "-rate fixed= and throttle= both given".into(),
                    ));
                }
                let rate_per_s = parse_rate(item, v)?;
                opts.rate = if k == "fixed" {
                    RateMode::Fixed { rate_per_s }
                } else {
                    RateMode::Throttle { rate_per_s }
                };
            }
            _ => {
                return Err(OptionError::UnknownOption {
                    group: "-rate".into(),
                    option: item.clone(),
                })
            }
        }
    }
    Ok(())
}

fn parse_schema(opts: &mut StressOptions, items: &[String]) -> Result<(), OptionError> {
    for item in items {
        if let Some(inner) = call_args(item, "replication") {
            for (k, v) in parse_pairs(item, inner)? {
                match k.as_str() {
                    "factor" | "replication_factor" => {
                        opts.replication_factor = v
                            .parse()
                            .ok()
                            .filter(|n| *n > 0)
                            .ok_or_else(|| bad(item, &v, "a positive replication factor"))?
                    }
                    "strategy" | "class" => opts.replication_class = v,
                    _ => {
                        return Err(OptionError::UnknownOption {
                            group: "-schema replication".into(),
                            option: k,
                        })
                    }
                }
            }
        } else if let Some(inner) = call_args(item, "compaction") {
            let mut strategy = None;
            let mut rest = Vec::new();
            for (k, v) in parse_pairs(item, inner)? {
                if k == "strategy" || k == "class" {
                    strategy = Some(v);
                } else {
                    rest.push((k, v));
                }
            }
            let strategy = strategy.ok_or(OptionError::Missing {
                option: "-schema compaction(strategy=)".into(),
                expected: "a compaction strategy class",
            })?;
            opts.compaction = Some((strategy, rest));
        } else {
            let (k, v) = split_kv(item, "-schema")?;
            match k {
                "keyspace" => {
                    if v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                        return Err(bad(item, v, "a keyspace name of letters, digits and _"));
                    }
                    opts.keyspace = v.to_string();
                }
                _ => {
                    return Err(OptionError::UnknownOption {
                        group: "-schema".into(),
                        option: item.clone(),
                    })
                }
            }
        }
    }
    Ok(())
}
