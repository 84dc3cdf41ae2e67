//! Retention: purging bodies, dead-letter payloads and transform state by age, and expiring
//! idempotency keys, remembered answers and approvals. All decided against the state machine's
//! clock `t`.

use crate::apply::{audit, Apply, ApplyResult, Ctx};
use crate::model::approval::ApprovalStatus;
use crate::model::ids::Millis;
use crate::model::message::Message;
use crate::model::row::{RowStatus, Stage, WorkRow};
use crate::storage::Direction;
use crate::tables::{approvals, idempotency, messages, requests, responses, rows, state};
use crate::wire::command::{ExpireRecords, PurgeDeadLetters, PurgeMessageBodies, PurgeState};
use crate::wire::outcome::Outcome;

impl Apply for PurgeMessageBodies {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let PurgeMessageBodies { older_than } = self;
        purge_message_bodies(cx, *older_than)
    }
}

impl Apply for PurgeDeadLetters {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let PurgeDeadLetters { older_than } = self;
        purge_dead_letters(cx, *older_than)
    }
}

impl Apply for PurgeState {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let PurgeState { older_than } = self;
        purge_state(cx, *older_than)
    }
}

impl Apply for ExpireRecords {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        expire_records(cx)
    }
}

/// Blank the bodies of ended messages received before `older_than`; keep their metadata.
///
/// The command of logs written before the paged passes (§8.1): it walks every message older
/// than the cutoff, purged ones included, so the leader no longer proposes it.
fn purge_message_bodies(cx: &mut Ctx<'_, '_>, older_than: Millis) -> ApplyResult<Outcome> {
    // Message ids grow with the clock, so the scan can stop at the first younger message.
    let mut candidates: Vec<Message> = Vec::new();
    for message in messages::all(cx.txn, Direction::Forward)? {
        let message: Message = message?;
        if message.received_at >= older_than {
            break;
        }
        if !message.purged {
            candidates.push(message);
        }
    }
    let mut purged = 0u64;
    for message in candidates {
        if blank_bodies(cx, message)? {
            purged += 1;
        }
    }
    if purged > 0 {
        audit::record_default(
            cx,
            "retention.purge_bodies",
            None,
            format!("{purged} message(s) before {older_than}"),
        )?;
    }
    Ok(Outcome::Count(purged))
}

/// Blank one message's bodies unless it has a live row (docs/SPEC.md §8.1): its raw text,
/// summary and error, the payloads of its done and cancelled outbound rows, every event's
/// detail and every captured response's body and detail. Returns whether it blanked.
pub(super) fn blank_bodies(cx: &mut Ctx<'_, '_>, mut message: Message) -> ApplyResult<bool> {
    let rows = rows::of_message(cx.txn, message.id)?;
    if rows.iter().any(|r| r.status.is_live()) {
        return Ok(false);
    }
    for row in &rows {
        if row.stage == Stage::Outbound
            && matches!(row.status, RowStatus::Done | RowStatus::Cancelled)
            && !row.payload.is_empty()
        {
            let mut after = row.clone();
            after.payload.clear();
            rows::save(cx, row, &after);
        }
    }
    let events = messages::numbered_events(cx.txn, message.id)?;
    for (no, mut event) in events {
        if event.detail.take().is_some() {
            messages::replace_event(cx, message.id, no, &event);
        }
    }
    let responses = responses::of_message(cx.txn, message.id)?;
    for mut response in responses {
        response.body.clear();
        response.detail = None;
        responses::put(cx, &response);
    }
    message.raw.clear();
    message.summary = None;
    message.error = None;
    message.purged = true;
    messages::save(cx, &message);
    Ok(true)
}

/// Blank payload and error of one dead outbound row (docs/SPEC.md §8.2); whether it changed.
pub(super) fn blank_dead_letter(cx: &mut Ctx<'_, '_>, row: &WorkRow) -> bool {
    if row.status != RowStatus::Dead
        || row.stage != Stage::Outbound
        || (row.payload.is_empty() && row.last_error.is_none())
    {
        return false;
    }
    let mut after = row.clone();
    after.payload.clear();
    after.last_error = None;
    rows::save(cx, row, &after);
    true
}

/// Blank payload and error of dead outbound rows that died before `older_than`.
fn purge_dead_letters(cx: &mut Ctx<'_, '_>, older_than: Millis) -> ApplyResult<Outcome> {
    let mut dead: Vec<WorkRow> = Vec::new();
    for id in rows::dead(cx.txn, Stage::Outbound)? {
        if let Some(row) = rows::get(cx.txn, id?)? {
            if row.updated_at < older_than && (!row.payload.is_empty() || row.last_error.is_some())
            {
                dead.push(row);
            }
        }
    }
    for row in &dead {
        blank_dead_letter(cx, row);
    }
    let count = dead.len() as u64;
    if count > 0 {
        audit::record_default(
            cx,
            "retention.purge_dead_letters",
            None,
            format!("{count} row(s) before {older_than}"),
        )?;
    }
    Ok(Outcome::Count(count))
}

/// Delete transform state set before `older_than`; bump each touched namespace once.
fn purge_state(cx: &mut Ctx<'_, '_>, older_than: Millis) -> ApplyResult<Outcome> {
    let (count, namespaces) = state::delete_older(cx, older_than)?;
    for ns in &namespaces {
        state::bump_namespace(cx, ns)?;
    }
    if count > 0 {
        audit::record_default(
            cx,
            "retention.purge_state",
            None,
            format!("{count} entr(ies) before {older_than}"),
        )?;
    }
    Ok(Outcome::Count(count))
}

/// Drop idempotency keys whose window has passed, remembered request answers past theirs and
/// approvals that are over.
fn expire_records(cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
    let mut count = idempotency::expire(cx)?;
    count += requests::expire(cx)?;
    let mut over = Vec::new();
    for approval in approvals::all(cx.txn)? {
        if approval.expires_at <= cx.t {
            over.push(approval);
        }
    }
    for approval in over {
        if approval.status == ApprovalStatus::Pending {
            // Keep the record as expired so the requester sees why.
            let mut a = approval;
            a.status = ApprovalStatus::Expired;
            approvals::put(cx, &a);
        } else {
            approvals::delete(cx, approval.id)?;
        }
        count += 1;
    }
    Ok(Outcome::Count(count))
}
