//! TLS for the native transport and the admin API (rustls with the ring provider): the server
//! configurations built once at start from `client_encryption_options`' PEM files, and the
//! accept step that tells a TLS client from a plaintext one when TLS is optional.

use crate::config::{ClientAuth, ClientEncryption};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

/// A client must finish its handshake (or send its first plaintext byte) within this; a
/// connection that sends nothing would otherwise hold a connection slot for ever.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// First byte of a TLS record carrying a handshake message (a ClientHello). A CQL frame starts
/// with its protocol version (0x03-0x05, 0x41-0x45 for betas and responses), never 0x16.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// Why TLS could not be set up at start.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {message}")]
    Read { path: String, message: String },
    #[error("{path} holds no PEM certificate (keystore must be a PEM certificate chain, leaf first; JKS and PKCS12 are not read)")]
    NoCertificate { path: String },
    #[error("{path} holds no PEM private key (give it in keystore or in private_key)")]
    NoKey { path: String },
    #[error("{path} holds an encrypted private key, which Helenus cannot decrypt: decrypt it with `openssl pkey -in {path} -out key.pem`")]
    EncryptedKey { path: String },
    #[error("{path}: {message}")]
    Pem { path: String, message: String },
    #[error("TLS configuration refused: {0}")]
    Rustls(String),
}

/// The TLS side of one listener: its acceptor, and whether plaintext is served too.
#[derive(Clone)]
pub struct ServerTls {
    acceptor: TlsAcceptor,
    optional: bool,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("optional", &self.optional)
            .finish_non_exhaustive()
    }
}

/// A connection after the accept step.
pub enum Accepted {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

/// A byte stream either way, for code that need not know.
pub trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

impl Accepted {
    pub fn into_stream(self) -> Box<dyn Stream> {
        match self {
            Accepted::Plain(s) => Box::new(s),
            Accepted::Tls(s) => s,
        }
    }
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(path)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.display().to_string(),
        });
    }
    Ok(certs)
}

fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = read(path)?;
    let p = || path.display().to_string();
    if bytes
        .windows(b"ENCRYPTED PRIVATE KEY".len())
        .any(|w| w == b"ENCRYPTED PRIVATE KEY")
    {
        return Err(TlsError::EncryptedKey { path: p() });
    }
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => TlsError::NoKey { path: p() },
        other => TlsError::Pem {
            path: p(),
            message: other.to_string(),
        },
    })
}

fn rustls_err(e: impl std::fmt::Display) -> TlsError {
    TlsError::Rustls(e.to_string())
}

/// The server configuration `options` ask for; `with_client_auth: false` leaves client
/// certificates out (the admin API authenticates with credentials instead).
fn server_config(
    options: &ClientEncryption,
    with_client_auth: bool,
) -> Result<rustls::ServerConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut versions: Vec<&'static rustls::SupportedProtocolVersion> = Vec::new();
    if options.tls13 {
        versions.push(&rustls::version::TLS13);
    }
    if options.tls12 {
        versions.push(&rustls::version::TLS12);
    }
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(rustls_err)?;
    let chain = certificates(&options.certificate_chain)?;
    let key = private_key(&options.private_key)?;
    let builder = match (&options.truststore, options.client_auth, with_client_auth) {
        (Some(truststore), auth, true) if auth != ClientAuth::None => {
            let mut roots = rustls::RootCertStore::empty();
            for ca in certificates(truststore)? {
                roots.add(ca).map_err(rustls_err)?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            );
            let verifier = if auth == ClientAuth::Optional {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            builder.with_client_cert_verifier(verifier.build().map_err(rustls_err)?)
        }
        _ => builder.with_no_client_auth(),
    };
    builder.with_single_cert(chain, key).map_err(rustls_err)
}

impl ServerTls {
    /// TLS for the CQL port, with client certificates as `require_client_auth` says.
    pub fn native(options: &ClientEncryption) -> Result<ServerTls, TlsError> {
        Ok(ServerTls {
            acceptor: TlsAcceptor::from(Arc::new(server_config(options, true)?)),
            optional: options.optional,
        })
    }

    /// TLS for the admin API: the same certificate, no client certificates (admin requests
    /// carry a superuser's credentials when they must be authenticated).
    pub fn admin(options: &ClientEncryption) -> Result<ServerTls, TlsError> {
        Ok(ServerTls {
            acceptor: TlsAcceptor::from(Arc::new(server_config(options, false)?)),
            optional: options.optional,
        })
    }

    /// Runs the handshake, or with optional TLS first looks at the client's first byte: a
    /// TLS record gets the handshake, anything else is served as plaintext.
    pub async fn accept(&self, socket: TcpStream) -> std::io::Result<Accepted> {
        let timed_out = |_| std::io::Error::new(std::io::ErrorKind::TimedOut, "TLS handshake");
        if self.optional {
            let mut first = [0u8; 1];
            let n = tokio::time::timeout(HANDSHAKE_TIMEOUT, socket.peek(&mut first))
                .await
                .map_err(timed_out)??;
            if n == 0 || first[0] != TLS_HANDSHAKE_RECORD {
                return Ok(Accepted::Plain(socket));
            }
        }
        let stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, self.acceptor.accept(socket))
            .await
            .map_err(timed_out)??;
        Ok(Accepted::Tls(Box::new(stream)))
    }
}

/// Accepts `socket` with `tls` if given, else as it is.
pub async fn accept(tls: Option<&ServerTls>, socket: TcpStream) -> std::io::Result<Accepted> {
    match tls {
        Some(t) => t.accept(socket).await,
        None => Ok(Accepted::Plain(socket)),
    }
}
