//! The pipeline's stages: where a work row sits, and the first part of every lane's key.

use serde::{Deserialize, Serialize};

/// The four pipeline stages a work row can sit in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Ingress,
    Routed,
    Outbound,
    Response,
}

impl Stage {
    pub const ALL: [Stage; 4] = [Self::Ingress, Self::Routed, Self::Outbound, Self::Response];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ingress => "ingress",
            Self::Routed => "routed",
            Self::Outbound => "outbound",
            Self::Response => "response",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// One byte for ordered keys.
    pub fn tag(self) -> u8 {
        self as u8
    }
}
