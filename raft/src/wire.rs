//! What travels between nodes: endpoint paths and the body encoding, shared by the client
//! ([`crate::network`]) and the server ([`crate::server`]) so they cannot drift apart.
//!
//! Bodies are bincode (`raftlane_statemachine::codec`, the same stable encoding as the log):
//! requests are openraft's RPC structs, responses are `Result<openraft response, RaftError>`, so
//! a remote Raft error (e.g. the peer is shutting down) reaches the caller as a `RemoteError`
//! rather than an opaque HTTP failure.

use raftlane_statemachine::codec;
use raftlane_statemachine::wire::LogFormat;
use serde::{de::DeserializeOwned, Deserialize, Serialize};

/// Prefix of every Raft endpoint (the API router delegates everything below it).
pub const PREFIX: &str = "/raft/";
/// AppendEntries (replication and heartbeats).
pub const PATH_APPEND: &str = "/raft/append";
/// RequestVote.
pub const PATH_VOTE: &str = "/raft/vote";
/// A leader on slow storage asks a voter to campaign ([`crate::slow_storage`]).
pub const PATH_ELECT: &str = "/raft/elect";
/// Which log formats the answering node's build reads ([`crate::log_format`]).
pub const PATH_FORMATS: &str = "/raft/formats";
/// InstallSnapshot (one chunk per request).
pub const PATH_SNAPSHOT: &str = "/raft/snapshot";
pub const CONTENT_TYPE: &str = "application/x-raftlane-bincode";
/// Largest body read or sent: anything the codec can encode (its own limit) plus framing.
/// Snapshot chunks are 1 MiB by default and append batches are bounded by
/// `max_payload_entries`; a batch over the limit is reported as `PayloadTooLarge`, so openraft
/// retries it with fewer entries.
pub const MAX_BODY_BYTES: usize = codec::MAX_ENCODED_BYTES as usize + 64 * 1024;

pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, codec::DecodeError> {
    codec::try_encode(value)
}

pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, codec::DecodeError> {
    codec::decode(bytes)
}

/// The `/raft/formats` request ([`crate::log_format`]); it carries nothing: the answer is the
/// build's.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FormatsRequest {}

/// The `/raft/formats` answer: every log format the answering node's build reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormatsResponse {
    pub reads: Vec<u32>,
}

impl FormatsResponse {
    /// This build's answer.
    pub fn of_this_build() -> Self {
        Self {
            reads: LogFormat::read_numbers(),
        }
    }
}
