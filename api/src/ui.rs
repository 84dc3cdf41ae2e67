//! `GET /ui`: the operator's page. One HTML file (`ui/page.html`) with its style and a little
//! script inline, built into the binary: no build step, nothing fetched from anywhere else.
//!
//! Why the page itself needs no token: it holds no data. Its script reads the API (`GET
//! /v1/cluster`, `/v1/stats`, `/v1/lanes`) with the token the operator types into it, so the
//! page shows exactly what that token may read, through the same checks as any client.
//! The Content-Security-Policy lets the page run its own script (by its SHA-256) and talk to
//! this node only.

use axum::http::header;
use axum::response::IntoResponse;
use base64::Engine;
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

/// The page.
pub const PAGE: &str = include_str!("ui/page.html");

/// The page's one inline script, as the browser hashes it (between the tags).
pub fn script() -> &'static str {
    let start = PAGE.find("<script>").map_or(0, |i| i + "<script>".len());
    let end = PAGE.rfind("</script>").unwrap_or(PAGE.len());
    PAGE.get(start..end).unwrap_or("")
}

/// The Content-Security-Policy the page is served with.
pub fn content_security_policy() -> &'static str {
    static CSP: OnceLock<String> = OnceLock::new();
    CSP.get_or_init(|| {
        let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(script()));
        format!(
            "default-src 'none'; script-src 'sha256-{hash}'; style-src 'unsafe-inline'; \
             connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
        )
    })
}

pub async fn page() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, content_security_policy()),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        PAGE,
    )
}
