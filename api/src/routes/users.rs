//! The engine's users, roles and directory-group maps (docs/SPEC.md §13): its own
//! authentication tables, so every route here needs the admin role. Sessions are in
//! [`super::sessions`].

use super::{check_name, propose, read_state, unexpected, ReadOpts};
use crate::auth::{Caller, Permission};
use crate::error::{ApiError, ApiResult};
use crate::extract::{parse_json, parse_json_or_default, JsonBody, Path, Query, RawBody};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use raftlane_contract::{
    ChannelScopeChange, CommaList, ConsumeChange, CreateUserRequest, DisabledChange, GroupEntry,
    GroupMap, GroupMapQuery, GroupMapRequest, GroupMapWritten, LoginFailureChange, NoChangeBody,
    PasswordChange, ProfileChange, RoleList, RoleRequest, RoleView, RoleWritten, RolesAssigned,
    TotpEnableChange, TotpSecretChange, UserChanged, UserCreated, UserDeleted, UserList, UserQuery,
    UserRoles, UserRolesRequest, UserSecrets, UserView,
};
use raftlane_statemachine::model::user::AdGroupMap;
use raftlane_statemachine::rules::principal_name;
use raftlane_statemachine::wire::command::{
    CreateUser, DeleteUser, SetAdGroupMap, SetUserRoles, UpdateUser, UpsertRole, UserChange,
};
use raftlane_statemachine::{Command, Outcome};
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// The answer of a command that answers `Count(n)`.
pub(super) fn count(outcome: (u64, Outcome)) -> ApiResult<(u64, u64)> {
    match outcome {
        (index, Outcome::Count(n)) => Ok((index, n)),
        (_, other) => Err(unexpected(other)),
    }
}

/// The answer of a command that answers `Done`.
pub(super) fn done(outcome: (u64, Outcome)) -> ApiResult<u64> {
    match outcome {
        (index, Outcome::Done) => Ok(index),
        (_, other) => Err(unexpected(other)),
    }
}

/// A change's body, parsed as that change's type (an empty body is `{}`).
pub(super) fn change_body<T: DeserializeOwned>(body: &[u8]) -> ApiResult<T> {
    if body.is_empty() {
        parse_json(b"{}")
    } else {
        parse_json(body)
    }
}

pub async fn create_user(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<CreateUserRequest>,
) -> ApiResult<(StatusCode, Json<UserCreated>)> {
    caller.require_global(Permission::EngineUsers)?;
    check_name("id", &b.id)?;
    // A username has one normal form (docs/SPEC.md §9.1): the NFKC form is proposed; the state
    // machine refuses it confusable with another username.
    let username = principal_name::normal_form(&b.username);
    principal_name::check_username_form("username", &username)?;
    let command = Command::CreateUser(CreateUser {
        user_id: b.id.clone(),
        username,
        auth_provider: b.auth_provider.into(),
        display_name: b.display_name,
        email: b.email,
        password_hash: b.password_hash,
        must_change_password: b.must_change_password,
    });
    let index = done(propose(&state, &caller, command).await?)?;
    Ok((StatusCode::CREATED, Json(UserCreated { index, id: b.id })))
}

pub async fn list_users(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(q): Query<UserQuery>,
) -> ApiResult<Json<UserList>> {
    caller.require_global(Permission::EngineUsers)?;
    let opts = ReadOpts {
        consistency: q.consistency,
    };
    let limit = q.limit.get();
    // Looked up in the form usernames are stored in.
    let username = q.username.as_deref().map(principal_name::normal_form);
    let (users, count) = read_state(&state, &opts, |r| match &username {
        Some(name) => {
            let users: Vec<_> = r.user_by_username(name)?.into_iter().collect();
            let count = users.len() as u64;
            Ok((users, count))
        }
        None if limit == 0 => Ok((Vec::new(), r.user_count()?)),
        None => {
            let users = r.users()?;
            let count = users.len() as u64;
            Ok((users, count))
        }
    })
    .await?;
    Ok(Json(UserList {
        users: users.into_iter().take(limit).map(UserView::from).collect(),
        count,
    }))
}

pub async fn get_user(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<UserView>> {
    caller.require_global(Permission::EngineUsers)?;
    match read_state(&state, &opts, |r| r.user(&id)).await? {
        Some(u) => Ok(Json(UserView::from(u))),
        None => Err(ApiError::not_found(format!("user {id} not found"))),
    }
}

pub async fn user_secrets(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<UserSecrets>> {
    caller.require_global(Permission::EngineUsers)?;
    match read_state(&state, &opts, |r| r.user(&id)).await? {
        Some(u) => Ok(Json(UserSecrets::from(u))),
        None => Err(ApiError::not_found(format!("user {id} not found"))),
    }
}

pub async fn delete_user(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<UserDeleted>> {
    caller.require_global(Permission::EngineUsers)?;
    check_name("id", &id)?;
    let params = serde_json::json!({ "id": &id });
    crate::dual_control::authorize(
        &state,
        &caller,
        crate::dual_control::Action::DeleteUser,
        &params,
    )
    .await?;
    let command = Command::DeleteUser(DeleteUser { user_id: id });
    let (index, n) = count(propose(&state, &caller, command).await?)?;
    Ok(Json(UserDeleted {
        index,
        deleted: n > 0,
    }))
}

/// The names of the changes of `POST /v1/users/{id}/{change}`.
const USER_CHANGES: &str = "password, disabled, profile, totp-secret, totp-enable, \
     totp-disable, login-success, login-failure, channel-scope or consume";

/// The command a change names, from its body.
fn user_change(change: &str, body: &[u8]) -> ApiResult<UserChange> {
    Ok(match change {
        "password" => {
            let b: PasswordChange = change_body(body)?;
            UserChange::Password {
                password_hash: b.password_hash,
                must_change_password: b.must_change_password,
            }
        }
        "disabled" => UserChange::Disabled(change_body::<DisabledChange>(body)?.disabled),
        "profile" => {
            let b: ProfileChange = parse_json_or_default(body)?;
            UserChange::Profile {
                display_name: b.display_name,
                email: b.email,
            }
        }
        "totp-secret" => UserChange::TotpSecret(change_body::<TotpSecretChange>(body)?.secret),
        "totp-enable" => UserChange::EnableTotp {
            recovery_code_hashes: change_body::<TotpEnableChange>(body)?.recovery_code_hashes,
        },
        "totp-disable" => {
            change_body::<NoChangeBody>(body)?;
            UserChange::DisableTotp
        }
        "login-success" => {
            change_body::<NoChangeBody>(body)?;
            UserChange::LoginSuccess
        }
        "login-failure" => {
            let b: LoginFailureChange = change_body(body)?;
            UserChange::LoginFailure {
                failed_attempts: b.failed_attempts,
                locked_until: b.locked_until,
            }
        }
        "channel-scope" => {
            let scope = change_body::<ChannelScopeChange>(body)?.scope;
            if let Some(text) = &scope {
                serde_json::from_str::<serde_json::Value>(text)
                    .map_err(|e| ApiError::invalid("scope", format!("not JSON text: {e}")))?;
            }
            UserChange::ChannelScope(scope)
        }
        "consume" => match change_body::<ConsumeChange>(body)? {
            ConsumeChange {
                recovery_code_hash: Some(code_hash),
                totp_step: None,
            } => UserChange::ConsumeRecoveryCode { code_hash },
            ConsumeChange {
                recovery_code_hash: None,
                totp_step: Some(step),
            } => UserChange::ConsumeTotpStep { step },
            _ => {
                return Err(ApiError::invalid(
                    "recovery_code_hash",
                    "give exactly one of recovery_code_hash and totp_step",
                ))
            }
        },
        other => {
            return Err(ApiError::invalid(
                "change",
                format!("'{other}' is not {USER_CHANGES}"),
            ))
        }
    })
}

pub async fn change_user(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((id, change)): Path<(String, String)>,
    RawBody(body): RawBody,
) -> ApiResult<Json<UserChanged>> {
    caller.require_global(Permission::EngineUsers)?;
    check_name("id", &id)?;
    let change = user_change(&change, &body)?;
    let consume = matches!(
        change,
        UserChange::ConsumeRecoveryCode { .. } | UserChange::ConsumeTotpStep { .. }
    );
    let command = Command::UpdateUser(UpdateUser {
        user_id: id,
        change,
    });
    let (index, n) = count(propose(&state, &caller, command).await?)?;
    Ok(Json(UserChanged {
        index,
        changed: n > 0,
        consumed: consume.then_some(n > 0),
    }))
}

// --- roles ---

pub async fn list_roles(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<RoleList>> {
    caller.require_global(Permission::EngineUsers)?;
    let roles = read_state(&state, &opts, |r| r.roles()).await?;
    Ok(Json(RoleList {
        roles: roles.into_iter().map(RoleView::from).collect(),
    }))
}

pub async fn put_role(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(b): JsonBody<RoleRequest>,
) -> ApiResult<Json<RoleWritten>> {
    caller.require_global(Permission::EngineUsers)?;
    check_name("id", &id)?;
    let command = Command::UpsertRole(UpsertRole {
        role_id: id.clone(),
        display_name: b.display_name,
        description: b.description,
        builtin: b.builtin,
    });
    let index = done(propose(&state, &caller, command).await?)?;
    Ok(Json(RoleWritten { index, id }))
}

pub async fn user_roles(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<UserRoles>> {
    caller.require_global(Permission::EngineUsers)?;
    let assignments = read_state(&state, &opts, |r| r.user_role_assignments(&id)).await?;
    let mut role_ids: Vec<String> = assignments.iter().map(|a| a.role_id.clone()).collect();
    role_ids.sort();
    Ok(Json(UserRoles {
        role_ids,
        assignments: assignments.into_iter().map(Into::into).collect(),
    }))
}

pub async fn set_user_roles(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(b): JsonBody<UserRolesRequest>,
) -> ApiResult<Json<RolesAssigned>> {
    caller.require_global(Permission::EngineUsers)?;
    check_name("id", &id)?;
    for (i, role) in b.role_ids.iter().enumerate() {
        check_name(&format!("role_ids[{i}]"), role)?;
    }
    let command = Command::SetUserRoles(SetUserRoles {
        user_id: id,
        role_ids: b.role_ids,
        assigned_by: b.assigned_by,
    });
    let (index, assigned) = count(propose(&state, &caller, command).await?)?;
    Ok(Json(RolesAssigned { index, assigned }))
}

// --- directory-group maps ---

/// `roles` (group → role id) or `channels` (group → channel; the state machine's `Scope` map).
fn parse_map(map: &str) -> ApiResult<AdGroupMap> {
    match map {
        "roles" => Ok(AdGroupMap::Roles),
        "channels" => Ok(AdGroupMap::Scope),
        other => Err(ApiError::invalid(
            "map",
            format!("'{other}' is not roles or channels"),
        )),
    }
}

pub async fn group_map(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(map): Path<String>,
    Query(q): Query<GroupMapQuery>,
) -> ApiResult<Json<GroupMap>> {
    caller.require_global(Permission::EngineUsers)?;
    let which = parse_map(&map)?;
    let opts = ReadOpts {
        consistency: q.consistency,
    };
    let groups: Option<Vec<String>> = q.groups.map(CommaList::into_items);
    let (entries, values) = read_state(&state, &opts, |r| {
        let entries = r.ad_group_map(which)?;
        let values = match &groups {
            None => None,
            Some(groups) => Some(match which {
                AdGroupMap::Roles => r.roles_for_ad_groups(groups)?,
                AdGroupMap::Scope => r.channels_for_ad_groups(groups)?,
            }),
        };
        Ok((entries, values))
    })
    .await?;
    Ok(Json(GroupMap {
        map,
        entries: entries
            .into_iter()
            .map(|(group, value)| GroupEntry { group, value })
            .collect(),
        values,
    }))
}

pub async fn put_group_map(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(map): Path<String>,
    JsonBody(b): JsonBody<GroupMapRequest>,
) -> ApiResult<Json<GroupMapWritten>> {
    caller.require_global(Permission::EngineUsers)?;
    let which = parse_map(&map)?;
    let command = Command::SetAdGroupMap(SetAdGroupMap {
        map: which,
        entries: b.entries.into_iter().map(|e| (e.group, e.value)).collect(),
    });
    let (index, stored) = count(propose(&state, &caller, command).await?)?;
    Ok(Json(GroupMapWritten { index, stored }))
}
