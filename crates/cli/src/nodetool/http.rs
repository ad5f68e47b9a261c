//! The admin API client: one HTTP/1.1 request per command (over TLS with `--ssl`, with Basic
//! credentials with `-u`), and the errors nodetool prints.

use base64::Engine;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use std::fmt;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
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
    /// `--ssl` could not be set up (the truststore) or the handshake failed.
    Tls(String),
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
            NodetoolError::Tls(m) => write!(f, "nodetool: TLS: {m}"),
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

/// The node nodetool talks to (`-h`, `-p`), as whom (`-u`, `-pw`) and how (`--ssl`).
pub struct Node {
    pub host: String,
    pub port: u16,
    /// User and password, sent as HTTP Basic credentials.
    pub credentials: Option<(String, String)>,
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

/// A TLS client trusting the CAs of the PEM bundle at `truststore`.
pub fn tls_config(truststore: &Path) -> Result<Arc<rustls::ClientConfig>, NodetoolError> {
    let tls_err =
        |e: &dyn fmt::Display| NodetoolError::Tls(format!("{}: {e}", truststore.display()));
    let pem = std::fs::read(truststore).map_err(|e| tls_err(&e))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        roots
            .add(cert.map_err(|e| tls_err(&e))?)
            .map_err(|e| tls_err(&e))?;
    }
    if roots.is_empty() {
        return Err(tls_err(&"no PEM certificate in the truststore"));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_err(&e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Reads a whole answer; a peer that closes without TLS's close_notify still gave its answer.
fn read_all(s: &mut dyn Read) -> Result<String, NodetoolError> {
    let mut bytes = Vec::new();
    match s.read_to_end(&mut bytes) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !bytes.is_empty() => {}
        Err(e) => return Err(e.into()),
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

impl Node {
    /// A node reached without credentials or TLS (a local cluster's own nodes).
    pub fn plain(host: String, port: u16) -> Node {
        Node {
            host,
            port,
            credentials: None,
            tls: None,
        }
    }

    fn exchange(&self, req: &str) -> Result<String, NodetoolError> {
        let (host, port) = (&self.host, self.port);
        let mut s =
            TcpStream::connect((host.as_str(), port)).map_err(|source| NodetoolError::Connect {
                host: host.clone(),
                port,
                source,
            })?;
        let _ = s.set_read_timeout(Some(HTTP_TIMEOUT));
        let Some(config) = &self.tls else {
            s.write_all(req.as_bytes())?;
            return read_all(&mut s);
        };
        let name = ServerName::try_from(host.clone())
            .map_err(|e| NodetoolError::Tls(format!("{host}: {e}")))?;
        let conn = rustls::ClientConnection::new(config.clone(), name)
            .map_err(|e| NodetoolError::Tls(e.to_string()))?;
        let mut tls = rustls::StreamOwned::new(conn, s);
        tls.write_all(req.as_bytes())?;
        read_all(&mut tls)
    }

    /// Sends one request; the body of a 200 answer, or the node's error message.
    pub fn request(&self, method: &str, path: &str) -> Result<String, NodetoolError> {
        let host = &self.host;
        let authorization = match &self.credentials {
            Some((user, password)) => format!(
                "Authorization: Basic {}\r\n",
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
            ),
            None => String::new(),
        };
        let req = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n{authorization}Content-Length: 0\r\nConnection: close\r\n\r\n");
        let resp = self.exchange(&req)?;
        let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
        let status: u16 = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        if status == 0 {
            return Err(NodetoolError::Refused(format!(
                "no HTTP answer from {host}:{} (an admin API on TLS needs --ssl)",
                self.port
            )));
        }
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
