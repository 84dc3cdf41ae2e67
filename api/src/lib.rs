//! # raftlane-api
//!
//! The API of a raftlane node, in two layers:
//!
//! - **HTTP** (axum): [`state`] (what handlers reach), [`extract`] (extractors with JSON
//!   errors), [`route_spec`] and [`route_table`] (every route, its contract types), [`router`],
//!   [`clock`], [`tokens`] (hashing, comparing and deriving tokens), [`auth`] (bearer tokens, roles,
//!   channel scopes), [`by_id`] (rows and messages named by id: outside the scope, as missing), [`error`] (errors as JSON, and the one mapping of the write path's
//!   errors to statuses), [`routes`], [`internal`] (the node-to-node routes and the verification
//!   of their signed calls), [`request_id`], [`rate_limit`] and [`rate_limit_layer`], [`dual_control`] (which actions
//!   need a second person's approval) and [`openapi`]. It parses and checks requests,
//!   builds the commands, and answers.
//! - **Write path** ([`mod@write`]), below it and knowing nothing of HTTP serving: the
//!   [`write::Proposer`] takes a command's envelope, a linearizable read or a membership change
//!   made at this node to the leader (group commit, batched forwarding from followers, signed
//!   node-to-node calls, one bounded retry loop) and answers with [`write::WriteError`]; it also
//!   holds what every proposal gets on its way (encryption at rest, row-action defaults, claim
//!   containment of poison rows, idle claims answered without a write).
//!
//! Both talk to replication only through the [`backend::Backend`] trait, so nothing here
//! depends on how a command reaches a majority. Encryption at rest is the write path's
//! ([`write::at_rest`], with the keyring of [`crypto`]): it seals what this node proposes and
//! opens what it serves, so the HTTP layer only ever handles plaintext. The typed Rust client
//! is the `raftlane-client` crate.

pub mod auth;
pub mod backend;
pub mod body_deadline;
pub mod by_id;
pub mod clock;
pub mod crypto;
pub mod dual_control;
pub mod error;
pub mod extract;
pub mod internal;
pub mod metrics;
pub mod openapi;
pub mod page;
pub mod peer;
pub mod rate_limit;
pub mod rate_limit_layer;
pub mod request_id;
pub mod route_spec;
pub mod route_table;
pub mod router;
pub mod routes;
pub mod state;
pub mod tokens;
pub mod ui;
pub mod wait;
pub mod write;

pub use backend::{Backend, LocalBackend, ProposeError};
pub use error::ApiError;
pub use router::router;
pub use state::{ApiConfig, AppState};
pub use write::{Proposer, WriteError};
