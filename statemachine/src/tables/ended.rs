//! `EndedMessages` (failed ‖ ended_at ‖ message id → ()), its reverse `MessageEnds` (message id →
//! [`MessageEnd`]) and `RetentionCursors` (pass tag → [`RetentionCursor`]).
//!
//! Ended messages are indexed by end time so that retention reads only what it may act on:
//! everything in the index ended, and a pass stops at the first entry younger than its cutoff.
//! The index follows the message's status ([`follow`], called wherever a status is set): a
//! message enters when it becomes terminal, is moved to the current time when its terminal
//! status changes again, and leaves when a replay makes it non-terminal or retention deletes it.
//! Failed messages (status `error`) sit under their own prefix because dead letters have their
//! own retention period, and one class must not hold up the other.

use crate::model::ids::{MessageId, Millis};
use crate::model::message::MessageStatus;
use crate::model::retention::{MessageEnd, RetentionCursor};
use crate::storage::keys::{read_u64, Key};
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::Db;

fn key(failed: bool, at: Millis, message: MessageId) -> Vec<u8> {
    Key::new()
        .u8(u8::from(failed))
        .u64(at)
        .u64(message.0)
        .build()
}

fn end_key(message: MessageId) -> Vec<u8> {
    message.to_be_bytes().to_vec()
}

/// Whether a terminal status counts as failed (indexed with the dead letters).
pub(crate) fn is_failed(status: MessageStatus) -> bool {
    status == MessageStatus::Error
}

/// Keep the index in step with a status change from `before` to `after` (equal when a message
/// is created with its final status). Reads `MessageEnds` only when the message was already
/// terminal; the common path (a live message ending) is two blind writes.
pub(crate) fn follow(
    cx: &mut Db<'_, '_>,
    message: MessageId,
    before: Option<MessageStatus>,
    after: MessageStatus,
) -> Result<(), StoreError> {
    if before.is_some_and(MessageStatus::is_terminal) {
        remove(cx, message)?;
    }
    if after.is_terminal() {
        put(cx, message, is_failed(after), cx.t);
    }
    Ok(())
}

/// Index `message` as ended at `at` (no older entry may exist: callers remove it first).
pub(crate) fn put(cx: &mut Db<'_, '_>, message: MessageId, failed: bool, at: Millis) {
    cx.txn
        .put_raw(Table::EndedMessages, key(failed, at, message), Vec::new());
    cx.txn.put(
        Table::MessageEnds,
        end_key(message),
        &MessageEnd { failed, at },
    );
}

/// Drop `message` from the index, if it is there.
pub(crate) fn remove(cx: &mut Db<'_, '_>, message: MessageId) -> Result<(), StoreError> {
    if let Some(end) = get(cx.txn, message)? {
        cx.txn
            .delete(Table::EndedMessages, key(end.failed, end.at, message));
        cx.txn.delete(Table::MessageEnds, end_key(message));
    }
    Ok(())
}

pub(crate) fn get<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    message: MessageId,
) -> Result<Option<MessageEnd>, StoreError> {
    txn.get(Table::MessageEnds, &end_key(message))
}

/// Up to `limit` ended messages of one class with `ended_at < before`, in end-time order,
/// starting after `after` (from the first when `None`). The scan is bounded by the cutoff key,
/// so younger entries are never read.
pub(crate) fn page<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    failed: bool,
    after: Option<RetentionCursor>,
    before: Millis,
    limit: usize,
) -> Result<Vec<RetentionCursor>, StoreError> {
    let start = match after {
        // The successor of the cursor's key: the same key with one more byte.
        Some(c) => {
            let mut k = key(failed, c.at, c.message_id);
            k.push(0);
            k
        }
        None => Key::new().u8(u8::from(failed)).build(),
    };
    let end = Key::new().u8(u8::from(failed)).u64(before).build();
    let mut out = Vec::new();
    for item in txn
        .scan(Table::EndedMessages, &start, Some(&end), Direction::Forward)?
        .take(limit)
    {
        let (k, _) = item?;
        if let (Some(at), Some(id)) = (read_u64(&k, 1), read_u64(&k, 9)) {
            out.push(RetentionCursor {
                at,
                message_id: MessageId(id),
            });
        }
    }
    Ok(out)
}

/// Where pass `tag` stopped last time.
pub(crate) fn cursor<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    tag: u8,
) -> Result<Option<RetentionCursor>, StoreError> {
    txn.get(Table::RetentionCursors, &[tag])
}

pub(crate) fn set_cursor(cx: &mut Db<'_, '_>, tag: u8, cursor: &RetentionCursor) {
    cx.txn.put(Table::RetentionCursors, vec![tag], cursor);
}
