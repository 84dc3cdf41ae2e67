//! Handoffs: a claimed row is consumed and its successors inserted, in one command.
//! RouteHandoff (ingress → routed), Handoff (ingress → outbound), TransformHandoff
//! (routed → outbound, with transform state) and IngressHandoff (response → new message).

use crate::apply::enqueue::insert_deliveries;
use crate::apply::{state, Apply, ApplyResult, Ctx};
use crate::model::ids::{Fence, MessageId, RowId};
use crate::model::message::{Correlation, EventKind, Message, MessageStatus};
use crate::model::response::{CapturedResponse, ResponseRef};
use crate::model::row::{RowStatus, Stage};
use crate::rules::fence::{self, Fenced};
use crate::rules::finalizer::{dead_letter_as, finalize, DeadEvent};
use crate::rules::{channels, dedupe, fifo, registry, validate};
use crate::tables::rows::{self, NewRow};
use crate::tables::{children, config, messages, responses};
use crate::wire::command::{
    Delivery, HandlerWork, Handoff, HandoffDisposition, IngressHandoff, RouteDisposition,
    RouteHandoff, StateOp, TransformHandoff,
};
use crate::wire::outcome::Outcome;

impl Apply for RouteHandoff {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let RouteHandoff {
            row_id,
            fence,
            handlers,
            disposition,
        } = self;
        route_handoff(cx, *row_id, *fence, handlers, *disposition)
    }
}

impl Apply for Handoff {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let Handoff {
            row_id,
            fence,
            deliveries,
            disposition,
        } = self;
        handoff(cx, *row_id, *fence, deliveries, *disposition)
    }
}

impl Apply for TransformHandoff {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let TransformHandoff {
            row_id,
            fence,
            deliveries,
            state_ops,
        } = self;
        transform_handoff(cx, *row_id, *fence, deliveries, state_ops)
    }
}

impl Apply for IngressHandoff {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let IngressHandoff {
            row_id,
            fence,
            loopback_channel,
            depth_cap,
            child,
        } = self;
        let Some(child) = child else {
            return ingress_handoff(cx, *row_id, *fence, loopback_channel, *depth_cap, None);
        };
        validate::name("child_key", &child.key)?;
        let child = CallerChild {
            key: &child.key,
            control_id: child.control_id.as_deref(),
            message_type: child.message_type.as_deref(),
            summary: child.summary.as_deref(),
            peek_failed: child.peek_failed,
        };
        ingress_handoff(
            cx,
            *row_id,
            *fence,
            loopback_channel,
            *depth_cap,
            Some(&child),
        )
    }
}

/// The child as the caller names and describes it ([`ChildKey`](crate::wire::command::ChildKey)).
struct CallerChild<'a> {
    key: &'a str,
    control_id: Option<&'a str>,
    message_type: Option<&'a str>,
    summary: Option<&'a str>,
    peek_failed: bool,
}

/// The error of a child whose body the caller could not parse (messagefoundry's text).
const PEEK_FAILED: &str = "re-ingress body failed HL7 peek";

/// `last_error` of a response row whose reference does not lead to a captured response, and its
/// `dead` event's detail (messagefoundry's texts).
const REF_CORRUPT: &str = "re-ingress work-row reference is corrupt/unparseable";
const REF_CORRUPT_EVENT: &str = "re-ingress ref corrupt";

fn route_handoff(
    cx: &mut Ctx<'_, '_>,
    row_id: RowId,
    fence: Fence,
    handlers: &[HandlerWork],
    disposition: RouteDisposition,
) -> ApplyResult<Outcome> {
    let who = cx.acting("route");
    let row = match fence::check(cx, &who, row_id, fence, &[Stage::Ingress])? {
        Fenced::Consumed => return Ok(Outcome::HandedOff(false)),
        Fenced::Held(row) => row,
    };
    for h in handlers {
        validate::name("handlers.handler", &h.handler)?;
    }
    registry::check_handlers(&config::current(cx.txn)?, handlers)?;
    rows::remove(cx, &row);
    for h in handlers {
        fifo::push_row(
            cx,
            NewRow {
                message_id: row.message_id,
                stage: Stage::Routed,
                channel_id: &row.channel_id,
                destination_name: None,
                handler_name: Some(&h.handler),
                payload: &h.payload,
            },
        )?;
    }
    let (status, kind) = match disposition {
        RouteDisposition::Routed => (MessageStatus::Routed, EventKind::Routed),
        RouteDisposition::Unrouted => (MessageStatus::Unrouted, EventKind::Unrouted),
    };
    set_disposition(
        cx,
        row.message_id,
        status,
        kind,
        format!("{} handler(s)", handlers.len()),
    )?;
    Ok(Outcome::HandedOff(true))
}

fn handoff(
    cx: &mut Ctx<'_, '_>,
    row_id: RowId,
    fence: Fence,
    deliveries: &[Delivery],
    disposition: HandoffDisposition,
) -> ApplyResult<Outcome> {
    let who = cx.acting("handoff");
    let row = match fence::check(cx, &who, row_id, fence, &[Stage::Ingress])? {
        Fenced::Consumed => return Ok(Outcome::HandedOff(false)),
        Fenced::Held(row) => row,
    };
    rows::remove(cx, &row);
    insert_deliveries(cx, row.message_id, &row.channel_id, deliveries)?;
    let (status, kind) = match disposition {
        HandoffDisposition::Routed => (MessageStatus::Routed, EventKind::Routed),
        HandoffDisposition::Filtered => (MessageStatus::Filtered, EventKind::Filtered),
        HandoffDisposition::Unrouted => (MessageStatus::Unrouted, EventKind::Unrouted),
    };
    set_disposition(
        cx,
        row.message_id,
        status,
        kind,
        format!("{} destination(s)", deliveries.len()),
    )?;
    Ok(Outcome::HandedOff(true))
}

fn set_disposition(
    cx: &mut Ctx<'_, '_>,
    id: MessageId,
    status: MessageStatus,
    kind: EventKind,
    detail: String,
) -> ApplyResult<()> {
    let mut message = cx.message(id)?;
    dedupe::set_status(cx, &mut message, status)?;
    Ok(messages::event(cx, id, kind, None, Some(detail))?)
}

fn transform_handoff(
    cx: &mut Ctx<'_, '_>,
    row_id: RowId,
    fence: Fence,
    deliveries: &[Delivery],
    state_ops: &[StateOp],
) -> ApplyResult<Outcome> {
    let who = cx.acting("transform");
    let row = match fence::check(cx, &who, row_id, fence, &[Stage::Routed])? {
        Fenced::Consumed => return Ok(Outcome::HandedOff(false)),
        Fenced::Held(row) => row,
    };
    rows::remove(cx, &row);
    insert_deliveries(cx, row.message_id, &row.channel_id, deliveries)?;
    state::apply_ops(cx, row.message_id, state_ops)?;
    messages::event(
        cx,
        row.message_id,
        EventKind::Transformed,
        None,
        Some(format!("{} destination(s)", deliveries.len())),
    )?;
    finalize(cx, row.message_id)?;
    Ok(Outcome::HandedOff(true))
}

/// docs/SPEC.md §3.7 IngressHandoff, and §14.7 when `caller` names and
/// describes the child: it is found by the caller's key first, then by the derived key (a child
/// made by IngressHandoff), and a new one takes the caller's fields.
fn ingress_handoff(
    cx: &mut Ctx<'_, '_>,
    row_id: RowId,
    fence: Fence,
    loopback_channel: &str,
    depth_cap: u32,
    caller: Option<&CallerChild<'_>>,
) -> ApplyResult<Outcome> {
    validate::name("loopback_channel", loopback_channel)?;
    channels::admit(cx.txn, "loopback_channel", loopback_channel)?;
    let who = cx.acting("reingress");
    let row = fence::held(cx, &who, row_id, fence, &[Stage::Response])?;
    let reference: Option<ResponseRef> = serde_json::from_str(&row.payload).ok();
    let response: Option<CapturedResponse> = match &reference {
        Some(r) => responses::get(cx.txn, r.message_id, &r.destination, r.seq)?,
        None => None,
    };
    let (Some(reference), Some(response)) = (reference, response) else {
        // messagefoundry's event names no destination here: it could not read one.
        let event = DeadEvent {
            destination: None,
            detail: REF_CORRUPT_EVENT.to_string(),
        };
        dead_letter_as(cx, &row, REF_CORRUPT, event)?;
        return Ok(Outcome::Reingressed(None));
    };
    let origin = cx.message(reference.message_id)?;
    let depth = origin
        .correlation
        .as_ref()
        .map_or(0, |c| c.depth)
        .saturating_add(1);
    if depth > depth_cap {
        let event = DeadEvent {
            destination: Some(&reference.destination),
            detail: format!("re-ingress depth cap ({depth})"),
        };
        let error = format!("re-ingress correlation depth exceeded ({depth} > {depth_cap})");
        dead_letter_as(cx, &row, &error, event)?;
        return Ok(Outcome::Reingressed(None));
    }
    let key = children::key(
        origin.id,
        &reference.destination,
        reference.seq,
        &response.body,
    );
    let existing = match caller {
        Some(c) => match children::by_caller_key(cx.txn, c.key)? {
            Some(id) => Some(id),
            None => children::get(cx.txn, &key)?,
        },
        None => children::get(cx.txn, &key)?,
    };
    let child_id = match existing {
        Some(existing) => existing,
        None => {
            let id = messages::next_id(cx);
            let peek_failed = caller.is_some_and(|c| c.peek_failed);
            let child = Message {
                id,
                channel_id: loopback_channel.to_string(),
                received_at: cx.t,
                source_type: Some("reingress".to_string()),
                control_id: caller.and_then(|c| c.control_id).map(str::to_string),
                message_type: match caller {
                    Some(c) => c.message_type.map(str::to_string),
                    None => origin.message_type.clone(),
                },
                raw: response.body.clone(),
                status: if peek_failed {
                    MessageStatus::Error
                } else {
                    MessageStatus::Received
                },
                error: peek_failed.then(|| PEEK_FAILED.to_string()),
                summary: caller.and_then(|c| c.summary).map(str::to_string),
                metadata: None,
                correlation: Some(Correlation {
                    correlation_id: origin.id,
                    root_id: origin.correlation.as_ref().map_or(origin.id, |c| c.root_id),
                    depth,
                    reingress_of_seq: reference.seq,
                }),
                idempotency_key: None,
                purged: false,
            };
            messages::save(cx, &child);
            // One event, `received`, also for a child born in `error` (messagefoundry's).
            let detail = format!(
                "reingress from {}/{}/seq{}",
                origin.id, reference.destination, reference.seq
            );
            messages::first_event(cx, id, EventKind::Received, Some(detail));
            if !peek_failed {
                fifo::push_row(
                    cx,
                    NewRow {
                        message_id: id,
                        stage: Stage::Ingress,
                        channel_id: loopback_channel,
                        destination_name: None,
                        handler_name: None,
                        payload: &response.body,
                    },
                )?;
            }
            children::put(cx, key, id);
            id
        }
    };
    if let Some(c) = caller {
        if children::by_caller_key(cx.txn, c.key)?.is_none() {
            children::put_caller_key(cx, c.key, child_id);
        }
    }
    rows::finish(cx, &row, RowStatus::Done, None);
    messages::event(
        cx,
        origin.id,
        EventKind::Reingressed,
        Some(&reference.destination),
        Some(format!("-> {child_id} depth {depth}")),
    )?;
    finalize(cx, origin.id)?;
    Ok(Outcome::Reingressed(Some(child_id)))
}
