//! Bearer-token authentication and role/channel authorization.
//!
//! Tokens are never stored: the state holds SHA-256 hashes (docs/SPEC.md §9.1), and the
//! bootstrap admin token is compared by hash too, in constant time.

use crate::backend;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::tokens::{ct_eq, sha256_hex};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use raftlane_statemachine::model::ids::ApprovalId;
use raftlane_statemachine::model::principal::Role;
use raftlane_statemachine::Command;
use raftlane_statemachine::Envelope;
use std::sync::Arc;

/// What a request may do. The operator-level actions are split by what they are, so that the
/// `engine` role can be given exactly the ones messagefoundry's engine performs for its own
/// console's users (docs/SPEC.md §9.3) and nothing of an operator's authority over other
/// principals ([`Caller::is_operator`]).
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
    /// Put rows back into the pipeline or take them out of it: replay a message, replay dead
    /// letters, cancel queued rows, the dead-letter sweeps, a `dead` without a fence.
    Requeue,
    /// Retention purges.
    Purge,
    /// Reference-set writes.
    WriteReference,
    /// Audit appends (`POST /v1/audit`).
    AppendAudit,
    /// Approvals recorded under the caller's key (`/v1/approvals/keyed`): the engine's own.
    KeyedApprovals,
    /// The engine's users, roles, sessions and directory-group maps (`/v1/users`, `/v1/roles`,
    /// `/v1/sessions`, `/v1/directory-groups`).
    EngineUsers,
    /// Config changes, audit seals, approvals of dual control; and (through
    /// [`Caller::is_operator`]) acting on other principals' claims, leases and engines.
    Operate,
    /// Principals, owner reservations, key rotation and membership.
    Admin,
}

impl Permission {
    /// The permission's name in a refusal (`role worker may not admin`).
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::ReadBodies => "readbodies",
            Permission::Produce => "produce",
            Permission::Work => "work",
            Permission::Requeue => "requeue",
            Permission::Purge => "purge",
            Permission::WriteReference => "write reference data",
            Permission::AppendAudit => "append audit rows",
            Permission::KeyedApprovals => "record keyed approvals",
            Permission::EngineUsers => "manage the engine's users",
            Permission::Operate => "operate",
            Permission::Admin => "admin",
        }
    }
}

/// The roles' permissions (docs/SPEC.md §9.3), the one table every route's check reads.
pub fn role_allows(role: Role, p: Permission) -> bool {
    use Permission as P;
    match role {
        Role::Admin => true,
        Role::Operator => !matches!(p, P::Admin | P::EngineUsers),
        Role::Worker => matches!(p, P::Read | P::ReadBodies | P::Produce | P::Work),
        Role::Viewer => matches!(p, P::Read | P::ReadBodies),
        Role::Metadata => p == P::Read,
        // What messagefoundry's store and coordinator call (clients/python/src/raftlane/
        // messagefoundry): a worker's, the console's requeues, purges, reference writes, audit
        // appends and keyed approvals, and the engine's own users and sessions. Not `Operate`:
        // an engine does not act on other principals' claims, names or engines, nor change the
        // cluster's config.
        Role::Engine => matches!(
            p,
            P::Read
                | P::ReadBodies
                | P::Produce
                | P::Work
                | P::Requeue
                | P::Purge
                | P::WriteReference
                | P::AppendAudit
                | P::KeyedApprovals
                | P::EngineUsers
        ),
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

/// A command as a caller proposes it, before it is put in its envelope: with or without the
/// operator's word ([`Caller::authority`]). A plain command is one without.
#[derive(Clone, Debug)]
pub struct Proposal {
    pub command: Command,
    pub as_operator: bool,
}

impl From<Command> for Proposal {
    fn from(command: Command) -> Self {
        Self {
            command,
            as_operator: false,
        }
    }
}

impl Caller {
    /// Put a command in its envelope: the proposer's clock, the caller's name, the request id
    /// of this proposal, bound to the request's fingerprint when the client chose the id
    /// ([`crate::request_id`]), and the operator's word when [`Caller::authority`] gave it. In
    /// test mode a request that names its time (`Raftlane-Client-Time-Ms`, see
    /// [`Caller::client_time`]) has its command applied at exactly that time (the envelope's
    /// `client_time`, docs/SPEC.md §2.1).
    pub fn envelope(&self, proposal: impl Into<Proposal>) -> Envelope {
        let Proposal {
            command,
            as_operator,
        } = proposal.into();
        Envelope::new(self.now_ms(), self.name.as_str(), command)
            .with_request_id(self.requests.next())
            .fingerprinted(self.requests.fingerprint())
            .at_client_time(self.client_time)
            .as_operator(as_operator)
    }

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
            Err(ApiError::forbidden(format!(
                "role {} may not {}",
                self.role.as_str(),
                p.as_str()
            )))
        }
    }

    /// Whether the caller holds the operator role (or admin): it may act on what belongs to
    /// other principals (docs/SPEC.md §9.8).
    pub fn is_operator(&self) -> bool {
        role_allows(self.role, Permission::Operate)
    }

    /// `command` as this caller proposes it: with the operator's word (the envelope's
    /// `as_operator`) when the caller is an operator, the one place the proposer vouches for a
    /// role to the state machine, which then lets the command act on other principals' claims
    /// (and audits it) or recover every principal's rows; anyone else's command acts on its own
    /// claims only.
    pub fn authority(&self, command: Command) -> Proposal {
        Proposal {
            command,
            as_operator: self.is_operator(),
        }
    }

    /// What a record of this caller's act names as its author (docs/SPEC.md §9.8): its own
    /// principal, or `P (via PRINCIPAL)` when it acts for a person `P` it names; the name a
    /// caller gives is recorded beside its principal, never instead of it.
    pub fn on_behalf_of(&self, person: Option<&str>) -> String {
        match person {
            Some(p) if !p.is_empty() && p != self.name => format!("{p} (via {})", self.name),
            _ => self.name.clone(),
        }
    }

    /// Whether the caller may act on (and see the fence of) a claim whose principal is
    /// `holder` (`None`: a claim bound to no principal): the claim's own principal, or an
    /// operator (docs/SPEC.md §9.8).
    pub fn may_act_on_claim(&self, holder: Option<&str>) -> bool {
        self.is_operator() || holder == Some(self.name.as_str())
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

    /// Whether the caller may read and write the transform-state namespace `ns`: an unscoped
    /// caller every namespace; a channel-scoped one only those bound to a channel in its scope
    /// by name, `<channel>/…` ([`namespace_channel`], docs/SPEC.md §9.4). Reads, transform
    /// writes (`state_ops`, plain, with `claim_next` and in a batch) all ask this one question.
    pub fn may_use_namespace(&self, ns: &str) -> bool {
        match &self.channels {
            None => true,
            Some(_) => namespace_channel(ns).is_some_and(|c| self.may_see(c)),
        }
    }

    /// 404 unless the caller may use the namespace `ns` ([`Caller::may_use_namespace`]): a
    /// namespace outside the caller's scope does not exist for it, whether it reads or writes.
    pub fn require_namespace(&self, ns: &str) -> Result<(), ApiError> {
        if self.may_use_namespace(ns) {
            Ok(())
        } else {
            Err(ApiError::not_found(format!(
                "state namespace {ns} not found"
            )))
        }
    }

    /// A channel-scoped caller must name a channel; returns the scope filter for lists.
    pub fn scope(&self) -> Option<Vec<String>> {
        self.channels.clone()
    }
}

/// The channel a transform-state namespace is bound to: the part of its name before the first
/// `/` (`lab/invoices` is channel `lab`'s); a name without `/` is bound to no channel, so only
/// unscoped callers reach it.
pub fn namespace_channel(ns: &str) -> Option<&str> {
    ns.split_once('/')
        .map(|(channel, _)| channel)
        .filter(|c| !c.is_empty())
}

/// The name the bootstrap admin token acts under (in audit rows, approvals, request ids).
pub const BOOTSTRAP_ADMIN: &str = "admin";

/// The request's `Raftlane-Approval` header: `None` when absent, 400 naming it when it is not an
/// approval id.
pub fn approval_header(headers: &axum::http::HeaderMap) -> ApiResult<Option<ApprovalId>> {
    const NAME: &str = "Raftlane-Approval";
    let Some(v) = headers.get(raftlane_contract::headers::APPROVAL) else {
        return Ok(None);
    };
    v.to_str()
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map(|n| Some(ApprovalId(n)))
        .ok_or_else(|| ApiError::invalid(NAME, "must be an approval id (an integer)"))
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
        let approval = approval_header(&parts.headers)?;
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
        assert!(role_allows(Role::Engine, Permission::EngineUsers));
        assert!(role_allows(Role::Engine, Permission::Requeue));
        assert!(!role_allows(Role::Engine, Permission::Operate));
        assert!(!role_allows(Role::Engine, Permission::Admin));
        assert!(!role_allows(Role::Operator, Permission::EngineUsers));
        assert!(role_allows(Role::Operator, Permission::Requeue));
    }
}
