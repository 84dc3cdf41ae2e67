//! Administration: transform state and reference reads/writes, retention, tokens.

use super::{check_name, prepare_read, propose, read_covered, read_state, unexpected, ReadOpts};
use crate::auth::{Caller, Permission};
use crate::dual_control::{self, Action};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, Path, Query};
use crate::state::AppState;
use crate::write::token_issue::NewToken;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use raftlane_contract::{
    NamespaceList, NamespaceQuery, NamespaceVersion, OwnerBinding, OwnerReservation, PurgeRequest,
    Purged, Reference, ReferenceList, ReferenceRequest, ReferenceSetInfo, ReferenceVersion,
    ReferenceWritten, Revoked, StateValue, TokenCreated, TokenInfo, TokenList, TokenRequest,
};
use raftlane_raft::retention::{PurgeKind, RetentionPlan};
use raftlane_statemachine::model::state::StateEntry;
use raftlane_statemachine::rules::principal_name;
use raftlane_statemachine::wire::command::{
    self as command, ReserveOwner, RevokePrincipal, WriteReferenceSnapshot,
};
use raftlane_statemachine::{Command, Outcome};
use serde_json::Value;
use std::sync::Arc;

pub async fn namespace(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(ns): Path<String>,
    Query(q): Query<NamespaceQuery>,
) -> ApiResult<Json<NamespaceVersion>> {
    caller.require(Permission::Read)?;
    check_name("namespace", &ns)?;
    caller.require_namespace(&ns)?;
    let opts = ReadOpts {
        consistency: q.consistency,
    };
    if !q.entries {
        let version = read_state(&state, &opts, |r| r.namespace_version(&ns)).await?;
        return Ok(Json(NamespaceVersion {
            namespace: ns,
            version,
            entries: None,
        }));
    }
    // The version and the entries in one read, so the entries are exactly that version's.
    prepare_read(&state, &opts).await?;
    let (version, entries) = state
        .writes
        .read_covered(|r| Ok((r.namespace_version(&ns)?, r.state_entries(&ns)?)))?;
    let entries = entries
        .into_iter()
        .map(|(key, e)| state_value(&ns, key, e))
        .collect();
    Ok(Json(NamespaceVersion {
        namespace: ns,
        version,
        entries: Some(entries),
    }))
}

/// A state entry as served: its stored text as JSON (a string when it is not JSON).
fn state_value(ns: &str, key: String, e: StateEntry) -> StateValue {
    let value: Value = serde_json::from_str(&e.value).unwrap_or(Value::String(e.value));
    StateValue {
        key,
        message_id: e.message_id,
        namespace: ns.to_string(),
        set_at: e.set_at,
        value,
    }
}

/// `GET /v1/state`: every namespace the caller may use, with its version (a channel-scoped
/// caller sees its channels' namespaces only, docs/SPEC.md §9.4).
pub async fn namespaces(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<NamespaceList>> {
    caller.require(Permission::Read)?;
    let list = read_state(&state, &opts, |r| r.state_namespaces()).await?;
    Ok(Json(NamespaceList {
        namespaces: list
            .into_iter()
            .filter(|n| caller.may_use_namespace(&n.namespace))
            .map(|n| NamespaceVersion {
                namespace: n.namespace,
                version: n.version,
                entries: None,
            })
            .collect(),
    }))
}

/// `GET /v1/reference`: every reference set's version, label, time and size, without rows.
pub async fn references(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<ReferenceList>> {
    caller.require_global(Permission::Read)?;
    let sets = read_state(&state, &opts, |r| r.reference_sets()).await?;
    Ok(Json(ReferenceList {
        sets: sets
            .into_iter()
            .map(|s| ReferenceSetInfo {
                name: s.name,
                version: s.snapshot.version,
                label: s.label,
                synced_at: s.snapshot.synced_at,
                row_count: s.snapshot.row_count,
            })
            .collect(),
    }))
}

pub async fn state_entry(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((ns, key)): Path<(String, String)>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<StateValue>> {
    caller.require(Permission::Read)?;
    check_name("namespace", &ns)?;
    check_name("key", &key)?;
    caller.require_namespace(&ns)?;
    match read_covered(&state, &opts, |r| r.state_entry(&ns, &key)).await? {
        Some(e) => Ok(Json(state_value(&ns, key, e))),
        None => Err(ApiError::not_found(format!("no state {ns}/{key}"))),
    }
}

pub async fn put_reference(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(name): Path<String>,
    JsonBody(b): JsonBody<ReferenceRequest>,
) -> ApiResult<Json<ReferenceWritten>> {
    caller.require_global(Permission::WriteReference)?;
    check_name("name", &name)?;
    let params = serde_json::json!({ "name": &name, "request": &b });
    dual_control::authorize(&state, &caller, Action::WriteReference, &params).await?;
    let version = match b.version {
        ReferenceVersion::Number(version) => command::ReferenceVersion::Number(version),
        ReferenceVersion::Label(label) => {
            check_name("version", &label)?;
            command::ReferenceVersion::Label(label)
        }
    };
    let command = Command::WriteReferenceSnapshot(WriteReferenceSnapshot {
        name,
        version,
        rows: b.rows,
    });
    match propose(&state, &caller, command).await? {
        (index, Outcome::Count(n)) => Ok(Json(ReferenceWritten {
            index,
            row_count: n,
        })),
        (_, other) => Err(unexpected(other)),
    }
}

pub async fn get_reference(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(name): Path<String>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<Reference>> {
    caller.require_global(Permission::Read)?;
    check_name("name", &name)?;
    let (label, snapshot) = read_covered(&state, &opts, |r| {
        Ok((r.reference_label(&name)?, r.reference(&name)?))
    })
    .await?;
    match snapshot {
        Some(s) => Ok(Json(Reference {
            label,
            ..Reference::from(s)
        })),
        None => Err(ApiError::not_found(format!("no reference snapshot {name}"))),
    }
}

/// `POST /v1/retention/purge`: the retention plan of the request's kind
/// (`raftlane_raft::retention`, the one the leader's timer walks) for everything older than
/// its cutoff, through the write path ([`crate::write::retention`]).
pub async fn purge(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<PurgeRequest>,
) -> ApiResult<Json<Purged>> {
    caller.require_global(Permission::Purge)?;
    let older_than = purge_cutoff(&caller, &b)?;
    dual_control::authorize(&state, &caller, Action::Purge, &b).await?;
    let plan = RetentionPlan::purge(purge_kind(b.kind), older_than);
    let done = state
        .writes
        .purge(&plan, &|command| caller.envelope(command))
        .await?;
    Ok(Json(Purged {
        index: done.index,
        purged: done.purged,
    }))
}

/// The retention plan's kind of purge a request names.
fn purge_kind(kind: raftlane_contract::PurgeKind) -> PurgeKind {
    match kind {
        raftlane_contract::PurgeKind::Bodies => PurgeKind::Bodies,
        raftlane_contract::PurgeKind::DeadLetters => PurgeKind::DeadLetters,
        raftlane_contract::PurgeKind::State => PurgeKind::State,
    }
}

/// A purge's absolute cutoff: `older_than_ms` is an age, `older_than` the cutoff itself (the
/// state machine takes the cutoff, since `apply` has no clock).
fn purge_cutoff(caller: &Caller, b: &PurgeRequest) -> ApiResult<u64> {
    match (b.older_than_ms, b.older_than) {
        (Some(age), None) => Ok(caller.now_ms().saturating_sub(age)),
        (None, Some(cutoff)) => Ok(cutoff),
        _ => Err(ApiError::invalid(
            "older_than_ms",
            "give exactly one of older_than_ms (an age) and older_than (a cutoff)",
        )),
    }
}

pub async fn list_tokens(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<TokenList>> {
    caller.require_global(Permission::Admin)?;
    let principals = read_state(&state, &opts, |r| r.principals()).await?;
    let tokens = principals.into_iter().map(TokenInfo::from).collect();
    Ok(Json(TokenList { tokens }))
}

/// `POST /v1/tokens`: create (or rotate) a principal's token, shown once in the response;
/// only its hash enters the log. How a retry gets the same token back, and why a token that
/// does not work is never shown (`409 token_not_issued`): [`crate::write::token_issue`].
pub async fn create_token(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(mut b): JsonBody<TokenRequest>,
) -> ApiResult<(StatusCode, Json<TokenCreated>)> {
    caller.require_global(Permission::Admin)?;
    let new = new_token(&mut b)?;
    dual_control::authorize(&state, &caller, Action::CreateToken, &b).await?;
    let issued = state
        .writes
        .issue_token(new, state.token_key.as_ref(), &|command| {
            caller.envelope(command)
        })
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(TokenCreated {
            index: issued.index,
            name: b.name,
            role: b.role,
            token: issued.token,
        }),
    ))
}

/// The principal a token request names, checked; its name is put in normal form in `b` too
/// (one normal form per name, docs/SPEC.md §9.1: the NFKC form is proposed, and its own
/// characters judged here; the state machine judges it again, and against every other
/// principal's name, when it applies).
fn new_token(b: &mut TokenRequest) -> ApiResult<NewToken> {
    b.name = principal_name::normal_form(&b.name);
    principal_name::check_form("name", &b.name)?;
    for c in b.channels.iter().flatten() {
        check_name("channels", c)?;
    }
    for org in b.orgs.iter().flatten() {
        check_name("orgs", org)?;
    }
    Ok(NewToken {
        name: b.name.clone(),
        role: b.role,
        channels: b.channels.clone(),
        orgs: b.orgs.clone(),
    })
}

pub async fn revoke_token(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<Revoked>> {
    caller.require_global(Permission::Admin)?;
    check_name("name", &name)?;
    let params = serde_json::json!({ "name": &name });
    dual_control::authorize(&state, &caller, Action::RevokeToken, &params).await?;
    match propose(
        &state,
        &caller,
        Command::RevokePrincipal(RevokePrincipal { name }),
    )
    .await?
    {
        (index, Outcome::Done) => Ok(Json(Revoked {
            index,
            revoked: true,
        })),
        (_, other) => Err(unexpected(other)),
    }
}

/// `GET /v1/owners/{owner}`: the principal a lease owner name or engine node id is bound to
/// (docs/SPEC.md §9.8), `null` when nobody has used or reserved it yet.
pub async fn get_owner(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(owner): Path<String>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<OwnerBinding>> {
    caller.require_global(Permission::Read)?;
    check_name("owner", &owner)?;
    let principal = read_state(&state, &opts, |r| r.lease_owner(&owner)).await?;
    Ok(Json(OwnerBinding {
        owner,
        principal,
        index: None,
        changed: None,
    }))
}

/// `PUT /v1/owners/{owner} {principal}`: an admin binds a name to a principal ahead of its
/// first use, so that nobody else can take it first (docs/SPEC.md §9.8). `404` for an unknown
/// principal, `409 already_exists` (field `owner`) for a name bound to another.
pub async fn reserve_owner(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(owner): Path<String>,
    JsonBody(b): JsonBody<OwnerReservation>,
) -> ApiResult<Json<OwnerBinding>> {
    caller.require_global(Permission::Admin)?;
    check_name("owner", &owner)?;
    check_name("principal", &b.principal)?;
    bind_owner(&state, &caller, owner, Some(b.principal)).await
}

/// `DELETE /v1/owners/{owner}`: an admin releases a name's binding; the next principal to use
/// it (or a new reservation) takes it.
pub async fn release_owner(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(owner): Path<String>,
) -> ApiResult<Json<OwnerBinding>> {
    caller.require_global(Permission::Admin)?;
    check_name("owner", &owner)?;
    let params = serde_json::json!({ "owner": &owner });
    dual_control::authorize(&state, &caller, Action::ReleaseOwner, &params).await?;
    bind_owner(&state, &caller, owner, None).await
}

async fn bind_owner(
    state: &AppState,
    caller: &Caller,
    owner: String,
    principal: Option<String>,
) -> ApiResult<Json<OwnerBinding>> {
    let command = Command::ReserveOwner(ReserveOwner {
        owner: owner.clone(),
        principal: principal.clone(),
    });
    match propose(state, caller, command).await? {
        (index, Outcome::Count(n)) => Ok(Json(OwnerBinding {
            owner,
            principal,
            index: Some(index),
            changed: Some(n == 1),
        })),
        (_, other) => Err(unexpected(other)),
    }
}
