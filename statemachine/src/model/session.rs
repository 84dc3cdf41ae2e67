//! Server-side sessions of the engine's users (docs/SPEC.md §13). Only the hash of a session
//! token is kept; the token never enters the log.

use crate::model::ids::Millis;
use serde::{Deserialize, Serialize};

/// How far a caller's time on a dated session write (`SessionAt`, docs/SPEC.md §13.2) may be
/// from the cluster's time `t`, either way: the cluster's clock-skew bound (raftlane_raft's
/// `DEFAULT_CLOCK_SKEW_MS`, docs/SPEC.md §2.1). A constant, not the node's tuning: `apply`
/// must decide the same on every replica, whatever each was started with.
pub const MAX_SESSION_AT_SKEW_MS: Millis = 30_000;

/// A session (table `Sessions`, by token hash; `UserSessions` and `SessionExpiry` index it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub token_hash: String,
    pub user_id: String,
    pub created_at: Millis,
    pub expires_at: Millis,
    pub last_used_at: Millis,
    pub revoked_at: Option<Millis>,
    /// The client address last verified for the session (opaque).
    pub client: Option<String>,
    /// When the session last proved the user's credential (step-up freshness); `None` until
    /// then (a session waiting for its second factor).
    pub reauth_at: Option<Millis>,
    /// When the session satisfied its second factor; `None` = not satisfied.
    pub mfa_verified_at: Option<Millis>,
}

impl Session {
    /// Not revoked and not expired at `t`.
    pub fn is_active(&self, t: Millis) -> bool {
        self.revoked_at.is_none() && self.expires_at > t
    }
}
