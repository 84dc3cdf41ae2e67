//! The state machine's counters and clock.

use crate::model::ids::Millis;
use serde::{Deserialize, Serialize};

/// Counters and the monotonic clock, stored under `Meta/state` and updated with every batch.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetaState {
    /// The state machine's clock: the largest `now_ms` applied so far.
    pub clock: Millis,
    /// Next message id to assign.
    pub next_message_id: u64,
    /// Next row id (= global seq) to assign.
    pub next_row_id: u64,
    /// Index of the last applied log entry (0 = none).
    pub last_applied: u64,
    /// Rows by `[stage][status]`, kept in step by every row write, so stats cost nothing.
    pub row_counts: [[u64; 5]; 4],
}
