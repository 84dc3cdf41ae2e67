//! Administration: transform state and reference reads/writes, retention, tokens.

use super::{check_name, prepare_read, propose, read_covered, read_state, unexpected, ReadOpts};
use crate::auth::{Caller, Permission};
use crate::backend;
use crate::dual_control::{self, Action};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, Path, Query};
use crate::state::AppState;
use crate::tokens::sha256_hex;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use raftlane_contract::{
    NamespaceList, NamespaceVersion, OwnerBinding, OwnerReservation, PurgeRequest, Purged,
    Reference, ReferenceList, ReferenceRequest, ReferenceSetInfo, ReferenceVersion,
    ReferenceWritten, Revoked, StateValue, TokenCreated, TokenInfo, TokenList, TokenRequest,
};
use raftlane_statemachine::model::principal::Role;
use raftlane_statemachine::model::state::StateEntry;
use raftlane_statemachine::rules::principal_name;
use raftlane_statemachine::wire::command::{
    self as command, IssueToken, PurgeState, PutPrincipal, ReserveOwner, RetentionPage,
    RetentionPass, RevokePrincipal, SetPrincipalOrgs, WriteReferenceSnapshot, MAX_RETENTION_PAGE,
};
use raftlane_statemachine::{Command, Outcome};
use rand::RngCore;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

/// `?entries=true` on `GET /v1/state/{namespace}`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct NamespaceQuery {
    #[serde(default)]
    entries: bool,
    /// `stale`: answered from this node's state as it is; absent or `linearizable`: after
    /// catching up with the leader's commit.
    consistency: Option<String>,
}

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

pub async fn purge(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<PurgeRequest>,
) -> ApiResult<Json<Purged>> {
    caller.require_global(Permission::Purge)?;
    // `older_than_ms` is an age; the state machine takes the absolute cutoff, since `apply`
    // has no clock.
    let older_than = match (b.older_than_ms, b.older_than) {
        (Some(age), None) => caller.now_ms().saturating_sub(age),
        (None, Some(cutoff)) => cutoff,
        _ => {
            return Err(ApiError::invalid(
                "older_than_ms",
                "give exactly one of older_than_ms (an age) and older_than (a cutoff)",
            ))
        }
    };
    let command = match b.kind.as_str() {
        "bodies" | "dead_letters" | "state" => {
            dual_control::authorize(&state, &caller, Action::Purge, &b).await?;
            b.kind.as_str()
        }
        other => other,
    };
    // Bodies and dead letters go page by page (`RetentionPage`, docs/SPEC.md §8.6), like the
    // leader's retention timer: one bounded entry at a time, never one command that scans every
    // message (a purge of 1,000,000 messages once held every node for 31 s).
    let passes: &[RetentionPass] = match command {
        "bodies" => &[
            RetentionPass::IndexEnded,
            RetentionPass::BlankBodies,
            RetentionPass::BlankFailedBodies,
        ],
        "dead_letters" => &[RetentionPass::IndexEnded, RetentionPass::BlankDeadLetters],
        "state" => {
            return match propose(
                &state,
                &caller,
                Command::PurgeState(PurgeState { older_than }),
            )
            .await?
            {
                (index, Outcome::Count(n)) => Ok(Json(Purged { index, purged: n })),
                (_, other) => Err(unexpected(other)),
            };
        }
        other => {
            return Err(ApiError::invalid(
                "kind",
                format!("'{other}' is not bodies, dead_letters or state"),
            ))
        }
    };
    let (mut last_index, mut purged) = (0, 0);
    for pass in passes {
        loop {
            let page = Command::RetentionPage(RetentionPage {
                pass: *pass,
                older_than,
                limit: MAX_RETENTION_PAGE,
            });
            match propose(&state, &caller, page).await? {
                (
                    index,
                    Outcome::RetentionPaged {
                        purged: n, next, ..
                    },
                ) => {
                    last_index = index;
                    if *pass != RetentionPass::IndexEnded {
                        purged += n;
                    }
                    if next.is_none() {
                        break;
                    }
                }
                (_, other) => return Err(unexpected(other)),
            }
        }
    }
    Ok(Json(Purged {
        index: last_index,
        purged,
    }))
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

/// Create (or rotate) a principal's token, shown once in the response; only its hash enters
/// the log.
///
/// # Random tokens, and retries
/// The token is random: the handler draws a nonce (128 random bits) and the token is an HMAC of
/// it under a key derived from the cluster secret ([`issued_token`]); the command carries the
/// nonce and the token's hash, never the token. A client that does not see the answer retries
/// with the same `Request-Id`; if the first attempt committed, the state machine answers the
/// retry with the first answer, `TokenIssued` with the *first* nonce, and the handler
/// re-derives the very token that was stored (on any node: they share the key). A new request
/// (a new `Request-Id`, or the same one once the state machine forgot it after
/// `REQUEST_TTL_MS`, or after a revocation) draws a new nonce and so a new token: a token is
/// never a function of a request id. A `Request-Id` reused inside the window for another
/// request is refused by the state machine (`409 request_id_reused`). Whoever holds the
/// cluster secret and reads the log can compute tokens, but that secret already lets its
/// holder sign any write, a new principal included.
///
/// Before showing the token, the handler checks (linearizable read) that its hash is what the
/// principal now has. It is not when a concurrent rotation replaced it, or on a node without a
/// cluster secret (the token is then random without a nonce to re-derive it from, so a retry
/// cannot find the first one): then `409 token_not_issued`, and the client mints again with a
/// new `Request-Id`. A token that does not work is never shown.
pub async fn create_token(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<TokenRequest>,
) -> ApiResult<(StatusCode, Json<TokenCreated>)> {
    caller.require_global(Permission::Admin)?;
    let mut b = b;
    // One normal form per name (docs/SPEC.md §9.1): the NFKC form is proposed, and its own
    // characters judged here; the state machine judges it again, and against every other
    // principal's name, when it applies.
    b.name = principal_name::normal_form(&b.name);
    principal_name::check_form("name", &b.name)?;
    let role = Role::parse(&b.role).ok_or_else(|| {
        ApiError::invalid(
            "role",
            "must be admin, operator, worker, viewer, metadata or engine",
        )
    })?;
    if let Some(chs) = &b.channels {
        for c in chs {
            check_name("channels", c)?;
        }
    }
    if let Some(orgs) = &b.orgs {
        for org in orgs {
            check_name("orgs", org)?;
        }
    }
    dual_control::authorize(&state, &caller, Action::CreateToken, &b).await?;
    // The org scope first: the principal never holds its new token under an earlier scope.
    let orgs = Command::SetPrincipalOrgs(SetPrincipalOrgs {
        name: b.name.clone(),
        orgs: b.orgs.clone(),
    });
    match propose(&state, &caller, orgs).await? {
        (_, Outcome::Done) => {}
        (_, other) => return Err(unexpected(other)),
    }
    // With a token key the token is derived from a nonce the log keeps; without one it is
    // random outright and the nonce stays empty (nothing to re-derive it from).
    let (nonce, drawn) = match &state.token_key {
        Some(key) => {
            let nonce = hex::encode(rand::random::<[u8; 16]>());
            let token = issued_token(key, &nonce);
            (nonce, token)
        }
        None => (String::new(), random_token()),
    };
    let command = Command::IssueToken(IssueToken {
        principal: PutPrincipal {
            name: b.name.clone(),
            token_hash: sha256_hex(&drawn),
            role,
            channels: b.channels,
        },
        nonce,
    });
    let (index, outcome) = propose(&state, &caller, command).await?;
    // A repeat answers the first attempt's nonce: its token is the one stored.
    let token = match (outcome, &state.token_key) {
        (Outcome::TokenIssued { nonce }, Some(key)) => issued_token(key, &nonce),
        (Outcome::TokenIssued { .. }, None) => drawn,
        (other, _) => return Err(unexpected(other)),
    };
    let token_hash = sha256_hex(&token);
    state.writes.linearize().await?;
    let holder = backend::read(state.backend.as_ref(), |r| {
        r.principal_by_token_hash(&token_hash)
    })?;
    if holder.as_ref().map(|p| p.name.as_str()) != Some(b.name.as_str()) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "token_not_issued",
            format!(
                "the principal '{}' does not hold the token of this request: another rotation \
                 replaced it, or this node cannot re-derive a retried request's token (no \
                 cluster secret); create the token again with a new Request-Id",
                b.name
            ),
        ));
    }
    Ok((
        StatusCode::CREATED,
        Json(TokenCreated {
            index,
            name: b.name,
            role: b.role,
            token,
        }),
    ))
}

/// The token issued with `nonce`: `rl_` and 24 bytes of an HMAC of it under the token key.
fn issued_token(key: &[u8; 32], nonce: &str) -> String {
    let mac = raftlane_raft::auth::hmac_sha256(key, &[b"raftlane-token-v2\n", nonce.as_bytes()]);
    format!("rl_{}", hex::encode(&mac[..24]))
}

fn random_token() -> String {
    let mut raw = [0u8; 24];
    rand::thread_rng().fill_bytes(&mut raw);
    format!("rl_{}", hex::encode(raw))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_a_function_of_its_nonce_and_key_only() {
        let key = crate::tokens::token_key("cs").expect("a key");
        let t = issued_token(&key, "00112233445566778899aabbccddeeff");
        assert!(t.starts_with("rl_") && t.len() == 3 + 48, "{t}");
        // A retry re-derives the stored token from the nonce the state machine answers...
        assert_eq!(t, issued_token(&key, "00112233445566778899aabbccddeeff"));
        // ...and another nonce, or another secret, gives another token.
        assert_ne!(t, issued_token(&key, "00112233445566778899aabbccddeef0"));
        assert_ne!(
            t,
            issued_token(
                &crate::tokens::token_key("other").expect("a key"),
                "00112233445566778899aabbccddeeff"
            )
        );
        assert_eq!(crate::tokens::token_key(""), None);
        assert_ne!(random_token(), random_token());
    }
}
