//! The cluster: status, digest, membership changes, and the unauthenticated probes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `GET /v1/cluster/digest`: the SHA-256 of this node's whole applied state at `last_applied`.
/// Two nodes at the same `last_applied` must answer the same digest (the chaos suite and the
/// compose test compare them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StateDigest {
    pub node_id: u64,
    pub last_applied: u64,
    /// Lower-case hex.
    pub digest: String,
}

/// `POST /v1/cluster/leader`: hand leadership to a voter (an empty body: the voter whose log
/// reaches furthest).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LeaderTransferRequest {
    /// The voter to lead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<u64>,
}

/// `POST /v1/cluster/leader`: the leader once the transfer is done, as the answering node sees
/// it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LeaderTransferred {
    pub leader_id: Option<u64>,
}

/// `POST /v1/cluster/log-format`: raise the cluster's log format (docs/SPEC.md §2.8), the last
/// step of a rolling upgrade, once every member runs a build that reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogFormatRequest {
    /// The format to write from now on: higher than or equal to the current one.
    pub format: u32,
}

/// `GET` and `POST /v1/cluster/log-format`: the format the cluster writes, as this node has
/// applied it, and the formats this node's build reads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LogFormatStatus {
    pub node_id: u64,
    /// The cluster's log format: what its leader writes.
    pub log_format: u32,
    /// Every log format this node's build reads, oldest first.
    pub reads: Vec<u32>,
}

/// Response header of `GET /v1/cluster/snapshot`: the last log index the backup reflects.
pub const SNAPSHOT_INDEX_HEADER: &str = "x-raftlane-snapshot-index";
/// Response header of `GET /v1/cluster/snapshot`: the node that served it.
pub const SNAPSHOT_NODE_HEADER: &str = "x-raftlane-node-id";

/// `POST /v1/cluster/snapshot`: the snapshot this node now has, covering every entry it had
/// applied when asked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SnapshotTaken {
    pub node_id: u64,
    /// The last log index the snapshot covers.
    pub index: u64,
}

/// `GET /v1/cluster`: what this node knows of the cluster (also how a client finds the leader).
///
/// Members in alphabetical order, the order clients read on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClusterStatus {
    pub last_applied: u64,
    pub last_log_index: u64,
    /// `null` while no leader is known.
    pub leader_id: Option<u64>,
    pub membership: Vec<Member>,
    pub node_id: u64,
    pub term: u64,
    /// Learners this node removed, while it led, because they did not catch up within the
    /// node's bound (`--learner-catchup-timeout`), oldest first; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed_learners: Vec<RemovedLearner>,
}

/// A learner removed because it did not catch up in time (docs/SPEC.md §9.5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RemovedLearner {
    pub id: u64,
    pub addr: String,
    /// Why, in words: how far it got, where the leader was, and the bound.
    pub reason: String,
    /// When it was removed (ms since the epoch, by the removing node's clock).
    pub removed_at_ms: u64,
}

/// One member of the cluster (members alphabetical, as always sent).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Member {
    /// Its HTTP address.
    pub addr: String,
    pub id: u64,
    /// A voter, or a learner.
    pub voter: bool,
}

/// `POST /v1/cluster/learners`: add a learner; answered once it caught up (or, past the node's
/// bound, with a 409 saying it was removed again).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LearnerRequest {
    pub id: u64,
    /// `host:port`, optionally with `http://`.
    pub addr: String,
}

/// `POST /v1/cluster/membership`: make the voter set exactly these nodes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MembershipRequest {
    pub voters: Vec<u64>,
}

/// A change that took effect (`{"ok": true}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Ack {
    pub ok: bool,
}

/// `GET /healthz`: the process answers (`{"status": "ok"}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Health {
    pub status: String,
}

/// `GET /readyz`: 200 `{"ready": true}`, or 503 `{"ready": false, "reason": ...}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Readiness {
    pub ready: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `GET /openapi.json`: the OpenAPI 3.0 document of this API.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct OpenApiDocument(pub Map<String, Value>);
