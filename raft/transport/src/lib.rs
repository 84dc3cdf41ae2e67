//! # raftlane-transport
//!
//! How anything dials a raftlane node: [`http`], the HTTP/1.1 calls with connection reuse, a
//! per-call timeout and the one reading of a peer address, and [`tls`], the rustls setup those
//! calls use with a cluster's CA and an optional client certificate. One implementation for
//! the Rust client (`raftlane-client`), the nodes' forwarded writes and Raft's own RPCs
//! (`raftlane-raft`), so they all dial the same way; it sits below both, so Raft does not
//! depend on the API's client.

pub mod http;
pub mod tls;
