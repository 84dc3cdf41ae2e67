//! API principals and their tokens.

use raftlane_statemachine::model::principal::{Principal, Role};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `GET /v1/tokens`: every principal (never a token or its hash).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenList {
    pub tokens: Vec<TokenInfo>,
}

/// One principal. Members in the order the server has always sent them (alphabetical).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenInfo {
    /// `null`: every channel.
    pub channels: Option<Vec<String>>,
    pub created_at: u64,
    pub name: String,
    pub role: Role,
}

impl From<Principal> for TokenInfo {
    fn from(p: Principal) -> Self {
        TokenInfo {
            channels: p.channels,
            created_at: p.created_at,
            name: p.name,
            role: p.role,
        }
    }
}

/// `POST /v1/tokens`: create or rotate `name`'s token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenRequest {
    pub name: String,
    pub role: Role,
    /// Absent: every channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<Vec<String>>,
    /// The audit orgs the principal may read and append to. Absent: every org for an unscoped
    /// principal, none for a channel-scoped one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orgs: Option<Vec<String>>,
}

/// `POST /v1/tokens` (201): the token, shown this once (only its hash is kept).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenCreated {
    pub index: u64,
    pub name: String,
    pub role: Role,
    pub token: String,
}

/// `DELETE /v1/tokens/{name}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Revoked {
    pub index: u64,
    pub revoked: bool,
}

/// `PUT /v1/owners/{owner}`: bind a lease owner name or engine node id to a principal ahead of
/// its first use (docs/SPEC.md §9.8).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OwnerReservation {
    pub principal: String,
}

/// `GET`, `PUT` and `DELETE /v1/owners/{owner}`: whose the name is (`null`: nobody's yet).
/// The writes answer their log `index` and whether the binding `changed`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OwnerBinding {
    pub owner: String,
    pub principal: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<bool>,
}
