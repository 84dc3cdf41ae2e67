//! Retention: purging bodies, dead-letter payloads and transform state by age, and expiring
//! idempotency keys and approvals. All decided against the state machine's clock `t`.

use crate::approval::{Approval, ApprovalStatus};
use crate::audit;
use crate::command::Outcome;
use crate::complete::CapturedResponse;
use crate::ids::{Millis, RowId};
use crate::keys::{trailing_u64, Key};
use crate::machine::{ApplyResult, Ctx};
use crate::message::{Event, Message};
use crate::messages;
use crate::row::{RowStatus, Stage, WorkRow};
use crate::rows;
use crate::state::{self, StateEntry};
use crate::store::{Direction, Table};
use crate::txn::Txn;
use std::collections::BTreeSet;

type AnyTxn<'a, 's> = Txn<'s, dyn crate::store::Store + 's>;

fn decode<T: serde::de::DeserializeOwned>(table: Table, bytes: &[u8]) -> ApplyResult<T> {
    Ok(AnyTxn::decode(table, bytes)?)
}

/// Blank the bodies of ended messages received before `older_than`; keep their metadata.
pub(crate) fn purge_message_bodies(
    cx: &mut Ctx<'_, '_>,
    older_than: Millis,
) -> ApplyResult<Outcome> {
    // Message ids grow with the clock, so the scan can stop at the first younger message.
    let mut candidates: Vec<Message> = Vec::new();
    for item in cx
        .txn
        .scan(Table::Messages, &[], None, Direction::Forward)?
    {
        let message: Message = decode(Table::Messages, &item?.1)?;
        if message.received_at >= older_than {
            break;
        }
        if !message.purged {
            candidates.push(message);
        }
    }
    let mut purged = 0u64;
    for mut message in candidates {
        let rows = rows::of_message(cx.txn, message.id)?;
        if rows.iter().any(|r| r.status.is_live()) {
            continue;
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
        let prefix = message.id.to_be_bytes();
        let mut events = Vec::new();
        for item in cx
            .txn
            .scan_prefix(Table::Events, &prefix, Direction::Forward)?
        {
            let (k, v) = item?;
            events.push((k, decode::<Event>(Table::Events, &v)?));
        }
        for (k, mut event) in events {
            if event.detail.take().is_some() {
                cx.txn.put(Table::Events, k, &event);
            }
        }
        let mut responses = Vec::new();
        for item in cx
            .txn
            .scan_prefix(Table::Responses, &prefix, Direction::Forward)?
        {
            let (k, v) = item?;
            responses.push((k, decode::<CapturedResponse>(Table::Responses, &v)?));
        }
        for (k, mut response) in responses {
            response.body.clear();
            response.detail = None;
            cx.txn.put(Table::Responses, k, &response);
        }
        message.raw.clear();
        message.summary = None;
        message.error = None;
        message.purged = true;
        messages::save(cx, &message);
        purged += 1;
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

/// Blank payload and error of dead outbound rows that died before `older_than`.
pub(crate) fn purge_dead_letters(cx: &mut Ctx<'_, '_>, older_than: Millis) -> ApplyResult<Outcome> {
    let prefix = Key::new().u8(Stage::Outbound.tag()).build();
    let mut dead: Vec<WorkRow> = Vec::new();
    for item in cx
        .txn
        .scan_prefix(Table::DeadRows, &prefix, Direction::Forward)?
    {
        let (key, _) = item?;
        let Some(id) = trailing_u64(&key) else {
            continue;
        };
        if let Some(row) = rows::get(cx.txn, RowId(id))? {
            if row.updated_at < older_than && (!row.payload.is_empty() || row.last_error.is_some())
            {
                dead.push(row);
            }
        }
    }
    for row in &dead {
        let mut after = row.clone();
        after.payload.clear();
        after.last_error = None;
        rows::save(cx, row, &after);
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
pub(crate) fn purge_state(cx: &mut Ctx<'_, '_>, older_than: Millis) -> ApplyResult<Outcome> {
    let mut doomed = Vec::new();
    let mut namespaces = BTreeSet::new();
    for item in cx.txn.scan(Table::State, &[], None, Direction::Forward)? {
        let (k, v) = item?;
        let entry: StateEntry = decode(Table::State, &v)?;
        if entry.set_at < older_than {
            // Key = len ‖ namespace ‖ len ‖ key.
            let ns_len = crate::keys::read_u32(&k, 0).unwrap_or(0) as usize;
            if let Some(ns) = k
                .get(4..4 + ns_len)
                .and_then(|b| std::str::from_utf8(b).ok())
            {
                namespaces.insert(ns.to_string());
            }
            doomed.push(k);
        }
    }
    let count = doomed.len() as u64;
    for k in doomed {
        cx.txn.delete(Table::State, k);
    }
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
pub(crate) fn expire_records(cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
    let end = Key::new().u64(cx.t.saturating_add(1)).build();
    let mut keys = Vec::new();
    for item in cx.txn.scan(
        Table::IdempotencyExpiry,
        &[],
        Some(&end),
        Direction::Forward,
    )? {
        keys.push(item?.0);
    }
    let mut count = 0u64;
    for k in keys {
        // expires_at (8) ‖ channel ‖ key: the idempotency key is everything after the expiry.
        if let Some(idem) = k.get(8..) {
            cx.txn.delete(Table::Idempotency, idem.to_vec());
        }
        cx.txn.delete(Table::IdempotencyExpiry, k);
        count += 1;
    }
    count += crate::request::expire(cx)?;
    let mut over = Vec::new();
    for item in cx
        .txn
        .scan(Table::Approvals, &[], None, Direction::Forward)?
    {
        let (k, v) = item?;
        let approval: Approval = decode(Table::Approvals, &v)?;
        if approval.expires_at <= cx.t {
            over.push((k, approval));
        }
    }
    for (k, approval) in over {
        if approval.status == ApprovalStatus::Pending {
            // Keep the record as expired so the requester sees why.
            let mut a = approval;
            a.status = ApprovalStatus::Expired;
            cx.txn.put(Table::Approvals, k, &a);
        } else {
            cx.txn.delete(Table::Approvals, k);
        }
        count += 1;
    }
    Ok(Outcome::Count(count))
}
