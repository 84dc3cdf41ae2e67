//! TLS for everything that dials a node: the Rust client, node-to-node calls (forwarded writes,
//! Raft RPCs) and `raftlane health`. rustls on the `ring` provider; the peer is verified against
//! a CA the caller names (there are no built-in roots: a cluster's certificates come from its
//! own CA, `raftlane certs`), and the caller may present its own certificate (mutual TLS).
//!
//! The PEM readers here are also what the node uses for its server certificate, so a file that
//! one side reads the other reads the same way.

use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A TLS file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {what} from {}: {source}", path.display())]
    Pem {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    #[error("{} holds no {what}", path.display())]
    Empty { what: &'static str, path: PathBuf },
    #[error("{} holds a CA certificate rustls refuses: {source}", path.display())]
    BadCa {
        path: PathBuf,
        #[source]
        source: rustls::Error,
    },
    #[error("invalid TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// The one crypto provider of the workspace (ring: aws-lc-rs needs cmake to build). rustls
/// 0.23.48 deprecates it for lacking post-quantum key exchange; the classical suites it offers
/// (TLS 1.3/1.2, ECDHE X25519/P-256/P-384) are what this cluster uses until a provider with them
/// builds here without cmake.
#[allow(deprecated)]
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Every certificate in the PEM file at `path` (a chain: leaf first).
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem_error = |source| TlsError::Pem {
        what: "certificates",
        path: path.to_path_buf(),
        source,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(pem_error)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem_error)?;
    if certs.is_empty() {
        return Err(TlsError::Empty {
            what: "certificate",
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

/// The private key in the PEM file at `path` (PKCS#8, PKCS#1 or SEC1).
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|source| match source {
        rustls_pki_types::pem::Error::NoItemsFound => TlsError::Empty {
            what: "private key",
            path: path.to_path_buf(),
        },
        source => TlsError::Pem {
            what: "a private key",
            path: path.to_path_buf(),
            source,
        },
    })
}

/// The CA certificates in the PEM file at `path`, as trust roots.
pub fn load_roots(path: &Path) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in load_certs(path)? {
        roots.add(cert).map_err(|source| TlsError::BadCa {
            path: path.to_path_buf(),
            source,
        })?;
    }
    Ok(roots)
}

/// How a caller dials nodes over TLS: the CA it trusts and, for mutual TLS, its own
/// certificate. Cheap to clone.
#[derive(Clone)]
pub struct ClientTls {
    config: Arc<ClientConfig>,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls")
            .field(
                "client_cert",
                &self.config.client_auth_cert_resolver.has_certs(),
            )
            .finish()
    }
}

impl ClientTls {
    /// Trust the CA in `ca_file`; present the certificate chain in `cert_file` with the key in
    /// `key_file` when both are given.
    pub fn from_files(ca_file: &Path, identity: Option<(&Path, &Path)>) -> Result<Self, TlsError> {
        let identity = match identity {
            Some((cert, key)) => Some((load_certs(cert)?, load_key(key)?)),
            None => None,
        };
        Self::new(load_roots(ca_file)?, identity)
    }

    /// Trust `roots`; present `identity` (certificate chain and key) when given.
    pub fn new(
        roots: RootCertStore,
        identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
    ) -> Result<Self, TlsError> {
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots);
        let config = match identity {
            Some((certs, key)) => builder.with_client_auth_cert(certs, key)?,
            None => builder.with_no_client_auth(),
        };
        Ok(Self {
            config: Arc::new(config),
        })
    }

    /// The rustls configuration (for callers that dial with their own stack).
    pub fn config(&self) -> Arc<ClientConfig> {
        self.config.clone()
    }
}

/// A connector that dials `http://` URLs in plain TCP and `https://` URLs over TLS with `tls`
/// (without it, `https://` URLs fail: there is no CA to verify the node against).
pub fn connector(
    tls: Option<&ClientTls>,
    connect_timeout: Duration,
) -> HttpsConnector<HttpConnector> {
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    http.set_connect_timeout(Some(connect_timeout));
    // The TLS layer wraps the TCP connector, which must let `https://` URLs through.
    http.enforce_http(false);
    let config = match tls {
        Some(tls) => (*tls.config).clone(),
        // No trust roots: every https:// URL fails verification. `builder()` takes the
        // provider from rustls's crate features, of which the workspace enables only `ring`.
        None => ClientConfig::builder()
            .with_root_certificates(RootCertStore::empty())
            .with_no_client_auth(),
    };
    hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http)
}
