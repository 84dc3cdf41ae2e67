//! # raftlane-client
//!
//! A typed async Rust client for raftlane's HTTP API, for workers, tools and tests. It depends
//! on the contract crate and an HTTP stack only — no RocksDB, no Raft — so a program that calls
//! raftlane builds in about a minute from a cold cache (figure in docs/BENCHMARKS.md).
//!
//! [`Client`] knows every node, follows whichever answers, moves on after a connection error, a
//! timeout or a 503, and sends every retry of a write under the same `Request-Id`, so the
//! cluster applies it once. [`transport`] is the HTTP layer it shares with node-to-node calls,
//! [`tls`] how both dial over TLS ([`Client::with_tls`]); both are the `raftlane-transport`
//! crate's, re-exported.

mod client;

pub use raftlane_transport::http as transport;
pub use raftlane_transport::tls;

pub use client::{Client, ClientError};
pub use raftlane_contract as contract;
pub use raftlane_contract::{
    ClaimedRow, Enqueued, FifoClaim, RowAction, RowActionItem, RowActionResult, RowAnswer,
};
