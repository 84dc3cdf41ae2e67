//! Administration: transform state, reference snapshots, retention, approvals; the queries of
//! a namespace and of the approvals list.

use crate::page::PageLimit;
use crate::read::Consistency;
use raftlane_statemachine::model::approval::{Approval, ApprovalStatus};
use raftlane_statemachine::model::ids::{ApprovalId, MessageId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// `GET /v1/state/{namespace}`: the namespace's version (bumped by every write to it), and with
/// `?entries=true` its entries read at that version (how a follower's cache converges).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NamespaceVersion {
    pub namespace: String,
    pub version: u64,
    /// Only with `?entries=true`: every entry, in key order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<Vec<StateValue>>,
}

/// The query of `GET /v1/state/{namespace}`: `?entries=true` adds the entries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NamespaceQuery {
    #[serde(default)]
    pub entries: bool,
    /// `stale`: answered from this node's state as it is; absent or `linearizable`: after
    /// catching up with the leader's commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
}

/// `GET /v1/state`: every namespace with its version, in name order (a namespace whose entries
/// were all purged stays, with the version the purge gave it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NamespaceList {
    pub namespaces: Vec<NamespaceVersion>,
}

/// `GET /v1/state/{namespace}/{key}`: one transform-state entry. Members in the order the
/// server has always sent them (alphabetical).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StateValue {
    pub key: String,
    /// The message whose transform wrote it.
    pub message_id: MessageId,
    pub namespace: String,
    pub set_at: u64,
    /// The JSON the transform wrote (a string when the stored text is not JSON).
    pub value: Value,
}

/// `PUT /v1/reference/{name}`: replace a reference snapshot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReferenceRequest {
    pub version: ReferenceVersion,
    pub rows: BTreeMap<String, String>,
}

/// A reference snapshot's version as its writer names it: a number, or a text label such as
/// `"v1"` (then the stored number moves by one on every write and the label is kept beside
/// it; docs/SPEC.md §14.8).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ReferenceVersion {
    Number(u64),
    Label(String),
}

/// `PUT /v1/reference/{name}`: rows written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReferenceWritten {
    pub index: u64,
    pub row_count: u64,
}

/// `GET /v1/reference/{name}`: a reference snapshot, values decrypted. Members in the order
/// the server has always sent them (alphabetical).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Reference {
    /// The writer's text version, for a set last written with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub row_count: u64,
    pub rows: BTreeMap<String, String>,
    pub synced_at: u64,
    pub version: u64,
}

impl From<raftlane_statemachine::model::state::ReferenceSnapshot> for Reference {
    fn from(s: raftlane_statemachine::model::state::ReferenceSnapshot) -> Self {
        Reference {
            label: None,
            row_count: s.row_count,
            rows: s.rows,
            synced_at: s.synced_at,
            version: s.version,
        }
    }
}

/// One reference set of `GET /v1/reference`, without its rows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReferenceSetInfo {
    pub name: String,
    pub version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub synced_at: u64,
    pub row_count: u64,
}

/// `GET /v1/reference`: every reference set, in name order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReferenceList {
    pub sets: Vec<ReferenceSetInfo>,
}

/// What `POST /v1/retention/purge` purges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PurgeKind {
    /// Message bodies (the messages stay, marked purged).
    Bodies,
    DeadLetters,
    /// Transform state.
    State,
}

/// `POST /v1/retention/purge`: purge what is older than an age or a cutoff (exactly one of the
/// two).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PurgeRequest {
    pub kind: PurgeKind,
    /// The age in ms: the server turns it into `now − age`, since the state machine has no clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub older_than_ms: Option<u64>,
    /// The cutoff itself (ms since the epoch): what is older than it goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub older_than: Option<u64>,
}

/// `POST /v1/retention/purge`: how many records were purged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Purged {
    pub index: u64,
    pub purged: u64,
}

/// `POST /v1/approvals`: ask another principal to approve `operation`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRequest {
    pub operation: String,
    /// Any JSON; absent: `null`.
    #[serde(default)]
    pub params: Value,
    /// Absent: 24 h.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
}

/// `POST /v1/approvals` (201): the approval's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalCreated {
    pub id: ApprovalId,
    pub index: u64,
}

/// `GET /v1/approvals/{id}`: an approval, its `status` as of the read (`expired` once past
/// `expires_at`). Members in the order the server has always sent them (alphabetical);
/// absent values are `null`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalView {
    /// The caller's key, for an approval made by `POST /v1/approvals/keyed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub approver: Option<String>,
    pub decided_at: Option<u64>,
    pub expires_at: u64,
    pub id: ApprovalId,
    pub operation: String,
    /// The request's `params`, as JSON text.
    pub params: String,
    pub requested_at: u64,
    pub requester: String,
    pub status: ApprovalStatus,
}

impl ApprovalView {
    /// `a` with its status as of `now` (the state machine's clock).
    pub fn at(a: Approval, now: u64) -> Self {
        let status = a.status_at(now);
        ApprovalView {
            key: None,
            approver: a.approver,
            decided_at: a.decided_at,
            expires_at: a.expires_at,
            id: a.id,
            operation: a.operation,
            params: a.params,
            requested_at: a.requested_at,
            requester: a.requester,
            status,
        }
    }
}

impl ApprovalView {
    /// An approval the caller keyed, with its status as stored: its caller judges expiry
    /// itself (docs/SPEC.md §14.10); `expires_at` 2^64 − 1 means "never".
    pub fn keyed(key: Option<String>, a: Approval) -> Self {
        ApprovalView {
            key,
            status: a.status,
            ..ApprovalView::at(a, 0)
        }
    }
}

/// `POST /v1/approvals/keyed`: an approval the caller names with its own `key` and dates
/// itself (an engine's pending approvals; docs/SPEC.md §14.10).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyedApprovalRequest {
    pub key: String,
    pub operation: String,
    /// Kept as the caller's text.
    pub params: String,
    pub requester: String,
    /// ms since the epoch.
    pub requested_at: u64,
    /// ms since the epoch; absent: never expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
}

/// `POST /v1/approvals/keyed/{key}/decide`: the caller's decision, as it names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyedDecideRequest {
    /// `approved`, `rejected` or `expired`.
    pub status: ApprovalStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    /// ms since the epoch.
    pub decided_at: u64,
}

/// `POST /v1/approvals/keyed/{key}/decide`: the decision recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct KeyedDecided {
    pub key: String,
    pub id: ApprovalId,
    pub status: ApprovalStatus,
    pub index: u64,
}

/// Which approvals `GET /v1/approvals` lists: only pending ones (a decided approval is read by
/// its id or key).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalListStatus {
    #[default]
    Pending,
}

/// The query of `GET /v1/approvals`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalListQuery {
    /// Only `pending` is listed.
    pub status: ApprovalListStatus,
    #[serde(default, skip_serializing_if = "PageLimit::is_default")]
    pub limit: PageLimit<100>,
    /// `stale`: answered from this node's state as it is; absent or `linearizable`: after
    /// catching up with the leader's commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
}

/// `GET /v1/approvals?status=pending`: approvals still pending and unexpired at the request's
/// time, newest request first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalList {
    pub approvals: Vec<ApprovalView>,
}

/// `POST /v1/approvals/{id}/decide`: approve or reject (once, by a principal other than the
/// requester).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecideRequest {
    pub approve: bool,
}

/// `POST /v1/approvals/{id}/decide`: the decision taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalDecided {
    pub approved: bool,
    pub id: ApprovalId,
    pub index: u64,
}
