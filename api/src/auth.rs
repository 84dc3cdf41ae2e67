//! Bearer-token authentication and role/channel authorization.
//!
//! Tokens are never stored: the state holds SHA-256 hashes (docs/SPEC.md §9.1), and the
//! bootstrap admin token is compared by hash too, in constant time.

use crate::app::AppState;
use crate::backend;
use crate::error::ApiError;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use raftlane_statemachine::model::principal::Role;
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// What a request may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Permission {
    /// Read messages, lanes, stats, config, audit: everything but bodies.
    Read,
    /// Read message bodies, payloads and captured responses (`GET /v1/messages/{id}?body=true`,
    /// recorded as a `viewed` event): every role but `metadata`.
    ReadBodies,
    /// Enqueue messages.
    Produce,
    /// Claim and complete work.
    Work,
    /// Replay, cancel, config changes, retention, audit appends, approvals.
    Operate,
    /// Principals and membership.
    Admin,
}

pub fn role_allows(role: Role, p: Permission) -> bool {
    match role {
        Role::Admin => true,
        Role::Operator => p != Permission::Admin,
        Role::Worker => matches!(
            p,
            Permission::Read | Permission::ReadBodies | Permission::Produce | Permission::Work
        ),
        Role::Viewer => matches!(p, Permission::Read | Permission::ReadBodies),
        Role::Metadata => p == Permission::Read,
    }
}

/// The authenticated caller.
#[derive(Clone, Debug)]
pub struct Caller {
    pub name: String,
    pub role: Role,
    /// `None` = every channel.
    pub channels: Option<Vec<String>>,
    /// The audit orgs in scope; `None` = no org scope set: every org for an unscoped caller,
    /// none for a channel-scoped one (docs/SPEC.md §9.4).
    pub orgs: Option<Vec<String>>,
    /// The ids this request's proposals carry (exactly-once retries).
    pub requests: crate::request_id::RequestIds,
    /// The request's `Raftlane-Client-Time-Ms` (test mode only; `None` otherwise).
    pub client_time: Option<u64>,
    /// The cluster's time as this node saw it when the request arrived (`Backend::cluster_now_ms`):
    /// what time-dependent reads and cutoffs use, never this node's own wall clock alone.
    pub clock_ms: u64,
    /// The request's `Raftlane-Approval`: the approval an action under dual control uses
    /// (`crate::dual_control`).
    pub approval: Option<raftlane_statemachine::model::ids::ApprovalId>,
}

impl Caller {
    /// The time this request's time-dependent reads and cutoffs use: the client's (test mode,
    /// `Raftlane-Client-Time-Ms`), else the cluster's time. (Its proposals carry it too, but the
    /// leader re-stamps them with the cluster's time: `raftlane_raft::clock`.)
    pub fn now_ms(&self) -> u64 {
        self.client_time.unwrap_or(self.clock_ms)
    }

    pub fn require(&self, p: Permission) -> Result<(), ApiError> {
        if role_allows(self.role, p) {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                format!("role {} may not {:?}", self.role.as_str(), p).to_lowercase(),
            ))
        }
    }

    /// [`Caller::require`] for an operation that is not about one channel (configuration,
    /// purges, reference data, approvals, audit seals, tokens, keys, membership, engine
    /// coordination, recovery sweeps): a channel-scoped token may not perform it, whatever its
    /// role (docs/SPEC.md §9.4).
    pub fn require_global(&self, p: Permission) -> Result<(), ApiError> {
        self.require(p)?;
        if self.channels.is_some() {
            return Err(ApiError::forbidden(
                "this operation spans every channel; a channel-scoped token cannot perform it",
            ));
        }
        Ok(())
    }

    pub fn may_see(&self, channel: &str) -> bool {
        self.channels
            .as_ref()
            .is_none_or(|c| c.iter().any(|x| x == channel))
    }

    /// 403 unless the caller's scope includes `channel`.
    pub fn require_channel(&self, channel: &str) -> Result<(), ApiError> {
        if self.may_see(channel) {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "token is not scoped to channel {channel}"
            )))
        }
    }

    /// For operations with an optional channel filter: a named channel must be in scope, and a
    /// channel-scoped caller must name one (it may not act on every channel).
    pub fn require_channel_filter(&self, channel: Option<&str>) -> Result<(), ApiError> {
        match (channel, &self.channels) {
            (Some(c), _) => self.require_channel(c),
            (None, Some(_)) => Err(ApiError::invalid(
                "channel",
                "a channel-scoped token must name a channel",
            )),
            (None, None) => Ok(()),
        }
    }

    /// Whether the caller may read or append to `org`'s audit chain: an org scope names the
    /// orgs; without one, an unscoped caller may reach every org and a channel-scoped caller
    /// none (its channels say nothing about orgs, so it gets none unless given some).
    pub fn may_see_org(&self, org: &str) -> bool {
        match (&self.orgs, &self.channels) {
            (Some(orgs), _) => orgs.iter().any(|o| o == org),
            (None, None) => true,
            (None, Some(_)) => false,
        }
    }

    /// 403 unless the caller's scope includes the audit org `org`.
    pub fn require_org(&self, org: &str) -> Result<(), ApiError> {
        if self.may_see_org(org) {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "token is not scoped to audit org {org}"
            )))
        }
    }

    /// 403 unless the caller may hold `stage`'s lane `name`: every lane but an outbound one is
    /// named by its channel, which must be in scope; an outbound lane (a destination) carries
    /// rows of every channel, so only an unscoped caller may claim or release it whole.
    pub fn require_lane(
        &self,
        stage: raftlane_statemachine::row::Stage,
        name: &str,
    ) -> Result<(), ApiError> {
        if stage != raftlane_statemachine::row::Stage::Outbound {
            self.require_channel(name)
        } else if self.channels.is_some() {
            Err(ApiError::forbidden(
                "channel-scoped tokens cannot claim or release a whole outbound lane",
            ))
        } else {
            Ok(())
        }
    }

    /// A channel-scoped caller must name a channel; returns the scope filter for lists.
    pub fn scope(&self) -> Option<Vec<String>> {
        self.channels.clone()
    }
}

/// The name the bootstrap admin token acts under (in audit rows, approvals, request ids).
pub const BOOTSTRAP_ADMIN: &str = "admin";

/// Names no principal created through the API may take: the bootstrap admin's, and the
/// `raftlane:` prefix of the cluster's own actors (the leader's timers), so that audit rows and
/// approvals always tell a person's principal from the cluster's.
pub fn reserved_principal_name(name: &str) -> bool {
    name.eq_ignore_ascii_case(BOOTSTRAP_ADMIN)
        || name
            .get(..9)
            .is_some_and(|p| p.eq_ignore_ascii_case("raftlane:"))
}

pub fn sha256_hex(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Constant-time equality of two equal-length byte strings.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl FromRequestParts<Arc<AppState>> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| ApiError::unauthorized("missing Authorization: Bearer <token>"))?;
        let token = header
            .strip_prefix("Bearer ")
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| ApiError::unauthorized("Authorization must be 'Bearer <token>'"))?;
        let hash = sha256_hex(token);
        let requests = crate::request_id::RequestIds::from_parts(parts)?;
        let client_time = client_time(&parts.headers, state.test_client_clock)?;
        let clock_ms = state.backend.cluster_now_ms();
        let approval = crate::dual_control::approval_header(&parts.headers)?;
        if ct_eq(hash.as_bytes(), state.admin_token_hash.as_bytes()) {
            return Ok(Caller {
                name: BOOTSTRAP_ADMIN.into(),
                role: Role::Admin,
                channels: None,
                orgs: None,
                requests,
                client_time,
                clock_ms,
                approval,
            });
        }
        let lookup = || backend::read(state.backend.as_ref(), |r| r.principal_by_token_hash(&hash));
        let mut principal = lookup()?;
        if principal.is_none() && state.writes.linearize().await.is_ok() {
            // This node may lag behind the write that created the token: only a linearizable
            // read may refuse it (the same rule as a row action's 404).
            principal = lookup()?;
        }
        match principal {
            Some(p) => Ok(Caller {
                orgs: backend::read(state.backend.as_ref(), |r| r.principal_orgs(&p.name))?,
                name: p.name,
                role: p.role,
                channels: p.channels,
                requests,
                client_time,
                clock_ms,
                approval,
            }),
            None => Err(ApiError::unauthorized("unknown or revoked token")),
        }
    }
}

/// The request's `Raftlane-Client-Time-Ms`: accepted only on a node in test mode
/// (`--test-client-clock`), refused with 400 naming the header everywhere else.
fn client_time(headers: &axum::http::HeaderMap, enabled: bool) -> Result<Option<u64>, ApiError> {
    const NAME: &str = "Raftlane-Client-Time-Ms";
    let Some(value) = headers.get(raftlane_contract::headers::CLIENT_TIME_MS) else {
        return Ok(None);
    };
    if !enabled {
        return Err(ApiError::invalid(
            NAME,
            "only a node started with --test-client-clock accepts it",
        ));
    }
    value
        .to_str()
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Some)
        .ok_or_else(|| ApiError::invalid(NAME, "must be milliseconds since the Unix epoch (u64)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles() {
        assert!(role_allows(Role::Admin, Permission::Admin));
        assert!(!role_allows(Role::Operator, Permission::Admin));
        assert!(role_allows(Role::Operator, Permission::Operate));
        assert!(role_allows(Role::Worker, Permission::Work));
        assert!(!role_allows(Role::Worker, Permission::Operate));
        assert!(role_allows(Role::Viewer, Permission::Read));
        assert!(!role_allows(Role::Viewer, Permission::Produce));
        assert!(role_allows(Role::Viewer, Permission::ReadBodies));
        assert!(role_allows(Role::Metadata, Permission::Read));
        assert!(!role_allows(Role::Metadata, Permission::ReadBodies));
    }

    #[test]
    fn constant_time_compare() {
        assert!(ct_eq(b"abc", b"abc"));
        assert!(!ct_eq(b"abc", b"abd"));
        assert!(!ct_eq(b"abc", b"ab"));
    }
}
