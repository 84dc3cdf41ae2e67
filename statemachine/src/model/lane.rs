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

/// Who owns a lane until when (live through `expires_at` inclusive: see
/// [`crate::rules::fifo::lease_is_live`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
