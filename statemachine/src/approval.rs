//! Dual control: approvals decided exactly once, before expiry, by someone other than the
//! requester (the seeds checked neither of the last two).

use crate::audit;
use crate::command::{Outcome, Rejection};
use crate::ids::{ApprovalId, Millis};
use crate::machine::{ApplyResult, Ctx};
use crate::store::Table;
use crate::validate;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    Pending,
    Approved,
    Rejected,
    Expired,
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

pub(crate) fn create(
    cx: &mut Ctx<'_, '_>,
    operation: &str,
    params: &str,
    ttl_ms: u64,
) -> ApplyResult<Outcome> {
    validate::name("operation", operation)?;
    validate::ttl("ttl_ms", ttl_ms)?;
    let id = ApprovalId(cx.index);
    let approval = Approval {
        id,
        operation: operation.to_string(),
        params: params.to_string(),
        requester: cx.actor.to_string(),
        requested_at: cx.t,
        status: ApprovalStatus::Pending,
        approver: None,
        decided_at: None,
        expires_at: cx.t.saturating_add(ttl_ms),
    };
    cx.txn
        .put(Table::Approvals, id.to_be_bytes().to_vec(), &approval);
    audit::record_default(
        cx,
        "approval.request",
        None,
        format!("approval {id}: {operation}"),
    )?;
    Ok(Outcome::Approval(id))
}

pub(crate) fn decide(cx: &mut Ctx<'_, '_>, id: ApprovalId, approve: bool) -> ApplyResult<Outcome> {
    let key = id.to_be_bytes().to_vec();
    let mut approval: Approval = cx
        .txn
        .get(Table::Approvals, &key)?
        .ok_or(Rejection::UnknownApproval(id))?;
    match approval.status_at(cx.t) {
        ApprovalStatus::Pending => {}
        ApprovalStatus::Expired => return Err(Rejection::ApprovalExpired(id).into()),
        ApprovalStatus::Approved | ApprovalStatus::Rejected => {
            return Err(Rejection::AlreadyDecided(id).into())
        }
    }
    if approval.requester == cx.actor {
        return Err(Rejection::SelfApproval.into());
    }
    approval.status = if approve {
        ApprovalStatus::Approved
    } else {
        ApprovalStatus::Rejected
    };
    approval.approver = Some(cx.actor.to_string());
    approval.decided_at = Some(cx.t);
    cx.txn.put(Table::Approvals, key, &approval);
    let verb = if approve { "approved" } else { "rejected" };
    audit::record_default(cx, "approval.decide", None, format!("approval {id} {verb}"))?;
    Ok(Outcome::Approval(id))
}
