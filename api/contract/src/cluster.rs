//! Answers about the cluster and its configuration.

use serde::{Deserialize, Serialize};

/// `GET /v1/cluster/digest`: the SHA-256 of this node's whole applied state at `last_applied`.
/// Two nodes at the same `last_applied` must answer the same digest (the chaos suite and the
/// compose test compare them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateDigest {
    pub node_id: u64,
    pub last_applied: u64,
    /// Lower-case hex.
    pub digest: String,
}

/// `PUT /v1/config`: the version the new configuration got, and the log index it was applied at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigWritten {
    pub version: u64,
    pub index: u64,
}
