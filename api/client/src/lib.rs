//! # raftlane-client
//!
//! A typed async Rust client for raftlane's HTTP API, for workers, tools and tests. It depends
//! on the contract crate and an HTTP stack only — no RocksDB, no Raft — so a program that calls
//! raftlane builds in about a minute from a cold cache (figure in docs/BENCHMARKS.md).
//!
//! [`Client`] knows every node, follows whichever answers, moves on after a connection error, a
//! timeout or a 503, and sends every retry of a write under the same `Request-Id`, so the
//! cluster applies it once. It has a method for every route of the API, each sending the
//! contract's request type and decoding its answer type; [`routes`] lists those routes, once
//! each, and `tests/client_routes.rs` holds the list against the server's route table and the
//! Python client's. [`transport`] is the HTTP layer it shares with node-to-node calls, [`tls`]
//! how both dial over TLS ([`Client::with_tls`]); both are the `raftlane-transport` crate's,
//! re-exported.

mod client;
mod error;
mod query;
pub mod route;
pub mod routes;

pub use raftlane_transport::http as transport;
pub use raftlane_transport::tls;

pub use client::audit::AuditSearch;
pub use client::backup::Backup;
pub use client::messages::{DeadLetterFilter, DeadStage, MessageFilter, MessageRead};
pub use client::work::LanePage;
pub use client::Client;
pub use error::ClientError;
pub use raftlane_contract as contract;
/// How fresh a read must be (`?consistency=`, docs/SPEC.md §10): the contract's, which
/// [`Client::with_consistency`] sets for every read of the state.
pub use raftlane_contract::Consistency;
pub use raftlane_contract::{
    ClaimedRow, Enqueued, FifoClaim, RowAction, RowActionItem, RowActionResult, RowAnswer,
};
/// The state machine's enums some requests and filters name, which the contract does not
/// re-export: a message's status, a principal's role, an approval's status.
pub use raftlane_statemachine::model::{
    approval::ApprovalStatus, message::MessageStatus, principal::Role,
};
