//! What several engine processes sharing one raftlane cluster coordinate through it
//! (docs/SPEC.md §15): who is there (a registry with heartbeats), who leads (one lease with a
//! fence per group), and shared counters (the engine's configuration version).

use crate::model::ids::{Fence, Millis};
use serde::{Deserialize, Serialize};

/// Whether a registered node is running or left cleanly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    Active,
    /// Stopped cleanly (NodeLeave): a tombstone, kept so the registry shows it went.
    Left,
}

impl NodeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeStatus::Active => "active",
            NodeStatus::Left => "left",
        }
    }
}

/// One engine process in the registry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRecord {
    pub node_id: String,
    pub host: Option<String>,
    pub pid: Option<u32>,
    /// When this incarnation registered (the first heartbeat after a start or a leave).
    pub started_at: Millis,
    /// The last heartbeat: a reader judges liveness by it against its own time.
    pub last_seen: Millis,
    pub status: NodeStatus,
}

/// A group's leadership lease. `fence` changes exactly when the owner changes (it is the
/// operation id of the campaign that took it), so work stamped with an old fence can be told
/// from the current leader's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderLease {
    pub owner: String,
    pub expires_at: Millis,
    pub fence: Fence,
}

impl LeaderLease {
    /// Whether the lease still binds at `t`: live through `expires_at` inclusive, the
    /// convention of lane leases (`rules::fifo::lease_is_live`), so both kinds of lease end the
    /// same way.
    pub fn is_live(&self, t: Millis) -> bool {
        t <= self.expires_at
    }
}
