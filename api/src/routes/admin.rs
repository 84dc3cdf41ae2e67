//! Administration: transform state and reference reads/writes, retention, tokens.

use super::{check_name, prepare_read, propose, read_covered, read_state, unexpected, ReadOpts};
use crate::app::{AppState, JsonBody, Path, Query};
use crate::auth::{sha256_hex, Caller, Permission};
use crate::backend;
use crate::dual_control::{self, Action};
use crate::error::{ApiError, ApiResult};
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use raftlane_contract::{
    NamespaceList, NamespaceVersion, PurgeRequest, Purged, Reference, ReferenceList,
    ReferenceRequest, ReferenceSetInfo, ReferenceVersion, ReferenceWritten, Revoked, StateValue,
    TokenCreated, TokenInfo, TokenList, TokenRequest,
};
use raftlane_statemachine::model::principal::Role;
use raftlane_statemachine::model::state::StateEntry;
use raftlane_statemachine::wire::command::{
    PurgeDeadLetters, PurgeMessageBodies, PurgeState, PutPrincipal, RevokePrincipal,
    SetPrincipalOrgs, WriteReferenceSnapshot, WriteReferenceSnapshotText,
};
use raftlane_statemachine::{Command, Outcome};
use rand::RngCore;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

/// `?entries=true` on `GET /v1/state/{namespace}`.
#[derive(Debug, Default, Deserialize)]
pub struct NamespaceQuery {
    #[serde(default)]
    entries: bool,
    consistency: Option<String>,
}

pub async fn namespace(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(ns): Path<String>,
    Query(q): Query<NamespaceQuery>,
) -> ApiResult<Json<NamespaceVersion>> {
    caller.require_global(Permission::Read)?;
    check_name("namespace", &ns)?;
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

/// `GET /v1/state`: every namespace with its version.
pub async fn namespaces(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<NamespaceList>> {
    caller.require_global(Permission::Read)?;
    let list = read_state(&state, &opts, |r| r.state_namespaces()).await?;
    Ok(Json(NamespaceList {
        namespaces: list
            .into_iter()
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
    caller.require_global(Permission::Read)?;
    check_name("namespace", &ns)?;
    check_name("key", &key)?;
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
    caller.require_global(Permission::Operate)?;
    check_name("name", &name)?;
    let command = match b.version {
        ReferenceVersion::Number(version) => {
            Command::WriteReferenceSnapshot(WriteReferenceSnapshot {
                name,
                version,
                rows: b.rows,
            })
        }
        ReferenceVersion::Label(version) => {
            check_name("version", &version)?;
            Command::WriteReferenceSnapshotText(WriteReferenceSnapshotText {
                name,
                version,
                rows: b.rows,
            })
        }
    };
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
    caller.require_global(Permission::Operate)?;
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
    let command = match command {
        "bodies" => Command::PurgeMessageBodies(PurgeMessageBodies { older_than }),
        "dead_letters" => Command::PurgeDeadLetters(PurgeDeadLetters { older_than }),
        "state" => Command::PurgeState(PurgeState { older_than }),
        other => {
            return Err(ApiError::invalid(
                "kind",
                format!("'{other}' is not bodies, dead_letters or state"),
            ))
        }
    };
    match propose(&state, &caller, command).await? {
        (index, Outcome::Count(n)) => Ok(Json(Purged { index, purged: n })),
        (_, other) => Err(unexpected(other)),
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

/// Create (or rotate) a principal's token, shown once in the response; only its hash enters
/// the log.
///
/// # Retries
/// A client that does not see the answer retries with the same `Request-Id`; if the first
/// attempt committed, the state machine answers the retry with the first answer and applies
/// nothing, so the token shown must be the first attempt's. Hence the token is not random but
/// derived from the request: an HMAC, under a key derived from the cluster secret, of the
/// caller, the proposal's request id and the requested principal (name, role, channels). Every
/// node derives the same token for the same request, so a retry sent to another node gets it
/// too. Whoever holds the cluster secret can compute tokens, but that secret already lets its
/// holder sign any write, a new principal included.
///
/// Before showing the token, the handler checks (linearizable read) that its hash is what the
/// principal now has. It is not when the `Request-Id` was already used for another request
/// (the state machine answers the first one's outcome without applying this one), when a
/// concurrent rotation replaced it, or on a node without a cluster secret (random tokens, so
/// a retry cannot find the first one): then `409 token_not_issued`, and the client mints again
/// with a new `Request-Id`. A token that does not work is never shown.
///
/// A `Request-Id` names one write: reusing one for a later rotation after the state machine
/// forgot it (`REQUEST_TTL_MS`) derives the same token again, i.e. does not rotate it.
pub async fn create_token(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<TokenRequest>,
) -> ApiResult<(StatusCode, Json<TokenCreated>)> {
    caller.require_global(Permission::Admin)?;
    check_name("name", &b.name)?;
    if crate::auth::reserved_principal_name(&b.name) {
        return Err(ApiError::invalid(
            "name",
            "is reserved (the bootstrap admin, or the cluster's own raftlane: actors)",
        ));
    }
    let role = Role::parse(&b.role).ok_or_else(|| {
        ApiError::invalid(
            "role",
            "must be admin, operator, worker, viewer or metadata",
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
    // The handler's last proposal: the id `propose` would give it.
    let request_id = caller.requests.next();
    let token = match &state.token_key {
        Some(key) => derive_token(
            key,
            &caller.name,
            &request_id,
            &b.name,
            role.as_str(),
            &b.channels,
        ),
        None => random_token(),
    };
    let token_hash = sha256_hex(&token);
    let command = Command::PutPrincipal(PutPrincipal {
        name: b.name.clone(),
        token_hash: token_hash.clone(),
        role,
        channels: b.channels,
    });
    let envelope =
        raftlane_statemachine::Envelope::new(caller.now_ms(), caller.name.as_str(), command)
            .with_request_id(request_id);
    let (index, response) = state.writes.write(envelope).await?;
    match response? {
        Outcome::Done => {}
        other => return Err(unexpected(other)),
    }
    state.writes.linearize().await?;
    let holder = backend::read(state.backend.as_ref(), |r| {
        r.principal_by_token_hash(&token_hash)
    })?;
    if holder.as_ref().map(|p| p.name.as_str()) != Some(b.name.as_str()) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "token_not_issued",
            format!(
                "the principal '{}' does not hold the token of this request: its Request-Id \
                 was already used for another write, or another rotation replaced the token; \
                 create the token again with a new Request-Id",
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

/// The key tokens are derived under (see [`create_token`]), derived from the cluster secret so
/// that the secret itself is not used for two purposes. `None` without a secret: an empty key
/// would make every token computable from its request id.
pub fn token_key(cluster_secret: &str) -> Option<[u8; 32]> {
    (!cluster_secret.is_empty()).then(|| {
        raftlane_raft::auth::hmac_sha256(cluster_secret.as_bytes(), &[b"raftlane-token-key-v1"])
    })
}

/// The token of one request: `rl_` and 24 bytes of an HMAC over its length-prefixed inputs
/// (unambiguous whatever they contain), as long as the random tokens were.
fn derive_token(
    key: &[u8; 32],
    caller: &str,
    request_id: &str,
    name: &str,
    role: &str,
    channels: &Option<Vec<String>>,
) -> String {
    let channels = serde_json::to_string(channels).unwrap_or_default();
    let fields = [caller, request_id, name, role, channels.as_str()];
    let mut framed = Vec::new();
    for f in fields {
        framed.extend_from_slice(&(f.len() as u64).to_be_bytes());
        framed.extend_from_slice(f.as_bytes());
    }
    let mac = raftlane_raft::auth::hmac_sha256(key, &[b"raftlane-token-v1\n", &framed]);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_a_function_of_its_request_and_key() {
        let key = token_key("cs").expect("a key");
        let channels = Some(vec!["lab".to_string()]);
        let t = derive_token(&key, "admin", "r-1/0", "alice", "worker", &channels);
        assert!(t.starts_with("rl_") && t.len() == 3 + 48, "{t}");
        // The same request derives the same token (a retry finds the stored one)...
        assert_eq!(
            t,
            derive_token(&key, "admin", "r-1/0", "alice", "worker", &channels)
        );
        // ...and any other input, or another secret, another token.
        let others = [
            derive_token(&key, "admin2", "r-1/0", "alice", "worker", &channels),
            derive_token(&key, "admin", "r-2/0", "alice", "worker", &channels),
            derive_token(&key, "admin", "r-1/0", "bob", "worker", &channels),
            derive_token(&key, "admin", "r-1/0", "alice", "viewer", &channels),
            derive_token(&key, "admin", "r-1/0", "alice", "worker", &None),
            derive_token(&key, "admin", "r-1/0a", "lice", "worker", &channels),
            derive_token(
                &token_key("other").expect("a key"),
                "admin",
                "r-1/0",
                "alice",
                "worker",
                &channels,
            ),
        ];
        for o in others {
            assert_ne!(o, t);
        }
        assert_eq!(token_key(""), None);
        assert_ne!(random_token(), random_token());
    }
}
