//! Audit commands: RecordAudit appends a row to an org's chain, SealAuditEpoch closes an era;
//! and [`record_default`], the row that data-changing commands append in the same command. How
//! rows are hashed is [`crate::model::audit`]; how they are stored, [`crate::tables::audit`].

use crate::apply::{Apply, ApplyResult, Ctx};
use crate::model::audit::{SealRecord, DEFAULT_ORG, SEAL_ACTION};
use crate::model::message::EventKind;
use crate::rules::validate;
use crate::tables::audit;
use crate::tables::messages;
use crate::wire::command::{AuditAuthor, RecordAudit, RecordView, SealAuditEpoch};
use crate::wire::outcome::Outcome;

impl Apply for RecordAudit {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let RecordAudit {
            action,
            channel,
            org,
            detail,
            author,
        } = self;
        let actor = match author {
            AuditAuthor::Principal => {
                return record(
                    cx,
                    action,
                    channel.as_deref(),
                    org.as_deref(),
                    detail.as_deref(),
                )
            }
            AuditAuthor::Named(actor) => actor,
        };
        validate::opt_name("actor", actor.as_deref())?;
        // The caller names the actor; who wrote the row is the envelope's principal, recorded
        // beside it (docs/SPEC.md §9.8) unless they are one.
        let principal = cx.actor;
        let via =
            (actor.as_deref() != Some(principal) && !principal.is_empty()).then_some(principal);
        record_as(
            cx,
            actor.as_deref().unwrap_or(""),
            via,
            action,
            channel.as_deref(),
            org.as_deref(),
            detail.as_deref(),
        )
    }
}

/// docs/SPEC.md §14.6: the message's event `viewed` (no destination, the viewer as detail); an
/// unknown message is `not_found`. Nothing else changes: no audit row, no status.
impl Apply for RecordView {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let RecordView { message_id, viewer } = self;
        let message = cx.message(*message_id)?;
        messages::event(cx, message.id, EventKind::Viewed, None, viewer.clone())?;
        Ok(Outcome::Done)
    }
}

impl Apply for SealAuditEpoch {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let SealAuditEpoch { org } = self;
        seal(cx, org)
    }
}

/// The audit row that data-changing operations append in the same command.
pub(crate) fn record_default(
    cx: &mut Ctx<'_, '_>,
    action: &str,
    channel: Option<&str>,
    detail: String,
) -> ApplyResult<()> {
    let actor = cx.actor;
    audit::append(cx, actor, DEFAULT_ORG, action, channel, Some(detail))?;
    Ok(())
}

fn record(
    cx: &mut Ctx<'_, '_>,
    action: &str,
    channel: Option<&str>,
    org: Option<&str>,
    detail: Option<&str>,
) -> ApplyResult<Outcome> {
    let actor = cx.actor;
    record_as(cx, actor, None, action, channel, org, detail)
}

/// RecordAudit with the row's actor given (empty: none), written by `principal` when that is
/// not the actor.
fn record_as(
    cx: &mut Ctx<'_, '_>,
    actor: &str,
    principal: Option<&str>,
    action: &str,
    channel: Option<&str>,
    org: Option<&str>,
    detail: Option<&str>,
) -> ApplyResult<Outcome> {
    validate::name("action", action)?;
    validate::opt_name("channel", channel)?;
    validate::opt_name("org", org)?;
    let row = audit::append_via(
        cx,
        actor,
        principal,
        org.unwrap_or(DEFAULT_ORG),
        action,
        channel,
        detail.map(str::to_string),
    )?;
    Ok(Outcome::Audit {
        seq: row.seq,
        hash: hex::encode(row.hash),
    })
}

/// Close the current era of `org` with a seal row recording its `(count, head_hash)`.
fn seal(cx: &mut Ctx<'_, '_>, org: &str) -> ApplyResult<Outcome> {
    validate::name("org", org)?;
    let tip = audit::head(cx.txn, org)?;
    let record = SealRecord {
        era: tip.era,
        count: tip.count,
        head_hash: hex::encode(tip.head_hash),
    };
    let detail = serde_json::to_string(&record).unwrap_or_default();
    let actor = cx.actor;
    let row = audit::append(cx, actor, org, SEAL_ACTION, None, Some(detail))?;
    let mut tip = audit::head(cx.txn, org)?;
    tip.era += 1;
    audit::put_head(cx, org, &tip);
    Ok(Outcome::Audit {
        seq: row.seq,
        hash: hex::encode(row.hash),
    })
}
