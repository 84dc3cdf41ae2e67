//! A paused destination (docs/SPEC.md §4.9): its rows stay where they are and none is handed
//! out until an operator resumes it.

use crate::model::ids::Millis;
use serde::{Deserialize, Serialize};

/// Who paused a destination, when, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PausedDestination {
    pub paused_by: String,
    pub paused_at: Millis,
    pub reason: Option<String>,
}
