//! FIFO lanes as values: which lane a row is in, and the per-lane record (newest `created_at`,
//! lease). What they mean for claiming (order, head, who may hold a lane) is decided in
//! [`crate::rules::fifo`].

use crate::model::ids::Millis;
use crate::model::stage::Stage;
use serde::{Deserialize, Serialize};

/// `"{stage}:{name}"` as a type.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LaneKey {
    pub stage: Stage,
    pub name: String,
}

impl LaneKey {
    pub fn new(stage: Stage, name: &str) -> Self {
        Self {
            stage,
            name: name.to_string(),
        }
    }
}

impl std::fmt::Display for LaneKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.stage.as_str(), self.name)
    }
}

/// What a lane's running total counts (kept in the tallies table, reported per lane at
/// `/metrics`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LaneEvent {
    /// A row of the lane was dead-lettered (by any path: the finalizer is the only one).
    DeadLettered,
    /// A row of the lane was claimed again after an earlier claim (its lease ran out, or it
    /// was failed and came back for a retry).
    Redelivered,
}

impl LaneEvent {
    pub const ALL: [LaneEvent; 2] = [LaneEvent::DeadLettered, LaneEvent::Redelivered];

    pub fn as_str(self) -> &'static str {
        match self {
            LaneEvent::DeadLettered => "dead_lettered",
            LaneEvent::Redelivered => "redelivered",
        }
    }
}

/// One lane's running total of one [`LaneEvent`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaneTally {
    pub event: LaneEvent,
    pub lane: LaneKey,
    pub count: u64,
}

/// Who owns a lane until when (live through `expires_at` inclusive).
// The rule: `crate::rules::fifo::lease_is_live`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LaneLease {
    pub owner: String,
    pub expires_at: Millis,
}

/// Per-lane bookkeeping.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneState {
    /// The largest `created_at` given to a row of this lane.
    pub max_created_at: Millis,
    pub lease: Option<LaneLease>,
}
