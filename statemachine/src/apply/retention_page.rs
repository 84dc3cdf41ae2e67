//! RetentionPage: retention as bounded pages over the ended-message index (docs/SPEC.md §8.6).
//!
//! The older purges walk every message (or every dead row) older than their cutoff on every
//! run, purged ones included, in one command whose apply grows with the history. A page reads
//! at most [`MAX_RETENTION_PAGE`] entries of `tables::ended`, which holds only messages that
//! ended, ordered by end time:
//!
//! every pass keeps a cursor in `RetentionCursors` and resumes after it, so a message it
//! handled is never read again by the same pass. The deleting passes need it too, though what
//! they read leaves the index (deleted) or moves to its back (a message that still has a live
//! row, see below): on RocksDB, a scan from the front would step over the tombstone of every
//! entry deleted since the last compaction, each page more of them.
//!
//! Cutoffs are clamped to `t`: every message that ends from now on is indexed at `t` or later,
//! so a cursor never passes a message that has yet to end.

use crate::apply::retention::{blank_bodies, blank_dead_letter};
use crate::apply::{audit, Apply, ApplyResult, Ctx};
use crate::model::ids::{MessageId, Millis};
use crate::model::message::Message;
use crate::model::retention::RetentionCursor;
use crate::tables::{ended, messages, responses, rows};
use crate::wire::command::{RetentionPage, RetentionPass, MAX_RETENTION_PAGE};
use crate::wire::outcome::Outcome;

impl Apply for RetentionPage {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let RetentionPage {
            pass,
            older_than,
            limit,
        } = self;
        let limit = (*limit).clamp(1, MAX_RETENTION_PAGE) as usize;
        let cutoff = (*older_than).min(cx.t);
        match pass {
            RetentionPass::IndexEnded => index_ended(cx, limit),
            RetentionPass::BlankBodies
            | RetentionPass::BlankFailedBodies
            | RetentionPass::BlankDeadLetters => blank_page(cx, *pass, cutoff, limit),
            RetentionPass::DeleteEnded | RetentionPass::DeleteFailed => {
                delete_page(cx, *pass, cutoff, limit)
            }
        }
    }
}

/// The answer of a page that read `keys` out of at most `limit`: a short page is the last one.
fn answer(examined: usize, limit: usize, purged: u64, last: Option<RetentionCursor>) -> Outcome {
    Outcome::RetentionPaged {
        examined: examined as u64,
        purged,
        next: last.filter(|_| examined >= limit),
    }
}

/// Whether the one-time walk that indexes messages ended before the index existed is over.
/// Until it is, the other passes wait: a message it indexes late gets its original end time,
/// which may lie behind a pass's cursor.
fn index_complete(cx: &Ctx<'_, '_>) -> ApplyResult<bool> {
    Ok(ended::cursor(cx.txn, RetentionPass::IndexEnded.tag())?
        .is_some_and(|c| c.message_id.0 >= c.at))
}

/// One page of [`RetentionPass::IndexEnded`]: messages by id from the cursor up to the id
/// counter as it was when the walk began; each terminal message not yet indexed is indexed at
/// its last event's time (its end, as near as the history tells).
fn index_ended(cx: &mut Ctx<'_, '_>, limit: usize) -> ApplyResult<Outcome> {
    let tag = RetentionPass::IndexEnded.tag();
    let cursor = ended::cursor(cx.txn, tag)?.unwrap_or(RetentionCursor {
        at: cx.meta.next_message_id,
        message_id: MessageId(0),
    });
    let until = cursor.at;
    let page: Vec<Message> = messages::between(cx.txn, cursor.message_id, MessageId(until))?
        .take(limit)
        .collect::<Result<_, _>>()?;
    let mut indexed = 0u64;
    for message in &page {
        if message.status.is_terminal() && ended::get(cx.txn, message.id)?.is_none() {
            let last = messages::last_event(cx.txn, message.id)?;
            let at = last
                .map_or(message.received_at, |e| e.ts.max(message.received_at))
                .min(cx.t);
            ended::put(cx, message.id, ended::is_failed(message.status), at);
            indexed += 1;
        }
    }
    let next_id = match (page.len() >= limit, page.last()) {
        (true, Some(m)) => MessageId(m.id.0.saturating_add(1)),
        // A short page reached the bound: the walk is over for good.
        _ => MessageId(until),
    };
    let next = RetentionCursor {
        at: until,
        message_id: next_id,
    };
    ended::set_cursor(cx, tag, &next);
    Ok(Outcome::RetentionPaged {
        examined: page.len() as u64,
        purged: indexed,
        next: (next_id.0 < until).then_some(next),
    })
}

/// One page of a blanking pass, after the pass's cursor.
fn blank_page(
    cx: &mut Ctx<'_, '_>,
    pass: RetentionPass,
    cutoff: Millis,
    limit: usize,
) -> ApplyResult<Outcome> {
    if !index_complete(cx)? {
        return Ok(answer(0, limit, 0, None));
    }
    let failed = pass != RetentionPass::BlankBodies;
    let after = ended::cursor(cx.txn, pass.tag())?;
    let keys = ended::page(cx.txn, failed, after, cutoff, limit)?;
    let mut purged = 0u64;
    for k in &keys {
        let Some(message) = messages::get(cx.txn, k.message_id)? else {
            continue;
        };
        if pass == RetentionPass::BlankDeadLetters {
            let mut any = false;
            for row in rows::of_message(cx.txn, message.id)? {
                any |= blank_dead_letter(cx, &row);
            }
            purged += u64::from(any);
        } else if !message.purged && blank_bodies(cx, message)? {
            purged += 1;
        }
    }
    let last = keys.last().copied();
    if let Some(last) = last {
        ended::set_cursor(cx, pass.tag(), &last);
    }
    if purged > 0 {
        let (action, what) = match pass {
            RetentionPass::BlankDeadLetters => ("retention.purge_dead_letters", "message(s)"),
            _ => ("retention.purge_bodies", "message(s)"),
        };
        audit::record_default(
            cx,
            action,
            None,
            format!("{purged} {what} ended before {cutoff}"),
        )?;
    }
    Ok(answer(keys.len(), limit, purged, last))
}

/// One page of a deleting pass, after the pass's cursor: each ended message before the cutoff
/// goes with its rows (and their index entries), events, event count, responses and index
/// entry. A message that has a live row again (its status was set terminal while work
/// remained) is not deleted: its entry moves to `t`, so it is looked at again only a whole
/// period later, never on every page.
fn delete_page(
    cx: &mut Ctx<'_, '_>,
    pass: RetentionPass,
    cutoff: Millis,
    limit: usize,
) -> ApplyResult<Outcome> {
    if !index_complete(cx)? {
        return Ok(answer(0, limit, 0, None));
    }
    let failed = pass == RetentionPass::DeleteFailed;
    let after = ended::cursor(cx.txn, pass.tag())?;
    let keys = ended::page(cx.txn, failed, after, cutoff, limit)?;
    let mut deleted = 0u64;
    for k in &keys {
        let id = k.message_id;
        let rows = rows::of_message(cx.txn, id)?;
        if rows.iter().any(|r| r.status.is_live()) {
            ended::remove(cx, id)?;
            let t = cx.t;
            ended::put(cx, id, failed, t);
            continue;
        }
        for row in &rows {
            rows::remove(cx, row);
        }
        responses::delete_of_message(cx, id)?;
        messages::delete(cx, id)?;
        ended::remove(cx, id)?;
        deleted += 1;
    }
    let last = keys.last().copied();
    if let Some(last) = last {
        ended::set_cursor(cx, pass.tag(), &last);
    }
    if deleted > 0 {
        let action = if failed {
            "retention.delete_failed"
        } else {
            "retention.delete_messages"
        };
        audit::record_default(
            cx,
            action,
            None,
            format!("{deleted} message(s) ended before {cutoff}"),
        )?;
    }
    Ok(answer(keys.len(), limit, deleted, last))
}
