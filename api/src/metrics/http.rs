//! The route layer that counts each answered request and its latency
//! (`raftlane_http_requests_total`, `raftlane_http_request_duration_seconds`), labelled by the
//! route's template so the series stay few whatever paths clients send.

use super::Metrics;
use axum::extract::{MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;
use std::time::Instant;

/// A method as a label: the standard ones by name, anything else as `other` (a client may send
/// any token as a method; each would otherwise be a series).
fn method_label(m: &Method) -> &'static str {
    match *m {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// Time the request through the rest of the stack and count it under its route.
pub async fn observe(State(metrics): State<Arc<Metrics>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = req.extensions().get::<MatchedPath>().cloned();
    let method = method_label(req.method());
    let response = next.run(req).await;
    if let Some(route) = route {
        metrics.record_request(
            route.as_str(),
            method,
            response.status().as_u16(),
            started.elapsed().as_secs_f64(),
        );
    }
    response
}
