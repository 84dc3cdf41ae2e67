//! The engine's users, roles, directory-group maps and sessions (docs/SPEC.md §13): bodies and
//! answers of `/v1/users`, `/v1/roles`, `/v1/directory-groups` and `/v1/sessions`. Times are ms
//! since the Unix epoch. Password, recovery-code and session-token values are the engine's
//! hashes, opaque here; a channel scope is opaque JSON text.

use crate::comma_list::CommaList;
use crate::page::UnboundedLimit;
use crate::read::Consistency;
use raftlane_statemachine::model::session::Session;
use raftlane_statemachine::model::user::{AuthRole, RoleAssignment, User};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `POST /v1/users`: a new user (409 `already_exists` naming `user_id` or `username` when
/// taken).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateUserRequest {
    pub id: String,
    pub username: String,
    pub auth_provider: AuthProvider,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_hash: Option<String>,
    #[serde(default)]
    pub must_change_password: bool,
}

/// Who vouches for a new user's identity: the state machine's `AuthProvider`, as a request
/// names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuthProvider {
    /// A local account: password (and optionally TOTP) checked by the engine.
    Local,
    /// An Active Directory account: the directory checks the password; roles and channels may
    /// come from its groups.
    Ad,
}

impl From<AuthProvider> for raftlane_statemachine::model::user::AuthProvider {
    fn from(p: AuthProvider) -> Self {
        match p {
            AuthProvider::Local => Self::Local,
            AuthProvider::Ad => Self::Ad,
        }
    }
}

/// `POST /v1/users` (201): the user was created.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UserCreated {
    pub index: u64,
    pub id: String,
}

/// A user as the API shows it: everything but the TOTP secret, the recovery-code hashes and
/// the last consumed TOTP step (`GET /v1/users/{id}/secrets`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UserView {
    pub id: String,
    pub username: String,
    /// `local` or `ad`.
    pub auth_provider: String,
    pub display_name: Option<String>,
    pub email: Option<String>,
    pub disabled: bool,
    pub created_at: u64,
    pub updated_at: u64,
    pub last_login_at: Option<u64>,
    pub password_hash: Option<String>,
    pub password_changed_at: Option<u64>,
    pub must_change_password: bool,
    pub failed_attempts: u32,
    pub locked_until: Option<u64>,
    /// JSON text listing the channels the user may see; `null` = every channel.
    pub channel_scope: Option<String>,
    pub totp_enabled: bool,
    pub totp_enrolled_at: Option<u64>,
}

impl From<User> for UserView {
    fn from(u: User) -> Self {
        UserView {
            id: u.id,
            username: u.username,
            auth_provider: u.auth_provider.as_str().to_string(),
            display_name: u.display_name,
            email: u.email,
            disabled: u.disabled,
            created_at: u.created_at,
            updated_at: u.updated_at,
            last_login_at: u.last_login_at,
            password_hash: u.password_hash,
            password_changed_at: u.password_changed_at,
            must_change_password: u.must_change_password,
            failed_attempts: u.failed_attempts,
            locked_until: u.locked_until,
            channel_scope: u.channel_scope,
            totp_enabled: u.totp_enabled,
            totp_enrolled_at: u.totp_enrolled_at,
        }
    }
}

/// The query of `GET /v1/users`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserQuery {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Users answered (all when absent; 0: only the count).
    #[serde(default, skip_serializing_if = "UnboundedLimit::is_default")]
    pub limit: UnboundedLimit,
    /// `stale`: answered from this node's state as it is; absent or `linearizable`: after
    /// catching up with the leader's commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
}

/// `GET /v1/users` (`?username=`, `?limit=`): users by username; `count` is how many match
/// before the limit (`limit=0` answers only the count).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UserList {
    pub users: Vec<UserView>,
    pub count: u64,
}

/// `GET /v1/users/{id}/secrets`: the second-factor values the user view leaves out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UserSecrets {
    pub totp_secret: Option<String>,
    pub recovery_code_hashes: Vec<String>,
    pub last_totp_step: Option<u64>,
}

impl From<User> for UserSecrets {
    fn from(u: User) -> Self {
        UserSecrets {
            totp_secret: u.totp_secret,
            recovery_code_hashes: u.recovery_code_hashes,
            last_totp_step: u.last_totp_step,
        }
    }
}

/// `DELETE /v1/users/{id}`: whether a user was deleted (with its role assignments and
/// sessions); `false` for an unknown user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UserDeleted {
    pub index: u64,
    pub deleted: bool,
}

// --- POST /v1/users/{id}/{change} ---

/// `password`: a new password hash (also resets failed attempts and lockout).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordChange {
    pub password_hash: String,
    #[serde(default)]
    pub must_change_password: bool,
}

/// `disabled`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DisabledChange {
    pub disabled: bool,
}

/// `profile`: both members are replaced (absent or `null` clears).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileChange {
    #[serde(default)]
    pub display_name: Option<String>,
    #[serde(default)]
    pub email: Option<String>,
}

/// `totp-secret`: stage (or, `null`, clear) the TOTP secret; does not enable TOTP.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TotpSecretChange {
    pub secret: Option<String>,
}

/// `totp-enable`: enable TOTP with these recovery-code hashes (replacing any).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TotpEnableChange {
    pub recovery_code_hashes: Vec<String>,
}

/// `totp-disable`, `login-success`, `POST /v1/sessions/purge-expired`: no member.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoChangeBody {}

/// `login-failure`: the failed-attempt count and lockout the engine decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginFailureChange {
    pub failed_attempts: u32,
    #[serde(default)]
    pub locked_until: Option<u64>,
}

/// `channel-scope`: JSON text listing the channels; `null` = every channel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelScopeChange {
    pub scope: Option<String>,
}

/// `consume`: exactly one of `recovery_code_hash` (removed iff present) and `totp_step`
/// (recorded iff greater than every step consumed before); compare-and-set, once
/// cluster-wide.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConsumeChange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_code_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub totp_step: Option<u64>,
}

/// The body of `POST /v1/users/{id}/{change}`: the body of the change the path names. Only for
/// the schema (the server parses the body as the named change's type).
#[derive(JsonSchema)]
#[serde(untagged)]
pub enum UserChangeBody {
    Password(PasswordChange),
    Disabled(DisabledChange),
    Profile(ProfileChange),
    TotpSecret(TotpSecretChange),
    TotpEnable(TotpEnableChange),
    LoginFailure(LoginFailureChange),
    ChannelScope(ChannelScopeChange),
    Consume(ConsumeChange),
    Empty(NoChangeBody),
}

/// `POST /v1/users/{id}/{change}`: `changed` is `false` for an unknown user; a `consume`
/// also answers `consumed` (`false`: nothing consumed, or an unknown user).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UserChanged {
    pub index: u64,
    pub changed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumed: Option<bool>,
}

// --- roles ---

/// A role.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RoleView {
    pub id: String,
    pub display_name: String,
    pub description: Option<String>,
    pub builtin: bool,
}

impl From<AuthRole> for RoleView {
    fn from(r: AuthRole) -> Self {
        RoleView {
            id: r.id,
            display_name: r.display_name,
            description: r.description,
            builtin: r.builtin,
        }
    }
}

/// `GET /v1/roles`: every role, by id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RoleList {
    pub roles: Vec<RoleView>,
}

/// `PUT /v1/roles/{id}`: create or replace a role.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleRequest {
    pub display_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub builtin: bool,
}

/// `PUT /v1/roles/{id}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RoleWritten {
    pub index: u64,
    pub id: String,
}

/// One role given to a user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RoleAssignmentView {
    pub role_id: String,
    pub assigned_at: u64,
    pub assigned_by: Option<String>,
}

impl From<RoleAssignment> for RoleAssignmentView {
    fn from(a: RoleAssignment) -> Self {
        RoleAssignmentView {
            role_id: a.role_id,
            assigned_at: a.assigned_at,
            assigned_by: a.assigned_by,
        }
    }
}

/// `GET /v1/users/{id}/roles`: the user's role ids, sorted, and when and by whom each was
/// given (both empty for an unknown user).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UserRoles {
    pub role_ids: Vec<String>,
    pub assignments: Vec<RoleAssignmentView>,
}

/// `PUT /v1/users/{id}/roles`: replace the user's roles (404 `not_found` for an unknown user
/// or role).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserRolesRequest {
    pub role_ids: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assigned_by: Option<String>,
}

/// `PUT /v1/users/{id}/roles`: how many roles the user now has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RolesAssigned {
    pub index: u64,
    pub assigned: u64,
}

// --- directory-group maps ---

/// One entry of a directory-group map: a group and the role id (map `roles`) or channel (map
/// `channels`) it gives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupEntry {
    pub group: String,
    pub value: String,
}

/// `GET /v1/directory-groups/{map}` (`map` = `roles` or `channels`): the map's entries, groups
/// normalised as stored, sorted. With `?groups=a,b` also `values`: what the map gives any of
/// those groups (compared as the map normalises them), sorted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GroupMap {
    pub map: String,
    pub entries: Vec<GroupEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<String>>,
}

/// The query of `GET /v1/directory-groups/{map}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupMapQuery {
    /// Comma-separated groups to resolve through the map.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<CommaList>,
    /// `stale`: answered from this node's state as it is; absent or `linearizable`: after
    /// catching up with the leader's commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
}

/// `PUT /v1/directory-groups/{map}`: replace the whole map (a `roles` entry naming an unknown
/// role is 404 `not_found`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupMapRequest {
    pub entries: Vec<GroupEntry>,
}

/// `PUT /v1/directory-groups/{map}`: entries stored after normalisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GroupMapWritten {
    pub index: u64,
    pub stored: u64,
}

// --- sessions ---

/// `POST /v1/sessions`: a new session of a user (404 for an unknown user, 409
/// `already_exists` for a token hash in use).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSessionRequest {
    pub token_hash: String,
    pub user_id: String,
    pub expires_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// `reauth_at` = the creation time when set (default); unset for a session still waiting
    /// for its second factor.
    #[serde(default = "yes")]
    pub seed_reauth: bool,
    /// The creation time (ms) the caller names, stamped as `created_at`, `last_used_at` and
    /// `reauth_at` instead of the cluster's time: at most 30 s either way from it, else `400
    /// invalid` naming `at` (docs/SPEC.md §13.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<u64>,
}

fn yes() -> bool {
    true
}

/// `POST /v1/sessions` (201).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionCreated {
    pub index: u64,
    pub token_hash: String,
}

/// A session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionView {
    pub token_hash: String,
    pub user_id: String,
    pub created_at: u64,
    pub expires_at: u64,
    pub last_used_at: u64,
    pub revoked_at: Option<u64>,
    pub client: Option<String>,
    pub reauth_at: Option<u64>,
    pub mfa_verified_at: Option<u64>,
}

impl From<Session> for SessionView {
    fn from(s: Session) -> Self {
        SessionView {
            token_hash: s.token_hash,
            user_id: s.user_id,
            created_at: s.created_at,
            expires_at: s.expires_at,
            last_used_at: s.last_used_at,
            revoked_at: s.revoked_at,
            client: s.client,
            reauth_at: s.reauth_at,
            mfa_verified_at: s.mfa_verified_at,
        }
    }
}

/// `GET /v1/users/{id}/sessions`: the user's sessions neither revoked nor expired at the
/// request's time, most recently used first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionList {
    pub sessions: Vec<SessionView>,
}

/// `reauth` of `POST /v1/sessions/{token_hash}/{change}`: the client is replaced only when
/// given.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReauthChange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The caller's time (ms) to stamp instead of the cluster's: at most 30 s either way from
    /// it, else `400 invalid` naming `at` (docs/SPEC.md §13.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<u64>,
}

/// `touch`, `mfa-verified` and `revoke` of `POST /v1/sessions/{token_hash}/{change}`: only the
/// optional time the caller names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionChangeAt {
    /// The caller's time (ms) to stamp instead of the cluster's: at most 30 s either way from
    /// it, else `400 invalid` naming `at` (docs/SPEC.md §13.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<u64>,
}

/// The body of `POST /v1/sessions/{token_hash}/{change}` (`touch`, `reauth`, `mfa-verified`,
/// `revoke`): `{at?}`, and `reauth`'s optional `client`. Only for the schema.
#[derive(JsonSchema)]
#[serde(untagged)]
pub enum SessionChangeBody {
    Reauth(ReauthChange),
    Dated(SessionChangeAt),
}

/// `POST /v1/sessions/{token_hash}/{change}`: `false` for an unknown session (or revoking a
/// revoked one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionChanged {
    pub index: u64,
    pub changed: bool,
}

/// `POST /v1/users/{id}/sessions/revoke`: revoke the user's sessions, all or all but one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeSessionsRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub except_token_hash: Option<String>,
    /// The caller's time (ms) to stamp as `revoked_at` instead of the cluster's: at most 30 s
    /// either way from it, else `400 invalid` naming `at` (docs/SPEC.md §13.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<u64>,
}

/// `POST /v1/users/{id}/sessions/cap`: revoke all but the `keep` most recently created
/// unrevoked sessions (`keep` = 0: nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionCapRequest {
    pub keep: u32,
    /// The caller's time (ms) to stamp as `revoked_at` instead of the cluster's: at most 30 s
    /// either way from it, else `400 invalid` naming `at` (docs/SPEC.md §13.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<u64>,
}

/// `POST /v1/users/{id}/sessions/revoke` and `.../cap`: sessions revoked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionsRevoked {
    pub index: u64,
    pub revoked: u64,
}

/// `POST /v1/sessions/purge-expired`: sessions deleted (expired before the request's time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionsPurged {
    pub index: u64,
    pub purged: u64,
}
