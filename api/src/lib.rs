//! # raftlane-api
//!
//! The HTTP API of a raftlane node (axum): routes, request and response types, bearer-token
//! auth with roles and channel scopes, forwarding of writes to the leader, linearizable reads,
//! errors as JSON, the OpenAPI document, and a typed Rust client.
//!
//! The API talks to replication only through the [`backend::Backend`] trait, so nothing here
//! depends on how a command reaches a majority.

pub mod app;
pub mod auth;
pub mod backend;
pub mod batch;
pub mod client;
pub mod crypto;
pub mod error;
pub mod forward;
pub mod internal;
pub mod metrics;
pub mod openapi;
pub mod peer;
pub mod relay;
pub mod request_id;
pub mod routes;

pub use app::{router, ApiConfig, AppState};
pub use backend::{Backend, LocalBackend, ProposeError};
pub use error::ApiError;
