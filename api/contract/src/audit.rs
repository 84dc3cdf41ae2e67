//! The audit chain: append, list, anchor, verify, seal; the query of its reads.

use crate::page::PageLimit;
use crate::read::Consistency;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `POST /v1/audit`: append a row to an org's chain.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditAppendRequest {
    pub action: String,
    /// A channel the row is about (the token must be allowed it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// Absent: the default org.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub org: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Whom the row names as its actor, when the caller records on behalf of its own users
    /// (an engine's sign-ins, views, exports); absent: the calling principal (docs/SPEC.md §14.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
}

/// `POST /v1/audit` and `POST /v1/audit/seal`: the row's place in the chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AuditAppended {
    /// Hex SHA-256 of the row.
    pub hash: String,
    pub index: u64,
    pub seq: u64,
}

/// `POST /v1/audit/seal`: close the org's era.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditSealRequest {
    pub org: String,
}

/// `GET /v1/audit`: an org's rows from `from`, those about channels the token may see.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AuditRows {
    pub org: String,
    pub rows: Vec<AuditEntry>,
}

/// One audit row. Members in alphabetical order, the order clients read on the wire; absent
/// values are `null`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AuditEntry {
    pub action: String,
    pub actor: Option<String>,
    pub channel: Option<String>,
    pub detail: Option<String>,
    /// Hex SHA-256.
    pub hash: String,
    pub org: String,
    /// Hex SHA-256 of the previous row.
    pub prev_hash: String,
    /// The authenticated principal that wrote the row when the caller named its `actor`
    /// (`POST /v1/audit` with `actor`): the row reads "`actor` via `principal`" (docs/SPEC.md
    /// §9.8). `null` when the actor is the principal that wrote it.
    pub principal: Option<String>,
    pub seq: u64,
    pub ts: u64,
}

impl From<raftlane_statemachine::model::audit::AuditRow> for AuditEntry {
    fn from(row: raftlane_statemachine::model::audit::AuditRow) -> Self {
        AuditEntry {
            action: row.action,
            actor: row.actor,
            channel: row.channel_id,
            detail: row.detail,
            hash: hex(&row.hash),
            org: row.org,
            prev_hash: hex(&row.prev_hash),
            principal: row.principal,
            seq: row.seq,
            ts: row.ts,
        }
    }
}

/// `GET /v1/audit/anchor`: the chain's tip, to keep elsewhere and verify against later.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AuditAnchor {
    /// Rows in the chain.
    pub count: u64,
    /// Seals so far.
    pub era: u64,
    /// Hex SHA-256 of the last row.
    pub head: String,
    pub org: String,
}

/// `GET /v1/audit/verify`: the result of recomputing the chain. Members in the order the
/// server has always sent them (alphabetical); absent values are `null`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AuditVerification {
    pub count: u64,
    pub eras: u64,
    /// The first row that failed.
    pub first_bad_seq: Option<u64>,
    pub head_hash: String,
    pub ok: bool,
    /// Why it failed.
    pub reason: Option<String>,
}

impl From<raftlane_statemachine::query::audit::Verification> for AuditVerification {
    fn from(v: raftlane_statemachine::query::audit::Verification) -> Self {
        AuditVerification {
            count: v.count,
            eras: v.eras,
            first_bad_seq: v.first_bad_seq,
            head_hash: v.head_hash,
            ok: v.ok,
            reason: v.reason,
        }
    }
}

/// The query of the audit reads: `GET /v1/audit` (`from`, `limit`), `/v1/audit/search`
/// (`actor`, `action_prefix`, `limit`), `/v1/audit/anchor` and `/v1/audit/verify` (`count` and
/// `head`: an anchor kept elsewhere). Every one names its `org`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AuditQuery {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub org: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<u64>,
    #[serde(default, skip_serializing_if = "PageLimit::is_default")]
    pub limit: PageLimit<100>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// `stale`: answered from this node's state as it is; absent or `linearizable`: after
    /// catching up with the leader's commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
    /// `search`: the rows of this actor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// `search`: only actions starting with this (absent: any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action_prefix: Option<String>,
}

/// Lower-case hex, as the chain's hashes are shown.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
