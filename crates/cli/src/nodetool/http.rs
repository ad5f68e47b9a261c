//! The admin API client: one HTTP/1.1 request per command, and the errors nodetool prints.

use serde_json::Value;
use std::fmt;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

const HTTP_TIMEOUT: Duration = Duration::from_secs(3600);

/// Why a nodetool command failed; printed to stderr as nodetool prints it.
#[derive(Debug)]
pub enum NodetoolError {
    /// The bad command line, with the usage text where nodetool shows it.
    Usage(String),
    Connect {
        host: String,
        port: u16,
        source: std::io::Error,
    },
    Io(std::io::Error),
    /// The node answered with an error status; its message.
    Refused(String),
    /// The node's answer is not the JSON this command expects.
    Json(serde_json::Error),
}

impl fmt::Display for NodetoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodetoolError::Usage(text) => f.write_str(text),
            NodetoolError::Connect { host, port, source } => write!(
                f,
                "nodetool: Failed to connect to '{host}:{port}' - {source}"
            ),
            NodetoolError::Io(e) => write!(f, "{e}"),
            NodetoolError::Refused(msg) => write!(f, "error: {msg}"),
            NodetoolError::Json(e) => write!(f, "{e}"),
        }
    }
}

impl From<std::io::Error> for NodetoolError {
    fn from(e: std::io::Error) -> Self {
        NodetoolError::Io(e)
    }
}

impl From<serde_json::Error> for NodetoolError {
    fn from(e: serde_json::Error) -> Self {
        NodetoolError::Json(e)
    }
}

/// The node nodetool talks to (`-h`, `-p`).
pub struct Node {
    pub host: String,
    pub port: u16,
}

impl Node {
    /// Sends one request; the body of a 200 answer, or the node's error message.
    pub fn request(&self, method: &str, path: &str) -> Result<String, NodetoolError> {
        let (host, port) = (&self.host, self.port);
        let mut s =
            TcpStream::connect((host.as_str(), port)).map_err(|source| NodetoolError::Connect {
                host: host.clone(),
                port,
                source,
            })?;
        let _ = s.set_read_timeout(Some(HTTP_TIMEOUT));
        let req = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes())?;
        let mut resp = String::new();
        s.read_to_string(&mut resp)?;
        let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
        let status: u16 = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        if status != 200 {
            let msg = serde_json::from_str::<Value>(body)
                .ok()
                .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
                .unwrap_or_else(|| body.to_string());
            return Err(NodetoolError::Refused(msg));
        }
        Ok(body.to_string())
    }

    /// Sends one request whose answer is JSON.
    pub fn request_json(&self, method: &str, path: &str) -> Result<Value, NodetoolError> {
        Ok(serde_json::from_str(&self.request(method, path)?)?)
    }
}

/// Percent-encodes a path or query component.
pub fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.,".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `base`, `base/ks` or `base/ks?cf=t1,t2` for a command's `[ks [tables...]]` arguments.
pub fn ks_path(base: &str, args: &[String]) -> String {
    match args.split_first() {
        None => base.to_string(),
        Some((ks, [])) => format!("{base}/{}", enc(ks)),
        Some((ks, tables)) => format!("{base}/{}?cf={}", enc(ks), enc(&tables.join(","))),
    }
}
