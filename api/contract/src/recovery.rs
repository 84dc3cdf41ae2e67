//! Taking work back: in-flight rows whose holder is gone return to pending (`POST
//! /v1/leases/reclaim`, `reset`, `recover`), and live rows whose destination or handler left
//! the engine's registry are dead-lettered (`POST /v1/dead-letters/sweep`). docs/SPEC.md §4.5,
//! §14.2, §14.3, §14.9.

use raftlane_statemachine::row::Stage;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `POST /v1/leases/reclaim` and `POST /v1/leases/reset`: the stage whose rows are taken back
/// (absent, or an empty body: every stage).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StageScope {
    /// Absent: every stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
}

/// `POST /v1/leases/reclaim`: in-flight rows whose lease had expired, now pending again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Reclaimed {
    pub index: u64,
    pub reclaimed: u64,
}

/// `POST /v1/leases/reset`: every in-flight row (of the stage), whatever its lease, now pending
/// again. For a single process starting up; in a cluster it takes live rows from their holders.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResetRows {
    pub index: u64,
    pub reset: u64,
}

/// `POST /v1/leases/recover`: a new leader takes back every other owner's in-flight rows and
/// drops every lane lease not held by `lane_owner` (absent: every lane lease).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecoverRequest {
    /// The caller's own claim owner: its rows stay in flight.
    pub owner: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane_owner: Option<String>,
}

/// `POST /v1/leases/recover`: rows returned to pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Recovered {
    pub index: u64,
    pub recovered: u64,
}

/// `POST /v1/dead-letters/sweep`: dead-letter the live rows of `stage` whose destination
/// (`outbound`) or handler (`routed`) is not in `keep`, the engine's registry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SweepRequest {
    /// `outbound` (by destination) or `routed` (by handler); the other stages have no registry
    /// to sweep by, and are refused.
    pub stage: Stage,
    /// The names that stay; an empty list sweeps every live row of the stage.
    pub keep: Vec<String>,
}

/// `POST /v1/dead-letters/sweep`: rows dead-lettered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Swept {
    pub index: u64,
    pub dead: u64,
}
