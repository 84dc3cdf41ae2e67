//! `raftlane health --url URL`: a readiness probe for container health checks. Scratch images
//! have no curl or shell, so the compose healthcheck runs the binary itself; it exits non-zero
//! unless the URL answers `200` within a few seconds.
//!
//! Over TLS: `--ca-file` names the CA to verify the node against (then the URL is dialled as
//! `https://` whatever its scheme says), `--cert`/`--key` a client certificate for a node that
//! demands one (mutual TLS).

use anyhow::{bail, Context};
use hyper::{Method, StatusCode};
use raftlane_api::peer::PeerClient;
use raftlane_client::tls::ClientTls;
use std::path::PathBuf;
use std::time::Duration;

/// The default probe target: this node's readiness route on the default port.
pub const DEFAULT_URL: &str = "http://127.0.0.1:7001/readyz";

/// `raftlane health` flags.
#[derive(clap::Args, Debug, Clone)]
pub struct HealthArgs {
    /// The URL to probe. In a container, name the node as its certificate does (compose:
    /// https://n1:7001/readyz), since a node certificate names its node only by default.
    #[arg(long, env = "RAFTLANE_HEALTH_URL", default_value = DEFAULT_URL)]
    pub url: String,
    /// Verify the node's certificate against this CA (PEM) and dial it over TLS.
    #[arg(long, env = "RAFTLANE_HEALTH_CA_FILE")]
    pub ca_file: Option<PathBuf>,
    /// Client certificate (PEM) for a node with mutual TLS; needs --key and --ca-file.
    #[arg(
        long,
        env = "RAFTLANE_HEALTH_CERT",
        requires = "key",
        requires = "ca_file"
    )]
    pub cert: Option<PathBuf>,
    /// The private key of --cert.
    #[arg(long, env = "RAFTLANE_HEALTH_KEY", requires = "cert")]
    pub key: Option<PathBuf>,
}

impl HealthArgs {
    /// Probe as the flags say.
    pub async fn run(&self) -> anyhow::Result<()> {
        let tls = match &self.ca_file {
            Some(ca) => {
                let identity = self.cert.as_deref().zip(self.key.as_deref());
                Some(ClientTls::from_files(ca, identity)?)
            }
            None => None,
        };
        check_with(&self.url, tls.as_ref()).await
    }
}

/// GET `url` once in plain HTTP; see [`check_with`].
pub async fn check(url: &str) -> anyhow::Result<()> {
    check_with(url, None).await
}

/// GET `url` once (over TLS with `tls`); `Ok` only for `200 OK`. Connect failures, TLS
/// failures, timeouts (3 s) and any other status are errors whose message carries the cause,
/// or the status and the (trimmed) body.
pub async fn check_with(url: &str, tls: Option<&ClientTls>) -> anyhow::Result<()> {
    let client = PeerClient::with_tls(Duration::from_secs(3), tls);
    let (status, _, body) = client
        .call(Method::GET, url, &[], Vec::new())
        .await
        .with_context(|| format!("{url} did not answer"))?;
    if status != StatusCode::OK {
        let body = String::from_utf8_lossy(&body);
        let body: String = body.trim().chars().take(200).collect();
        bail!("{url} answered {status}: {body}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ok_only_for_200() {
        use axum::http::StatusCode as S;
        use axum::routing::get;
        let app = axum::Router::new()
            .route("/ok", get(|| async { "ok" }))
            .route(
                "/no",
                get(|| async { (S::SERVICE_UNAVAILABLE, "{\"ready\":false}") }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        check(&format!("http://{addr}/ok")).await.unwrap();
        let err = check(&format!("http://{addr}/no"))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("503"), "{err}");
        // Nothing listens on port 1.
        assert!(check("http://127.0.0.1:1/readyz").await.is_err());
    }
}
