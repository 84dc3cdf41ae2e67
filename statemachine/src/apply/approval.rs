//! Dual control: approvals decided exactly once, before expiry, by someone other than the
//! requester (the seeds checked neither of the last two).

use crate::apply::{audit, Apply, ApplyResult, Ctx};
use crate::model::approval::{Approval, ApprovalStatus};
use crate::model::ids::ApprovalId;
use crate::rules::validate;
use crate::tables::approvals;
use crate::wire::command::{CreateApproval, DecideApproval};
use crate::wire::outcome::Outcome;
use crate::wire::rejection::Rejection;

impl Apply for CreateApproval {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let CreateApproval {
            operation,
            params,
            ttl_ms,
        } = self;
        create(cx, operation, params, *ttl_ms)
    }
}

impl Apply for DecideApproval {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let DecideApproval { id, approve } = self;
        decide(cx, *id, *approve)
    }
}

fn create(
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
    approvals::put(cx, &approval);
    audit::record_default(
        cx,
        "approval.request",
        None,
        format!("approval {id}: {operation}"),
    )?;
    Ok(Outcome::Approval(id))
}

fn decide(cx: &mut Ctx<'_, '_>, id: ApprovalId, approve: bool) -> ApplyResult<Outcome> {
    let mut approval: Approval =
        approvals::get(cx.txn, id)?.ok_or(Rejection::UnknownApproval(id))?;
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
    approvals::put(cx, &approval);
    let verb = if approve { "approved" } else { "rejected" };
    audit::record_default(cx, "approval.decide", None, format!("approval {id} {verb}"))?;
    Ok(Outcome::Approval(id))
}
