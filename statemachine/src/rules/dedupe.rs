//! Idempotency keys, in one place: a producer's `(channel, key)` answers with the message it
//! created while that message is in flight and for the configured dedupe window after it ends
//! (the window starts when the message becomes terminal, and stops again if a replay revives
//! it); after that the key may be used again.

use crate::model::ids::MessageId;
use crate::model::message::{Message, MessageStatus};
use crate::storage::StoreError;
use crate::tables::idempotency::{self, IdempotencyRecord};
use crate::tables::{config, ended, messages, Db};

/// The message an idempotency key still points at, if the key is live.
pub(crate) fn live_duplicate(
    cx: &Db<'_, '_>,
    channel: &str,
    key: Option<&str>,
) -> Result<Option<MessageId>, StoreError> {
    let Some(key) = key else { return Ok(None) };
    let record = idempotency::get(cx.txn, channel, key)?;
    Ok(record.filter(|r| r.is_live(cx.t)).map(|r| r.message_id))
}

/// Point `(channel, key)` at a new message, in flight (no expiry yet).
pub(crate) fn register(
    cx: &mut Db<'_, '_>,
    channel: &str,
    key: &str,
    message: MessageId,
) -> Result<(), StoreError> {
    // A key reused after its window passed: drop the old use's expiry entry, or the next
    // ExpireRecords would follow it and delete this new, in-flight record.
    if let Some(old) = idempotency::get(cx.txn, channel, key)? {
        if let Some(at) = old.expires_at {
            idempotency::remove_expiry(cx, at, channel, key);
        }
    }
    let record = IdempotencyRecord {
        message_id: message,
        expires_at: None,
    };
    idempotency::put(cx, channel, key, &record);
    Ok(())
}

/// Change a message's status (and save it), keeping its idempotency key's expiry and its place
/// among the ended messages retention walks ([`ended::follow`]) in step.
pub(crate) fn set_status(
    cx: &mut Db<'_, '_>,
    message: &mut Message,
    status: MessageStatus,
) -> Result<(), StoreError> {
    ended::follow(cx, message.id, Some(message.status), status)?;
    message.status = status;
    if let Some(idem) = message.idempotency_key.clone() {
        let channel = message.channel_id.as_str();
        if let Some(mut record) = idempotency::get(cx.txn, channel, &idem)? {
            if record.message_id == message.id {
                if let Some(old) = record.expires_at {
                    idempotency::remove_expiry(cx, old, channel, &idem);
                }
                record.expires_at = if status.is_terminal() {
                    Some(cx.t.saturating_add(config::current(cx.txn)?.dedupe_window_ms()))
                } else {
                    None
                };
                if let Some(new) = record.expires_at {
                    idempotency::add_expiry(cx, new, channel, &idem);
                }
                idempotency::put(cx, channel, &idem, &record);
            }
        }
    }
    messages::save(cx, message);
    Ok(())
}
