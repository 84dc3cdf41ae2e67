//! Approvals and their use by dual control (docs/SPEC.md §9.5, §14.10).

use crate::model::approval::ApprovalStatus;
use crate::model::ids::{ApprovalId, Millis};
use serde::{Deserialize, Serialize};

/// Ask a second principal to approve an operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateApproval {
    pub operation: String,
    pub params: String,
    pub terms: ApprovalTerms,
}

/// Who asks for an approval, when, and until when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ApprovalTerms {
    /// The envelope's principal, now, for this many milliseconds. Answers `Approval(id)`.
    Ttl(u64),
    /// Named and dated by the caller (docs/SPEC.md §14.10).
    Named(NamedApproval),
}

/// An approval request the caller names and dates (docs/SPEC.md §14.10): its own `key`, the
/// requester, the request time and the expiry (`None`: never). Answers `Approval(id)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedApproval {
    pub key: String,
    pub requester: String,
    pub requested_at: Millis,
    pub expires_at: Option<Millis>,
}

/// Approve or reject a pending approval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecideApproval {
    pub decision: Decision,
}

/// Which approval a decision is about, and what it says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Decision {
    /// By id, by the envelope's principal, now.
    ById { id: ApprovalId, approve: bool },
    /// By the caller's key, with the outcome, approver and time the caller gives.
    ByKey(KeyedDecision),
}

/// A decision on a pending approval named by the caller's key (docs/SPEC.md §14.10), with the
/// outcome, approver and time the caller gives. Succeeds only for the call that decides it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyedDecision {
    pub key: String,
    pub status: ApprovalStatus,
    pub approver: Option<String>,
    pub decided_at: Millis,
}

/// Use an approved approval for the action it names, once (docs/SPEC.md §9.5): the approval
/// must be approved, unexpired and not used yet, and name exactly this `operation` with these
/// `params` (JSON text, compared as JSON values so that member order and spacing do not matter).
/// The API proposes it before it performs an action the config lists in `approvals_required`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumeApproval {
    pub id: ApprovalId,
    pub operation: String,
    pub params: String,
}
