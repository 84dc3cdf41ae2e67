//! Pausing a destination (docs/SPEC.md §4.9): `POST /v1/destinations/{destination}/pause`,
//! `.../resume`, and the list of paused destinations.

use raftlane_statemachine::model::ids::Millis;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `POST /v1/destinations/{destination}/pause` (an empty body is `{}`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PauseRequest {
    /// Why, for the next person to look (kept with the pause and in the audit row; at most
    /// 1,024 bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The answer to a pause or a resume: the destination's state afterwards, and whether this
/// call changed it (`false`: it already was so).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PauseState {
    pub destination: String,
    pub paused: bool,
    pub changed: bool,
}

/// One paused destination.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PausedDestinationView {
    pub destination: String,
    /// The principal that paused it.
    pub paused_by: String,
    /// When (the cluster's time, ms since the epoch).
    pub paused_at: Millis,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `GET /v1/destinations/paused`: every paused destination, in name order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PausedDestinations {
    pub destinations: Vec<PausedDestinationView>,
}
