//! Encryption at rest: key rotation.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `POST /v1/keys/rotate` (an empty body is `{}`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateRequest {
    /// Covered values read (and at most proposed) per batch; absent: 500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<usize>,
}

/// `POST /v1/keys/rotate`: what the rotation did. Members in the order the server has always
/// sent them (alphabetical).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Rotated {
    /// The id of the key every covered value is now under.
    pub active_key: String,
    pub batches: u64,
    /// Values that changed during the rotation and were left alone (run it again).
    pub conflicts: u64,
    pub rewritten: u64,
    /// Values already under the active key.
    pub skipped: u64,
}
