//! Handoffs: a claimed row is consumed and its successors inserted, in one command.
//! RouteHandoff (ingress → routed), Handoff (ingress → outbound), TransformHandoff
//! (routed → outbound, with transform state) and IngressHandoff (response → new message).

use crate::command::{
    Delivery, HandlerWork, HandoffDisposition, Outcome, RouteDisposition, StateOp,
};
use crate::complete::{dead_letter, response_key, CapturedResponse, ResponseRef};
use crate::enqueue::insert_deliveries;
use crate::fence::{self, Fenced};
use crate::finalize::finalize;
use crate::ids::{Fence, MessageId, RowId};
use crate::machine::{ApplyResult, Ctx};
use crate::message::{Correlation, EventKind, Message, MessageStatus};
use crate::row::{RowStatus, Stage};
use crate::rows::{self, NewRow};
use crate::store::Table;
use crate::{messages, state, validate};
use sha2::{Digest, Sha256};

pub(crate) fn route_handoff(
    cx: &mut Ctx<'_, '_>,
    row_id: RowId,
    fence: Fence,
    handlers: &[HandlerWork],
    disposition: RouteDisposition,
) -> ApplyResult<Outcome> {
    let row = match fence::check(cx, row_id, fence, &[Stage::Ingress])? {
        Fenced::Consumed => return Ok(Outcome::HandedOff(false)),
        Fenced::Held(row) => row,
    };
    for h in handlers {
        validate::name("handlers.handler", &h.handler)?;
    }
    rows::remove(cx, &row);
    for h in handlers {
        rows::insert(
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

pub(crate) fn handoff(
    cx: &mut Ctx<'_, '_>,
    row_id: RowId,
    fence: Fence,
    deliveries: &[Delivery],
    disposition: HandoffDisposition,
) -> ApplyResult<Outcome> {
    let row = match fence::check(cx, row_id, fence, &[Stage::Ingress])? {
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
        format!("{} deliveries", deliveries.len()),
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
    let mut message = messages::load(cx, id)?;
    messages::set_status(cx, &mut message, status)?;
    messages::event(cx, id, kind, None, Some(detail))
}

pub(crate) fn transform_handoff(
    cx: &mut Ctx<'_, '_>,
    row_id: RowId,
    fence: Fence,
    deliveries: &[Delivery],
    state_ops: &[StateOp],
) -> ApplyResult<Outcome> {
    let row = match fence::check(cx, row_id, fence, &[Stage::Routed])? {
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
        Some(format!(
            "{}: {} deliveries",
            row.handler_name.as_deref().unwrap_or("-"),
            deliveries.len()
        )),
    )?;
    finalize(cx, row.message_id)?;
    Ok(Outcome::HandedOff(true))
}

/// The deterministic identity of a re-ingested response: a retry of the same response can only
/// ever map to the same child.
fn child_key(origin: MessageId, destination: &str, seq: u32, body: &str) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(origin.to_be_bytes());
    h.update((destination.len() as u64).to_be_bytes());
    h.update(destination.as_bytes());
    h.update(seq.to_be_bytes());
    h.update(body.as_bytes());
    h.finalize().to_vec()
}

pub(crate) fn ingress_handoff(
    cx: &mut Ctx<'_, '_>,
    row_id: RowId,
    fence: Fence,
    loopback_channel: &str,
    depth_cap: u32,
) -> ApplyResult<Outcome> {
    validate::name("loopback_channel", loopback_channel)?;
    let row = fence::held(cx, row_id, fence, &[Stage::Response])?;
    let reference: Option<ResponseRef> = serde_json::from_str(&row.payload).ok();
    let response: Option<CapturedResponse> = match &reference {
        Some(r) => cx.txn.get(
            Table::Responses,
            &response_key(r.message_id, &r.destination, r.seq),
        )?,
        None => None,
    };
    let (Some(reference), Some(response)) = (reference, response) else {
        dead_letter(cx, &row, "corrupt response reference")?;
        return Ok(Outcome::Reingressed(None));
    };
    let origin = messages::load(cx, reference.message_id)?;
    let depth = origin
        .correlation
        .as_ref()
        .map_or(0, |c| c.depth)
        .saturating_add(1);
    if depth > depth_cap {
        dead_letter(
            cx,
            &row,
            &format!("correlation depth {depth} exceeds cap {depth_cap}"),
        )?;
        return Ok(Outcome::Reingressed(None));
    }
    let key = child_key(
        origin.id,
        &reference.destination,
        reference.seq,
        &response.body,
    );
    let child_id = match cx.txn.get::<MessageId>(Table::Children, &key)? {
        Some(existing) => existing,
        None => {
            let id = messages::next_id(cx);
            let child = Message {
                id,
                channel_id: loopback_channel.to_string(),
                received_at: cx.t,
                source_type: Some("reingress".to_string()),
                control_id: None,
                message_type: origin.message_type.clone(),
                raw: response.body.clone(),
                status: MessageStatus::Received,
                error: None,
                summary: None,
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
            messages::event(
                cx,
                id,
                EventKind::Received,
                None,
                Some(format!("re-ingress of message {}", origin.id)),
            )?;
            rows::insert(
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
            cx.txn.put(Table::Children, key, &id);
            id
        }
    };
    rows::finish(cx, &row, RowStatus::Done, None);
    messages::event(
        cx,
        origin.id,
        EventKind::Reingressed,
        Some(&reference.destination),
        Some(format!("child {child_id} on {loopback_channel}")),
    )?;
    finalize(cx, origin.id)?;
    Ok(Outcome::Reingressed(Some(child_id)))
}
