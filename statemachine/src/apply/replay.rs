//! Operator actions on queued work: Replay (recover or re-send), ReplayDead, CancelQueued.

use crate::apply::{audit, Apply, ApplyResult, Ctx};
use crate::model::ids::{MessageId, RowId};
use crate::model::lane::LaneKey;
use crate::model::message::{EventKind, MessageStatus};
use crate::model::row::{RowStatus, Stage, WorkRow};
use crate::rules::finalizer::finalize;
use crate::rules::{dedupe, validate};
use crate::tables::{lanes, messages, rows};
use crate::wire::command::{CancelQueued, Replay, ReplayDead};
use crate::wire::outcome::Outcome;
use std::collections::BTreeSet;

impl Apply for Replay {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let Replay { message_id } = self;
        replay(cx, *message_id)
    }
}

impl Apply for ReplayDead {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let ReplayDead {
            channel,
            destination,
        } = self;
        replay_dead(cx, channel.as_deref(), destination.as_deref())
    }
}

impl Apply for CancelQueued {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let CancelQueued {
            destination,
            channel,
            top_only,
        } = self;
        cancel_queued(cx, destination, channel.as_deref(), *top_only)
    }
}

/// Back to pending, attempts reset, due now, error cleared.
fn requeue(cx: &mut Ctx<'_, '_>, row: &WorkRow) {
    let mut after = row.clone();
    after.status = RowStatus::Pending;
    after.claim = None;
    after.attempts = 0;
    after.next_attempt_at = cx.t;
    after.last_error = None;
    after.updated_at = cx.t;
    rows::save(cx, row, &after);
}

fn replay(cx: &mut Ctx<'_, '_>, id: MessageId) -> ApplyResult<Outcome> {
    let mut message = cx.message(id)?;
    let all = rows::of_message(cx.txn, id)?;
    // Recover mode when anything is stuck; never re-send a done sibling of a stuck row.
    let stuck: Vec<&WorkRow> = all
        .iter()
        .filter(|r| matches!(r.status, RowStatus::Dead | RowStatus::Pending))
        .collect();
    let chosen: Vec<&WorkRow> = if stuck.is_empty() {
        all.iter().filter(|r| r.status == RowStatus::Done).collect()
    } else {
        stuck
    };
    for row in &chosen {
        requeue(cx, row);
    }
    let count = chosen.len() as u64;
    if count > 0 {
        let requeued: BTreeSet<RowId> = chosen.iter().map(|r| r.id).collect();
        let early = all
            .iter()
            .filter(|r| r.status == RowStatus::Pending || requeued.contains(&r.id))
            .any(|r| matches!(r.stage, Stage::Ingress | Stage::Routed));
        message.error = None;
        let status = if early {
            MessageStatus::Received
        } else {
            MessageStatus::Routed
        };
        dedupe::set_status(cx, &mut message, status)?;
        messages::event(
            cx,
            id,
            EventKind::Replayed,
            None,
            Some(format!("{count} row(s)")),
        )?;
        audit::record_default(
            cx,
            "message.replay",
            Some(&message.channel_id),
            format!("message {id}: {count} row(s)"),
        )?;
    }
    Ok(Outcome::Count(count))
}

fn replay_dead(
    cx: &mut Ctx<'_, '_>,
    channel: Option<&str>,
    destination: Option<&str>,
) -> ApplyResult<Outcome> {
    let dead: Vec<RowId> = rows::dead(cx.txn, Stage::Outbound)?.collect::<Result<_, _>>()?;
    let mut count = 0u64;
    let mut touched = BTreeSet::new();
    for id in dead {
        let Some(row) = rows::get(cx.txn, id)? else {
            continue;
        };
        if !row.matches(channel, destination) {
            continue;
        }
        requeue(cx, &row);
        touched.insert(row.message_id);
        count += 1;
    }
    for id in &touched {
        let mut message = cx.message(*id)?;
        if message.status == MessageStatus::Error {
            message.error = None;
            dedupe::set_status(cx, &mut message, MessageStatus::Routed)?;
        }
        messages::event(
            cx,
            *id,
            EventKind::Replayed,
            None,
            Some("dead-letter replay".to_string()),
        )?;
    }
    if count > 0 {
        audit::record_default(
            cx,
            "dead_letters.replay",
            channel,
            format!("{count} row(s); destination {}", destination.unwrap_or("*")),
        )?;
    }
    Ok(Outcome::Count(count))
}

fn cancel_queued(
    cx: &mut Ctx<'_, '_>,
    destination: &str,
    channel: Option<&str>,
    top_only: bool,
) -> ApplyResult<Outcome> {
    validate::name("destination", destination)?;
    let lane = LaneKey::new(Stage::Outbound, destination);
    let mut chosen = Vec::new();
    for id in lanes::pending(cx.txn, &lane)? {
        let Some(row) = rows::get(cx.txn, id?)? else {
            continue;
        };
        if channel.is_some_and(|c| c != row.channel_id) {
            continue;
        }
        chosen.push(row);
    }
    if top_only {
        // messagefoundry's "head of the queue" is the next due row (`ORDER BY next_attempt_at,
        // created_at`), not the lane's FIFO head: a head backing off is passed over for a due
        // row behind it. The row id (= seq) breaks ties, as the lane order does.
        if let Some(first) = chosen
            .iter()
            .min_by_key(|r| (r.next_attempt_at, r.created_at, r.id))
            .cloned()
        {
            chosen = vec![first];
        }
    }
    let mut touched = BTreeSet::new();
    for row in &chosen {
        rows::finish(cx, row, RowStatus::Cancelled, None);
        messages::event(
            cx,
            row.message_id,
            EventKind::Cancelled,
            Some(destination),
            Some("manual purge".to_string()),
        )?;
        touched.insert(row.message_id);
    }
    for id in touched {
        finalize(cx, id)?;
    }
    let count = chosen.len() as u64;
    if count > 0 {
        audit::record_default(
            cx,
            "queue.cancel",
            channel,
            format!("{count} row(s) to {destination}"),
        )?;
    }
    Ok(Outcome::Count(count))
}
