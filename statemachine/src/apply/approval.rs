//! Dual control: approvals decided exactly once, before expiry, by someone other than the
//! requester (the seeds checked neither of the last two).

use crate::apply::{audit, Apply, ApplyResult, Ctx};
use crate::model::approval::{Approval, ApprovalStatus};
use crate::model::ids::ApprovalId;
use crate::rules::validate;
use crate::tables::approvals;
use crate::wire::command::{
    ApprovalTerms, ConsumeApproval, CreateApproval, DecideApproval, Decision, KeyedDecision,
    NamedApproval,
};
use crate::wire::outcome::Outcome;
use crate::wire::rejection::Rejection;

impl Apply for CreateApproval {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let CreateApproval {
            operation,
            params,
            terms,
        } = self;
        match terms {
            ApprovalTerms::Ttl(ttl_ms) => create(cx, operation, params, *ttl_ms),
            ApprovalTerms::Named(named) => create_named(cx, operation, params, named),
        }
    }
}

impl Apply for DecideApproval {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        match &self.decision {
            Decision::ById { id, approve } => decide(cx, *id, *approve),
            Decision::ByKey(keyed) => decide_by_key(cx, keyed),
        }
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
        ApprovalStatus::Approved | ApprovalStatus::Rejected | ApprovalStatus::Consumed => {
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

/// docs/SPEC.md §14.10: an approval under the caller's key, requester, request time and expiry
/// (`None`: never, stored as `Millis::MAX`); its id is still the operation id.
fn create_named(
    cx: &mut Ctx<'_, '_>,
    operation: &str,
    params: &str,
    named: &NamedApproval,
) -> ApplyResult<Outcome> {
    let NamedApproval {
        key,
        requester,
        requested_at,
        expires_at,
    } = named;
    validate::name("key", key)?;
    validate::name("operation", operation)?;
    validate::name("requester", requester)?;
    if approvals::id_by_key(cx.txn, key)?.is_some() {
        return Err(Rejection::invalid("key", "an approval with this key exists").into());
    }
    let id = ApprovalId(cx.index);
    let approval = Approval {
        id,
        operation: operation.to_string(),
        params: params.to_string(),
        requester: requester.clone(),
        requested_at: *requested_at,
        status: ApprovalStatus::Pending,
        approver: None,
        decided_at: None,
        expires_at: expires_at.unwrap_or(u64::MAX),
    };
    approvals::put(cx, &approval);
    approvals::put_key(cx, key, id);
    audit::record_default(
        cx,
        "approval.request",
        None,
        format!("approval {id} ({key}): {operation}"),
    )?;
    Ok(Outcome::Approval(id))
}

/// docs/SPEC.md §14.10: the caller decides (`approved`, `rejected` or `expired`) for the
/// approver and at the time it gives; only a stored `pending` approval can be decided, once.
fn decide_by_key(cx: &mut Ctx<'_, '_>, keyed: &KeyedDecision) -> ApplyResult<Outcome> {
    let KeyedDecision {
        key,
        status,
        approver,
        decided_at,
    } = keyed;
    validate::opt_name("approver", approver.as_deref())?;
    if *status == ApprovalStatus::Pending {
        return Err(Rejection::invalid("status", "must be approved, rejected or expired").into());
    }
    let id = approvals::id_by_key(cx.txn, key)?
        .ok_or_else(|| Rejection::UnknownApprovalKey(key.clone()))?;
    let mut approval: Approval =
        approvals::get(cx.txn, id)?.ok_or_else(|| Rejection::UnknownApprovalKey(key.clone()))?;
    if approval.status != ApprovalStatus::Pending {
        return Err(Rejection::AlreadyDecided(id).into());
    }
    approval.status = *status;
    approval.approver = approver.clone();
    approval.decided_at = Some(*decided_at);
    approvals::put(cx, &approval);
    let verb = match status {
        ApprovalStatus::Approved => "approved",
        ApprovalStatus::Rejected => "rejected",
        _ => "expired",
    };
    audit::record_default(
        cx,
        "approval.decide",
        None,
        format!("approval {id} ({key}) {verb}"),
    )?;
    Ok(Outcome::Approval(id))
}

/// Dual control (docs/SPEC.md §9.5): the one place an approval is checked against the action it
/// authorizes and used up. The decision rule (someone other than the requester decided it)
/// was enforced when it was decided; here it must still be approved and unexpired, unused, and
/// name exactly this operation and these parameters. Parameters are compared as JSON values
/// (parsing is deterministic), so member order and spacing in the approval do not matter.
impl Apply for ConsumeApproval {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let ConsumeApproval {
            id,
            operation,
            params,
        } = self;
        let not_usable = |reason: String| Rejection::ApprovalNotUsable { id: *id, reason };
        let mut approval: Approval =
            approvals::get(cx.txn, *id)?.ok_or(Rejection::UnknownApproval(*id))?;
        // A keyed approval's requester and approver are whatever its caller stated
        // (named approvals and decisions by key: an engine's own records), so it proves
        // nothing about two people: only approvals requested and decided under their own
        // principals authorize an action.
        if approvals::key_of(cx.txn, *id)?.is_some() {
            return Err(not_usable(
                "it is a keyed record, not one requested and decided by principals".into(),
            )
            .into());
        }
        // The action is run by whoever requested it: an approval is one person's request
        // that another person agreed to, not a pass anyone holding the id may use.
        if approval.requester != cx.actor {
            return Err(not_usable(format!(
                "it was requested by {}, and only its requester may use it",
                approval.requester
            ))
            .into());
        }
        match approval.status {
            ApprovalStatus::Approved => {}
            ApprovalStatus::Consumed => {
                return Err(not_usable("it was already used".into()).into());
            }
            other => {
                let status = format!("{other:?}").to_lowercase();
                return Err(not_usable(format!("it is {status}, not approved")).into());
            }
        }
        if cx.t >= approval.expires_at {
            return Err(not_usable("it expired".into()).into());
        }
        if approval.operation != *operation {
            return Err(not_usable(format!(
                "it approves '{}', not '{operation}'",
                approval.operation
            ))
            .into());
        }
        if !same_json(&approval.params, params) {
            return Err(
                not_usable("it approves other parameters than this request's".into()).into(),
            );
        }
        approval.status = ApprovalStatus::Consumed;
        approvals::put(cx, &approval);
        audit::record_default(
            cx,
            "approval.consume",
            None,
            format!("approval {id} used for {operation}"),
        )?;
        Ok(Outcome::Approval(*id))
    }
}

/// Equal as JSON values; text that is not JSON equals only the identical text. An approval
/// created without parameters (`""`) stands for `{}`.
fn same_json(a: &str, b: &str) -> bool {
    let parse = |s: &str| {
        if s.trim().is_empty() {
            Some(serde_json::Value::Object(Default::default()))
        } else {
            serde_json::from_str::<serde_json::Value>(s).ok()
        }
    };
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}
