//! API principals: bearer tokens stored only as SHA-256 hashes, with a role and an optional
//! channel scope. The token never enters the log; the API hashes what a client presents.

use crate::model::ids::Millis;
use serde::{Deserialize, Serialize};

/// A principal's role: what its token may do (docs/SPEC.md §9).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Admin,
    Operator,
    Worker,
    Viewer,
    /// Reads everything a viewer reads except bodies (docs/SPEC.md §9.7).
    // Appended last: roles are encoded by position.
    Metadata,
    /// messagefoundry's engine (docs/SPEC.md §9.3): exactly the routes its store and cluster
    /// coordinator call, and no power over other principals' claims, names or engines.
    // Appended last: roles are encoded by position.
    Engine,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Operator => "operator",
            Role::Worker => "worker",
            Role::Viewer => "viewer",
            Role::Metadata => "metadata",
            Role::Engine => "engine",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        [
            Role::Admin,
            Role::Operator,
            Role::Worker,
            Role::Viewer,
            Role::Metadata,
            Role::Engine,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    pub name: String,
    /// Hex SHA-256 of the token.
    pub token_hash: String,
    pub role: Role,
    /// `None` = every channel.
    pub channels: Option<Vec<String>>,
    pub created_at: Millis,
}

impl Principal {
    pub fn may_see_channel(&self, channel: &str) -> bool {
        self.channels
            .as_ref()
            .is_none_or(|c| c.iter().any(|x| x == channel))
    }
}
