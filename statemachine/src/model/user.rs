//! The engine's user store (docs/SPEC.md §13): user accounts with their password, lockout and
//! TOTP second factor, roles and their assignment to users, and the maps from AD groups to roles
//! and to channels. The state machine keeps these values as given: password hashes, recovery code
//! hashes and the TOTP secret are opaque strings (the proposer hashes and seals them), and a
//! channel scope is opaque JSON text.

use crate::model::ids::Millis;
use serde::{Deserialize, Serialize};

/// Who vouches for a user's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthProvider {
    /// A local account: password (and optionally TOTP) checked by the engine.
    Local,
    /// An Active Directory account: the directory checks the password; roles and channels may
    /// come from its groups.
    Ad,
}

impl AuthProvider {
    pub const ALL: [AuthProvider; 2] = [AuthProvider::Local, AuthProvider::Ad];

    pub fn as_str(self) -> &'static str {
        match self {
            AuthProvider::Local => "local",
            AuthProvider::Ad => "ad",
        }
    }

    pub fn parse(s: &str) -> Option<AuthProvider> {
        AuthProvider::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// A user account (table `Users`, by id; `Usernames` maps the unique username to the id).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub id: String,
    pub username: String,
    pub auth_provider: AuthProvider,
    pub display_name: Option<String>,
    pub email: Option<String>,
    pub disabled: bool,
    pub created_at: Millis,
    pub updated_at: Millis,
    pub last_login_at: Option<Millis>,
    /// Opaque (the engine's password hash); `None` for AD users.
    pub password_hash: Option<String>,
    pub password_changed_at: Option<Millis>,
    pub must_change_password: bool,
    pub failed_attempts: u32,
    pub locked_until: Option<Millis>,
    /// JSON text listing the channels the user may see; `None` = every channel.
    pub channel_scope: Option<String>,
    /// The TOTP secret, opaque (the proposer seals it); staged before TOTP is enabled.
    pub totp_secret: Option<String>,
    pub totp_enabled: bool,
    pub totp_enrolled_at: Option<Millis>,
    /// Hashes of the unused recovery codes, in the order they were given.
    pub recovery_code_hashes: Vec<String>,
    /// The highest TOTP time step consumed: a code is single-use.
    pub last_totp_step: Option<u64>,
}

/// A role (table `Roles`, by id).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthRole {
    pub id: String,
    pub display_name: String,
    pub description: Option<String>,
    pub builtin: bool,
}

/// A role given to a user (table `UserRoles`, by user id and role id).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleAssignment {
    pub role_id: String,
    pub assigned_at: Millis,
    pub assigned_by: Option<String>,
}

/// Which of the two AD group maps: group → role id, or group → channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdGroupMap {
    Roles,
    Scope,
}

impl AdGroupMap {
    pub const ALL: [AdGroupMap; 2] = [AdGroupMap::Roles, AdGroupMap::Scope];

    pub fn as_str(self) -> &'static str {
        match self {
            AdGroupMap::Roles => "roles",
            AdGroupMap::Scope => "scope",
        }
    }

    /// The one-byte tag that starts the map's keys.
    pub fn tag(self) -> u8 {
        self as u8
    }
}
