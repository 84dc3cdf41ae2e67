//! `raftlane health --url URL`: a readiness probe for container health checks. Scratch images
//! have no curl or shell, so the compose healthcheck runs the binary itself; it exits non-zero
//! unless the URL answers `200` within a few seconds.

use anyhow::{bail, Context};
use hyper::{Method, StatusCode};
use raftlane_api::peer::PeerClient;
use std::time::Duration;

/// The default probe target: this node's readiness route on the default port.
pub const DEFAULT_URL: &str = "http://127.0.0.1:7001/readyz";

/// GET `url` once; `Ok` only for `200 OK`. Connect failures, timeouts (3 s) and any other
/// status are errors whose message carries the status and the (trimmed) body.
pub async fn check(url: &str) -> anyhow::Result<()> {
    let client = PeerClient::new(Duration::from_secs(3));
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
