//! The router: the route table mounted with the public routes' layers (rate limit, Request-Id
//! binding), the node-to-node routes, body limits and the JSON fallbacks.

use crate::error::ApiError;
use crate::route_table::{api_routes, openapi_document};
use crate::state::AppState;
use crate::write::{self, signing};
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;
use std::sync::Arc;

/// The whole API. `extra` is merged in (the node mounts the Raft transport there).
pub fn router(state: Arc<AppState>, extra: Router) -> Router {
    let limit = state.max_body_bytes;
    if let serde_json::Value::Object(doc) = openapi_document() {
        let _ = state.openapi.set(raftlane_contract::OpenApiDocument(doc));
    }
    let mut app: Router<Arc<AppState>> = Router::new();
    for route in api_routes() {
        app = app.route(route.path, route.handler);
    }
    // Inside each matched route (its template is known there): count it and time it.
    app = app.route_layer(axum::middleware::from_fn_with_state(
        state.metrics.clone(),
        crate::metrics::http::observe,
    ));
    // Around the public routes only (the internal ones are added below): the rate limit first,
    // so a limited request is refused before its body is read, then the Request-Id binding.
    app = app
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::request_id::bind,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::rate_limit_layer::limit,
        ));
    // A forwarded write is the client's request re-encoded with its envelope and header-borne
    // fields, so it may be somewhat larger than the largest body a client may send.
    let forward_limit = limit.saturating_mul(2).saturating_add(1 << 20);
    app.route(
        signing::PATH_PROPOSE,
        post(crate::internal::propose).layer(DefaultBodyLimit::max(forward_limit)),
    )
    .route(
        signing::PATH_PROPOSE_BATCH,
        post(crate::internal::propose_batch).layer(DefaultBodyLimit::max(
            forward_limit.saturating_add(write::relay::MAX_CALL_BYTES),
        )),
    )
    .route(signing::PATH_READ_INDEX, get(crate::internal::read_index))
    .route(signing::PATH_MEMBERSHIP, post(crate::internal::membership))
    .method_not_allowed_fallback(method_not_allowed)
    .fallback(not_found)
    .layer(DefaultBodyLimit::max(limit))
    .with_state(state)
    .merge(extra)
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such route")
}

/// The path exists but not for this method (axum's default answers with an empty body).
async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not accept that method",
    )
}
