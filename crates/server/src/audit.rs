//! The audit log (`audit_logging_options`, `nodetool enableauditlog`): one line per request,
//! login and failure, in the text form of Cassandra's FileAuditLogger:
//!
//! `user:U|host:H:7000|source:/IP|port:P|timestamp:MS|type:T|category:C[|ks:K][|scope:S]|operation:TEXT`
//!
//! Lines go to `audit.log` in `audit_logs_dir`; past half of `max_log_size` the file is rolled to
//! `audit.log.1` (replacing the previous one), so the log never holds more than `max_log_size`.
//! Filters are by keyspace, category and user, as Cassandra's.

use crate::config::{AuditLogOptions, NodeConfig};
use helenus_cql::ast::{AuthStatement, Statement};
use helenus_types::SharedClock;
use parking_lot::{Mutex, RwLock};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const LOG_FILE: &str = "audit.log";
const ROLLED_FILE: &str = "audit.log.1";
/// The user of a connection that has not logged in (Cassandra's anonymous user).
const ANONYMOUS: &str = "anonymous";
/// Longest operation text written: a multi-megabyte statement is cut, not copied whole.
const MAX_OPERATION_BYTES: usize = 64 * 1024;

/// One audited event.
#[derive(Debug, Clone)]
pub struct AuditEntry<'a> {
    pub user: Option<&'a str>,
    pub source: SocketAddr,
    /// Cassandra's `AuditLogEntryType` name: SELECT, UPDATE, LOGIN_ERROR, REQUEST_FAILURE...
    pub kind: &'static str,
    pub category: &'static str,
    pub keyspace: Option<String>,
    pub scope: Option<String>,
    pub operation: &'a str,
}

struct Active {
    options: AuditLogOptions,
    dir: PathBuf,
    file: Mutex<(std::fs::File, u64)>,
}

/// The node's audit log, switched on and off at run time.
pub struct AuditLog {
    /// `listen_address:storage_port`, as Cassandra names the node in each line.
    host: String,
    default_dir: PathBuf,
    enabled: AtomicBool,
    active: RwLock<Option<Arc<Active>>>,
    clock: SharedClock,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("enabled", &self.is_enabled())
            .finish_non_exhaustive()
    }
}

fn open_file(dir: &std::path::Path) -> std::io::Result<(std::fs::File, u64)> {
    std::fs::create_dir_all(dir)?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(LOG_FILE))?;
    let len = file.metadata()?.len();
    Ok((file, len))
}

impl AuditLog {
    /// An audit log that writes nothing until enabled (into `audit`).
    pub fn disabled(clock: SharedClock) -> AuditLog {
        AuditLog {
            host: NodeConfig::default().storage_address().to_string(),
            default_dir: PathBuf::from("audit"),
            enabled: AtomicBool::new(false),
            active: RwLock::new(None),
            clock,
        }
    }

    /// The audit log `config` asks for (enabled or not); `Err` if its directory cannot be
    /// written, so that a node asked to audit never runs without doing it.
    pub fn open(config: &NodeConfig, clock: SharedClock) -> std::io::Result<AuditLog> {
        let default_dir = config
            .primary_data_dir()
            .parent()
            .map(|p| p.join("audit"))
            .unwrap_or_else(|| PathBuf::from("audit"));
        let log = AuditLog {
            host: config.storage_address().to_string(),
            default_dir,
            enabled: AtomicBool::new(false),
            active: RwLock::new(None),
            clock,
        };
        if config.audit_logging.enabled {
            log.enable(config.audit_logging.clone())?;
        }
        Ok(log)
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Starts (or restarts with new filters) writing.
    pub fn enable(&self, mut options: AuditLogOptions) -> std::io::Result<()> {
        let dir = options
            .audit_logs_dir
            .clone()
            .unwrap_or_else(|| self.default_dir.clone());
        let file = open_file(&dir)?;
        options.enabled = true;
        *self.active.write() = Some(Arc::new(Active {
            options,
            dir,
            file: Mutex::new(file),
        }));
        self.enabled.store(true, Ordering::Relaxed);
        Ok(())
    }

    pub fn disable(&self) {
        self.enabled.store(false, Ordering::Relaxed);
        *self.active.write() = None;
    }

    /// The options in force, when enabled.
    pub fn options(&self) -> Option<AuditLogOptions> {
        self.active.read().as_ref().map(|a| a.options.clone())
    }

    /// Writes `e` if the filters let it through. A failed write is reported in the node's log
    /// and does not fail the request (Cassandra's FileAuditLogger behaves so too).
    pub fn log(&self, e: &AuditEntry<'_>) {
        if !self.is_enabled() {
            return;
        }
        let Some(active) = self.active.read().clone() else {
            return;
        };
        if !wanted(&active.options, e) {
            return;
        }
        let line = self.format(e);
        let mut file = active.file.lock();
        if file.1 + line.len() as u64 > active.options.max_log_size_bytes / 2 {
            let rolled = std::fs::rename(active.dir.join(LOG_FILE), active.dir.join(ROLLED_FILE))
                .and_then(|()| open_file(&active.dir));
            match rolled {
                Ok(f) => *file = f,
                Err(err) => tracing::warn!("audit log not rolled: {err}"),
            }
        }
        match file.0.write_all(line.as_bytes()) {
            Ok(()) => file.1 += line.len() as u64,
            Err(err) => tracing::warn!("audit log write failed: {err}"),
        }
    }

    fn format(&self, e: &AuditEntry<'_>) -> String {
        let mut op = e.operation;
        if op.len() > MAX_OPERATION_BYTES {
            let mut end = MAX_OPERATION_BYTES;
            while !op.is_char_boundary(end) {
                end -= 1;
            }
            op = op.get(..end).unwrap_or("");
        }
        // One entry, one line: a statement's own line breaks would split it.
        let op = op.replace(['\r', '\n'], " ");
        let mut line = format!(
            "user:{}|host:{}|source:/{}|port:{}|timestamp:{}|type:{}|category:{}",
            e.user.unwrap_or(ANONYMOUS),
            self.host,
            e.source.ip(),
            e.source.port(),
            self.clock.wall_ms(),
            e.kind,
            e.category
        );
        if let Some(ks) = &e.keyspace {
            line.push_str(&format!("|ks:{ks}"));
        }
        if let Some(scope) = &e.scope {
            line.push_str(&format!("|scope:{scope}"));
        }
        line.push_str(&format!("|operation:{op}\n"));
        line
    }
}

fn wanted(o: &AuditLogOptions, e: &AuditEntry<'_>) -> bool {
    let listed = |list: &[String], v: &str| list.iter().any(|x| x == v);
    let passes = |incl: &[String], excl: &[String], v: &str| {
        (incl.is_empty() || listed(incl, v)) && !listed(excl, v)
    };
    let keyspace_ok = match &e.keyspace {
        Some(ks) => passes(&o.included_keyspaces, &o.excluded_keyspaces, ks),
        None => true,
    };
    keyspace_ok
        && passes(&o.included_categories, &o.excluded_categories, e.category)
        && passes(
            &o.included_users,
            &o.excluded_users,
            e.user.unwrap_or(ANONYMOUS),
        )
}

/// What a statement is for the audit log: its type, category, keyspace and table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    pub kind: &'static str,
    pub category: &'static str,
    pub keyspace: Option<String>,
    pub scope: Option<String>,
}

/// Classifies `query` (parsed again; only when auditing); `session_ks` fills in an unqualified
/// table's keyspace.
pub fn classify(query: &str, session_ks: Option<&str>) -> Classified {
    let parsed = helenus_cql::parse(query).ok().map(|p| p.statement);
    let (kind, category) = match &parsed {
        Some(s) => kind_of(s),
        None => ("REQUEST_FAILURE", "ERROR"),
    };
    let (keyspace, scope) = match &parsed {
        Some(s) => names_of(s),
        None => (None, None),
    };
    let keyspace = keyspace.or_else(|| match category {
        "QUERY" | "DML" | "DDL" if scope.is_some() => session_ks.map(str::to_string),
        _ => None,
    });
    Classified {
        kind,
        category,
        keyspace,
        scope,
    }
}

fn kind_of(s: &Statement) -> (&'static str, &'static str) {
    match s {
        Statement::Select(_) => ("SELECT", "QUERY"),
        Statement::Insert(_) | Statement::Update(_) => ("UPDATE", "DML"),
        Statement::Delete(_) => ("DELETE", "DML"),
        Statement::Batch(_) => ("BATCH", "DML"),
        Statement::Use(_) => ("USE_KEYSPACE", "OTHER"),
        Statement::Describe(_) => ("DESCRIBE", "OTHER"),
        Statement::CreateKeyspace(_) => ("CREATE_KEYSPACE", "DDL"),
        Statement::AlterKeyspace(_) => ("ALTER_KEYSPACE", "DDL"),
        Statement::DropKeyspace { .. } => ("DROP_KEYSPACE", "DDL"),
        Statement::CreateTable(_) => ("CREATE_TABLE", "DDL"),
        Statement::AlterTable(_) => ("ALTER_TABLE", "DDL"),
        Statement::DropTable { .. } => ("DROP_TABLE", "DDL"),
        Statement::Truncate(_) => ("TRUNCATE", "DDL"),
        Statement::CreateType(_) => ("CREATE_TYPE", "DDL"),
        Statement::AlterType(_) => ("ALTER_TYPE", "DDL"),
        Statement::DropType { .. } => ("DROP_TYPE", "DDL"),
        Statement::CreateIndex(_) => ("CREATE_INDEX", "DDL"),
        Statement::DropIndex { .. } => ("DROP_INDEX", "DDL"),
        Statement::CreateMaterializedView(_) => ("CREATE_VIEW", "DDL"),
        Statement::AlterMaterializedView { .. } => ("ALTER_VIEW", "DDL"),
        Statement::DropMaterializedView { .. } => ("DROP_VIEW", "DDL"),
        Statement::CreateFunction(_) => ("CREATE_FUNCTION", "DDL"),
        Statement::DropFunction(_) => ("DROP_FUNCTION", "DDL"),
        Statement::CreateAggregate(_) => ("CREATE_AGGREGATE", "DDL"),
        Statement::DropAggregate(_) => ("DROP_AGGREGATE", "DDL"),
        Statement::CreateTrigger { .. } => ("CREATE_TRIGGER", "DDL"),
        Statement::DropTrigger { .. } => ("DROP_TRIGGER", "DDL"),
        Statement::Auth(a) => (auth_kind(a), "DCL"),
    }
}

fn auth_kind(a: &AuthStatement) -> &'static str {
    match a {
        AuthStatement::CreateRole(_) => "CREATE_ROLE",
        AuthStatement::AlterRole(_) => "ALTER_ROLE",
        AuthStatement::DropRole { .. } => "DROP_ROLE",
        AuthStatement::GrantRole { .. } | AuthStatement::GrantPermissions { .. } => "GRANT",
        AuthStatement::RevokeRole { .. } | AuthStatement::RevokePermissions { .. } => "REVOKE",
        _ => "LIST_ROLES",
    }
}

/// The keyspace and table a statement names, where it names them.
fn names_of(s: &Statement) -> (Option<String>, Option<String>) {
    let q = |n: &helenus_cql::ast::QualifiedName| {
        (
            n.keyspace.as_ref().map(|k| k.name.clone()),
            Some(n.name.name.clone()),
        )
    };
    match s {
        Statement::Select(x) => q(&x.table),
        Statement::Insert(x) => q(&x.table),
        Statement::Update(x) => q(&x.table),
        Statement::Delete(x) => q(&x.table),
        Statement::CreateTable(x) => q(&x.name),
        Statement::AlterTable(x) => q(&x.name),
        Statement::DropTable { name, .. } | Statement::Truncate(name) => q(name),
        Statement::Use(ks) => (Some(ks.name.clone()), None),
        Statement::CreateKeyspace(x) => (Some(x.name.name.clone()), None),
        Statement::AlterKeyspace(x) => (Some(x.name.name.clone()), None),
        Statement::DropKeyspace { name, .. } => (Some(name.name.clone()), None),
        _ => (None, None),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn statements_get_cassandras_types_and_categories() {
        let c = classify("SELECT * FROM ks.t WHERE k = 1", None);
        assert_eq!(
            (
                c.kind,
                c.category,
                c.keyspace.as_deref(),
                c.scope.as_deref()
            ),
            ("SELECT", "QUERY", Some("ks"), Some("t"))
        );
        let c = classify("INSERT INTO t (k) VALUES (1)", Some("s"));
        assert_eq!((c.kind, c.keyspace.as_deref()), ("UPDATE", Some("s")));
        assert_eq!(classify("CREATE ROLE r", None).category, "DCL");
        assert_eq!(classify("DROP KEYSPACE k", None).kind, "DROP_KEYSPACE");
        assert_eq!(classify("SELEKT", None).category, "ERROR");
    }

    #[test]
    fn lines_follow_file_audit_logger_and_filters_apply() {
        let dir = std::env::temp_dir().join(format!("helenus-audit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut config = NodeConfig::default();
        config.audit_logging.enabled = true;
        config.audit_logging.audit_logs_dir = Some(dir.clone());
        config.audit_logging.excluded_keyspaces = vec!["hidden".into()];
        config.audit_logging.max_log_size_bytes = 600;
        let log = AuditLog::open(&config, helenus_types::SystemClock::shared()).unwrap();
        let entry = |ks: &str| AuditEntry {
            user: None,
            source: "127.0.0.9:4242".parse().unwrap(),
            kind: "SELECT",
            category: "QUERY",
            keyspace: Some(ks.into()),
            scope: Some("t".into()),
            operation: "SELECT *\nFROM t",
        };
        log.log(&entry("shown"));
        log.log(&entry("hidden"));
        let text = std::fs::read_to_string(dir.join(LOG_FILE)).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.starts_with(
            "user:anonymous|host:127.0.0.1:7000|source:/127.0.0.9|port:4242|timestamp:"
        ));
        assert!(
            text.ends_with(
                "|type:SELECT|category:QUERY|ks:shown|scope:t|operation:SELECT * FROM t\n"
            ),
            "{text}"
        );
        for _ in 0..10 {
            log.log(&entry("shown"));
        }
        let kept = std::fs::metadata(dir.join(LOG_FILE)).unwrap().len()
            + std::fs::metadata(dir.join(ROLLED_FILE)).unwrap().len();
        assert!(kept <= 600, "{kept}");
        log.disable();
        log.log(&entry("shown"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
