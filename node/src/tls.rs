//! The node's TLS settings (docs/SPEC.md §9.6): the certificate it serves on its one listener
//! (API, Raft RPCs and `/internal` alike), the CA whose certificates it demands of clients
//! (mutual TLS), and how it dials its peers.
//!
//! One CA file serves both directions unless told otherwise: a node verifies its peers against
//! `--tls-ca`, which defaults to `--tls-client-ca`. When dialling, a node always presents its own
//! certificate, so a cluster with mutual TLS needs no extra client certificates for its nodes.

use raftlane_client::tls::{load_certs, load_key, load_roots, provider, ClientTls, TlsError};
use rustls::server::WebPkiClientVerifier;
use rustls::ServerConfig;
use std::path::PathBuf;
use std::sync::Arc;

/// The TLS files of a node (`--tls-cert`, `--tls-key`, `--tls-client-ca`, `--tls-ca`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM certificate chain served (leaf first).
    pub cert: PathBuf,
    /// PEM private key of `cert`.
    pub key: PathBuf,
    /// Demand of every client a certificate signed by this CA (mutual TLS).
    pub client_ca: Option<PathBuf>,
    /// Verify peers against this CA when dialling (default: `client_ca`).
    pub ca: Option<PathBuf>,
}

/// The TLS settings cannot work.
#[derive(Debug, thiserror::Error)]
pub enum NodeTlsError {
    #[error(transparent)]
    File(#[from] TlsError),
    #[error("cannot build the client-certificate verifier from {}: {source}", path.display())]
    ClientCa {
        path: PathBuf,
        #[source]
        source: rustls::server::VerifierBuilderError,
    },
    #[error("the certificate {} does not fit the key {}: {source}", cert.display(), key.display())]
    KeyMismatch {
        cert: PathBuf,
        key: PathBuf,
        #[source]
        source: rustls::Error,
    },
    #[error(
        "TLS is on, so peers are dialled over https: give the CA that signed their certificates \
         with --tls-ca (or --tls-client-ca)"
    )]
    NoPeerCa,
}

impl TlsFiles {
    /// The rustls server configuration: this node's certificate, and client certificates
    /// demanded when `client_ca` is set. HTTP/1.1 only (the server speaks nothing else).
    pub fn server_config(&self) -> Result<Arc<ServerConfig>, NodeTlsError> {
        let certs = load_certs(&self.cert)?;
        let key = load_key(&self.key)?;
        let builder = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Config)?;
        let builder = match &self.client_ca {
            Some(path) => {
                let roots = Arc::new(load_roots(path)?);
                let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider())
                    .build()
                    .map_err(|source| NodeTlsError::ClientCa {
                        path: path.clone(),
                        source,
                    })?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let mut config =
            builder
                .with_single_cert(certs, key)
                .map_err(|source| NodeTlsError::KeyMismatch {
                    cert: self.cert.clone(),
                    key: self.key.clone(),
                    source,
                })?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    /// How this node dials its peers: their CA, and its own certificate as client identity.
    pub fn peer_client(&self) -> Result<ClientTls, NodeTlsError> {
        let ca = self
            .ca
            .as_ref()
            .or(self.client_ca.as_ref())
            .ok_or(NodeTlsError::NoPeerCa)?;
        Ok(ClientTls::from_files(
            ca,
            Some((self.cert.as_path(), self.key.as_path())),
        )?)
    }
}
