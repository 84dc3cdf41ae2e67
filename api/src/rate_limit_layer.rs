//! The rate limit applied to each request ([`crate::rate_limit`] holds the buckets): a known
//! token over its rate is answered `429` before its body is read.

use crate::backend;
use crate::state::AppState;
use crate::tokens::{ct_eq, sha256_hex};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Instant;

/// Middleware: `429` for a known token over its rate; everything else passes.
pub async fn limit(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let Some(limiter) = state.rate_limiter.as_ref() else {
        return next.run(req).await;
    };
    if !req.uri().path().starts_with("/v1/") {
        return next.run(req).await;
    }
    let token = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let Some(token) = token else {
        return next.run(req).await;
    };
    let hash = sha256_hex(token);
    let known = ct_eq(hash.as_bytes(), state.admin_token_hash.as_bytes())
        || matches!(
            backend::read(state.backend.as_ref(), |r| r.principal_by_token_hash(&hash)),
            Ok(Some(_))
        );
    if !known {
        return next.run(req).await;
    }
    match limiter.take(&hash, Instant::now()) {
        Ok(()) => next.run(req).await,
        Err(wait) => {
            // Whole seconds, rounded up: a client that waits that long finds a request ready.
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            crate::error::ApiError::rate_limited(secs.max(1)).into_response()
        }
    }
}
