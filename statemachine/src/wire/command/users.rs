//! The engine's users, roles, directory groups and sessions (docs/SPEC.md §13).

use crate::model::ids::Millis;
use crate::model::user::{AdGroupMap, AuthProvider};
use serde::{Deserialize, Serialize};

/// A new user account (`created_at = updated_at = t`). Rejected if the id or the username is
/// taken.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateUser {
    pub user_id: String,
    pub username: String,
    pub auth_provider: AuthProvider,
    pub display_name: Option<String>,
    pub email: Option<String>,
    /// Opaque; `password_changed_at = t` when given.
    pub password_hash: Option<String>,
    pub must_change_password: bool,
}

/// One change to a user. Answers `Count(1)` when the user changed, `Count(0)` for an unknown
/// user (and for a consume that consumed nothing).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpdateUser {
    pub user_id: String,
    pub change: UserChange,
}

/// What [`UpdateUser`] changes. Every change sets `updated_at = t`, except `ConsumeTotpStep`
/// (and a consume that consumed nothing, which changes nothing).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum UserChange {
    /// A new password: also `password_changed_at = t`, `failed_attempts = 0`, no lockout.
    Password {
        password_hash: String,
        must_change_password: bool,
    },
    Disabled(bool),
    /// Both fields are replaced (`None` clears).
    Profile {
        display_name: Option<String>,
        email: Option<String>,
    },
    /// Stage (or clear) the TOTP secret; does not enable TOTP.
    TotpSecret(Option<String>),
    /// `totp_enabled`, `totp_enrolled_at = t`, and the recovery codes replaced.
    EnableTotp {
        recovery_code_hashes: Vec<String>,
    },
    /// Clears the secret, `totp_enabled`, `totp_enrolled_at` and the recovery codes.
    DisableTotp,
    /// Remove one recovery code hash: `Count(1)` iff it was there.
    ConsumeRecoveryCode {
        code_hash: String,
    },
    /// Record `step` as consumed: `Count(1)` iff it is greater than every step consumed before
    /// (a replayed code answers `Count(0)`).
    ConsumeTotpStep {
        step: u64,
    },
    /// `last_login_at = t`, `failed_attempts = 0`, no lockout.
    LoginSuccess,
    LoginFailure {
        failed_attempts: u32,
        locked_until: Option<Millis>,
    },
    /// JSON text, opaque; `None` = every channel.
    ChannelScope(Option<String>),
}

/// Delete a user with its role assignments and sessions: `Count(0 or 1)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteUser {
    pub user_id: String,
}

/// Create or replace a role.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpsertRole {
    pub role_id: String,
    pub display_name: String,
    pub description: Option<String>,
    pub builtin: bool,
}

/// Replace a user's role assignments (`assigned_at = t`): `Count(roles assigned)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetUserRoles {
    pub user_id: String,
    pub role_ids: Vec<String>,
    pub assigned_by: Option<String>,
}

/// Replace one AD group map whole with `(group, role id or channel)` entries, normalised (see
/// [`crate::rules::ad_groups`]): `Count(entries stored)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetAdGroupMap {
    pub map: AdGroupMap,
    pub entries: Vec<(String, String)>,
}

/// A new session (`created_at = last_used_at = t`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateSession {
    /// The hash of the session token; the token never enters the log.
    pub token_hash: String,
    pub user_id: String,
    pub expires_at: Millis,
    pub client: Option<String>,
    /// `reauth_at = t` when set; `None` for a session still waiting for its second factor.
    pub seed_reauth: bool,
}

/// One change to a session: `Count(1)` when it changed, `Count(0)` for an unknown session (or
/// a revocation of a revoked one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpdateSession {
    pub token_hash: String,
    pub change: SessionChange,
}

/// What [`UpdateSession`] changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SessionChange {
    /// `last_used_at = t`.
    Touch,
    /// `reauth_at = t`; the client is replaced only when given.
    Reauthed { client: Option<String> },
    /// `mfa_verified_at = t`.
    MfaVerified,
    /// `revoked_at = t`, unless already revoked.
    Revoke,
}

/// Revoke a user's unrevoked sessions, all or all but one: `Count(revoked)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevokeUserSessions {
    pub user_id: String,
    pub except_token_hash: Option<String>,
}

/// Revoke a user's unrevoked sessions beyond the `keep` most recently created (`keep = 0`:
/// nothing): `Count(revoked)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnforceSessionCap {
    pub user_id: String,
    pub keep: u32,
}

/// Delete every session with `expires_at < t`: `Count(deleted)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeExpiredSessions;

/// A session write dated by its caller (docs/SPEC.md §13.2): `write` applies as it would on its
/// own, except that every session time it stamps (`created_at`, `last_used_at`, `reauth_at`,
/// `mfa_verified_at`, `revoked_at`) is `at` instead of `t`. The engine ages its sessions against
/// its own clock and revokes one stamped ahead of it, so the times must be the ones it named.
/// `at` must lie within [`MAX_SESSION_AT_SKEW_MS`](crate::model::session::MAX_SESSION_AT_SKEW_MS)
/// of `t` either way, else the write is refused as `invalid` (`field` = `at`) and changes
/// nothing. `at` moves neither the machine's clock nor any lease. Answers what `write` answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionAt {
    pub at: Millis,
    pub write: SessionWrite,
}

/// The session writes [`SessionAt`] can date: those that stamp a session time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SessionWrite {
    Create(CreateSession),
    Update(UpdateSession),
    RevokeUser(RevokeUserSessions),
    Cap(EnforceSessionCap),
}

impl SessionWrite {
    /// The name of the command this write is on its own.
    pub fn name(&self) -> &'static str {
        match self {
            SessionWrite::Create(_) => "create_session",
            SessionWrite::Update(_) => "update_session",
            SessionWrite::RevokeUser(_) => "revoke_user_sessions",
            SessionWrite::Cap(_) => "enforce_session_cap",
        }
    }
}
