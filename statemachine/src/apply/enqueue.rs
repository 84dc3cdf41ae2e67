//! Producing messages: EnqueueIngress, RecordReceived, EnqueueMessage, with idempotency keys.

use crate::apply::{Apply, ApplyResult, Ctx};
use crate::model::ids::MessageId;
use crate::model::message::{EventKind, Message, MessageStatus};
use crate::model::row::Stage;
use crate::rules::dedupe::{self, live_duplicate};
use crate::rules::{channels, fifo, registry, validate};
use crate::tables::rows::NewRow;
use crate::tables::{config, ended, messages};
use crate::wire::command::{
    Delivery, EnqueueIngress, EnqueueMessage, MessageFields, ReceivedStatus, RecordReceived,
};
use crate::wire::outcome::Outcome;
use crate::wire::rejection::Rejection;

impl Apply for EnqueueIngress {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let EnqueueIngress {
            channel,
            raw,
            fields,
            idempotency_key,
        } = self;
        enqueue_ingress(cx, channel, raw, fields, idempotency_key.as_deref())
    }
}

impl Apply for RecordReceived {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let RecordReceived {
            channel,
            raw,
            fields,
            status,
            error,
        } = self;
        record_received(cx, channel, raw, fields, *status, error.as_deref())
    }
}

impl Apply for EnqueueMessage {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let EnqueueMessage {
            channel,
            raw,
            fields,
            deliveries,
            idempotency_key,
        } = self;
        enqueue_message(
            cx,
            channel,
            raw,
            fields,
            deliveries,
            idempotency_key.as_deref(),
        )
    }
}

/// A new message and its one opening event `opening` (kind, detail), as messagefoundry's stores
/// write it: `received` "ingress" (EnqueueIngress), `received` "N destination(s)"
/// (EnqueueMessage), or the born-terminal `filtered`/`error` with the error (RecordReceived).
fn new_message(
    cx: &mut Ctx<'_, '_>,
    channel: &str,
    raw: &str,
    fields: &MessageFields,
    status: MessageStatus,
    key: Option<&str>,
    opening: (EventKind, Option<String>),
) -> ApplyResult<Message> {
    validate::name("channel", channel)?;
    channels::admit(cx.txn, "channel", channel)?;
    if let Some(k) = key {
        if k.is_empty() || k.len() > validate::MAX_NAME_LEN {
            return Err(Rejection::invalid("idempotency_key", "must be 1 to 200 bytes").into());
        }
    }
    let id = messages::next_id(cx);
    let message = Message {
        id,
        channel_id: channel.to_string(),
        received_at: cx.t,
        source_type: fields.source_type.clone(),
        control_id: fields.control_id.clone(),
        message_type: fields.message_type.clone(),
        raw: raw.to_string(),
        status,
        error: None,
        summary: fields.summary.clone(),
        metadata: fields.metadata.clone(),
        correlation: None,
        idempotency_key: key.map(str::to_string),
        purged: false,
    };
    if let Some(k) = key {
        dedupe::register(cx, channel, k, id)?;
    }
    let (kind, detail) = opening;
    messages::first_event(cx, id, kind, detail);
    Ok(message)
}

fn enqueue_ingress(
    cx: &mut Ctx<'_, '_>,
    channel: &str,
    raw: &str,
    fields: &MessageFields,
    key: Option<&str>,
) -> ApplyResult<Outcome> {
    if let Some(id) = live_duplicate(cx, channel, key)? {
        return Ok(Outcome::Enqueued {
            message_id: id,
            duplicate: true,
        });
    }
    let opening = (EventKind::Received, Some("ingress".to_string()));
    let message = new_message(
        cx,
        channel,
        raw,
        fields,
        MessageStatus::Received,
        key,
        opening,
    )?;
    fifo::push_row(
        cx,
        NewRow {
            message_id: message.id,
            stage: Stage::Ingress,
            channel_id: channel,
            destination_name: None,
            handler_name: None,
            payload: raw,
        },
    )?;
    messages::save(cx, &message);
    Ok(Outcome::Enqueued {
        message_id: message.id,
        duplicate: false,
    })
}

fn record_received(
    cx: &mut Ctx<'_, '_>,
    channel: &str,
    raw: &str,
    fields: &MessageFields,
    status: ReceivedStatus,
    error: Option<&str>,
) -> ApplyResult<Outcome> {
    let (status, kind) = match status {
        ReceivedStatus::Filtered => (MessageStatus::Filtered, EventKind::Filtered),
        ReceivedStatus::Error => (MessageStatus::Error, EventKind::Error),
    };
    let error = error.map(str::to_string);
    let mut message = new_message(
        cx,
        channel,
        raw,
        fields,
        status,
        None,
        (kind, error.clone()),
    )?;
    message.error = error;
    // Born terminal: indexed as ended now, for retention.
    ended::follow(cx, message.id, None, status)?;
    messages::save(cx, &message);
    Ok(Outcome::Enqueued {
        message_id: message.id,
        duplicate: false,
    })
}

fn enqueue_message(
    cx: &mut Ctx<'_, '_>,
    channel: &str,
    raw: &str,
    fields: &MessageFields,
    deliveries: &[Delivery],
    key: Option<&str>,
) -> ApplyResult<Outcome> {
    if let Some(id) = live_duplicate(cx, channel, key)? {
        return Ok(Outcome::Enqueued {
            message_id: id,
            duplicate: true,
        });
    }
    let status = if deliveries.is_empty() {
        MessageStatus::Unrouted
    } else {
        MessageStatus::Routed
    };
    let opening = (
        EventKind::Received,
        Some(format!("{} destination(s)", deliveries.len())),
    );
    let mut message = new_message(cx, channel, raw, fields, status, key, opening)?;
    insert_deliveries(cx, message.id, channel, deliveries)?;
    // Status set through set_status so an unrouted message starts its dedupe window at once.
    dedupe::set_status(cx, &mut message, status)?;
    Ok(Outcome::Enqueued {
        message_id: message.id,
        duplicate: false,
    })
}

/// Insert one outbound row per delivery, in list order (their seqs keep that order in each lane).
/// A destination the config does not register is refused ([`registry::check_deliveries`]):
/// its row would be an orphan nobody works on.
pub(crate) fn insert_deliveries(
    cx: &mut Ctx<'_, '_>,
    message: MessageId,
    channel: &str,
    deliveries: &[Delivery],
) -> ApplyResult<()> {
    for d in deliveries {
        validate::name("deliveries.destination", &d.destination)?;
    }
    if !deliveries.is_empty() {
        registry::check_deliveries(&config::current(cx.txn)?, deliveries)?;
    }
    for d in deliveries {
        fifo::push_row(
            cx,
            NewRow {
                message_id: message,
                stage: Stage::Outbound,
                channel_id: channel,
                destination_name: Some(&d.destination),
                handler_name: None,
                payload: &d.payload,
            },
        )?;
    }
    Ok(())
}
