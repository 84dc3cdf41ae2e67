//! API principals, their tokens, org scopes and bound names (docs/SPEC.md §9.1, §9.8).

use crate::model::principal::Role;
use serde::{Deserialize, Serialize};

/// Create or replace an API principal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutPrincipal {
    pub name: String,
    /// Hex SHA-256 of the bearer token; the token itself never enters the log.
    pub token_hash: String,
    pub role: Role,
    pub channels: Option<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevokePrincipal {
    pub name: String,
}

/// The audit orgs a principal may read and append to (docs/SPEC.md §9.4); `None` clears the
/// scope (every org for an unscoped principal, none for a channel-scoped one). Proposed with
/// each token creation, before the principal's `PutPrincipal`, so a re-created principal
/// never keeps an earlier scope.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetPrincipalOrgs {
    pub name: String,
    pub orgs: Option<Vec<String>>,
}

/// [`PutPrincipal`] with a token the proposer drew at random (`POST /v1/tokens`, docs/SPEC.md
/// §9.1): `nonce` is the random value the token is derived from under a key only the nodes
/// hold (the token itself never enters the log). Answers `TokenIssued { nonce }`, so a retry of
/// the same request, answered with the remembered outcome, re-derives the very token that was
/// stored; a new request draws a new nonce and so a new token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssueToken {
    pub principal: PutPrincipal,
    pub nonce: String,
}

/// An admin binds a lease owner name or engine node id to a principal ahead of its first use
/// (`principal: Some`), or releases the binding (`None`), docs/SPEC.md §9.8. A reservation
/// for a principal that does not exist is `UnknownPrincipal`; one of a name bound to another
/// principal is `AlreadyExists` (field `owner`): release it first. Answers `Count(1)` when the
/// binding changed, `Count(0)` when it already was so. Audited `owner.reserve` /
/// `owner.release`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReserveOwner {
    pub owner: String,
    pub principal: Option<String>,
}
