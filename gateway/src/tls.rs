//! TLS on every listener (`[tls]`): the name-server port, every shard port and its VIP
//! port, and `/metrics`. rustls, with the certificate chain and key read from PEM files and
//! read again when either file changes (`services/tls_reload.rs`), so a renewed certificate
//! is served without a restart; connections already open keep the one they shook hands
//! with.
//!
//! Modes, as the reference's `tls.server.mode`: `off` (plaintext only), `permissive` (TLS
//! and plaintext on the same port, told apart by the first byte: a TLS handshake record
//! starts with 0x16, a remoting frame with its length's high byte, 0 for any frame under
//! 16 MiB), `enforcing` (TLS only; a plaintext client fails its handshake and is closed,
//! the listener goes on serving others). Client certificates: `none`, `optional` (verified
//! when sent) or `require`, against `tls.client_ca_file`.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::SystemTime;

use parking_lot::RwLock;
use rustls::RootCertStore;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tracing::{debug, info, warn};

use crate::config::{ClientAuth, TlsMode, TlsSettings};

/// The first byte of a TLS record carrying a handshake.
const TLS_HANDSHAKE: u8 = 0x16;

/// Why TLS could not be set up from its files.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsError {
    /// A file could not be read or holds no usable PEM item.
    #[error("{key}: {path}: {why}")]
    File {
        /// The setting naming the file.
        key: &'static str,
        /// The file.
        path: PathBuf,
        /// What went wrong.
        why: String,
    },
    /// rustls refused the certificate, key or CA set.
    #[error("tls: {0}")]
    Rustls(String),
}

/// A connection as accepted: plaintext or TLS.
#[derive(Debug)]
pub(crate) enum Stream {
    /// Plaintext.
    Plain(TcpStream),
    /// TLS over TCP.
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_flush(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The files a configuration was built from, with their modification times.
#[derive(Debug, Clone, PartialEq)]
struct Stamps(Vec<(PathBuf, Option<SystemTime>)>);

impl Stamps {
    fn of(paths: &[&Path]) -> Self {
        Self(
            paths
                .iter()
                .map(|p| {
                    let t = std::fs::metadata(p).and_then(|m| m.modified()).ok();
                    (p.to_path_buf(), t)
                })
                .collect(),
        )
    }
}

/// The node's TLS: mode, the current server configuration and where it came from.
pub(crate) struct Tls {
    settings: TlsSettings,
    current: RwLock<(TlsAcceptor, Stamps)>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("settings", &self.settings)
            .field("files", &self.current.read().1)
            .finish_non_exhaustive()
    }
}

impl Tls {
    /// TLS as `settings` describe it; `None` when the mode is `off`.
    ///
    /// # Errors
    /// [`TlsError`] when a file cannot be read or rustls refuses its contents.
    pub(crate) fn load(settings: &TlsSettings) -> Result<Option<Arc<Self>>, TlsError> {
        if settings.mode == TlsMode::Off {
            return Ok(None);
        }
        let (acceptor, stamps) = build(settings)?;
        info!(mode = ?settings.mode, client_auth = ?settings.client_auth, "TLS on");
        Ok(Some(Arc::new(Self {
            settings: settings.clone(),
            current: RwLock::new((acceptor, stamps)),
        })))
    }

    /// Reads the files again when one of them changed since the last build. A build that
    /// fails keeps the previous configuration (and is logged).
    pub(crate) fn reload_if_changed(&self) -> bool {
        let now = Stamps::of(&files(&self.settings));
        if self.current.read().1 == now {
            return false;
        }
        match build(&self.settings) {
            Ok(next) => {
                *self.current.write() = next;
                info!("TLS certificate reloaded");
                true
            }
            Err(e) => {
                warn!(error = %e, "TLS files changed but cannot be used; keeping the previous ones");
                // Do not retry the same broken files on every round.
                self.current.write().1 = now;
                false
            }
        }
    }

    /// Completes an accepted connection: a TLS handshake (`enforcing`, or `permissive`
    /// when the first byte starts one) within `tls.handshake_timeout`, else plaintext.
    ///
    /// # Errors
    /// The handshake failed or timed out, or the peer closed before its first byte.
    pub(crate) async fn accept(&self, stream: TcpStream) -> io::Result<Stream> {
        let timeout = self.settings.handshake_timeout;
        let work = async {
            if self.settings.mode == TlsMode::Permissive {
                let mut first = [0u8; 1];
                let n = stream.peek(&mut first).await?;
                if n == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "closed before its first byte",
                    ));
                }
                if first[0] != TLS_HANDSHAKE {
                    return Ok(Stream::Plain(stream));
                }
            }
            let acceptor = self.current.read().0.clone();
            let tls = acceptor.accept(stream).await?;
            Ok(Stream::Tls(Box::new(tls)))
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(r) => {
                if let Err(e) = &r {
                    debug!(error = %e, "TLS handshake failed");
                }
                r
            }
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "TLS handshake timed out",
            )),
        }
    }

    /// The settings this was built from.
    pub(crate) fn settings(&self) -> &TlsSettings {
        &self.settings
    }
}

fn files(s: &TlsSettings) -> Vec<&Path> {
    let mut out: Vec<&Path> = Vec::new();
    out.extend(s.cert_file.as_deref());
    out.extend(s.key_file.as_deref());
    if s.client_auth != ClientAuth::None {
        out.extend(s.client_ca_file.as_deref());
    }
    out
}

fn file_err(key: &'static str, path: &Path, why: impl ToString) -> TlsError {
    TlsError::File {
        key,
        path: path.to_path_buf(),
        why: why.to_string(),
    }
}

fn certs(key: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| file_err(key, path, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| file_err(key, path, e))?;
    if certs.is_empty() {
        return Err(file_err(key, path, "no CERTIFICATE in the file"));
    }
    Ok(certs)
}

/// The acceptor from the files, with the files' stamps read before them (a file replaced
/// while being read is read again on the next round).
fn build(s: &TlsSettings) -> Result<(TlsAcceptor, Stamps), TlsError> {
    let stamps = Stamps::of(&files(s));
    let cert_path = s
        .cert_file
        .as_deref()
        .ok_or_else(|| TlsError::Rustls("tls.cert_file is not set".into()))?;
    let key_path = s
        .key_file
        .as_deref()
        .ok_or_else(|| TlsError::Rustls("tls.key_file is not set".into()))?;
    let chain = certs("tls.cert_file", cert_path)?;
    let key = PrivateKeyDer::from_pem_file(key_path)
        .map_err(|e| file_err("tls.key_file", key_path, e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Rustls(e.to_string()))?;
    let builder = match s.client_auth {
        ClientAuth::None => builder.with_no_client_auth(),
        ClientAuth::Optional | ClientAuth::Require => {
            let ca_path = s
                .client_ca_file
                .as_deref()
                .ok_or_else(|| TlsError::Rustls("tls.client_ca_file is not set".into()))?;
            let mut roots = RootCertStore::empty();
            for c in certs("tls.client_ca_file", ca_path)? {
                roots
                    .add(c)
                    .map_err(|e| file_err("tls.client_ca_file", ca_path, e))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if s.client_auth == ClientAuth::Optional {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|e| TlsError::Rustls(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Rustls(e.to_string()))?;
    Ok((TlsAcceptor::from(Arc::new(config)), stamps))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(mode: TlsMode, dir: &Path) -> TlsSettings {
        TlsSettings {
            mode,
            cert_file: Some(dir.join("cert.pem")),
            key_file: Some(dir.join("key.pem")),
            ..TlsSettings::default()
        }
    }

    #[test]
    fn off_builds_nothing_and_missing_or_empty_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            Tls::load(&settings(TlsMode::Off, dir.path()))
                .unwrap()
                .is_none()
        );
        let e = Tls::load(&settings(TlsMode::Enforcing, dir.path())).unwrap_err();
        assert!(e.to_string().starts_with("tls.cert_file: "), "{e}");
        std::fs::write(dir.path().join("cert.pem"), "not pem").unwrap();
        let e = Tls::load(&settings(TlsMode::Permissive, dir.path())).unwrap_err();
        assert!(e.to_string().contains("no CERTIFICATE"), "{e}");
    }

    #[test]
    fn stamps_change_when_a_file_does() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a");
        let before = Stamps::of(&[&f]);
        std::fs::write(&f, "x").unwrap();
        let after = Stamps::of(&[&f]);
        assert_ne!(before, after, "a file appearing is a change");
        assert_eq!(after, Stamps::of(&[&f]));
    }
}
