//! Dual control: an approval request, decided exactly once, before expiry, by someone other
//! than the requester (the seeds checked neither of the last two; see
//! [`crate::apply::approval`]).

use crate::model::ids::{ApprovalId, Millis};
use serde::{Deserialize, Serialize};

/// An approval's status at the time of the read (`expired` once past `expires_at`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    Pending,
    Approved,
    Rejected,
    Expired,
    /// Approved and then used by the action it named (`ConsumeApproval`): it cannot be used
    /// again.
    // Appended last: statuses are encoded by position.
    Consumed,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    pub id: ApprovalId,
    pub operation: String,
    /// JSON text of the operation's parameters.
    pub params: String,
    pub requester: String,
    pub requested_at: Millis,
    pub status: ApprovalStatus,
    pub approver: Option<String>,
    pub decided_at: Option<Millis>,
    pub expires_at: Millis,
}

impl Approval {
    /// The status as seen at `t` (a pending request past its expiry reads as expired).
    pub fn status_at(&self, t: Millis) -> ApprovalStatus {
        if self.status == ApprovalStatus::Pending && t >= self.expires_at {
            ApprovalStatus::Expired
        } else {
            self.status
        }
    }
}
