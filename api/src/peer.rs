//! Node-to-node HTTP calls use the client crate's transport: one implementation of dialing,
//! timeouts and address parsing for clients and forwarding nodes alike.

pub use raftlane_client::transport::{base_url, split_scheme, PeerClient, PeerError};
