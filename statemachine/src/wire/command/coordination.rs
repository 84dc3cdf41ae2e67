//! Engine coordination: nodes, leadership leases and counters (docs/SPEC.md §15).

use serde::{Deserialize, Serialize};

/// An engine process says it is alive (docs/SPEC.md §15.1): registers it, or refreshes its
/// `last_seen`; a node that had left (or is new) starts a new incarnation at `t`. Answers `Done`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeHeartbeat {
    pub node_id: String,
    pub host: Option<String>,
    pub pid: Option<u32>,
}

/// An engine process stops cleanly: its record becomes a `left` tombstone and any leadership
/// it holds is given up. Answers `Count(1)`, or `Count(0)` for a node never registered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeLeave {
    pub node_id: String,
}

/// Take or renew a group's leadership lease for `node_id` until `t + ttl_ms` (§15.2): granted
/// when the lease is free, expired, or already `node_id`'s. Answers `Leader` with the lease as
/// it stands afterwards, whoever holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CampaignLeadership {
    pub group: String,
    pub node_id: String,
    pub ttl_ms: u64,
}

/// Give a group's leadership up, if `node_id` holds it. Answers `Count(1)` or `Count(0)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResignLeadership {
    pub group: String,
    pub node_id: String,
}

/// Add one to a shared counter (§15.3). Answers `Count(new value)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BumpCounter {
    pub name: String,
}
