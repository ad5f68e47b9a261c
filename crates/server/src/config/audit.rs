//! `audit_logging_options`: who ran what, as Cassandra 4.0+'s audit log records it.
//!
//! Accepted: `enabled`, `logger` (`FileAuditLogger`, as a class name or `- class_name: ...`),
//! `audit_logs_dir` (default: `audit` beside the data directories), `included_keyspaces`,
//! `excluded_keyspaces` (default `system,system_schema,system_virtual_schema`, as Cassandra),
//! `included_categories`, `excluded_categories` (QUERY, DML, DDL, DCL, AUTH, PREPARE, ERROR,
//! OTHER), `included_users`, `excluded_users`, `max_log_size` (bytes kept: the log rolls to
//! `audit.log.1` at half of it). Chronicle-queue settings (`roll_cycle`, `block`,
//! `max_queue_weight`, `archive_command`, `max_archive_retries`, `allow_nodetool_archive_command`)
//! are accepted and mean nothing here. `BinAuditLogger` is refused: Helenus writes text only.

use super::ConfigError;
use serde_yaml::Value;
use std::path::PathBuf;

/// Cassandra's audit categories.
pub const AUDIT_CATEGORIES: &[&str] = &[
    "QUERY", "DML", "DDL", "DCL", "AUTH", "PREPARE", "ERROR", "OTHER",
];

/// Cassandra's `max_log_size` default: 16 GiB.
const DEFAULT_MAX_LOG_SIZE_BYTES: u64 = 16 * 1024 * 1024 * 1024;

/// What to audit and where; the filters are lists of names (empty included list: everything).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditLogOptions {
    pub enabled: bool,
    /// `None`: `audit` beside the first data directory.
    pub audit_logs_dir: Option<PathBuf>,
    pub included_keyspaces: Vec<String>,
    pub excluded_keyspaces: Vec<String>,
    pub included_categories: Vec<String>,
    pub excluded_categories: Vec<String>,
    pub included_users: Vec<String>,
    pub excluded_users: Vec<String>,
    pub max_log_size_bytes: u64,
}

impl Default for AuditLogOptions {
    fn default() -> Self {
        AuditLogOptions {
            enabled: false,
            audit_logs_dir: None,
            included_keyspaces: Vec::new(),
            excluded_keyspaces: ["system", "system_schema", "system_virtual_schema"]
                .map(String::from)
                .to_vec(),
            included_categories: Vec::new(),
            excluded_categories: Vec::new(),
            included_users: Vec::new(),
            excluded_users: Vec::new(),
            max_log_size_bytes: DEFAULT_MAX_LOG_SIZE_BYTES,
        }
    }
}

const IGNORED_KEYS: &[&str] = &[
    "roll_cycle",
    "block",
    "max_queue_weight",
    "archive_command",
    "max_archive_retries",
    "allow_nodetool_archive_command",
];

fn bad(message: String) -> ConfigError {
    ConfigError::Unsupported {
        key: "audit_logging_options".into(),
        message,
    }
}

/// A comma-separated list (Cassandra's form) or a YAML sequence.
pub fn name_list(v: &Value) -> Vec<String> {
    let items: Vec<String> = match v {
        Value::Sequence(s) => s.iter().filter_map(scalar).collect(),
        other => scalar(other)
            .map(|s| s.split(',').map(str::to_string).collect())
            .unwrap_or_default(),
    };
    items
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Upper-cased categories, each one of Cassandra's.
pub fn categories(names: Vec<String>) -> Result<Vec<String>, String> {
    names
        .into_iter()
        .map(|c| {
            let up = c.to_ascii_uppercase();
            match AUDIT_CATEGORIES.contains(&up.as_str()) {
                true => Ok(up),
                false => Err(format!(
                    "unknown audit category {c} (known: {})",
                    AUDIT_CATEGORIES.join(", ")
                )),
            }
        })
        .collect()
}

fn logger_class(v: &Value) -> Option<String> {
    match v {
        Value::Sequence(s) => s.first().and_then(logger_class),
        Value::Mapping(m) => m.get(Value::String("class_name".into())).and_then(scalar),
        other => scalar(other),
    }
}

/// Parses `audit_logging_options`.
pub fn audit_logging(value: &Value) -> Result<AuditLogOptions, ConfigError> {
    let mut o = AuditLogOptions::default();
    let Value::Mapping(m) = value else {
        return Err(bad(format!("expected a mapping, got {value:?}")));
    };
    for (k, v) in m {
        let key = k.as_str().unwrap_or("");
        match key {
            "enabled" => {
                o.enabled = match v {
                    Value::Bool(b) => *b,
                    other => scalar(other).is_some_and(|s| s.trim() == "true"),
                }
            }
            "logger" => {
                let class = logger_class(v).unwrap_or_default();
                let short = class.rsplit('.').next().unwrap_or("");
                if short != "FileAuditLogger" {
                    return Err(bad(format!(
                        "logger {class} is not supported (Helenus writes FileAuditLogger's text lines)"
                    )));
                }
            }
            "audit_logs_dir" => o.audit_logs_dir = scalar(v).map(PathBuf::from),
            "included_keyspaces" => o.included_keyspaces = name_list(v),
            "excluded_keyspaces" => o.excluded_keyspaces = name_list(v),
            "included_categories" => {
                o.included_categories = categories(name_list(v)).map_err(bad)?
            }
            "excluded_categories" => {
                o.excluded_categories = categories(name_list(v)).map_err(bad)?
            }
            "included_users" => o.included_users = name_list(v),
            "excluded_users" => o.excluded_users = name_list(v),
            "max_log_size" => {
                o.max_log_size_bytes = scalar(v)
                    .and_then(|s| super::parse_size_bytes(&s, 1).ok())
                    .ok_or_else(|| bad(format!("max_log_size: {v:?} is not a size")))?
            }
            k if IGNORED_KEYS.contains(&k) => {}
            other => return Err(bad(format!("{other} is not supported by Helenus"))),
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn parse(s: &str) -> Result<AuditLogOptions, ConfigError> {
        audit_logging(&serde_yaml::from_str(s).unwrap())
    }

    #[test]
    fn cassandra_yaml_forms_are_read() {
        let o = parse(
            "enabled: true\nlogger:\n  - class_name: FileAuditLogger\naudit_logs_dir: /a\n\
             included_keyspaces: ks1, ks2\nexcluded_categories: [query, dml]\nroll_cycle: HOURLY",
        )
        .unwrap();
        assert!(o.enabled);
        assert_eq!(o.audit_logs_dir, Some(PathBuf::from("/a")));
        assert_eq!(o.included_keyspaces, vec!["ks1", "ks2"]);
        assert_eq!(o.excluded_categories, vec!["QUERY", "DML"]);
        assert_eq!(o.excluded_keyspaces.len(), 3);
    }

    #[test]
    fn what_is_not_written_is_refused() {
        for (s, why) in [
            ("enabled: true\nlogger: BinAuditLogger", "BinAuditLogger"),
            ("included_categories: QUERY,SELECTS", "SELECTS"),
            ("frob: 1", "frob"),
        ] {
            let err = parse(s).unwrap_err().to_string();
            assert!(err.contains(why), "{s}: {err}");
        }
    }
}
