//! Engine coordination (docs/SPEC.md §15): engine processes sharing one raftlane cluster keep
//! a registry with heartbeats (`/v1/engine/nodes`), elect one leader per group through a lease
//! with a fence (`/v1/engine/leadership/{group}`), share counters (`/v1/engine/counters`) and
//! see which lanes a node holds (`/v1/engine/lanes/{owner}`).

use raftlane_statemachine::model::coordination::{LeaderLease, NodeRecord};
use raftlane_statemachine::model::ids::Millis;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `PUT /v1/engine/nodes/{node_id}` (an empty body is `{}`): a heartbeat.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// `PUT /v1/engine/nodes/{node_id}`: the heartbeat was applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HeartbeatAck {
    pub index: u64,
}

/// `DELETE /v1/engine/nodes/{node_id}`: whether the node was registered (now `left`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NodeLeft {
    pub left: bool,
    pub index: u64,
}

/// One engine process of the registry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EngineNode {
    pub node_id: String,
    pub host: Option<String>,
    pub pid: Option<u32>,
    pub started_at: Millis,
    pub last_seen: Millis,
    /// `active`, or `left` after a clean stop.
    pub status: String,
}

impl From<NodeRecord> for EngineNode {
    fn from(n: NodeRecord) -> Self {
        EngineNode {
            status: n.status.as_str().to_string(),
            node_id: n.node_id,
            host: n.host,
            pid: n.pid,
            started_at: n.started_at,
            last_seen: n.last_seen,
        }
    }
}

/// `GET /v1/engine/nodes`: every registered node, by node id, and the time of the read (judge
/// a node's freshness by `now − last_seen`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EngineNodes {
    pub nodes: Vec<EngineNode>,
    pub now: Millis,
}

/// `POST /v1/engine/leadership/{group}`: take or renew the group's lease for `node_id`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CampaignRequest {
    pub node_id: String,
    pub ttl_ms: u64,
}

/// `POST /v1/engine/leadership/{group}/resign`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResignRequest {
    pub node_id: String,
}

/// `POST /v1/engine/leadership/{group}/resign`: whether `node_id` held it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Resigned {
    pub resigned: bool,
    pub index: u64,
}

/// A group's leadership lease (absent members: nobody ever held it, or it was given up), and
/// the time it was read at. The campaign's answer is the lease after it, whoever won.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Leadership {
    pub group: String,
    pub owner: Option<String>,
    /// Live through this time inclusive.
    pub expires_at: Option<Millis>,
    /// Changes exactly when the owner changes.
    pub fence: Option<u64>,
    pub now: Millis,
}

impl Leadership {
    pub fn of(group: String, lease: Option<LeaderLease>, now: Millis) -> Self {
        Leadership {
            group,
            owner: lease.as_ref().map(|l| l.owner.clone()),
            expires_at: lease.as_ref().map(|l| l.expires_at),
            fence: lease.map(|l| l.fence.0),
            now,
        }
    }
}

/// `GET` and `POST /v1/engine/counters/{name}`: a shared counter (after the bump, for `POST`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CounterValue {
    pub name: String,
    pub value: u64,
}

/// `GET /v1/engine/lanes/{owner}`: the lanes whose lease `owner` holds now, as `stage:name`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HeldLanes {
    pub owner: String,
    pub lanes: Vec<String>,
}
